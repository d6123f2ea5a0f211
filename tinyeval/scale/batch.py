"""Provider batch APIs: many model calls sent as one asynchronous job, at about half the price.

A :class:`BatchJob` takes an ``openai:MODEL`` or ``anthropic:MODEL`` spec (resolved as
:func:`tinyeval.models.resolve` does) and requests (:class:`BatchRequest`); :meth:`BatchJob.run`
submits the provider's batch with the body the ordinary adapter sends, polls it with
jittered backoff, and returns a :class:`BatchOutcome`: one :class:`BatchResult` per request,
a :class:`~tinyeval.models.Reply` or an error (keys removed). It follows the providers'
references: OpenAI's Files and Batch APIs (``POST /files``, ``POST /batches``, output and
error files of request output objects) and Anthropic's Message Batches
(``POST /v1/messages/batches``, ``results_url`` JSONL).

**Resume.** Custom ids are digests of the response cache key, so the same request always
gets the same id. The batch and the state of each request are kept in the response cache's
file (:func:`record_batch`) as soon as the provider accepts it; a new job on the same cache
polls a pending batch instead of submitting again. Succeeded replies go into the ordinary
cache, so ``cached(resolve(spec), cache)`` replays them with no call.

**Failures and bounds.** A request that fails inside a batch is a per-request error, or with
``on_failure="retry"`` an ordinary call. Transport failures raise :class:`BatchError`. Every
reply read has a size bound; a results URL on another host is refused (the key never goes
elsewhere); polling stops after ``max_wait`` seconds, the rest ``pending``.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import http.client
import json
import random
import re
import sqlite3
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from .._formats import _DECODER  # a key given twice in a reply is refused, never read last-wins

# Batches share the adapters' private HTTP machinery: a batch request's body is the adapter's
# own, and its failures are described the same way.
from .._http import (
    MAX_RESPONSE_BYTES,
    _backoff_delay,
    _Failure,
    _host_port,
    _origin,
    _read_body,
    _server_message,
    _TooLarge,
    _Watchdog,
)
from ..cache import CachedModel, ResponseCache, _execute_all, reply_key
from ..errors import IncompleteError, plural, shorten
from ..models import (
    Model,
    ModelCallError,
    ModelConfigError,
    Reply,
    _AnthropicModel,
    _OpenAIModel,
    _scrub_reply,
    resolve,
    scrub,
)

__all__ = [
    "BATCH_STATES",
    "BatchDeferred",
    "BatchEntry",
    "BatchError",
    "BatchJob",
    "BatchModel",
    "BatchOutcome",
    "BatchRequest",
    "BatchResult",
    "BatchStatus",
    "batch_entries",
    "pending_batches",
    "record_batch",
    "update_batch",
]

BATCH_STATES = ("succeeded", "errored", "expired", "canceled", "pending")
OPENAI_ENDPOINT = "/v1/chat/completions"
OPENAI_MAX_REQUESTS = 50_000  # per batch file
OPENAI_MAX_BYTES = 200 * 2**20
ANTHROPIC_MAX_REQUESTS = 100_000  # per Message Batch
ANTHROPIC_MAX_BYTES = 256 * 2**20
MAX_ERROR_BYTES = 64 * 2**10  # the body of an HTTP error
DEFAULT_MAX_RESULT_BYTES = 512 * 2**20  # one results file
_OPENAI_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
_ANTHROPIC_TERMINAL = frozenset({"ended"})
# HTTP status of each error type the Anthropic API documents (results carry only the type)
_ANTHROPIC_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

Sleep = Callable[[float], None]
Clock = Callable[[], float]
_BatchableModel = _OpenAIModel | _AnthropicModel
# a create that failed with one of these was surely not carried out: safe to send again
_CREATE_RETRY_STATUSES = frozenset({408, 425, 429, 502, 503, 529})


# Where each request of a provider batch stands, kept in the response cache's file, so a
# process that dies while a batch runs can resume polling it.
_BATCH_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id   TEXT NOT NULL PRIMARY KEY,
    spec       TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_requests (
    custom_id  TEXT NOT NULL PRIMARY KEY,
    batch_id   TEXT NOT NULL,
    state      TEXT NOT NULL,
    detail     TEXT,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batch_requests_by_batch ON batch_requests (batch_id);
"""

_MADE: weakref.WeakSet[ResponseCache] = weakref.WeakSet()  # caches whose file has the tables


@contextlib.contextmanager
def _tables(cache: ResponseCache) -> Iterator[sqlite3.Connection]:
    """The cache file's connection, under the cache's lock, the batch tables made on first use."""
    with cache._lock:
        connection = cache._db()
        if cache not in _MADE:
            _execute_all(connection, _BATCH_SCHEMA)
            _MADE.add(cache)
        yield connection


class BatchEntry(NamedTuple):
    """Where one request of a provider batch stands: its batch, ``state`` and error ``detail``.

    ``state`` is ``pending`` until the batch's results are read, then
    ``succeeded``, ``errored``, ``expired`` or ``canceled``.
    """

    custom_id: str
    batch_id: str
    state: str
    detail: str | None


_NO_ENTRY = BatchEntry("", "", "", None)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def record_batch(cache: ResponseCache, batch_id: str, spec: str, custom_ids: Iterable[str]) -> None:
    """Remember that ``custom_ids`` were submitted as batch ``batch_id`` (all pending).

    A request recorded before under another batch now belongs to this one.

    >>> with ResponseCache(":memory:") as cache:
    ...     record_batch(cache, "batch_1", "openai:m", ["a", "b"])
    ...     batch_entries(cache, ["a", "c"])
    {'a': BatchEntry(custom_id='a', batch_id='batch_1', state='pending', detail=None)}
    """
    now = _now()
    rows = [(custom_id, batch_id, "pending", None, now) for custom_id in custom_ids]
    with _tables(cache) as connection:
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(
                "INSERT OR REPLACE INTO batches (batch_id, spec, status, created_at, "
                "updated_at) VALUES (?, ?, 'submitted', ?, ?)",
                (batch_id, spec, now, now),
            )
            connection.executemany(
                "INSERT OR REPLACE INTO batch_requests (custom_id, batch_id, state, "
                "detail, updated_at) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise


def batch_entries(cache: ResponseCache, custom_ids: Iterable[str]) -> dict[str, BatchEntry]:
    """The recorded entries of those ``custom_ids`` that were ever submitted in a batch."""
    wanted = list(dict.fromkeys(custom_ids))
    found: dict[str, BatchEntry] = {}
    with _tables(cache) as connection:
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = connection.execute(
                "SELECT custom_id, batch_id, state, detail FROM batch_requests "
                f"WHERE custom_id IN ({marks})",
                chunk,
            ).fetchall()
            found.update((row[0], BatchEntry(*row)) for row in rows)
    return found


def update_batch(
    cache: ResponseCache,
    batch_id: str,
    status: str,
    states: Mapping[str, tuple[str, str | None]] | None = None,
) -> None:
    """Store the provider's ``status`` of a batch and the final state of its requests.

    ``states`` maps a custom id to ``(state, detail)``; only requests that
    still belong to ``batch_id`` are changed.

    >>> with ResponseCache(":memory:") as cache:
    ...     record_batch(cache, "batch_1", "openai:m", ["a", "b"])
    ...     update_batch(cache, "batch_1", "completed", {"a": ("errored", "HTTP 500")})
    ...     [entry.state for entry in batch_entries(cache, ["a", "b"]).values()]
    ...     pending_batches(cache)
    ['errored', 'pending']
    ['batch_1']
    """
    now = _now()
    rows = [
        (state, detail, now, custom_id, batch_id)
        for custom_id, (state, detail) in (states or {}).items()
    ]
    with _tables(cache) as connection:
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(
                "UPDATE batches SET status = ?, updated_at = ? WHERE batch_id = ?",
                (status, now, batch_id),
            )
            connection.executemany(
                "UPDATE batch_requests SET state = ?, detail = ?, updated_at = ? "
                "WHERE custom_id = ? AND batch_id = ?",
                rows,
            )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise


def pending_batches(cache: ResponseCache, spec: str | None = None) -> list[str]:
    """Ids of batches (of ``spec``, or all) that still have pending requests, oldest first."""
    query = (
        "SELECT b.batch_id FROM batches b WHERE EXISTS (SELECT 1 FROM batch_requests r "
        "WHERE r.batch_id = b.batch_id AND r.state = 'pending')"
    )
    arguments: tuple[str, ...] = ()
    if spec is not None:
        query += " AND b.spec = ?"
        arguments = (spec,)
    with _tables(cache) as connection:
        rows = connection.execute(query + " ORDER BY b.created_at, b.batch_id", arguments)
        return [row[0] for row in rows.fetchall()]


class BatchError(IncompleteError, RuntimeError):
    """A batch that could not be submitted, polled or read (after the allowed retries): the
    run is incomplete (a later run resumes the batch recorded in the cache).

    The message names the spec, the batch when known and what went wrong; it
    never contains a key.

    >>> str(BatchError("openai:m: batch batch_1: HTTP 404 from api.openai.com:443"))
    'openai:m: batch batch_1: HTTP 404 from api.openai.com:443'
    """


class BatchDeferred(ModelCallError):
    """Raised by a :class:`BatchModel` for a call it recorded for the next batch.

    >>> issubclass(BatchDeferred, ModelCallError)
    True
    """


@dataclass(frozen=True)
class BatchRequest:
    """One call to send in a batch: the prompt, its sample index and an optional JSON schema.

    >>> BatchRequest("Say PASS", sample=1).to_dict()["sample"]
    1
    """

    prompt: str
    sample: int = 0
    json_schema: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, str):
            raise ModelConfigError(
                f"a batch prompt must be a str, got {type(self.prompt).__name__}"
            )
        if isinstance(self.sample, bool) or not isinstance(self.sample, int) or self.sample < 0:
            raise ModelConfigError(f"sample must be an integer >= 0, got {self.sample!r}")

    def to_dict(self) -> dict[str, Any]:
        """``prompt``, ``sample`` and ``json_schema`` as JSON-ready values."""
        schema = dict(self.json_schema) if self.json_schema is not None else None
        return {"prompt": self.prompt, "sample": self.sample, "json_schema": schema}


@dataclass(frozen=True)
class BatchResult:
    """The outcome of one request: a reply, or an error with the provider's status.

    ``state`` is one of :data:`BATCH_STATES`; ``source`` says where the answer
    came from: ``batch``, ``cache`` (stored by an earlier run) or ``direct``
    (retried as an ordinary call). ``status`` is the HTTP status of a failed
    request when the provider reports one.

    >>> result = BatchResult("tinyeval-1", BatchRequest("Say PASS"), "succeeded", "batch",
    ...                      Reply("PASS", usage={"input_tokens": 2, "output_tokens": 1}))
    >>> result.ok, str(result)
    (True, 'tinyeval-1: succeeded (batch): PASS')
    """

    custom_id: str
    request: BatchRequest
    state: str
    source: str
    reply: Reply | None = None
    error: str | None = None
    status: int | None = None

    @property
    def ok(self) -> bool:
        """True when the request has a reply."""
        return self.reply is not None

    def to_dict(self) -> dict[str, Any]:
        """Stable JSON keys: the request's id and sample, state, source, reply and error."""
        reply = self.reply
        return {
            "custom_id": self.custom_id,
            "sample": self.request.sample,
            "state": self.state,
            "source": self.source,
            "text": str(reply) if reply is not None else None,
            "usage": reply.usage if reply is not None else None,
            "model": reply.model if reply is not None else None,
            "error": self.error,
            "status": self.status,
        }

    def __str__(self) -> str:
        if self.reply is not None:
            what = shorten(" ".join(str(self.reply).split()), 60)
        else:
            status = f"HTTP {self.status}: " if self.status is not None else ""
            what = f"{status}{self.error}"
        return f"{self.custom_id}: {self.state} ({self.source}): {what}"


class BatchStatus(NamedTuple):
    """One provider batch seen by a run: its id, the provider's last status, if it was new."""

    batch_id: str
    status: str
    submitted: bool

    def to_dict(self) -> dict[str, Any]:
        """``batch_id``, ``status`` and ``submitted``."""
        return {"batch_id": self.batch_id, "status": self.status, "submitted": self.submitted}


@dataclass(frozen=True)
class BatchOutcome:
    """What :meth:`BatchJob.run` returns: one result per request, in the order given.

    ``batches`` lists the provider batches involved (new or resumed) with
    their last status; ``polls`` counts status requests made by this run.

    >>> outcome = BatchOutcome("openai:m", (), (), polls=0)
    >>> outcome.complete, outcome.counts()["succeeded"], str(outcome)
    (True, 0, 'openai:m: 0 requests; no batch')
    """

    spec: str
    results: tuple[BatchResult, ...]
    batches: tuple[BatchStatus, ...]
    polls: int = 0
    submissions: int = 0
    notes: tuple[str, ...] = ()  # what was wrong with the results files as a whole

    @property
    def complete(self) -> bool:
        """True when no request is still pending in a batch."""
        return all(result.state != "pending" for result in self.results)

    def counts(self) -> dict[str, int]:
        """How many results are in each state (every state of :data:`BATCH_STATES` listed)."""
        counts = dict.fromkeys(BATCH_STATES, 0)
        for result in self.results:
            counts[result.state] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        """Stable JSON keys: spec, counts, batches, polls, submissions and every result."""
        return {
            "spec": self.spec,
            "counts": self.counts(),
            "batches": [batch.to_dict() for batch in self.batches],
            "polls": self.polls,
            "submissions": self.submissions,
            "results": [result.to_dict() for result in self.results],
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        counts = self.counts()
        parts = [f"{n} {state}" for state, n in counts.items() if n]
        sources = {"cache": 0, "direct": 0}
        for result in self.results:
            if result.source in sources:
                sources[result.source] += 1
        head = f"{self.spec}: {plural(len(self.results), 'request')}"
        if parts:
            head += ": " + ", ".join(parts)
        notes = []
        if sources["cache"]:
            notes.append(f"{sources['cache']} from the cache")
        if sources["direct"]:
            notes.append(f"{sources['direct']} retried as ordinary calls")
        if notes:
            head += f" ({', '.join(notes)})"
        if not self.batches:
            return head + "; no batch"
        lines = [head]
        for batch in self.batches:
            how = "submitted by this run" if batch.submitted else "resumed"
            lines.append(f"batch {batch.batch_id}: {batch.status} ({how})")
        lines.append(f"{plural(self.submissions, 'submission')}, {plural(self.polls, 'poll')}")
        return "\n".join(lines + list(self.notes))


class BatchJob:
    """Send requests for one model through its provider's batch API (see the module docstring).

    ``cache`` holds both the replies and the batch bookkeeping. The model
    options (``base_url``, ``timeout``, ``retries``, ``temperature``,
    ``max_tokens``) are those of :func:`~tinyeval.models.resolve`.
    ``on_failure`` is ``"error"`` (failed requests are error results) or
    ``"retry"`` (they are sent again as ordinary calls). Polling waits
    ``poll_interval`` seconds, doubling up to ``max_poll_interval``, each wait
    drawn between half and all of that window; it gives up after ``max_wait``
    seconds by ``clock``. ``sleep`` and ``clock`` are injectable for tests.

    >>> with ResponseCache(":memory:") as cache:
    ...     job = BatchJob("cmd:cat", cache)
    Traceback (most recent call last):
    ...
    tinyeval.models.ModelConfigError: batches need openai:MODEL or anthropic:MODEL, got 'cmd:cat'
    """

    def __init__(
        self,
        spec: str,
        cache: ResponseCache,
        *,
        base_url: str | None = None,
        timeout: float = 60.0,
        retries: int = 4,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        on_failure: str = "error",
        poll_interval: float = 30.0,
        max_poll_interval: float = 600.0,
        max_wait: float = 25 * 3600.0,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        max_response_bytes: int | None = None,
        sleep: Sleep = time.sleep,
        clock: Clock = time.monotonic,
    ) -> None:
        scheme = spec.strip().partition(":")[0] if isinstance(spec, str) else ""
        if scheme not in ("openai", "anthropic"):
            raise ModelConfigError(f"batches need openai:MODEL or anthropic:MODEL, got {spec!r}")
        if on_failure not in ("error", "retry"):
            raise ModelConfigError(f"on_failure must be 'error' or 'retry', got {on_failure!r}")
        for name, value in (
            ("poll_interval", poll_interval),
            ("max_poll_interval", max_poll_interval),
            ("max_wait", max_wait),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ModelConfigError(
                    f"{name} must be a positive number of seconds, got {value!r}"
                )
        model = resolve(
            spec,
            base_url=base_url,
            timeout=timeout,
            retries=retries,
            temperature=temperature,
            max_tokens=max_tokens,
            sleep=sleep,
            max_response_bytes=(
                MAX_RESPONSE_BYTES if max_response_bytes is None else max_response_bytes
            ),
        )
        assert isinstance(model, _OpenAIModel | _AnthropicModel)
        self.model: _BatchableModel = model
        self.spec = model.spec
        self.cache = cache
        self.on_failure = on_failure
        self.poll_interval = float(poll_interval)
        self.max_poll_interval = float(max_poll_interval)
        self.max_wait = float(max_wait)
        self.max_result_bytes = int(max_result_bytes)
        self._sleep = sleep
        self._clock = clock
        self._direct = CachedModel(model, cache)  # ordinary calls, through the cache
        self._provider: _Provider = (
            _OpenAIBatches(self) if isinstance(model, _OpenAIModel) else _AnthropicBatches(self)
        )

    # ---- ids and keys

    def _where(self, request: BatchRequest) -> dict[str, Any]:
        return self._direct._where(request.sample, request.json_schema)

    def custom_id(self, request: BatchRequest) -> str:
        """The stable id of ``request`` for this model (from its cache key; at most 64 chars).

        >>> with ResponseCache(":memory:") as cache:
        ...     job = BatchJob("openai:m", cache, base_url="http://127.0.0.1:9/v1")
        ...     first = job.custom_id(BatchRequest("Say PASS"))
        ...     again = job.custom_id(BatchRequest("Say PASS"))
        ...     other = job.custom_id(BatchRequest("Say PASS", sample=1))
        >>> first == again, first == other, first.startswith("tinyeval-"), len(first)
        (True, False, True, 57)
        """
        digest = reply_key(self.spec, request.prompt, **self._where(request))
        return f"tinyeval-{digest[:48]}"

    def _stored(self, request: BatchRequest) -> Reply | None:
        return self.cache.get(self.spec, request.prompt, **self._where(request))

    def _store(self, request: BatchRequest, reply: Reply) -> None:
        self.cache.put(self.spec, request.prompt, reply, **self._where(request))

    # ---- the public steps

    def submit(self, requests: Iterable[BatchRequest]) -> tuple[BatchStatus, ...]:
        """Submit the requests that are neither cached nor pending; return the batches holding them.

        Requests already pending in a recorded batch are not sent again: that
        batch is listed (``submitted=False``) instead. Nothing to send, no call:

        >>> with ResponseCache(":memory:") as cache:
        ...     BatchJob("openai:m", cache, base_url="http://127.0.0.1:9/v1").submit([])
        ()
        """
        wanted, _ = self._unique(requests)
        return self._submit(wanted)[0]

    def run(self, requests: Iterable[BatchRequest]) -> BatchOutcome:
        """Submit (or resume), wait for the batches to end and return every result.

        Results come in the order of ``requests``. Requests whose reply is in the
        cache are answered from it without a batch:

        >>> with ResponseCache(":memory:") as cache:
        ...     job = BatchJob("openai:m", cache, base_url="http://127.0.0.1:9/v1")
        ...     cache.put("openai:m", "Say PASS", Reply("PASS"),
        ...               extra={"settings": job.model.settings, "json_schema": None})
        ...     print(job.run([BatchRequest("Say PASS")]))
        openai:m: 1 request: 1 succeeded (1 from the cache); no batch
        """
        ordered = list(requests)
        wanted, ids = self._unique(ordered)
        batches, submissions, early = self._submit(wanted)
        statuses, polls = self._wait(batches)
        results: dict[str, BatchResult] = dict(early)
        notes: list[str] = []
        for status in statuses:
            if status.status in self._provider.terminal:
                collected, said = self._collect(status, wanted)
                results.update(collected)
                notes += said
        for custom_id, request in wanted.items():
            if custom_id not in results:
                results[custom_id] = BatchResult(custom_id, request, "pending", "batch")
        if self.on_failure == "retry":
            results = {cid: self._retry(result) for cid, result in results.items()}
        return BatchOutcome(
            self.spec,
            tuple(results[custom_id] for custom_id in ids),
            tuple(statuses),
            polls=polls,
            submissions=submissions,
            notes=tuple(notes),
        )

    # ---- internals

    def _unique(
        self, requests: Iterable[BatchRequest]
    ) -> tuple[dict[str, BatchRequest], list[str]]:
        wanted: dict[str, BatchRequest] = {}
        ids = []
        for request in requests:
            if not isinstance(request, BatchRequest):
                raise ModelConfigError(f"expected a BatchRequest, got {type(request).__name__}")
            custom_id = self.custom_id(request)
            wanted.setdefault(custom_id, request)
            ids.append(custom_id)
        return wanted, ids

    def _submit(
        self, wanted: Mapping[str, BatchRequest]
    ) -> tuple[tuple[BatchStatus, ...], int, dict[str, BatchResult]]:
        """Batches (resumed, then new), how many were submitted, and results from the cache."""
        early: dict[str, BatchResult] = {}
        for custom_id, request in wanted.items():
            stored = self._stored(request)
            if stored is not None:
                early[custom_id] = BatchResult(custom_id, request, "succeeded", "cache", stored)
        entries = batch_entries(self.cache, (cid for cid in wanted if cid not in early))
        resumed = list(
            dict.fromkeys(entry.batch_id for entry in entries.values() if entry.state == "pending")
        )
        fresh = {
            cid: request
            for cid, request in wanted.items()
            if cid not in early and (cid not in entries or entries[cid].state != "pending")
        }
        batches = [BatchStatus(batch_id, "pending", False) for batch_id in resumed]
        submissions = 0
        for chunk in self._provider.chunks(fresh):
            batch_id = self._provider.create(chunk)
            record_batch(self.cache, batch_id, self.spec, list(chunk))
            batches.append(BatchStatus(batch_id, "submitted", True))
            submissions += 1
        return tuple(batches), submissions, early

    def _wait(self, batches: Sequence[BatchStatus]) -> tuple[list[BatchStatus], int]:
        """Poll every batch until it ends or ``max_wait`` passes; the last statuses and polls."""
        statuses = list(batches)
        start = self._clock()
        polls = 0
        attempt = 0
        while True:
            for index, batch in enumerate(statuses):
                if batch.status not in self._provider.terminal:
                    status = self._provider.status(batch.batch_id)
                    polls += 1
                    statuses[index] = batch._replace(status=status)
                    update_batch(self.cache, batch.batch_id, status)
            if all(batch.status in self._provider.terminal for batch in statuses):
                return statuses, polls
            window = min(self.max_poll_interval, self.poll_interval * 2**attempt)
            delay = random.uniform(window / 2.0, window)
            if self._clock() - start + delay > self.max_wait:
                return statuses, polls
            self._sleep(delay)
            attempt += 1

    def _collect(
        self, batch: BatchStatus, wanted: Mapping[str, BatchRequest]
    ) -> tuple[dict[str, BatchResult], list[str]]:
        """Read an ended batch's results: store replies in the cache and the states of all;
        also what was wrong with the results file as a whole (lines naming no request of
        the batch), for the summary."""
        entries = batch_entries(self.cache, wanted)
        mine = {
            cid: request
            for cid, request in wanted.items()
            if cid in entries and entries[cid].batch_id == batch.batch_id
        }
        found: dict[str, list[_Outcome]] = {}
        others: list[str | None] = []
        for custom_id, outcome in self._provider.results(batch.batch_id, batch.status):
            if custom_id is not None and custom_id in mine:
                found.setdefault(custom_id, []).append(outcome)
            else:
                others.append(custom_id)
        results = {cid: self._result(mine[cid], cid, outcomes) for cid, outcomes in found.items()}
        missing_state, missing_error = self._provider.missing(batch.batch_id, batch.status)
        for custom_id, request in mine.items():
            if custom_id not in results:
                results[custom_id] = BatchResult(
                    custom_id, request, missing_state, "batch", None, missing_error
                )
        update_batch(
            self.cache,
            batch.batch_id,
            batch.status,
            {cid: (result.state, result.error) for cid, result in results.items()},
        )
        return results, self._strangers(batch.batch_id, others)

    def _result(
        self, request: BatchRequest, custom_id: str, outcomes: list[_Outcome]
    ) -> BatchResult:
        """The result of one request from its lines: a request answered twice is an error."""
        if len(outcomes) > 1:
            repeated = (
                f"the batch returned {len(outcomes)} results for this request (its custom id "
                "repeated); none is taken"
            )
            return BatchResult(custom_id, request, "errored", "batch", None, repeated)
        state, reply, error, status = outcomes[0]
        if reply is not None:
            reply = _scrub_reply(reply, self.model._secrets())
            self._store(request, reply)
        return BatchResult(custom_id, request, state, "batch", reply, error, status)

    def _strangers(self, batch_id: str, ids: list[str | None]) -> list[str]:
        """A note on results lines with no custom id, or one that is no request of the batch
        (requests of the batch this run does not want are left alone)."""
        named = [cid for cid in ids if cid is not None]
        recorded = batch_entries(self.cache, named)
        unknown = [cid for cid in named if recorded.get(cid, _NO_ENTRY).batch_id != batch_id]
        notes = []
        if len(named) < len(ids):
            lines = plural(len(ids) - len(named), "results line")
            notes.append(f"batch {batch_id}: {lines} with no readable custom id, ignored")
        if unknown:
            shown = ", ".join(shorten(repr(cid), 70) for cid in unknown[:3])
            more = f" and {len(unknown) - 3:,} more" if len(unknown) > 3 else ""
            results = plural(len(unknown), "result")
            notes.append(
                f"batch {batch_id}: {results} for a custom id it was not sent ({shown}{more}), "
                "ignored"
            )
        return notes

    def _retry(self, result: BatchResult) -> BatchResult:
        if result.state not in ("errored", "expired", "canceled"):
            return result
        request = result.request
        try:
            reply = self._direct(
                request.prompt, sample=request.sample, json_schema=request.json_schema
            )
        except ModelCallError as exc:
            return BatchResult(result.custom_id, request, "errored", "direct", None, str(exc))
        return BatchResult(result.custom_id, request, "succeeded", "direct", reply)

    # ---- HTTP

    def _secrets(self) -> list[str]:
        return self.model._secrets()

    def _fail(self, message: str) -> BatchError:
        return BatchError(scrub(f"{self.spec}: {message}", self._secrets()))

    def _http(
        self,
        method: str,
        url: str,
        *,
        data: bytes | None = None,
        content_type: str = "application/json",
        limit: int | None = None,
        accept: str = "application/json",
        creates: bool = False,
        what: str,
    ) -> bytes:
        """One HTTP exchange with the provider, retried as the adapters retry; a bounded body.

        A request that ``creates`` a batch is retried only when it surely was
        not carried out (refused connection, 408, 425, 429, 502, 503, 529): a
        timeout or a 500 may hide a batch that was created, and sending it again
        could create a second one.
        """
        limit = self.model.max_response_bytes if limit is None else limit
        headers = self.model._request_headers()
        if data is None:
            headers.pop("Content-Type", None)
        else:
            headers["Content-Type"] = content_type
        headers["Accept"] = accept
        attempts = self.model.retries + 1
        for attempt in range(1, attempts + 1):
            outcome = self._attempt(method, url, data, headers, limit, creates)
            if not isinstance(outcome, _Failure):
                return outcome
            if not outcome.retryable or attempt == attempts:
                maybe = ""
                if creates and outcome.problem.startswith(("no reply", "HTTP 5")):
                    maybe = "; the batch may have been created all the same: check the provider"
                raise self._fail(
                    f"{what}: {outcome.problem} (after {plural(attempt, 'attempt')}){maybe}"
                )
            self._sleep(_backoff_delay(attempt, outcome.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(
        self,
        method: str,
        url: str,
        data: bytes | None,
        headers: dict[str, str],
        limit: int,
        creates: bool,
    ) -> bytes | _Failure:
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        watchdog = _Watchdog(self.model.timeout)
        try:
            with watchdog, watchdog.opener().open(request, timeout=self.model.timeout) as response:
                return _read_body(response, limit, watchdog)
        except _TooLarge:
            return _Failure(
                f"the reply from {_host_port(url)} is larger than {limit:,} bytes; it was not "
                "read further",
                retryable=False,
            )
        except urllib.error.HTTPError as exc:
            with exc:
                try:
                    error_body = exc.read(MAX_ERROR_BYTES)
                except (OSError, http.client.HTTPException):
                    error_body = b""
            if exc.code == 404:
                message = _server_message(error_body, self._secrets()) or "(no message)"
                return _Failure(
                    f"HTTP 404 from {_host_port(url)}: not found: {message}", retryable=False
                )
            failure = self.model._http_failure(exc.code, exc.headers, error_body)
            if creates and exc.code not in _CREATE_RETRY_STATUSES:
                return dataclasses.replace(failure, retryable=False)
            return failure
        except urllib.error.URLError as exc:
            failure = self.model._network_failure(exc.reason)
            if creates and not isinstance(exc.reason, ConnectionRefusedError):
                return dataclasses.replace(failure, retryable=False)
            return failure
        except (OSError, http.client.HTTPException) as exc:
            failure = self.model._network_failure(TimeoutError() if watchdog.fired else exc)
            if creates and not isinstance(exc, ConnectionRefusedError):
                return dataclasses.replace(failure, retryable=False)
            return failure

    def _json(self, body: bytes, what: str) -> dict[str, Any]:
        try:
            payload = _DECODER.decode(body.decode("utf-8"))
        except RecursionError:
            raise self._fail(f"{what}: the reply is JSON nested too deeply to read") from None
        except (UnicodeDecodeError, ValueError):
            snippet = shorten(scrub(body[:200].decode("utf-8", "replace"), self._secrets()), 80)
            raise self._fail(f"{what}: the reply is not JSON: {snippet!r}") from None
        if not isinstance(payload, dict):
            raise self._fail(f"{what}: expected a JSON object, got {type(payload).__name__}")
        return payload

    def _jsonl(self, body: bytes) -> Iterator[tuple[str | None, dict[str, Any] | str]]:
        """Each results line's custom id with its object, or with why the line cannot be used
        (then the id is the one the line names, when it can be found, else None).

        Lines end at ``\n`` only: a reply may hold U+2028 or U+0085. A line past the reply
        bound (``max_response_bytes``) is a too-long reply, never decoded.
        """
        limit = self.model.max_response_bytes
        for number, raw in enumerate(body.split(b"\n"), 1):
            if not raw.strip():
                continue
            if len(raw) > limit:
                problem = f"its result is larger than {limit:,} bytes (max_response_bytes)"
                yield _named_id(raw), problem
                continue
            try:
                item = _DECODER.decode(raw.decode("utf-8"))
            except RecursionError:
                yield _named_id(raw), f"its result (line {number}) is JSON nested too deeply"
                continue
            except (UnicodeDecodeError, ValueError):
                yield _named_id(raw), f"its result (line {number}) is not JSON"
                continue
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str):
                yield None, f"line {number} of the results has no custom_id"
            else:
                yield custom_id, item

    def _reply(self, payload: Any) -> Reply:
        return self.model._reply(payload)


class BatchModel(Model):
    """A model for running cases around batches: it never calls the provider itself.

    Each call is answered with the reply produced by a batch given to
    :meth:`absorb`, or from the response cache when the reply is stored
    there; it fails with the batch's error when the request failed in such a
    batch; otherwise it is recorded and raises :class:`BatchDeferred`.
    :meth:`take_deferred` hands the recorded requests to :meth:`BatchJob.run`.
    Its spec, temperature and settings are the job's model's, so rows and
    cache keys read the same as with the ordinary adapter. Safe to call from
    several threads.

    >>> cache = ResponseCache(":memory:")
    >>> model = BatchModel(BatchJob("openai:m", cache, base_url="http://127.0.0.1:9/v1"))
    >>> model("Say PASS", sample=1)
    Traceback (most recent call last):
    ...
    tinyeval.scale.batch.BatchDeferred: openai:m: deferred to the next batch
    >>> [(r.prompt, r.sample) for r in model.take_deferred()], model.take_deferred()
    ([('Say PASS', 1)], [])
    >>> cache.close()
    """

    def __init__(self, job: BatchJob) -> None:
        inner = job.model
        super().__init__(inner.spec, temperature=inner.temperature, settings=inner.settings)
        self.supports_json_schema = inner.supports_json_schema
        self.job = job
        self._failed: dict[str, BatchResult] = {}
        self._answers: dict[str, Reply] = {}
        self._deferred: dict[str, BatchRequest] = {}
        self._lock = threading.Lock()

    def absorb(self, outcome: BatchOutcome) -> None:
        """Take the results of ``outcome``: its replies and its failed requests.

        Replies the batch (or a retry) produced are answered as new calls
        (``cached`` False: they were paid for in this run); replies that were
        already in the cache are answered from it (``cached`` True).
        """
        with self._lock:
            for result in outcome.results:
                if result.reply is not None and result.source != "cache":
                    self._answers[result.custom_id] = result.reply
                    self._failed.pop(result.custom_id, None)
                elif result.state in ("errored", "expired", "canceled") and result.reply is None:
                    self._failed[result.custom_id] = result

    def take_deferred(self) -> list[BatchRequest]:
        """The requests recorded since the last call, in the order first asked, once each."""
        with self._lock:
            taken = list(self._deferred.values())
            self._deferred.clear()
        return taken

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        request = BatchRequest(prompt, sample, json_schema)
        custom_id = self.job.custom_id(request)
        with self._lock:
            answer = self._answers.get(custom_id)
        if answer is not None:
            return answer
        stored = self.job._stored(request)
        if stored is not None:
            return stored
        with self._lock:
            failed = self._failed.get(custom_id)
            if failed is None:
                self._deferred.setdefault(custom_id, request)
        if failed is not None:
            status = f"HTTP {failed.status}: " if failed.status is not None else ""
            raise ModelCallError(
                f"{self.spec}: {failed.state} in the batch: {status}{failed.error}"
            )
        raise BatchDeferred(f"{self.spec}: deferred to the next batch")


# (state, reply, error, status) of one request read from a results file
_Outcome = tuple[str, Reply | None, str | None, int | None]
_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"')


def _named_id(raw: bytes) -> str | None:
    """The custom id a results line that cannot be decoded names, if it names one."""
    found = _CUSTOM_ID.search(raw)
    return found.group(1).decode("ascii") if found else None


class _Provider(abc.ABC):
    """What differs between the two providers: file format, endpoints, result shapes."""

    terminal: frozenset[str] = frozenset()
    max_requests = 0
    max_bytes = 0

    def __init__(self, job: BatchJob) -> None:
        self.job = job
        self.model = job.model
        self._last: dict[str, dict[str, Any]] = {}  # each batch's latest status reply

    @abc.abstractmethod
    def line(self, custom_id: str, request: BatchRequest) -> dict[str, Any]:
        """Each provider defines it."""

    def chunks(self, fresh: Mapping[str, BatchRequest]) -> Iterable[dict[str, dict[str, Any]]]:
        """The requests to submit, as batch lines, split to fit the provider's limits."""
        chunk: dict[str, dict[str, Any]] = {}
        size = 0
        for custom_id, request in fresh.items():
            line = self.line(custom_id, request)
            length = len(json.dumps(line, ensure_ascii=False).encode("utf-8")) + 1
            if chunk and (len(chunk) >= self.max_requests or size + length > self.max_bytes):
                yield chunk
                chunk, size = {}, 0
            chunk[custom_id] = line
            size += length
        if chunk:
            yield chunk

    @abc.abstractmethod
    def create(self, lines: Mapping[str, dict[str, Any]]) -> str:
        """Each provider defines it."""

    @abc.abstractmethod
    def status(self, batch_id: str) -> str:
        """Each provider defines it."""

    def _status(self, batch_id: str, url: str, what: str, key: str) -> str:
        """Ask ``url`` how batch ``batch_id`` stands: the reply's ``key``, its reply kept."""
        payload = self.job._json(self.job._http("GET", url, what=what), what)
        status = payload.get(key)
        if not isinstance(status, str):
            raise self.job._fail(f"{what}: the reply has no {key!r}")
        self._last[batch_id] = payload
        return status

    @abc.abstractmethod
    def results(self, batch_id: str, status: str) -> Iterable[tuple[str | None, _Outcome]]:
        """Each provider defines it: ``(custom id, outcome)`` per line (None: no id found)."""

    def _read(
        self, body: bytes, outcome_of: Callable[[dict[str, Any]], _Outcome]
    ) -> Iterator[tuple[str | None, _Outcome]]:
        """The outcome of each line of a results file; a line that cannot be used fails the
        request it names alone."""
        for custom_id, item in self.job._jsonl(body):
            if isinstance(item, str):
                yield custom_id, ("errored", None, item, None)
                continue
            try:
                yield custom_id, outcome_of(item)
            except (RecursionError, TypeError, ValueError, AttributeError, KeyError):
                yield custom_id, ("errored", None, "its result has an unexpected shape", None)

    @abc.abstractmethod
    def missing(self, batch_id: str, status: str) -> tuple[str, str]:
        """State and message of a request absent from an ended batch's results."""

    def _parsed(self, payload: Any) -> _Outcome:
        try:
            return ("succeeded", self.job._reply(payload), None, None)
        except ModelCallError as exc:
            return ("errored", None, str(exc), None)

    def _id(self, payload: Mapping[str, Any], what: str) -> str:
        value = payload.get("id")
        if not isinstance(value, str) or not value:
            raise self.job._fail(f"{what}: the reply has no 'id'")
        return value


class _OpenAIBatches(_Provider):
    terminal = _OPENAI_TERMINAL
    max_requests = OPENAI_MAX_REQUESTS
    max_bytes = OPENAI_MAX_BYTES

    def __init__(self, job: BatchJob) -> None:
        super().__init__(job)
        url = self.model._url
        suffix = "/chat/completions"
        self.base = url[: -len(suffix)] if url.endswith(suffix) else url.rsplit("/", 1)[0]

    def line(self, custom_id: str, request: BatchRequest) -> dict[str, Any]:
        assert isinstance(self.model, _OpenAIModel)
        body = self.model._request_body(request.prompt, request.sample, request.json_schema)
        return {"custom_id": custom_id, "method": "POST", "url": OPENAI_ENDPOINT, "body": body}

    def create(self, lines: Mapping[str, dict[str, Any]]) -> str:
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines.values())
        data, content_type = _multipart(
            {"purpose": "batch"}, "file", "tinyeval-batch.jsonl", text.encode("utf-8")
        )
        what = "uploading the batch file"
        uploaded = self.job._json(
            self.job._http(
                "POST", f"{self.base}/files", data=data, content_type=content_type, what=what
            ),
            what,
        )
        file_id = self._id(uploaded, what)
        what = "creating the batch"
        body = {"input_file_id": file_id, "endpoint": OPENAI_ENDPOINT, "completion_window": "24h"}
        created = self.job._json(
            self.job._http(
                "POST",
                f"{self.base}/batches",
                data=json.dumps(body).encode(),
                creates=True,
                what=what,
            ),
            what,
        )
        return self._id(created, what)

    def status(self, batch_id: str) -> str:
        url = f"{self.base}/batches/{urllib.parse.quote(batch_id, safe='')}"
        return self._status(batch_id, url, f"batch {batch_id}", "status")

    def results(self, batch_id: str, status: str) -> Iterable[tuple[str | None, _Outcome]]:
        payload = self._last.get(batch_id) or {}
        for key in ("output_file_id", "error_file_id"):
            file_id = payload.get(key)
            if not isinstance(file_id, str) or not file_id:
                continue
            what = f"batch {batch_id}: reading {key}"
            url = f"{self.base}/files/{urllib.parse.quote(file_id, safe='')}/content"
            body = self.job._http(
                "GET", url, limit=self.job.max_result_bytes, accept="*/*", what=what
            )
            yield from self._read(body, self._outcome)

    def _outcome(self, item: Mapping[str, Any]) -> _Outcome:
        secrets = self.job._secrets()
        error = item.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            message = _server_message(json.dumps({"error": error}).encode(), secrets)
            if code == "batch_expired":
                return ("expired", None, message, None)
            if code == "batch_cancelled":
                return ("canceled", None, message, None)
            return ("errored", None, message, None)
        response = item.get("response")
        if not isinstance(response, dict):
            return ("errored", None, "the result has neither 'response' nor 'error'", None)
        status = response.get("status_code")
        body = response.get("body")
        if status == 200:
            return self._parsed(body)
        message = _server_message(json.dumps(body).encode(), secrets) or "(no message)"
        return ("errored", None, message, status if isinstance(status, int) else None)

    def _batch_errors(self, payload: Mapping[str, Any]) -> str:
        errors = payload.get("errors")
        data = errors.get("data") if isinstance(errors, dict) else None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            return _server_message(json.dumps({"error": data[0]}).encode(), self.job._secrets())
        return "(no message)"

    def missing(self, batch_id: str, status: str) -> tuple[str, str]:
        if status == "expired":
            return "expired", "the batch expired before this request was processed"
        if status == "cancelled":
            return "canceled", "the batch was cancelled before this request was processed"
        if status == "failed":
            reason = self._batch_errors(self._last.get(batch_id) or {})
            return "errored", f"the provider rejected the batch: {reason}"
        return "errored", "the batch ended without a result for this request"


class _AnthropicBatches(_Provider):
    terminal = _ANTHROPIC_TERMINAL
    max_requests = ANTHROPIC_MAX_REQUESTS
    max_bytes = ANTHROPIC_MAX_BYTES

    def __init__(self, job: BatchJob) -> None:
        super().__init__(job)
        self.base = f"{self.model._url}/batches"  # {base}/v1/messages/batches

    def line(self, custom_id: str, request: BatchRequest) -> dict[str, Any]:
        assert isinstance(self.model, _AnthropicModel)
        params = self.model._request_body(request.prompt, request.sample, request.json_schema)
        return {"custom_id": custom_id, "params": params}

    def create(self, lines: Mapping[str, dict[str, Any]]) -> str:
        what = "creating the message batch"
        body = json.dumps({"requests": list(lines.values())}, ensure_ascii=False).encode("utf-8")
        reply = self.job._http("POST", self.base, data=body, creates=True, what=what)
        created = self.job._json(reply, what)
        return self._id(created, what)

    def status(self, batch_id: str) -> str:
        url = f"{self.base}/{urllib.parse.quote(batch_id, safe='')}"
        return self._status(batch_id, url, f"message batch {batch_id}", "processing_status")

    def results(self, batch_id: str, status: str) -> Iterable[tuple[str | None, _Outcome]]:
        payload = self._last.get(batch_id) or {}
        what = f"message batch {batch_id}: reading the results"
        url = payload.get("results_url")
        if not isinstance(url, str) or not url:
            url = f"{self.base}/{urllib.parse.quote(batch_id, safe='')}/results"
        if _origin(url) != _origin(self.base):
            raise self.job._fail(
                f"{what}: the results URL is on {_host_port(url)}, not on "
                f"{_host_port(self.base)}; refusing to send the key there"
            )
        body = self.job._http("GET", url, limit=self.job.max_result_bytes, accept="*/*", what=what)
        yield from self._read(body, lambda item: self._outcome(item.get("result")))

    def _outcome(self, result: Any) -> _Outcome:
        if not isinstance(result, dict):
            return ("errored", None, "the result has no 'result' object", None)
        kind = result.get("type")
        if kind == "succeeded":
            return self._parsed(result.get("message"))
        if kind in ("expired", "canceled"):
            return (kind, None, f"the request was {kind} before it was processed", None)
        error = result.get("error")
        inner = error.get("error") if isinstance(error, dict) else None
        inner = inner if isinstance(inner, dict) else error
        message = _server_message(json.dumps({"error": inner}).encode(), self.job._secrets())
        status = None
        if isinstance(inner, dict):
            status = _ANTHROPIC_ERROR_STATUS.get(str(inner.get("type")))
        return ("errored", None, message or "(no message)", status)

    def missing(self, batch_id: str, status: str) -> tuple[str, str]:
        return "errored", "the batch ended without a result for this request"


def _multipart(
    fields: Mapping[str, str], file_field: str, filename: str, content: bytes
) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body (RFC 7578) with text fields and one file; its content type.

    >>> body, kind = _multipart({"purpose": "batch"}, "file", "b.jsonl", b'{"a": 1}\\n')
    >>> kind.startswith("multipart/form-data; boundary=")
    True
    >>> b'name="purpose"\\r\\n\\r\\nbatch\\r\\n' in body, body.endswith(b"--\\r\\n")
    (True, True)
    """
    boundary = f"tinyeval-{uuid.uuid4().hex}"
    while boundary.encode() in content:  # pragma: no cover - 128 random bits
        boundary = f"tinyeval-{uuid.uuid4().hex}"
    out: list[bytes] = []
    for name, value in fields.items():
        out.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
            f"{value}\r\n".encode()
        )
    out.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
        f'filename="{filename}"\r\nContent-Type: application/jsonl\r\n\r\n'.encode()
    )
    out.append(content)
    out.append(f"\r\n--{boundary}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"
