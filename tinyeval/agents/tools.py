"""Tool checks: the tools a case called, and the trajectory of its conversation, in order.

The ``tools_*``, ``tool_args``, ``max_tool_calls``, ``max_repeats`` and ``no_tool_errors``
keys of an ``expect`` block come here through the door ``_EXTRAS["expect"]``; the
``build_*`` functions are their builders.

>>> from tinyeval.checks import run_checks
>>> run_checks("Listo", tools_required("lookup"), case={"tool_calls": ["lookup"]})
{'tools_required:lookup': True}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..checks import (
    CheckResult,
    CheckSpecError,
    NamedCheck,
    _describe,
    _expect_builder,
    _flag,
    _json_equal,
    _label,
    _names,
    _parse_json,
    _paths,
    _require_json_value,
    _require_limit,
    _require_text,
    _show,
    _whole,
)
from ..errors import InputError, did_you_mean, plural, shorten

if TYPE_CHECKING:  # loaded by the first case with a conversation or tool calls to read
    from .conversation import Conversation, ToolCall, ToolResult

__all__ = [
    "TOOLS_MATCH_MODES",
    "max_repeats",
    "max_tool_calls",
    "no_tool_errors",
    "tool_args",
    "tool_names",
    "tools_before",
    "tools_forbidden",
    "tools_match",
    "tools_required",
    "tools_sequence",
    "trajectory",
    "trajectory_results",
]


def _called_tools(case: Any) -> list[str] | CheckResult:
    """The case's tool names (its conversation's calls, then its tool_calls), or a failed
    result when there is no case at all."""
    calls = _tool_calls_of(case)
    if calls is _NO_CASE:
        return CheckResult(False, "no case given: tool checks read the case's tool_calls")
    conversation = _conversation_of(case)
    earlier = [call.name for call in conversation.tool_calls] if conversation else []
    return earlier + tool_names(calls)


def _tools_check(kind: str, names: tuple[str, ...], forbidden: bool) -> list[NamedCheck]:
    if not names:
        raise CheckSpecError("expected at least one tool name, got none", field=kind)
    for name in names:
        _require_text(name, kind)

    def make(tool: str) -> NamedCheck:
        def run(output: str, case: Any) -> CheckResult:
            called = _called_tools(case)
            if isinstance(called, CheckResult):
                return called
            times = called.count(tool)
            if forbidden:
                return CheckResult(times == 0, f"called {times} time(s)" if times else None)
            if times:
                return CheckResult(True)
            others = ", ".join(called) if called else "none"
            return CheckResult(False, f"not called (tools called: {others})")

        return NamedCheck(f"{kind}:{_label(tool)}", run)

    return [make(name) for name in names]


def tools_forbidden(*names: str) -> list[NamedCheck]:
    """``tools_forbidden:NAME`` per name: the case's ``tool_calls`` never call it.

    A case without ``tool_calls`` called no tools. Without a case at all the
    check fails, saying so: it cannot know.

    >>> from tinyeval.checks import run_checks
    >>> transfer = tools_forbidden("transfer")
    >>> calls = {"tool_calls": [{"type": "tool_use", "name": "transfer", "input": {}}]}
    >>> run_checks("Listo", transfer, case=calls), run_checks("Listo", transfer, case={})
    ({'tools_forbidden:transfer': False}, {'tools_forbidden:transfer': True})

    Raises :class:`CheckSpecError` when no name or an empty name is given.
    """
    return _tools_check("tools_forbidden", names, forbidden=True)


def tools_required(*names: str) -> list[NamedCheck]:
    """``tools_required:NAME`` per name: the case's ``tool_calls`` call it at least once.

    >>> from tinyeval.checks import run_checks_detailed
    >>> needed = tools_required("lookup_balance")
    >>> run_checks_detailed("ok", needed, case={"tool_calls": ["notify"]})
    {'tools_required:lookup_balance': CheckResult(passed=False,
                                                  detail='not called (tools called: notify)')}

    Raises :class:`CheckSpecError` when no name or an empty name is given.
    """
    return _tools_check("tools_required", names, forbidden=False)


# === Trajectory checks: the tool calls of a conversation, in order ===


def trajectory(case: Any) -> tuple[ToolCall, ...]:
    """Every tool call of a case, in order: its conversation's, then its ``tool_calls``.

    The conversation is the case's ``conversation`` (a :class:`Conversation`,
    as :func:`tinyeval.load` builds from ``messages``) or, for a plain dict,
    its ``messages`` list. ``tool_calls`` accepts every shape
    :func:`tool_names` reads; arguments given as JSON strings are parsed (a
    string that is not JSON is kept, with ``invalid_arguments`` set).

    >>> case = {"messages": [
    ...     {"role": "user", "content": "Refund A17"},
    ...     {"role": "assistant", "tool_calls": [
    ...         {"id": "c1", "function": {"name": "lookup_order", "arguments": '{"id": "A17"}'}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "paid"}],
    ...     "tool_calls": [{"type": "tool_use", "name": "issue_refund", "input": {"id": "A17"}}]}
    >>> [(call.name, call.arguments) for call in trajectory(case)]
    [('lookup_order', {'id': 'A17'}), ('issue_refund', {'id': 'A17'})]

    Raises :class:`CheckSpecError` for a tool call or message of a shape it
    does not recognise.
    """
    conversation = _conversation_of(case)
    calls = list(conversation.tool_calls) if conversation is not None else []
    raw = _tool_calls_of(case)
    if raw is _NO_CASE or raw is None:
        return tuple(calls)
    tool_names(raw)  # validates the shapes, with the entry number
    calls += [_as_tool_call(call, index) for index, call in enumerate(raw)]
    return tuple(calls)


def trajectory_results(case: Any) -> tuple[ToolResult, ...]:
    """Every tool result of a case's conversation, in order (none without a conversation).

    >>> case = {"messages": [{"role": "tool", "tool_call_id": "c1", "content": "oops",
    ...                       "is_error": True}]}
    >>> [(r.call_id, r.is_error) for r in trajectory_results(case)]
    [('c1', True)]
    """
    conversation = _conversation_of(case)
    return () if conversation is None else conversation.tool_results


def _conversation_of(case: Any) -> Conversation | None:
    from .conversation import Conversation, from_messages

    if case is None:
        return None
    if isinstance(case, Mapping):
        found = case.get("conversation")
        if found is None and case.get("messages") is not None:
            try:
                return from_messages(case["messages"], system=case.get("system"))
            except InputError as error:
                raise CheckSpecError(error.reason, field=error.field) from None
    else:
        found = getattr(case, "conversation", None)
    return found if isinstance(found, Conversation) else None


def _as_tool_call(call: Any, index: int) -> ToolCall:
    from .conversation import read_tool_calls

    try:
        (parsed,) = read_tool_calls([call])
    except InputError as error:
        raise CheckSpecError(f"entry {index}: {error.reason}", field="tool_calls") from None
    return parsed


def _names_text(names: Sequence[str]) -> str:
    return "[" + ", ".join(names) + "]"


def _trajectory_or_failure(case: Any) -> tuple[ToolCall, ...] | CheckResult:
    if case is None:
        return CheckResult(False, "no case given: trajectory checks read the case's tool calls")
    return trajectory(case)


def _require_names(names: Any, field: str, *, allow_empty: bool) -> list[str]:
    if isinstance(names, str) or not isinstance(names, list | tuple):
        raise CheckSpecError(f"expected a list of tool names, got {_describe(names)}", field=field)
    if not names and not allow_empty:
        raise CheckSpecError("expected at least one tool name, got an empty list", field=field)
    for index, name in enumerate(names):
        _require_text(name, f"{field}[{index}]")
    return list(names)


def tools_sequence(names: Sequence[str]) -> NamedCheck:
    """``tools_sequence``: the tools called are exactly ``names``, in this order.

    Every call counts, repeats included; ``[]`` means no tool may be called.

    >>> check = tools_sequence(["search", "refund"])
    >>> check("", {"tool_calls": ["search", "refund"]}).passed
    True
    >>> check("", {"tool_calls": ["search", "search", "refund"]}).detail
    'got [search, search, refund], expected [search, refund]'

    Raises :class:`CheckSpecError` unless ``names`` is a list of non-empty strings.
    """
    expected = _require_names(names, "tools_sequence", allow_empty=True)

    def run(output: str, case: Any) -> CheckResult:
        calls = _trajectory_or_failure(case)
        if isinstance(calls, CheckResult):
            return calls
        got = [call.name for call in calls]
        if got == expected:
            return CheckResult(True)
        return CheckResult(False, f"got {_names_text(got)}, expected {_names_text(expected)}")

    return NamedCheck("tools_sequence", run)


TOOLS_MATCH_MODES = ("strict", "unordered", "subset", "superset")


def _missing(wanted: Sequence[str], have: Sequence[str]) -> list[str]:
    """The names of ``wanted`` left over once each call in ``have`` covers one of them."""
    left = Counter(have)
    out = []
    for name in wanted:
        if left[name]:
            left[name] -= 1
        else:
            out.append(name)
    return out


def tools_match(tools: Sequence[str], mode: str = "strict") -> NamedCheck:
    """``tools_match``: the tool calls match the reference ``tools`` under ``mode``.

    The modes follow LangChain's agentevals trajectory match
    (``create_trajectory_match_evaluator``, ``trajectory_match_mode``), applied
    to tool names; arguments are checked apart, with :func:`tool_args`:

    - ``strict``: the same calls in the same order;
    - ``unordered``: the same calls in any order;
    - ``subset``: the agent called only tools of the reference (no extras);
    - ``superset``: the agent called at least the reference's tools (extras allowed).

    Calls are counted: a reference listing ``search`` twice needs two calls
    in ``unordered`` and ``superset``, and allows at most two in ``subset``.

    >>> reference = ["lookup_order", "issue_refund"]
    >>> tools_match(reference, "unordered")("", {"tool_calls": reference[::-1]}).passed
    True
    >>> tools_match(reference, "subset")("", {"tool_calls": ["lookup_order", "email"]}).detail
    'called [email], not in the reference [lookup_order, issue_refund]'
    >>> tools_match(reference, "superset")("", {"tool_calls": ["lookup_order"]}).detail
    'missing [issue_refund] of the reference [lookup_order, issue_refund]'

    Raises :class:`CheckSpecError` for an unknown mode or names that are not
    non-empty strings.
    """
    if mode not in TOOLS_MATCH_MODES:
        hint = did_you_mean(mode, TOOLS_MATCH_MODES) if isinstance(mode, str) else None
        shown = f"; did you mean {hint!r}?" if hint else ""
        raise CheckSpecError(
            f"expected a mode of {', '.join(TOOLS_MATCH_MODES)}, got {_describe(mode)}{shown}",
            field="tools_match.mode",
        )
    reference = _require_names(tools, "tools_match.tools", allow_empty=True)
    shown_reference = _names_text(reference)

    def run(output: str, case: Any) -> CheckResult:
        calls = _trajectory_or_failure(case)
        if isinstance(calls, CheckResult):
            return calls
        got = [call.name for call in calls]
        missing = _missing(reference, got)
        extra = _missing(got, reference)
        if mode == "strict":
            ok = got == reference
        elif mode == "unordered":
            ok = not missing and not extra
        elif mode == "subset":
            ok = not extra
        else:
            ok = not missing
        if ok:
            return CheckResult(True)
        if mode == "subset":
            return CheckResult(
                False, f"called {_names_text(extra)}, not in the reference {shown_reference}"
            )
        if mode == "superset":
            return CheckResult(
                False, f"missing {_names_text(missing)} of the reference {shown_reference}"
            )
        detail = f"got {_names_text(got)}, expected {shown_reference}"
        if mode == "unordered":
            detail += f" in any order (missing {_names_text(missing)}, extra {_names_text(extra)})"
        return CheckResult(False, detail)

    return NamedCheck("tools_match", run)


def tool_args(name: str, arguments: Mapping[str, Any]) -> NamedCheck:
    """``tool_args:NAME``: some call of ``name`` has these ``arguments`` (a subset match).

    Each key given must be among the call's arguments with an exactly equal
    JSON value (the same equality as :func:`equals`: ``"17"`` is not ``17``,
    ``true`` is not ``1``); the call may have other keys too. Nested objects
    must be equal as a whole. Arguments logged as a JSON string are parsed;
    a string that is not JSON matches nothing. The tool not being called fails.

    >>> refund = tool_args("issue_refund", {"order_id": "A17"})
    >>> calls = {"tool_calls": [{"function": {"name": "issue_refund",
    ...                                       "arguments": '{"order_id": "A17", "amount": 20}'}}]}
    >>> refund("", calls).passed
    True
    >>> refund("", {"tool_calls": [{"name": "issue_refund", "arguments": {"order_id": 17}}]}).detail
    'issue_refund called 1 time, never with {"order_id": "A17"}; got {"order_id": 17}'

    Raises :class:`CheckSpecError` for an empty name, or ``arguments`` that are
    not a non-empty object of JSON values.
    """
    _require_text(name, "tool_args")
    if not isinstance(arguments, Mapping) or not arguments:
        raise CheckSpecError(
            f"expected a non-empty object of arguments, got {_describe(arguments)}",
            field=f"tool_args.{name}",
        )
    _require_json_value(arguments, f"tool_args.{name}")
    wanted = dict(arguments)

    def matches_call(call: ToolCall) -> bool:
        given = call.arguments
        if call.invalid_arguments is not None or not isinstance(given, Mapping):
            return False
        return all(key in given and _json_equal(given[key], value) for key, value in wanted.items())

    def run(output: str, case: Any) -> CheckResult:
        calls = _trajectory_or_failure(case)
        if isinstance(calls, CheckResult):
            return calls
        mine = [call for call in calls if call.name == name]
        if not mine:
            others = _names_text([call.name for call in calls]) if calls else "none"
            return CheckResult(False, f"{name} not called (tools called: {others})")
        if any(matches_call(call) for call in mine):
            return CheckResult(True)
        seen = "; ".join(
            f"{_show(call.arguments)} ({call.invalid_arguments})"
            if call.invalid_arguments is not None
            else _show(call.arguments)
            for call in mine[:3]
        )
        more = f" and {len(mine) - 3} more" if len(mine) > 3 else ""
        times = plural(len(mine), "time")
        return CheckResult(
            False, f"{name} called {times}, never with {_show(wanted)}; got {seen}{more}"
        )

    return NamedCheck(f"tool_args:{_label(name)}", run)


def tools_before(first: str, then: str) -> NamedCheck:
    """``tools_before:FIRST,THEN``: no call of ``then`` comes before a call of ``first``.

    Precisely: when ``then`` is called, some call of ``first`` precedes its
    first call. A trajectory that never calls ``then`` passes (nothing came
    too early); require it with ``tools_required`` if it must happen.

    >>> order = tools_before("lookup_order", "issue_refund")
    >>> order("", {"tool_calls": ["lookup_order", "issue_refund"]}).passed
    True
    >>> order("", {"tool_calls": ["issue_refund", "lookup_order"]}).detail
    'issue_refund (call 1) came before any lookup_order (first at call 2)'
    >>> order("", {"tool_calls": ["issue_refund"]}).detail
    'issue_refund (call 1) came before any lookup_order (never called)'

    Raises :class:`CheckSpecError` for empty names or twice the same name.
    """
    _require_text(first, "tools_before")
    _require_text(then, "tools_before")
    if first == then:
        raise CheckSpecError(
            f"expected two different tools, got {first!r} twice", field="tools_before"
        )

    def run(output: str, case: Any) -> CheckResult:
        calls = _trajectory_or_failure(case)
        if isinstance(calls, CheckResult):
            return calls
        names = [call.name for call in calls]
        if then not in names:
            return CheckResult(True)
        position = names.index(then)
        if first in names[:position]:
            return CheckResult(True)
        later = f"first at call {names.index(first) + 1}" if first in names else "never called"
        return CheckResult(False, f"{then} (call {position + 1}) came before any {first} ({later})")

    return NamedCheck(f"tools_before:{_label(first)},{_label(then)}", run)


def max_tool_calls(n: int) -> NamedCheck:
    """``max_tool_calls``: at most ``n`` tool calls in the whole trajectory.

    >>> max_tool_calls(2)("", {"tool_calls": ["a", "b", "a"]}).detail
    '3 tool calls, more than 2: [a, b, a]'

    Raises :class:`CheckSpecError` unless ``n`` is an int >= 0.
    """
    limit = _require_limit(n, "max_tool_calls")

    def run(output: str, case: Any) -> CheckResult:
        calls = _trajectory_or_failure(case)
        if isinstance(calls, CheckResult):
            return calls
        if len(calls) <= limit:
            return CheckResult(True)
        names = _names_text([call.name for call in calls])
        return CheckResult(False, f"{plural(len(calls), 'tool call')}, more than {limit}: {names}")

    return NamedCheck("max_tool_calls", run)


def max_repeats(n: int) -> NamedCheck:
    """``max_repeats``: no call (same tool, equal arguments) is made more than ``n`` times.

    Arguments are compared with exact JSON equality; the same tool with other
    arguments is another call. ``max_repeats: 1`` forbids any exact repeat.

    >>> call = {"name": "lookup_order", "arguments": '{"order_id": "A17"}'}
    >>> max_repeats(1)("", {"tool_calls": [call, call]}).detail
    'lookup_order({"order_id":"A17"}) called 2 times, more than 1'
    >>> other = {"name": "lookup_order", "arguments": {"order_id": "B2"}}
    >>> max_repeats(1)("", {"tool_calls": [call, other]}).passed
    True

    Raises :class:`CheckSpecError` unless ``n`` is an int >= 1.
    """
    limit = _require_limit(n, "max_repeats")
    if limit < 1:
        raise CheckSpecError(
            "expected at least 1 (a call made once is not a repeat), got 0", field="max_repeats"
        )

    def run(output: str, case: Any) -> CheckResult:
        calls = _trajectory_or_failure(case)
        if isinstance(calls, CheckResult):
            return calls
        groups: list[tuple[ToolCall, int]] = []
        for call in calls:
            for index, (seen, count) in enumerate(groups):
                if seen.name == call.name and _json_equal(seen.arguments, call.arguments):
                    groups[index] = (seen, count + 1)
                    break
            else:
                groups.append((call, 1))
        worst = max(groups, key=lambda group: group[1], default=None)
        if worst is None or worst[1] <= limit:
            return CheckResult(True)
        call, count = worst
        shown = shorten(f"{call.name}({call.arguments_text()})", 80)
        return CheckResult(False, f"{shown} called {count} times, more than {limit}")

    return NamedCheck("max_repeats", run)


def _error_in(result: ToolResult) -> bool:
    if result.is_error:
        return True
    text = result.text.strip()
    if not text.startswith("{"):
        return False
    ok, value = _parse_json(text)
    if not ok or not isinstance(value, Mapping):
        return False
    flagged = value.get("error")
    return flagged not in (None, False, "", {}, [])


def no_tool_errors() -> NamedCheck:
    """``no_tool_errors``: no tool result in the conversation is an error.

    A result is an error when it is marked so (Anthropic ``is_error: true``,
    an OpenTelemetry tool span with error status) or when its content is a
    JSON object whose ``"error"`` key holds something (not null, false, ``""``,
    ``{}`` or ``[]``): ``{"error": "not found"}``, the usual OpenAI-side
    convention. Results come from the case's conversation; a case without
    one has no results and passes.

    >>> case = {"messages": [{"role": "tool", "tool_call_id": "c1", "name": "lookup_order",
    ...                       "content": '{"error": "timeout"}'}]}
    >>> no_tool_errors()("", case).detail
    'lookup_order returned an error: {"error": "timeout"}'
    """

    def run(output: str, case: Any) -> CheckResult:
        if case is None:
            return CheckResult(
                False, "no case given: trajectory checks read the case's tool results"
            )
        failed = [result for result in trajectory_results(case) if _error_in(result)]
        if not failed:
            return CheckResult(True)
        first = failed[0]
        who = first.name or first.call_id or "a tool"
        more = f" (and {plural(len(failed) - 1, 'other error')})" if len(failed) > 1 else ""
        return CheckResult(False, f"{who} returned an error: {shorten(first.text, 60)}{more}")

    return NamedCheck("no_tool_errors", run)


# === Reading tool calls ===


def tool_names(tool_calls: Iterable[Any] | None) -> list[str]:
    """The names of the tools called, in call order, from any supported shape.

    Accepted shapes, freely mixed: a plain name (``"transfer"``); OpenAI chat
    completions (``{"type": "function", "function": {"name": ..., "arguments": ...}}``);
    the older OpenAI ``{"name": ..., "arguments": ...}``; Anthropic
    (``{"type": "tool_use", "name": ..., "input": {...}}``); and objects with
    the same attributes (as the vendors' SDKs return). ``None`` means no call.

    >>> tool_names([
    ...     "lookup_balance",
    ...     {"type": "function", "function": {"name": "transfer", "arguments": "{}"}},
    ...     {"name": "notify", "arguments": "{}"},
    ...     {"type": "tool_use", "id": "toolu_1", "name": "audit", "input": {}},
    ... ])
    ['lookup_balance', 'transfer', 'notify', 'audit']
    >>> tool_names(None)
    []
    >>> tool_names([{"tool": "transfer"}])
    Traceback (most recent call last):
      ...
    tinyeval.checks.CheckSpecError: tool_calls: entry 0: expected a tool name, ...

    Raises :class:`CheckSpecError` (field ``tool_calls``) for a shape it does
    not recognise; it never guesses.
    """
    if tool_calls is None:
        return []
    if isinstance(tool_calls, str | bytes | Mapping) or not isinstance(tool_calls, Iterable):
        raise CheckSpecError(
            f"expected a list of tool calls, got {_describe(tool_calls)}", field="tool_calls"
        )
    return [_tool_name(call, index) for index, call in enumerate(tool_calls)]


_TOOL_SHAPES = (
    "a tool name, an OpenAI call {'function': {'name': ...}}, "
    "{'name': ..., 'arguments': ...} or an Anthropic {'type': 'tool_use', 'name': ...}"
)


def _tool_name(call: Any, index: int) -> str:
    if isinstance(call, str):
        name: Any = call
    else:
        function = _attribute(call, "function")
        name = _attribute(function if function is not None else call, "name")
    if not isinstance(name, str) or not name:
        raise CheckSpecError(
            f"entry {index}: expected {_TOOL_SHAPES}, got {_describe(call)}", field="tool_calls"
        )
    return name


def _attribute(obj: Any, key: str) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` for an object, None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    if obj is None or isinstance(obj, str | bytes | int | float | list | tuple):
        return None
    return getattr(obj, key, None)


_NO_CASE = object()


def _tool_calls_of(case: Any) -> Any:
    if case is None:
        return _NO_CASE
    if isinstance(case, Mapping):
        return case.get("tool_calls")
    return getattr(case, "tool_calls", None)


# === Builders of the expect keys ===


class _blame:
    """Re-raise a factory's CheckSpecError under the ``expect`` field it came from."""

    __slots__ = ("field",)

    def __init__(self, field: str) -> None:
        self.field = field

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if isinstance(error, CheckSpecError):
            raise CheckSpecError(error.reason, field=self.field) from None


def build_tools_sequence(value: Any, field: str) -> list[NamedCheck]:
    if isinstance(value, list | tuple):
        for index, name in enumerate(value):
            _require_text(name, f"{field}[{index}]")
    with _blame(field):
        return [tools_sequence(value)]


def build_tools_match(value: Any, field: str) -> list[NamedCheck]:
    shape = '{"tools": [...], "mode": "strict|unordered|subset|superset"}'
    if not isinstance(value, Mapping):
        raise CheckSpecError(f"expected {shape}, got {_describe(value)}", field=field)
    for key in value:
        if key not in ("tools", "mode"):
            hint = did_you_mean(str(key), ("tools", "mode"))
            shown = f"; did you mean {hint!r}?" if hint else f"; expected {shape}"
            raise CheckSpecError(f"unknown key {key!r}{shown}", field=f"{field}.{key}")
    if "tools" not in value:
        raise CheckSpecError(f'expected {shape}, got no "tools"', field=field)
    mode = value.get("mode", "strict")
    with _blame(f"{field}.mode"):
        if mode not in TOOLS_MATCH_MODES:
            tools_match([], mode)
    with _blame(f"{field}.tools"):
        return [tools_match(value["tools"], mode)]


def build_tools_before(value: Any, field: str) -> list[NamedCheck]:
    shape = "[first, then] or a list of such pairs"
    if not isinstance(value, list | tuple) or not value:
        raise CheckSpecError(f"expected {shape}, got {_describe(value)}", field=field)
    pairs = [value] if all(isinstance(item, str) for item in value) else list(value)
    built = []
    for index, pair in enumerate(pairs):
        subfield = field if pairs[0] is value else f"{field}[{index}]"
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise CheckSpecError(f"expected {shape}, got {_describe(pair)}", field=subfield)
        with _blame(subfield):
            built.append(tools_before(pair[0], pair[1]))
    return built


build_tools_forbidden = _expect_builder(tools_forbidden, _names)
build_tools_required = _expect_builder(tools_required, _names)
build_tool_args = _expect_builder(tool_args, _paths("arguments"))
build_max_tool_calls = _expect_builder(max_tool_calls, _whole)
build_max_repeats = _expect_builder(max_repeats, _whole)
build_no_tool_errors = _expect_builder(no_tool_errors, _flag)
