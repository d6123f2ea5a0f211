"""The response cache: what it keys on, replay, refresh, threads and processes at once."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tinyeval.cache import (
    DEFAULT_PATH,
    SCHEMA_VERSION,
    CacheError,
    CacheStats,
    ResponseCache,
    cached,
)
from tinyeval.models import Model, ModelCallError, Reply, as_model

REPO = Path(__file__).resolve().parents[1]


class CountingModel(Model):
    """A fake model that counts its calls and says which call produced a reply."""

    def __init__(
        self,
        spec: str = "openai:fake",
        *,
        temperature: float | None = 0.0,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(spec, temperature=temperature, settings=settings)
        self.calls = 0
        self._lock = threading.Lock()

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        with self._lock:
            self.calls += 1
            n = self.calls
        return Reply(
            f"reply {n} to {prompt} #{sample}",
            usage={"input_tokens": 10, "output_tokens": 2},
            model="fake-2024",
        )


@pytest.fixture
def cache(tmp_path: Path) -> Any:
    with ResponseCache(tmp_path / "cache.sqlite3") as store:
        yield store


def test_miss_then_hit(cache: ResponseCache) -> None:
    assert cache.get("openai:m", "prompt") is None
    cache.put(
        "openai:m",
        "prompt",
        Reply("PASS", usage={"input_tokens": 7, "output_tokens": 1}, model="m-1", latency_ms=812.5),
    )
    hit = cache.get("openai:m", "prompt")
    assert hit == "PASS" and hit is not None and hit.cached is True
    assert hit.usage == {"input_tokens": 7, "output_tokens": 1}
    assert hit.model == "m-1" and hit.latency_ms == 812.5  # the original call's latency
    assert cache.stats() == CacheStats(hits=1, misses=1, stores=1)
    assert len(cache) == 1


def test_every_part_of_the_key_counts(cache: ResponseCache) -> None:
    cache.put("openai:m", "prompt", "base")
    variants: list[tuple[str, str, dict[str, Any]]] = [
        ("openai:other", "prompt", {}),
        ("openai:m", "prompt ", {}),
        ("openai:m", "prompt", {"sample": 1}),
        ("openai:m", "prompt", {"temperature": 0.7}),
        ("openai:m", "prompt", {"temperature": None}),
        ("openai:m", "prompt", {"extra": {"json_schema": {"type": "object"}}}),
    ]
    for spec, prompt, key in variants:
        assert cache.get(spec, prompt, **key) is None, (spec, prompt, key)
    assert cache.get("openai:m", "prompt", sample=0, temperature=0) == "base"  # 0 == 0.0


def test_a_plain_str_reply_is_stored_without_usage(cache: ResponseCache) -> None:
    cache.put("cmd:x", "p", "text")
    hit = cache.get("cmd:x", "p")
    assert hit is not None and hit.usage is None and hit.model is None


def test_cached_model_replays_with_zero_calls(cache: ResponseCache) -> None:
    inner = CountingModel()
    model = cached(inner, cache)
    first = [model("q", sample=s) for s in range(3)]
    again = [model("q", sample=s) for s in range(3)]
    assert inner.calls == 3  # the second pass made no call at all
    assert [r.cached for r in first] == [False] * 3 and [r.cached for r in again] == [True] * 3
    assert again == first and again[1] == "reply 2 to q #1"  # distinct samples stay distinct
    assert again[0].usage == {"input_tokens": 10, "output_tokens": 2}
    assert model.spec == inner.spec and model.temperature == inner.temperature


def test_temperature_and_settings_separate_replies(cache: ResponseCache) -> None:
    cold = CountingModel(temperature=0.0, settings={"url": "http://a:1/v1", "max_tokens": None})
    warm = CountingModel(temperature=0.8, settings={"url": "http://a:1/v1", "max_tokens": None})
    other = CountingModel(temperature=0.0, settings={"url": "http://b:2/v1", "max_tokens": None})
    for inner in (cold, warm, other):
        cached(inner, cache)("q")
        cached(inner, cache)("q")
        assert inner.calls == 1
    assert len(cache) == 3


def test_json_schema_is_part_of_the_key(cache: ResponseCache) -> None:
    inner = CountingModel()
    model = cached(inner, cache)
    model("q")
    model("q", json_schema={"type": "object"})
    model("q", json_schema={"type": "object"})
    assert inner.calls == 2


def test_refresh_calls_again_and_overwrites(cache: ResponseCache) -> None:
    inner = CountingModel()
    assert cached(inner, cache)("q") == "reply 1 to q #0"
    fresh = cached(inner, cache, refresh=True)("q")
    assert fresh == "reply 2 to q #0" and fresh.cached is False and inner.calls == 2
    replay = cached(inner, cache)("q")
    assert replay == "reply 2 to q #0" and replay.cached and inner.calls == 2


def test_failures_are_not_stored(cache: ResponseCache) -> None:
    def broken(prompt: str) -> str:
        raise TimeoutError("upstream")

    with pytest.raises(ModelCallError):
        cached(broken, cache, spec="py:t:broken")("q")
    assert len(cache) == 0


def test_plain_functions_get_a_spec(cache: ResponseCache) -> None:
    calls = []

    def judge(prompt: str) -> str:
        calls.append(prompt)
        return "PASS"

    model = cached(judge, cache)
    model("q")
    model("q")
    assert model.spec == f"py:{__name__}:test_plain_functions_get_a_spec.<locals>.judge"
    assert calls == ["q"]
    assert cached(as_model(judge, spec="py:x:y"), cache).spec == "py:x:y"


def test_replies_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "cache.sqlite3"  # parents are created
    with ResponseCache(path) as first:
        first.put("openai:m", "p", "kept")
    with ResponseCache(path) as second:
        assert second.get("openai:m", "p") == "kept"


def test_the_prompt_is_stored_only_as_a_hash(tmp_path: Path) -> None:
    prompt = "the customer's address is 12 Long Road"
    with ResponseCache(tmp_path / "c.sqlite3") as store:
        store.put("openai:m", prompt, "PASS")
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("c.sqlite3*"))  # with -wal, -shm
    assert b"12 Long Road" not in raw and b"PASS" in raw


def test_default_path_is_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with ResponseCache() as store:
        store.put("s", "p", "r")
    assert os.path.join(".tinyeval", "cache.sqlite3") == DEFAULT_PATH
    assert (tmp_path / ".tinyeval" / "cache.sqlite3").is_file()


def _stored_once(path: Path) -> None:
    with ResponseCache(path) as store:
        store.put("s", "p", "r")


def test_write_ahead_log_and_schema_version(tmp_path: Path) -> None:
    _stored_once(tmp_path / "c.sqlite3")
    with sqlite3.connect(tmp_path / "c.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    _stored_once(tmp_path / "c.sqlite3")
    with sqlite3.connect(tmp_path / "c.sqlite3") as db:
        db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(CacheError, match="newer tinyeval"):
        ResponseCache(tmp_path / "c.sqlite3")


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    path.write_text("hello " * 200)
    with pytest.raises(CacheError, match="is not a tinyeval cache"):
        ResponseCache(path)


def test_the_file_and_its_folder_are_made_on_the_first_store(tmp_path: Path) -> None:
    path = tmp_path / ".tinyeval" / "cache.sqlite3"
    with ResponseCache(path) as store:
        assert store.get("s", "p") is None and len(store) == 0
        assert not path.parent.exists()  # opened and read: nothing made
        store.put("s", "p", "r")
        assert path.is_file()
    with ResponseCache(path) as again:
        assert again.get("s", "p") == "r" and len(again) == 1


def test_a_closed_cache_says_so(tmp_path: Path) -> None:
    store = ResponseCache(tmp_path / "c.sqlite3")
    store.close()
    store.close()  # twice is fine
    with pytest.raises(CacheError, match="closed"):
        store.get("s", "p")


def test_threads_hammering_one_cache(cache: ResponseCache) -> None:
    inner = CountingModel()
    model = cached(inner, cache)
    failures: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for i in range(100):
                # half the prompts are shared between threads, half are the thread's own
                prompt = f"shared {i}" if i % 2 else f"thread {thread} prompt {i}"
                assert model(prompt).startswith("reply ")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    # 8 threads x 50 own prompts + 50 shared prompts
    assert len(cache) == 8 * 50 + 50
    hits, misses, stores = cache.stats()
    assert hits + misses == 8 * 100 and stores == misses == inner.calls


def test_two_processes_writing_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    script = textwrap.dedent(
        """
        import sys
        from tinyeval.cache import ResponseCache
        from tinyeval.models import Reply
        name, path = sys.argv[1], sys.argv[2]
        with ResponseCache(path) as store:
            for i in range(300):
                store.put("openai:m", f"{name} {i}", Reply(f"{name} reply {i}"))
                store.put("openai:m", f"common {i}", Reply("same"))
                assert store.get("openai:m", f"{name} {i}") == f"{name} reply {i}"
        """
    )
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, name, str(path)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for worker in workers:
        _, stderr = worker.communicate(timeout=60)
        assert worker.returncode == 0, stderr
    with ResponseCache(path) as store:
        assert len(store) == 300 + 300 + 300  # a's, b's, and the common ones once
        assert store.get("openai:m", "b 299") == "b reply 299"


def test_identical_calls_in_flight_at_once_are_sent_once(cache: ResponseCache) -> None:
    started = threading.Event()
    release = threading.Event()
    calls: list[str] = []

    def slow(prompt: str) -> str:
        calls.append(prompt)
        started.set()
        release.wait(10)
        return "PASS"

    model = cached(slow, cache)
    replies: list[str] = []
    threads = [threading.Thread(target=lambda: replies.append(model("same"))) for _ in range(6)]
    threads[0].start()
    assert started.wait(10)  # the first call is in flight; the others arrive while it is
    for t in threads[1:]:
        t.start()
    release.set()
    for t in threads:
        t.join(10)
    assert calls == ["same"] and replies == ["PASS"] * 6


def test_a_refused_run_leaves_no_cache_and_a_judged_run_reads_its_own(tmp_path: Path) -> None:
    (tmp_path / "counted.py").write_text(
        textwrap.dedent(
            """
            def judge(prompt):
                with open("calls.txt", "a", encoding="utf-8") as calls:
                    calls.write("call\\n")
                return "PASS\\nStated."
            """
        ),
        encoding="utf-8",
    )

    def run(cases: str) -> subprocess.CompletedProcess[str]:
        judged = ["--criterion", "Is polite.", "--judge-model", "py:counted:judge", "-q"]
        return subprocess.run(
            [sys.executable, "-m", "tinyeval", "run", cases, *judged],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    (tmp_path / "bad.jsonl").write_text('{"id": 1\n', encoding="utf-8")
    refused = run("bad.jsonl")
    assert refused.returncode == 2 and "bad.jsonl:1" in refused.stderr
    assert not (tmp_path / ".tinyeval").exists()
    lines = [f'{{"id": "c{i}", "input": "Hours?", "output": "{9 + i} to 5."}}' for i in range(3)]
    (tmp_path / "good.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = run("good.jsonl")
    assert first.returncode == 0, first.stderr
    assert (tmp_path / DEFAULT_PATH).is_file()
    assert (tmp_path / "calls.txt").read_text(encoding="utf-8").count("call") == 3
    again = run("good.jsonl")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "calls.txt").read_text(encoding="utf-8").count("call") == 3  # all cached
