"""A cache that cannot be written never costs a paid reply; a cut-short file is named as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyeval.cache import CacheError, ResponseCache, cached


def _fill_the_disk(cache: ResponseCache) -> None:
    # SQLite's own "disk full": no page may be added beyond the ones the file has now
    connection = cache._db()  # the file made now, as a first store would
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")


def test_a_failed_store_returns_the_reply_and_is_reported_once(tmp_path: Path) -> None:
    calls: list[str] = []

    def paid(prompt: str) -> str:
        calls.append(prompt)
        return "PASS " + "x" * 20_000  # larger than a page: storing it needs new pages

    with ResponseCache(tmp_path / "cache.sqlite3") as cache:
        _fill_the_disk(cache)
        model = cached(paid, cache, spec="py:demo:paid")
        replies = [model(f"prompt {n}") for n in range(3)]
        assert [str(r)[:4] for r in replies] == ["PASS"] * 3
        assert len(calls) == 3
        assert cache.warning is not None
        assert "full" in cache.warning and "not a tinyeval cache" not in cache.warning
        first = cache.warning
        model("prompt 3")
        assert cache.warning == first  # said once


def test_an_unbroken_cache_reports_no_failure(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "cache.sqlite3") as cache:
        model = cached(lambda prompt: "PASS", cache, spec="py:demo:ok")
        model("a")
        assert model("a").cached is True
        assert cache.warning is None


def test_an_empty_file_is_a_new_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    path.write_bytes(b"")
    with ResponseCache(path) as cache:
        assert len(cache) == 0


@pytest.mark.parametrize("keep", [10, 60, 1000, 4097])
def test_a_cut_short_cache_file_is_named_as_such(tmp_path: Path, keep: int) -> None:
    path = tmp_path / "cache.sqlite3"
    with ResponseCache(path) as cache:
        cache.put("py:demo", "p", "PASS " * 4000)
    data = path.read_bytes()
    assert len(data) > keep
    path.write_bytes(data[:keep])
    for side in path.parent.glob("cache.sqlite3-*"):
        side.unlink()  # the write-ahead log would otherwise restore the file
    with pytest.raises(CacheError, match="cut-short file") as caught:
        ResponseCache(path)
    assert f"{keep:,} bytes" in str(caught.value)


def test_a_text_file_is_still_not_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    path.write_text("hello " * 200)
    with pytest.raises(CacheError, match="is not a tinyeval cache"):
        ResponseCache(path)
