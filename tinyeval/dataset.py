"""Cases in: read and validate them before anything runs (errors name file, line and field),
map fields, sample, split a holdout, fingerprint."""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import math
import random
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

from . import _extra, checks
from ._formats import _JSON_CELLS, MAX_LINE_BYTES, DatasetError, _iter_records
from .errors import InputError, TinyevalError, did_you_mean, key_values
from .errors import describe_json as _describe


@dataclass(frozen=True)
class Case:
    """One case: what was asked, what the system answered (None: to generate), what it must satisfy.

    >>> Case(id="amt-001", output='{"amount_cents": 125050}', category="amounts").category
    'amounts'
    """

    id: str
    input: Any = None
    output: str | None = None
    context: str | None = None
    category: str = "default"
    expect: Mapping[str, Any] = field(default_factory=dict)
    origin: str | None = None
    tool_calls: Sequence[Any] = ()
    label: str | float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    conversation: Any = None  # an object of the extra that read the messages
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)
    # the checks of ``expect``, built once when the case was read
    built_checks: tuple[Mapping[str, Any], tuple[checks.NamedCheck, ...]] | None = field(
        default=None, compare=False, repr=False
    )

    def expect_checks(self) -> list[checks.NamedCheck]:
        """The checks of ``expect``, built when the case was read (or now, if it was replaced)."""
        built = self.built_checks
        if built is not None and built[0] is self.expect:  # not an expect replaced since
            return list(built[1])
        return checks.checks_from_expect(self.expect)

    def __getstate__(self) -> dict[str, Any]:
        # built checks are closures, which cannot be pickled: another process builds them again
        return {**self.__dict__, "built_checks": None}

    def to_dict(self) -> dict[str, Any]:
        """The case as a JSON-ready dict (recognised keys, ``meta``, and its conversation's)."""
        data = {  # every case read is fingerprinted through here: spelt out, not a loop
            "id": self.id,
            "input": self.input,
            "output": self.output,
            "context": self.context,
            "category": self.category,
            "expect": dict(self.expect),
            "origin": self.origin,
            "tool_calls": list(self.tool_calls),
            "label": self.label,
            "meta": dict(self.meta),
        }
        if self.conversation is not None:
            data["conversation"] = self.conversation.to_dict()
        return data

    def to_record(self) -> dict[str, Any]:
        """The case as a flat record, as it would stand in a JSONL file (``meta`` keys inline).

        >>> Case(id="x", output="hola", meta={"team": "pagos"}).to_record()
        {'id': 'x', 'output': 'hola', 'category': 'default', 'team': 'pagos'}
        """
        data = self.to_dict()
        data["tool_calls"] = data["tool_calls"] or None
        data["expect"] = data["expect"] or None
        record = {key: data[key] for key in _FIELDS if data[key] is not None}
        return {**record, **self.meta}


_FIELDS = tuple(f.name for f in dataclasses.fields(Case))[:9]  # the keys a Case field holds
RECOGNISED_KEYS = (*_FIELDS, "messages")  # the messages of a conversation (agents/)
_RECOGNISED = frozenset(RECOGNISED_KEYS)
MAPPED_TO_META = ("cluster", "retrieved", "relevant")  # mappable keys a case keeps in its meta


def parse_field_mapping(
    items: Iterable[str],
    keys: Sequence[str] = RECOGNISED_KEYS,
    meta: Sequence[str] = MAPPED_TO_META,
) -> dict[str, str]:
    """Parse ``KEY=PATH`` items (``--field``) into a mapping; each KEY one of ``keys`` or ``meta``.

    >>> parse_field_mapping(["input=request.messages.0.content", "id=request_id"])
    {'input': 'request.messages.0.content', 'id': 'request_id'}
    """
    mapping = key_values(items, "KEY=PATH", field="fields", error=DatasetError)
    for key in mapping:
        _check_recognised(key, keys, meta)
    return mapping


def _check_recognised(
    key: str, keys: Sequence[str] = RECOGNISED_KEYS, meta: Sequence[str] = MAPPED_TO_META
) -> None:
    if key in keys or key in meta:
        return
    close = did_you_mean(key, keys)
    hint = f"did you mean {close!r}?" if close else f"expected one of {', '.join(keys)}"
    raise DatasetError(f"unknown key {key!r}; {hint}", field="fields")


_MISSING = object()


def _apply_mapping(
    record: Mapping[str, Any], fields: Mapping[str, str], where: dict[str, Any]
) -> dict[str, Any]:
    """Rename keys of a raw record through a field mapping; unmapped keys pass through."""
    mapped_sources = {path.split(".")[0] for path in fields.values()}
    out = {k: v for k, v in record.items() if k not in fields and k not in mapped_sources}
    for key, dotted in fields.items():
        try:
            out[key] = _get_mapped(record, dotted)
        except _PartlyMissing as exc:
            raise DatasetError(f"{key}={dotted}: {exc}", field="fields", **where) from None
        except checks.CheckSpecError as exc:
            raise DatasetError(f"{key}={dotted}: {exc.reason}", field="fields") from None
        except LookupError:
            if key == "id":
                reason = f"the mapped path {dotted!r} is not in this record"
                raise DatasetError(reason, field="id", **where) from None
    return out


class _PartlyMissing(TinyevalError):
    """A wildcard path found in some elements of a list and not in others."""


def _get_mapped(record: Any, dotted: str) -> Any:
    """The value at ``dotted``; a ``*`` part maps the rest over a list (``docs.*.text``)."""
    head, star, rest = dotted.partition("*")
    if not star:
        return checks.get_path(record, dotted)
    prefix = head.rstrip(".")
    if (head and not head.endswith(".")) or (rest and not rest.startswith(".")):
        reason = f"expected * as a whole part of the path, as in 'docs.*.text', got {dotted!r}"
        raise checks.CheckSpecError(reason, field="path")
    items = checks.get_path(record, prefix) if prefix else record
    where = repr(prefix) if prefix else "the top level"
    if not isinstance(items, list):
        raise LookupError(f"{where} is not an array, so * cannot map over it")
    rest = rest.removeprefix(".")
    values = []
    for index, item in enumerate(items):
        try:
            values.append(_get_mapped(item, rest) if rest else item)
        except LookupError as exc:
            raise _PartlyMissing(f"element {index} of {where}: {exc}") from None
    return values


def _expect_type(value: Any, expected: str, field_name: str, where: dict[str, Any]) -> None:
    raise DatasetError(f"expected {expected}, got {_describe(value)}", field=field_name, **where)


class ResultsNotCasesError(DatasetError):
    """A results file (rows written by ``tinyeval run``) given where cases were expected."""


# keys every result row has and no cases file does (see tinyeval.records)
_RESULT_ROW_KEYS = frozenset({"status", "checks", "tinyeval_version", "dataset_fingerprint"})
_RESULT_STATUSES = ("pass", "fail", "error", "unchecked")


def _build_case(record: Any, where: dict[str, Any], *, line_id: str | None) -> Case:
    # every case read comes through here: the common shapes are recognised by exact type first
    if type(record) is not dict and not isinstance(record, Mapping):
        reason = f"expected a JSON object for each case, got {_describe(record)}"
        raise DatasetError(reason, **where)
    rec = dict(record)
    if rec.keys() >= _RESULT_ROW_KEYS and rec.get("status") in _RESULT_STATUSES:
        raise ResultsNotCasesError(
            "looks like a results file written by tinyeval run, not a cases file: its rows "
            "have no expect blocks, so running them as cases would check nothing",
            **where,
        )
    # a typo of an absent recognised key ("expects") must not quietly become meta, the case
    # running with no expectations; the common case, only recognised keys, has nothing to look at
    if not _RECOGNISED.issuperset(rec):
        absent = [k for k in RECOGNISED_KEYS if k not in rec and not (k == "id" and line_id)]
        for key in rec:
            if key in _RECOGNISED or not isinstance(key, str):
                continue
            if meant := did_you_mean(key.lower(), absent, cutoff=0.88):
                hint = f"keep it under another name, or map it (fields {meant}={key})"
                said = f"unknown key {key!r}; did you mean {meant!r}? (if it is your own data"
                raise DatasetError(f"{said}, {hint})", field=key, **where)
    case_id = rec.pop("id", _MISSING if line_id is None else line_id)
    if case_id is _MISSING:
        reason = "every case needs an id (a non-empty string), or name the cases by their line"
        raise DatasetError(f"{reason} (id_from_line)", field="id", **where)
    if isinstance(case_id, int) and not isinstance(case_id, bool):
        case_id = str(case_id)
    if not isinstance(case_id, str) or not case_id.strip():
        _expect_type(case_id, "a non-empty string", "id", where)
    null_output = "output" in rec and rec["output"] is None
    conversation = None  # a plain input: no conversation to read
    if "messages" in rec or _has_messages(rec.get("input")):
        conversation = _read("messages", rec, where)
    output = rec.pop("output", None)
    if isinstance(output, dict | list):
        output = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    elif output is not None and not isinstance(output, str):
        _expect_type(output, "a string, a JSON object or list, or null", "output", where)
    context = rec.pop("context", None)
    if isinstance(context, list) and all(isinstance(c, str) for c in context):
        context = "\n\n".join(context)
    elif context is not None and not isinstance(context, str):
        _expect_type(context, "a string, a list of strings, or null", "context", where)
    category = rec.pop("category", None)
    category = "default" if category is None else category
    if not isinstance(category, str) or not category.strip():
        _expect_type(category, "a non-empty string", "category", where)
    origin = rec.pop("origin", None)
    if origin is not None and isinstance(origin, int | float) and not isinstance(origin, bool):
        origin = str(origin)
    elif origin is not None and not isinstance(origin, str):
        _expect_type(origin, "a string or null", "origin", where)
    expect = rec.pop("expect", None)
    if expect is not None and type(expect) is not dict and not isinstance(expect, Mapping):
        _expect_type(expect, "an object of expectations", "expect", where)
    expect = dict(expect or {})
    try:
        built = tuple(checks.checks_from_expect(expect))
    except InputError as exc:  # a wrong expect block, or a key whose extra this copy lacks
        raise DatasetError(exc.reason, field=exc.field, **where) from None
    tool_calls = rec.pop("tool_calls", None)
    if tool_calls is not None and not isinstance(tool_calls, list):
        _expect_type(tool_calls, "a list of tool calls", "tool_calls", where)
    if tool_calls:
        _read("tool_calls", tool_calls, where)
        if null_output:
            output = ""  # "content": null with tool calls: a response that only calls tools
    given_label = rec.pop("label", None)
    label = _label_of(given_label)
    if label is _MISSING:
        _expect_type(given_label, '"PASS", "FAIL", a number, or null', "label", where)

    case = object.__new__(Case)  # every field given: the dataclass's frozen __init__ costs 5x more
    case.__dict__.update(
        id=case_id,
        input=rec.pop("input", None),
        output=output,
        context=context,
        category=category,
        expect=expect,
        origin=origin,
        tool_calls=tuple(tool_calls or ()),
        label=label,
        meta=rec,
        conversation=conversation,
        source=where.get("path"),
        line=where.get("line"),
        built_checks=(expect, built),
    )
    return case


def _read(reader: str, value: Any, where: dict[str, Any]) -> Any:
    """What the extra ``_EXTRAS["reader"][reader]`` reads of ``value``; errors at this line."""
    try:
        return _extra("reader", reader, what=f"a case with {reader}")(value)
    except InputError as exc:
        raise DatasetError(exc.reason, field=exc.field or reader, **where) from None


def _has_messages(value: Any) -> bool:
    """Whether ``value`` looks like a chat message list: objects that all have a ``role``."""
    roles = isinstance(value, list) and all(isinstance(m, Mapping) and "role" in m for m in value)
    return roles and bool(value)


def _label_of(label: Any) -> Any:
    """A label as PASS, FAIL, a finite number (``"0.5"`` -> 0.5) or None; _MISSING otherwise."""
    if isinstance(label, str):
        if label.strip().upper() in ("PASS", "FAIL"):
            return label.strip().upper()
        with suppress(ValueError):
            return int(label)
        with suppress(ValueError):
            label = float(label)
    if label is None or (isinstance(label, int) and not isinstance(label, bool)):
        return label
    return label if isinstance(label, float) and math.isfinite(label) else _MISSING


def iter_cases(
    path: str | Path,
    *,
    fields: Mapping[str, str] | None = None,
    id_from_line: bool = False,
    format: str | None = None,
    unique_ids: bool = True,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[Case]:
    """Read and validate cases one at a time; a DatasetError comes at the first bad record, so
    consume them all before acting on any.

    >>> import json, tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(json.dumps({"request_id": "r1", "q": {"text": "¿Cuánto?"}}))
    >>> [c.input for c in iter_cases(f.name, fields={"id": "request_id", "input": "q.text"})]
    ['¿Cuánto?']
    >>> os.remove(f.name)
    """
    path, fields = str(path), dict(fields or {})
    for key in fields:
        _check_recognised(key)
    same: dict[str, Any] = {"id_from_line": id_from_line, "format": format, "fields": fields}
    again = functools.partial(
        iter_cases, path, **same, max_line_bytes=max_line_bytes, unique_ids=False
    )
    found, records = dict.fromkeys(fields, 0), 0
    json_cells = {*_JSON_CELLS, *(fields[key] for key in _JSON_CELLS if key in fields)}
    with _IdIndex() as seen:
        for line, record in _iter_records(path, format, json_cells, max_line_bytes):
            where: dict[str, Any] = {"path": path, "line": line}
            records += 1
            if fields:
                if not isinstance(record, Mapping):
                    raise DatasetError(f"expected a JSON object, got {_describe(record)}", **where)
                record = _apply_mapping(record, fields, where)
                for key in fields:
                    found[key] += key in record
            case = _build_case(record, where, line_id=f"line-{line}" if id_from_line else None)
            if unique_ids and (repeated := seen.add(case.id, line)):
                raise _duplicate(repeated, path, again)
            yield case
        for key, count in found.items():
            if records and not count:
                reason = f"{key}={fields[key]}: the path is in none of the {records} records"
                raise DatasetError(reason, path=path, field="fields")
        if repeated := seen.flush():
            raise _duplicate(repeated, path, again)


def _duplicate(
    repeated: tuple[str, int], path: str, again: Callable[[], Iterator[Case]]
) -> DatasetError:
    case_id, line = repeated
    first = ""
    if path != "-":  # the line of its first occurrence, read again
        earlier = next((case.line for case in again() if case.id == case_id), None)
        first = f" (first on line {earlier})"
    reason = f"duplicate id {case_id!r}{first}; ids must be unique"
    return DatasetError(reason, field="id", path=path, line=line)


class _IdIndex:
    """The ids seen, as 96-bit digests; past ``spill_after`` they move to the index on disk of
    tinyeval/scale/ (if present), where a repeat shows when its batch is written or flushed."""

    def __init__(self, *, spill_after: int = 50_000, batch: int = 10_000) -> None:
        self._memory: set[bytes] = set()
        self._spill_after = spill_after
        self._batch = batch
        self._disk: Any = None

    def add(self, case_id: str, line: int) -> tuple[str, int] | None:
        """Record an id read on ``line``; the first repeat found so far, or None."""
        digest = hashlib.blake2b(case_id.encode("utf-8", "surrogatepass"), digest_size=12).digest()
        if self._disk is not None:
            return self._disk.add(digest, case_id, line)
        if digest in self._memory:
            return case_id, line
        self._memory.add(digest)
        if len(self._memory) > self._spill_after:
            try:
                spill = _extra("reader", "case_ids", what="an index of case ids on disk")
            except InputError:  # a copy without tinyeval/scale/: the ids stay in memory
                self._spill_after = sys.maxsize
            else:
                self._disk, self._memory = spill(self._memory, batch=self._batch), set()
        return None

    def flush(self) -> tuple[str, int] | None:
        """Write the ids pending on disk; the first of them already there, or None."""
        return None if self._disk is None else self._disk.flush()

    def __enter__(self) -> _IdIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._disk is not None:
            self._disk.close()
            self._disk = None


class ReadOptions(TypedDict, total=False):
    """The keywords of :func:`iter_cases`, which :func:`load` takes too."""

    fields: Mapping[str, str] | None
    id_from_line: bool
    format: str | None
    unique_ids: bool
    max_line_bytes: int


def load(path: str | Path, **options: Unpack[ReadOptions]) -> list[Case]:
    """Every case of :func:`iter_cases` (same keywords: :class:`ReadOptions`), read; an empty
    file is an error.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write('{"id": "a", "output": "hola", "category": "tone"}\\n')
    >>> [(c.id, c.category) for c in load(f.name)]
    [('a', 'tone')]
    >>> os.remove(f.name)
    """
    cases = list(iter_cases(path, **options))
    if not cases:
        raise DatasetError("no cases in the file", path=str(path))
    return cases


def sample(cases: Iterable[Case], n: int, *, seed: int | str) -> list[Case]:
    """``n`` cases picked by a seeded shuffle: the same seed gives the same sample.

    >>> cases = [Case(id=str(i)) for i in range(10)]
    >>> [c.id for c in sample(cases, 3, seed=7)] == [c.id for c in sample(cases, 3, seed=7)]
    True
    """
    pool = list(cases)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise DatasetError(f"expected a non-negative integer, got {n!r}", field="sample size")
    if n > len(pool):
        there = "there is only 1 case" if len(pool) == 1 else f"there are only {len(pool)} cases"
        raise DatasetError(f"asked for a sample of {n} but {there}", field="sample size")
    return random.Random(str(seed)).sample(pool, n)


def in_holdout(case_id: str, fraction: float, *, salt: str = "tinyeval-holdout") -> bool:
    """Whether a case id falls in the holdout of :func:`split_holdout`.

    >>> in_holdout("amt-001", 0.2) == (split_holdout([Case(id="amt-001")], 0.2)[1] != [])
    True
    """
    if not 0.0 < fraction < 1.0:
        reason = f"expected a number between 0 and 1 (exclusive), got {fraction!r}"
        raise DatasetError(reason, field="holdout fraction")
    digest = hashlib.sha256(f"{salt}\x00{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split_holdout(
    cases: Iterable[Case], fraction: float, *, salt: str = "tinyeval-holdout"
) -> tuple[list[Case], list[Case]]:
    """(development, holdout) by a stable hash of each id: as the file grows, no case moves.

    >>> dev, hold = split_holdout([Case(id=f"c{i}") for i in range(1000)], 0.2)
    >>> len(hold)
    193
    """
    in_holdout("", fraction)  # refuses a fraction not between 0 and 1
    parts: tuple[list[Case], list[Case]] = ([], [])
    for case in cases:
        parts[in_holdout(case.id, fraction, salt=salt)].append(case)
    return parts


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def dataset_fingerprint(cases: Iterable[Case]) -> str:
    """A short, order-independent fingerprint of a set of cases (streamed).

    >>> a, b = Case(id="a", output="x"), Case(id="b", output="y")
    >>> dataset_fingerprint([a, b]) == dataset_fingerprint([b, a])
    True
    """
    taking = Fingerprinting()
    collections.deque(taking.adding(cases), maxlen=0)  # consumed, kept nowhere
    return taking.value()


class Fingerprinting:
    """:func:`dataset_fingerprint` taken as the cases stream by through :meth:`adding`.

    >>> taking = Fingerprinting()
    >>> len(list(taking.adding([Case("a")]))), taking.value() == dataset_fingerprint([Case("a")])
    (1, True)
    """

    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    def adding(self, cases: Iterable[Case]) -> Iterator[Case]:
        """Each case of ``cases``, added to the fingerprint as it passes."""
        for case in cases:  # a sha256 of its content, not of where it was read from
            blob = _CANONICAL.encode(case.to_dict()).encode("utf-8", "surrogatepass")
            self.total += int.from_bytes(hashlib.sha256(blob).digest(), "big")  # reduced in value()
            self.count += 1
            yield case

    def value(self) -> str:
        """The fingerprint of the cases added so far."""
        total = self.total % 2**256
        return hashlib.sha256(f"{self.count}:{total:064x}".encode()).hexdigest()[:16]
