"""The suite file on the command line: run without options, --config, overrides."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_two_runs_in_github_actions_leave_both_summaries_and_annotate_the_failing_case(
    tmp_path: Path,
) -> None:
    folder = example(tmp_path)
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GITHUB_STEP_SUMMARY": str(summary)}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "tinyeval", "run", "-q"], cwd=folder,
                              env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 1, done.stderr
    text = summary.read_text()
    assert text.startswith("earlier step\n") and text.count("amount_extraction") >= 2
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1 and "amount_extraction" in errors[0]
    # the annotation points at the first failing case's line in the cases file
    lines = (folder / "cases.jsonl").read_text().splitlines()
    first = next(i for i, line in enumerate(lines, 1) if '"amt-018"' in line)
    assert "file=cases.jsonl" in errors[0] and f"line={first}," in errors[0]
    junit = tinyeval("run", "-q", "--junit", "j.xml", cwd=folder)
    assert junit.returncode == 1
    import xml.etree.ElementTree as ET

    gate = next(s for s in ET.parse(folder / "j.xml").getroot() if s.get("name") == "tinyeval.gate")
    assert [c.get("name") for c in gate if c.find("failure") is not None] == ["amount_extraction"]


CASE = '{"id": "a", "category": "tone", "output": "x", "expect": {"contains": ["y"]}}\n'


def test_a_suite_file_here_applies_when_cases_are_given_and_the_summary_names_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "mine.jsonl").write_text(CASE)
    (tmp_path / "tinyeval.toml").write_text('cases = "c.jsonl"\n[thresholds]\ntone = 0.8\n')
    done = tinyeval("run", "mine.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # tone 0/1 blocks at 0.8
    assert "suite tinyeval.toml" in done.stdout and "cases" in done.stdout


def test_the_suite_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "tinyeval.toml").write_text('cases = "c.jsonl"\n[thresholds]\ntone = 0.8\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "mine.jsonl").write_text(CASE)
    done = tinyeval("run", "mine.jsonl", "--json", cwd=repo)
    assert done.returncode == 0, done.stderr  # the parent's threshold does not reach here
    assert json.loads(done.stdout)["suite"] is None
    alone = tinyeval("run", cwd=repo)
    assert alone.returncode == 2 and "give a CASES file" in alone.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_the_suite_search_stops_before_a_directory_of_another_user(tmp_path: Path) -> None:
    top = tmp_path / "shared"
    mine = top / "mine"
    mine.mkdir(parents=True)
    (top / "tinyeval.toml").write_text('cases = "c.jsonl"\n[models.judge]\nspec = "cmd:x"\n')
    (mine / "mine.jsonl").write_text(CASE)
    os.chown(top, 65534, 65534)
    done = tinyeval("run", "mine.jsonl", "--json", cwd=mine)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["suite"] is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_suite_file_here_in_a_directory_of_another_user_is_refused_not_skipped(
    tmp_path: Path,
) -> None:
    (tmp_path / "mine.jsonl").write_text(CASE)
    (tmp_path / "tinyeval.toml").write_text('cases = "c.jsonl"\n[thresholds]\ntone = 0.8\n')
    os.chown(tmp_path, 65534, 65534)
    done = tinyeval("run", "mine.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "owned by another user" in done.stderr, done.stderr
