"""--batch against a provider that misbehaves: broken or repeated results lines fail their
own case alone, a broken status reply or a batch that never ends stops the run incomplete
(exit 3, resumable), never the internal-error line."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from child import run_tinyeval

from tests.scale.fake_batch_server import KEY_OPENAI, FakeBatchServer

ROOT = Path(__file__).resolve().parents[2]
FLAGS = ["--criterion", "Is good.", "--judge-model", "openai:judge-model", "--batch",
         "--batch-poll", "0.05", "--out", "rows.jsonl"]  # fmt: skip


def run(folder: Path, server: FakeBatchServer, *extra: str) -> subprocess.CompletedProcess:
    env = {"OPENAI_API_KEY": KEY_OPENAI, "OPENAI_BASE_URL": server.openai_base}
    return run_tinyeval(["run", "cases.jsonl", *FLAGS, *extra], folder, env, timeout=120)


def write_cases(folder: Path, n: int = 6) -> None:
    cases = [{"id": f"c{i}", "input": "q?", "output": f"answer good {i}"} for i in range(n)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def rows(folder: Path) -> dict[str, dict]:
    lines = (folder / "rows.jsonl").read_text(encoding="utf-8").split("\n")
    return {row["id"]: row for row in map(json.loads, filter(None, lines))}


def on_first_line(change: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    def mangle(content: bytes) -> bytes:
        first, rest = content.split(b"\n", 1)
        return change(first) + b"\n" + rest

    return mangle


def assert_one_error_row(folder: Path, reason: str) -> None:
    statuses = {cid: row["status"] for cid, row in rows(folder).items()}
    errors = [cid for cid, status in statuses.items() if status == "error"]
    assert len(statuses) == 6 and len(errors) == 1, statuses
    assert reason in rows(folder)[errors[0]]["error"]
    assert all(status == "pass" for cid, status in statuses.items() if cid not in errors)


def test_line_separators_inside_a_reply_do_not_split_its_results_line(tmp_path: Path) -> None:
    write_cases(tmp_path)
    odd = "PASS\u2028\u0085\u2029".encode()  # raw, as a server that does not escape them sends

    with FakeBatchServer(
        delay_polls=0, mangle=lambda c: c.replace(b'"PASS"', b'"' + odd + b'"')
    ) as server:
        done = run(tmp_path, server)
    assert done.returncode == 0, done.stderr
    assert {row["status"] for row in rows(tmp_path).values()} == {"pass"}
    assert len(rows(tmp_path)) == 6


def test_a_repeated_custom_id_is_an_error_row_for_its_case(tmp_path: Path) -> None:
    write_cases(tmp_path)

    def repeat(first: bytes) -> bytes:
        return first + b"\n" + first.replace(b'"PASS"', b'"FAIL"')

    with FakeBatchServer(delay_polls=0, mangle=on_first_line(repeat)) as server:
        done = run(tmp_path, server)
    assert done.returncode == 0 and "please report it" not in done.stderr
    assert_one_error_row(tmp_path, "the batch returned 2 results for this request")


def test_an_unknown_custom_id_is_said_and_its_case_is_an_error_row(tmp_path: Path) -> None:
    write_cases(tmp_path)

    def rename(first: bytes) -> bytes:
        return re.sub(rb'"custom_id": "[^"]+"', b'"custom_id": "tinyeval-stranger"', first)

    with FakeBatchServer(delay_polls=0, mangle=on_first_line(rename)) as server:
        done = run(tmp_path, server)
    assert done.returncode == 0 and "please report it" not in done.stderr
    assert_one_error_row(tmp_path, "the batch ended without a result for this request")
    assert "1 result for a custom id it was not sent ('tinyeval-stranger'), ignored" in (
        done.stdout + done.stderr
    )


def test_a_broken_results_line_fails_its_case_alone(tmp_path: Path) -> None:
    write_cases(tmp_path)

    def cut(first: bytes) -> bytes:
        return first[: first.index(b'"response"')] + b'"response": {'

    with FakeBatchServer(delay_polls=0, mangle=on_first_line(cut)) as server:
        done = run(tmp_path, server)
    assert done.returncode == 0 and "please report it" not in done.stderr, done.stderr
    assert_one_error_row(tmp_path, "is not JSON")


def test_a_deep_or_too_long_results_line_fails_as_a_too_long_reply(tmp_path: Path) -> None:
    write_cases(tmp_path)

    def deep(first: bytes) -> bytes:
        return first.replace(b'"PASS"', b"[" * 200_000 + b"]" * 200_000)

    with FakeBatchServer(delay_polls=0, mangle=on_first_line(deep)) as server:
        done = run(tmp_path, server, "--max-response-bytes", "100000")
    assert done.returncode == 0 and "please report it" not in done.stderr, done.stderr
    assert_one_error_row(tmp_path, "its result is larger than 100,000 bytes")

    def nested(first: bytes) -> bytes:
        return first.replace(b'"PASS"', b"[" * 50_000 + b"]" * 50_000)

    (tmp_path / "rows.jsonl").unlink()
    with FakeBatchServer(delay_polls=0, mangle=on_first_line(nested)) as server:
        done = run(tmp_path, server, "--cache", "other.sqlite3")
    assert done.returncode == 0 and "please report it" not in done.stderr, done.stderr
    assert_one_error_row(tmp_path, "nested too deeply")


def test_garbage_results_are_error_rows_never_the_internal_error_line(tmp_path: Path) -> None:
    write_cases(tmp_path)
    garbage = b"\x00\xff<html>\n[1, 2\n" + b"{" * 100_000 + b'\n"just a string"\n'
    with FakeBatchServer(delay_polls=0, mangle=lambda content: garbage) as server:
        done = run(tmp_path, server)
    assert done.returncode == 0 and "please report it" not in done.stderr, done.stderr
    assert {row["status"] for row in rows(tmp_path).values()} == {"error"}
    assert "4 results lines with no readable custom id, ignored" in done.stdout + done.stderr


def test_a_status_reply_that_is_not_json_stops_the_run_incomplete(tmp_path: Path) -> None:
    write_cases(tmp_path)
    too_long = b'{"status": "' + b"x" * (9 * 2**20) + b'"}'  # past the 8 MiB reply bound
    for body in (b"<html>busy</html>", b"[" * 100_000, b'{"status": 7}', too_long):
        with FakeBatchServer(delay_polls=0, status_body=body) as server:
            done = run(tmp_path, server, "--timeout", "5")
        assert done.returncode == 3, done.stderr
        assert "please report it" not in done.stderr and "Traceback" not in done.stderr
        assert "batch batch_000001" in done.stderr
        assert not (tmp_path / "rows.jsonl").exists()


def test_batch_max_wait_stops_the_run_incomplete_and_a_later_run_resumes(tmp_path: Path) -> None:
    write_cases(tmp_path)
    with FakeBatchServer(delay_polls=10_000) as server:
        waited = run(tmp_path, server, "--batch-max-wait", "0.3")
        assert waited.returncode == 3 and "please report it" not in waited.stderr
        assert "still pending" in waited.stderr and "batch_max_wait" in waited.stderr
        assert server.counts["polls"] >= 1 and not (tmp_path / "rows.jsonl").exists()
        server.delay_polls = 0
        resumed = run(tmp_path, server)
        assert resumed.returncode == 0, resumed.stderr
        assert server.counts["submissions"] == 1
    assert {row["status"] for row in rows(tmp_path).values()} == {"pass"}


def test_a_results_line_giving_a_key_twice_fails_its_case_alone(tmp_path: Path) -> None:
    write_cases(tmp_path)

    def twice(first: bytes) -> bytes:  # read last-wins, FAIL would become PASS
        return first.replace(b'"content": "PASS"', b'"content": "FAIL", "content": "PASS"')

    with FakeBatchServer(delay_polls=0, mangle=on_first_line(twice)) as server:
        done = run(tmp_path, server)
    assert done.returncode == 0 and "please report it" not in done.stderr, done.stderr
    assert_one_error_row(tmp_path, "is not JSON")
