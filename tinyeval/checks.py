"""Deterministic checks: named, cheap, exact, and run before any judge.

A check looks at one model output (and, for tool checks, at the case) and says
pass or fail, optionally with a short detail. Every check has a stable name,
which is the key of the result row's ``checks`` and ``check_details``.

A case's ``expect`` block becomes checks through :func:`checks_from_expect`:

=====================  ========================  ==============================================
``expect`` key         check name(s)             passes when
=====================  ========================  ==============================================
``valid_json: true``   ``valid_json``            the output parses as (strict) JSON
``fields: [p, ..]``    ``field:p`` per path      the JSON output has path ``p`` (null counts)
``equals: {p: v}``     ``equals:p`` per path     the value at ``p`` equals ``v`` exactly
``one_of: {p: [..]}``  ``one_of:p`` per path     the value at ``p`` exactly equals one of these
``range: {p: [a,b]}``  ``range:p`` per path      the value at ``p`` is a number in [a, b]
``contains``           ``contains:text``         the output contains the text
``not_contains``       ``not_contains:text``     the output does not contain the text
``regex``              ``regex:pattern``         ``re.search(pattern, output)`` finds a match
``not_regex``          ``not_regex:pattern``     ``re.search`` finds no match
``max_chars: n``       ``max_chars``             ``len(output) <= n`` (characters)
``max_words: n``       ``max_words``             ``len(output.split()) <= n``
``tools_forbidden``    ``tools_forbidden:name``  the case's tool calls never use ``name``
``tools_required``     ``tools_required:name``   the case's tool calls use ``name``
``tools_sequence``     ``tools_sequence``        the tools called are exactly these, in order
``tools_match``        ``tools_match``           the calls match a reference (agentevals modes)
``tools_before``       ``tools_before:a,b``      no call of ``b`` comes before a call of ``a``
``tool_args``          ``tool_args:name``        some call of ``name`` has these arguments
``max_tool_calls: n``  ``max_tool_calls``        at most ``n`` tool calls
``max_repeats: n``     ``max_repeats``           no call, with equal arguments, made > ``n`` times
``no_tool_errors``     ``no_tool_errors``        no tool result is an error
=====================  ========================  ==============================================

The tool checks read the case's tool calls in order: those of its
conversation (``messages``) first, then its ``tool_calls`` (see
:func:`trajectory`). The text checks read the output, which for a
conversation is the final assistant turn's text.

>>> checks = checks_from_expect({"valid_json": True, "equals": {"amount": 125050}})
>>> run_checks('{"amount": 1250.5}', checks)
{'valid_json': True, 'equals:amount': False}

The same checks can be made directly in Python (:func:`valid_json`,
:func:`equals`, ...) and your own functions become checks with :func:`check`.
:func:`run_checks` never lets a failing check stop the others: a check that
raises is recorded as failed, with the exception in its detail.

Every error in an ``expect`` block or in a check definition raises
:class:`CheckSpecError`, which names the field and says what was expected.
"""

from __future__ import annotations

import atexit
import difflib
import hashlib
import importlib
import inspect
import json
import math
import queue
import re
import subprocess
import sys
import threading
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeAlias, overload

from .conversation import Conversation, ToolCall, ToolResult, from_messages, read_tool_calls
from .errors import InputError, did_you_mean, plural, shorten

__all__ = [
    "EXPECT_KEYS",
    "CheckResult",
    "CheckSpecError",
    "NamedCheck",
    "check",
    "checks_from_expect",
    "contains",
    "equals",
    "get_path",
    "has_field",
    "has_fields",
    "in_range",
    "matches",
    "max_chars",
    "max_repeats",
    "max_tool_calls",
    "max_words",
    "no_tool_errors",
    "not_contains",
    "not_matches",
    "one_of",
    "run_checks",
    "run_checks_detailed",
    "tool_args",
    "tool_names",
    "tools_before",
    "tools_forbidden",
    "tools_match",
    "tools_required",
    "tools_sequence",
    "trajectory",
    "trajectory_results",
    "valid_json",
]


# === Errors and results ===


class CheckSpecError(InputError):
    """A wrong ``expect`` block or check definition.

    ``field`` names the culprit (``"expect.not_contain"``,
    ``"expect.range.amount"``); ``message`` says what was expected and what
    was got. ``str(error)`` is ``"FIELD: MESSAGE"``.

    >>> try:
    ...     checks_from_expect({"not_contain": ["1250.5"]})
    ... except CheckSpecError as error:
    ...     print(error.field)
    ...     print(error)
    expect.not_contain
    expect.not_contain: unknown key 'not_contain'; did you mean 'not_contains'?
    """

    @property
    def message(self) -> str:
        """What was expected and what was got (the message without the field)."""
        return self.reason


@dataclass(frozen=True)
class CheckResult:
    """What one check says: ``passed``, and optionally why (``detail``).

    >>> CheckResult(False, "got 1250.5, expected 125050")
    CheckResult(passed=False, detail='got 1250.5, expected 125050')

    Raises :class:`CheckSpecError` if ``passed`` is not a bool or ``detail``
    is neither a string nor None (a check must not pass by being truthy).
    """

    passed: bool
    detail: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.passed, bool):
            raise CheckSpecError(f"expected True or False, got {self.passed!r}", field="passed")
        if self.detail is not None and not isinstance(self.detail, str):
            raise CheckSpecError(f"expected a string or None, got {self.detail!r}", field="detail")


CheckOutcome: TypeAlias = "bool | CheckResult | tuple[bool, str]"
CheckFunction: TypeAlias = "Callable[..., CheckOutcome]"


class NamedCheck:
    """A check with a stable name; call it as ``check(output, case)``.

    ``func`` takes ``(output, case)``, or just ``(output)`` when it has no use
    for the case, and returns a bool, a :class:`CheckResult` or a
    ``(bool, detail)`` pair.

    >>> short = NamedCheck("short", lambda output: len(output) < 10)
    >>> short.name, short("hi"), short("a rather long answer")
    ('short', True, False)

    Raises :class:`CheckSpecError` for an empty name or a ``func`` that cannot
    be called.
    """

    __slots__ = ("_wants_case", "func", "name")

    def __init__(self, name: str, func: CheckFunction) -> None:
        if not isinstance(name, str) or not name.strip():
            raise CheckSpecError(f"expected a non-empty string, got {name!r}", field="name")
        if not callable(func):
            raise CheckSpecError(f"expected a callable, got {_describe(func)}", field=name)
        self.name = name
        self.func = func
        self._wants_case = _takes_two_arguments(func)

    def __call__(self, output: str, case: Any = None) -> CheckOutcome:
        if self._wants_case:
            return self.func(output, case)
        return self.func(output)

    def __repr__(self) -> str:
        return f"NamedCheck({self.name!r})"


def _takes_two_arguments(func: Callable[..., Any]) -> bool:
    """Whether ``func`` can be called with ``(output, case)`` rather than ``(output)``."""
    if isinstance(func, types.FunctionType):  # the common case, read without inspect's cost
        code = func.__code__
        return code.co_argcount >= 2 or bool(code.co_flags & inspect.CO_VARARGS)
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature: give them both
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    count = 0
    for parameter in parameters:
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            return True
        if parameter.kind in positional:
            count += 1
    return count >= 2


@overload
def check(func: CheckFunction, *, name: str | None = None) -> NamedCheck: ...
@overload
def check(
    func: None = None, *, name: str | None = None
) -> Callable[[CheckFunction], NamedCheck]: ...
def check(
    func: CheckFunction | None = None, *, name: str | None = None
) -> NamedCheck | Callable[[CheckFunction], NamedCheck]:
    """Turn a function into a :class:`NamedCheck`: ``@check`` or ``@check(name="...")``.

    The name defaults to the function's ``__name__``.

    >>> @check
    ... def mentions_payee(output, case):
    ...     return case["payee"] in output
    >>> @check(name="polite")
    ... def says_please(output):
    ...     return "please" in output.lower()
    >>> run_checks("Please pay Juan", [mentions_payee, says_please], case={"payee": "Juan"})
    {'mentions_payee': True, 'polite': True}
    """

    def decorate(function: CheckFunction) -> NamedCheck:
        return NamedCheck(name if name is not None else _name_of(function), function)

    return decorate if func is None else decorate(func)


def _name_of(func: Any) -> str:
    name = getattr(func, "__name__", None)
    if not isinstance(name, str):
        raise CheckSpecError(
            f"expected a function with a __name__, got {_describe(func)}; "
            "name it with check(func, name=...)",
            field="checks",
        )
    return name


# === Reading the output and the case ===


@lru_cache(maxsize=128)
def _parse_json(text: str) -> tuple[bool, Any]:
    """``(True, value)`` or ``(False, reason)``.

    Memoised, so the several JSON checks of one output parse it once. The
    parsed value is shared: checks must only read it.
    """
    try:
        return True, json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        reason = f"not valid JSON: {error}"
    except RecursionError:
        reason = "not valid JSON: nested too deeply to parse"
    if text.lstrip().startswith("```"):
        reason += " (the output is wrapped in a ``` code fence, which is not stripped)"
    return False, reason


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _split_path(path: str) -> list[str]:
    if not isinstance(path, str) or not path:
        raise CheckSpecError(
            f"expected a dotted path such as 'payee.name', got {path!r}", field="path"
        )
    segments = path.split(".")
    if not all(segments):
        raise CheckSpecError(f"expected no empty part in a dotted path, got {path!r}", field="path")
    return segments


def get_path(obj: Any, path: str) -> Any:
    """The value at a dotted ``path`` inside parsed JSON: ``"a.b.0.c"``.

    Each part is a key of an object, or the index (in digits) of an element
    of an array; a negative index counts from the end (``messages.-1`` is the
    last message). A key that itself contains a dot cannot be reached.

    >>> data = {"payee": {"name": "Juan", "accounts": [{"cbu": "0170"}]}}
    >>> get_path(data, "payee.name")
    'Juan'
    >>> get_path(data, "payee.accounts.0.cbu")
    '0170'
    >>> get_path({"messages": ["hola", "¿cuánto?"]}, "messages.-1")
    '¿cuánto?'
    >>> get_path(data, "payee.alias")
    Traceback (most recent call last):
      ...
    LookupError: no key 'alias' in 'payee'

    Raises :class:`LookupError` when the path is not there, and
    :class:`CheckSpecError` for a malformed path such as ``"a..b"``.
    """
    current = obj
    walked: list[str] = []
    for segment in _split_path(path):
        current = _step(current, segment, ".".join(walked))
        walked.append(segment)
    return current


def _step(container: Any, segment: str, where: str) -> Any:
    place = repr(where) if where else "the top level"
    inside = f"in {place}" if where else "at the top level"
    if isinstance(container, Mapping):
        if segment in container:
            return container[segment]
        raise LookupError(f"no key {segment!r} {inside}")
    if isinstance(container, Sequence) and not isinstance(container, str):
        digits = segment[1:] if segment.startswith("-") else segment
        if not (digits.isascii() and digits.isdigit()):
            raise LookupError(f"{place} is an array, and {segment!r} is not an index")
        index = int(segment)
        if -len(container) <= index < len(container):
            return container[index]
        raise LookupError(f"no index {index} {inside} (length {len(container)})")
    raise LookupError(f"{place} is {_json_type(container)}, not an object or an array")


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


# === Naming and describing ===

_NAME_TEXT_LIMIT = 40
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


def _label(text: str) -> str:
    """The text part of a check name: one line, at most ~40 characters, distinct per text.

    Short one-line texts are kept as they are. Longer ones, or ones with line
    breaks, keep their first 32 characters (control characters escaped), then
    ``…`` and 6 hex digits of the text's SHA-256, so the name is stable and
    two texts sharing a beginning still get different names.
    """
    if len(text) <= _NAME_TEXT_LIMIT and not _CONTROL_CHARACTER.search(text):
        return text
    escaped = _CONTROL_CHARACTER.sub(lambda m: m.group().encode("unicode_escape").decode(), text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{escaped[:32]}…{digest}"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _show(value: Any, limit: int = 60) -> str:
    """``value`` as JSON (so ``"125050"`` and ``125050`` look different), shortened."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return f"{_json_type(value)} {_show(value)}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# === Exact JSON equality ===


def _json_equal(actual: Any, expected: Any) -> bool:
    """Equality without Python's coercions: True is not 1, "1" is not 1.

    Numbers compare by value, so 125050 equals 125050.0 but not 1250.5.
    Arrays compare element by element, objects key by key.
    """
    if _is_number(expected) or _is_number(actual):  # _is_number excludes bool
        return _is_number(actual) and _is_number(expected) and actual == expected
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(map(_json_equal, actual, expected))
        )
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and actual.keys() == expected.keys()
            and all(_json_equal(actual[key], expected[key]) for key in expected)
        )
    return type(actual) is type(expected) and actual == expected


def _require_json_value(value: Any, field: str) -> None:
    """Reject values that can never be equal to parsed JSON (a check that can never pass)."""
    if value is None or isinstance(value, bool | str):
        return
    if _is_number(value):
        if isinstance(value, float) and not math.isfinite(value):
            raise CheckSpecError(f"expected a finite number, got {value!r}", field=field)
        return
    if isinstance(value, list | tuple):
        for item in value:
            _require_json_value(item, field)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CheckSpecError(f"expected string keys, got {key!r}", field=field)
            _require_json_value(item, field)
        return
    raise CheckSpecError(
        "expected a JSON value (null, true/false, number, string, array or object), "
        f"got {_describe(value)}",
        field=field,
    )


# === Check factories ===


def valid_json() -> NamedCheck:
    """``valid_json``: the output is one JSON value, with only whitespace around it.

    Strict: code fences are not stripped, and ``NaN``/``Infinity`` are not JSON.
    The detail gives the position of the first error.

    >>> run_checks_detailed(' {"amount": 125050}\\n', [valid_json()])
    {'valid_json': CheckResult(passed=True, detail=None)}
    >>> run_checks_detailed('{"amount": 125050', [valid_json()])["valid_json"].detail
    "not valid JSON: Expecting ',' delimiter: line 1 column 18 (char 17)"
    """

    def is_valid_json(output: str) -> CheckResult:
        ok, value = _parse_json(output)
        return CheckResult(True) if ok else CheckResult(False, value)

    return NamedCheck("valid_json", is_valid_json)


def _json_path_check(name: str, path: str, judge: Callable[[Any], CheckResult]) -> NamedCheck:
    """A check that parses the output, finds ``path`` and hands its value to ``judge``."""
    _split_path(path)

    def run(output: str) -> CheckResult:
        ok, parsed = _parse_json(output)
        if not ok:
            return CheckResult(False, parsed)
        try:
            value = get_path(parsed, path)
        except LookupError as error:
            return CheckResult(False, f"missing: {error}")
        return judge(value)

    return NamedCheck(f"{name}:{_label(path)}", run)


def has_field(path: str) -> NamedCheck:
    """``field:PATH``: the JSON output has ``path`` (a null value counts as present).

    >>> run_checks('{"payee": {"name": null}}', [has_field("payee.name"), has_field("amount")])
    {'field:payee.name': True, 'field:amount': False}
    """
    return _json_path_check("field", path, lambda value: CheckResult(True))


def has_fields(*paths: str) -> list[NamedCheck]:
    """One :func:`has_field` check per path, in order.

    >>> [c.name for c in has_fields("amount", "payee.name")]
    ['field:amount', 'field:payee.name']

    Raises :class:`CheckSpecError` when no path is given.
    """
    if not paths:
        raise CheckSpecError("expected at least one path, got none", field="fields")
    return [has_field(path) for path in paths]


def equals(path: str, value: Any) -> NamedCheck:
    """``equals:PATH``: the JSON value at ``path`` equals ``value`` exactly.

    Exact means no coercion: a boolean is never equal to a number, a string is
    never equal to a number, and numbers compare by value (125050 equals
    125050.0, not 1250.5). Arrays and objects compare element by element.

    >>> amount = equals("amount", 125050)
    >>> amount('{"amount": 125050}').passed, amount('{"amount": 125050.0}').passed
    (True, True)
    >>> amount('{"amount": 1250.5}').detail
    'got 1250.5, expected 125050'
    >>> amount('{"amount": "125050"}').detail
    'got "125050" (a string), expected 125050'

    Raises :class:`CheckSpecError` when ``value`` is not a JSON value.
    """
    _require_json_value(value, "equals")

    def judge(actual: Any) -> CheckResult:
        if _json_equal(actual, value):
            return CheckResult(True)
        return CheckResult(False, f"got {_show_typed(actual, value)}, expected {_show(value)}")

    return _json_path_check("equals", path, judge)


def _show_typed(actual: Any, expected: Any) -> str:
    """The actual value, with its JSON type when that is what differs."""
    if _json_type(actual) == _json_type(expected):
        return _show(actual)
    return f"{_show(actual)} ({_json_type(actual)})"


def one_of(path: str, values: Sequence[Any]) -> NamedCheck:
    """``one_of:PATH``: the JSON value at ``path`` exactly equals one of ``values``.

    >>> currency = one_of("currency", ["ARS", "USD"])
    >>> currency('{"currency": "ARS"}').passed, currency('{"currency": "ars"}').detail
    (True, 'got "ars", expected one of ["ARS", "USD"]')

    Raises :class:`CheckSpecError` for an empty list, or values that are not JSON.
    """
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence):
        raise CheckSpecError(
            f"expected a list of allowed values, got {_describe(values)}", field="one_of"
        )
    if not values:
        raise CheckSpecError(
            "expected at least one allowed value, got an empty list", field="one_of"
        )
    _require_json_value(values, "one_of")
    allowed = list(values)

    def judge(actual: Any) -> CheckResult:
        if any(_json_equal(actual, value) for value in allowed):
            return CheckResult(True)
        return CheckResult(False, f"got {_show(actual)}, expected one of {_show(allowed)}")

    return _json_path_check("one_of", path, judge)


def in_range(path: str, low: float | None, high: float | None) -> NamedCheck:
    """``range:PATH``: the JSON value at ``path`` is a number with ``low <= value <= high``.

    ``None`` leaves that end open. A boolean or a numeric string is not a number.

    >>> amount = in_range("amount", 1, 1_000_000)
    >>> amount('{"amount": 125050}').passed, amount('{"amount": "125050"}').detail
    (True, 'got "125050" (a string), expected a number')
    >>> in_range("amount", 0, None)('{"amount": -5}').detail
    'got -5, expected 0 <= value'

    Raises :class:`CheckSpecError` for a bound that is not a finite number or
    ``None``, or ``low > high``.
    """
    for bound in (low, high):
        if bound is not None and not (_is_number(bound) and math.isfinite(bound)):
            raise CheckSpecError(
                f"expected [min, max] numbers (null for an open end), got {_describe(bound)}",
                field="range",
            )
    if low is not None and high is not None and low > high:
        raise CheckSpecError(f"expected min <= max, got [{low}, {high}]", field="range")
    wanted = " <= ".join(part for part in (_bound(low), "value", _bound(high)) if part)

    def judge(actual: Any) -> CheckResult:
        if not _is_number(actual):
            return CheckResult(
                False, f"got {_show(actual)} ({_json_type(actual)}), expected a number"
            )
        if (low is None or low <= actual) and (high is None or actual <= high):
            return CheckResult(True)
        return CheckResult(False, f"got {_show(actual)}, expected {wanted}")

    return _json_path_check("range", path, judge)


def _bound(value: float | None) -> str:
    return "" if value is None else _show(value)


def _require_text(text: Any, field: str) -> str:
    if not isinstance(text, str) or not text:
        raise CheckSpecError(f"expected a non-empty string, got {_describe(text)}", field=field)
    return text


def contains(text: str) -> NamedCheck:
    """``contains:TEXT``: the output contains ``text`` (case-sensitive, as written).

    >>> says_amount = contains("$1.250,50")
    >>> says_amount.name, says_amount("Transferiré $1.250,50 a Juan")
    ('contains:$1.250,50', CheckResult(passed=True, detail=None))

    Raises :class:`CheckSpecError` for an empty or non-string ``text``.
    """
    _require_text(text, "contains")

    def run(output: str) -> CheckResult:
        return CheckResult(True) if text in output else CheckResult(False, "not found")

    return NamedCheck(f"contains:{_label(text)}", run)


def not_contains(text: str) -> NamedCheck:
    """``not_contains:TEXT``: the output does not contain ``text`` (case-sensitive).

    >>> wrong = not_contains("1250.5")
    >>> wrong("Transferiré $1.250,50").passed, wrong("Transferiré 1250.50").detail
    (True, 'found at character 12')

    Raises :class:`CheckSpecError` for an empty or non-string ``text``.
    """
    _require_text(text, "not_contains")

    def run(output: str) -> CheckResult:
        position = output.find(text)
        if position < 0:
            return CheckResult(True)
        return CheckResult(False, f"found at character {position}")

    return NamedCheck(f"not_contains:{_label(text)}", run)


# --- bounding user regexes ---
#
# Python's re backtracks, so a pattern such as ``^(a+)+$`` takes exponential
# time on "aaaa...ab", and even ``\s+$`` is quadratic on a long run of spaces.
# A thread running re cannot be stopped, so tinyeval bounds user regexes twice:
#
# 1. at build time it refuses the exponential shapes it can recognise exactly
#    (an unbounded quantifier over something that itself holds an unbounded
#    quantifier, and an unbounded quantifier over alternatives that can start
#    with the same character), pointing to possessive quantifiers and atomic
#    groups, which do not backtrack;
# 2. at run time a pattern with any unbounded quantifier is matched in a small
#    worker process under a time budget; past it the worker is killed (and
#    replaced on the next call) and the check fails, saying so. Patterns without
#    one are linear in the output and run in-process.

REGEX_TIMEOUT = 2.0
"""Seconds a user regex may take on one output before its check fails."""

# the parser behind re.compile: private, so tinyeval only reads the tree it builds
_sre_parser: Any
_sre_constants: Any
try:
    _sre_parser = importlib.import_module("re._parser")
    _sre_constants = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - a Python without it skips the build-time refusal
    _sre_parser = None

_UNBOUNDED = 1 << 16  # a {m,n} quantifier with n above this counts as unbounded


def _walk_subpatterns(value: Any) -> Iterator[Any]:
    """Every nested parsed sub-sequence inside one node's argument."""
    if isinstance(value, _sre_parser.SubPattern):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk_subpatterns(item)


def _has_unbounded(sequence: Any) -> bool:
    """Whether a parsed sequence holds a backtracking unbounded quantifier."""
    for op, argument in sequence:
        if (
            op in (_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT)
            and argument[1] > _UNBOUNDED
        ):
            return True
        if op in (_sre_constants.ATOMIC_GROUP, _sre_constants.POSSESSIVE_REPEAT):
            continue  # neither gives back what it matched
        if any(_has_unbounded(sub) for sub in _walk_subpatterns(argument)):
            return True
    return False


def _first_items(sequence: Any) -> list[tuple[Any, Any]] | None:
    """What the first character a sequence matches can be; None when unknown."""
    items: list[tuple[Any, Any]] = []
    for op, argument in sequence:
        if op is _sre_constants.AT:
            continue
        if op in (_sre_constants.LITERAL, _sre_constants.NOT_LITERAL, _sre_constants.ANY):
            return [*items, (op, argument)]
        if op is _sre_constants.IN:
            return [*items, (op, argument)]
        if op is _sre_constants.SUBPATTERN:
            inner = _first_items(argument[3])
            return None if inner is None else items + inner
        if op is _sre_constants.ATOMIC_GROUP:
            inner = _first_items(argument)
            return None if inner is None else items + inner
        if op in (
            _sre_constants.MAX_REPEAT,
            _sre_constants.MIN_REPEAT,
            _sre_constants.POSSESSIVE_REPEAT,
        ):
            inner = _first_items(argument[2])
            if inner is None:
                return None
            items += inner
            if argument[0] > 0:
                return items
            continue
        if op is _sre_constants.BRANCH:
            for alternative in argument[1]:
                inner = _first_items(alternative)
                if inner is None:
                    return None
                items += inner
            return items  # an empty alternative is ignored: a slight under-estimate
        return None  # a back-reference, a lookaround, a conditional: not followed
    return items


_CATEGORY_TESTS = {
    "CATEGORY_DIGIT": re.compile(r"\d"),
    "CATEGORY_NOT_DIGIT": re.compile(r"\D"),
    "CATEGORY_SPACE": re.compile(r"\s"),
    "CATEGORY_NOT_SPACE": re.compile(r"\S"),
    "CATEGORY_WORD": re.compile(r"\w"),
    "CATEGORY_NOT_WORD": re.compile(r"\W"),
}


def _in_class(items: Any, code: int) -> bool:
    negate = False
    found = False
    for op, argument in items:
        if op is _sre_constants.NEGATE:
            negate = True
        elif op is _sre_constants.LITERAL:
            found = found or argument == code
        elif op is _sre_constants.RANGE:
            found = found or argument[0] <= code <= argument[1]
        elif op is _sre_constants.CATEGORY:
            test = _CATEGORY_TESTS.get(str(argument))
            found = found or test is None or test.match(chr(code)) is not None
        else:
            found = True  # a class item not modelled here: assume it may match
    return found != negate


def _may_start_with(item: tuple[Any, Any], code: int) -> bool:
    op, argument = item
    if op is _sre_constants.LITERAL:
        return bool(argument == code)
    if op is _sre_constants.NOT_LITERAL:
        return bool(argument != code)
    if op is _sre_constants.IN:
        return _in_class(argument, code)
    return True  # ANY


def _codes_in(value: Any) -> Iterator[int]:
    """Every literal code point and range end in a parsed tree (the overlap samples)."""
    if isinstance(value, (list, tuple, _sre_parser.SubPattern)):
        items = list(value)
        literal = (_sre_constants.LITERAL, _sre_constants.NOT_LITERAL)
        if len(items) == 2 and items[0] in literal and isinstance(items[1], int):
            yield items[1]
            return
        if len(items) == 2 and items[0] is _sre_constants.RANGE:
            yield from items[1]
            return
        for item in items:
            yield from _codes_in(item)


def _overlap(first: list[tuple[Any, Any]], second: list[tuple[Any, Any]], samples: Any) -> bool:
    return any(
        any(_may_start_with(a, code) for a in first)
        and any(_may_start_with(b, code) for b in second)
        for code in samples
    )


def _ambiguous_branch(sequence: Any, samples: Any) -> bool:
    """Whether a sequence holds alternatives that can start with the same character."""
    for op, argument in sequence:
        if op is _sre_constants.BRANCH:
            alternatives = [list(alternative) for alternative in argument[1]]
            firsts = [_first_items(alternative) for alternative in alternatives]
            for i in range(len(alternatives)):
                for j in range(i + 1, len(alternatives)):
                    if alternatives[i] == alternatives[j]:
                        return True  # the same alternative twice: (a|a)
                    first, second = firsts[i], firsts[j]
                    if not first or not second:
                        continue  # an empty or unknown start: not claimed ambiguous
                    if _overlap(first, second, samples):
                        return True
        if op in (_sre_constants.ATOMIC_GROUP, _sre_constants.POSSESSIVE_REPEAT):
            continue
        if any(_ambiguous_branch(sub, samples) for sub in _walk_subpatterns(argument)):
            return True
    return False


_SINGLE = ("LITERAL", "NOT_LITERAL", "IN", "ANY")


def _char_items(sequence: Any) -> list[tuple[Any, Any]]:
    """Every single-character item anywhere in a parsed sequence."""
    found: list[tuple[Any, Any]] = []
    for op, argument in sequence:
        if str(op) in _SINGLE:
            found.append((op, argument))
        for sub in _walk_subpatterns(argument):
            found += _char_items(sub)
    return found


def _mandatory_items(sequence: Any) -> list[tuple[Any, Any]]:
    """The single characters a sequence must match outside its unbounded quantifiers."""
    found: list[tuple[Any, Any]] = []
    for op, argument in sequence:
        if str(op) in _SINGLE:
            found.append((op, argument))
        elif op is _sre_constants.SUBPATTERN:
            found += _mandatory_items(argument[3])
        elif op is _sre_constants.MAX_REPEAT and argument[0] >= 1 and argument[1] <= _UNBOUNDED:
            found += _mandatory_items(argument[2])
    return found


def _flatten(sequence: Any) -> Iterator[tuple[Any, Any]]:
    for op, argument in sequence:
        if op is _sre_constants.SUBPATTERN:
            yield from _flatten(argument[3])
        else:
            yield op, argument


def _separated(body: Any, samples: Any) -> bool:
    """Whether each pass of a repeated body must match a character its inner
    unbounded quantifiers cannot, as the comma in ``(\\d+,)*``: then the
    passes cannot trade characters and there is one way to match."""
    items = list(_flatten(body))
    inner: list[tuple[Any, Any]] = []
    for op, argument in items:
        if (
            op in (_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT)
            and argument[1] > _UNBOUNDED
        ):
            inner += _char_items(argument[2])
        elif op is _sre_constants.BRANCH and _has_unbounded([(op, argument)]):
            if len(items) > 1 or not all(_separated(alt, samples) for alt in argument[1]):
                return False
        elif _has_unbounded([(op, argument)]):
            return False  # an unbounded quantifier deeper in: not analysed
    if not inner:
        return True
    return any(
        not any(_may_start_with(item, code) and _may_start_with(other, code) for code in samples)
        for item in _mandatory_items(items)
        for other in inner
    )


def _exponential_shape(sequence: Any, samples: Any) -> str | None:
    """Why a parsed pattern can backtrack exponentially, or None."""
    for op, argument in sequence:
        if op in (_sre_constants.ATOMIC_GROUP, _sre_constants.POSSESSIVE_REPEAT):
            continue
        unbounded = op in (_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT)
        if unbounded and argument[1] > _UNBOUNDED:
            body = argument[2]
            if _has_unbounded(body) and not _separated(body, samples):
                return "it nests an unbounded quantifier inside another, as in (a+)+"
            if _ambiguous_branch(body, samples):
                return (
                    "it repeats, without bound, alternatives that can match the same"
                    " text, as in (a|a)* or (ab|a.)*"
                )
        for sub in _walk_subpatterns(argument):
            why = _exponential_shape(sub, samples)
            if why:
                return why
    return None


def _refuse_exponential(compiled: re.Pattern[str], field: str) -> None:
    if _sre_parser is None:  # pragma: no cover
        return
    parsed = _sre_parser.parse(compiled.pattern, compiled.flags & ~re.UNICODE)
    samples = sorted({*range(128), 0xA0, 0xE9, 0x0661, 0x4E2D, *_codes_in(parsed)})
    why = _exponential_shape(parsed, samples)
    if why:
        raise CheckSpecError(
            f"regex {compiled.pattern!r} can take exponential time: {why}; make the inner"
            " part possessive (a++, a*+) or atomic ((?>...)), or drop one quantifier",
            field=field,
        )


def _can_backtrack(compiled: re.Pattern[str]) -> bool:
    if _sre_parser is None:  # pragma: no cover
        return True
    return _has_unbounded(_sre_parser.parse(compiled.pattern, compiled.flags & ~re.UNICODE))


_WORKER_SOURCE = """
import json, re, sys
cache = {}
for line in sys.stdin:
    pattern, flags, text = json.loads(line)
    key = (pattern, flags)
    if key not in cache:
        cache.clear() if len(cache) > 256 else None
        cache[key] = re.compile(pattern, flags)
    found = cache[key].search(text)
    reply = None if found is None else [found.start(), found.end()]
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""


class _RegexWorker:
    """One process that runs searches; killed and replaced when one overruns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WORKER_SOURCE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                encoding="utf-8",
                errors="surrogatepass",
            )
        return self._process

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with suppress(OSError):
                        stream.close()

    def search(
        self, compiled: re.Pattern[str], text: str, timeout: float
    ) -> tuple[int, int] | None:
        """``(start, end)`` of the first match, None without one; TimeoutError past ``timeout``."""
        request = json.dumps([compiled.pattern, compiled.flags, text]) + "\n"
        with self._lock:
            process = self._start()
            assert process.stdin is not None and process.stdout is not None
            replies: queue.SimpleQueue[str] = queue.SimpleQueue()
            stdout = process.stdout

            def read() -> None:
                try:
                    replies.put(stdout.readline())
                except (OSError, ValueError):
                    replies.put("")

            try:
                process.stdin.write(request)
                process.stdin.flush()
            except OSError:
                self._kill()
                raise TimeoutError("the regex worker stopped") from None
            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            try:
                reply = replies.get(timeout=timeout)
            except queue.Empty:
                self._kill()
                raise TimeoutError(f"no result within {timeout:g} s") from None
            if not reply:
                self._kill()
                raise TimeoutError("the regex worker stopped")
        found = json.loads(reply)
        return None if found is None else (found[0], found[1])


_WORKER = _RegexWorker()
atexit.register(_WORKER._kill)


def _bounded_search(
    compiled: re.Pattern[str], backtracks: bool, output: str, timeout: float
) -> tuple[int, int] | str | None:
    """``(start, end)``, None, or why the search was stopped (a check detail)."""
    if not backtracks:
        found = compiled.search(output)
        return None if found is None else found.span()
    try:
        return _WORKER.search(compiled, output, timeout)
    except TimeoutError as error:
        return (
            f"regex stopped on an output of {len(output):,} characters: {error};"
            " the pattern backtracks too much on it"
        )
    except OSError:  # no interpreter to start a worker with: run in-process, unbounded
        found = compiled.search(output)
        return None if found is None else found.span()


def _compile(pattern: str | re.Pattern[str], field: str) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        if not pattern.pattern:
            raise CheckSpecError("expected a non-empty regex, got an empty one", field=field)
        compiled = pattern
    else:
        _require_text(pattern, field)
        try:
            compiled = re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as error:
            raise CheckSpecError(f"invalid regex {pattern!r}: {error}", field=field) from None
    if not isinstance(compiled.pattern, str):
        raise CheckSpecError("expected a text regex, got a bytes one", field=field)
    _refuse_exponential(compiled, field)
    return compiled


def _require_timeout(timeout: Any, field: str) -> float:
    if not _is_number(timeout) or not 0 < timeout < math.inf:
        raise CheckSpecError(f"expected a positive number of seconds, got {timeout!r}", field=field)
    return float(timeout)


def matches(pattern: str | re.Pattern[str], *, timeout: float = REGEX_TIMEOUT) -> NamedCheck:
    """``regex:PATTERN``: ``re.search(pattern, output)`` finds a match.

    No flags are added: write ``(?i)`` for case-insensitive, ``(?m)`` to make
    ``^``/``$`` match at each line, ``(?s)`` to let ``.`` match a line break.

    >>> cbu = matches(r"\\b\\d{22}\\b")
    >>> cbu.name, cbu("CBU 0170099220000067797370").passed, cbu("no CBU").detail
    ('regex:\\\\b\\\\d{22}\\\\b', True, 'no match')

    A user regex can never hang a run. Python's :mod:`re` backtracks, so some
    patterns take exponential time on some outputs (``^(a+)+$`` on 34 a's and a
    ``b`` runs for hours) and a thread running one cannot be stopped. So:

    * the pattern is refused when it is built (:class:`CheckSpecError`) if it
      has a shape known to backtrack exponentially: an unbounded quantifier
      around something that holds another one (``(a+)+``, ``(a*)*``,
      ``(\\w+\\s?)*``), or around alternatives that can start with the same
      character (``(a|a)*``, ``(\\w|-\\d)+``). Possessive quantifiers
      (``a++``) and atomic groups (``(?>...)``) do not backtrack and are
      accepted;
    * a pattern with any unbounded quantifier (``*``, ``+``, ``{n,}``) is run in
      a worker process under a time budget of ``timeout`` seconds (default
      :data:`REGEX_TIMEOUT`, 2 s); past it the worker is killed and the check
      fails with a detail saying why. Patterns without one take time linear in
      the output and run in-process.

    >>> matches(r"^(a+)+$")
    Traceback (most recent call last):
    ...
    tinyeval.checks.CheckSpecError: regex: regex '^(a+)+$' can take exponential time: ...

    Raises :class:`CheckSpecError` for an empty or invalid pattern (with
    :mod:`re`'s message), or one of the shapes above.
    """
    compiled = _compile(pattern, "regex")
    budget = _require_timeout(timeout, "timeout")
    backtracks = _can_backtrack(compiled)

    def run(output: str) -> CheckResult:
        found = _bounded_search(compiled, backtracks, output, budget)
        if isinstance(found, str):
            return CheckResult(False, found)
        return CheckResult(True) if found is not None else CheckResult(False, "no match")

    return NamedCheck(f"regex:{_label(compiled.pattern)}", run)


def not_matches(pattern: str | re.Pattern[str], *, timeout: float = REGEX_TIMEOUT) -> NamedCheck:
    """``not_regex:PATTERN``: ``re.search(pattern, output)`` finds no match.

    >>> no_dot_decimal = not_matches(r"\\d\\.\\d{2}\\b")
    >>> no_dot_decimal("$1.250,50").passed, no_dot_decimal("$1250.50").detail
    (True, "matched '0.50' at character 4")

    The pattern is bounded as in :func:`matches`: refused when it can take
    exponential time, and run under ``timeout`` seconds when it can backtrack;
    a search stopped by the budget fails the check.

    Raises :class:`CheckSpecError` for an empty or invalid pattern, or one that
    can take exponential time.
    """
    compiled = _compile(pattern, "not_regex")
    budget = _require_timeout(timeout, "timeout")
    backtracks = _can_backtrack(compiled)

    def run(output: str) -> CheckResult:
        found = _bounded_search(compiled, backtracks, output, budget)
        if isinstance(found, str):
            return CheckResult(False, found)
        if found is None:
            return CheckResult(True)
        start, end = found
        return CheckResult(False, f"matched {_show_text(output[start:end])} at character {start}")

    return NamedCheck(f"not_regex:{_label(compiled.pattern)}", run)


def _show_text(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _require_limit(n: Any, field: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise CheckSpecError(f"expected a non-negative integer, got {_describe(n)}", field=field)
    return n


def max_chars(n: int) -> NamedCheck:
    """``max_chars``: the output is at most ``n`` characters (Unicode code points, not bytes).

    >>> max_chars(5)("hola").passed, max_chars(3)("hola").detail
    (True, '4 characters, more than 3')

    Raises :class:`CheckSpecError` unless ``n`` is an int >= 0 (a bool is not).
    """
    limit = _require_limit(n, "max_chars")

    def run(output: str) -> CheckResult:
        count = len(output)
        if count <= limit:
            return CheckResult(True)
        return CheckResult(False, f"{count} characters, more than {limit}")

    return NamedCheck("max_chars", run)


def max_words(n: int) -> NamedCheck:
    """``max_words``: the output has at most ``n`` words (``len(output.split())``).

    >>> max_words(3)("te transfiero ya").passed, max_words(2)("te transfiero ya").detail
    (True, '3 words, more than 2')

    Raises :class:`CheckSpecError` unless ``n`` is an int >= 0 (a bool is not).
    """
    limit = _require_limit(n, "max_words")

    def run(output: str) -> CheckResult:
        count = len(output.split())
        if count <= limit:
            return CheckResult(True)
        return CheckResult(False, f"{count} words, more than {limit}")

    return NamedCheck("max_words", run)


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

    >>> transfer = tools_forbidden("transfer")
    >>> calls = {"tool_calls": [{"type": "tool_use", "name": "transfer", "input": {}}]}
    >>> run_checks("Listo", transfer, case=calls), run_checks("Listo", transfer, case={})
    ({'tools_forbidden:transfer': False}, {'tools_forbidden:transfer': True})

    Raises :class:`CheckSpecError` when no name or an empty name is given.
    """
    return _tools_check("tools_forbidden", names, forbidden=True)


def tools_required(*names: str) -> list[NamedCheck]:
    """``tools_required:NAME`` per name: the case's ``tool_calls`` call it at least once.

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
            f"{_show(call.arguments)} (not valid JSON)"
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


# === Building checks from an expect block ===


@contextmanager
def _blame(field: str) -> Iterator[None]:
    """Re-raise a factory's CheckSpecError under the ``expect`` field it came from."""
    try:
        yield
    except CheckSpecError as error:
        raise CheckSpecError(error.message, field=field) from None


def _items(value: Any, field: str, *, single_ok: bool) -> list[tuple[str, Any]]:
    """``(subfield, item)`` for each entry of a non-empty list (or one string if allowed)."""
    expected = "a string or a list of strings" if single_ok else "a list of strings"
    if single_ok and isinstance(value, str):
        return [(field, value)]
    if not isinstance(value, list | tuple):
        raise CheckSpecError(f"expected {expected}, got {_describe(value)}", field=field)
    if not value:
        raise CheckSpecError(
            f"expected {expected}, got an empty list, which would check nothing", field=field
        )
    seen: dict[Any, int] = {}
    items = []
    for index, item in enumerate(value):
        subfield = f"{field}[{index}]"
        if not isinstance(item, str):
            raise CheckSpecError(f"expected a string, got {_describe(item)}", field=subfield)
        if item in seen:
            raise CheckSpecError(f"{item!r} repeats entry {seen[item]}", field=subfield)
        seen[item] = index
        items.append((subfield, item))
    return items


def _path_map(value: Any, field: str, what: str) -> list[tuple[str, Any]]:
    if not isinstance(value, Mapping):
        raise CheckSpecError(
            f"expected an object of path → {what}, got {_describe(value)}", field=field
        )
    if not value:
        raise CheckSpecError(
            f"expected an object of path → {what}, got an empty object, which would check nothing",
            field=field,
        )
    for path in value:
        if not isinstance(path, str):
            raise CheckSpecError(f"expected string paths, got {_describe(path)}", field=field)
    return list(value.items())


def _build_valid_json(value: Any, field: str) -> list[NamedCheck]:
    if not isinstance(value, bool):
        raise CheckSpecError(f"expected true or false, got {_describe(value)}", field=field)
    return [valid_json()] if value else []


def _build_fields(value: Any, field: str) -> list[NamedCheck]:
    built = []
    for subfield, path in _items(value, field, single_ok=False):
        with _blame(subfield):
            built.append(has_field(path))
    return built


def _build_equals(value: Any, field: str) -> list[NamedCheck]:
    built = []
    for path, expected in _path_map(value, field, "value"):
        with _blame(f"{field}.{path}"):
            built.append(equals(path, expected))
    return built


def _build_one_of(value: Any, field: str) -> list[NamedCheck]:
    built = []
    for path, allowed in _path_map(value, field, "list of allowed values"):
        with _blame(f"{field}.{path}"):
            if not isinstance(allowed, list | tuple):
                raise CheckSpecError(
                    f"expected a list of allowed values, got {_describe(allowed)}", field=field
                )
            built.append(one_of(path, allowed))
    return built


def _build_range(value: Any, field: str) -> list[NamedCheck]:
    built = []
    for path, bounds in _path_map(value, field, "[min, max]"):
        with _blame(f"{field}.{path}"):
            if not isinstance(bounds, list | tuple) or len(bounds) != 2:
                raise CheckSpecError(
                    f"expected [min, max] (null for an open end), got {_describe(bounds)}",
                    field=field,
                )
            built.append(in_range(path, bounds[0], bounds[1]))
    return built


def _text_builder(factory: Callable[[str], NamedCheck]) -> Callable[[Any, str], list[NamedCheck]]:
    def build(value: Any, field: str) -> list[NamedCheck]:
        built = []
        for subfield, text in _items(value, field, single_ok=True):
            with _blame(subfield):
                built.append(factory(text))
        return built

    return build


def _limit_builder(factory: Callable[[int], NamedCheck]) -> Callable[[Any, str], list[NamedCheck]]:
    def build(value: Any, field: str) -> list[NamedCheck]:
        with _blame(field):
            return [factory(value)]

    return build


def _tools_builder(
    factory: Callable[..., list[NamedCheck]],
) -> Callable[[Any, str], list[NamedCheck]]:
    def build(value: Any, field: str) -> list[NamedCheck]:
        built = []
        for subfield, name in _items(value, field, single_ok=False):
            with _blame(subfield):
                built.extend(factory(name))
        return built

    return build


def _build_tools_sequence(value: Any, field: str) -> list[NamedCheck]:
    if isinstance(value, list | tuple):
        for index, name in enumerate(value):
            _require_text(name, f"{field}[{index}]")
    with _blame(field):
        return [tools_sequence(value)]


def _build_tools_match(value: Any, field: str) -> list[NamedCheck]:
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


def _build_tools_before(value: Any, field: str) -> list[NamedCheck]:
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


def _build_tool_args(value: Any, field: str) -> list[NamedCheck]:
    built = []
    for name, arguments in _path_map(value, field, "arguments"):
        with _blame(f"{field}.{name}"):
            built.append(tool_args(name, arguments))
    return built


def _build_no_tool_errors(value: Any, field: str) -> list[NamedCheck]:
    if not isinstance(value, bool):
        raise CheckSpecError(f"expected true or false, got {_describe(value)}", field=field)
    return [no_tool_errors()] if value else []


# The order here is the order of the checks in a result row.
_BUILDERS: dict[str, Callable[[Any, str], list[NamedCheck]]] = {
    "valid_json": _build_valid_json,
    "fields": _build_fields,
    "equals": _build_equals,
    "one_of": _build_one_of,
    "range": _build_range,
    "contains": _text_builder(contains),
    "not_contains": _text_builder(not_contains),
    "regex": _text_builder(matches),
    "not_regex": _text_builder(not_matches),
    "max_chars": _limit_builder(max_chars),
    "max_words": _limit_builder(max_words),
    "tools_forbidden": _tools_builder(tools_forbidden),
    "tools_required": _tools_builder(tools_required),
    "tools_sequence": _build_tools_sequence,
    "tools_match": _build_tools_match,
    "tools_before": _build_tools_before,
    "tool_args": _build_tool_args,
    "max_tool_calls": _limit_builder(max_tool_calls),
    "max_repeats": _limit_builder(max_repeats),
    "no_tool_errors": _build_no_tool_errors,
}

EXPECT_KEYS: tuple[str, ...] = tuple(_BUILDERS)
"""The keys an ``expect`` block may use, in the order their checks run."""


def checks_from_expect(expect: Mapping[str, Any]) -> list[NamedCheck]:
    """Validate a case's ``expect`` block and build its checks.

    The checks come in the order of :data:`EXPECT_KEYS`, whatever the order
    of the keys in the block. An empty block gives no checks.

    >>> expect = {
    ...     "valid_json": True,
    ...     "equals": {"amount": 125050},
    ...     "not_contains": ["1250.5", "$125.050"],
    ...     "tools_forbidden": ["transfer"],
    ... }
    >>> for named in checks_from_expect(expect):
    ...     print(named.name)
    valid_json
    equals:amount
    not_contains:1250.5
    not_contains:$125.050
    tools_forbidden:transfer
    >>> checks_from_expect({"max_chars": -1})
    Traceback (most recent call last):
      ...
    tinyeval.checks.CheckSpecError: expect.max_chars: expected a non-negative integer, got ...

    Raises :class:`CheckSpecError` naming the field for an unknown key (with
    the closest known one), a value of the wrong type, an invalid regex, an
    empty list or object (a check that cannot fail is a defect), a range with
    min > max, or two entries that would give the same check name.
    """
    if not isinstance(expect, Mapping):
        raise CheckSpecError(
            f"expected an object of expectations, got {_describe(expect)}", field="expect"
        )
    for key in expect:
        if not isinstance(key, str):
            raise CheckSpecError(f"expected string keys, got {_describe(key)}", field="expect")
        if key not in _BUILDERS:
            raise CheckSpecError(_unknown_key_message(key), field=f"expect.{key}")
    built: list[NamedCheck] = []
    for key, build in _BUILDERS.items():
        if key in expect:
            built.extend(build(expect[key], f"expect.{key}"))
    _require_unique_names(built, field="expect")
    return built


def _unknown_key_message(key: str) -> str:
    close = difflib.get_close_matches(key, EXPECT_KEYS, n=1)
    if close:
        return f"unknown key {key!r}; did you mean {close[0]!r}?"
    return f"unknown key {key!r}; expected one of {', '.join(EXPECT_KEYS)}"


def _require_unique_names(checks: Iterable[NamedCheck], *, field: str) -> None:
    seen: set[str] = set()
    for named in checks:
        if named.name in seen:
            raise CheckSpecError(
                f"two checks are named {named.name!r}; names must be unique "
                "(rename one with check(func, name=...))",
                field=field,
            )
        seen.add(named.name)


# === Running ===


def _as_named(item: Any) -> NamedCheck:
    if isinstance(item, NamedCheck):
        return item
    if isinstance(item, list | tuple):
        raise CheckSpecError(
            f"expected a check, got a list of {len(item)}; unpack lists such as "
            "has_fields(...) with *",
            field="checks",
        )
    if not callable(item):
        raise CheckSpecError(
            f"expected a check (a callable), got {_describe(item)}", field="checks"
        )
    return NamedCheck(_name_of(item), item)


def _as_result(outcome: Any) -> CheckResult:
    """Accept exactly a bool, a CheckResult or (bool, str|None); anything else fails."""
    if isinstance(outcome, CheckResult):
        return outcome
    if isinstance(outcome, bool):
        return CheckResult(outcome)
    if (
        isinstance(outcome, tuple)
        and len(outcome) == 2
        and isinstance(outcome[0], bool)
        and (outcome[1] is None or isinstance(outcome[1], str))
    ):
        return CheckResult(outcome[0], outcome[1])
    expected = "a bool, a CheckResult or (bool, str)"
    return CheckResult(False, f"returned {_show(outcome)}; a check must return {expected}")


def _run_one(named: NamedCheck, output: str, case: Any) -> CheckResult:
    try:
        outcome = named(output, case)
    except Exception as error:  # one broken check must not hide the others' results
        return CheckResult(False, f"raised {type(error).__name__}: {error}")
    return _as_result(outcome)


def run_checks_detailed(
    output: str | None, checks: Iterable[CheckFunction], *, case: Any = None
) -> dict[str, CheckResult]:
    """Run every check on ``output``: ``{name: CheckResult}``, in the checks' order.

    A check that raises is failed, with ``"raised ExceptionType: message"`` as
    its detail, and the other checks still run. A missing output (``None``)
    fails every check with the detail ``"no output"``.

    >>> def broken(output):
    ...     raise KeyError("amount")
    >>> results = run_checks_detailed("hola", [broken, max_chars(10)])
    >>> results["broken"]
    CheckResult(passed=False, detail="raised KeyError: 'amount'")
    >>> results["max_chars"].passed
    True
    >>> run_checks_detailed(None, [max_chars(10)])
    {'max_chars': CheckResult(passed=False, detail='no output')}

    Raises :class:`CheckSpecError` before running anything when two checks
    share a name, an item is not a check, or ``output`` is not a string.
    """
    named = [_as_named(item) for item in checks]
    _require_unique_names(named, field="checks")
    if output is None:
        return {item.name: CheckResult(False, "no output") for item in named}
    if not isinstance(output, str):
        raise CheckSpecError(
            f"expected the output as a string or None, got {_describe(output)}", field="output"
        )
    return {item.name: _run_one(item, output, case) for item in named}


def run_checks(
    output: str | None, checks: Iterable[CheckFunction], *, case: Any = None
) -> dict[str, bool]:
    """Run every check on ``output``: ``{name: passed}``, in the checks' order.

    Plain functions are accepted too (named by ``__name__``). See
    :func:`run_checks_detailed` for the details and for what raising does.

    >>> run_checks("Transferiré $1.250,50", [contains("$1.250,50"), not_contains("1250.5")])
    {'contains:$1.250,50': True, 'not_contains:1250.5': True}

    Raises :class:`CheckSpecError` when two checks share a name.
    """
    detailed = run_checks_detailed(output, checks, case=case)
    return {name: result.passed for name, result in detailed.items()}
