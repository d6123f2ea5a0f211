"""--max-cost with a server whose replies carry no usable token count: the run stops before
the next call and says why (exit 3), unless --max-cost-unknown allow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.faults import Fault, FaultServer
from tinyeval.cli import main

REPLY = {"model": "fake-1",
         "choices": [{"message": {"role": "assistant", "content": "PASS"},
                      "finish_reason": "stop"}]}  # fmt: skip
USAGES = {
    "missing": b"",
    "nan": b', "usage": {"prompt_tokens": NaN, "completion_tokens": 1}',
    "infinite": b', "usage": {"prompt_tokens": Infinity, "completion_tokens": 1}',
    "string": b', "usage": {"prompt_tokens": "12", "completion_tokens": "1"}',
    "400 digits": b', "usage": {"prompt_tokens": ' + b"9" * 400 + b', "completion_tokens": 1}',
}


def reply_with(usage: bytes) -> Fault:
    body = json.dumps(REPLY).encode()
    return Fault.raw(200, body[:-1] + usage + b"}")


def capped_run(tmp_path: Path, server: FaultServer, *extra: str) -> int:
    cases = [{"id": f"c{i:02d}", "input": "q?", "output": f"answer {i}"} for i in range(30)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return main(["run", str(tmp_path / "cases.jsonl"), "--criterion", "Is good.", "--judge-model",
                 "openai:m", "--base-url", server.url, "--no-cache", "--concurrency", "1",
                 "--max-cost", "0.05", "--price", "in=1,out=1", "--timeout", "5",
                 "--out", str(tmp_path / "rows.jsonl"), *extra])  # fmt: skip


@pytest.mark.parametrize("usage", USAGES, ids=list(USAGES))
def test_a_reply_without_a_usable_count_stops_a_capped_run(
    tmp_path: Path, usage: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-meter-0123456789")
    with FaultServer([reply_with(USAGES[usage])], max_requests=40) as server:
        code = capped_run(tmp_path, server)
        calls = len(server.requests)
    said = capsys.readouterr()
    assert code == 3, said.err
    assert calls == 1  # stopped before the next call
    assert "the spend cannot be measured" in said.out + said.err
    assert "please report it" not in said.err and "the run stopped early" in said.err


def test_allow_goes_on_without_a_meter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-meter-0123456789")
    with FaultServer([reply_with(USAGES["nan"])], max_requests=40) as server:
        code = capped_run(tmp_path, server, "--max-cost-unknown", "allow")
        calls = len(server.requests)
    assert code == 0, capsys.readouterr().err
    assert calls == 30


def test_a_metered_server_runs_until_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-meter-0123456789")
    metered = b', "usage": {"prompt_tokens": 10000, "completion_tokens": 1}'
    with FaultServer([reply_with(metered)], max_requests=40) as server:
        code = capped_run(tmp_path, server)
        calls = len(server.requests)
    said = capsys.readouterr()
    assert code == 3 and "the spend cap of $0.050 was reached" in said.out + said.err
    assert calls == 5  # $0.01 a call
