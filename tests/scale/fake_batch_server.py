"""A fake provider on 127.0.0.1 speaking the OpenAI Batch and Anthropic Message Batches formats.

Endpoints (each as the provider's API reference describes it):

- OpenAI: ``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``,
  ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content`` and the direct
  ``POST /v1/chat/completions``.
- Anthropic: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
  ``GET /v1/messages/batches/{id}/results`` and the direct ``POST /v1/messages``.

The scripted model answers ``PASS`` when the prompt contains ``good`` and
``FAIL`` otherwise, reports ``MODEL-2026`` as its name and counts words as
input tokens. A batch stays in progress for ``delay_polls`` retrievals, then
ends; prompts containing ``[batch-fail]`` fail inside a batch (HTTP 500,
with a message that echoes the request's key, as a careless server might),
while a direct call of the same prompt succeeds. ``expire=True`` makes the
batch expire with only the first ``expire_after`` requests processed.

Bounded: at most ``max_requests`` HTTP requests (then 503) and
``lifetime`` seconds, after which the server stops itself.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY_OPENAI = "sk-test-OPENAI-0123456789abcdef"
KEY_ANTHROPIC = "sk-ant-test-ANTHROPIC-0123456789"
MAX_BODY = 64 * 2**20


def scripted_answer(prompt: str) -> str:
    """The scripted model's verdict."""
    return "PASS" if "good" in prompt else "FAIL"


def _usage(prompt: str) -> tuple[int, int]:
    return len(prompt.split()), 1


class FakeBatchServer:
    """The fake provider; use as a context manager. Counters are in ``counts``."""

    def __init__(
        self,
        *,
        delay_polls: int = 2,
        expire: bool = False,
        expire_after: int = 0,
        cancel: bool = False,
        max_requests: int = 5000,
        lifetime: float = 60.0,
        results_host: str | None = None,
        create_failures: tuple[tuple[int, bool], ...] = (),
        mangle: Callable[[bytes], bytes] | None = None,
        status_body: bytes | None = None,
    ) -> None:
        self.delay_polls = delay_polls
        self.expire = expire
        self.expire_after = expire_after
        self.cancel = cancel
        self.max_requests = max_requests
        self.lifetime = lifetime
        self.results_host = results_host
        # answers to the first batch creations: (HTTP status, whether the batch was created anyway)
        self.create_failures = list(create_failures)
        # what a broken server does: its results files rewritten, its status replies replaced
        self.mangle = mangle or (lambda content: content)
        self.status_body = status_body
        self.counts: Counter[str] = Counter()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.uploads: list[dict[str, str]] = []  # the form fields of each upload
        self.events: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def openai_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeBatchServer:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    # ---- the scripted model

    def _openai_completion(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["messages"][0]["content"]
        tokens_in, tokens_out = _usage(prompt)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": f"{body['model']}-2026",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": scripted_answer(prompt)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }

    def _anthropic_message(self, params: dict[str, Any]) -> dict[str, Any]:
        prompt = params["messages"][0]["content"]
        tokens_in, tokens_out = _usage(prompt)
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": f"{params['model']}-2026",
            "content": [{"type": "text", "text": scripted_answer(prompt)}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        }

    # ---- batches

    def _new_id(self, prefix: str) -> str:
        self.counts[f"ids:{prefix}"] += 1
        return f"{prefix}{self.counts[f'ids:{prefix}']:06d}"

    def _advance(self, batch: dict[str, Any]) -> None:
        """One retrieval: in progress for ``delay_polls`` retrievals, then ended."""
        batch["polls"] += 1
        if batch["polls"] <= self.delay_polls or batch.get("ended"):
            return
        batch["ended"] = True
        if batch["flavour"] == "openai":
            self._finish_openai(batch)
        else:
            self._finish_anthropic(batch)

    def _finish_openai(self, batch: dict[str, Any]) -> None:
        outputs, errors = [], []
        stop_after = self.expire_after if (self.expire or self.cancel) else None
        for index, line in enumerate(batch["lines"]):
            custom_id = line["custom_id"]
            prompt = line["body"]["messages"][0]["content"]
            if stop_after is not None and index >= stop_after:
                code = "batch_expired" if self.expire else "batch_cancelled"
                errors.append(
                    {
                        "id": f"batch_req_{index}",
                        "custom_id": custom_id,
                        "response": None,
                        "error": {"code": code, "message": "This request could not be executed"},
                    }
                )
            elif "[batch-fail]" in prompt:
                errors.append(
                    {
                        "id": f"batch_req_{index}",
                        "custom_id": custom_id,
                        "response": {
                            "status_code": 500,
                            "request_id": f"req_{index}",
                            "body": {
                                "error": {
                                    "message": f"internal error for key {batch['key']}",
                                    "type": "server_error",
                                }
                            },
                        },
                        "error": None,
                    }
                )
            else:
                outputs.append(
                    {
                        "id": f"batch_req_{index}",
                        "custom_id": custom_id,
                        "response": {
                            "status_code": 200,
                            "request_id": f"req_{index}",
                            "body": self._openai_completion(line["body"]),
                        },
                        "error": None,
                    }
                )
        object_ = batch["object"]
        for key, lines in (("output_file_id", outputs), ("error_file_id", errors)):
            if lines:
                file_id = self._new_id("file-out")
                content = "".join(json.dumps(x) + "\n" for x in lines).encode()
                self.files[file_id] = self.mangle(content) if key == "output_file_id" else content
                object_[key] = file_id
        object_["status"] = (
            "expired" if self.expire else "cancelled" if self.cancel else "completed"
        )
        object_["request_counts"] = {
            "total": len(batch["lines"]),
            "completed": len(outputs),
            "failed": len(errors),
        }

    def _finish_anthropic(self, batch: dict[str, Any]) -> None:
        results = []
        counts = Counter({"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0})
        counts["expired"] = 0
        stop_after = self.expire_after if (self.expire or self.cancel) else None
        for index, request in enumerate(batch["lines"]):
            params = request["params"]
            prompt = params["messages"][0]["content"]
            if stop_after is not None and index >= stop_after:
                result: dict[str, Any] = {"type": "expired" if self.expire else "canceled"}
            elif "[batch-fail]" in prompt:
                result = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {
                            "type": "api_error",
                            "message": f"internal error for key {batch['key']}",
                        },
                    },
                }
            else:
                result = {"type": "succeeded", "message": self._anthropic_message(params)}
            counts[result["type"]] += 1
            results.append({"custom_id": request["custom_id"], "result": result})
        batch["results"] = self.mangle("".join(json.dumps(x) + "\n" for x in results).encode())
        object_ = batch["object"]
        object_["processing_status"] = "ended"
        object_["ended_at"] = "2026-12-01T10:00:00Z"
        object_["request_counts"] = dict(counts)
        host = self.results_host or f"127.0.0.1:{self.port}"
        object_["results_url"] = f"http://{host}/v1/messages/batches/{object_['id']}/results"

    # ---- HTTP

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, status: int, payload: Any, *, raw: bytes | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                ctype = "application/octet-stream" if raw is not None else "application/json"
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                self._send(status, {"error": {"message": message, "type": "invalid_request"}})

            def _body(self) -> bytes:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    raise ValueError("body too large")
                return self.rfile.read(length)

            def _key(self, flavour: str) -> str | None:
                if flavour == "openai":
                    auth = self.headers.get("Authorization") or ""
                    return auth[7:] if auth == f"Bearer {KEY_OPENAI}" else None
                if self.headers.get("anthropic-version") != "2023-06-01":
                    return None
                key = self.headers.get("x-api-key")
                return key if key == KEY_ANTHROPIC else None

            def _serve(self, method: str) -> None:
                with server._lock:
                    server.counts["http"] += 1
                    over = server.counts["http"] > server.max_requests
                if over:
                    self._error(503, "the fake server's request budget is spent")
                    return
                path = self.path.split("?", 1)[0]
                flavour = "anthropic" if path.startswith("/v1/messages") else "openai"
                key = self._key(flavour)
                if key is None:
                    self._error(401, "invalid or missing key or version header")
                    return
                body = self._body() if method == "POST" else b""
                with server._lock:
                    server.events.append(f"{method} {re.sub(r'[0-9]{6}', 'N', path)}")
                    self._route(method, path, body, key)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def _route(self, method: str, path: str, body: bytes, key: str) -> None:
                if method == "POST" and path == "/v1/chat/completions":
                    server.counts["direct"] += 1
                    self._send(200, server._openai_completion(json.loads(body)))
                elif method == "POST" and path == "/v1/messages":
                    server.counts["direct"] += 1
                    self._send(200, server._anthropic_message(json.loads(body)))
                elif method == "POST" and path == "/v1/files":
                    self._upload(body)
                elif method == "POST" and path == "/v1/batches":
                    self._create_openai(json.loads(body), key)
                elif method == "POST" and path == "/v1/messages/batches":
                    self._create_anthropic(json.loads(body), key)
                elif method == "GET" and (m := re.fullmatch(r"/v1/batches/([\w-]+)", path)):
                    self._retrieve(m.group(1), "openai")
                elif method == "GET" and (
                    m := re.fullmatch(r"/v1/messages/batches/([\w-]+)", path)
                ):
                    self._retrieve(m.group(1), "anthropic")
                elif method == "GET" and (
                    m := re.fullmatch(r"/v1/messages/batches/([\w-]+)/results", path)
                ):
                    batch = server.batches.get(m.group(1))
                    if batch is None or "results" not in batch:
                        self._error(404, "no results (yet) for this batch")
                    else:
                        self._send(200, None, raw=batch["results"])
                elif method == "GET" and (m := re.fullmatch(r"/v1/files/([\w-]+)/content", path)):
                    content = server.files.get(m.group(1))
                    if content is None:
                        self._error(404, "no such file")
                    else:
                        self._send(200, None, raw=content)
                else:
                    self._error(404, f"no route for {method} {path}")

            def _upload(self, body: bytes) -> None:
                ctype = self.headers.get("Content-Type") or ""
                match = re.search(r"boundary=([^;]+)", ctype)
                if not ctype.startswith("multipart/form-data") or not match:
                    self._error(400, "expected multipart/form-data")
                    return
                fields, files = _parse_multipart(body, match.group(1).strip('"'))
                if fields.get("purpose") != "batch" or "file" not in files:
                    self._error(400, "expected purpose=batch and a file")
                    return
                server.uploads.append(fields)
                file_id = server._new_id("file-in")
                filename, content = files["file"]
                server.files[file_id] = content
                self._send(
                    200,
                    {
                        "id": file_id,
                        "object": "file",
                        "bytes": len(content),
                        "created_at": 1764583200,
                        "filename": filename,
                        "purpose": "batch",
                    },
                )

            def _create_openai(self, payload: dict[str, Any], key: str) -> None:
                content = server.files.get(payload.get("input_file_id", ""))
                if content is None:
                    self._error(400, "unknown input_file_id")
                    return
                if payload.get("endpoint") != "/v1/chat/completions":
                    self._error(400, "unsupported endpoint")
                    return
                if payload.get("completion_window") != "24h":
                    self._error(400, "completion_window must be 24h")
                    return
                lines = [json.loads(line) for line in content.decode().splitlines() if line]
                ids = [line["custom_id"] for line in lines]
                if len(set(ids)) != len(ids) or any(
                    line.get("method") != "POST" or line.get("url") != payload["endpoint"]
                    for line in lines
                ):
                    self._error(400, "duplicate custom_id, or a line with another method/url")
                    return
                batch_id = server._new_id("batch_")
                object_ = {
                    "id": batch_id,
                    "object": "batch",
                    "endpoint": payload["endpoint"],
                    "input_file_id": payload["input_file_id"],
                    "completion_window": "24h",
                    "status": "validating",
                    "output_file_id": None,
                    "error_file_id": None,
                    "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                }
                self._created("openai", object_, lines, key)

            def _create_anthropic(self, payload: dict[str, Any], key: str) -> None:
                requests = payload.get("requests")
                if not isinstance(requests, list) or not requests:
                    self._error(400, "requests: expected a non-empty list")
                    return
                ids = [r.get("custom_id", "") for r in requests]
                if len(set(ids)) != len(ids) or not all(
                    re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", i) for i in ids
                ):
                    self._error(400, "custom_id must be unique and match ^[a-zA-Z0-9_-]{1,64}$")
                    return
                batch_id = server._new_id("msgbatch_")
                object_ = {
                    "id": batch_id,
                    "type": "message_batch",
                    "processing_status": "in_progress",
                    "request_counts": {
                        "processing": len(requests),
                        "succeeded": 0,
                        "errored": 0,
                        "canceled": 0,
                        "expired": 0,
                    },
                    "ended_at": None,
                    "results_url": None,
                }
                self._created("anthropic", object_, requests, key)

            def _created(
                self, flavour: str, object_: dict[str, Any], lines: list[Any], key: str
            ) -> None:
                """Keep a new batch and answer its creation (or fail it, as scripted)."""
                server.counts["submissions"] += 1
                server.counts["batched_requests"] += len(lines)
                server.batches[object_["id"]] = {
                    "flavour": flavour,
                    "object": object_,
                    "lines": lines,
                    "polls": 0,
                    "key": key,
                }
                if server.create_failures:
                    status, created_anyway = server.create_failures.pop(0)
                    if not created_anyway:
                        batch = server.batches.pop(object_["id"])
                        server.counts["submissions"] -= 1
                        server.counts["batched_requests"] -= len(batch["lines"])
                    self._error(status, "the batch service is unavailable")
                    return
                self._send(200, object_)

            def _retrieve(self, batch_id: str, flavour: str) -> None:
                batch = server.batches.get(batch_id)
                if batch is None or batch["flavour"] != flavour:
                    self._error(404, f"no batch {batch_id}")
                    return
                server.counts["polls"] += 1
                server._advance(batch)
                object_ = batch["object"]
                if flavour == "openai" and not batch.get("ended"):
                    object_["status"] = "validating" if batch["polls"] == 1 else "in_progress"
                self._send(200, object_, raw=server.status_body)

        return Handler


def _parse_multipart(body: bytes, boundary: str) -> tuple[dict[str, str], dict[str, Any]]:
    """Text fields and files (name -> (filename, bytes)) of a multipart/form-data body."""
    fields: dict[str, str] = {}
    files: dict[str, tuple[str, bytes]] = {}
    delimiter = b"--" + boundary.encode()
    for part in body.split(delimiter)[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part.partition(b"\r\n\r\n")
        content = content[:-2] if content.endswith(b"\r\n") else content
        disposition = head.decode("utf-8", "replace")
        name = re.search(r'name="([^"]*)"', disposition)
        filename = re.search(r'filename="([^"]*)"', disposition)
        if name is None:
            continue
        if filename is not None:
            files[name.group(1)] = (filename.group(1), content)
        else:
            fields[name.group(1)] = content.decode("utf-8")
    return fields, files
