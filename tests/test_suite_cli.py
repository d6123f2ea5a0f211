"""The suite file on the command line: run without options, --config, overrides, init."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tinyeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "tinyeval", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def example(tmp_path: Path) -> Path:
    for name in ("cases.jsonl", "tinyeval.toml"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    return tmp_path


def test_run_with_no_options_runs_the_suite_and_gates_as_the_long_command(tmp_path: Path) -> None:
    folder = example(tmp_path)
    short = tinyeval("run", "--json", cwd=folder)
    assert short.returncode == 1, short.stderr
    flags = ["--criterion", "unsupported-claims", "--judge-category", "support_answers",
             "--threshold", "amount_extraction=1.0", "--default-threshold", "0.5"]  # fmt: skip
    long = tinyeval("run", "cases.jsonl", *flags, "--json", "--out", "long.jsonl", cwd=folder)
    assert long.returncode == 1, long.stderr
    a, b = json.loads(short.stdout)["gate"], json.loads(long.stdout)["gate"]
    assert a["blocking"] == b["blocking"] == ["amount_extraction"]
    assert a["categories"] == b["categories"]
    summary = json.loads(short.stdout)
    assert summary["suite"]["fingerprint"] and summary["suite"]["overridden"] == []
    row = json.loads((folder / "tinyeval-results.jsonl").read_text().splitlines()[0])
    assert row["run"]["suite"] == summary["suite"]["fingerprint"]


def test_options_given_again_win_and_say_so(tmp_path: Path) -> None:
    folder = example(tmp_path)
    done = tinyeval("run", "--threshold", "amount_extraction=0.8", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "given again, overriding it: thresholds.amount_extraction" in done.stdout


def test_config_from_another_directory_and_a_misspelt_key(tmp_path: Path) -> None:
    folder = example(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = tinyeval("run", "--config", str(folder / "tinyeval.toml"), "-q", cwd=elsewhere)
    assert done.returncode == 1 and "amount_extraction" in done.stderr
    text = (folder / "tinyeval.toml").read_text().replace("[thresholds]", "[treshold]")
    (folder / "tinyeval.toml").write_text(text)
    bad = tinyeval("run", cwd=folder)
    assert bad.returncode == 2
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("[treshold]"))
    assert bad.stderr.strip().endswith(f"tinyeval.toml:{line}: treshold: unknown key; did you "
                                       "mean 'thresholds'?")  # fmt: skip


def test_no_cases_and_no_suite_is_a_usage_error(tmp_path: Path) -> None:
    done = tinyeval("run", cwd=tmp_path)
    assert done.returncode == 2 and "tinyeval init" in done.stderr


def test_init_writes_a_starter_that_loads_and_never_overwrites(tmp_path: Path) -> None:
    done = tinyeval("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from tinyeval.suite import load_suite

    assert load_suite(tmp_path / "tinyeval.toml").cases
    again = tinyeval("init", cwd=tmp_path)
    assert again.returncode == 2 and "exists already" in again.stderr
