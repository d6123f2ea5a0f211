"""Chat conversations: OpenAI and Anthropic message lists read into one type.

Real logs of LLM features are message lists, not question/answer pairs.
:func:`from_messages` reads either vendor's shape (or a mix of them) into a
:class:`Conversation` of :class:`Turn` objects, so that checks, judges and the
labeling session all see the same thing:

- roles ``system`` (``developer`` is read as system), ``user``, ``assistant``
  and ``tool`` (the legacy OpenAI ``function`` role is read as tool);
- content as a string, ``null`` or a list of parts: text parts are joined
  with a line break, other parts are named in brackets (``[image]``,
  ``[audio]``, ``[file]``, ``[document]``...);
- OpenAI ``tool_calls`` (and the legacy ``function_call``) and Anthropic
  ``tool_use`` blocks become :class:`ToolCall` objects; arguments given as a
  JSON string are parsed, and a string that is not JSON is kept as text with
  :attr:`ToolCall.invalid_arguments` saying why;
- OpenAI ``role: "tool"`` messages and Anthropic ``tool_result`` blocks become
  :class:`ToolResult` objects in a ``tool`` turn (``is_error`` kept);
- the system prompt (Anthropic's top-level ``system`` and the system messages
  that open an OpenAI list) is kept apart in :attr:`Conversation.system`.

>>> conversation = from_messages([
...     {"role": "system", "content": "You are a support agent."},
...     {"role": "user", "content": "Where is order A17?"},
...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
...      "function": {"name": "lookup_order", "arguments": '{"order_id": "A17"}'}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
...     {"role": "assistant", "content": "It has shipped."},
... ])
>>> conversation.system, conversation.question, conversation.final_text
('You are a support agent.', 'Where is order A17?', 'It has shipped.')
>>> [(call.name, call.arguments) for call in conversation.tool_calls]
[('lookup_order', {'order_id': 'A17'})]

Every problem raises :class:`~tinyeval.errors.InputError` whose field names
the place, as in ``messages.3.content``. This module imports nothing of the
package but its errors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..checks import StrictJSONDecoder
from ..errors import InputError, describe_json, did_you_mean, json_problem

__all__ = [
    "ROLES",
    "Conversation",
    "JudgeParts",
    "ToolCall",
    "ToolResult",
    "Turn",
    "from_messages",
    "looks_like_messages",
    "read_tool_calls",
]

ROLES = ("system", "user", "assistant", "tool")
_ROLE_ALIASES = {"developer": "system", "function": "tool"}
_READ_ROLES = (*ROLES, *_ROLE_ALIASES)
_TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}
_PART_NAMES = {
    "image_url": "image",
    "input_image": "image",
    "image": "image",
    "input_audio": "audio",
    "audio": "audio",
    "input_file": "file",
    "file": "file",
    "document": "document",
}
Flavor = Literal["openai", "anthropic"]


# === The types ===


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool: its ``name``, parsed ``arguments`` and the call ``id``.

    ``arguments`` is the parsed JSON value (usually an object). When the log
    gave a string that is not JSON, the string is kept as it was and
    ``invalid_arguments`` says why it could not be parsed.

    >>> ToolCall("refund", {"order_id": "A17"}, "c1").to_dict()
    {'name': 'refund', 'arguments': {'order_id': 'A17'}, 'id': 'c1'}
    >>> bad = ToolCall("refund", "{order: A17", invalid_arguments="not JSON")
    >>> bad.to_dict()["invalid_arguments"]
    'not JSON'
    """

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None
    invalid_arguments: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The call as JSON: ``name``, ``arguments``, ``id`` (and ``invalid_arguments`` when set).

        >>> ToolCall("search", {"q": "x"}).to_dict()
        {'name': 'search', 'arguments': {'q': 'x'}, 'id': None}
        """
        data = {"name": self.name, "arguments": self.arguments, "id": self.id}
        if self.invalid_arguments is not None:
            data["invalid_arguments"] = self.invalid_arguments
        return data

    def arguments_text(self) -> str:
        """The arguments as compact JSON text (a string that was not JSON, as it was).

        >>> ToolCall("search", {"q": "x"}).arguments_text()
        '{"q":"x"}'
        """
        if self.invalid_arguments is not None and isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned: the ``call_id`` it answers, its ``text``, ``is_error``.

    ``name`` is the tool's name when it is known (given with the result, or
    found from the call with the same id).

    >>> ToolResult("c1", "not found", is_error=True, name="lookup_order").to_dict()["is_error"]
    True
    """

    call_id: str | None
    text: str
    is_error: bool = False
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON, keys ``call_id``, ``text``, ``is_error``, ``name``.

        >>> ToolResult(None, "ok").to_dict()
        {'call_id': None, 'text': 'ok', 'is_error': False, 'name': None}
        """
        return {
            "call_id": self.call_id,
            "text": self.text,
            "is_error": self.is_error,
            "name": self.name,
        }


@dataclass(frozen=True)
class Turn:
    """One message: ``role``, its ``text``, and the tool calls or results it carries.

    An assistant turn may have ``tool_calls`` (its text is then often empty);
    a tool turn has ``tool_results`` and, as ``text``, their texts joined.

    >>> Turn("user", "hola").to_dict()
    {'role': 'user', 'text': 'hola', 'tool_calls': [], 'tool_results': []}
    """

    role: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The turn as JSON: ``role``, ``text``, ``tool_calls``, ``tool_results``.

        >>> Turn("assistant", "", (ToolCall("search", {}),)).to_dict()["tool_calls"][0]["name"]
        'search'
        """
        return {
            "role": self.role,
            "text": self.text,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "tool_results": [result.to_dict() for result in self.tool_results],
        }


@dataclass(frozen=True)
class JudgeParts:
    """A conversation cut into what a judge is shown, each part plain text or None.

    ``system`` is the system prompt, ``earlier`` the turns before the last
    user turn, ``question`` the last user turn, ``steps`` what the assistant
    did between that question and its response (tool calls and results),
    ``response`` the response being judged. The caller neutralises and
    delimits them (see :meth:`Conversation.render_for_judge`).

    >>> from_messages([{"role": "user", "content": "Hi"}]).judge_parts(response="Hello").question
    'Hi'
    """

    system: str | None
    earlier: str | None
    question: str | None
    steps: str | None
    response: str | None

    def to_dict(self) -> dict[str, str | None]:
        """The parts as JSON, keys in the order they are shown.

        >>> list(JudgeParts(None, None, "Hi", None, "Hello").to_dict())
        ['system', 'earlier', 'question', 'steps', 'response']
        """
        return {
            "system": self.system,
            "earlier": self.earlier,
            "question": self.question,
            "steps": self.steps,
            "response": self.response,
        }


# Block names of render_for_judge, in the order they are shown.
JUDGE_BLOCKS = (
    ("system", "SYSTEM PROMPT"),
    ("earlier", "EARLIER TURNS"),
    ("question", "QUESTION"),
    ("steps", "AGENT STEPS"),
    ("response", "RESPONSE"),
)


@dataclass(frozen=True)
class Conversation:
    """A normalised conversation: the ``system`` prompt apart, then the ``turns`` in order.

    Read one with :func:`from_messages`. The last user turn is the
    :attr:`question`; when the conversation ends with an assistant turn,
    that turn is the response (:attr:`final_turn`, :attr:`final_text`).

    >>> c = from_messages([{"role": "user", "content": "Hi"},
    ...                    {"role": "assistant", "content": "Hello"}])
    >>> c.question, c.final_text, len(c.turns)
    ('Hi', 'Hello', 2)
    """

    system: str | None
    turns: tuple[Turn, ...]

    @classmethod
    def from_messages(cls, messages: Any, *, system: Any = None) -> Conversation:
        """Read a message list: the same as :func:`from_messages`.

        >>> Conversation.from_messages([{"role": "user", "content": "Hi"}]).question
        'Hi'
        """
        return from_messages(messages, system=system)

    def with_response(self, text: str, tool_calls: Sequence[Any] = ()) -> Conversation:
        """The conversation with an assistant turn added: ``text`` and ``tool_calls``.

        ``tool_calls`` may be in any shape :func:`read_tool_calls` reads, so a
        case's ``output`` and ``tool_calls`` make its response turn again.

        >>> c = from_messages([{"role": "user", "content": "Refund A17"}])
        >>> full = c.with_response("", [{"name": "issue_refund", "arguments": '{"id": "A17"}'}])
        >>> full.final_text, full.tool_calls[0].arguments
        ('', {'id': 'A17'})

        Raises :class:`~tinyeval.errors.InputError` for a tool call of an
        unknown shape.
        """
        if not isinstance(text, str):
            raise InputError(f"expected a string, got {describe_json(text)}", field="output")
        turn = Turn("assistant", text, read_tool_calls(tool_calls))
        return replace(self, turns=(*self.turns, turn))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every tool call across the turns, in order.

        >>> from_messages([{"role": "user", "content": "x"}]).tool_calls
        ()
        """
        return tuple(call for turn in self.turns for call in turn.tool_calls)

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        """Every tool result across the turns, in order.

        >>> from_messages([{"role": "tool", "tool_call_id": "c1", "content": "ok"}]).tool_results
        (ToolResult(call_id='c1', text='ok', is_error=False, name=None),)
        """
        return tuple(result for turn in self.turns for result in turn.tool_results)

    def _last_user_index(self) -> int | None:
        for index in range(len(self.turns) - 1, -1, -1):
            if self.turns[index].role == "user":
                return index
        return None

    @property
    def question(self) -> str | None:
        """The last user turn's text, or None when there is no user turn.

        >>> msgs = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        >>> from_messages(msgs).question
        'b'
        """
        index = self._last_user_index()
        return None if index is None else self.turns[index].text

    @property
    def earlier_turns(self) -> tuple[Turn, ...]:
        """The turns before the last user turn (the system prompt is apart, not here).

        >>> msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
        ...         {"role": "user", "content": "c"}]
        >>> [turn.text for turn in from_messages(msgs).earlier_turns]
        ['a', 'b']
        """
        index = self._last_user_index()
        return () if index is None else self.turns[:index]

    @property
    def final_turn(self) -> Turn | None:
        """The last turn when it is an assistant turn (the response), else None.

        A conversation that ends with a user or tool turn awaits its response.

        >>> from_messages([{"role": "user", "content": "a"}]).final_turn is None
        True
        """
        if self.turns and self.turns[-1].role == "assistant":
            return self.turns[-1]
        return None

    @property
    def final_text(self) -> str | None:
        """The response's text: ``""`` when it has only tool calls, None when there is none.

        >>> msgs = [{"role": "user", "content": "a"},
        ...         {"role": "assistant", "content": None,
        ...          "tool_calls": [{"function": {"name": "search", "arguments": "{}"}}]}]
        >>> from_messages(msgs).final_text
        ''
        """
        final = self.final_turn
        return None if final is None else final.text

    def without_final(self) -> Conversation:
        """The conversation without its response: what the model saw before answering.

        >>> msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        >>> len(from_messages(msgs).without_final().turns)
        1
        """
        if self.final_turn is None:
            return self
        return replace(self, turns=self.turns[:-1])

    def _steps(self) -> tuple[Turn, ...]:
        """The turns after the last user turn, the response excepted."""
        index = self._last_user_index()
        end = len(self.turns) - (1 if self.final_turn is not None else 0)
        start = 0 if index is None else index + 1
        return self.turns[start:end]

    def judge_parts(self, *, response: str | None = None) -> JudgeParts:
        """The conversation cut into the parts a judge is shown, as plain text.

        ``response`` replaces the final assistant turn as the response (a
        generated output); without it the final turn's text (and its tool
        calls) is the response, or None when the conversation has none.

        >>> msgs = [{"role": "system", "content": "Be brief."},
        ...         {"role": "user", "content": "Hours?"},
        ...         {"role": "assistant", "content": "9 to 5."},
        ...         {"role": "user", "content": "Saturday?"}]
        >>> parts = from_messages(msgs).judge_parts(response="Closed.")
        >>> parts.system, parts.earlier, parts.question, parts.response
        ('Be brief.', 'User: Hours?\\n\\nAssistant: 9 to 5.', 'Saturday?', 'Closed.')
        """
        steps = self._steps()
        earlier = self.earlier_turns
        final = self.final_turn
        if response is None and final is not None:
            response = _response_text(final)
        return JudgeParts(
            system=self.system,
            earlier=_render_turns(earlier) if earlier else None,
            question=self.question,
            steps=_render_turns(steps) if steps else None,
            response=response,
        )

    def render_for_judge(
        self, neutralize: Callable[[str], str], *, response: str | None = None
    ) -> str:
        """The conversation as ``<<<NAME>>>`` … ``<<<END NAME>>>`` blocks for a judge prompt.

        Blocks, each only when it has text: ``SYSTEM PROMPT``, ``EARLIER
        TURNS``, ``QUESTION`` (the last user turn), ``AGENT STEPS`` (tool
        calls and results after it) and ``RESPONSE``. Every text goes through
        ``neutralize`` first (pass :func:`tinyeval.judge.neutralize`), so no
        logged text can open or close a block. Never a JSON dump.

        >>> msgs = [{"role": "system", "content": "Be brief."},
        ...         {"role": "user", "content": "Hours?"}]
        >>> print(from_messages(msgs).render_for_judge(str, response="9 to 5."))
        <<<SYSTEM PROMPT>>>
        Be brief.
        <<<END SYSTEM PROMPT>>>
        <<<QUESTION>>>
        Hours?
        <<<END QUESTION>>>
        <<<RESPONSE>>>
        9 to 5.
        <<<END RESPONSE>>>
        """
        parts = self.judge_parts(response=response).to_dict()
        blocks = []
        for key, name in JUDGE_BLOCKS:
            text = parts[key]
            if text is not None:
                blocks.append(f"<<<{name}>>>\n{neutralize(text)}\n<<<END {name}>>>")
        return "\n".join(blocks)

    def render_for_labeling(self) -> str:
        """The conversation as plain text for a person to read: one paragraph a turn.

        >>> msgs = [{"role": "system", "content": "Be brief."},
        ...         {"role": "user", "content": "Hours?"},
        ...         {"role": "assistant", "content": "9 to 5."}]
        >>> print(from_messages(msgs).render_for_labeling())
        System: Be brief.
        <BLANKLINE>
        User: Hours?
        <BLANKLINE>
        Assistant: 9 to 5.
        """
        head = [f"System: {self.system}"] if self.system is not None else []
        body = _render_turns(self.turns)
        return "\n\n".join([*head, body] if body else head)

    def to_messages(self, flavor: Flavor = "openai") -> list[dict[str, Any]]:
        """The conversation as a vendor's message list, to send to a chat model.

        ``"openai"``: the system prompt is the first message, tool calls are
        ``tool_calls`` with JSON-string arguments, each tool result is a
        ``role: "tool"`` message. ``"anthropic"``: the system prompt is **not**
        in the list (send :attr:`system` as the request's top-level
        ``system``); tool calls are ``tool_use`` blocks and results
        ``tool_result`` blocks in a user message (consecutive results share
        one). System turns in the middle of a conversation are kept as
        ``system`` messages for OpenAI and folded into a user text block, marked
        ``[system]``, for Anthropic.

        >>> c = from_messages([{"role": "system", "content": "Be brief."},
        ...                    {"role": "user", "content": "Hours?"}])
        >>> c.to_messages()
        [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hours?'}]
        >>> c.to_messages("anthropic")
        [{'role': 'user', 'content': 'Hours?'}]

        Raises :class:`~tinyeval.errors.InputError` for another flavor.
        """
        if flavor == "openai":
            return _to_openai(self)
        if flavor == "anthropic":
            return _to_anthropic(self)
        raise InputError(
            f"expected 'openai' or 'anthropic', got {describe_json(flavor)}", field="flavor"
        )

    def to_dict(self) -> dict[str, Any]:
        """The conversation as JSON: ``system`` and ``turns``.

        >>> c = from_messages([{"role": "user", "content": "Hi"}], system="Be brief.")
        >>> c.to_dict()["system"]
        'Be brief.'
        """
        return {"system": self.system, "turns": [turn.to_dict() for turn in self.turns]}


# === Rendering ===

_ROLE_LABELS = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}


def _call_line(call: ToolCall) -> str:
    return f"called {call.name}({call.arguments_text()})"


def _response_text(turn: Turn) -> str:
    """An assistant turn as a response: its text, then its tool calls, one a line."""
    lines = [turn.text] if turn.text else []
    lines += [f"[{_call_line(call)}]" for call in turn.tool_calls]
    return "\n".join(lines)


def _render_turn(turn: Turn) -> str:
    if turn.role == "tool" and turn.tool_results:
        lines = []
        for result in turn.tool_results:
            who = result.name or result.call_id or "tool"
            error = " (error)" if result.is_error else ""
            lines.append(f"Tool result from {who}{error}: {result.text}")
        return "\n".join(lines)
    label = _ROLE_LABELS.get(turn.role, turn.role)
    lines = [f"{label}: {turn.text}"] if turn.text or not turn.tool_calls else []
    lines += [f"{label} {_call_line(call)}" for call in turn.tool_calls]
    return "\n".join(lines)


def _render_turns(turns: Sequence[Turn]) -> str:
    return "\n\n".join(_render_turn(turn) for turn in turns)


def _to_openai(conversation: Conversation) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if conversation.system is not None:
        messages.append({"role": "system", "content": conversation.system})
    for turn in conversation.turns:
        if turn.role == "tool" and turn.tool_results:
            for result in turn.tool_results:
                message: dict[str, Any] = {"role": "tool", "content": result.text}
                if result.call_id is not None:
                    message["tool_call_id"] = result.call_id
                messages.append(message)
            continue
        if turn.role == "assistant" and turn.tool_calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": turn.text or None,
                    "tool_calls": [
                        _openai_call(call, index) for index, call in enumerate(turn.tool_calls)
                    ],
                }
            )
            continue
        messages.append({"role": turn.role, "content": turn.text})
    return messages


def _openai_call(call: ToolCall, index: int) -> dict[str, Any]:
    return {
        "id": call.id if call.id is not None else f"call_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_text()},
    }


def _to_anthropic(conversation: Conversation) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in conversation.turns:
        if turn.role == "tool":
            blocks: list[dict[str, Any]] = [
                {
                    "type": "tool_result",
                    "tool_use_id": result.call_id or "",
                    "content": result.text,
                    **({"is_error": True} if result.is_error else {}),
                }
                for result in turn.tool_results
            ] or [{"type": "text", "text": turn.text}]
            if (
                messages
                and messages[-1]["role"] == "user"
                and isinstance(messages[-1]["content"], list)
            ):
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": "user", "content": blocks})
        elif turn.role == "assistant" and turn.tool_calls:
            content: list[dict[str, Any]] = (
                [{"type": "text", "text": turn.text}] if turn.text else []
            )
            content += [
                {
                    "type": "tool_use",
                    "id": call.id if call.id is not None else f"toolu_{index}",
                    "name": call.name,
                    "input": call.arguments if isinstance(call.arguments, Mapping) else {},
                }
                for index, call in enumerate(turn.tool_calls)
            ]
            messages.append({"role": "assistant", "content": content})
        elif turn.role == "system":
            messages.append({"role": "user", "content": f"[system] {turn.text}"})
        else:
            messages.append({"role": turn.role, "content": turn.text})
    return messages


# === Reading ===


def looks_like_messages(value: Any) -> bool:
    """Whether ``value`` is shaped like a chat message list: objects that all have a ``role``.

    >>> looks_like_messages([{"role": "user", "content": "hi"}]), looks_like_messages("hi")
    (True, False)
    """
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, Mapping) and "role" in item for item in value)
    )


def _fail(reason: str, where: str) -> InputError:
    return InputError(reason, field=where)


def _parse_arguments(raw: Any, where: str) -> tuple[Any, str | None]:
    """(arguments, invalid reason): a JSON string parsed, an object kept, absent as {}."""
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            return json.loads(raw, cls=StrictJSONDecoder), None
        except json.JSONDecodeError as exc:
            return raw, f"not valid JSON: {json_problem(exc)}"
        except ValueError as exc:  # NaN, Infinity, or an integer too long to read
            return raw, f"not valid JSON: {exc}"
        except RecursionError:
            return raw, "not valid JSON: nested too deeply to parse"
    if isinstance(raw, Mapping | list) or raw is True or raw is False:
        return _plain_json(raw, where), None
    if isinstance(raw, int | float):
        return raw, None
    raise _fail(
        f"expected a JSON string or an object of arguments, got {describe_json(raw)}", where
    )


def _plain_json(value: Any, where: str, depth: int = 0) -> Any:
    """``value`` as plain JSON (dicts and lists), refusing what JSON cannot hold."""
    if depth > 100:
        raise _fail("nested too deeply", where)
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise _fail(f"expected a finite number, got {value!r}", where)
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _fail(f"expected string keys, got {describe_json(key)}", where)
            out[key] = _plain_json(item, where, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_plain_json(item, where, depth + 1) for item in value]
    raise _fail(f"expected a JSON value, got {describe_json(value)}", where)


def _optional_id(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _fail(f"expected a string id, got {describe_json(value)}", where)


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(f"expected a tool name (a non-empty string), got {describe_json(value)}", where)
    return value


def _part_text(part: Any, where: str) -> str:
    """A content part that is not a tool block as text: its text, or its kind in brackets."""
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        raise _fail(
            f"expected a content part (an object with a type), got {describe_json(part)}", where
        )
    kind = part.get("type")
    if not isinstance(kind, str) or not kind:
        raise _fail(
            f'expected a content part with a "type", got {describe_json(kind)}', where + ".type"
        )
    key = _TEXT_PARTS.get(kind)
    if key is not None:
        text = part.get(key)
        if not isinstance(text, str):
            raise _fail(f"expected a string, got {describe_json(text)}", f"{where}.{key}")
        return text
    return f"[{_PART_NAMES.get(kind, kind)}]"


def _content_text(content: Any, where: str) -> str:
    """A content that holds no tool blocks: a string, null or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_part_text(part, f"{where}.{index}") for index, part in enumerate(content))
    raise _fail(
        f"expected a string, null or a list of content parts, got {describe_json(content)}", where
    )


def _openai_tool_call(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise _fail(f"expected a tool call object, got {describe_json(raw)}", where)
    function = raw.get("function")
    if function is None and "name" in raw:  # a flat {"name", "arguments"} call
        function, fwhere = raw, where
    elif isinstance(function, Mapping):
        fwhere = f"{where}.function"
    else:
        raise _fail(
            'expected {"function": {"name": ..., "arguments": ...}}, '
            f"got {describe_json(function)}",
            f"{where}.function",
        )
    name = _name(function.get("name"), f"{fwhere}.name")
    arguments, invalid = _parse_arguments(function.get("arguments"), f"{fwhere}.arguments")
    return ToolCall(name, arguments, _optional_id(raw.get("id"), f"{where}.id"), invalid)


def _tool_use(block: Mapping[str, Any], where: str) -> ToolCall:
    name = _name(block.get("name"), f"{where}.name")
    arguments, invalid = _parse_arguments(block.get("input"), f"{where}.input")
    return ToolCall(name, arguments, _optional_id(block.get("id"), f"{where}.id"), invalid)


def _is_error(value: Any, where: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    raise _fail(f"expected true or false, got {describe_json(value)}", where)


def _tool_result_block(
    block: Mapping[str, Any], where: str, names: Mapping[str, str]
) -> ToolResult:
    call_id = _optional_id(block.get("tool_use_id"), f"{where}.tool_use_id")
    text = _content_text(block.get("content"), f"{where}.content")
    return ToolResult(
        call_id,
        text,
        _is_error(block.get("is_error"), f"{where}.is_error"),
        names.get(call_id) if call_id is not None else None,
    )


def _block_type(part: Any) -> Any:
    return part.get("type") if isinstance(part, Mapping) else None


def _read_message(message: Any, where: str, names: dict[str, str]) -> list[Turn]:
    """One message as one turn (or, for an Anthropic user message with tool results, two)."""
    if not isinstance(message, Mapping):
        raise _fail(f'expected a message object with a "role", got {describe_json(message)}', where)
    role = message.get("role")
    if not isinstance(role, str) or role not in _READ_ROLES:
        hint = did_you_mean(role, _READ_ROLES) if isinstance(role, str) else None
        shown = f"; did you mean {hint!r}?" if hint else f"; expected one of {', '.join(ROLES)}"
        raise _fail(f"unknown role {describe_json(role)}{shown}", f"{where}.role")
    role = _ROLE_ALIASES.get(role, role)
    content = message.get("content")
    cwhere = f"{where}.content"

    if role == "tool":
        call_id = _optional_id(message.get("tool_call_id"), f"{where}.tool_call_id")
        given = message.get("name")
        name = given if isinstance(given, str) and given else None
        if name is None and call_id is not None:
            name = names.get(call_id)
        text = _content_text(content, cwhere)
        is_error = _is_error(message.get("is_error"), f"{where}.is_error")
        return [Turn("tool", text, (), (ToolResult(call_id, text, is_error, name),))]

    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    texts: list[str] = []
    if isinstance(content, list):
        for index, part in enumerate(content):
            pwhere = f"{cwhere}.{index}"
            kind = _block_type(part)
            if kind == "tool_use" and role == "assistant":
                calls.append(_tool_use(part, pwhere))
            elif kind == "tool_result" and role == "user":
                results.append(_tool_result_block(part, pwhere, names))
            elif kind in ("tool_use", "tool_result"):
                raise _fail(f"a {kind} block cannot be in a {role} message", f"{pwhere}.type")
            else:
                texts.append(_part_text(part, pwhere))
    else:
        texts.append(_content_text(content, cwhere))
    if role == "assistant":
        raw_calls = message.get("tool_calls")
        if raw_calls is not None:
            if not isinstance(raw_calls, list):
                raise _fail(
                    f"expected a list of tool calls, got {describe_json(raw_calls)}",
                    f"{where}.tool_calls",
                )
            calls += [
                _openai_tool_call(call, f"{where}.tool_calls.{i}")
                for i, call in enumerate(raw_calls)
            ]
        legacy = message.get("function_call")
        if legacy is not None:
            calls.append(_openai_tool_call({"function": legacy}, f"{where}.function_call"))
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal and not any(texts):
            texts = [refusal]
    for call in calls:
        if call.id is not None:
            names[call.id] = call.name
    text = "\n".join(text for text in texts if text)
    turns = []
    if results:
        turns.append(Turn("tool", "\n".join(r.text for r in results), (), tuple(results)))
        if text:
            turns.append(Turn("user", text))
        return turns
    return [Turn(role, text, tuple(calls))]


def read_tool_calls(calls: Any) -> tuple[ToolCall, ...]:
    """Tool calls in any logged shape as :class:`ToolCall` objects, in order.

    Shapes, freely mixed: a tool name; OpenAI ``{"function": {"name": ...,
    "arguments": ...}}``; ``{"name": ..., "arguments": ...}``; Anthropic
    ``{"type": "tool_use", "name": ..., "input": {...}}``; a :class:`ToolCall`;
    or an object with those attributes (as SDKs return). Arguments as JSON
    text are parsed; text that is not JSON is kept, with ``invalid_arguments``.

    >>> [(c.name, c.arguments) for c in read_tool_calls(
    ...     ["search", {"type": "tool_use", "name": "refund", "input": {"id": 1}}])]
    [('search', {}), ('refund', {'id': 1})]

    Raises :class:`~tinyeval.errors.InputError` (field ``tool_calls.N``) for
    another shape.
    """
    if calls is None:
        return ()
    if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Sequence):
        raise _fail(f"expected a list of tool calls, got {describe_json(calls)}", "tool_calls")
    return tuple(_any_tool_call(call, f"tool_calls.{i}") for i, call in enumerate(calls))


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    if obj is None or isinstance(obj, str | bytes | int | float | list | tuple):
        return None
    return getattr(obj, key, None)


def _any_tool_call(call: Any, where: str) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    if isinstance(call, str):
        return ToolCall(_name(call, where), {})
    function = _get(call, "function")
    holder, hwhere = (call, where) if function is None else (function, f"{where}.function")
    name = _name(_get(holder, "name"), f"{hwhere}.name")
    key = (
        "input"
        if _get(holder, "arguments") is None and _get(holder, "input") is not None
        else "arguments"
    )
    arguments, invalid = _parse_arguments(_get(holder, key), f"{hwhere}.{key}")
    return ToolCall(name, arguments, _optional_id(_get(call, "id"), f"{where}.id"), invalid)


def from_messages(messages: Any, *, system: Any = None) -> Conversation:
    """Read an OpenAI or Anthropic message list into a :class:`Conversation`.

    ``system`` is Anthropic's top-level system prompt (a string or a list of
    text blocks). It and the system messages that open the list form
    :attr:`Conversation.system`, joined by blank lines; a system message
    after the first other message stays a turn of its own.

    >>> c = from_messages(
    ...     [{"role": "user", "content": [{"type": "text", "text": "What is this?"},
    ...                                   {"type": "image", "source": {"type": "base64"}}]},
    ...      {"role": "assistant", "content": [
    ...          {"type": "tool_use", "id": "t1", "name": "classify", "input": {"kind": "photo"}}]},
    ...      {"role": "user", "content": [
    ...          {"type": "tool_result", "tool_use_id": "t1", "content": "timeout",
    ...           "is_error": True}]}],
    ...     system="You describe images.")
    >>> c.system, c.turns[0].text, c.tool_results[0].is_error, c.tool_results[0].name
    ('You describe images.', 'What is this?\\n[image]', True, 'classify')
    >>> from_messages([{"role": "usr", "content": "hi"}])
    Traceback (most recent call last):
      ...
    tinyeval.errors.InputError: messages.0.role: unknown role string "usr"; did you mean 'user'?

    Raises :class:`~tinyeval.errors.InputError` (field ``messages.N.…``) for
    anything that is not a message list of these shapes; it never guesses.
    """
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise _fail(f"expected a list of messages, got {describe_json(messages)}", "messages")
    if not messages:
        raise _fail("expected at least one message, got an empty list", "messages")
    system_parts: list[str] = []
    if system is not None:
        text = _content_text(system, "system")
        system_parts.append(text)
    names: dict[str, str] = {}
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        for turn in _read_message(message, f"messages.{index}", names):
            if turn.role == "system" and not turns:
                system_parts.append(turn.text)
            else:
                turns.append(turn)
    turns = [_named_results(turn, names) for turn in turns]
    return Conversation("\n\n".join(system_parts) if system_parts else None, tuple(turns))


def _named_results(turn: Turn, names: Mapping[str, str]) -> Turn:
    """Give results whose call came later in the list (out of order logs) their tool's name."""
    if not any(r.name is None and r.call_id in names for r in turn.tool_results):
        return turn
    results = tuple(
        replace(r, name=names[r.call_id])
        if r.name is None and r.call_id is not None and r.call_id in names
        else r
        for r in turn.tool_results
    )
    return replace(turn, tool_results=results)


def read_case_messages(record: dict[str, Any]) -> Conversation | None:
    """Read a case record's ``messages`` (or ``input`` message list) into a conversation.

    ``messages`` leaves the record (``input`` is set from it when absent). A closing assistant
    turn, when the case has no output, is split off: its text becomes the output, its tool
    calls the case's ``tool_calls``.

    >>> record = {"messages": [{"role": "user", "content": "hi"},
    ...                        {"role": "assistant", "content": "hello"}]}
    >>> conversation = read_case_messages(record)
    >>> record["output"], record["input"]
    ('hello', [{'role': 'user', 'content': 'hi'}])

    Raises :class:`~tinyeval.errors.InputError` naming the field for a list it cannot read,
    or a response given twice.
    """
    messages = record.pop("messages", None)
    if messages is None and not looks_like_messages(record.get("input")):
        return None
    system = record.get("system")
    if system is not None and not isinstance(system, str | list):
        raise InputError(
            "expected the system prompt as a string or a list of text blocks, got "
            f"{describe_json(system)}",
            field="system",
        )
    if messages is None:
        return _case_conversation(record.get("input"), system, "input")
    if not isinstance(messages, list):
        raise InputError(
            f"expected a list of chat messages, got {describe_json(messages)}", field="messages"
        )
    conversation = _case_conversation(messages, system, "messages")
    final = conversation.final_turn
    if final is not None and record.get("output") is not None:
        raise InputError(
            "the messages end with an assistant turn and the case has an output too; "
            "give the response once (leave it out of the messages, or drop the output)",
            field="messages",
        )
    if final is not None:
        conversation = conversation.without_final()
        messages = messages[:-1]
        record["output"] = final.text
        if final.tool_calls:
            if record.get("tool_calls") is not None:
                raise InputError(
                    "the messages end with an assistant turn that calls tools and the case has "
                    "tool_calls too; give the calls once",
                    field="tool_calls",
                )
            record["tool_calls"] = [call.to_dict() for call in final.tool_calls]
    if record.get("input") is None:
        record["input"] = messages
    return conversation


def _case_conversation(messages: Any, system: Any, key: str) -> Conversation:
    try:
        return from_messages(messages, system=system)
    except InputError as exc:
        place = exc.field or "messages"
        field = key + place.removeprefix("messages") if place.startswith("messages") else place
        raise InputError(exc.reason, field=field) from None
