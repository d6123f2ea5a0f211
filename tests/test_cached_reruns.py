"""A re-run through a warm cache: cases the cache answers whole run in the calling thread.

The rows, the calls made and the cache's counts must be exactly those of the same run on
workers; only where the case ran differs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tinyeval
from tinyeval.cache import ResponseCache, cached
from tinyeval.dataset import Case
from tinyeval.judge import Judge
from tinyeval.judges.graded_judge import GradedJudge
from tinyeval.rag.judges import ClaimsJudge, ContextRelevanceJudge
from tinyeval.scale.cached import _CacheMiss, cache_only

TIMING = ("started_at", "finished_at", "latency_ms")


class Recorder:
    """A judge model that answers PASS (or a score, or claims) and notes each prompt and the
    thread that asked."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, prompt: str, *, sample: int = 0) -> str:
        with self._lock:
            self.prompts.append(prompt)
            self.threads.add(threading.current_thread().name)
        if "one per line" in prompt:  # a claims extraction
            return "The fee is ARS 150."
        if prompt.startswith("You are scoring"):  # a graded judge
            return "4\nMostly complete."
        return "PASS\nStated."


def cases(n: int) -> list[Case]:
    return [
        Case(
            id=f"c{i}",
            input="What is the fee?",
            output=f"The fee is ARS {150 + i}.",
            context="Each transfer costs ARS 150.",
            category=f"k{i % 3}",
        )
        for i in range(n)
    ]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(tmp_path / "cache.sqlite3") as opened:
        yield opened


def lookups_by_thread(store: ResponseCache, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The thread of every cache look-up from now on (counted or not)."""
    seen: list[str] = []
    real = ResponseCache.get

    def get(self: ResponseCache, *args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ResponseCache, "get", get)
    return seen


def without_timing(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


@pytest.mark.parametrize(
    "judge",
    [Judge("unsupported-claims"), Judge("Is polite.", votes=3), ClaimsJudge(),
     ContextRelevanceJudge(), GradedJudge("The answer is complete.", pass_at=4)],
    ids=["judge", "votes", "claims", "context-relevance", "graded"],
)  # fmt: skip
def test_a_fully_cached_rerun_runs_in_the_calling_thread_with_the_same_rows(
    judge: Any, store: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_model = Recorder()
    first = tinyeval.run(cases(30), judges=judge, concurrency=8,
                         judge_model=cached(first_model, store, spec="py:t:judge"))  # fmt: skip
    assert first.total == 30 and {row["status"] for row in first.rows} == {"pass"}
    assert first_model.threads and "MainThread" not in first_model.threads  # on workers
    hits_before, misses_before, _ = store.stats()
    asked = hits_before + misses_before  # every call the first run asked for (some repeat)
    assert misses_before == len(first_model.prompts)

    again_model = Recorder()
    threads = lookups_by_thread(store, monkeypatch)
    again = tinyeval.run(cases(30), judges=judge, concurrency=8,
                         judge_model=cached(again_model, store, spec="py:t:judge"))  # fmt: skip

    assert again_model.prompts == []  # not one call
    assert set(threads) == {"MainThread"}  # every look-up made here, none on a worker
    hits, misses, _ = store.stats()
    assert (hits - hits_before, misses - misses_before) == (asked, 0)  # each counted once
    key = lambda row: row["id"]  # noqa: E731
    assert without_timing(sorted(again.rows, key=key)) == without_timing(
        sorted(first.rows, key=key)
    )
    # the same re-run on workers (a case timeout keeps every case there) gives the same rows
    on_workers = tinyeval.run(cases(30), judges=judge, concurrency=8, case_timeout=60,
                              judge_model=cached(Recorder(), store, spec="py:t:judge"))  # fmt: skip
    assert "MainThread" not in threads[-1:] and len(threads) == 2 * asked
    assert without_timing(sorted(on_workers.rows, key=key)) == without_timing(
        sorted(again.rows, key=key)
    )


def test_a_partly_cached_rerun_calls_only_what_is_missing_and_counts_it_once(
    store: ResponseCache,
) -> None:
    judge = Judge("Is polite.", votes=3)
    warm = Recorder()
    tinyeval.run(cases(10), judges=judge, concurrency=4,
                 judge_model=cached(warm, store, spec="py:t:judge"))  # fmt: skip
    before = store.stats()

    model = Recorder()
    result = tinyeval.run(cases(25), judges=judge, concurrency=4,
                          judge_model=cached(model, store, spec="py:t:judge"))  # fmt: skip

    assert result.total == 25 and result.errors == 0
    assert len(model.prompts) == 15 * 3  # the 15 new cases' three votes, nothing else
    assert "MainThread" not in model.threads  # the calls were made on workers
    hits, misses, stores = (now - then for now, then in zip(store.stats(), before, strict=True))
    assert (hits, misses, stores) == (10 * 3, 15 * 3, 15 * 3)


def test_a_vote_missing_from_the_cache_sends_the_whole_case_to_a_worker(
    store: ResponseCache,
) -> None:
    """Two of three votes cached: the case is tried here, misses at the third, and runs on a
    worker, where the two cached votes are read again and counted once."""
    model = Recorder()
    judge = Judge("Is polite.", votes=3)
    one = cases(1)
    prompt = judge.render(one[0].output or "", context=one[0].context, question=one[0].input)
    warming = cached(Recorder(), store, spec="py:t:judge")
    for sample in (0, 1):
        warming(prompt, sample=sample)
    before = store.stats()
    result = tinyeval.run(one, judges=judge, concurrency=4,
                          judge_model=cached(model, store, spec="py:t:judge"))  # fmt: skip
    assert result.rows[0]["status"] == "pass"
    assert len(model.prompts) == 1 and "MainThread" not in model.threads
    assert (store.stats().hits - before.hits, store.stats().misses - before.misses) == (2, 1)


def test_a_cold_cache_is_tried_for_a_few_dozen_cases_then_left_alone(
    store: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = Recorder()
    threads = lookups_by_thread(store, monkeypatch)
    result = tinyeval.run(cases(200), judges=Judge("unsupported-claims"), concurrency=4,
                          judge_model=cached(model, store, spec="py:t:judge"))  # fmt: skip
    assert result.total == 200 and len(model.prompts) == 200
    tried_here = threads.count("MainThread")
    assert 30 <= tried_here <= 40  # stopped once misses clearly outnumbered hits
    assert store.stats()[:2] == (0, 200)  # the tries are not counted as misses


class OwnModelJudge(Judge):
    """A judge that also asks a model of its own: never answered from the run's cache here."""

    def __init__(self, own: Recorder) -> None:
        super().__init__("Is polite.")
        self.own = own

    def __call__(self, call_model: Any, **asked: Any) -> Any:
        self.own("extra question")
        return super().__call__(call_model, **asked)


def test_a_judge_that_may_call_a_model_of_its_own_always_runs_on_a_worker(
    store: ResponseCache,
) -> None:
    own = Recorder()
    judge = OwnModelJudge(own)
    tinyeval.run(cases(12), judges=judge, concurrency=4,
                 judge_model=cached(Recorder(), store, spec="py:t:judge"))  # fmt: skip
    own.threads.clear()
    tinyeval.run(cases(12), judges=judge, concurrency=4,
                 judge_model=cached(Recorder(), store, spec="py:t:judge"))  # fmt: skip
    assert len(own.prompts) == 24 and "MainThread" not in own.threads


def test_a_refreshing_cache_keeps_every_case_on_a_worker(store: ResponseCache) -> None:
    judge = Judge("unsupported-claims")
    tinyeval.run(cases(8), judges=judge, concurrency=4,
                 judge_model=cached(Recorder(), store, spec="py:t:judge"))  # fmt: skip
    refreshing = Recorder()
    model = cached(refreshing, store, refresh=True, spec="py:t:judge")
    tinyeval.run(cases(8), judges=judge, concurrency=4, judge_model=model)
    assert len(refreshing.prompts) == 8 and "MainThread" not in refreshing.threads
    assert cache_only(cached(Recorder(), store, refresh=True)) is None


def test_cache_only_raises_a_miss_no_judge_can_swallow(store: ResponseCache) -> None:
    only = cache_only(cached(Recorder(), store, spec="py:t:judge"))
    assert only is not None
    with pytest.raises(_CacheMiss):
        Judge("Is polite.")(only, response="Thanks!")  # not recorded as a failed call
    assert not issubclass(_CacheMiss, Exception)


def test_only_a_cached_model_is_tried_first_whatever_attributes_another_has() -> None:
    """A stand-in (a mock, say) that happens to have a ``cache_only`` is called, never probed."""

    class LooksCached(Recorder):
        def cache_only(self) -> Any:
            raise AssertionError("probed")

    model = LooksCached()
    result = tinyeval.run(cases(6), judges=Judge("unsupported-claims"), concurrency=3,
                          judge_model=model)  # fmt: skip
    assert result.errors == 0 and len(model.prompts) == 6


def test_a_rerun_that_generates_and_judges_from_the_cache_calls_neither_model(
    store: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    def generator(prompt: str) -> str:
        return f"The fee is ARS 150 ({len(prompt)})."

    asked = [Case(id=f"g{i}", input=f"What is fee {i}?", context="Each transfer costs ARS 150.")
             for i in range(12)]  # fmt: skip
    judge = Judge("unsupported-claims")

    def run(generate: Recorder | Any, judging: Recorder, **options: Any) -> Any:
        return tinyeval.run(asked, judges=judge, concurrency=4, **options,
                            generate_model=cached(generate, store, spec="py:t:generate"),
                            judge_model=cached(judging, store, spec="py:t:judge"))  # fmt: skip

    first = run(generator, Recorder())
    assert first.total == 12 and first.errors == 0
    threads = lookups_by_thread(store, monkeypatch)
    calls: list[str] = []
    again = run(lambda prompt: calls.append(prompt) or "never", judging := Recorder())
    assert calls == [] and judging.prompts == []
    assert set(threads) == {"MainThread"} and len(threads) == 24  # a generation and a verdict
    on_workers = run(generator, Recorder(), case_timeout=60)
    key = lambda row: row["id"]  # noqa: E731
    assert without_timing(sorted(again.rows, key=key)) == without_timing(
        sorted(on_workers.rows, key=key)
    )


def test_checks_of_the_callers_own_keep_every_case_on_a_worker(store: ResponseCache) -> None:
    """They may be slow: a cached re-run with them still runs its cases on the workers."""
    seen: set[str] = set()

    def slow_check(output: str) -> bool:
        seen.add(threading.current_thread().name)
        return True

    judge = Judge("unsupported-claims")
    for _ in range(2):
        tinyeval.run(cases(10), judges=judge, checks=[slow_check], concurrency=4,
                     judge_model=cached(Recorder(), store, spec="py:t:judge"))  # fmt: skip
    assert seen and "MainThread" not in seen


def test_cache_only_hits_count_once_settled(store: ResponseCache) -> None:
    model = cached(lambda prompt: prompt.upper(), store, spec="py:t:upper")
    model("hi")  # a miss, then stored
    only = cache_only(model)
    assert only is not None
    assert (str(only("hi")), str(only("hi"))) == ("HI", "HI")
    before = store.stats().hits
    only.settle()
    assert (before, store.stats().hits) == (0, 2)
    only("hi")
    only.forget()
    only.settle()
    assert store.stats().hits == 2
