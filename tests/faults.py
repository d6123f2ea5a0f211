"""A fake OpenAI/Anthropic-compatible server with scripted faults, for reliability tests.

It listens on 127.0.0.1 only, answers at most ``max_requests`` requests, stops
itself after ``lifetime`` seconds whatever happens, and is a context manager::

    with FaultServer([Fault.status(429), Fault.ok("PASS")]) as server:
        model = resolve("openai:m", base_url=server.url, sleep=lambda s: None)
        model("hello")

Each request takes the next fault of the script (the last one repeats). A
fault decides, byte by byte, what the connection gets: a well-formed reply in
the shape the request's path asks for (``/chat/completions`` is OpenAI,
``/messages`` is Anthropic), an HTTP error with or without ``Retry-After``, a
reset, a hang, a dribble, a truncated or oversized body, a body that echoes
the request's key in every escaped form, or whatever a test's own function
answers to the request (``Fault.reply``). Every fake server of the tests is
this one.

>>> Fault.status(503).name, Fault.ok("PASS").name
('status-503', 'ok')
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Send = Callable[[bytes], None]


def key_forms(key: str) -> list[str]:
    """Every form a key can be leaked in: raw, stripped, repr-, JSON- and percent-escaped.

    >>> "'sk-a/b\\\\n'" in key_forms("sk-a/b\\n"), "sk-a%2Fb" in key_forms("sk-a/b\\n")
    (True, True)
    """
    forms = set()
    for value in {key, key.strip()}:
        forms |= {
            value,
            repr(value),
            repr(value)[1:-1],
            json.dumps(value),
            json.dumps(value)[1:-1],
            urllib.parse.quote(value, safe=""),
            urllib.parse.quote_plus(value, safe=""),
            repr(value.encode())[2:-1],
        }
    return sorted(form for form in forms if len(form) >= 8)


def openai_body(text: str) -> dict[str, Any]:
    return {
        "model": "fake-1",
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }


def anthropic_body(text: str) -> dict[str, Any]:
    return {
        "model": "fake-1",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 3, "output_tokens": 1},
        "stop_reason": "end_turn",
    }


@dataclass(frozen=True)
class Request:
    """What the server received: the path, the headers (names lower-cased) and the body."""

    path: str
    headers: dict[str, str]
    body: bytes = b""

    def json(self) -> Any:
        """The body read as JSON."""
        return json.loads(self.body)

    @property
    def key(self) -> str:
        """The key the request carried, OpenAI (bearer) or Anthropic (``x-api-key``) style."""
        bearer = self.headers.get("authorization", "").removeprefix("Bearer ")
        return bearer or self.headers.get("x-api-key", "")


@dataclass(frozen=True)
class Fault:
    """One scripted answer: ``act(request, send, connection)`` writes what the client gets."""

    name: str
    act: Callable[[Request, Send, socket.socket], None] = field(repr=False)

    # --- well-formed answers

    @classmethod
    def ok(cls, text: str = "PASS") -> Fault:
        def act(request: Request, send: Send, _: socket.socket) -> None:
            shape = anthropic_body if request.path.endswith("/messages") else openai_body
            _respond(send, 200, json.dumps(shape(text)).encode())

        return cls("ok", act)

    @classmethod
    def reply(cls, answer: Callable[[Request], tuple[int, Any]], name: str = "reply") -> Fault:
        """The answer ``answer(request)`` gives: a status and a body (bytes, or JSON to dump)."""

        def act(request: Request, send: Send, _: socket.socket) -> None:
            status, body = answer(request)
            _respond(send, status, body if isinstance(body, bytes) else json.dumps(body).encode())

        return cls(name, act)

    @classmethod
    def raw(cls, status: int, body: bytes, name: str = "raw") -> Fault:
        def act(request: Request, send: Send, _: socket.socket) -> None:
            _respond(send, status, body)

        return cls(name, act)

    @classmethod
    def status(cls, code: int, *, retry_after: str | None = None) -> Fault:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        body = json.dumps({"error": {"message": f"scripted {code}", "type": "fault"}}).encode()

        def act(request: Request, send: Send, _: socket.socket) -> None:
            _respond(send, code, body, headers)

        suffix = "" if retry_after is None else f"-retry-after-{retry_after}"
        return cls(f"status-{code}{suffix}", act)

    # --- broken connections

    @classmethod
    def reset(cls) -> Fault:
        def act(request: Request, send: Send, connection: socket.socket) -> None:
            # SO_LINGER 0: close sends a TCP RST instead of a FIN
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

        return cls("reset", act)

    @classmethod
    def close(cls) -> Fault:
        def act(request: Request, send: Send, connection: socket.socket) -> None:
            pass  # nothing at all: the connection just closes

        return cls("close", act)

    @classmethod
    def hang(cls, seconds: float) -> Fault:
        def act(request: Request, send: Send, _: socket.socket) -> None:
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                send(b"")  # raises once the server is stopping: a hang never outlives it
                time.sleep(0.02)

        return cls("hang", act)

    @classmethod
    def dribble(cls, interval: float, *, headers_too: bool = False) -> Fault:
        """A valid reply sent one byte every ``interval`` seconds (the headers too, or not)."""

        def act(request: Request, send: Send, _: socket.socket) -> None:
            shape = anthropic_body if request.path.endswith("/messages") else openai_body
            body = json.dumps(shape("PASS")).encode()
            data = _message(200, body)
            split = 0 if headers_too else data.index(b"\r\n\r\n") + 4
            send(data[:split])
            for byte in data[split:]:
                time.sleep(interval)
                send(bytes([byte]))

        return cls("dribble-headers" if headers_too else "dribble", act)

    @classmethod
    def truncated(cls) -> Fault:
        """A Content-Length promising more than is sent, then the connection closes."""

        def act(request: Request, send: Send, _: socket.socket) -> None:
            body = json.dumps(openai_body("PASS")).encode()
            head = _head(200, len(body) + 100, {})
            send(head + body[: len(body) // 2])

        return cls("truncated", act)

    @classmethod
    def oversized(cls, size: int, *, declared: bool = True) -> Fault:
        """A body of ``size`` bytes, with a Content-Length, or streamed until closed."""

        def act(request: Request, send: Send, _: socket.socket) -> None:
            prefix = b'{"choices": [{"message": {"content": "'
            head = _head(200, size if declared else None, {})
            send(head + prefix)
            sent = len(prefix)
            block = b"x" * 65536
            while sent < size:
                piece = block[: size - sent]
                send(piece)
                sent += len(piece)

        return cls("oversized" if declared else "oversized-undeclared", act)

    @classmethod
    def echo_key(cls, status: int = 400) -> Fault:
        """An answer whose body repeats the request's key in every escaped form."""

        def act(request: Request, send: Send, _: socket.socket) -> None:
            echoed = " | ".join(key_forms(request.key))
            if status == 200:
                shape = anthropic_body if request.path.endswith("/messages") else openai_body
                body = json.dumps(shape(f"you sent {echoed}")).encode()
            else:
                body = json.dumps({"error": {"message": f"bad key {echoed}"}}).encode()
            _respond(send, status, body)

        return cls(f"echo-key-{status}", act)


def _head(status: int, length: int | None, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} Scripted", "Content-Type: application/json", "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _message(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    return _head(status, len(body), headers or {}) + body


def _respond(send: Send, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    send(_message(status, body, headers))


class FaultServer:
    """The server: ``url`` to point a model at, ``requests`` received, ``faults`` served."""

    def __init__(
        self, script: list[Fault], *, max_requests: int = 50, lifetime: float = 20.0
    ) -> None:
        if not script:
            raise ValueError("a script needs at least one fault")
        self.script = list(script)
        self.max_requests = max_requests
        self.lifetime = lifetime
        self.requests: list[Request] = []
        self.faults: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> FaultServer:
        self._started = time.monotonic()
        self._acceptor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._acceptor.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set() and time.monotonic() - self._started < self.lifetime:
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                if len(self.requests) >= self.max_requests:
                    connection.close()
                    continue
            thread = threading.Thread(target=self._handle, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()
        self._stop.set()

    def _handle(self, connection: socket.socket) -> None:
        connection.settimeout(min(5.0, self.lifetime))
        try:
            request = _read_request(connection)
            if request is None:
                return
            with self._lock:
                self.requests.append(request)
                fault = self.script[min(len(self.requests) - 1, len(self.script) - 1)]
                self.faults.append(fault.name)

            def send(data: bytes) -> None:
                if self._stop.is_set():
                    raise ConnectionAbortedError
                connection.sendall(data)

            fault.act(request, send, connection)
        except OSError:
            pass  # the client went away: expected when it gives up on a slow answer
        finally:
            connection.close()


def _read_request(connection: socket.socket) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk or len(data) > 1 << 20:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    while len(rest) < min(length, 1 << 24):
        chunk = connection.recv(65536)
        if not chunk:
            break
        rest += chunk
    return Request(path, headers, rest[:length])
