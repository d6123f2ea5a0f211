"""A stopped run's reports: every artefact says INCOMPLETE and names what is missing; none says
PASSED unless every case ran and passed (stopped by SIGINT, SIGTERM or --max-errors)."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = 10  # 7 of tone first, then 3 of soporte: an early stop leaves soporte without a row
JUDGE = '''\
import time


def judge(prompt):
    """PASS, after a pause that leaves room to be interrupted between rows."""
    time.sleep(0.04)
    return "PASS\\nSupported."


def picky(prompt):
    if "stop-here" in prompt:
        raise ConnectionError("judge unreachable")
    return "PASS\\nSupported."
'''
REPORTS = ("j.xml", "h.html", "m.md", "summary.md")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


def _scene(folder: Path, outputs: list[str] | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "slowjudge.py").write_text(JUDGE, encoding="utf-8")
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as f:
        for i in range(CASES):
            category = "tone" if i < 7 else "soporte"
            output = outputs[i] if outputs else "an answer"
            record = {"id": f"c{i:02d}", "category": category, "input": "q", "output": output}
            f.write(json.dumps(record) + "\n")


def _start(folder: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{folder}", "PYTHONIOENCODING": "utf-8"}
    env["GITHUB_STEP_SUMMARY"] = str(folder / "summary.md")
    env.pop("TINYEVAL_TRACEBACK", None)
    command = [
        sys.executable, "-m", "tinyeval", "run", "cases.jsonl", "--out", "rows.jsonl",
        "--criterion", "Is it supported?", "--default-threshold", "0.5", "--concurrency", "1",
        "--no-cache", "--junit", "j.xml", "--html", "h.html", "--markdown", "m.md", *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=_limit_memory,
    )  # fmt: skip


def _rows(folder: Path) -> list[dict]:
    path = folder / "rows.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _interrupt(folder: Path, signum: int, after_rows: int) -> tuple[int, str, str]:
    """Run, send ``signum`` once ``after_rows`` rows are written, and return how it ended."""
    _scene(folder)
    process = _start(folder, "--judge-model", "py:slowjudge:judge")
    deadline = time.monotonic() + 30
    path = folder / "rows.jsonl"
    while process.poll() is None and time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= after_rows:
            process.send_signal(signum)
            break
        time.sleep(0.005)
    try:
        out, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the run did not end: {err}")
    return process.returncode, out, err


def _assert_honest(folder: Path, code: int, out: str, err: str) -> None:
    rows = _rows(folder)
    ran_and_passed = len({r["id"] for r in rows}) == CASES and all(
        r["status"] == "pass" for r in rows
    )
    assert "Traceback" not in err
    if ran_and_passed:
        return  # the signal came after the last row: the run did finish
    texts = {"stdout": out, "stderr": err}
    texts |= {name: (folder / name).read_text(encoding="utf-8") for name in REPORTS}
    assert code in (130, 143, 3), (code, err)
    for name, text in texts.items():
        assert "PASSED" not in text, (name, text)
    for name in ("stdout", *REPORTS):
        assert "INCOMPLETE" in texts[name], (name, texts[name])
        assert f"{len(rows)} of {CASES} cases" in texts[name], (name, texts[name])
    if len(rows) < 7:
        assert all("soporte: no rows" in texts[name] for name in ("stdout", *REPORTS))
    gate_suite = ET.fromstring(texts["j.xml"]).find("testsuite[@name='tinyeval.gate']")
    assert gate_suite is not None
    complete = gate_suite.find("testcase[@name='complete']/failure")
    assert complete is not None and "INCOMPLETE" in str(complete.get("message"))
    annotations = [line for line in out.splitlines() if line.startswith("::error")]
    assert any("gate INCOMPLETE" in line for line in annotations), out


def test_a_run_interrupted_at_random_points_never_reports_passed(tmp_path: Path) -> None:
    rng = random.Random(25)
    points = [
        (signal.SIGINT if i % 2 else signal.SIGTERM, rng.randint(1, CASES)) for i in range(20)
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        ended = list(
            pool.map(lambda item: _interrupt(tmp_path / f"p{item[0]}", *item[1]), enumerate(points))
        )
    stopped = 0
    for index, (code, out, err) in enumerate(ended):
        _assert_honest(tmp_path / f"p{index}", code, out, err)
        stopped += code in (130, 143)
    assert stopped >= 15  # most points stopped the run before its end


def test_a_run_stopped_by_max_errors_reports_incomplete(tmp_path: Path) -> None:
    outputs = ["an answer"] * 3 + ["stop-here"] * (CASES - 3)
    _scene(tmp_path, outputs)
    process = _start(tmp_path, "--judge-model", "py:slowjudge:picky", "--max-errors", "1")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 3, err
    rows = _rows(tmp_path)
    assert len(rows) < CASES
    _assert_honest(tmp_path, process.returncode, out, err)
