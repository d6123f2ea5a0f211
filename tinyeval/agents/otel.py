"""OpenTelemetry GenAI traces: a JSON export of spans read into case records.

The input is an OTLP JSON export (``{"resourceSpans": [{"scopeSpans":
[{"spans": [...]}]}]}``, as the OpenTelemetry Collector's file exporter and
most backends write it) whose spans follow the OpenTelemetry semantic
conventions for generative AI. **One case per trace**: the trace id is the case
id, and the case's conversation is rebuilt from the trace's spans in time
order (their start times):

- *chat spans* (``gen_ai.operation.name`` = ``chat``, or any span carrying
  messages): the first one's input messages open the conversation (system
  prompt included); each one's output messages follow; user messages a later
  chat span adds after the last assistant or tool message are added too.
  Messages are read from, in this order of preference: the
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` attributes (and
  ``gen_ai.system_instructions``), as JSON text or as OTLP arrays; the older
  flattened ``gen_ai.prompt.N.role`` / ``.content`` and
  ``gen_ai.completion.N.…`` attributes (with ``tool_calls.M.name`` /
  ``.arguments``), or ``gen_ai.prompt`` / ``gen_ai.completion`` holding JSON or
  plain text; and the span events ``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message`` and ``gen_ai.choice``;
- *tool spans* (``gen_ai.operation.name`` = ``execute_tool``): each is a tool
  result (``gen_ai.tool.call.id``, ``gen_ai.tool.name``, the result in
  ``gen_ai.tool.call.result``), marked as an error when the span's status is
  ERROR or it has an ``error.type`` attribute. When no chat span recorded the
  call itself, the call is added from the tool span (with
  ``gen_ai.tool.call.arguments``).

The record keeps, next to ``id`` and ``messages``: ``model`` (the last chat
span's ``gen_ai.response.model``, else ``gen_ai.request.model``), ``usage``
(``input_tokens`` and ``output_tokens`` summed over the chat spans, from
``gen_ai.usage.input_tokens`` / ``output_tokens`` or the older
``prompt_tokens`` / ``completion_tokens``), ``agent`` (``gen_ai.agent.name``),
``service`` (the resource's ``service.name``) and ``trace`` (span count and
root span name): keys a case keeps in its ``meta``. A trace with no chat span
is skipped: there is nothing to evaluate in it.

>>> export = {"resourceSpans": [{"scopeSpans": [{"spans": [{
...     "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
...     "name": "chat gpt-4o", "startTimeUnixNano": "1",
...     "attributes": [
...         {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
...         {"key": "gen_ai.input.messages", "value": {"stringValue":
...             '[{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]'}},
...         {"key": "gen_ai.output.messages", "value": {"stringValue":
...             '[{"role": "assistant", "parts": [{"type": "text", "content": "Hello"}]}]'}},
...         {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "3"}}]}]}]}]}
>>> [(line, record["id"], record["messages"]) for line, record in records_from_otel(export)]
[(1, '5b8efff798038103d269b633813fc60c', [{'role': 'user', 'content': 'Hi'}, \
{'role': 'assistant', 'content': 'Hello'}])]

Every problem raises :class:`~tinyeval.errors.InputError` naming the place
(``resourceSpans.0.scopeSpans.0.spans.3.attributes``). No OpenTelemetry SDK
is needed: this reads the JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, describe_json, is_number, shorten

__all__ = ["records_from_otel"]

_CHAT_OPERATIONS = ("chat", "text_completion", "generate_content")
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


@dataclass
class _Span:
    where: str
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    error: str | None
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)


def _fail(reason: str, where: str, path: str | None) -> InputError:
    return InputError(reason, path=path, field=where)


def _value(raw: Any, where: str, path: str | None) -> Any:
    """An OTLP ``AnyValue`` as a plain value."""
    if not isinstance(raw, Mapping):
        raise _fail(f"expected an OTLP value object, got {describe_json(raw)}", where, path)
    if "stringValue" in raw:
        return raw["stringValue"]
    if "boolValue" in raw:
        return raw["boolValue"]
    if "intValue" in raw:
        return _int64(raw["intValue"], "an integer", f"{where}.intValue", path)
    if "doubleValue" in raw:
        number = raw["doubleValue"]
        if not is_number(number):
            raise _fail(f"expected a number, got {describe_json(number)}", where, path)
        return number
    if "arrayValue" in raw:
        values = _list(raw["arrayValue"], "values", f"{where}.arrayValue", path)
        return [
            _value(item, f"{where}.arrayValue.values.{i}", path) for i, item in enumerate(values)
        ]
    if "kvlistValue" in raw:
        return _attributes(raw["kvlistValue"], "values", f"{where}.kvlistValue", path)
    if "bytesValue" in raw:
        return raw["bytesValue"]
    return None  # an empty AnyValue


_INT64 = 2**63  # OTLP integers are 64-bit (intValue: int64; times: fixed64)


def _int64(raw: Any, what: str, where: str, path: str | None) -> int:
    """An OTLP integer (a JSON number or the decimal string OTLP JSON writes), within 64 bits."""
    number = None
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    if isinstance(raw, str) and re.fullmatch(r"\s*[+-]?[0-9]{1,24}\s*", raw):
        raw = int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool):
        number = raw
    if number is None or not -_INT64 <= number < 2 * _INT64:
        shown = describe_json(raw) if not isinstance(raw, str) else repr(shorten(raw, 40))
        raise _fail(f"expected {what} of at most 64 bits, got {shown}", where, path)
    return number


def _list(container: Any, key: str, where: str, path: str | None) -> list[Any]:
    if not isinstance(container, Mapping):
        raise _fail(f"expected an object, got {describe_json(container)}", where, path)
    items = container.get(key, [])
    if items is None:
        return []
    if not isinstance(items, list):
        raise _fail(f"expected a list, got {describe_json(items)}", f"{where}.{key}", path)
    return items


def _attributes(container: Any, key: str, where: str, path: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for index, item in enumerate(_list(container, key, where, path)):
        place = f"{where}.{key}.{index}"
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise _fail(
                f'expected {{"key": ..., "value": ...}}, got {describe_json(item)}', place, path
            )
        out[item["key"]] = _value(item.get("value", {}), f"{place}.value", path)
    return out


def _text_id(value: Any, where: str, path: str | None, *, required: bool) -> str | None:
    if value in (None, "") and not required:
        return None
    if not isinstance(value, str) or not value:
        raise _fail(f"expected an id (a non-empty string), got {describe_json(value)}", where, path)
    return value


def _read_spans(document: Any, path: str | None, lines: Mapping[str, int]) -> list[_Span]:
    if not isinstance(document, Mapping):
        raise _fail(
            f"expected an OTLP JSON object, got {describe_json(document)}", "resourceSpans", path
        )
    spans = []
    for r, resource_spans in enumerate(_list(document, "resourceSpans", "", path)):
        rwhere = f"resourceSpans.{r}"
        if not isinstance(resource_spans, Mapping):
            raise _fail(f"expected an object, got {describe_json(resource_spans)}", rwhere, path)
        resource = resource_spans.get("resource") or {}
        resource_attributes = _attributes(resource, "attributes", f"{rwhere}.resource", path)
        for s, scope_spans in enumerate(_list(resource_spans, "scopeSpans", rwhere, path)):
            swhere = f"{rwhere}.scopeSpans.{s}"
            for n, raw in enumerate(_list(scope_spans, "spans", swhere, path)):
                where = f"{swhere}.spans.{n}"
                try:
                    spans.append(_read_span(raw, where, path, resource_attributes))
                except InputError as exc:  # the line of the span's id, when it has one
                    span_id = raw.get("spanId") if isinstance(raw, Mapping) else None
                    line = lines.get(span_id) if isinstance(span_id, str) else None
                    raise InputError(exc.reason, path=path, line=line, field=exc.field) from None
    return spans


def _read_span(raw: Any, where: str, path: str | None, resource: Mapping[str, Any]) -> _Span:
    if not isinstance(raw, Mapping):
        raise _fail(f"expected a span object, got {describe_json(raw)}", where, path)
    trace_id = _text_id(raw.get("traceId"), f"{where}.traceId", path, required=True)
    span_id = _text_id(raw.get("spanId"), f"{where}.spanId", path, required=True)
    parent = _text_id(raw.get("parentSpanId"), f"{where}.parentSpanId", path, required=False)
    start = _int64(
        raw.get("startTimeUnixNano", 0),
        "nanoseconds as an integer",
        f"{where}.startTimeUnixNano",
        path,
    )
    attributes = _attributes(raw, "attributes", where, path)
    attributes.setdefault("service.name", resource.get("service.name"))
    events = []
    for index, event in enumerate(_list(raw, "events", where, path)):
        ewhere = f"{where}.events.{index}"
        if not isinstance(event, Mapping) or not isinstance(event.get("name"), str):
            raise _fail(f"expected an event with a name, got {describe_json(event)}", ewhere, path)
        events.append((event["name"], _attributes(event, "attributes", ewhere, path)))
    status = raw.get("status") or {}
    code = status.get("code") if isinstance(status, Mapping) else None
    error = None
    if code in (2, "STATUS_CODE_ERROR", "ERROR") or attributes.get("error.type"):
        message = status.get("message") if isinstance(status, Mapping) else None
        error = str(message or attributes.get("error.type") or "error")
    name = raw.get("name")
    assert trace_id is not None and span_id is not None
    return _Span(
        where, trace_id, span_id, parent, name if isinstance(name, str) else "", start,
        attributes, events, error,
    )  # fmt: skip


# === Messages in the conventions' shapes, as OpenAI-shaped messages ===


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("[", "{"):
            try:
                return json.loads(stripped)
            except ValueError:
                return value
    return value


def _content_text(content: Any, absent: str = "") -> str:
    """A string as it is, anything else as JSON, and ``absent`` for None."""
    if content is None:
        return absent
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def _arguments_text(arguments: Any) -> str:
    """A tool call's arguments as text; ``"{}"`` when there are none."""
    return _content_text(arguments, "{}")


def _parts_message(
    message: Mapping[str, Any], where: str, path: str | None
) -> list[dict[str, Any]]:
    """A conventions message (``role`` + ``parts``) as OpenAI-shaped messages."""
    role = message.get("role")
    if not isinstance(role, str):
        raise _fail(f"expected a message role, got {describe_json(role)}", f"{where}.role", path)
    parts = message.get("parts")
    if not isinstance(parts, list):
        if "content" in message or "tool_calls" in message:  # already an OpenAI-style message
            return [_plain_message(message)]
        raise _fail(f"expected a list of parts, got {describe_json(parts)}", f"{where}.parts", path)
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        pwhere = f"{where}.parts.{index}"
        if not isinstance(part, Mapping):
            raise _fail(f"expected a part object, got {describe_json(part)}", pwhere, path)
        kind = part.get("type")
        if kind == "text":
            texts.append(_content_text(part.get("content")))
        elif kind == "tool_call":
            calls.append(
                {
                    "id": part.get("id"),
                    "type": "function",
                    "function": {
                        "name": part.get("name"),
                        "arguments": _arguments_text(part.get("arguments")),
                    },
                }
            )
        elif kind == "tool_call_response":
            results.append(
                {
                    "role": "tool",
                    "tool_call_id": part.get("id"),
                    "content": _content_text(part.get("response")),
                }
            )
        elif kind == "reasoning":
            continue
        else:
            texts.append(f"[{kind}]")
    if results:
        return results
    out: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    elif out["content"] is None:
        out["content"] = ""
    return [out]


def _plain_message(message: Mapping[str, Any]) -> dict[str, Any]:
    out = {
        key: message[key]
        for key in ("role", "content", "tool_calls", "tool_call_id", "name")
        if key in message
    }
    if "role" not in out:
        out["role"] = "assistant"
    return out


def _messages_value(
    value: Any, where: str, path: str | None, default_role: str
) -> list[dict[str, Any]]:
    """Messages from an attribute: JSON text or an array, conventions or OpenAI shape, or text."""
    value = _json_or_text(value)
    if isinstance(value, str):
        return [{"role": default_role, "content": value}]
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        raise _fail(f"expected a list of messages, got {describe_json(value)}", where, path)
    out = []
    for index, message in enumerate(value):
        message = _json_or_text(message)
        if not isinstance(message, Mapping):
            raise _fail(
                f"expected a message object, got {describe_json(message)}", f"{where}.{index}", path
            )
        if "message" in message and isinstance(message["message"], Mapping):  # a choice
            message = {"role": "assistant", **message["message"]}
        out += _parts_message(message, f"{where}.{index}", path)
    return out


def _flattened(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``gen_ai.prompt.0.role`` / ``.content`` / ``.tool_calls.0.name`` ... as messages."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        head, _, rest = key[len(prefix) + 1 :].partition(".")
        if not head.isdigit() or not rest:
            continue
        message = found.setdefault(int(head), {})
        if rest.startswith("tool_calls."):
            number, _, what = rest[len("tool_calls.") :].partition(".")
            if number.isdigit():
                message.setdefault("_calls", {}).setdefault(int(number), {})[what] = value
        else:
            message[rest] = value
    out = []
    for index in sorted(found):
        raw = found[index]
        message = {
            "role": raw.get("role") or ("assistant" if prefix.endswith("completion") else "user"),
            "content": raw.get("content"),
        }
        calls = raw.get("_calls") or {}
        if calls:
            message["tool_calls"] = [
                {
                    "id": calls[n].get("id"),
                    "type": "function",
                    "function": {
                        "name": calls[n].get("name"),
                        "arguments": _arguments_text(calls[n].get("arguments")),
                    },
                }
                for n in sorted(calls)
            ]
        if raw.get("tool_call_id") is not None:
            message["tool_call_id"] = raw["tool_call_id"]
        out.append(message)
    return out


def _event_messages(
    span: _Span, path: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for index, (name, attributes) in enumerate(span.events):
        where = f"{span.where}.events.{index}.attributes"
        body = attributes.get("gen_ai.event.content")
        body = _json_or_text(body) if body is not None else dict(attributes)
        if name in _MESSAGE_EVENTS:
            role = _MESSAGE_EVENTS[name]
            message = dict(body) if isinstance(body, Mapping) else {"content": body}
            message.setdefault("role", role)
            if role == "tool" and "id" in message:
                message.setdefault("tool_call_id", message.pop("id"))
            inputs += _messages_value([message], where, path, role)
        elif name == "gen_ai.choice":
            choice = body.get("message", body) if isinstance(body, Mapping) else {"content": body}
            choice = _json_or_text(choice)
            if not isinstance(choice, Mapping):
                choice = {"content": choice}
            outputs += _messages_value([{"role": "assistant", **choice}], where, path, "assistant")
        elif name == "gen_ai.content.prompt" and "gen_ai.prompt" in attributes:
            inputs += _messages_value(attributes["gen_ai.prompt"], where, path, "user")
        elif name == "gen_ai.content.completion" and "gen_ai.completion" in attributes:
            outputs += _messages_value(attributes["gen_ai.completion"], where, path, "assistant")
    return inputs, outputs


def _span_messages(span: _Span, path: str | None) -> None:
    a = span.attributes
    where = f"{span.where}.attributes"
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    if "gen_ai.system_instructions" in a:
        system = _json_or_text(a["gen_ai.system_instructions"])
        if isinstance(system, list):
            system = "\n".join(
                _content_text(p.get("content")) if isinstance(p, Mapping) else str(p)
                for p in system
            )
        inputs.append({"role": "system", "content": _content_text(system)})
    if "gen_ai.input.messages" in a:
        inputs += _messages_value(
            a["gen_ai.input.messages"], f"{where}.gen_ai.input.messages", path, "user"
        )
    elif "gen_ai.prompt" in a:
        inputs += _messages_value(a["gen_ai.prompt"], f"{where}.gen_ai.prompt", path, "user")
    else:
        inputs += _flattened(a, "gen_ai.prompt")
    if "gen_ai.output.messages" in a:
        outputs += _messages_value(
            a["gen_ai.output.messages"], f"{where}.gen_ai.output.messages", path, "assistant"
        )
    elif "gen_ai.completion" in a:
        outputs += _messages_value(
            a["gen_ai.completion"], f"{where}.gen_ai.completion", path, "assistant"
        )
    else:
        outputs += _flattened(a, "gen_ai.completion")
    if not inputs and not outputs:
        inputs, outputs = _event_messages(span, path)
    span.inputs, span.outputs = inputs, outputs


def _chat_spans(spans: Sequence[_Span]) -> list[_Span]:
    """The chat spans; when there are none, the other spans that carry messages (an
    agent span recording the whole conversation), tool spans never."""
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") in _CHAT_OPERATIONS]
    if chats:
        return chats
    return [s for s in spans if not _is_tool(s) and (s.inputs or s.outputs)]


def _is_tool(span: _Span) -> bool:
    return span.attributes.get("gen_ai.operation.name") == "execute_tool"


# === Traces into records ===


def _usage(chats: Sequence[_Span]) -> dict[str, int] | None:
    totals = {"input_tokens": 0, "output_tokens": 0}
    seen = False
    for span in chats:
        a = span.attributes
        for key, old in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
            value: Any = a.get(f"gen_ai.usage.{key}", a.get(f"gen_ai.usage.{old}"))
            if is_number(value):
                totals[key] += int(value)
                seen = True
    return totals if seen else None


def _known_call_ids(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    return {
        str(call.get("id"))
        for message in messages
        for call in message.get("tool_calls") or ()
        if isinstance(call, Mapping) and isinstance(call.get("id"), str)
    }


def _tail_user_messages(inputs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user messages after the last assistant or tool message of a chat span's input."""
    tail: list[dict[str, Any]] = []
    for message in reversed(inputs):
        if message.get("role") in ("assistant", "tool"):
            break
        if message.get("role") == "user":
            tail.append(message)
    return tail[::-1]


def _trace_record(spans: Sequence[_Span]) -> dict[str, Any] | None:
    spans = sorted(spans, key=lambda span: span.start)
    chats = _chat_spans(spans)
    if not chats:
        return None
    messages: list[dict[str, Any]] = list(chats[0].inputs)
    tool_texts = {
        m["tool_call_id"]: m.get("content")
        for span in chats
        for m in span.inputs
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str)
    }
    chat_ids = {id(span) for span in chats}
    known_calls = _known_call_ids(messages)  # ids of the tool calls in ``messages`` so far
    for span in spans:
        added: list[dict[str, Any]] = []
        if id(span) in chat_ids:
            if span is not chats[0]:
                added = _tail_user_messages(span.inputs)
            added += span.outputs
        elif _is_tool(span):
            added = _tool_messages(span, known_calls, tool_texts)
        messages += added
        known_calls |= _known_call_ids(added)
    ids = {span.span_id for span in spans}
    roots = [span for span in spans if span.parent_id is None or span.parent_id not in ids]
    last = chats[-1].attributes
    record: dict[str, Any] = {
        "id": spans[0].trace_id,
        "messages": messages,
        "model": last.get("gen_ai.response.model") or last.get("gen_ai.request.model"),
        "usage": _usage(chats),
        "trace": {"spans": len(spans), "root": roots[0].name if roots else None},
    }
    agent = next(
        (
            s.attributes.get("gen_ai.agent.name")
            for s in spans
            if s.attributes.get("gen_ai.agent.name")
        ),
        None,
    )
    if agent is not None:
        record["agent"] = agent
    service = spans[0].attributes.get("service.name")
    if service is not None:
        record["service"] = service
    return record


def _tool_messages(
    span: _Span, known_calls: set[str], tool_texts: Mapping[Any, Any]
) -> list[dict[str, Any]]:
    a = span.attributes
    given = a.get("gen_ai.tool.call.id")
    call_id = given if isinstance(given, str) and given else None
    name = a.get("gen_ai.tool.name")
    out: list[dict[str, Any]] = []
    if call_id is None or call_id not in known_calls:
        call_id = call_id if call_id is not None else span.span_id
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": _arguments_text(a.get("gen_ai.tool.call.arguments")),
                        },
                    }
                ],
            }
        )
    result = a.get("gen_ai.tool.call.result", tool_texts.get(call_id))
    if result is None and span.error is not None:
        result = span.error
    message: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": call_id,
        "content": _content_text(result),
    }
    if isinstance(name, str):
        message["name"] = name
    if span.error is not None:
        message["is_error"] = True
    out.append(message)
    return out


_SPAN_ID = re.compile(r'"spanId"\s*:\s*"([^"\\]*)"')


def _span_lines(text: str | None) -> dict[str, int]:
    """The line each span id is first on, read in one pass over ``text``."""
    lines: dict[str, int] = {}
    line, position = 1, 0
    for found in _SPAN_ID.finditer(text or ""):
        line += text.count("\n", position, found.start()) if text else 0
        position = found.start()
        lines.setdefault(found.group(1), line)
    return lines


def records_from_otel(
    document: Any, text: str | None = None, path: str | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, record)`` for each trace of an OTLP JSON export, in the order traces first appear.

    ``document`` is the parsed export; ``text``, when given, is the file's
    text, used to give each record the line of its trace's first span.
    Records are case records (``id``, ``messages``, ``model``, ``usage``...)
    for :func:`tinyeval.load` to validate. See the module documentation for
    what is read and how.

    >>> list(records_from_otel({"resourceSpans": []}))
    []

    Raises :class:`~tinyeval.errors.InputError` (with ``path``) for an export
    that is not of this shape.
    """
    lines = _span_lines(text)
    try:
        spans = _read_spans(document, path, lines)
    except RecursionError:
        raise _fail("values nested too deeply to read", "resourceSpans", path) from None
    by_trace: dict[str, list[_Span]] = {}
    for span in spans:
        try:
            _span_messages(span, path)
        except RecursionError:
            raise InputError(
                "a message value holds JSON nested too deeply to read",
                path=path,
                line=lines.get(span.span_id),
                field=f"{span.where}.attributes",
            ) from None
        by_trace.setdefault(span.trace_id, []).append(span)
    for trace_spans in by_trace.values():
        record = _trace_record(trace_spans)
        if record is not None:
            first = min(trace_spans, key=lambda span: span.start)
            yield lines.get(first.span_id, 1), record
