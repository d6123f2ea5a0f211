"""``tinyeval init``: a starter suite file that loads as it is, and never over another file."""

from __future__ import annotations

import subprocess
from pathlib import Path

from child import run_tinyeval

from tinyeval.checks import declare_expect
from tinyeval.ci.init import starter_text
from tinyeval.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def tinyeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tinyeval(args, cwd, timeout=120)


def test_starter_text_loads_with_the_loader(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, "tinyeval.toml", starter_text()))
    assert Path(suite.cases[0]).name == "cases.jsonl"
    assert suite.judge_model == "builtin"
    assert suite.default_threshold == 0.8 and suite.inconclusive == "pass"
    # every key the starter shows commented out is a real key: uncommented, it loads too
    uncommented = "\n".join(
        line[2:] if line.startswith("# ") and ("=" in line or line[2:].startswith("[")) else line
        for line in starter_text().splitlines()
    )
    full = load_suite(write(tmp_path / "full", "tinyeval.toml", uncommented))
    assert full.thresholds == {"amount_extraction": 1.0, "tone": 0.85}
    assert full.judges and full.generate_model and full.price and full.holdout
    assert full.expect == {"cents_paid": {"check": "equals", "path": "amount_cents"},
                           "never_says": "not_contains"}  # fmt: skip
    declare_expect({})  # the keys it declared, undeclared for the tests after this one


def test_init_writes_a_starter_that_loads_and_never_overwrites(tmp_path: Path) -> None:
    done = tinyeval("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert load_suite(tmp_path / "tinyeval.toml").cases
    again = tinyeval("init", cwd=tmp_path)
    assert again.returncode == 2 and "exists already" in again.stderr
