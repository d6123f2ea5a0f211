"""tinyeval.models against a server that misbehaves in every scripted way.

Every test is bounded: the server answers a bounded number of requests and
stops itself, the model's timeout is short, and waits between retries are
recorded instead of slept. No error text may hold the key in any form.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from faults import Fault, FaultServer, key_forms

from tinyeval.models import ModelCallError, ModelConfigError, resolve

KEY = "sk-test-FAULTKEY/+=0123456789"
KEY_FORMS = key_forms(KEY) + key_forms(KEY + "\n")


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    yield


def assert_no_key(text: str) -> None:
    for form in KEY_FORMS:
        assert form not in text, f"the key leaked as {form!r}"
    assert "FAULTKEY" not in text


def call(server: FaultServer, *, scheme: str = "openai", timeout: float = 0.5, **options: object):
    sleeps: list[float] = []
    model = resolve(
        f"{scheme}:m",
        base_url=server.url,
        timeout=timeout,
        sleep=sleeps.append,
        **options,  # type: ignore[arg-type]
    )
    return model, sleeps


def test_a_429_with_retry_after_is_waited_for_exactly_then_retried() -> None:
    with FaultServer([Fault.status(429, retry_after="3"), Fault.ok("PASS")]) as server:
        model, sleeps = call(server)
        assert model("q") == "PASS"
    assert sleeps == [3.0]
    assert server.faults == ["status-429-retry-after-3", "ok"]


def test_a_429_without_retry_after_backs_off_and_retries() -> None:
    with FaultServer([Fault.status(429), Fault.status(429), Fault.ok("PASS")]) as server:
        model, sleeps = call(server)
        assert model("q") == "PASS"
    assert len(sleeps) == 2 and all(0 <= s <= 2 for s in sleeps)


@pytest.mark.parametrize("code", [500, 502, 503, 504])
def test_5xx_is_retried_up_to_the_limit_then_named(code: int) -> None:
    with FaultServer([Fault.status(code)]) as server:
        model, sleeps = call(server, retries=2)
        with pytest.raises(ModelCallError, match=rf"HTTP {code} .*after 3 attempts"):
            model("q")
    assert len(server.requests) == 3 and len(sleeps) == 2


@pytest.mark.parametrize("fault", [Fault.reset(), Fault.close(), Fault.truncated()])
def test_broken_connections_are_retried_and_then_reported(fault: Fault) -> None:
    with FaultServer([fault, Fault.ok("PASS")]) as server:
        model, _ = call(server)
        assert model("q") == "PASS"
    with FaultServer([fault]) as server:
        model, _ = call(server, retries=1)
        with pytest.raises(ModelCallError, match="after 2 attempts") as caught:
            model("q")
    assert_no_key(str(caught.value))


@pytest.mark.parametrize(
    "fault", [Fault.hang(5.0), Fault.dribble(0.1), Fault.dribble(0.1, headers_too=True)]
)
def test_timeout_bounds_the_whole_attempt_however_slowly_the_server_sends(fault: Fault) -> None:
    # a dribble of one byte every 0.1 s takes ~20 s for the whole reply; each read is quick,
    # so only a deadline on the whole attempt stops it
    with FaultServer([fault], lifetime=15.0) as server:
        model, _ = call(server, timeout=0.5, retries=1)
        started = time.monotonic()
        with pytest.raises(ModelCallError, match=r"no reply from .* within 0\.5 s"):
            model("q")
        elapsed = time.monotonic() - started
    # two attempts of 0.5 s each; the bound is generous so a loaded machine does not flake
    assert elapsed < 5.0
    assert len(server.requests) == 2


@pytest.mark.parametrize("declared", [True, False])
def test_an_oversized_body_is_refused_without_reading_it_all(declared: bool) -> None:
    with FaultServer([Fault.oversized(50 * 2**20, declared=declared)]) as server:
        model, sleeps = call(server, timeout=10.0, max_response_bytes=2**20)
        with pytest.raises(ModelCallError, match=r"larger than 1,048,576 bytes") as caught:
            model("q")
    assert "max_response_bytes" in str(caught.value)
    assert len(server.requests) == 1 and sleeps == []  # not retried: it would be as large again


def test_a_reply_within_the_cap_is_read() -> None:
    with FaultServer([Fault.ok("x" * 100_000)]) as server:
        model, _ = call(server, max_response_bytes=200_000)
        assert len(model("q")) == 100_000


@pytest.mark.parametrize("status", [400, 401, 500, 200])
@pytest.mark.parametrize("scheme", ["openai", "anthropic"])
def test_a_server_echoing_the_key_in_every_form_leaks_it_nowhere(status: int, scheme: str) -> None:
    with FaultServer([Fault.echo_key(status)]) as server:
        model, _ = call(server, scheme=scheme, retries=1)
        if status == 200:
            assert_no_key(str(model("q")))
        else:
            with pytest.raises(ModelCallError) as caught:
                model("q")
            assert_no_key(str(caught.value))
            assert_no_key(repr(caught.value))


@pytest.mark.parametrize("ending", ["\n", "\r\n", " ", "\t\n"])
def test_a_key_with_surrounding_whitespace_is_stripped_and_still_scrubbed(
    monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY + ending)
    with FaultServer([Fault.echo_key(401)]) as server:
        model, _ = call(server)
        with pytest.raises(ModelCallError) as caught:
            model("q")
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert_no_key(str(caught.value))


@pytest.mark.parametrize("inner", ["\n", "\r", "\t", "\x1b", "\x7f"])  # no NUL in an environ
def test_a_key_with_an_inner_control_character_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch, inner: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY[:10] + inner + KEY[10:])
    with pytest.raises(ModelConfigError, match="control character") as caught:
        resolve("openai:m", base_url="http://127.0.0.1:9/v1")
    assert "FAULTKEY" not in str(caught.value) and KEY[:10] not in str(caught.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"choices": [{"message": {"content": "ok \\ud800"}}]}', "lone surrogate"),
        (b'{"choices": [{"message": {"content": "ok"}}], "model": "\\udfff"}', "lone surrogate"),
        (b'{"choices": [{"message": {"content": "ok \xff\xfe"}}]}', "not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_a_reply_that_is_not_valid_text_is_a_clear_call_error(body: bytes, expected: str) -> None:
    with FaultServer([Fault.raw(200, body)]) as server:
        model, _ = call(server)
        with pytest.raises(ModelCallError, match=expected) as caught:
            model("q")
    str(caught.value).encode("utf-8")  # the message itself is writable text


def test_the_server_stops_itself_after_its_lifetime_and_request_budget() -> None:
    with FaultServer([Fault.ok()], max_requests=2, lifetime=2.0) as server:
        model, _ = call(server, retries=0)
        assert model("a") == "PASS" and model("b") == "PASS"
        with pytest.raises(ModelCallError):
            model("c")  # over the budget: the connection is closed unanswered
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("scheme", "body", "key"),
    [
        (
            "openai",
            b'{"choices": [{"message": {"content": "FAIL"}}],'
            b' "choices": [{"message": {"content": "PASS"}}]}',
            "choices",
        ),
        (
            "anthropic",
            b'{"content": [{"type": "text", "text": "FAIL"}],'
            b' "content": [{"type": "text", "text": "PASS"}]}',
            "content",
        ),
        ("openai", b'{"choices": [{"message": {"content": "-", "content": "PASS"}}]}', "content"),
    ],
)
def test_a_reply_giving_a_key_twice_is_an_error_row_naming_the_key(
    scheme: str, body: bytes, key: str
) -> None:
    # last-wins would read PASS: a forged or ambiguous reply must not decide the case
    from tinyeval import Case, run

    with FaultServer([Fault.raw(200, body)]) as server:
        model, _ = call(server, scheme=scheme, retries=0)
        with pytest.raises(ModelCallError) as caught:
            model("q")
        case = Case(id="a", input="q", expect={"contains": ["PASS"]})
        row = run([case], generate_model=model).rows[0]
    said = f"{scheme}:m: the server at 127.0.0.1:{server.port} sent a reply in which the key"
    assert str(caught.value) == f"{said} {key!r} is given twice"
    assert row["status"] == "error" and row["checks"] == {}
    assert f"the key {key!r} is given twice" in row["error"]
