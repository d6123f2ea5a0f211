"""Calling real models: resume after a kill or Ctrl-C, stable shards, async models, other executors.

These tests run ``python -m tinyeval run`` in a subprocess with a model
written as a Python module (``py:MODULE:FUNCTION``), kill or interrupt it
mid-run and check what is left on disk and what resuming does.
"""

from __future__ import annotations

import collections
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tinyeval
from tinyeval.dataset import Case
from tinyeval.judge import Judge
from tinyeval.records import primary_verdict

ROOT = Path(__file__).resolve().parent.parent
SLOW_MODEL = '''\
import time

CALLS = {calls!r}


def generate(prompt):
    """Log which case called (one flushed line per call), then answer after 50 ms."""
    with open(CALLS, "a", encoding="utf-8") as log:
        log.write(prompt + "\\n")
        log.flush()
    time.sleep(0.05)
    return "answer to " + prompt
'''


def environment() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    env.pop("TINYEVAL_TRACEBACK", None)
    return env


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tinyeval", *args]


def tinyeval_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args), cwd=cwd, env=environment(), capture_output=True, text=True, timeout=60
    )


def start(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(*args),
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def write_cases(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def input_cases(n: int) -> list[dict]:
    """Cases without an output: the generate model writes it from the input, a unique marker."""
    return [{"id": f"c{i:03d}", "input": f"case c{i:03d}", "expect": {"contains": ["answer"]}}
            for i in range(n)]  # fmt: skip


def slow_model(folder: Path) -> Path:
    """Write the module ``slowmodel`` into ``folder``; return the file its calls are logged to."""
    calls = folder / "calls.log"
    (folder / "slowmodel.py").write_text(SLOW_MODEL.format(calls=str(calls)), encoding="utf-8")
    return calls


def slow_run(folder: Path, n: int) -> tuple[list[dict], Path, list[str], Path]:
    """``n`` cases for the slow model, two calls in flight: the cases, the rows file, the
    arguments of the run and the file its calls are logged to."""
    calls = slow_model(folder)
    records = input_cases(n)
    cases = write_cases(folder / "cases.jsonl", records)
    out = folder / "rows.jsonl"
    arguments = ["run", str(cases), "--out", str(out), "--generate-model", "py:slowmodel:generate",
                 "--concurrency", "2", "--no-cache"]  # fmt: skip
    return records, out, arguments, calls


def wait_for_rows(path: Path, n: int, process: subprocess.Popen[str]) -> None:
    """Wait until ``path`` holds at least ``n`` newline-terminated lines."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        if process.poll() is not None:
            pytest.fail(f"the run ended before writing {n} rows: {process.communicate()}")
        time.sleep(0.005)
    process.kill()
    pytest.fail(f"no {n} rows in {path} after 30 s")


def complete_rows(data: bytes) -> tuple[list[dict], bytes]:
    """The rows of the complete lines, and what follows the last newline (a cut-off line)."""
    *lines, rest = data.split(b"\n")
    return [json.loads(line) for line in lines], rest


def calls_per_case(calls: Path) -> collections.Counter[str]:
    prompts = calls.read_text(encoding="utf-8").splitlines()
    return collections.Counter(prompt.removeprefix("case ") for prompt in prompts)


class TestKilledRun:
    def test_resume_after_kill_9_calls_no_finished_case_again(self, tmp_path: Path) -> None:
        # 80 calls × 50 ms / 2 in flight ≥ 2 s: time to kill it
        records, out, run_args, calls = slow_run(tmp_path, 80)
        process = start(*run_args, cwd=tmp_path)
        wait_for_rows(out, 10, process)
        assert process.poll() is None, "the run finished before it could be killed"
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        assert process.returncode == -signal.SIGKILL

        # Every complete line parses (a torn line in the middle would not); at most
        # the bytes after the last newline are a cut-off row.
        before, partial = complete_rows(out.read_bytes())
        assert 10 <= len(before) < len(records)
        if not partial:
            # A kill during a write leaves half a row; make sure that repair runs every
            # time by cutting the last row as such a kill would (its case must run again).
            rows_text = out.read_bytes().splitlines(keepends=True)
            out.write_bytes(b"".join(rows_text[:-1]) + rows_text[-1][:40])
            before, partial = before[:-1], rows_text[-1][:40]
        assert partial and b"\n" not in partial
        finished_before = {row["id"] for row in before}

        done = tinyeval_cli(*run_args, "--resume", "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["resumed_rows"] == len(finished_before)

        data = out.read_bytes()
        assert data.endswith(b"\n")  # the cut-off line was removed, not continued
        rows = [json.loads(line) for line in data.splitlines()]
        ids = collections.Counter(row["id"] for row in rows)
        assert ids == collections.Counter(r["id"] for r in records)  # exactly one row each
        assert all(row["status"] == "pass" for row in rows)
        assert all(row["output"] == f"answer to case {row['id']}" for row in rows)

        called = calls_per_case(calls)
        assert {case: called[case] for case in finished_before} == dict.fromkeys(
            finished_before, 1
        )  # never called again once its row was complete
        # the others ran once after the resume, plus once before it if they were in flight
        assert set(called) == set(ids)
        assert all(1 <= called[case] <= 2 for case in ids)


class TestInterruptedRun:
    def test_ctrl_c_exits_130_and_prints_how_to_resume(self, tmp_path: Path) -> None:
        records, out, run_args, calls = slow_run(tmp_path, 60)
        process = start(*run_args, cwd=tmp_path)
        wait_for_rows(out, 5, process)
        process.send_signal(signal.SIGINT)
        _stdout, stderr = process.communicate(timeout=30)

        assert process.returncode == 130, stderr
        assert "Resume with:" in stderr
        lines = stderr.splitlines()
        resume = lines[lines.index(next(ln for ln in lines if "Resume with:" in ln)) + 1].strip()
        assert resume.endswith("--resume")
        assert "Traceback" not in stderr

        data = out.read_bytes()
        assert data.endswith(b"\n")
        kept = [json.loads(line) for line in data.splitlines()]  # each a whole JSON row
        assert 5 <= len(kept) < len(records)
        assert all(row["status"] == "pass" for row in kept)

        # the printed command, run as is (with this interpreter), finishes the run
        # it names the command as it was invoked: python -m tinyeval here
        program, dash_m, package, *arguments = shlex.split(resume)
        assert (program, dash_m, package) == (Path(sys.executable).name, "-m", "tinyeval")
        done = tinyeval_cli(*arguments, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
        assert sorted(ids) == [r["id"] for r in records]
        called = calls_per_case(calls)
        assert all(called[row["id"]] == 1 for row in kept)


class TestShards:
    @staticmethod
    def shard_ids(cases: Path, folder: Path, name: str) -> list[set[str]]:
        shards = []
        for i in (1, 2, 3):
            out = folder / f"{name}-{i}.jsonl"
            done = tinyeval_cli(
                "run", str(cases), "--out", str(out), "--shard", f"{i}/3", "-q", cwd=folder
            )
            assert done.returncode == 0, done.stderr
            shards.append({json.loads(line)["id"] for line in out.read_text().splitlines()})
        return shards

    def test_shards_are_disjoint_cover_all_and_keep_their_cases_as_the_file_grows(
        self, tmp_path: Path
    ) -> None:
        def case(i: int) -> dict:
            return {"id": f"ticket-{i}", "output": "ok", "expect": {"contains": ["ok"]}}

        first = [case(i) for i in range(30)]
        shards = self.shard_ids(write_cases(tmp_path / "a.jsonl", first), tmp_path, "a")
        assert all(shards)
        assert sum(map(len, shards)) == 30 and set().union(*shards) == {c["id"] for c in first}

        # new cases before, between and after the old ones; old ones reordered
        grown = [case(i) for i in range(100, 110)] + first[::-1] + [case(i) for i in range(40, 50)]
        regrown = self.shard_ids(write_cases(tmp_path / "b.jsonl", grown), tmp_path, "b")
        assert sum(map(len, regrown)) == 50 and set().union(*regrown) == {c["id"] for c in grown}
        for old, new in zip(shards, regrown, strict=True):
            assert old <= new  # every case stays in its shard


ASYNC_MODELS = """\
import asyncio


async def generate(prompt):
    await asyncio.sleep(0.01)
    return prompt.upper()


async def judge(prompt):
    await asyncio.sleep(0.01)
    # GOOD appears only in the generated (upper-cased) response, never in the input
    return "PASS\\nsupported" if "GOOD" in prompt else "FAIL\\nnot supported"
"""


def test_async_py_models_work_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "asyncmodels.py").write_text(ASYNC_MODELS, encoding="utf-8")
    records = [
        {"id": f"q{i}", "input": ("good" if i % 3 else "bad") + f" answer {i}", "context": "c"}
        for i in range(9)
    ]
    cases = write_cases(tmp_path / "cases.jsonl", records)
    out = tmp_path / "rows.jsonl"
    done = tinyeval_cli(
        "run",
        str(cases),
        "--out",
        str(out),
        "--generate-model",
        "py:asyncmodels:generate",
        "--judge-model",
        "py:asyncmodels:judge",
        "--criterion",
        "unsupported-claims",
        "--concurrency",
        "4",
        "--no-cache",
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert sorted(rows) == [f"q{i}" for i in range(9)]
    for record in records:
        row = rows[record["id"]]
        assert row["output"] == record["input"].upper()
        expected = "PASS" if record["input"].startswith("good") else "FAIL"
        assert primary_verdict(row)["verdict"] == expected
        assert row["status"] == expected.lower()
        assert row["judge_model"] == "py:asyncmodels:judge"
        assert row["generate_model"] == "py:asyncmodels:generate"
    # 9 cases, i = 1, 2, 4, 5, 7, 8 are "good": 6/9 pass
    overall = json.loads(done.stdout)["gate"]["overall"]
    assert (overall["passed"], overall["total"]) == (6, 9)


def grounded_judge(prompt: str) -> str:
    """FAIL a response that claims "1 hour"; the reason names the thread it ran on."""
    verdict = "FAIL" if "1 hour" in prompt else "PASS"
    return f"{verdict}\nran on {threading.current_thread().name}"


def test_a_dask_executor_runs_the_cases(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    context = "Refunds take 5 business days."
    cases = [
        Case(id="r1", output="Refunds take 5 business days.", context=context),
        Case(id="r2", output="Refunds take 1 hour.", context=context),
        Case(
            id="r3",
            output="Refunds take five whole days, roughly.",
            context=context,
            expect={"max_words": 3},
        ),
    ] + [
        Case(id=f"s{i}", output="Refunds take 5 business days.", context=context) for i in range(20)
    ]
    out = tmp_path / "rows.jsonl"
    with (
        distributed.LocalCluster(
            processes=False, n_workers=1, threads_per_worker=4, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        result = tinyeval.run(
            cases,
            judges=Judge("unsupported-claims"),
            judge_model=grounded_judge,
            executor=client.get_executor(),
            out=out,
        )
    rows = {row["id"]: row for row in result.rows}
    assert len(result.rows) == len(rows) == 23 and result.complete
    assert rows["r1"]["status"] == "pass" and primary_verdict(rows["r1"])["verdict"] == "PASS"
    assert rows["r2"]["status"] == "fail" and primary_verdict(rows["r2"])["verdict"] == "FAIL"
    assert (
        rows["r3"]["status"] == "fail" and primary_verdict(rows["r3"]) is None
    )  # a check failed first
    threads = {primary_verdict(row)["reason"] for row in rows.values() if primary_verdict(row)}
    assert all("Dask" in name for name in threads), threads  # not tinyeval's own pool
    tally = result.categories["default"]
    assert (tally.passed, tally.failed, tally.errors, tally.total) == (21, 2, 0, 23)
    written = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(written) == sorted(rows)


HANGING_MODEL = """
import time

def generate(prompt):
    if prompt.endswith("0"):
        return "answer fast"
    time.sleep(30)  # far longer than the test waits: only abandoning ends the run in time
    return "answer slow"
"""


def read_stderr_until(process: subprocess.Popen[str], text: str, seconds: float) -> list[str]:
    """Lines of stderr up to the first that holds ``text`` (the test fails after ``seconds``)."""
    import selectors

    assert process.stderr is not None
    seen: list[str] = []
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if selector.select(timeout=0.1):
            line = process.stderr.readline()
            seen.append(line)
            if text in line:
                return seen
        if process.poll() is not None:
            break
    process.kill()
    pytest.fail(f"no {text!r} on stderr within {seconds} s: {seen}")


class TestStopping:
    def start_hanging(self, tmp_path: Path) -> subprocess.Popen[str]:
        (tmp_path / "hanging.py").write_text(HANGING_MODEL, encoding="utf-8")
        cases = write_cases(tmp_path / "cases.jsonl", input_cases(40))
        out = tmp_path / "rows.jsonl"
        process = start("run", str(cases), "--out", str(out), "--generate-model",
                        "py:hanging:generate", "--concurrency", "4", "--no-cache",
                        cwd=tmp_path)  # fmt: skip
        wait_for_rows(out, 1, process)  # c000 and the like answer at once
        return process

    def test_a_second_ctrl_c_abandons_the_calls_in_flight(self, tmp_path: Path) -> None:
        process = self.start_hanging(tmp_path)
        process.send_signal(signal.SIGINT)
        # the first says at once what it waits for, and takes no new case
        read_stderr_until(process, "stopping: waiting for", 20)
        process.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, rest = process.communicate(timeout=25)  # the calls in flight would take 30 s
        assert time.monotonic() - started < 25
        assert process.returncode == 130
        assert "abandoned" in rest and "Resume with:" in rest and "Traceback" not in rest

    def test_sigterm_stops_like_a_first_ctrl_c_and_says_how_to_resume(self, tmp_path: Path) -> None:
        process = self.start_hanging(tmp_path)
        process.send_signal(signal.SIGTERM)
        read_stderr_until(process, "stopping: waiting for", 20)
        process.send_signal(signal.SIGINT)  # do not wait the 30 s out
        _, rest = process.communicate(timeout=25)
        assert process.returncode == 130 and "--resume" in rest
