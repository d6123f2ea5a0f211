"""The HTTP transport under the model adapters: one POST with a deadline and a body cap,
failures described for a person, retry timing, keys scrubbed from every message."""

from __future__ import annotations

import contextlib
import functools
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
    import urllib.error
    import urllib.request

# environment variables whose values are treated as secrets by scrub()
_SECRET_NAME_ENDINGS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
_MIN_SECRET_LENGTH = 8
RETRY_AFTER_CAP = 60.0  # seconds: never wait longer than this for one Retry-After
MAX_RESPONSE_BYTES = 8 * 2**20  # the largest reply body read from a server (8 MiB)
_READ_CHUNK = 64 * 1024  # a reply body is read this much at a time, against the cap and deadline
_ERROR_BODY_BYTES = 64 * 1024  # what is read of an error reply: enough for its message
BACKOFF_BASE = 1.0  # seconds: the first backoff window
BACKOFF_CAP = 30.0  # seconds: the largest backoff window
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})  # plus every 5xx
_QUOTA_CODES = frozenset({"insufficient_quota", "enforced_spend_limit_reached"})


@dataclass(frozen=True)
class _Failure:
    """One failed HTTP attempt, described for a person."""

    problem: str
    retryable: bool
    retry_after: float | None = None


def parse_retry_after(
    value: str | None, *, now: datetime | None = None, cap: float = RETRY_AFTER_CAP
) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date), capped at
    ``cap``; None when the header is absent or unreadable.

    >>> now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:05 GMT", now=now)
    5.0
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
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
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), cap)


def _backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**(attempt-1))], or the server's wish."""
    if retry_after is not None:
        return retry_after
    return random.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1)))


def _origin(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a URL, the port filled in from the scheme when absent."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname or "", port


def _host_port(url: str) -> str:
    """``host:port`` of a URL, without user info, path or query."""
    _, host, port = _origin(url)
    host = host or "?"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _public_url(url: str) -> str:
    """The URL without user info, query or fragment (those may hold credentials)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{_host_port(url)}{parts.path}"


def _quota_exhausted(body: bytes) -> bool:
    """A 429 that no amount of waiting fixes (quota or monthly spend limit reached)."""
    try:
        payload = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        return False
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return False
    details: dict[str, Any] = error["details"] if isinstance(error.get("details"), dict) else {}
    codes = {error.get("code"), error.get("type"), details.get("error_code")}
    return bool(codes & _QUOTA_CODES)


class _TooLarge(TinyevalError):
    """A reply body past ``max_response_bytes``."""


def _read_body(response: Any, limit: int, watchdog: _Watchdog) -> bytes:
    """A reply body, read a chunk at a time; refused past ``limit`` bytes or the deadline."""
    length = response.headers.get("Content-Length")
    declared = int(length) if length is not None and length.strip().isdigit() else None
    if declared is not None and declared > limit:
        raise _TooLarge
    parts: list[bytes] = []
    size = 0
    while chunk := response.read(_READ_CHUNK):
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        parts.append(chunk)
        if watchdog.fired:
            raise TimeoutError
    if watchdog.fired:
        raise TimeoutError
    body = b"".join(parts)
    if declared is not None and len(body) < declared:  # read(n) returns short, never raises
        import http.client

        raise http.client.IncompleteRead(body, declared - len(body))
    return body


class _Watchdog:
    """Bounds one whole HTTP attempt: at the deadline it shuts the connection's socket (a socket
    timeout bounds each read, not their sum: a byte now and then would hold a call for ever)."""

    def __init__(self, timeout: float) -> None:
        self.fired = False
        self._sockets: list[Any] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(timeout, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: Any) -> None:
        with self._lock:
            self._sockets.append(sock)
            fired = self.fired
        if fired:
            self._shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            self._shut(sock)

    @staticmethod
    def _shut(sock: Any) -> None:
        import socket

        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def opener(self) -> urllib.request.OpenerDirector:
        """An opener whose connections are watched from the moment they connect."""
        import http.client
        import urllib.request

        watchdog = self
        self._timer.start()

        def watched(base: type[http.client.HTTPConnection]) -> Any:
            class Watched(base):  # type: ignore[valid-type, misc]
                def connect(self) -> None:
                    super().connect()
                    watchdog.watch(self.sock)

            return Watched

        class HTTP(urllib.request.HTTPHandler):
            def http_open(self, req: Any) -> Any:
                return self.do_open(watched(http.client.HTTPConnection), req)

        class HTTPS(urllib.request.HTTPSHandler):
            def https_open(self, req: Any) -> Any:
                return self.do_open(
                    watched(http.client.HTTPSConnection),
                    req,
                    context=self._context,  # type: ignore[attr-defined]
                )

        return urllib.request.build_opener(HTTP(), HTTPS())


_ENVIRONMENT_SECRETS: list[Any] = [None, ()]  # the last environment seen, and its secrets


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables named like secrets (``*KEY``, ``*TOKEN`` …), longest
    first; values under 8 characters are ignored (too likely in ordinary text).

    >>> secret_values({"OPENAI_API_KEY": "sk-test-SECRET123", "HOME": "/home/me"})
    ['sk-test-SECRET123']
    """
    if environ is None:
        # The environment rarely changes during a run, and every reply is scrubbed: remember
        # the answer for the environment as it is (its raw entries compared, nothing decoded).
        raw = getattr(os.environ, "_data", None)
        snapshot = tuple(raw.items()) if isinstance(raw, dict) else None
        if snapshot is not None and snapshot == _ENVIRONMENT_SECRETS[0]:
            return list(_ENVIRONMENT_SECRETS[1])
        found = secret_values(dict(os.environ))
        if snapshot is not None:
            _ENVIRONMENT_SECRETS[:] = [snapshot, tuple(found)]
        return found
    values = set()
    for name, value in environ.items():
        if not name.upper().endswith(_SECRET_NAME_ENDINGS):
            continue
        for form in (value, value.strip()):  # a key read from a file often ends in a newline
            if len(form) >= _MIN_SECRET_LENGTH:
                values.add(form)
    return sorted(values, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove every secret from ``text`` (those given and the environment's) in every form it
    takes in a message: raw, stripped, and escaped by ``repr``, JSON or percent-encoding.

    >>> scrub("Invalid header value b'Bearer sk-test-SECRET123\\\\n'", ["sk-test-SECRET123\\n"])
    "Invalid header value b'Bearer ***'"
    """
    candidates = frozenset({s for s in secrets if s} | set(secret_values()))
    for form in _forms_longest_first(candidates):  # longest first: no half-removed key
        if form in text:
            text = text.replace(form, "***")
    return text


@functools.lru_cache(maxsize=32)
def _forms_longest_first(secrets: frozenset[str]) -> tuple[str, ...]:
    """Every escaped form of these secrets, longest first (a run scrubs with the same few)."""
    forms: set[str] = set()
    for secret in secrets:
        forms.update(_escaped_forms(secret))
    return tuple(sorted(forms, key=len, reverse=True))


def _escaped_forms(secret: str) -> set[str]:
    """A secret as it may appear in text: raw, stripped, escaped (repr, JSON, percent, HTML),
    and its UTF-8 bytes in base64 and hex."""
    import base64
    import html

    forms = set()
    for value in {secret, secret.strip()} - {""}:
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
    return forms


def _server_message(body: bytes, secrets: Iterable[str] = ()) -> str:
    """The server's own short explanation from an error body (JSON or text), scrubbed before
    it is shortened, so a cut never leaves half a key behind."""
    text = body.decode("utf-8", errors="replace").strip()
    message = " ".join(text.split())
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            found = [
                error[k]
                for k in ("message", "detail", "type", "code")
                if isinstance(error.get(k), str) and error[k].strip()
            ]
            message = found[0].strip() if found else message
        elif isinstance(error, str) and error.strip():
            message = error.strip()
    return shorten(scrub(message, secrets), 200)


class _Poster:
    """One HTTP attempt of a model adapter (which gives these), failures described."""

    _url: str
    timeout: float
    max_response_bytes: int
    name: str
    key_variable: str
    _secrets: Callable[[], list[str]]
    _request_headers: Callable[[], dict[str, str]]

    def _attempt(self, data: bytes) -> bytes | _Failure:
        import http.client
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self._url, data=data, headers=self._request_headers())
        watchdog = _Watchdog(self.timeout)
        try:
            with watchdog, watchdog.opener().open(request, timeout=self.timeout) as response:
                return _read_body(response, self.max_response_bytes, watchdog)
        except _TooLarge:
            return _Failure(
                f"the reply from {_host_port(self._url)} is larger than "
                f"{self.max_response_bytes:,} bytes (max_response_bytes); it was not read further",
                retryable=False,
            )
        except urllib.error.HTTPError as exc:
            body = b""
            with exc, contextlib.suppress(OSError, http.client.HTTPException):
                body = exc.read(_ERROR_BODY_BYTES)  # enough for its message
            return self._http_failure(exc.code, exc.headers, body)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            if watchdog.fired:
                return self._network_failure(TimeoutError())
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            return self._network_failure(reason)

    def _http_failure(self, status: int, headers: Any, body: bytes) -> _Failure:
        where = _host_port(self._url)
        message = _server_message(body, self._secrets()) or "(no message)"
        if status == 404:
            return _Failure(
                f"HTTP 404 from {where}: the server does not know the model {self.name!r} "
                f"(or {_public_url(self._url)} is not the right address): {message}",
                retryable=False,
            )
        if status in (401, 403):
            hint = f"; check {self.key_variable}" if self.key_variable else ""
            return _Failure(f"HTTP {status} from {where}: {message}{hint}", retryable=False)
        retryable = status in RETRYABLE_STATUSES or 500 <= status <= 599
        if status == 429 and _quota_exhausted(body):
            retryable = False
        retry_after = None
        if headers is not None:
            retry_after = parse_retry_after(headers.get("Retry-After"))
            if retry_after is None:  # OpenAI also sends the wait in milliseconds
                milliseconds = parse_retry_after(headers.get("retry-after-ms"), cap=math.inf)
                if milliseconds is not None:
                    retry_after = min(milliseconds / 1000.0, RETRY_AFTER_CAP)
        return _Failure(f"HTTP {status} from {where}: {message}", retryable, retry_after)

    def _network_failure(self, reason: object) -> _Failure:
        where = _host_port(self._url)
        if isinstance(reason, TimeoutError):
            return _Failure(f"no reply from {where} within {self.timeout:g} s", retryable=True)
        strerror = reason.strerror if isinstance(reason, OSError) else None
        detail = strerror or str(reason) or type(reason).__name__
        return _Failure(f"cannot reach {where} ({detail})", retryable=True)
