"""`tinyeval label` appends each label to the labels file as it is now: a file replaced or
deleted between two labels loses none of them, and the count printed is the count kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def rows_file(tmp_path: Path) -> Path:
    rows = [{"id": f"r{i}", "category": "s", "status": "pass", "output": f"answer {i}",
             "judges": {"u": {"verdict": "PASS"}}, "judge": {"verdict": "PASS"}}
            for i in range(3)]  # fmt: skip
    results = tmp_path / "rows.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return results


def wait_for(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, "the label command did not write in time"
        time.sleep(0.02)


def label_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def replace(path: Path) -> None:
    """An editor's save of an older copy: a new file renamed over the old one."""
    fresh = path.with_name("copy.jsonl")
    fresh.write_text(json.dumps({"id": "other", "label": "PASS", "labeler": "bo"}) + "\n")
    os.replace(fresh, path)


@pytest.mark.parametrize("change", [replace, Path.unlink], ids=["replaced", "deleted"])
def test_a_labels_file_changed_mid_session_keeps_every_label(
    tmp_path: Path, change: Callable[[Path], None]
) -> None:
    out = tmp_path / "labels.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tinyeval", "label", str(rows_file(tmp_path)), "--out", str(out),
         "--labeler", "ana"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path, env=env,
    )  # fmt: skip
    try:
        assert process.stdin is not None
        process.stdin.write("p\n")
        process.stdin.flush()
        wait_for(lambda: len(label_lines(out)) == 1)
        change(out)
        stdout, stderr = process.communicate("f\np\n", timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    ours = [line for line in label_lines(out) if line.get("labeler") == "ana"]
    assert sorted(line["id"] for line in ours) == ["r0", "r1", "r2"]
    assert "was replaced or deleted during the session" in stdout
    assert "Done: all 3 cases are labelled" in stdout
