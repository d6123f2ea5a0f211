"""The pytest plugin never tolerates a failure the gate does not, never turns bad input into an
INTERNALERROR, and never lets an id print a workflow command (pytest in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tinyeval.ci.pytest_plugin",
         "-p", "no:cacheprovider", "--tinyeval=tinyeval.toml", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def suite(folder: Path, cases: list[dict], toml: str) -> Path:
    (folder / "cases.jsonl").write_text(
        "".join(json.dumps(case) + "\n" for case in cases), encoding="utf-8"
    )
    (folder / "tinyeval.toml").write_text(f'cases = "cases.jsonl"\n{toml}', encoding="utf-8")
    return folder


def short(id_: str, words: int) -> dict:
    """A case whose output has ``words`` words, checked to have at most 2."""
    return {"id": id_, "category": "tone", "output": " ".join(["w"] * words),
            "expect": {"max_words": 2}}  # fmt: skip


def outcomes(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each case's outcome from ``-rA``'s short summary: case id -> PASSED, FAILED, XFAIL…"""
    found = {}
    for line in done.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if "cases.jsonl::" in rest:
            found[rest.split("::", 1)[1].split(" ", 1)[0]] = word
    return found


def test_failures_are_xfail_only_while_their_category_passes(tmp_path: Path) -> None:
    # 10 cases under 85%: 9/10 passes its gate, 8/10 blocks; four fail
    cases = [short(f"t{i}", 3 if i in (1, 4, 6, 8) else 1) for i in range(10)]
    done = pytest_in(suite(tmp_path, cases, "[thresholds]\ntone = 0.85\n"), "-rA", "-q")
    assert done.returncode == 1, done.stdout + done.stderr
    found = outcomes(done)
    assert [found[f"t{i}"] for i in (1, 4, 6, 8)] == ["XFAIL", "FAILED", "FAILED", "FAILED"]
    assert "3 failed, 6 passed, 1 xfailed" in done.stdout
    assert "gate: FAILED — blocking: tone" in done.stdout


def test_an_unchecked_case_is_never_xfail(tmp_path: Path) -> None:
    cases = [short(f"t{i}", 1) for i in range(9)]
    cases.append({"id": "nothing", "category": "tone", "output": "x"})  # no check, no judge
    done = pytest_in(suite(tmp_path, cases, "[thresholds]\ntone = 0.85\n"), "-rA", "-q")
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcomes(done)["nothing"] == "FAILED"
    allowed = pytest_in(
        suite(tmp_path, cases, "[thresholds]\ntone = 0.85\n[gate]\nallow_unchecked = true\n"),
        "-rA", "-q",
    )  # fmt: skip
    assert "9 passed, 1 skipped" in allowed.stdout, allowed.stdout
    assert "unchecked (allow_unchecked)" in allowed.stdout
    assert "xfail" not in allowed.stdout.lower()


@pytest.mark.parametrize(
    "toml",
    [
        "x = " + "[" * 3000 + "]" * 3000 + "\n",  # RecursionError in tomllib
        'cases = "a\\u0000b.jsonl"\n',  # ValueError: embedded null byte
        "concurrency = " + "9" * 5000 + "\n",  # ValueError: the int limit
        'cases = "cases.jsonl"\n[thresholds]\ntone = 1e999\n',  # inf
    ],
    ids=["deep", "nul", "digits", "inf"],
)
def test_bad_input_is_one_line_and_exit_4(tmp_path: Path, toml: str) -> None:
    (tmp_path / "cases.jsonl").write_text(json.dumps(short("a", 1)) + "\n", encoding="utf-8")
    (tmp_path / "tinyeval.toml").write_text(toml, encoding="utf-8")
    done = pytest_in(tmp_path, "-q")
    said = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, said
    assert "INTERNALERROR" not in said and "Traceback" not in said
    lines = [line for line in said.splitlines() if "tinyeval:" in line]
    assert len(lines) == 1 and len(lines[0]) < 400, said


def test_ids_print_no_workflow_command(tmp_path: Path) -> None:
    ids = ["::stop-commands::tok", "x\n::error title=Y::forged", "[Approve deploy](https://e.x)",
           "a\u202eb"]  # fmt: skip
    cases = [{**short(id_, 3), "category": ids[(i + 1) % len(ids)]} for i, id_ in enumerate(ids)]
    thresholds = "".join(f"{json.dumps(name)} = 0.5\n" for name in ids)
    done = pytest_in(suite(tmp_path, cases, f"[thresholds]\n{thresholds}"), "-rA", "-v")
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "\u202e" not in said
    assert [line for line in said.splitlines() if line.strip().startswith("::")] == []
    assert "x\\x0a::error title=Y::forged" in said  # shown, escaped
