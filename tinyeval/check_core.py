"""What a check is: its error, its result, a named check, and the helpers check factories share.

:mod:`tinyeval.checks` re-exports every public name here.

>>> CheckResult(True)
CheckResult(passed=True, detail=None)
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeAlias, overload

from .errors import InputError

__all__ = ["CheckResult", "CheckSpecError", "NamedCheck", "check", "get_path", "tool_names"]

# === Errors and results ===


class CheckSpecError(InputError):
    """A wrong ``expect`` block or check definition.

    ``field`` names the culprit (``"expect.not_contain"``,
    ``"expect.range.amount"``); ``message`` says what was expected and what
    was got. ``str(error)`` is ``"FIELD: MESSAGE"``.

    >>> from tinyeval.checks import checks_from_expect
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


_PASS = CheckResult(True)  # results are frozen: every passing check without a detail shares one

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
        if type(func) is types.FunctionType:  # the common case, read without inspect's cost
            code = func.__code__
            wants_case = code.co_argcount >= 2 or bool(code.co_flags & inspect.CO_VARARGS)
        elif not callable(func):
            raise CheckSpecError(f"expected a callable, got {_describe(func)}", field=name)
        else:
            wants_case = _takes_two_arguments(func)
        self.name = name
        self.func = func
        self._wants_case = wants_case

    def __call__(self, output: str, case: Any = None) -> CheckOutcome:
        if self._wants_case:
            return self.func(output, case)
        return self.func(output)

    def __repr__(self) -> str:
        return f"NamedCheck({self.name!r})"


def _own_check(name: str, func: Callable[[str], CheckResult]) -> NamedCheck:
    """A :class:`NamedCheck` of one of the package's own one-argument checks, made without
    looking at ``func`` (built for every case read: the general constructor costs more)."""
    named = NamedCheck.__new__(NamedCheck)
    named.name, named.func, named._wants_case = name, func, False
    return named


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

    >>> from tinyeval.checks import run_checks
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
        if text.startswith("\ufeff"):  # json.loads names a BOM; the decoder alone would not
            return True, json.loads(text, parse_constant=_reject_constant)
        return True, _DECODER.decode(text)
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        reason = f"not valid JSON: {error}"
    except RecursionError:
        reason = "not valid JSON: nested too deeply to parse"
    if text.lstrip().startswith("```"):
        reason += " (the output is wrapped in a ``` code fence, which is not stripped)"
    return False, reason


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)  # set up once, not per output


def _split_path(path: str) -> list[str]:
    if not isinstance(path, str) or not path:
        raise CheckSpecError(
            f"expected a dotted path such as 'payee.name', got {path!r}", field="path"
        )
    segments = path.split(".")
    if not all(segments):
        raise CheckSpecError(f"expected no empty part in a dotted path, got {path!r}", field="path")
    return segments


def _segments(path: str) -> tuple[str, ...]:
    """The parts of a dotted path, checked as :func:`get_path` checks them (remembered: the
    same few paths come back in every case)."""
    if isinstance(path, str):
        return _cached_segments(path)
    return tuple(_split_path(path))  # raises the CheckSpecError


@lru_cache(maxsize=4096)
def _cached_segments(path: str) -> tuple[str, ...]:
    return tuple(_split_path(path))


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


def get_segments(obj: Any, segments: Sequence[str]) -> Any:
    """The value at an already split (and checked) path: :func:`get_path` without the split.

    >>> get_segments({"a": [{"b": 1}]}, ("a", "0", "b"))
    1
    """
    current = obj
    for position, segment in enumerate(segments):
        if type(current) is dict and segment in current:  # the common case, first
            current = current[segment]
        else:
            current = _step(current, segment, ".".join(segments[:position]))
    return current


def _step(container: Any, segment: str, where: str) -> Any:
    if isinstance(container, Mapping):
        if segment in container:
            return container[segment]
        raise LookupError(f"no key {segment!r} {_inside(where)}")
    if isinstance(container, Sequence) and not isinstance(container, str):
        digits = segment[1:] if segment.startswith("-") else segment
        if not (digits.isascii() and digits.isdigit()):
            raise LookupError(f"{_place(where)} is an array, and {segment!r} is not an index")
        index = int(segment)
        if -len(container) <= index < len(container):
            return container[index]
        raise LookupError(f"no index {index} {_inside(where)} (length {len(container)})")
    raise LookupError(f"{_place(where)} is {_json_type(container)}, not an object or an array")


def _place(where: str) -> str:
    return repr(where) if where else "the top level"


def _inside(where: str) -> str:
    return f"in {_place(where)}" if where else "at the top level"


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
    tinyeval.check_core.CheckSpecError: tool_calls: entry 0: expected a tool name, ...

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


@lru_cache(maxsize=4096)
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
    kind = type(value)
    if kind is int or kind is float:  # the common case, without the isinstance calls
        return True
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


def _require_text(text: Any, field: str) -> str:
    if not isinstance(text, str) or not text:
        raise CheckSpecError(f"expected a non-empty string, got {_describe(text)}", field=field)
    return text


def _show_text(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _require_limit(n: Any, field: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise CheckSpecError(f"expected a non-negative integer, got {_describe(n)}", field=field)
    return n
