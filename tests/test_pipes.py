"""Named pipes as the cases file or the suite file: read as they come (so ``<(...)`` works),
and one line, exit 2, when nothing is written to them in time, never a hang."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from child import ROOT
from hostile import assert_refused

CASES = "".join(json.dumps({"id": f"c{n}", "output": "fine", "expect": {"contains": "fine"}}) + "\n"
                for n in range(3))  # fmt: skip
# the command line with a short wait for a silent pipe, so the test need not wait a minute
SHORT_WAIT = "import sys, tinyeval._formats as f; f.PIPE_WAIT = 1; from tinyeval.cli import main; "
SHORT_WAIT += "sys.exit(main(sys.argv[1:]))"


def impatient_run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TINYEVAL_TRACEBACK", None)
    return subprocess.run([sys.executable, "-c", SHORT_WAIT, *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip


@pytest.mark.parametrize("given_as", ["cases", "config"])
@pytest.mark.parametrize("writer", ["none", "silent"])
def test_a_named_pipe_nothing_writes_to_is_one_line_not_a_hang(
    tmp_path: Path, given_as: str, writer: str
) -> None:
    pipe = tmp_path / ("cases.jsonl" if given_as == "cases" else "tinyeval.toml")
    os.mkfifo(pipe)
    held = []
    if writer == "silent":  # a writer that opens the pipe and never writes
        held.append(os.open(pipe, os.O_RDWR))
    try:
        started = time.monotonic()
        argv = ["run", pipe.name] if given_as == "cases" else ["run", "--config", pipe.name]
        done = impatient_run(tmp_path, *argv)
        took = time.monotonic() - started
    finally:
        for descriptor in held:
            os.close(descriptor)
    line = assert_refused(done, None, f"{given_as} {writer}", says=pipe.name)
    assert "a named pipe that nothing wrote to in 1 seconds" in line
    assert took < 20, took
    assert not (tmp_path / "tinyeval-results.jsonl").exists()


@pytest.mark.parametrize("name", ["cases.jsonl", "cases.jsonl.gz"])
def test_a_named_pipe_whose_writer_comes_late_is_read_whole(tmp_path: Path, name: str) -> None:
    pipe = tmp_path / name
    os.mkfifo(pipe)
    data = CASES.encode()
    data = gzip.compress(data) if name.endswith(".gz") else data

    def write_late() -> None:
        time.sleep(0.3)
        with open(pipe, "wb") as stream:  # blocks until the run opens the pipe
            for start in range(0, len(data), 40):
                stream.write(data[start : start + 40])
                stream.flush()
                time.sleep(0.05)

    writer = threading.Thread(target=write_late, daemon=True)
    writer.start()
    done = impatient_run(tmp_path, "run", name, "--out", "rows.jsonl")
    writer.join(5)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [(row["id"], row["status"]) for row in rows] == [(f"c{n}", "pass") for n in range(3)]


@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution needs bash")
def test_process_substitution_gives_the_cases(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text(CASES, encoding="utf-8")
    script = f'"{sys.executable}" -m tinyeval run <(sleep 0.5; cat c.jsonl) --format jsonl --json'
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cases"] == 3
