"""The error family (:class:`InputError` exits 2, :class:`IncompleteError` 3) and the helpers
every message is phrased with."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any


class TinyevalError(Exception):
    """The root of every error tinyeval raises."""


MAX_QUOTED = 200  # the most characters of input an error message quotes


def _one_line(text: str, limit: int, *, tail: bool = False) -> str:
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    if len(text) <= limit:
        return text
    return "…" + text[-limit:] if tail else f"{text[:limit]}… ({len(text):,} characters)"


class InputError(TinyevalError, ValueError):
    """Bad input or usage, said on one line as ``PATH:LINE: FIELD: REASON`` (the parts known).

    >>> str(InputError("expected a non-empty string", path="cases.jsonl", line=3, field="id"))
    'cases.jsonl:3: id: expected a non-empty string'
    >>> len(str(InputError("unknown criterion " + "x" * 10**6)))
    424
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = _one_line(reason, 2 * MAX_QUOTED)
        path = "<stdin>" if path == "-" else path
        self.path = None if path is None else _one_line(str(path), 2 * MAX_QUOTED, tail=True)
        self.line = line
        self.field = None if field is None else _one_line(field, MAX_QUOTED)
        where = self.path
        if line is not None:
            where = f"{where}:{line}" if where else f"line {line}"
        super().__init__(": ".join(part for part in (where, self.field, self.reason) if part))

    def __reduce__(self) -> tuple[Any, ...]:  # process pools send exceptions back pickled
        where = partial(type(self), path=self.path, line=self.line, field=self.field)
        return where, (self.reason,)


class IncompleteError(TinyevalError):
    """The work could not be completed, or what was read is incomplete (exit 3)."""


def plural(number: int, noun: str, plural_form: str | None = None) -> str:
    """``number`` and ``noun``, plural unless there is exactly one.

    >>> plural(1, "case"), plural(3, "case"), plural(12000, "row"), plural(2, "query", "queries")
    ('1 case', '3 cases', '12,000 rows', '2 queries')
    """
    word = noun if number == 1 else (plural_form or noun + "s")
    return f"{number:,} {word}"


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when cut.

    >>> shorten("a short text"), shorten("x" * 10, 5)
    ('a short text', 'xxxx…')
    """
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def listed(items: Sequence[str], most: int = 10, *, total: int | None = None) -> str:
    """The first ``most`` items, and how many more of ``total`` (default: all of them) there are.

    >>> listed(["a", "b", "c"], 2), listed(["a"], total=12)
    ('a, b and 1 more', 'a and 11 more')
    """
    total = len(items) if total is None else total
    text = ", ".join(items[:most])
    return f"{text} and {total - min(len(items), most):,} more" if total > most else text


def key_values(
    items: Iterable[str], form: str, *, field: str, error: type[InputError] = InputError
) -> dict[str, str]:
    """``KEY=VALUE`` items by key, split at the first ``=``; an item not of ``form`` is refused.

    >>> key_values(["tone = 95%", "output=a=b"], "CATEGORY=RATE", field="thresholds")
    {'tone': '95%', 'output': 'a=b'}
    """
    found: dict[str, str] = {}
    for item in items:
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key or not value:
            raise error(f"expected {form}, got {item!r}", field=field)
        if key in found:
            raise error(f"{key!r} is given twice", field=field)
        found[key] = value
    return found


def describe_json(value: Any, limit: int = 40) -> str:
    """A JSON value's kind, then the value when it is short.

    >>> describe_json(None), describe_json(True), describe_json("125050"), describe_json(125050)
    ('null', 'boolean true', 'string "125050"', 'number 125050')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, str):
        return f"string {shorten(json.dumps(value, ensure_ascii=False), limit)}"
    if isinstance(value, int | float):
        return f"number {shorten(repr(value), limit)}"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def json_problem(exc: json.JSONDecodeError) -> str:
    """What the JSON parser objected to, and at which column.

    >>> try:
    ...     json.loads('{"id": "b')
    ... except json.JSONDecodeError as exc:
    ...     json_problem(exc)
    'Unterminated string starting at column 8'
    """
    joiner = " column" if exc.msg.endswith(" at") else " at column"
    return f"{exc.msg}{joiner} {exc.colno}"


def did_you_mean(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The choice ``word`` most looks like a slip of, or None.

    >>> did_you_mean("not_contain", ["contains", "not_contains"])
    'not_contains'
    """
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return close[0] if close else None


def utc_stamp() -> str:
    """Now, in UTC, as ISO 8601 with milliseconds and ``Z``.

    >>> stamp = utc_stamp()
    >>> len(stamp), stamp[10], stamp[-1]
    (24, 'T', 'Z')
    """
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def is_number(value: Any) -> bool:
    """True for a JSON number: an int or a float, never a boolean.

    >>> is_number(3), is_number(2.5), is_number(True), is_number("3")
    (True, True, False, False)
    """
    return isinstance(value, int | float) and not isinstance(value, bool)
