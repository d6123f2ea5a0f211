"""An on-disk SQLite store of model replies, so a re-run never pays for the same call twice;
shared by threads and processes (WAL). A file holding what tinyeval did not create is refused."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import sqlite3
import stat
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TypedDict, Unpack

from .errors import InputError
from .models import Model, Reply, as_model

DEFAULT_PATH = os.path.join(".tinyeval", "cache.sqlite3")
SCHEMA_VERSION = 1
BUSY_TIMEOUT_SECONDS = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS replies (
    spec TEXT NOT NULL, prompt_sha256 TEXT NOT NULL, sample INTEGER NOT NULL,
    temperature TEXT NOT NULL, extra TEXT NOT NULL,
    text TEXT NOT NULL, input_tokens INTEGER, output_tokens INTEGER, model TEXT, latency_ms REAL,
    created_at TEXT NOT NULL, PRIMARY KEY (spec, prompt_sha256, sample, temperature, extra)
) WITHOUT ROWID;
"""
# the tables as SQLite keeps their text, and the other objects tinyeval makes in the file
_OURS = {
    ("table", statement.split("(")[0].split()[-1]): " ".join(statement.split())
    for statement in _SCHEMA.replace(" IF NOT EXISTS", "").split(";")
    if statement.strip()
}
_BATCHES = {("table", "batches"), ("table", "batch_requests"), ("index", "batch_requests_by_batch")}
_KEY = "spec = ? AND prompt_sha256 = ? AND sample = ? AND temperature = ? AND extra = ?"
_SELECT = f"SELECT text, input_tokens, output_tokens, model, latency_ms FROM replies WHERE {_KEY}"
_INSERT = f"INSERT OR REPLACE INTO replies VALUES ({', '.join('?' * 11)})"


def _execute_all(connection: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):  # not executescript(), which would COMMIT first
        if statement.strip():
            connection.execute(statement)


class CacheError(InputError):
    """A cache file that cannot be used: not SQLite, not ours, or from a newer version."""


class CacheStats(NamedTuple):
    """Look-ups served (``hits``), look-ups that found nothing (``misses``), replies stored."""

    hits: int
    misses: int
    stores: int


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Where(TypedDict, total=False):
    """The parts of a cache key besides the spec and the prompt (defaults 0, 0.0, None)."""

    sample: int
    temperature: float | None
    extra: Any


def _key(spec: str, prompt: str, where: _Where) -> tuple[str, str, int, str, str]:
    extra, temperature = where.get("extra"), where.get("temperature", 0.0)
    canonical = json.dumps(extra, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    temperature_key = "default" if temperature is None else repr(float(temperature))
    extra_key = "" if extra is None else _sha256(canonical)
    return (spec, _sha256(prompt), where.get("sample", 0), temperature_key, extra_key)


def reply_key(spec: str, prompt: str, **where: Unpack[_Where]) -> str:
    """One SHA-256 hex digest of the whole cache key (a stable id for a request).

    >>> reply_key("openai:m", "Say PASS") == reply_key("openai:m", "Say PASS", sample=1)
    False
    """
    return _sha256(json.dumps(_key(spec, prompt, where), separators=(",", ":"), ensure_ascii=False))


class ResponseCache(contextlib.AbstractContextManager["ResponseCache"]):
    """A SQLite store of model replies; its file (and folder) is made on the first store.

    >>> with ResponseCache(":memory:") as cache:
    ...     cache.put("openai:m", "Say PASS", Reply("PASS", usage={"input_tokens": 9,
    ...                                                           "output_tokens": 1}))
    ...     print(repr(cache.get("openai:m", "Say PASS")), cache.get("openai:m", "x"))
    Reply('PASS', usage={'input_tokens': 9, 'output_tokens': 1}, model=None, cached=True) None
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_PATH) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._hits = self._misses = self._stores = 0
        self.warning: str | None = None  # the first failed look-up or store, said once
        self._connection: sqlite3.Connection | None = None
        self._closed = False
        if str(path) == ":memory:" or _refuse_special_file(self.path):  # a file there: read now
            self._open()

    def _open(self) -> sqlite3.Connection:
        connection = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # (":memory:" is in ".")
            connection = sqlite3.connect(
                str(self.path),
                timeout=BUSY_TIMEOUT_SECONDS,
                isolation_level=None,  # autocommit: each statement is its own transaction
                check_same_thread=False,  # shared by threads, always behind self._lock
            )
            self._prepare(connection)
        except (sqlite3.DatabaseError, CacheError) as exc:
            if connection is not None:
                connection.close()
            problem = exc if isinstance(exc, CacheError) else CacheError(self._open_problem(exc))
            raise problem from None
        self._connection = connection
        return connection

    def _open_problem(self, exc: sqlite3.DatabaseError) -> str:
        try:
            with open(self.path, "rb") as file:
                header = file.read(100)
            size = self.path.stat().st_size
        except OSError:
            header, size = b"", 0
        magic = b"SQLite format 3\x00"
        ours = header.startswith(magic) or (size < len(magic) and magic.startswith(header))
        if ours and ("not a database" in str(exc) or "malformed" in str(exc)):
            expected = 100
            if len(header) == 100:
                page_size = int.from_bytes(header[16:18], "big")
                pages = int.from_bytes(header[28:32], "big")
                expected = (65536 if page_size == 1 else page_size) * pages
            if size < expected or size % 512:
                return (
                    f"{self.path} is a cut-short file ({size:,} bytes; an earlier write failed?)"
                    f": {exc}; delete it and the cache starts again empty"
                )
            return f"{self.path} is a damaged cache: {exc}; delete it to start again empty"
        if "not a database" in str(exc):
            return f"{self.path} is not a tinyeval cache: {exc}"
        return f"cannot use the cache {self.path}: {exc}"

    def _failed(self, doing: str, exc: Exception) -> None:
        with self._lock:
            if self.warning is None:
                self.warning = (
                    f"the cache {self.path} could not {doing} ({exc}); replies are used all the"
                    " same but not stored"
                )

    def _refuse_foreign(self, connection: sqlite3.Connection) -> None:
        found = connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        for kind, name, sql in found:
            ours = _OURS.get((kind, name))
            if ours == " ".join(str(sql).split()) or (kind, name) in _BATCHES:
                continue
            if not name.startswith("sqlite_"):  # SQLite's own (reserved to it)
                what = "a different" if ours else "a"
                raise CacheError(
                    f"{self.path} is not a tinyeval cache: it holds {what} {kind} {name!r}"
                    " that tinyeval did not create; use another cache file"
                )

    def _prepare(self, connection: sqlite3.Connection) -> None:
        connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        self._refuse_foreign(connection)  # before anything is read or written
        # Switching a new file to WAL can answer "database is locked" at once, without
        # waiting, when another process is doing the same: try again for a while.
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        while True:
            try:
                connection.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01 + random.random() * 0.04)
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("BEGIN IMMEDIATE")
        try:
            _execute_all(connection, _SCHEMA)
            version = connection.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
            if version is None:
                connection.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            elif version > SCHEMA_VERSION:
                raise CacheError(
                    f"{self.path} was written by a newer tinyeval (cache schema {version}); "
                    f"this version reads schema {SCHEMA_VERSION}"
                )
            self._refuse_foreign(connection)  # also what another process made meanwhile
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # the first error is the one to tell
                connection.execute("ROLLBACK")
            raise

    def _db(self) -> sqlite3.Connection:
        if self._closed:
            raise CacheError(f"the cache {self.path} is closed")
        return self._connection or self._open()

    def _readable(self) -> bool:  # False: no file yet, and a look-up must not make one
        return self._connection is not None or self._closed or _refuse_special_file(self.path)

    def get(
        self, spec: str, prompt: str, *, count: bool = True, **where: Unpack[_Where]
    ) -> Reply | None:
        """The stored reply (``cached=True``), or None; ``count=False`` leaves it out of stats."""
        key = _key(spec, prompt, where)
        with self._lock:
            row = self._db().execute(_SELECT, key).fetchone() if self._readable() else None
            self._misses += count and row is None
            self._hits += count and row is not None
        if row is None:
            return None
        text, inputs, outputs, model, latency = row  # unknown counts leave the usage unknown
        usage = {"input_tokens": inputs, "output_tokens": outputs}
        return Reply(text, usage=usage, model=model, cached=True, latency_ms=latency)

    def put(self, spec: str, prompt: str, reply: str, **where: Unpack[_Where]) -> None:
        """Store ``reply`` (its usage, reported model and latency too) under this key."""
        usage = getattr(reply, "usage", None) or {}
        row = (
            *_key(spec, prompt, where),
            str(reply),
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            getattr(reply, "model", None),
            getattr(reply, "latency_ms", None),
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with self._lock:
            self._db().execute(_INSERT, row)
            self._stores += 1

    def _add_hits(self, hits: int) -> None:
        with self._lock:
            self._hits += hits

    def stats(self) -> CacheStats:
        """Hits, misses and stores counted by this object since it was opened."""
        with self._lock:
            return CacheStats(self._hits, self._misses, self._stores)

    def __len__(self) -> int:
        with self._lock:
            count = self._readable() and self._db().execute("SELECT COUNT(*) FROM replies")
            return int(count.fetchone()[0]) if count else 0

    def close(self) -> None:
        """Close the file; further use raises :class:`CacheError`. Safe to call twice."""
        with self._lock:
            self._closed = True
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"


class CachedModel(Model):
    """A model whose replies go through a :class:`ResponseCache` (see :func:`cached`)."""

    def __init__(self, inner: Model, cache: ResponseCache, *, refresh: bool = False) -> None:
        super().__init__(inner.spec, temperature=inner.temperature, settings=inner.settings)
        self.inner, self.cache, self.refresh = inner, cache, refresh
        self.supports_json_schema = inner.supports_json_schema
        # identical calls in flight at once are sent once: the others wait for that reply
        self._in_flight: dict[str, threading.Event] = {}
        self._in_flight_lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        # another process (a distributed executor) opens the same cache file itself
        return (_reopened, (self.inner, str(self.cache.path), self.refresh))

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        where = self._where(sample, json_schema)
        flight, mine = reply_key(self.spec, prompt, **where), threading.Event()
        with self._in_flight_lock:
            waiting = self._in_flight.setdefault(flight, mine)
        if waiting is not mine:  # the same call is being made: its reply will be in the cache
            waiting.wait()
        try:
            if not self.refresh:
                try:
                    stored = self.cache.get(self.spec, prompt, **where)
                except (sqlite3.Error, OSError, CacheError) as exc:  # unreadable: a miss, said once
                    self.cache._failed("be read", exc)
                    stored = None
                if stored is not None:
                    return stored
            reply = self.inner(prompt, sample=sample, json_schema=json_schema)
            try:
                self.cache.put(self.spec, prompt, reply, **where)
            except (sqlite3.Error, OSError, CacheError) as exc:  # a paid reply is never lost
                self.cache._failed("store a reply", exc)
            return reply
        finally:
            if waiting is mine:
                with self._in_flight_lock:
                    self._in_flight.pop(flight).set()

    def _where(self, sample: int, json_schema: Mapping[str, Any] | None) -> dict[str, Any]:
        extra = None
        if self.settings or json_schema is not None:
            extra = {"settings": self.settings, "json_schema": json_schema}
        return {"sample": sample, "temperature": self.temperature, "extra": extra}


_OPENED: dict[str, ResponseCache] = {}  # per process: each cache file opened once
_OPENED_LOCK = threading.Lock()


def _refuse_special_file(path: Path) -> bool:
    # whether a file is there: a regular file (a FIFO would hang, a directory cannot hold one)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise CacheError(f"cannot use the cache {path}: {exc.strerror or exc}{where}") from None
    if not stat.S_ISREG(mode):
        kinds = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a FIFO", stat.S_ISCHR: "a device"}
        kind = next((name for test, name in kinds.items() if test(mode)), "not a regular file")
        raise CacheError(f"the cache {path} is {kind}; give the path of a file")
    return True


def _reopened(inner: Model, path: str, refresh: bool) -> CachedModel:
    with _OPENED_LOCK:
        store = _OPENED.get(path)
        if store is None:
            store = _OPENED[path] = ResponseCache(path)
    return CachedModel(inner, store, refresh=refresh)


def cached(
    model: Any, cache: ResponseCache, *, refresh: bool = False, spec: str | None = None
) -> CachedModel:
    """Wrap ``model`` (a function named by ``spec``) so replies are read from and written to
    ``cache``; ``refresh=True`` stores without reading. Failed calls are never stored.

    >>> calls = []
    >>> with ResponseCache(":memory:") as cache:
    ...     model = cached(lambda prompt: calls.append(prompt) or "PASS", cache, spec="py:t:j")
    ...     first, again = model("Is 2+2=4?"), model("Is 2+2=4?")
    >>> (first.cached, again.cached, len(calls))
    (False, True, 1)
    """
    return CachedModel(as_model(model, spec=spec), cache, refresh=refresh)
