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

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from ._regex import REGEX_TIMEOUT, bounded_search, can_backtrack, exponential_shape
from .agents.tools import (
    TOOLS_MATCH_MODES,
    max_repeats,
    max_tool_calls,
    no_tool_errors,
    tool_args,
    tools_before,
    tools_forbidden,
    tools_match,
    tools_required,
    tools_sequence,
    trajectory,
    trajectory_results,
)
from .check_core import (
    _PASS,
    CheckFunction,
    CheckResult,
    CheckSpecError,
    NamedCheck,
    _describe,
    _is_number,
    _json_equal,
    _json_type,
    _label,
    _name_of,
    _own_check,
    _parse_json,
    _require_json_value,
    _require_limit,
    _require_text,
    _segments,
    _show,
    _show_text,
    check,
    get_path,
    get_segments,
    tool_names,
)
from .errors import did_you_mean

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
        return _PASS if ok else CheckResult(False, value)

    return _own_check("valid_json", is_valid_json)


def _json_path_check(name: str, path: str, judge: Callable[[Any], CheckResult]) -> NamedCheck:
    """A check that parses the output, finds ``path`` and hands its value to ``judge``."""
    segments = _segments(path)

    def run(output: str) -> CheckResult:
        ok, parsed = _parse_json(output)
        if not ok:
            return CheckResult(False, parsed)
        try:
            value = get_segments(parsed, segments)
        except LookupError as error:
            return CheckResult(False, f"missing: {error}")
        return judge(value)

    return _own_check(f"{name}:{_label(path)}", run)


def has_field(path: str) -> NamedCheck:
    """``field:PATH``: the JSON output has ``path`` (a null value counts as present).

    >>> run_checks('{"payee": {"name": null}}', [has_field("payee.name"), has_field("amount")])
    {'field:payee.name': True, 'field:amount': False}
    """
    return _json_path_check("field", path, lambda value: _PASS)


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
            return _PASS
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
            return _PASS
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
            return _PASS
        return CheckResult(False, f"got {_show(actual)}, expected {wanted}")

    return _json_path_check("range", path, judge)


def _bound(value: float | None) -> str:
    return "" if value is None else _show(value)


def contains(text: str) -> NamedCheck:
    """``contains:TEXT``: the output contains ``text`` (case-sensitive, as written).

    >>> says_amount = contains("$1.250,50")
    >>> says_amount.name, says_amount("Transferiré $1.250,50 a Juan")
    ('contains:$1.250,50', CheckResult(passed=True, detail=None))

    Raises :class:`CheckSpecError` for an empty or non-string ``text``.
    """
    _require_text(text, "contains")

    def run(output: str) -> CheckResult:
        return _PASS if text in output else CheckResult(False, "not found")

    return _own_check(f"contains:{_label(text)}", run)


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
            return _PASS
        return CheckResult(False, f"found at character {position}")

    return _own_check(f"not_contains:{_label(text)}", run)


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
    why = exponential_shape(compiled)
    if why:
        raise CheckSpecError(
            f"regex {compiled.pattern!r} can take exponential time: {why}; make the inner"
            " part possessive (a++, a*+) or atomic ((?>...)), or drop one quantifier",
            field=field,
        )
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
    tinyeval.check_core.CheckSpecError: regex: regex '^(a+)+$' can take exponential time: ...

    Raises :class:`CheckSpecError` for an empty or invalid pattern (with
    :mod:`re`'s message), or one of the shapes above.
    """
    compiled = _compile(pattern, "regex")
    budget = _require_timeout(timeout, "timeout")
    backtracks = can_backtrack(compiled)

    def run(output: str) -> CheckResult:
        found = bounded_search(compiled, backtracks, output, budget)
        if isinstance(found, str):
            return CheckResult(False, found)
        return _PASS if found is not None else CheckResult(False, "no match")

    return _own_check(f"regex:{_label(compiled.pattern)}", run)


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
    backtracks = can_backtrack(compiled)

    def run(output: str) -> CheckResult:
        found = bounded_search(compiled, backtracks, output, budget)
        if isinstance(found, str):
            return CheckResult(False, found)
        if found is None:
            return _PASS
        start, end = found
        return CheckResult(False, f"matched {_show_text(output[start:end])} at character {start}")

    return _own_check(f"not_regex:{_label(compiled.pattern)}", run)


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
            return _PASS
        return CheckResult(False, f"{count} characters, more than {limit}")

    return _own_check("max_chars", run)


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
            return _PASS
        return CheckResult(False, f"{count} words, more than {limit}")

    return _own_check("max_words", run)


# === Building checks from an expect block ===


class _blame:
    """Re-raise a factory's CheckSpecError under the ``expect`` field it came from (a class,
    not a generator: it is entered once per check built)."""

    __slots__ = ("field",)

    def __init__(self, field: str) -> None:
        self.field = field

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if isinstance(error, CheckSpecError):
            raise CheckSpecError(error.message, field=self.field) from None


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
    if type(value) is not dict and not isinstance(value, Mapping):
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
    return [_VALID_JSON] if value else []


def _build_fields(value: Any, field: str) -> list[NamedCheck]:
    built = []
    for subfield, path in _items(value, field, single_ok=False):
        with _blame(subfield):
            built.append(has_field(path))
    return built


def _build_equals(value: Any, field: str) -> list[NamedCheck]:
    built = []
    for path, expected in _path_map(value, field, "value"):
        try:  # a try costs nothing until it catches (built for every case read)
            built.append(equals(path, expected))
        except CheckSpecError as error:
            raise CheckSpecError(error.message, field=f"{field}.{path}") from None
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
    # checks hold no state: the cases that give one limit share its check (typed: True is not 1)
    shared = lru_cache(maxsize=256, typed=True)(factory)

    def build(value: Any, field: str) -> list[NamedCheck]:
        with _blame(field):
            return [shared(value) if type(value) is int else factory(value)]

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


_VALID_JSON = valid_json()  # checks hold no state: every expect block shares this one


def _sharing(
    build: Callable[[Any, str], list[NamedCheck]],
) -> Callable[[Any, str], list[NamedCheck]]:
    """``build``, its checks shared by the blocks that give it the same string or list of
    strings (checks hold no state; most files repeat a few such values in every case)."""

    @lru_cache(maxsize=512)
    def shared(key: str | tuple[str, ...], field: str) -> tuple[NamedCheck, ...]:
        return tuple(build(list(key) if type(key) is tuple else key, field))

    def built(value: Any, field: str) -> list[NamedCheck]:
        if type(value) is str:
            return list(shared(value, field))
        if type(value) is list and all(type(item) is str for item in value):
            return list(shared(tuple(value), field))
        return build(value, field)

    return built


# The order here is the order of the checks in a result row.
_BUILDERS: dict[str, Callable[[Any, str], list[NamedCheck]]] = {
    "valid_json": _build_valid_json,
    "fields": _sharing(_build_fields),
    "equals": _build_equals,
    "one_of": _build_one_of,
    "range": _build_range,
    "contains": _sharing(_text_builder(contains)),
    "not_contains": _sharing(_text_builder(not_contains)),
    "regex": _sharing(_text_builder(matches)),
    "not_regex": _sharing(_text_builder(not_matches)),
    "max_chars": _limit_builder(max_chars),
    "max_words": _limit_builder(max_words),
    "tools_forbidden": _sharing(_tools_builder(tools_forbidden)),
    "tools_required": _sharing(_tools_builder(tools_required)),
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

_ORDER = {key: index for index, key in enumerate(_BUILDERS)}
_FIELDS = {key: f"expect.{key}" for key in _BUILDERS}


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
    tinyeval.check_core.CheckSpecError: expect.max_chars: expected a non-negative integer, got ...

    Raises :class:`CheckSpecError` naming the field for an unknown key (with
    the closest known one), a value of the wrong type, an invalid regex, an
    empty list or object (a check that cannot fail is a defect), a range with
    min > max, or two entries that would give the same check name.
    """
    if type(expect) is not dict and not isinstance(expect, Mapping):
        raise CheckSpecError(
            f"expected an object of expectations, got {_describe(expect)}", field="expect"
        )
    for key in expect:
        if key not in _BUILDERS:
            if not isinstance(key, str):
                raise CheckSpecError(f"expected string keys, got {_describe(key)}", field="expect")
            raise CheckSpecError(_unknown_key_message(key), field=f"expect.{key}")
    built: list[NamedCheck] = []
    for key in sorted(expect, key=_ORDER.__getitem__):  # only the keys given, in EXPECT_KEYS order
        built.extend(_BUILDERS[key](expect[key], _FIELDS[key]))
    _require_unique_names(built, field="expect")
    return built


def _unknown_key_message(key: str) -> str:
    close = difflib.get_close_matches(key, EXPECT_KEYS, n=1)
    if close:
        return f"unknown key {key!r}; did you mean {close[0]!r}?"
    return f"unknown key {key!r}; expected one of {', '.join(EXPECT_KEYS)}"


def _require_unique_names(checks: Sequence[NamedCheck], *, field: str) -> None:
    if len({named.name for named in checks}) == len(checks):
        return
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
        outcome = named.func(output, case) if named._wants_case else named.func(output)
    except Exception as error:  # one broken check must not hide the others' results
        return CheckResult(False, f"raised {type(error).__name__}: {error}")
    return outcome if type(outcome) is CheckResult else _as_result(outcome)


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
    named = [item if type(item) is NamedCheck else _as_named(item) for item in checks]
    _require_unique_names(named, field="checks")
    if output is None:
        return {item.name: CheckResult(False, "no output") for item in named}
    if not isinstance(output, str):
        raise CheckSpecError(
            f"expected the output as a string or None, got {_describe(output)}", field="output"
        )
    return {item.name: _run_one(item, output, case) for item in named}


def run_built_checks(output: str, built: Sequence[NamedCheck], case: Any) -> dict[str, CheckResult]:
    """:func:`run_checks_detailed` for checks already known to be named and distinct (those of
    an ``expect`` block, from :func:`checks_from_expect`), on an output known to be text.

    >>> run_built_checks("hola", checks_from_expect({"max_chars": 3}), None)
    {'max_chars': CheckResult(passed=False, detail='4 characters, more than 3')}
    """
    return {item.name: _run_one(item, output, case) for item in built}


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
