"""The HTTP transport under the model adapters: one POST with a deadline and a body cap,
failures described for a person, retry timing, keys scrubbed from every message."""

from __future__ import annotations

import base64
import contextlib
import functools
import html
import json
import math
import os
import random
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .errors import TinyevalError, shorten

if TYPE_CHECKING:  # the HTTP modules are imported on the first call that needs them
    import urllib.request

_SECRET_NAME_ENDINGS = ("KEY", "TOKEN", "SECRET", "PASSWORD")  # environment names scrub() hides
_MIN_SECRET_LENGTH = 8
RETRY_AFTER_CAP = 60.0  # seconds: never wait longer than this for one Retry-After
MAX_RESPONSE_BYTES = 8 * 2**20  # the largest reply body read from a server (8 MiB)
_READ_CHUNK = 64 * 1024
_ERROR_BODY_BYTES = 64 * 1024  # what is read of an error reply: enough for its message
BACKOFF_BASE = 1.0  # seconds: the first backoff window
BACKOFF_CAP = 30.0  # seconds: the largest backoff window
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})  # plus every 5xx
_QUOTA_CODES = frozenset({"insufficient_quota", "enforced_spend_limit_reached"})


@dataclass(frozen=True)
class _Failure:
    problem: str
    retryable: bool
    retry_after: float | None = None


def parse_retry_after(
    value: str | None, *, now: datetime | None = None, cap: float = RETRY_AFTER_CAP
) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date), at most ``cap``."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        import email.utils

        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return None if math.isnan(seconds) else min(max(seconds, 0.0), cap)


def _backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**(attempt-1))], or the server's wish."""
    if retry_after is not None:
        return retry_after
    return random.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1)))


def _origin(url: str) -> tuple[str, str, int]:
    parts = urllib.parse.urlsplit(url)
    port = None
    with contextlib.suppress(ValueError):  # a port that is not a number from 0 to 65535
        port = parts.port
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname or "", default if port is None else port


def _host_port(url: str) -> str:
    _, host, port = _origin(url)
    return f"[{host}]:{port}" if ":" in host else f"{host or '?'}:{port}"  # (IPv6 in brackets)


def _public_url(url: str) -> str:
    """The URL without user info, query or fragment (those may hold credentials)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{_host_port(url)}{parts.path}"


def _error_of(body: bytes) -> Any:
    """The ``error`` member of a JSON error body (the body itself when it has none), or None."""
    try:
        payload = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return payload.get("error", payload) if isinstance(payload, dict) else None


def _quota_exhausted(body: bytes) -> bool:
    """A 429 that no amount of waiting fixes (quota or monthly spend limit reached)."""
    error = _error_of(body)
    if not isinstance(error, dict):
        return False
    details = error["details"] if isinstance(error.get("details"), dict) else {}
    return bool({error.get("code"), error.get("type"), details.get("error_code")} & _QUOTA_CODES)


def _server_message(body: bytes, secrets: Iterable[str] = ()) -> str:
    """The server's own explanation in an error body, scrubbed before it is shortened."""
    message = " ".join(body.decode("utf-8", errors="replace").split())
    error = _error_of(body)
    if isinstance(error, dict):
        texts = [error.get(key) for key in ("message", "detail", "type", "code")]
        error = next((text for text in texts if isinstance(text, str) and text.strip()), None)
    if isinstance(error, str) and error.strip():
        message = error.strip()
    return shorten(scrub(message, secrets), 200)


class _TooLarge(TinyevalError):
    """A reply body past ``max_response_bytes``."""


def _read_capped(
    read: Callable[[int], bytes], limit: int, stop: Callable[[], bool] = bool
) -> bytes:
    """All ``read`` gives; _TooLarge past ``limit`` bytes, TimeoutError once ``stop()``."""
    data = bytearray()
    while not stop() and (chunk := read(_READ_CHUNK)):
        data += chunk
        if len(data) > limit:
            raise _TooLarge
    if stop():
        raise TimeoutError
    return bytes(data)


def _read_body(response: Any, limit: int, watchdog: _Watchdog) -> bytes:
    """A reply body, read a chunk at a time; refused past ``limit`` bytes or the deadline."""
    length = response.headers.get("Content-Length")
    declared = int(length) if length is not None and length.strip().isdigit() else None
    if declared is not None and declared > limit:
        raise _TooLarge
    body = _read_capped(response.read, limit, lambda: watchdog.fired)
    if declared is not None and len(body) < declared:  # read(n) returns short, never raises
        import http.client

        raise http.client.IncompleteRead(body, declared - len(body))
    return body


class _Watchdog(contextlib.AbstractContextManager["_Watchdog"]):
    """Bounds one whole HTTP attempt: at the deadline it shuts the connection's socket (a socket
    timeout bounds each read, not their sum: a byte now and then would hold a call for ever)."""

    def __init__(self, timeout: float) -> None:
        self.fired = False
        self._sockets: list[Any] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(timeout, self.watch, kwargs={"fire": True})
        self._timer.daemon = True

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: Any = None, *, fire: bool = False) -> None:
        """Watch ``sock`` too; past the deadline (``fire``: reached), shut every socket watched."""
        import socket

        with self._lock:
            self.fired = self.fired or fire
            self._sockets += [] if sock is None else [sock]
            shut = list(self._sockets) if self.fired else []
        for each in shut:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)

    def opener(self) -> urllib.request.OpenerDirector:
        import http.client
        import urllib.request

        watch = self.watch
        self._timer.start()

        def watched(base: type[http.client.HTTPConnection]) -> Any:
            class Watched(base):  # type: ignore[valid-type, misc]
                def connect(self) -> None:
                    super().connect()
                    watch(self.sock)

            return Watched

        class Handler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
            def http_open(self, req: Any) -> Any:
                return self.do_open(watched(http.client.HTTPConnection), req)

            def https_open(self, req: Any) -> Any:
                context = self._context  # type: ignore[attr-defined]
                return self.do_open(watched(http.client.HTTPSConnection), req, context=context)

        return urllib.request.build_opener(Handler())


_SEEN: list[tuple[Any, list[str]]] = [((), [])]  # the environment's raw entries, their secrets


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values (8 characters or more) of environment variables named like ``*KEY``, ``*TOKEN``…."""
    if environ is None:  # every reply is scrubbed: the environment is read again once changed
        raw = getattr(os.environ, "_data", None)  # its raw entries, compared without decoding
        seen, snapshot = _SEEN[0], tuple(raw.items()) if isinstance(raw, dict) else object()
        if snapshot != seen[0]:
            seen = _SEEN[0] = (snapshot, secret_values(os.environ))
        return list(seen[1])
    values = {
        form
        for name, value in environ.items()
        if name.upper().endswith(_SECRET_NAME_ENDINGS)
        for form in (value, value.strip())  # a key read from a file often ends in a newline
        if len(form) >= _MIN_SECRET_LENGTH
    }
    return sorted(values, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove every secret (those given and the environment's) from ``text``, in every form it
    takes in a message: raw, stripped, escaped (repr, JSON, percent, HTML), base64 and hex.

    >>> scrub("Invalid header value b'Bearer sk-test-SECRET123\\\\n'", ["sk-test-SECRET123\\n"])
    "Invalid header value b'Bearer ***'"
    """
    for form in _forms(frozenset({s for s in secrets if s} | set(secret_values()))):
        if form in text:
            text = text.replace(form, "***")
    return text


@functools.lru_cache(maxsize=32)
def _forms(secrets: frozenset[str]) -> tuple[str, ...]:
    """Every form of these secrets, longest first (so no key is left half removed)."""
    forms: set[str] = set()
    for value in {form for secret in secrets for form in (secret, secret.strip())} - {""}:
        escaped = html.escape(value)
        forms.update(
            {
                value,
                repr(value)[1:-1],
                json.dumps(value)[1:-1],
                json.dumps(value, ensure_ascii=False)[1:-1],
                urllib.parse.quote(value, safe=""),
                urllib.parse.quote_plus(value, safe=""),
                urllib.parse.quote(value),
                escaped,
                escaped.replace("&#x27;", "&#39;"),
                html.escape(value, quote=False),
            }
        )
        with contextlib.suppress(UnicodeEncodeError):
            data = value.encode("utf-8")
            forms.update({repr(data)[2:-1], data.hex(), data.hex().upper()})
            for encoded in (base64.b64encode(data), base64.urlsafe_b64encode(data)):
                forms.update({encoded.decode(), encoded.decode().rstrip("=")})
    return tuple(sorted(forms, key=len, reverse=True))
