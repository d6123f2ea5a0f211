"""Deterministic checks, named and exact; a case's ``expect`` block becomes checks here.

>>> run_checks('{"amount": 1250.5}', checks_from_expect({"equals": {"amount": 125050}}))
{'equals:amount': False}
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, TypeAlias, overload

from . import _EXTRAS, _extra
from ._formats import StrictJSONDecoder, python_target
from ._regex import REGEX_TIMEOUT, backtracking, bounded_search
from .errors import InputError, did_you_mean, is_number, shorten


class CheckSpecError(InputError):
    """A wrong ``expect`` block or check definition; ``str(error)`` is ``"FIELD: MESSAGE"``.

    >>> checks_from_expect({"not_contain": ["1250.5"]})
    Traceback (most recent call last):
    tinyeval.checks.CheckSpecError: expect.not_contain: unknown key ... 'not_contains'?
    """


@dataclass(frozen=True)
class CheckResult:
    """What one check says: ``passed`` (a bool, never merely truthy) and an optional ``detail``.

    >>> CheckResult(False, "got 1250.5, expected 125050")
    CheckResult(passed=False, detail='got 1250.5, expected 125050')
    """

    passed: bool
    detail: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.passed, bool):
            raise CheckSpecError(f"expected True or False, got {self.passed!r}", field="passed")
        if self.detail is not None and not isinstance(self.detail, str):
            raise CheckSpecError(f"expected a string or None, got {self.detail!r}", field="detail")


_PASS = CheckResult(True)  # results are frozen: every passing check without a detail shares one
_DECODER = StrictJSONDecoder()
CheckOutcome: TypeAlias = "bool | CheckResult | tuple[bool, str] | None"
CheckFunction: TypeAlias = "Callable[..., CheckOutcome]"
Decorator: TypeAlias = "Callable[[CheckFunction], NamedCheck]"
Builder: TypeAlias = "Callable[[Any, str], Sequence[NamedCheck]]"
Reading: TypeAlias = "list[tuple[str, tuple[Any, ...]]]"  # (each check's field, its arguments)
_JSON_TYPES = (
    (type(None), "null"),
    (bool, "a boolean"),
    (int | float, "a number"),
    (str, "a string"),
    (list | tuple, "an array"),
    (Mapping, "an object"),
)


class NamedCheck:
    """A named check: ``func(output[, case])`` gives a bool, None (abstains), (bool, detail) or
    a CheckResult.

    >>> NamedCheck("short", lambda output: len(output) < 10)("a rather long answer")
    False
    """

    __slots__ = ("_wants_case", "func", "name")

    def __init__(self, name: str, func: CheckFunction, *, wants_case: bool | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise CheckSpecError(f"expected a non-empty string, got {name!r}", field="name")
        if not callable(func):
            raise _expected("a callable", func, name)
        self.name = name
        self.func = func
        self._wants_case = _positional_count(func) >= 2 if wants_case is None else wants_case

    @classmethod
    def _built_in(cls, name: str, func: CheckFunction, *, wants_case: bool) -> NamedCheck:
        """A check the package builds (every case builds its own): nothing to validate."""
        named = cls.__new__(cls)
        named.name, named.func, named._wants_case = name, func, wants_case
        return named

    def __call__(self, output: str, case: Any = None) -> CheckOutcome:
        return self.func(output, case) if self._wants_case else self.func(output)

    def __repr__(self) -> str:
        return f"NamedCheck({self.name!r})"


def _positional_count(func: Callable[..., Any]) -> int:
    """How many positional arguments ``func`` takes (3 with ``*args`` or no signature)."""
    try:
        kinds = [parameter.kind for parameter in inspect.signature(func).parameters.values()]
    except (TypeError, ValueError):  # some builtins have no signature
        return 3
    star = inspect.Parameter.VAR_POSITIONAL  # the kinds before it are the positional ones
    return 3 if star in kinds else sum(kind < star for kind in kinds)


@overload
def check(func: CheckFunction, *, name: str | None = None) -> NamedCheck: ...
@overload
def check(func: None = None, *, name: str | None = None) -> Decorator: ...
def check(func: CheckFunction | None = None, *, name: str | None = None) -> NamedCheck | Decorator:
    """Turn a function into a :class:`NamedCheck` (named by ``__name__`` unless ``name``).

    >>> check(name="polite")(lambda output: "please" in output.lower())
    NamedCheck('polite')
    """
    if func is None:
        return partial(check, name=name)
    if not callable(func):
        hint = "; unpack a list of checks with *" if isinstance(func, list | tuple) else ""
        raise CheckSpecError(f"expected a check, got {_describe(func)}{hint}", field="checks")
    if name is None and not isinstance(getattr(func, "__name__", None), str):
        raise CheckSpecError(
            f"expected a function with a __name__, got {_describe(func)}; "
            "name it with check(func, name=...)",
            field="checks",
        )
    return NamedCheck(func.__name__ if name is None else name, func)


@lru_cache(maxsize=128)
def _parse_json(text: str) -> tuple[bool, Any]:
    """``(True, value)`` or ``(False, reason)``; memoised, so the value is shared: only read it."""
    try:
        if text.startswith("\ufeff"):  # json.loads names a BOM; the decoder alone would not
            return True, json.loads(text, cls=StrictJSONDecoder)
        return True, _DECODER.decode(text)
    except ValueError as error:  # a syntax error, a key given twice, an integer past the limit
        reason = f"not valid JSON: {error}"
    except RecursionError:
        reason = "not valid JSON: nested too deeply to parse"
    if text.lstrip().startswith("```"):
        reason += " (the output is wrapped in a ``` code fence, which is not stripped)"
    return False, reason


def _segments(path: Any) -> list[str]:
    if not isinstance(path, str) or not path:
        raise _expected("a dotted path such as 'payee.name'", path, "path")
    segments = path.split(".")
    if not all(segments):
        raise CheckSpecError(f"expected no empty part in a dotted path, got {path!r}", field="path")
    return segments


def get_path(obj: Any, path: str) -> Any:
    """The value at a dotted ``path`` of keys or array indexes; LookupError when it is not there.

    >>> get_path({"payee": {"accounts": [{"cbu": "0170"}]}}, "payee.accounts.-1.cbu")
    '0170'
    """
    return _walk(obj, _segments(path))


def _walk(obj: Any, segments: Sequence[str]) -> Any:
    for position, segment in enumerate(segments):
        if type(obj) is dict and segment in obj:  # the common case, first
            obj = obj[segment]
        else:
            obj = _step(obj, segment, ".".join(segments[:position]))
    return obj


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
        # an index of 19 digits or more is past any list (and int() refuses 4,300 digits)
        index = int(segment) if len(digits) < 19 else len(container)
        if -len(container) <= index < len(container):
            return container[index]
        raise LookupError(f"no index {shorten(segment, 24)} {inside} (length {len(container)})")
    raise LookupError(f"{place} is {_json_type(container)}, not an object or an array")


_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


@lru_cache(maxsize=4096)  # the same names come in every case
def _label(text: str) -> str:
    """A check name's text: as it is when short and on one line, else cut, escaped and hashed."""
    if len(text) <= 40 and not _CONTROL_CHARACTER.search(text):
        return text
    escaped = _CONTROL_CHARACTER.sub(lambda m: m.group().encode("unicode_escape").decode(), text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{escaped[:32]}…{digest}"


def _json_type(value: Any) -> str:
    return next(
        (name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__
    )


def _show(value: Any, limit: int = 60) -> str:
    """``value`` as JSON (so ``"125050"`` and ``125050`` look different), shortened."""
    with suppress(TypeError, ValueError):
        return shorten(json.dumps(value, ensure_ascii=False), limit)
    return shorten(repr(value), limit)


def _describe(value: Any) -> str:
    return "null" if value is None else f"{_json_type(value)} {_show(value)}"


def _expected(what: str, value: Any, field: str | None = None) -> CheckSpecError:
    return CheckSpecError(f"expected {what}, got {_describe(value)}", field=field)


def _json_equal(actual: Any, expected: Any) -> bool:
    """Equality without Python's coercions: True is not 1, "1" is not 1, 125050 == 125050.0."""
    if is_number(actual) and is_number(expected):
        return bool(actual == expected)
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        return len(actual) == len(expected) and all(map(_json_equal, actual, expected))
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        same_keys = actual.keys() == expected.keys()
        return same_keys and all(_json_equal(actual[key], expected[key]) for key in expected)
    return type(actual) is type(expected) and actual == expected


def _require_json_value(value: Any, field: str) -> None:
    if value is None or type(value) in (str, int, bool):  # the common case, nothing to refuse
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise CheckSpecError(f"expected a finite number, got {value!r}", field=field)
    if isinstance(value, list | tuple):
        for item in value:
            _require_json_value(item, field)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CheckSpecError(f"expected string keys, got {key!r}", field=field)
            _require_json_value(item, field)
    elif value is not None and not isinstance(value, str | int | float):
        kinds = "null, true/false, number, string, array or object"
        raise _expected(f"a JSON value ({kinds})", value, field)


def _require_text(text: Any, field: str) -> str:
    if not isinstance(text, str) or not text:
        raise _expected("a non-empty string", text, field)
    return text


def _require_limit(n: Any, field: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise _expected("a non-negative integer", n, field)
    return n


def valid_json() -> NamedCheck:
    """``valid_json``: the output is one strict JSON value (no code fences, no ``NaN``).

    >>> valid_json()('{"amount": 125050').detail
    "not valid JSON: Expecting ',' delimiter: line 1 column 18 (char 17)"
    """
    return _json_check("valid_json", lambda value: _PASS)


def _json_check(name: str, judge: Callable[[Any], CheckResult], *path: str) -> NamedCheck:
    """A check that parses the output and hands the value at ``path`` (or all of it) to judge."""
    segments = _segments(*path) if path else []

    def run(output: str) -> CheckResult:
        ok, parsed = _parse_json(output)
        if not ok:
            return CheckResult(False, parsed)
        try:
            value = _walk(parsed, segments) if segments else parsed
        except LookupError as error:
            return CheckResult(False, f"missing: {error}")
        return judge(value)

    return NamedCheck._built_in(
        f"{name}:{_label(path[0])}" if path else name, run, wants_case=False
    )


def has_field(path: str) -> NamedCheck:
    """``field:PATH``: the JSON output has ``path`` (a null value counts as present).

    >>> run_checks('{"payee": {"name": null}}', [has_field("payee.name"), has_field("amount")])
    {'field:payee.name': True, 'field:amount': False}
    """
    return _json_check("field", lambda value: _PASS, path)


def equals(path: str, value: Any) -> NamedCheck:
    """``equals:PATH``: the JSON value at ``path`` equals ``value`` exactly (no coercion).

    >>> equals("amount", 125050)('{"amount": "125050"}').detail
    'got "125050" (a string), expected 125050'
    """
    _require_json_value(value, "equals")

    def judge(actual: Any) -> CheckResult:
        if _json_equal(actual, value):
            return _PASS
        kind = "" if _json_type(actual) == _json_type(value) else f" ({_json_type(actual)})"
        return CheckResult(False, f"got {_show(actual)}{kind}, expected {_show(value)}")

    return _json_check("equals", judge, path)


def one_of(path: str, values: Sequence[Any]) -> NamedCheck:
    """``one_of:PATH``: the JSON value at ``path`` exactly equals one of ``values``.

    >>> one_of("currency", ["ARS", "USD"])('{"currency": "ars"}').detail
    'got "ars", expected one of ["ARS", "USD"]'
    """
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence):
        raise _expected("a list of allowed values", values, "one_of")
    if not values:
        raise _expected("at least one allowed value", values, "one_of")
    _require_json_value(values, "one_of")
    allowed = list(values)

    def judge(actual: Any) -> CheckResult:
        if any(_json_equal(actual, value) for value in allowed):
            return _PASS
        return CheckResult(False, f"got {_show(actual)}, expected one of {_show(allowed)}")

    return _json_check("one_of", judge, path)


def in_range(path: str, low: float | None, high: float | None) -> NamedCheck:
    """``range:PATH``: the JSON value at ``path`` is a number in ``[low, high]`` (None: open).

    >>> in_range("amount", 0, None)('{"amount": -5}').detail
    'got -5, expected 0 <= value'
    """
    for bound in (low, high):  # (math.isfinite would overflow on a long int: ints are finite)
        finite = is_number(bound) and (not isinstance(bound, float) or math.isfinite(bound))
        if bound is not None and not finite:
            raise _expected("[min, max] numbers (null for an open end)", bound, "range")
    if low is not None and high is not None and low > high:
        raise CheckSpecError(f"expected min <= max, got [{low}, {high}]", field="range")
    shown = (None if low is None else _show(low), "value", None if high is None else _show(high))
    wanted = " <= ".join(part for part in shown if part)

    def judge(actual: Any) -> CheckResult:
        if not is_number(actual):
            shown = f"{_show(actual)} ({_json_type(actual)})"
            return CheckResult(False, f"got {shown}, expected a number")
        if (low is None or low <= actual) and (high is None or actual <= high):
            return _PASS
        return CheckResult(False, f"got {_show(actual)}, expected {wanted}")

    return _json_check("range", judge, path)


def contains(text: str) -> NamedCheck:
    """``contains:TEXT``: the output contains ``text`` (the expect key ``contains_i`` ignores case).

    >>> contains("$1.250,50")("Transferiré $1.250,50 a Juan").passed
    True
    """
    return _text_check("contains", text, found=True)


def not_contains(text: str) -> NamedCheck:
    """``not_contains:TEXT``: the output does not contain ``text``.

    >>> not_contains("1250.5")("Transferiré 1250.50").detail
    'found at character 12'
    """
    return _text_check("not_contains", text, found=False)


def _text_check(name: str, text: str, *, found: bool) -> NamedCheck:
    """``text`` is (or is not) in the output; a name ending ``_i`` compares casefolded text."""
    _require_text(text, name)
    fold = name.endswith("_i")
    wanted = text.casefold() if fold else text

    def run(output: str) -> CheckResult:
        position = (output.casefold() if fold else output).find(wanted)
        if (position >= 0) is found:
            return _PASS
        return CheckResult(False, "not found" if found else f"found at character {position}")

    return NamedCheck._built_in(f"{name}:{_label(text)}", run, wants_case=False)


def matches(pattern: str | re.Pattern[str], *, timeout: float = REGEX_TIMEOUT) -> NamedCheck:
    """``regex:PATTERN``: ``re.search`` finds a match within ``timeout`` seconds.

    >>> matches(r"\\b\\d{22}\\b")("no CBU").detail
    'no match'
    """
    return _regex_check("regex", pattern, timeout, found=True)


def not_matches(pattern: str | re.Pattern[str], *, timeout: float = REGEX_TIMEOUT) -> NamedCheck:
    """``not_regex:PATTERN``: ``re.search`` finds no match; bounded as :func:`matches`.

    >>> not_matches(r"\\d\\.\\d{2}\\b")("$1250.50").detail
    "matched '0.50' at character 4"
    """
    return _regex_check("not_regex", pattern, timeout, found=False)


def _regex_check(name: str, pattern: Any, timeout: Any, *, found: bool) -> NamedCheck:
    _require_text(pattern.pattern if isinstance(pattern, re.Pattern) else pattern, name)
    try:
        compiled = re.compile(pattern)  # a compiled pattern comes back as it is
    except (re.error, RecursionError, OverflowError) as error:
        raise CheckSpecError(f"invalid regex {pattern!r}: {error}", field=name) from None
    backtracks, why = backtracking(compiled)
    if why:
        raise CheckSpecError(
            f"regex {compiled.pattern!r} can take exponential time: {why}; make the inner"
            " part possessive (a++, a*+) or atomic ((?>...)), or drop one quantifier",
            field=name,
        )
    if not is_number(timeout) or not 0 < timeout < math.inf:
        raise _expected("a positive number of seconds", timeout, "timeout")

    def run(output: str) -> CheckResult:
        span = bounded_search(compiled, backtracks, output, float(timeout))
        if not isinstance(span, str) and (span is not None) is found:
            return _PASS
        if span is None or isinstance(span, str):  # no match, or why the search was stopped
            return CheckResult(False, span or "no match")
        start, end = span
        return CheckResult(
            False, f"matched {shorten(output[start:end], 40)!r} at character {start}"
        )

    return NamedCheck._built_in(f"{name}:{_label(compiled.pattern)}", run, wants_case=False)


def max_chars(n: int) -> NamedCheck:
    """``max_chars``: the output has at most ``n`` characters (code points).

    >>> max_chars(3)("hola").detail
    '4 characters, more than 3'
    """
    return _at_most("max_chars", n, len, "characters")


def max_words(n: int) -> NamedCheck:
    """``max_words``: the output has at most ``n`` words (``len(output.split())``).

    >>> max_words(2)("te transfiero ya").detail
    '3 words, more than 2'
    """
    return _at_most("max_words", n, lambda output: len(output.split()), "words")


def _at_most(name: str, n: Any, count: Callable[[str], int], unit: str) -> NamedCheck:
    limit = _require_limit(n, name)

    def run(output: str) -> CheckResult:
        found = count(output)
        return _PASS if found <= limit else CheckResult(False, f"{found} {unit}, more than {limit}")

    return NamedCheck._built_in(name, run, wants_case=False)


def _flag(value: Any, field: str) -> Reading:
    if not isinstance(value, bool):
        raise _expected("true or false", value, field)
    return [(field, ())] if value else []


def _whole(value: Any, field: str) -> Reading:
    return [(field, (value,))]


def _texts(value: Any, field: str, *, single_ok: bool = True) -> Reading:
    """One reading per entry of a non-empty list of distinct strings (or of one string)."""
    expected = "a string or a list of strings" if single_ok else "a list of strings"
    if single_ok and isinstance(value, str):
        return [(field, (value,))]
    if not isinstance(value, list | tuple) or not value:
        empty = isinstance(value, list | tuple)
        got = "an empty list, which would check nothing" if empty else _describe(value)
        raise CheckSpecError(f"expected {expected}, got {got}", field=field)
    first: dict[str, int] = {}
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _expected("a string", item, f"{field}[{index}]")
        if first.setdefault(item, index) != index:
            raise CheckSpecError(f"{item!r} repeats entry {first[item]}", field=f"{field}[{index}]")
    return [(f"{field}[{index}]", (item,)) for index, item in enumerate(value)]


_names = partial(_texts, single_ok=False)


def _paths(what: str) -> Callable[[Any, str], Reading]:
    """The reader of an object of path → ``what``: ``(field.path, (path, its value))`` each."""

    def read(value: Any, field: str) -> Reading:
        if (type(value) is not dict and not isinstance(value, Mapping)) or not value:
            got = "an empty object, which would check nothing" if value == {} else _describe(value)
            raise CheckSpecError(f"expected an object of path → {what}, got {got}", field=field)
        return [(f"{field}.{path}", (path, argument)) for path, argument in value.items()]

    return read


def _expect_builder(factory: Callable[..., Any], read: Callable[[Any, str], Reading]) -> Builder:
    def build(value: Any, field: str) -> list[NamedCheck]:
        built: list[NamedCheck] = []
        for subfield, arguments in read(value, field):
            try:
                made = factory(*arguments)
            except CheckSpecError as error:
                raise CheckSpecError(error.reason, field=subfield) from None
            built += made if isinstance(made, list) else [made]
        return built

    @lru_cache(maxsize=512, typed=True)  # checks hold no state: a plain value's are shared
    def shared(value: Any, field: str) -> tuple[NamedCheck, ...]:
        return tuple(build(list(value) if type(value) is tuple else value, field))

    def built(value: Any, field: str) -> Sequence[NamedCheck]:
        if type(value) is list and all(type(item) is str for item in value):
            return shared(tuple(value), field)
        return shared(value, field) if type(value) in (str, int, bool) else build(value, field)

    return built


def _in_range_of(path: str, bounds: Any) -> NamedCheck:
    if not isinstance(bounds, list | tuple) or len(bounds) != 2:
        raise _expected("[min, max] (null for an open end)", bounds)
    return in_range(path, *bounds)


_PATHED = ("equals", "one_of", "range")  # the keys whose value is an object of path -> value
_DECLARED: set[str] = set()  # the keys of the suite file read last
# The expect keys in the order their checks run; extras' keys load on first use (_load_builder).
_EXPECT: dict[str, Builder] = {
    "valid_json": _expect_builder(valid_json, _flag),
    "fields": _expect_builder(has_field, _names),
    "equals": _expect_builder(equals, _paths("value")),
    "one_of": _expect_builder(one_of, _paths("list of allowed values")),
    "range": _expect_builder(_in_range_of, _paths("[min, max]")),
    "contains": _expect_builder(contains, _texts),
    "not_contains": _expect_builder(not_contains, _texts),
    "contains_i": _expect_builder(partial(_text_check, "contains_i", found=True), _texts),
    "not_contains_i": _expect_builder(partial(_text_check, "not_contains_i", found=False), _texts),
    "regex": _expect_builder(matches, _texts),
    "not_regex": _expect_builder(not_matches, _texts),
    "max_chars": _expect_builder(max_chars, _whole),
    "max_words": _expect_builder(max_words, _whole),
}

EXPECT_KEYS: tuple[str, ...] = (*_EXPECT, *_EXTRAS["expect"])
"""The keys an ``expect`` block may use, in the order their checks run (registered keys last)."""

_ORDER = {key: index for index, key in enumerate(EXPECT_KEYS)}  # grows with registered keys
_FIELDS = {key: f"expect.{key}" for key in EXPECT_KEYS}  # (made once, not for every case)


def register_expect(key: str, builder: Builder | str) -> None:
    """Let ``expect`` blocks use ``key``: ``builder(value, field)`` returns its checks, or
    ``"py:MODULE:FUNCTION"`` names the check ``key``, ``function(output[, expected[, case]])``.

    >>> register_expect("short", lambda value, field: [max_words(value)])
    >>> checks_from_expect({"short": 5}), _EXPECT.pop("short") is not None
    ([NamedCheck('max_words')], True)
    """
    if not isinstance(key, str) or not key.strip():
        raise _expected("a non-empty string", key, "key")
    if key in _EXPECT or key in _EXTRAS["expect"]:
        raise CheckSpecError(f"the expect key {key!r} is taken", field="key")
    if isinstance(builder, str):
        builder = _python_builder(builder, key)
    if not callable(builder):
        raise _expected("a callable", builder, key)
    _EXPECT[key] = builder
    _ORDER.setdefault(key, len(_ORDER))


def _python_builder(spec: str, key: str) -> Builder:
    function = python_target(spec, partial(CheckSpecError, field=key))
    count = min(_positional_count(function), 3)

    def run(value: Any, output: str, case: Any) -> Any:
        return function(*(output, value, case)[:count])

    return lambda value, field: [NamedCheck(key, partial(run, value), wants_case=True)]


def declare_expect(table: Mapping[str, Any]) -> None:
    """A suite file's ``[expect]`` table as the declared keys (those it declared before go): each
    a built-in key, ``{check, path}`` (the value expected at ``path``) or ``py:MODULE:FUNCTION``.

    >>> declare_expect({"monto": {"check": "equals", "path": "cents"}, "prohibido": "not_contains"})
    >>> run_checks('{"cents": 150}', checks_from_expect({"monto": 150000, "prohibido": ["1.5"]}))
    {'monto': False, 'prohibido:1.5': True}
    >>> declare_expect({})
    """
    for key in _DECLARED:
        del _EXPECT[key]
    _DECLARED.clear()
    for key, spec in table.items():
        try:
            py = isinstance(spec, str) and spec.startswith("py:")
            register_expect(key, spec if py else _alias(key, spec))
        except InputError as error:  # said at the user's key, wherever it was found
            raise CheckSpecError(error.reason, field=key) from None
        _DECLARED.add(key)


def _alias(key: str, spec: Any) -> Builder:
    """The builder of a built-in key (``spec``, or ``{check, path}``) whose checks are ``key``'s."""
    table = spec if isinstance(spec, Mapping) else {"check": spec}
    check, path = table.get("check"), table.get("path")
    if not isinstance(check, str) or check in _DECLARED:
        said = "a built-in key, {check, path} or py:MODULE:FUNCTION"
        raise CheckSpecError(f"expected {said}, got {_describe(spec)}", field=key)
    if check not in _EXPECT:
        _load_builder(check)
    if (path is not None) != (check in _PATHED):
        needs = "needs a path" if check in _PATHED else "takes no path"
        raise CheckSpecError(f"{check} {needs} (paths: {', '.join(_PATHED)})")
    if path is not None:
        _segments(path)  # a wrong path is refused at the suite's line, not at each case's
    base = _EXPECT[check]

    def build(value: Any, field: str) -> list[NamedCheck]:
        built = base(value if path is None else {path: value}, field)
        named = [key if path else key + c.name.removeprefix(check) for c in built]
        return [
            NamedCheck(name, c.func, wants_case=c._wants_case)
            for name, c in zip(named, built, strict=True)
        ]

    return build


def _load_builder(key: Any) -> None:
    if not isinstance(key, str):
        raise _expected("string keys", key, "expect")
    if key not in _EXTRAS["expect"]:
        known = list(dict.fromkeys([*EXPECT_KEYS, *_EXPECT]))
        close = did_you_mean(key, known)
        hint = f"did you mean {close!r}?" if close else f"expected one of {', '.join(known)}"
        raise CheckSpecError(f"unknown key {key!r}; {hint}", field=f"expect.{key}")
    _EXPECT[key] = _extra("expect", key, what=f"the expect key {key!r}")
    _ORDER.setdefault(key, len(_ORDER))


def checks_from_expect(expect: Mapping[str, Any]) -> list[NamedCheck]:
    """Validate a case's ``expect`` block and build its checks, in :data:`EXPECT_KEYS` order.

    >>> checks_from_expect({"not_contains": ["1250.5"], "valid_json": True})
    [NamedCheck('valid_json'), NamedCheck('not_contains:1250.5')]
    """
    if type(expect) is not dict and not isinstance(expect, Mapping):
        raise _expected("an object of expectations", expect, "expect")
    for key in expect:
        if key not in _EXPECT:
            _load_builder(key)
    built: list[NamedCheck] = []
    for key in sorted(expect, key=_ORDER.__getitem__):
        built.extend(_EXPECT[key](expect[key], _FIELDS.get(key) or f"expect.{key}"))
    if len({named.name for named in built}) != len(built):
        _require_unique_names(built, field="expect")
    return built


def _require_unique_names(checks: Sequence[NamedCheck], *, field: str) -> None:
    names = [named.name for named in checks]
    if len(set(names)) != len(names):
        twice = next(name for name, count in Counter(names).items() if count > 1)
        raise CheckSpecError(
            f"two checks are named {twice!r}; names must be unique "
            "(rename one with check(func, name=...))",
            field=field,
        )


def _as_result(outcome: Any) -> CheckResult | None:
    """The outcome as a result (None: the check abstains); what no check may return fails."""
    if isinstance(outcome, CheckResult) or outcome is None:
        return outcome
    if isinstance(outcome, bool):
        return CheckResult(outcome)
    if isinstance(outcome, tuple) and len(outcome) == 2:
        with suppress(CheckSpecError):  # CheckResult refuses what is not (bool, str | None)
            return CheckResult(*outcome)
    expected = "True, False, None, a CheckResult or (bool, str)"
    return CheckResult(False, f"returned {_show(outcome)}; a check must return {expected}")


def run_built_checks(output: str, built: Iterable[NamedCheck], case: Any) -> dict[str, CheckResult]:
    """Each check's result on text: one that raises fails, one that abstains is left out.

    >>> run_built_checks("hola", checks_from_expect({"max_chars": 3}), None)
    {'max_chars': CheckResult(passed=False, detail='4 characters, more than 3')}
    """
    results = {}
    for named in built:
        try:
            outcome = named.func(output, case) if named._wants_case else named.func(output)
        except Exception as error:  # one broken check must not hide the others' results
            outcome = CheckResult(False, f"raised {type(error).__name__}: {error}")
        result = outcome if type(outcome) is CheckResult else _as_result(outcome)
        if result is not None:
            results[named.name] = result
    return results


def run_checks_detailed(
    output: str | None, checks: Iterable[CheckFunction], *, case: Any = None
) -> dict[str, CheckResult]:
    """Run every check on ``output``: ``{name: CheckResult}`` (no output fails every check).

    >>> run_checks_detailed("hola", [check(lambda output: {}["amount"], name="broken")])
    {'broken': CheckResult(passed=False, detail="raised KeyError: 'amount'")}
    """
    named = [item if isinstance(item, NamedCheck) else check(item) for item in checks]
    _require_unique_names(named, field="checks")
    if output is None:
        return {item.name: CheckResult(False, "no output") for item in named}
    if not isinstance(output, str):
        raise _expected("the output as a string or None", output, "output")
    return run_built_checks(output, named, case)


def run_checks(
    output: str | None, checks: Iterable[CheckFunction], *, case: Any = None
) -> dict[str, bool]:
    """Run every check on ``output``: ``{name: passed}`` (see :func:`run_checks_detailed`).

    >>> run_checks("Transferiré $1.250,50", [contains("$1.250,50"), not_contains("1250.5")])
    {'contains:$1.250,50': True, 'not_contains:1250.5': True}
    """
    return {name: r.passed for name, r in run_checks_detailed(output, checks, case=case).items()}
