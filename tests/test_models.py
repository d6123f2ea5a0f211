"""Model adapters against local servers that speak each wire format, commands and functions."""

from __future__ import annotations

import json
import logging
import shlex
import socket
import sqlite3
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyeval import models
from tinyeval._http import BACKOFF_CAP, RETRY_AFTER_CAP, parse_retry_after
from tinyeval.models import (
    ModelCallError,
    ModelConfigError,
    Reply,
    as_model,
    resolve,
    scrub,
)

FAKE_KEY = "sk-test-SECRET123"

# --------------------------------------------------------------------------- a fake server


class FakeServer:
    """Scripted answers, one per request (the last one repeats); every request recorded."""

    def __init__(self) -> None:
        self.url = ""
        self.answers: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def answer(
        self,
        status: int = 200,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> FakeServer:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers.append(
            {"status": status, "body": raw, "headers": headers or {}, "delay": delay}
        )
        return self

    def next_answer(self) -> dict[str, Any]:
        with self._lock:
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hung up on a slow answer: expected in the timeout test


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            fake.requests.append(
                {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},  # case-blind
                    "json": json.loads(raw),
                }
            )
            answer = fake.next_answer()
            if answer["delay"]:
                time.sleep(answer["delay"])
            # the worst case for secrets: a server that echoes the Authorization header
            echoed = self.headers.get("Authorization", "").encode()
            body = answer["body"].replace(b"$AUTHORIZATION", echoed)
            self.send_response(answer["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in answer["headers"].items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = _Quiet(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()


class Sleeps(list[float]):
    """Stands in for time.sleep: records the waits, never waits."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def openai_ok(text: str = "PASS", *, model: str = "gpt-test-2024", usage: bool = True) -> Any:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    return body


def anthropic_ok(*texts: str, model: str = "claude-test-1") -> Any:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    blocks.insert(1, {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}})
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 5},
    }


def openai(server: FakeServer, sleeps: Sleeps, name: str = "gpt-test", **options: Any) -> Any:
    options.setdefault("base_url", f"{server.url}/v1")
    return resolve(f"openai:{name}", sleep=sleeps, **options)


# --------------------------------------------------------------------------- openai:


def test_openai_success_sends_the_documented_body(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(200, openai_ok("PASS: supported"))
    reply = openai(server, sleeps)("Is it supported?")
    assert isinstance(reply, Reply) and isinstance(reply, str)
    assert reply == "PASS: supported"
    assert reply.usage == {"input_tokens": 12, "output_tokens": 3}
    assert reply.model == "gpt-test-2024"
    assert reply.cached is False and reply.latency_ms is not None and reply.latency_ms > 0
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["json"] == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "Is it supported?"}],
        "seed": 0,
        "temperature": 0.0,
    }
    assert "authorization" not in request["headers"]  # no key set: a local server needs none
    assert sleeps == []


def test_openai_sample_max_tokens_schema_and_default_temperature(
    server: FakeServer, sleeps: Sleeps
) -> None:
    server.answer(200, openai_ok('{"verdict": "PASS"}'))
    schema = {"type": "object", "properties": {"verdict": {"enum": ["PASS", "FAIL"]}}}
    model = openai(server, sleeps, temperature=None, max_tokens=50)
    model("judge this", sample=2, json_schema=schema)
    body = server.requests[0]["json"]
    assert body["seed"] == 2
    assert body["max_tokens"] == 50
    assert "temperature" not in body  # None: the server's default
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": schema},
    }
    assert model.supports_json_schema is True
    assert model.temperature is None


def test_openai_base_url_from_the_environment(
    server: FakeServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1/")
    server.answer(200, openai_ok())
    assert resolve("openai:gpt-test", sleep=sleeps)("hi") == "PASS"
    assert server.requests[0]["path"] == "/v1/chat/completions"


def test_openai_missing_usage_is_none_not_zero(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(200, openai_ok(usage=False))
    assert openai(server, sleeps)("hi").usage is None


def test_openai_429_waits_exactly_retry_after(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "7"})
    server.answer(200, openai_ok())
    assert openai(server, sleeps)("hi") == "PASS"
    assert sleeps == [7.0]
    assert len(server.requests) == 2


def test_openai_429_retry_after_as_http_date_is_capped(server: FakeServer, sleeps: Sleeps) -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    server.answer(429, {"error": {"message": "slow down"}}, headers={"Retry-After": later})
    server.answer(200, openai_ok())
    openai(server, sleeps)("hi")
    assert sleeps == [RETRY_AFTER_CAP]  # an hour away, capped at 60 s


def test_openai_retry_after_ms_header(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(429, {"error": {"message": "slow"}}, headers={"retry-after-ms": "250"})
    server.answer(200, openai_ok())
    openai(server, sleeps)("hi")
    assert sleeps == [0.25]


def test_openai_500_then_success_backs_off_with_jitter(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(500, {"error": {"message": "internal"}})
    server.answer(200, openai_ok())
    assert openai(server, sleeps)("hi") == "PASS"
    assert len(sleeps) == 1 and 0.0 <= sleeps[0] <= 1.0  # first window: [0, 1 s]


def test_openai_gives_up_after_the_retries(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(503, {"error": {"message": "overloaded, try later"}})
    with pytest.raises(ModelCallError) as caught:
        openai(server, sleeps, retries=2)("hi")
    message = str(caught.value)
    assert message.startswith("openai:gpt-test: HTTP 503 from 127.0.0.1:")
    assert "overloaded, try later" in message and message.endswith("(after 3 attempts)")
    assert len(server.requests) == 3
    # full jitter: the n-th wait is uniform in [0, 2**(n-1)] seconds
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 1 and 0 <= sleeps[1] <= 2


def test_openai_malformed_json_is_an_error_without_retry(
    server: FakeServer, sleeps: Sleeps
) -> None:
    server.answer(200, b"<html>502 Bad Gateway</html")
    with pytest.raises(ModelCallError, match="not JSON: '<html>502 Bad Gateway</html'"):
        openai(server, sleeps)("hi")
    assert len(server.requests) == 1


def test_openai_reply_without_choices_is_an_error(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(200, {"object": "list", "data": []})
    with pytest.raises(ModelCallError, match="no 'choices'"):
        openai(server, sleeps)("hi")


def test_openai_slow_reply_times_out(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(200, openai_ok(), delay=0.5)
    started = time.perf_counter()
    with pytest.raises(ModelCallError, match=r"no reply from 127\.0\.0\.1:\d+ within 0\.2 s"):
        openai(server, sleeps, timeout=0.2, retries=0)("hi")
    assert time.perf_counter() - started < 0.45


def test_openai_timeout_is_retried(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(200, openai_ok(), delay=0.4)
    server.answer(200, openai_ok("PASS after a retry"))
    assert openai(server, sleeps, timeout=0.2, retries=1)("hi") == "PASS after a retry"
    assert len(sleeps) == 1


def test_openai_key_is_required_only_for_the_default_host() -> None:
    with pytest.raises(ModelConfigError) as caught:
        resolve("openai:gpt-4o-mini")
    assert str(caught.value).startswith(
        "openai:gpt-4o-mini needs OPENAI_API_KEY in the environment"
    )
    assert resolve("openai:local", base_url="http://127.0.0.1:9/v1").spec == "openai:local"


def test_openai_unknown_model_404(server: FakeServer, sleeps: Sleeps) -> None:
    server.answer(404, {"error": {"message": "The model `nope` does not exist"}})
    with pytest.raises(ModelCallError) as caught:
        openai(server, sleeps, name="nope")("hi")
    assert "the server does not know the model 'nope'" in str(caught.value)
    assert "The model `nope` does not exist" in str(caught.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 413, 422])
def test_other_4xx_are_not_retried(server: FakeServer, sleeps: Sleeps, status: int) -> None:
    server.answer(status, {"error": {"message": "no"}})
    with pytest.raises(ModelCallError, match=f"HTTP {status} .*after 1 attempt"):
        openai(server, sleeps)("hi")
    assert len(server.requests) == 1 and sleeps == []


def test_429_for_an_exhausted_quota_is_not_retried(server: FakeServer, sleeps: Sleeps) -> None:
    quota = {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}
    server.answer(429, quota)
    with pytest.raises(ModelCallError, match="exceeded your current quota"):
        openai(server, sleeps)("hi")
    assert len(server.requests) == 1


def test_unreachable_server_names_host_and_port(sleeps: Sleeps) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = resolve("openai:m", base_url=f"http://127.0.0.1:{port}/v1", retries=1, sleep=sleeps)
    with pytest.raises(ModelCallError) as caught:
        model("hi")
    message = str(caught.value)
    assert f"cannot reach 127.0.0.1:{port}" in message and "(after 2 attempts)" in message
    assert "\n" not in message and len(sleeps) == 1


# --------------------------------------------------------------------------- anthropic:


def anthropic(server: FakeServer, sleeps: Sleeps, **options: Any) -> Any:
    options.setdefault("base_url", server.url)
    return resolve("anthropic:claude-test", sleep=sleeps, **options)


def test_anthropic_success(
    server: FakeServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    server.answer(200, anthropic_ok("PASS", ": quoted"))
    reply = anthropic(server, sleeps)("Is it supported?")
    assert reply == "PASS: quoted"  # text blocks joined, the tool_use block skipped
    assert reply.usage == {"input_tokens": 20, "output_tokens": 5}
    assert reply.model == "claude-test-1"
    [request] = server.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == FAKE_KEY
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request["headers"]
    assert request["json"] == {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Is it supported?"}],
        "temperature": 0.0,
    }


def test_anthropic_base_url_ending_in_v1(
    server: FakeServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"{server.url}/v1")
    server.answer(200, anthropic_ok("PASS"))
    resolve("anthropic:claude-test", max_tokens=64, sleep=sleeps)("hi")
    assert server.requests[0]["path"] == "/v1/messages"
    assert server.requests[0]["json"]["max_tokens"] == 64


def test_anthropic_needs_a_key() -> None:
    with pytest.raises(ModelConfigError, match=r"^anthropic:claude-x needs ANTHROPIC_API_KEY"):
        resolve("anthropic:claude-x")


def test_anthropic_529_overloaded_is_retried(
    server: FakeServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.answer(529, overloaded).answer(200, anthropic_ok("PASS"))
    assert anthropic(server, sleeps)("hi") == "PASS"
    assert len(server.requests) == 2


def test_anthropic_404_and_error_shape(
    server: FakeServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    missing = {"type": "error", "error": {"type": "not_found_error", "message": "model: nope"}}
    server.answer(404, missing)
    with pytest.raises(ModelCallError, match=r"does not know the model 'claude-test'.*model: nope"):
        anthropic(server, sleeps)("hi")


def test_anthropic_reply_without_text(
    server: FakeServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    server.answer(200, {"content": [], "stop_reason": "refusal"})
    with pytest.raises(ModelCallError, match=r"no text block \(stop_reason='refusal'\)"):
        anthropic(server, sleeps)("hi")


# --------------------------------------------------------------------------- secrets


def test_the_key_never_leaks(
    server: FakeServer,
    sleeps: Sleeps,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tinyeval.cache import ResponseCache, cached

    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    # 1. error bodies that echo the key back: in JSON, and as text where the key
    #    straddles the 200-character cut of the message (a cut must not leave half a key)
    server.answer(401, b'{"error": {"message": "bad key; you sent $AUTHORIZATION"}}')
    server.answer(400, b"x" * 180 + b" $AUTHORIZATION")  # a cut at 199 keeps "sk-test-SEC"
    model = openai(server, sleeps)
    errors = []
    for _ in range(2):
        with pytest.raises(ModelCallError) as caught:
            model("hi")
        errors.append(str(caught.value))
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    assert "you sent Bearer ***" in errors[0]  # the echo is there, the key is not
    assert "check OPENAI_API_KEY" in errors[0]
    assert "sk-test" not in errors[1]
    # 2. a reply, and the cache row it becomes
    server.answers.clear()
    server.answer(200, openai_ok("PASS: the amount is supported"))
    with ResponseCache(tmp_path / "cache.sqlite3") as cache:
        reply = cached(model, cache)("hi")
    texts = [*errors, repr(caught.value), repr(model), model.spec, caplog.text]
    texts += [repr(reply), json.dumps(model.settings)]
    with sqlite3.connect(tmp_path / "cache.sqlite3") as db:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            texts += [repr(row) for row in db.execute(f"SELECT * FROM {table}")]
    for text in texts:
        assert "SECRET123" not in text, text
    assert any("openai:gpt-test" in t for t in texts)  # the cache row was dumped


def test_a_reply_that_echoes_the_key_is_scrubbed(
    server: FakeServer, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tinyeval.cache import ResponseCache, cached

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    server.answer(200, openai_ok("PASS. You sent $AUTHORIZATION", model="gpt-echo"))
    server.answer(200, openai_ok("PASS. Nothing echoed."))
    model = openai(server, sleeps)
    with ResponseCache(tmp_path / "cache.sqlite3") as cache:
        reply = cached(model, cache)("hi")
        again = cached(model, cache)("hi")  # served from the cache
        plain = model("other")
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    assert str(reply) == "PASS. You sent Bearer ***"
    assert (reply.usage, reply.model) == ({"input_tokens": 12, "output_tokens": 3}, "gpt-echo")
    assert str(again) == str(reply) and again.cached
    assert str(plain) == "PASS. Nothing echoed." and plain.usage is not None
    with sqlite3.connect(tmp_path / "cache.sqlite3") as db:
        rows = [
            repr(row)
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            for row in db.execute(f"SELECT * FROM {table}")
        ]
    assert any("Bearer ***" in row for row in rows)
    assert not any("SECRET123" in row for row in rows)


def test_a_command_reply_holding_an_environment_secret_is_scrubbed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdefgh-123")
    model = resolve("cmd:cat")
    assert model("token tok-abcdefgh-123 here") == "token *** here"
    assert model("nothing secret") == "nothing secret"


def test_a_spec_holding_a_secret_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with pytest.raises(ModelConfigError, match="contains the value of a secret") as caught:
        resolve(f"cmd:llm --key {FAKE_KEY}")
    assert "SECRET123" not in str(caught.value)


def test_scrub_uses_given_and_environment_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdefgh-123")
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to be told apart from ordinary text
    text = "a tok-abcdefgh-123 b given-secret-9 c abc"
    assert scrub(text, ["given-secret-9"]) == "a *** b *** c abc"


# --------------------------------------------------------------------------- cmd:


def cmd(code: str, **options: Any) -> Any:
    return resolve("cmd:" + shlex.join([sys.executable, "-c", textwrap.dedent(code)]), **options)


def test_cmd_prompt_on_stdin_reply_on_stdout() -> None:
    model = cmd(
        """
        import os, sys
        print(sys.stdin.read().upper() + " sample=" + os.environ["TINYEVAL_SAMPLE"] + "\\n")
        """,
        temperature=0.5,
    )
    reply = model("pass", sample=3)
    assert reply == "PASS sample=3\n"  # exactly one trailing newline removed
    assert reply.usage is None and model.temperature == 0.5


def test_cmd_non_zero_exit_reports_code_and_last_stderr_line() -> None:
    model = cmd("import sys; sys.stderr.write('warming up\\nboom: no model\\n'); sys.exit(3)")
    with pytest.raises(ModelCallError, match=r"exited with code 3: boom: no model$"):
        model("hi")


def test_cmd_timeout_stops_the_command() -> None:
    model = cmd("import time; time.sleep(10)", timeout=0.3)
    started = time.perf_counter()
    with pytest.raises(ModelCallError, match=r"no reply within 0\.3 s"):
        model("hi")
    assert time.perf_counter() - started < 3


def test_cmd_unknown_command_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError, match="'no-such-command-xyz' not found on PATH"):
        resolve("cmd:no-such-command-xyz --flag")


# --------------------------------------------------------------------------- py:


@pytest.fixture
def judge_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"judge_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            import asyncio
            from tinyeval.models import Reply

            def plain(prompt):
                return "PASS" if "ok" in prompt else "FAIL"

            def with_sample(prompt, *, sample=0):
                return f"{prompt}:{sample}"

            def with_schema(prompt, *, json_schema=None):
                return "schema" if json_schema else "none"

            def catch_all(prompt, **options):
                return ",".join(sorted(options)) or "none"

            async def later(prompt, sample=0):
                await asyncio.sleep(0)
                return f"async {prompt} {sample}"

            def counted(prompt):
                return Reply("PASS", usage={"input_tokens": 4, "output_tokens": 1}, model="m1")

            def broken(prompt):
                raise KeyError("missing field")

            def number(prompt):
                return 1

            class Judge:
                @staticmethod
                def run(prompt):
                    return "nested"

            NOT_CALLABLE = 3
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield name
    sys.modules.pop(name, None)


def test_py_functions(judge_module: str) -> None:
    assert resolve(f"py:{judge_module}:plain")("ok") == "PASS"
    assert resolve(f"py:{judge_module}:with_sample")("x", sample=2) == "x:2"
    with_schema = resolve(f"py:{judge_module}:with_schema")
    assert with_schema.supports_json_schema
    assert with_schema("x", json_schema={"type": "object"}) == "schema"
    # one contract: a **kwargs catch-all is handed neither sample nor json_schema
    catch_all = resolve(f"py:{judge_module}:catch_all")
    assert not catch_all.supports_json_schema
    assert catch_all("x", sample=1, json_schema={"type": "object"}) == "none"
    assert resolve(f"py:{judge_module}:later")("p", sample=1) == "async p 1"
    assert resolve(f"py:{judge_module}:Judge.run")("x") == "nested"
    counted = resolve(f"py:{judge_module}:counted")("x")
    assert counted.usage == {"input_tokens": 4, "output_tokens": 1} and counted.model == "m1"


def test_py_errors(judge_module: str) -> None:
    with pytest.raises(ModelCallError, match="KeyError: 'missing field'"):
        resolve(f"py:{judge_module}:broken")("x")
    with pytest.raises(ModelCallError, match="returned int, expected str"):
        resolve(f"py:{judge_module}:number")("x")
    with pytest.raises(ModelConfigError, match="has no 'nothing'"):
        resolve(f"py:{judge_module}:nothing")
    with pytest.raises(ModelConfigError, match="not callable"):
        resolve(f"py:{judge_module}:NOT_CALLABLE")
    with pytest.raises(ModelConfigError, match="cannot import module 'no_such_module_xyz'"):
        resolve("py:no_such_module_xyz:f")


def test_as_model_wraps_plain_functions() -> None:
    model = as_model(lambda prompt: prompt[::-1], spec="py:demo:reverse")
    assert model("abc") == "cba" and isinstance(model("abc"), Reply)
    assert as_model(model) is model
    with pytest.raises(ModelConfigError):
        as_model("not a function")  # type: ignore[arg-type]


def test_builtin_spec() -> None:
    from tinyeval.judge import Judge, parse_verdict

    model = resolve("builtin")
    judge = Judge("unsupported-claims")
    supported = model(judge.render("Debés 1500 pesos.", context="Deuda: 1.500 pesos."))
    unsupported = model(judge.render("Debés 2.000 pesos.", context="Deuda: 1.500 pesos."))
    assert isinstance(supported, Reply) and model.spec == "builtin"
    assert parse_verdict(supported)[0] == "PASS"
    assert parse_verdict(unsupported)[0] == "FAIL"


# --------------------------------------------------------------------------- specs and options


@pytest.mark.parametrize(
    "spec", ["", "gpt-4o", "openai:", "anthropic:  ", "foo:bar", "builtin:x", "py:mod", "cmd:"]
)
def test_bad_specs(spec: str) -> None:
    with pytest.raises(ModelConfigError):
        resolve(spec)


@pytest.mark.parametrize("spec", ["gpt-4o-mini", "llama3.1:8b", "foo:bar", "", "two words"])
def test_a_bare_model_name_suggests_the_openai_scheme(spec: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        resolve(spec)
    hint = "; for an OpenAI-compatible model write openai:"
    if spec == "gpt-4o-mini":
        assert str(caught.value).endswith(f"{hint}gpt-4o-mini")
    else:
        assert hint not in str(caught.value)


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": 0},
        {"timeout": float("nan")},
        {"retries": -1},
        {"retries": 1.5},
        {"temperature": -0.1},
        {"max_tokens": 0},
        {"base_url": "127.0.0.1:8080"},
    ],
)
def test_bad_options(options: dict[str, Any]) -> None:
    with pytest.raises(ModelConfigError):
        resolve("openai:m", **{"base_url": "http://127.0.0.1:9/v1", **options})


def test_bad_call_arguments() -> None:
    model = as_model(lambda prompt: prompt, spec="py:x:y")
    with pytest.raises(ModelConfigError):
        model("x", sample=-1)
    with pytest.raises(TypeError):
        model(b"bytes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- retry arithmetic


def test_parse_retry_after() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("0") == 0.0
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:09 GMT", now=now) == 9.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0  # in the past
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None and parse_retry_after(None) is None


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_retry_after_seconds_are_honoured_up_to_the_cap(seconds: float) -> None:
    assert parse_retry_after(repr(seconds)) == min(seconds, RETRY_AFTER_CAP)


@given(st.integers(min_value=1, max_value=30))
def test_backoff_is_full_jitter_within_the_window(attempt: int) -> None:
    window = min(BACKOFF_CAP, 2 ** (attempt - 1))  # BACKOFF_BASE is 1 s
    assert 0 <= models._backoff_delay(attempt, None) <= window
    assert models._backoff_delay(attempt, 4.0) == 4.0


def test_async_models_work_inside_a_running_event_loop_through_both_doors() -> None:
    """The judge's door (calls.ask) and the adapter's (as_model) follow one contract."""
    import asyncio

    from tinyeval.models import ask

    async def judge(prompt, **kwargs):
        await asyncio.sleep(0)
        return f"PASS {sorted(kwargs)}"

    async def inside_a_loop() -> tuple[str, str]:
        direct = ask(judge, "x", sample=1)
        adapted = str(as_model(judge, spec="py:test:judge")("x", sample=1))
        return direct, adapted

    assert asyncio.run(inside_a_loop()) == ("PASS []", "PASS []")


def test_any_awaitable_is_awaited_and_a_model_on_tinyeval_s_own_loop_is_refused() -> None:
    import asyncio

    from tinyeval.models import run_awaitable

    class Later:  # an awaitable that is not a coroutine
        def __await__(self) -> Any:
            return asyncio.sleep(0, result="PASS").__await__()

    async def on_our_loop() -> str:
        pending = asyncio.sleep(0)
        try:
            return run_awaitable(pending)
        finally:
            pending.close()

    assert run_awaitable(Later()) == "PASS"
    with pytest.raises(RuntimeError, match="inside tinyeval's own event loop"):
        run_awaitable(on_our_loop())


def test_a_secret_put_in_the_environment_after_a_first_scrub_is_still_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tinyeval.models import scrub

    monkeypatch.delenv("LATE_API_KEY", raising=False)
    assert scrub("the reply sk-late-0123456789") == "the reply sk-late-0123456789"
    monkeypatch.setenv("LATE_API_KEY", "sk-late-0123456789")  # remembered answers are stale now
    assert scrub("the reply sk-late-0123456789") == "the reply ***"
    monkeypatch.delenv("LATE_API_KEY")
    assert scrub("the reply sk-late-0123456789") == "the reply sk-late-0123456789"


def test_models_sent_to_another_process_carry_no_key(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pickle

    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    model = resolve("anthropic:claude-test", base_url=server.url, timeout=5, sleep=lambda _: None)
    data = pickle.dumps(model)  # what a process or distributed executor receives
    assert FAKE_KEY.encode() not in data
    copy = pickle.loads(data)  # the key is read again from this process's environment
    server.answer(200, anthropic_ok("PASS"))
    assert copy("hello") == "PASS" and copy.timeout == 5 and copy.settings == model.settings
    assert server.requests[-1]["headers"]["x-api-key"] == FAKE_KEY
    by_spec = pickle.loads(pickle.dumps(resolve("py:json:dumps", temperature=0.5)))
    assert (by_spec.spec, by_spec.temperature, by_spec("x")) == ("py:json:dumps", 0.5, '"x"')


def test_a_key_that_is_not_ascii_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-SECRÉT123")
    with pytest.raises(ModelConfigError, match="not ASCII at character 13") as caught:
        resolve("anthropic:claude-test")
    assert "SECR" not in str(caught.value)
