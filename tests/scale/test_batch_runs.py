"""--batch through the command line, against the fake batch server on 127.0.0.1: one
submission, rows equal a direct run's, and a killed pending batch is resumed, not resubmitted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from child import run_tinyeval

from tests.scale.fake_batch_server import KEY_OPENAI, FakeBatchServer

ROOT = Path(__file__).resolve().parents[2]


def tinyeval(folder: Path, server: FakeBatchServer, *args: str) -> subprocess.CompletedProcess:
    env = {"OPENAI_API_KEY": KEY_OPENAI, "OPENAI_BASE_URL": server.openai_base}
    return run_tinyeval(args, folder, env, timeout=120)


def test_a_judged_run_in_batch_mode_submits_once_and_equals_a_direct_run(tmp_path: Path) -> None:
    cases = [{"id": f"c{i:03d}", "input": "q?", "output": f"answer {'good' if i % 3 else 'bad'}"}
             for i in range(500)]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    flags = ["--criterion", "Is good.", "--judge-model", "openai:judge-model", "-q"]
    with FakeBatchServer(delay_polls=1) as server:
        batched = tinyeval(tmp_path, server, "run", "cases.jsonl", *flags, "--batch",
                           "--batch-poll", "0.05", "--out", "batched.jsonl")  # fmt: skip
        assert batched.returncode == 0, batched.stderr
        assert server.counts["submissions"] == 1 and server.counts["direct"] == 0
        direct = tinyeval(tmp_path, server, "run", "cases.jsonl", *flags, "--no-cache",
                          "--out", "direct.jsonl", "--concurrency", "8")  # fmt: skip
        assert direct.returncode == 0, direct.stderr

    def verdicts(name: str) -> list[tuple[str, str]]:
        rows = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        return sorted((r["id"], next(iter(r["judges"].values()))["verdict"]) for r in rows)

    assert verdicts("batched.jsonl") == verdicts("direct.jsonl")
    assert len(verdicts("batched.jsonl")) == 500


def test_a_run_killed_while_its_batch_is_pending_resumes_by_polling_it(tmp_path: Path) -> None:
    import signal
    import time

    cases = [{"id": f"c{i:02d}", "input": "q?", "output": f"answer {'good' if i % 2 else 'no'}"}
             for i in range(40)]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    flags = ["run", "cases.jsonl", "--criterion", "Is good.", "--judge-model",
             "openai:judge-model", "--batch", "--batch-poll", "0.05", "--out", "rows.jsonl",
             "-q"]  # fmt: skip
    with FakeBatchServer(delay_polls=10_000, lifetime=90) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": KEY_OPENAI,
               "OPENAI_BASE_URL": server.openai_base}  # fmt: skip
        process = subprocess.Popen([sys.executable, "-m", "tinyeval", *flags], cwd=tmp_path,
                                   env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 60
        while server.counts["polls"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        assert server.counts["submissions"] == 1 and not (tmp_path / "rows.jsonl").exists()
        server.delay_polls = 0  # the provider finishes the batch meanwhile
        resumed = tinyeval(tmp_path, server, *flags, "--resume")
        assert resumed.returncode == 0, resumed.stderr
        assert server.counts["submissions"] == 1  # polled the same batch, never submitted again
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 40


def test_sigterm_while_a_batch_is_pending_stops_polling_at_once(tmp_path: Path) -> None:
    import signal
    import time

    cases = [{"id": f"c{i}", "input": "q?", "output": "answer"} for i in range(5)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    # a poll interval of ten minutes: only a stop that interrupts the wait ends the run soon
    flags = ["run", "cases.jsonl", "--criterion", "Is good.", "--judge-model",
             "openai:judge-model", "--batch", "--batch-poll", "600",
             "--out", "rows.jsonl"]  # fmt: skip
    with FakeBatchServer(delay_polls=10_000, lifetime=90) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": KEY_OPENAI,
               "OPENAI_BASE_URL": server.openai_base}  # fmt: skip
        process = subprocess.Popen([sys.executable, "-m", "tinyeval", *flags], cwd=tmp_path,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)  # fmt: skip
        deadline = time.monotonic() + 60
        while server.counts["polls"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)  # far less than the ten-minute wait
    assert process.returncode == 3, stderr
    assert "stopped on request while a batch is pending" in stderr
    assert server.counts["submissions"] == 1
