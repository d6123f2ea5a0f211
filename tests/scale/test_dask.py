"""A real distributed engine: a Dask LocalCluster with two worker processes runs the cases;
the driver still writes the rows, and they equal a thread-pool run's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]

GENERATOR = """
import os

def generate(prompt):
    return f"answer to {prompt} (process {os.getpid()})"
"""


def run(tmp_path: Path, out: str, *extra: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", "cases.jsonl", "--generate-model",
         "py:gen:generate", "--criterion", "answers-the-question", "--out", out, "-q",
         "--cache", "cache.sqlite3", *extra],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / out).read_text().splitlines()]
    return sorted(rows, key=lambda row: row["id"])


def test_a_local_cluster_of_two_processes_gives_the_rows_of_a_thread_pool(tmp_path: Path) -> None:
    (tmp_path / "gen.py").write_text(GENERATOR)
    cases = [{"id": f"c{i:02d}", "input": f"question {i}?", "category": "ab"[i % 2],
              "expect": {"contains": ["answer"], "max_words": 6 if i % 3 else 20}}
             for i in range(24)]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    threads = run(tmp_path, "threads.jsonl", "--no-cache")
    # the cache starts empty: every reply of this run comes from the cluster's workers
    cluster = run(tmp_path, "dask.jsonl", "--executor", "dask:local")
    here = {row["output"].rsplit("process ", 1)[1] for row in threads}
    there = {row["output"].rsplit("process ", 1)[1] for row in cluster}
    assert len(here) == 1 and here.isdisjoint(there)  # the cluster's workers generated them

    def same(row: dict) -> tuple:
        verdict = row["judges"].get("answers-the-question", {})
        return (row["id"], row["category"], row["status"], row["checks"], verdict.get("verdict"))

    assert [same(r) for r in cluster] == [same(r) for r in threads]
    # the response cache works from the workers too: a second cluster run (new worker
    # processes) makes no new call, so every reply still names the first run's workers
    second = run(tmp_path, "cached.jsonl", "--executor", "dask:local")
    assert [r["output"] for r in cluster] == [r["output"] for r in second]
