"""Provider batches against a fake server speaking both providers' batch wire formats."""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
from pathlib import Path

import pytest

from tests.scale.fake_batch_server import (
    KEY_ANTHROPIC,
    KEY_OPENAI,
    FakeBatchServer,
    scripted_answer,
)
from tinyeval.cache import ResponseCache, cached
from tinyeval.models import ModelConfigError, resolve
from tinyeval.scale.batch import BatchError, BatchJob, BatchRequest, pending_batches

FLAVOURS = ("openai", "anthropic")


class FakeTime:
    """A clock that moves only when ``sleep`` is called; every wait is recorded."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY_OPENAI)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY_ANTHROPIC)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def base(server: FakeBatchServer, flavour: str) -> str:
    return server.openai_base if flavour == "openai" else server.anthropic_base


def make_job(
    server: FakeBatchServer, flavour: str, cache: ResponseCache, fake: FakeTime, **options: object
) -> BatchJob:
    return BatchJob(
        f"{flavour}:judge-model",
        cache,
        base_url=base(server, flavour),
        sleep=fake.sleep,
        clock=fake.clock,
        poll_interval=10.0,
        max_poll_interval=40.0,
        **options,  # type: ignore[arg-type]
    )


def prompts(n: int, *, fail_every: int = 0) -> list[BatchRequest]:
    out = []
    for i in range(n):
        verdict = "good" if i % 3 else "bad"
        marker = " [batch-fail]" if fail_every and i % fail_every == 0 else ""
        out.append(BatchRequest(f"case {i}: the answer is {verdict}{marker}"))
    return out


def key_forms(key: str) -> list[str]:
    return [key, json.dumps(key)[1:-1], urllib.parse.quote(key, safe=""), key.encode().hex()]


def assert_no_key(text: str) -> None:
    for key in (KEY_OPENAI, KEY_ANTHROPIC):
        for form in key_forms(key):
            assert form not in text


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_500_requests_one_submission_equal_to_direct_calls(tmp_path: Path, flavour: str) -> None:
    fake = FakeTime()
    requests = prompts(500)
    with FakeBatchServer(delay_polls=3) as server, ResponseCache(tmp_path / "c.db") as cache:
        outcome = make_job(server, flavour, cache, fake).run(requests)
        assert server.counts["submissions"] == 1
        assert server.counts["batched_requests"] == 500
        assert server.counts["direct"] == 0
        assert outcome.counts()["succeeded"] == 500 and outcome.complete
        assert [r.request for r in outcome.results] == requests  # order kept
        # polled until the 4th retrieval ended the batch, waiting between polls
        assert outcome.polls == 4 and server.counts["polls"] == 4
        assert len(fake.sleeps) == 3
        for attempt, delay in enumerate(fake.sleeps):
            window = min(40.0, 10.0 * 2**attempt)  # 10, 20, 40
            assert window / 2 <= delay <= window

        # a later run through the ordinary cached model replays every reply with no call
        direct_model = resolve(f"{flavour}:judge-model", base_url=base(server, flavour))
        replay = cached(direct_model, cache)
        for request, result in zip(requests, outcome.results, strict=True):
            again = replay(request.prompt)
            assert again.cached and again == result.reply
        assert server.counts["direct"] == 0

        # the results equal direct calls of the same scripted model
        for request, result in zip(requests, outcome.results, strict=True):
            direct = direct_model(request.prompt)
            assert result.reply is not None
            assert str(result.reply) == str(direct) == scripted_answer(request.prompt)
            assert result.reply.usage == direct.usage
            assert result.reply.model == direct.model == "judge-model-2026"
        assert server.counts["direct"] == 500


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_killed_while_pending_resumes_the_same_batch(tmp_path: Path, flavour: str) -> None:
    fake = FakeTime()
    requests = prompts(40)
    path = tmp_path / "c.db"
    with FakeBatchServer(delay_polls=2) as server:
        with ResponseCache(path) as cache:
            first = make_job(server, flavour, cache, fake)
            (submitted,) = first.submit(requests)
            assert submitted.submitted and server.counts["submissions"] == 1
            del first  # the process dies while the batch is pending
        with ResponseCache(path) as cache:  # a new process, the same cache file
            assert pending_batches(cache) == [submitted.batch_id]
            outcome = make_job(server, flavour, cache, fake).run(requests)
            assert server.counts["submissions"] == 1
            assert outcome.submissions == 0
            assert [b.batch_id for b in outcome.batches] == [submitted.batch_id]
            assert not outcome.batches[0].submitted
            assert outcome.counts()["succeeded"] == 40
            assert pending_batches(cache) == []
        with ResponseCache(path) as cache:  # a third run: everything from the cache
            http_before = server.counts["http"]
            outcome = make_job(server, flavour, cache, fake).run(requests)
            assert server.counts["http"] == http_before
            assert {r.source for r in outcome.results} == {"cache"}
            assert outcome.batches == () and outcome.polls == 0


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_polling_gives_up_at_max_wait_and_a_later_run_resumes(tmp_path: Path, flavour: str) -> None:
    fake = FakeTime()
    requests = prompts(5)
    with FakeBatchServer(delay_polls=6) as server, ResponseCache(tmp_path / "c.db") as cache:
        outcome = make_job(server, flavour, cache, fake, max_wait=60.0).run(requests)
        assert not outcome.complete
        assert outcome.counts()["pending"] == 5
        assert fake.now <= 60.0
        later = make_job(server, flavour, cache, fake).run(requests)
        assert later.complete and later.counts()["succeeded"] == 5
        assert server.counts["submissions"] == 1
        assert server.counts["polls"] == 7  # the batch ended on its 7th retrieval


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_partial_failures_are_per_request_errors(tmp_path: Path, flavour: str) -> None:
    fake = FakeTime()
    requests = prompts(20, fail_every=5)  # cases 0, 5, 10, 15 fail inside the batch
    with FakeBatchServer() as server, ResponseCache(tmp_path / "c.db") as cache:
        outcome = make_job(server, flavour, cache, fake).run(requests)
        failed = [r for r in outcome.results if not r.ok]
        assert [r.request for r in failed] == [requests[i] for i in (0, 5, 10, 15)]
        for result in failed:
            assert result.state == "errored" and result.source == "batch"
            assert result.status == 500
            assert result.error == "internal error for key ***"
            assert cache.get(f"{flavour}:judge-model", result.request.prompt) is None
        assert outcome.counts()["succeeded"] == 16
        assert server.counts["direct"] == 0
        assert_no_key(json.dumps(outcome.to_dict()) + str(outcome))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_partial_failures_retried_as_direct_calls(tmp_path: Path, flavour: str) -> None:
    fake = FakeTime()
    requests = prompts(20, fail_every=5)
    with FakeBatchServer() as server, ResponseCache(tmp_path / "c.db") as cache:
        outcome = make_job(server, flavour, cache, fake, on_failure="retry").run(requests)
        assert outcome.counts()["succeeded"] == 20
        direct = [r for r in outcome.results if r.source == "direct"]
        assert [r.request for r in direct] == [requests[i] for i in (0, 5, 10, 15)]
        assert server.counts["direct"] == 4 and server.counts["submissions"] == 1
        for result in direct:
            assert str(result.reply) == scripted_answer(result.request.prompt)
        replay = cached(resolve(f"{flavour}:judge-model", base_url=base(server, flavour)), cache)
        assert all(replay(r.prompt).cached for r in requests)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("ending", ["expire", "cancel"])
def test_expired_and_cancelled_batches_are_reported(
    tmp_path: Path, flavour: str, ending: str
) -> None:
    fake = FakeTime()
    requests = prompts(10)
    options = {ending: True, "expire_after": 3}
    with FakeBatchServer(**options) as server, ResponseCache(tmp_path / "c.db") as cache:  # type: ignore[arg-type]
        outcome = make_job(server, flavour, cache, fake).run(requests)
    expected_status = {
        ("openai", "expire"): "expired",
        ("openai", "cancel"): "cancelled",
        ("anthropic", "expire"): "ended",
        ("anthropic", "cancel"): "ended",
    }[(flavour, ending)]
    assert [b.status for b in outcome.batches] == [expected_status]
    state = "expired" if ending == "expire" else "canceled"
    assert [r.state for r in outcome.results] == ["succeeded"] * 3 + [state] * 7
    assert f"7 {state}" in str(outcome)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_key_never_in_errors_or_cached_values(tmp_path: Path, flavour: str) -> None:
    fake = FakeTime()
    path = tmp_path / "c.db"
    with FakeBatchServer() as server, ResponseCache(path) as cache:
        outcome = make_job(server, flavour, cache, fake).run(prompts(10, fail_every=2))
        assert outcome.counts()["errored"] == 5
    texts = [json.dumps(outcome.to_dict()), str(outcome)]
    texts += [str(r) for r in outcome.results]
    connection = sqlite3.connect(path)
    for table in ("replies", "batches", "batch_requests"):
        texts += [repr(row) for row in connection.execute(f"SELECT * FROM {table}")]
    connection.close()
    texts += [p.read_bytes().decode("latin-1") for p in tmp_path.iterdir()]
    assert any("***" in text for text in texts)  # the key was there to be removed
    for text in texts:
        assert_no_key(text)


def test_results_url_on_another_host_is_refused(tmp_path: Path) -> None:
    fake = FakeTime()
    with (
        FakeBatchServer(results_host="attacker.invalid:80") as server,
        ResponseCache(tmp_path / "c.db") as cache,
    ):
        with pytest.raises(BatchError, match="refusing to send the key") as caught:
            make_job(server, "anthropic", cache, fake).run(prompts(3))
        assert server.counts["submissions"] == 1
    assert_no_key(str(caught.value))


def test_openai_batch_file_matches_the_wire_format(tmp_path: Path) -> None:
    fake = FakeTime()
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}}
    requests = [BatchRequest("is it good?", json_schema=schema), BatchRequest("bad", sample=2)]
    with FakeBatchServer() as server, ResponseCache(tmp_path / "c.db") as cache:
        job = make_job(server, "openai", cache, fake, max_tokens=5)
        outcome = job.run(requests + requests)  # duplicates are sent once
        assert server.uploads == [{"purpose": "batch"}]
        (batch,) = server.batches.values()
        lines = batch["lines"]
        assert [line["custom_id"] for line in lines] == [job.custom_id(r) for r in requests]
        assert {line["method"] for line in lines} == {"POST"}
        assert {line["url"] for line in lines} == {"/v1/chat/completions"}
        first, second = (line["body"] for line in lines)
        assert first["model"] == "judge-model" and first["max_tokens"] == 5
        assert first["messages"] == [{"role": "user", "content": "is it good?"}]
        assert first["response_format"]["json_schema"]["schema"] == schema
        assert second["seed"] == 2 and "response_format" not in second
    assert [str(r.reply) for r in outcome.results] == ["PASS", "FAIL", "PASS", "FAIL"]
    assert outcome.results[0].custom_id == outcome.results[2].custom_id


def test_anthropic_batch_matches_the_wire_format(tmp_path: Path) -> None:
    fake = FakeTime()
    with FakeBatchServer() as server, ResponseCache(tmp_path / "c.db") as cache:
        job = make_job(server, "anthropic", cache, fake, temperature=0.5)
        job.run([BatchRequest("good")])
        (batch,) = server.batches.values()
        (request,) = batch["lines"]
        assert set(request) == {"custom_id", "params"}
        assert request["params"] == {
            "model": "judge-model",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "good"}],
            "temperature": 0.5,
        }
        assert server.events == [
            "POST /v1/messages/batches",
            "GET /v1/messages/batches/msgbatch_N",
            "GET /v1/messages/batches/msgbatch_N",
            "GET /v1/messages/batches/msgbatch_N",
            "GET /v1/messages/batches/msgbatch_N/results",
        ]


def test_bad_options_are_refused(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.db") as cache:
        with pytest.raises(ModelConfigError, match="openai:MODEL or anthropic:MODEL"):
            BatchJob("cmd:cat", cache)
        with pytest.raises(ModelConfigError, match="on_failure"):
            BatchJob("openai:m", cache, base_url="http://127.0.0.1:9/v1", on_failure="skip")
    with pytest.raises(ModelConfigError, match="sample"):
        BatchRequest("x", sample=-1)


@pytest.mark.parametrize(("flavour", "n"), [("openai", 500), ("anthropic", 100)])
def test_judged_run_through_batch_model_equals_a_direct_run(
    tmp_path: Path, flavour: str, n: int
) -> None:
    from tinyeval import Judge, run
    from tinyeval.dataset import Case
    from tinyeval.scale.batch import BatchModel

    fake = FakeTime()
    cases = [
        Case(
            id=f"c{i}", input=f"question {i}?", output=f"answer {i} is {'good' if i % 3 else 'bad'}"
        )
        for i in range(n)
    ]
    judge = Judge("answers-the-question", votes=3)
    with FakeBatchServer() as server, ResponseCache(tmp_path / "c.db") as cache:
        job = make_job(server, flavour, cache, fake)
        model = BatchModel(job)
        # record the calls the run would make, send them as one batch, then run for real
        run(cases, judges=judge, judge_model=model, fail_fast=None, keep_rows=False, concurrency=8)
        deferred = model.take_deferred()
        assert len(deferred) == 3 * n  # 3 votes a case
        model.absorb(job.run(deferred))
        batched = run(cases, judges=judge, judge_model=model, concurrency=8)
        assert model.take_deferred() == []
        assert server.counts["submissions"] == 1 and server.counts["direct"] == 0
        direct = run(
            cases,
            judges=judge,
            judge_model=resolve(f"{flavour}:judge-model", base_url=base(server, flavour)),
            concurrency=8,
        )
        assert server.counts["direct"] == 3 * n

    def comparable(row: dict[str, object]) -> dict[str, object]:
        timing = ("started_at", "finished_at", "latency_ms")
        return {k: v for k, v in row.items() if k not in timing}

    def by_id(rows: list[dict[str, object]]) -> list[dict[str, object]]:
        return sorted((comparable(r) for r in rows), key=lambda r: str(r["id"]))

    assert len(batched.rows) == n
    assert by_id(batched.rows) == by_id(direct.rows)
    assert {r["status"] for r in batched.rows} == {"pass", "fail"}


def test_batch_failures_become_error_rows(tmp_path: Path) -> None:
    from tinyeval import Judge, run
    from tinyeval.dataset import Case
    from tinyeval.scale.batch import BatchModel

    fake = FakeTime()
    cases = [Case(id="ok", input="q?", output="good"),
             Case(id="bad", input="q?", output="good [batch-fail]")]  # fmt: skip
    judge = Judge("answers-the-question")
    with FakeBatchServer() as server, ResponseCache(tmp_path / "c.db") as cache:
        job = make_job(server, "openai", cache, fake)
        model = BatchModel(job)
        run(cases, judges=judge, judge_model=model, fail_fast=None, keep_rows=False)
        model.absorb(job.run(model.take_deferred()))
        rows = {row["id"]: row for row in run(cases, judges=judge, judge_model=model).rows}
        assert model.take_deferred() == [] and server.counts["direct"] == 0
    assert rows["ok"]["status"] == "pass"
    assert rows["bad"]["status"] == "error"
    assert "errored in the batch: HTTP 500: internal error for key ***" in rows["bad"]["error"]


def test_fake_server_is_bounded_in_requests(tmp_path: Path) -> None:
    fake = FakeTime()
    with FakeBatchServer(max_requests=2) as server, ResponseCache(tmp_path / "c.db") as cache:
        job = make_job(server, "openai", cache, fake, retries=0)
        with pytest.raises(BatchError, match="HTTP 503") as caught:
            job.run(prompts(2))  # upload, create, then the first poll is refused
        assert server.counts["submissions"] == 1
        assert pending_batches(cache) != []  # the batch is recorded: a later run resumes it
    assert_no_key(str(caught.value))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_creating_a_batch_is_retried_only_when_surely_not_done(
    tmp_path: Path, flavour: str
) -> None:
    fake = FakeTime()
    refused_twice = ((503, False), (429, False))
    with (
        FakeBatchServer(create_failures=refused_twice) as server,
        ResponseCache(tmp_path / "c.db") as cache,
    ):
        outcome = make_job(server, flavour, cache, fake).run(prompts(4))
        assert outcome.counts()["succeeded"] == 4
        assert server.counts["submissions"] == 1
    fake = FakeTime()
    created_then_500 = ((500, True),)  # the provider made the batch but answered 500
    with (
        FakeBatchServer(create_failures=created_then_500) as server,
        ResponseCache(tmp_path / "d.db") as cache,
    ):
        with pytest.raises(BatchError, match="may have been created all the same"):
            make_job(server, flavour, cache, fake).run(prompts(4))
        assert server.counts["submissions"] == 1  # not sent a second time
