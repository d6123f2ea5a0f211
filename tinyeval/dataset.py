"""Cases: load them from logs, validate them before anything runs, sample and split them.

A case is one logged interaction (or one to be generated) plus what it is
expected to satisfy. Files are JSONL (one object a line; ``-`` reads standard
input), a JSON list, CSV with a header row, or YAML when PyYAML is installed,
each optionally gzip-compressed (``.gz``). Text is UTF-8, with or without a BOM.

Every problem is found at load time and raised as :class:`DatasetError`, whose
message names the file, the line, the field and what was expected::

    cases.jsonl:12: expect.not_contain: unknown key; did you mean 'not_contains'?

Recognised keys: ``id`` (required), ``input``, ``output``, ``context``,
``category`` (default ``"default"``), ``expect``, ``origin``, ``tool_calls``,
``label`` and ``messages``. Any other key is kept in :attr:`Case.meta`.

**Conversations.** ``messages`` is a chat message list (OpenAI or Anthropic
shapes, see :mod:`tinyeval.conversation`), read into :attr:`Case.conversation`
at load time; a top-level ``system`` next to it is Anthropic's system prompt.
When the list ends with an assistant turn and the case has no ``output``, that
turn is the response: its text is the output (empty when it only calls
tools), its tool calls are the case's ``tool_calls``, and the conversation
kept is what came before it. Without an ``input``, the input is the message
list (without that response). An ``input`` that is itself a message list is
read into a conversation the same way (but never split). A case whose
``output`` is null and that has tool calls (``"content": null`` with
``tool_calls``, as chat APIs log a response that only calls tools) has the
empty text as its output; an absent output is still one to generate.

**Field paths** (``fields=``, ``--field KEY=PATH``) are dotted paths into each
record; ``*`` stands for every element of a list, so
``context=retrieval.docs.*.text`` maps the texts of all documents to a list.

**Context** given as a list of strings (or mapped to one) is joined with a
blank line between passages, which is also how the judge shows a list.

**Traces.** ``format="otel"`` (detected for a ``.json`` file whose top level
has ``resourceSpans``) reads an OpenTelemetry GenAI trace export, one case
per trace (see :mod:`tinyeval.traces`).

This module uses :mod:`tinyeval.checks` (itself standalone) to validate the
``expect`` block, so a typo never becomes a check that checks nothing.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import json
import math
import random
import re
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import checks, traces
from .conversation import Conversation, from_messages, looks_like_messages
from .errors import InputError, TinyevalError, plural

__all__ = [
    "MAX_LINE_BYTES",
    "RECOGNISED_KEYS",
    "Case",
    "DatasetError",
    "ResultsNotCasesError",
    "dataset_fingerprint",
    "in_holdout",
    "iter_cases",
    "load",
    "parse_field_mapping",
    "sample",
    "split_holdout",
]

RECOGNISED_KEYS = (
    "id",
    "input",
    "output",
    "context",
    "category",
    "expect",
    "origin",
    "tool_calls",
    "label",
    "messages",
)

_FORMATS = ("jsonl", "json", "csv", "yaml", "otel")
_SUFFIX_FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".yaml": "yaml",
    ".yml": "yaml",
}


class DatasetError(InputError):
    """A dataset that cannot be loaded as it is.

    The message reads ``FILE:LINE: FIELD: what was expected``; the parts are
    also available as the attributes ``path``, ``line`` and ``field``. A
    problem with no file behind it (a bad option or argument) reads
    ``FIELD: what was expected``.

    >>> str(DatasetError("expected a non-empty string", path="cases.jsonl", line=3, field="id"))
    'cases.jsonl:3: id: expected a non-empty string'
    >>> str(DatasetError("expected KEY=PATH, got 'input'", field="fields"))
    "fields: expected KEY=PATH, got 'input'"
    """


@dataclass(frozen=True)
class Case:
    """One case: what was asked, what the system answered, and what it must satisfy.

    ``output`` is the logged response as text (``None`` when it is to be
    generated); a JSON object or list given as output is kept as its compact
    JSON text. ``source`` and ``line`` say where the case was read from.

    >>> case = Case(id="amt-001", output='{"amount_cents": 125050}', category="amounts")
    >>> case.category, case.expect
    ('amounts', {})
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
    conversation: Conversation | None = None
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The case as a plain JSON-ready dict (recognised keys, then ``meta``).

        A case with a conversation also has ``"conversation"`` (its
        :meth:`~tinyeval.conversation.Conversation.to_dict`); a case without
        one has no such key.

        >>> Case(id="x", input="hola").to_dict()["input"]
        'hola'
        """
        data = {
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
        record: dict[str, Any] = {"id": self.id}
        for key in RECOGNISED_KEYS[1:]:
            if key == "messages":  # the input holds the message list
                continue
            value = getattr(self, key)
            if key == "tool_calls":
                value = list(value) or None
            if key == "expect":
                value = dict(value) or None
            if value is not None:
                record[key] = value
        record.update(self.meta)
        return record


# --------------------------------------------------------------------------- reading


def parse_field_mapping(items: Iterable[str]) -> dict[str, str]:
    """Parse ``--field KEY=PATH`` options into a mapping for :func:`load`.

    >>> parse_field_mapping(["input=request.messages.0.content", "id=request_id"])
    {'input': 'request.messages.0.content', 'id': 'request_id'}
    >>> parse_field_mapping(["inptu=question"])
    Traceback (most recent call last):
    ...
    tinyeval.dataset.DatasetError: --field: unknown key 'inptu'; did you mean 'input'?
    """
    mapping: dict[str, str] = {}
    for item in items:
        key, sep, path = item.partition("=")
        key, path = key.strip(), path.strip()
        if not sep or not key or not path:
            raise DatasetError(f"expected KEY=PATH, got {item!r}", field="--field")
        _check_recognised(key, field_name="--field")
        mapping[key] = path
    return mapping


def _check_recognised(key: str, *, field_name: str) -> None:
    if key in RECOGNISED_KEYS:
        return
    import difflib

    close = difflib.get_close_matches(key, RECOGNISED_KEYS, n=1)
    hint = (
        f"; did you mean {close[0]!r}?"
        if close
        else f"; expected one of {', '.join(RECOGNISED_KEYS)}"
    )
    raise DatasetError(f"unknown key {key!r}{hint}", field=field_name)


def _detect_format(path: str) -> tuple[str, bool]:
    """Return (format, gzipped) from a file name."""
    if path == "-":
        return "jsonl", False
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    if gz:
        suffixes = suffixes[:-1]
    fmt = _SUFFIX_FORMATS.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        raise DatasetError(
            "cannot tell the format from the file name; expected .jsonl, .ndjson, .json, .csv, "
            ".yaml or .yml (optionally .gz), or give the format (--format on the command line, "
            "format= in Python)",
            path=path,
        )
    return fmt, gz


MAX_LINE_BYTES = 64 * 2**20
"""The longest line a cases file may hold, in bytes (64 MiB); JSON and YAML files,
read whole, may not be longer than this in total. Raise it with ``max_line_bytes``."""

_CHUNK = 2**20  # bytes read at a time: memory stays near the line cap, whatever the file


def _open_bytes(path: str, gz: bool) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    if gz:
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _too_long(limit: int, path: str, line: int, what: str = "the line") -> DatasetError:
    return DatasetError(
        f"{what} is longer than {plural(limit, 'byte')} (max_line_bytes); is this the right"
        " file? pass a larger max_line_bytes to read it",
        path=path,
        line=line,
    )


def _lines(raw: IO[bytes], path: str, limit: int) -> Iterator[tuple[int, str]]:
    """The file's lines, decoded from UTF-8 (a BOM dropped), each ending kept, with their numbers.

    Reads at most ``_CHUNK`` bytes at a time and refuses a line over ``limit``
    bytes before holding more of it, so a file that is one endless line
    (``/dev/zero``, a gzip bomb) ends in an error with bounded memory.

    >>> import io
    >>> list(_lines(io.BytesIO(b"\\xef\\xbb\\xbfa\\r\\nb"), "f.jsonl", 10))
    [(1, 'a\\r\\n'), (2, 'b')]
    """
    number = 0
    pending: list[bytes] = []
    size = 0

    def decoded(data: bytes) -> str:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"not UTF-8 text (byte {data[exc.start]:#04x} cannot be decoded); "
                "save the file as UTF-8",
                path=path,
                line=number,
            ) from None
        return text[1:] if number == 1 and text.startswith("\ufeff") else text

    while chunk := raw.read(_CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            if size + end - start > limit:
                raise _too_long(limit, path, number)
            piece = chunk[start : end + 1]
            yield number, decoded(b"".join([*pending, piece]) if pending else piece)
            pending, size, start = [], 0, end + 1
        if start < len(chunk):
            pending.append(chunk[start:])
            size += len(chunk) - start
            if size > limit:
                raise _too_long(limit, path, number + 1)
    if pending:
        number += 1
        yield number, decoded(b"".join(pending))


def _read_whole(raw: IO[bytes], path: str, limit: int) -> str:
    """A whole JSON or YAML document, refused past ``limit`` bytes."""
    parts, size = [], 0
    for number, text in _lines(raw, path, limit):
        size += len(text)
        if size > limit:
            raise _too_long(limit, path, number, "the document (JSON and YAML are read whole)")
        parts.append(text)
    return "".join(parts)


def _too_many_digits() -> str:
    limit = sys.get_int_max_str_digits()
    return f"an integer too long to read (Python reads integers of at most {limit:,} digits)"


class _DuplicateKey(TinyevalError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members as a dict, refusing a key given twice (last-wins hides data)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


@contextlib.contextmanager
def _json_errors(path: str, line: int | None, field: str | None = None) -> Iterator[None]:
    """Turn every way decoding JSON can fail, but a syntax error, into a one-line error."""
    try:
        yield
    except _DuplicateKey as exc:
        raise DatasetError(
            f"duplicate key {exc.args[0]!r} in a JSON object", path=path, line=line, field=field
        ) from None
    except RecursionError:
        raise DatasetError(
            "JSON nested too deeply to read (deeper than the interpreter's limit)",
            path=path,
            line=line,
            field=field,
        ) from None
    except (json.JSONDecodeError, DatasetError):
        raise
    except ValueError:  # an integer beyond Python's digit limit
        raise DatasetError(_too_many_digits(), path=path, line=line, field=field) from None


def _decode_json(text: str, path: str, line: int | None, field: str | None = None) -> Any:
    """One JSON value; a duplicate key, too deep a nesting, too long an integer or a lone
    surrogate is a one-line :class:`DatasetError` (a syntax error stays a JSONDecodeError).

    >>> _decode_json('{"id": "a", "id": "b"}', "cases.jsonl", 4)
    Traceback (most recent call last):
    ...
    tinyeval.dataset.DatasetError: cases.jsonl:4: duplicate key 'id' in a JSON object
    """
    with _json_errors(path, line, field):
        value = _DECODER.decode(text)
    if _SURROGATE_ESCAPE.search(text):
        _refuse_surrogates(value, path, line, field)
    return value


def _refuse_surrogates(value: Any, path: str, line: int | None, field: str | None) -> None:
    """Refuse a lone surrogate (``"\\ud800"`` escaped in JSON or YAML): it is not text."""
    stack: list[tuple[str | None, Any]] = [(field, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise DatasetError(
                    f"a lone surrogate ({item[exc.start]!r}) is not text; "
                    "fix the escape that made it",
                    path=path,
                    line=line,
                    field=where,
                ) from None
        elif isinstance(item, Mapping):
            for key, member in item.items():
                stack.append((f"{where}.{key}" if where else str(key), member))
                stack.append((where, key))
        elif isinstance(item, list):
            stack.extend((f"{where or ''}[{n}]", member) for n, member in enumerate(item))


def _records_jsonl(lines: Iterable[tuple[int, str]], path: str) -> Iterator[tuple[int, Any]]:
    for number, text in lines:
        if not text.strip():
            continue
        try:  # without the line ending, an error at the end of the line gets its real column
            yield number, _decode_json(text.rstrip("\r\n"), path, number)
        except json.JSONDecodeError as exc:
            if not text.endswith("\n"):
                raise DatasetError(
                    f"the last line is not complete JSON: {_json_problem(exc)} "
                    "(is the file cut short?)",
                    path=path,
                    line=number,
                ) from None
            raise DatasetError(
                f"not valid JSON: {_json_problem(exc)}", path=path, line=number
            ) from None


def _json_problem(exc: json.JSONDecodeError) -> str:
    """What the JSON parser objected to and the column it was at, read as one phrase.

    Some of its messages already end in "at" ("Unterminated string starting at"),
    so the column is joined without a second one.

    >>> try:
    ...     json.loads('{"id": "b')
    ... except json.JSONDecodeError as exc:
    ...     _json_problem(exc)
    'Unterminated string starting at column 8'
    """
    joiner = " column" if exc.msg.endswith(" at") else " at column"
    return f"{exc.msg}{joiner} {exc.colno}"


def _records_json(text: str, path: str) -> Iterator[tuple[int, Any]]:
    """Yield the items of a top-level JSON list with the line each starts on."""
    decoder = _DECODER
    try:
        with _json_errors(path, None):  # structure first; an item's own problems get its line
            whole = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"not valid JSON: {_json_problem(exc)}", path=path, line=exc.lineno
        ) from None
    if isinstance(whole, dict) and "resourceSpans" in whole:
        yield from traces.records_from_otel(whole, text, path)
        return
    if isinstance(whole, dict) and isinstance(whole.get("cases"), list):
        start = _member_start(text, "cases")
    elif isinstance(whole, list):
        start = text.index("[")
    else:
        raise DatasetError(
            'expected a JSON list of cases (or an object with a "cases" list), '
            f"got {_describe(whole)}",
            path=path,
            line=1,
        )
    pos = start + 1
    line = text.count("\n", 0, pos) + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            if text[pos] == "\n":
                line += 1
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return
        with _json_errors(path, line):
            item, end = decoder.raw_decode(text, pos)
        if _SURROGATE_ESCAPE.search(text, pos, end):
            _refuse_surrogates(item, path, line, None)
        yield line, item
        line += text.count("\n", pos, end)
        pos = end


def _member_start(text: str, key: str) -> int:
    """Where the value of ``key`` begins in a valid top-level JSON object (the last one wins)."""
    decoder = json.JSONDecoder()
    pos, found = text.index("{") + 1, -1
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "}":
            return found
        name, pos = decoder.raw_decode(text, pos)
        pos = text.index(":", pos) + 1
        while text[pos] in " \t\r\n":
            pos += 1
        if name == key:
            found = pos
        _, pos = decoder.raw_decode(text, pos)


_JSON_CELLS = ("expect", "tool_calls", "messages")
_CSV_FIELD_LIMIT = 2**31 - 1  # logged contexts outgrow the csv module's default 128 KiB per cell


def _records_csv(
    lines: Iterable[tuple[int, str]], path: str, json_cells: Iterable[str] = _JSON_CELLS
) -> Iterator[tuple[int, Any]]:
    json_cells = frozenset(json_cells)
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    reader = csv.reader((text for _, text in lines), strict=True)
    start = 1  # the line the row being read begins on
    try:
        header = next(reader, None)
        while header == []:  # blank lines before the header
            start = reader.line_num + 1
            header = next(reader, None)
        if header is None:
            return
        _refuse_nul(header, header, path, start)
        names = [name.strip() for name in header]
        _check_separator(names, path, start)
        if not all(names):
            raise DatasetError("the header row has an empty column name", path=path, line=start)
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise DatasetError(
                f"the header row names the column {twice[0]!r} twice", path=path, line=start
            )
        start = reader.line_num + 1
        for cells in reader:  # a blank line gives [] and is skipped
            record = _csv_record(names, cells, path, start, json_cells)
            if record:
                yield start, record
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DatasetError(f"not valid CSV: {exc}", path=path, line=start) from None


def _check_separator(names: list[str], path: str, line: int) -> None:
    """Refuse a header that is one column holding semicolons or tabs: another separator."""
    if len(names) != 1 or not any(sep in names[0] for sep in ";\t"):
        return
    shown = names[0] if len(names[0]) <= 60 else names[0][:57] + "..."
    raise DatasetError(
        f"the header has 1 column {shown!r}: tinyeval reads comma-separated CSV "
        "(re-export with commas)",
        path=path,
        line=line,
    )


def _csv_record(
    names: list[str],
    cells: list[str],
    path: str,
    line: int,
    json_cells: frozenset[str] = frozenset(_JSON_CELLS),
) -> dict[str, Any]:
    """One CSV row as a record: an empty cell is an absent value, JSON cells are decoded.

    The JSON cells are the columns named ``expect``, ``tool_calls`` or
    ``messages``, and the columns a field mapping sends to those keys.

    A row must have as many cells as the header has columns (a blank line,
    no cells at all, is skipped before it gets here).
    """
    if cells and len(cells) != len(names):
        raise DatasetError(
            f"{_count(len(cells), 'cell')} but the header has {_count(len(names), 'column')}",
            path=path,
            line=line,
        )
    _refuse_nul(names, cells, path, line)
    record: dict[str, Any] = {}
    for key, cell in zip(names, cells, strict=False):  # [] (a blank line) gives no record
        if cell == "":
            continue
        if key in json_cells:
            try:
                record[key] = _decode_json(cell, path, line, key)
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    f"expected JSON in this cell: {_json_problem(exc)}",
                    path=path,
                    line=line,
                    field=key,
                ) from None
        else:
            record[key] = cell
    return record


def _refuse_nul(names: list[str], cells: list[str], path: str, line: int) -> None:
    """Refuse a NUL character in a CSV cell, as JSON refuses one in a string."""
    for key, cell in zip(names, cells, strict=False):
        if "\x00" in cell:
            raise DatasetError(
                "a NUL character (\\x00) in the cell; is this a text file?",
                path=path,
                line=line,
                field=key if cell is not key else None,
            )


def _count(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless there is exactly one: ``1 cell``, ``3 cells``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _records_yaml(text: str, path: str) -> Iterator[tuple[int, Any]]:
    try:
        import yaml  # optional: only when a YAML file is given
    except ImportError:
        raise DatasetError(
            "reading YAML needs PyYAML, which is not installed: pip install pyyaml "
            "(or convert the file to JSONL)",
            path=path,
        ) from None
    loader = _yaml_loader(yaml)(text)
    try:
        root = loader.get_single_node()
        if root is not None:
            _refuse_alias_bomb(root, path)
        data = None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DatasetError(f"not valid YAML: {problem}", path=path, line=line) from None
    except RecursionError:
        raise DatasetError(
            "YAML nested too deeply to read (deeper than the interpreter's limit)", path=path
        ) from None
    except DatasetError:
        raise
    except ValueError:  # an integer beyond Python's digit limit
        raise DatasetError(_too_many_digits(), path=path) from None
    finally:
        loader.dispose()
    if data is None:
        return
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        nodes = [v for k, v in root.value if k.value == "cases"][-1].value  # the last one wins
        data = data["cases"]
    elif isinstance(data, list):
        nodes = root.value
    else:
        raise DatasetError(
            'expected a YAML list of cases (or a mapping with a "cases" list), '
            f"got {_describe(data)}",
            path=path,
            line=1,
        )
    for node, item in zip(nodes, data, strict=True):
        line = node.start_mark.line + 1
        try:
            json.dumps(item, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise DatasetError(
                f"a value JSON cannot hold ({exc}); quote dates and times", path=path, line=line
            ) from None
        _refuse_surrogates(item, path, line, None)
        yield line, item


YAML_MAX_EXPANSION = 100
"""How many times larger than the YAML file's own nodes its aliases may make it."""


def _yaml_loader(yaml: Any) -> Any:
    """PyYAML's SafeLoader, refusing a mapping key given twice."""

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    twice = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # an unhashable key: PyYAML itself refuses it below
                if twice:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} in a mapping",
                        key_node.start_mark,
                    )
            return super().construct_mapping(node, deep=deep)

    return Loader


def _refuse_alias_bomb(root: Any, path: str) -> None:
    """Refuse aliases that expand the document far beyond its own size (a "billion
    laughs"), or that refer to themselves, before anything is built from it."""
    distinct: set[int] = set()
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _yaml_children(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise DatasetError(
                "a YAML alias refers to a node that holds it",
                path=path,
                line=node.start_mark.line + 1,
            )
        open_nodes.add(key)
        distinct.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise DatasetError(
                    "a YAML alias refers to a node that holds it",
                    path=path,
                    line=child.start_mark.line + 1,
                )
            if id(child) not in sizes:
                stack.append((child, False))
    bound = YAML_MAX_EXPANSION * len(distinct) + 10_000
    if sizes[id(root)] > bound:
        raise DatasetError(
            f"YAML aliases expand {_count(len(distinct), 'node')} to more than"
            f" {bound:,}; refusing what looks like an alias bomb",
            path=path,
        )


def _yaml_children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):
        return []
    children: list[Any] = []
    for item in value:
        children.extend(item if isinstance(item, tuple) else (item,))
    return children


def _iter_records(
    path: str,
    fmt: str | None,
    json_cells: Iterable[str] = _JSON_CELLS,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, Any]]:
    detected, gz = _detect_format(path) if fmt is None else (fmt, path.lower().endswith(".gz"))
    if detected not in _FORMATS:
        raise DatasetError(
            f"unknown format {detected!r}; expected one of {', '.join(_FORMATS)}", path=path
        )
    if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, int):
        raise DatasetError(
            f"expected a number of bytes, got {max_line_bytes!r}", field="max_line_bytes"
        )
    if max_line_bytes < 1:
        raise DatasetError(
            f"expected a positive number of bytes, got {max_line_bytes}", field="max_line_bytes"
        )
    try:
        raw = _open_bytes(path, gz)
        try:
            lines = _lines(raw, path, max_line_bytes)
            if detected == "jsonl":
                yield from _records_jsonl(lines, path)
            elif detected == "csv":
                yield from _records_csv(lines, path, json_cells)
            else:
                text = _read_whole(raw, path, max_line_bytes)
                if detected == "json":
                    yield from _records_json(text, path)
                elif detected == "otel":
                    yield from traces.records_from_otel(_otel_document(text, path), text, path)
                else:
                    yield from _records_yaml(text, path)
        finally:
            if raw is not sys.stdin.buffer:
                raw.close()
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise DatasetError(f"not a readable gzip file: {exc}", path=path) from None


def _otel_document(text: str, path: str) -> Any:
    try:
        with _json_errors(path, None):
            return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"not valid JSON: {_json_problem(exc)}", path=path, line=exc.lineno
        ) from None


# --------------------------------------------------------------------------- validation

_MISSING = object()


def _apply_mapping(
    record: Mapping[str, Any], fields: Mapping[str, str], where: dict[str, Any]
) -> dict[str, Any]:
    """Rename keys of a raw record through a field mapping; unmapped keys pass through."""
    mapped_sources = {path.split(".")[0] for path in fields.values()}
    out = {k: v for k, v in record.items() if k not in fields and k not in mapped_sources}
    for key, dotted in fields.items():
        try:
            value = _get_mapped(record, dotted)
        except LookupError:
            value = _MISSING
        except _PartlyMissing as exc:
            raise DatasetError(f"{key}={dotted}: {exc}", field="--field", **where) from None
        except checks.CheckSpecError as exc:
            raise DatasetError(f"{key}={dotted}: {exc.reason}", field="--field") from None
        if value is _MISSING:
            if key == "id":
                raise DatasetError(
                    f"the mapped path {dotted!r} is not in this record", field="id", **where
                )
            continue
        out[key] = value
    return out


class _PartlyMissing(TinyevalError):
    """A wildcard path found in some elements of a list and not in others."""


def _get_mapped(record: Any, dotted: str) -> Any:
    """The value at ``dotted`` in ``record``; a ``*`` part maps the rest over a list.

    >>> record = {"docs": [{"text": "a"}, {"text": "b"}]}
    >>> _get_mapped(record, "docs.*.text"), _get_mapped(record, "docs.1.text")
    (['a', 'b'], 'b')

    Raises LookupError when the path (before the first ``*``) is not there,
    and _PartlyMissing when an element of the list lacks the rest of it.
    """
    head, star, rest = dotted.partition("*")
    if not star:
        return checks.get_path(record, dotted)
    prefix = head.rstrip(".")
    if (head and not head.endswith(".")) or (rest and not rest.startswith(".")):
        raise checks.CheckSpecError(
            f"expected * as a whole part of the path, as in 'docs.*.text', got {dotted!r}",
            field="path",
        )
    items = checks.get_path(record, prefix) if prefix else record
    where = repr(prefix) if prefix else "the top level"
    if not isinstance(items, list):
        raise LookupError(f"{where} is not an array, so * cannot map over it")
    rest = rest.removeprefix(".")
    if not rest:
        return list(items)
    values = []
    for index, item in enumerate(items):
        try:
            values.append(_get_mapped(item, rest))
        except LookupError as exc:
            raise _PartlyMissing(f"element {index} of {where}: {exc}") from None
    return values


def _expect_type(value: Any, expected: str, field_name: str, where: dict[str, Any]) -> None:
    raise DatasetError(f"expected {expected}, got {_describe(value)}", field=field_name, **where)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _text_of(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _near_miss(key: str, absent: list[str]) -> str | None:
    """The recognised key that ``key`` looks like a typo of (same letters in another case,
    or one slip of a finger), if that key is absent from the record."""
    import difflib

    lowered = key.lower()
    for name in absent:
        if lowered == name:
            return name
    close = difflib.get_close_matches(lowered, absent, n=1, cutoff=0.88)
    return close[0] if close else None


def _refuse_near_misses(record: Mapping[str, Any], where: dict[str, Any], *, line_id: Any) -> None:
    """Other keys are kept as meta, but one that looks like a misspelt recognised key is an error:
    ``"expects"`` must not quietly become meta while the case runs with no expectations."""
    absent = [k for k in RECOGNISED_KEYS if k not in record and not (k == "id" and line_id)]
    for key in record:
        if key in RECOGNISED_KEYS or not isinstance(key, str):
            continue
        meant = _near_miss(key, absent)
        if meant is not None:
            raise DatasetError(
                f"unknown key {key!r}; did you mean {meant!r}? (if it is your own data, keep it "
                f"under another name, or map it with --field {meant}={key})",
                field=key,
                **where,
            )


@contextlib.contextmanager
def _located(where: dict[str, Any]) -> Iterator[None]:
    """Turn a check's specification error into a dataset error at this file and line."""
    try:
        yield
    except checks.CheckSpecError as exc:
        message = exc.reason
        raise DatasetError(message, field=exc.field, **where) from None


class ResultsNotCasesError(DatasetError):
    """A results file (rows written by ``tinyeval run``) given where cases were expected."""


# keys every result row has and no cases file does (see tinyeval.records)
_RESULT_ROW_KEYS = frozenset({"status", "checks", "tinyeval_version", "dataset_fingerprint"})
_RESULT_STATUSES = ("pass", "fail", "error", "unchecked")


def _build_case(record: Any, where: dict[str, Any], *, line_id: str | None) -> Case:
    if not isinstance(record, Mapping):
        raise DatasetError(
            f"expected a JSON object for each case, got {_describe(record)}", **where
        )
    rec = dict(record)
    if rec.keys() >= _RESULT_ROW_KEYS and rec.get("status") in _RESULT_STATUSES:
        raise ResultsNotCasesError(
            "looks like a results file written by tinyeval run, not a cases file: its rows "
            "have no expect blocks, so running them as cases would check nothing",
            **where,
        )
    _refuse_near_misses(rec, where, line_id=line_id)

    raw_id = rec.pop("id", _MISSING)
    if raw_id is _MISSING and line_id is not None:
        raw_id = line_id
    if raw_id is _MISSING:
        raise DatasetError(
            "every case needs an id (a non-empty string); or use --id-from-line",
            field="id",
            **where,
        )
    if isinstance(raw_id, int) and not isinstance(raw_id, bool):
        raw_id = str(raw_id)
    if not isinstance(raw_id, str) or not raw_id.strip():
        _expect_type(raw_id, "a non-empty string", "id", where)

    conversation, final = _read_conversation(rec, where)
    null_output = "output" in rec and rec["output"] is None
    output = rec.pop("output", None)
    if final is not None:
        if output is not None:
            raise DatasetError(
                "the messages end with an assistant turn and the case has an output too; "
                "give the response once (leave it out of the messages, or drop the output)",
                field="messages",
                **where,
            )
        output = final.text
        if final.tool_calls:
            if rec.get("tool_calls") is not None:
                raise DatasetError(
                    "the messages end with an assistant turn that calls tools and the case has "
                    "tool_calls too; give the calls once",
                    field="tool_calls",
                    **where,
                )
            rec["tool_calls"] = [call.to_dict() for call in final.tool_calls]
    if output is not None and not isinstance(output, str):
        if isinstance(output, (dict, list)):
            output = _text_of(output)
        else:
            _expect_type(output, "a string, a JSON object or list, or null", "output", where)

    context = rec.pop("context", None)
    if isinstance(context, list) and all(isinstance(c, str) for c in context):
        context = "\n\n".join(context)
    elif context is not None and not isinstance(context, str):
        _expect_type(context, "a string, a list of strings, or null", "context", where)

    category = rec.pop("category", "default")
    if category is None:
        category = "default"
    if not isinstance(category, str) or not category.strip():
        _expect_type(category, "a non-empty string", "category", where)

    origin = rec.pop("origin", None)
    if isinstance(origin, (int, float)) and not isinstance(origin, bool):
        origin = str(origin)
    if origin is not None and not isinstance(origin, str):
        _expect_type(origin, "a string or null", "origin", where)

    expect = rec.pop("expect", None)
    if expect is None:
        expect = {}
    if not isinstance(expect, Mapping):
        _expect_type(expect, "an object of expectations", "expect", where)
    with _located(where):
        checks.checks_from_expect(expect)

    tool_calls = rec.pop("tool_calls", None)
    if tool_calls is None:
        tool_calls = []
    if not isinstance(tool_calls, list):
        _expect_type(tool_calls, "a list of tool calls", "tool_calls", where)
    with _located(where):
        checks.tool_names(tool_calls)
    if null_output and tool_calls:
        output = ""  # "content": null with tool calls: a response that only calls tools

    label = rec.pop("label", None)
    if isinstance(label, str) and label.strip().upper() in ("PASS", "FAIL"):
        label = label.strip().upper()
    elif isinstance(label, str) and _parse_number(label) is not None:
        label = _parse_number(label)
    elif label is not None and not _is_finite_number(label):
        _expect_type(label, '"PASS", "FAIL", a number, or null', "label", where)

    return Case(
        id=raw_id,
        input=rec.pop("input", None),
        output=output,
        context=context,
        category=category,
        expect=dict(expect),
        origin=origin,
        tool_calls=tuple(tool_calls),
        label=label,
        meta=rec,
        conversation=conversation,
        source=where.get("path"),
        line=where.get("line"),
    )


def _read_conversation(
    rec: dict[str, Any], where: dict[str, Any]
) -> tuple[Conversation | None, Any]:
    """Read ``messages`` (or an ``input`` message list) into a conversation.

    Returns ``(conversation, final)``: ``final`` is the closing assistant turn
    when ``messages`` ends with one and there is no output, split off the
    conversation (and off the input it becomes); else None. ``messages`` is
    removed from the record; ``input`` is set from it when absent.
    """
    messages = rec.pop("messages", None)
    system = rec.get("system")
    system = system if isinstance(system, str | list) else None
    if messages is None:
        given = rec.get("input")
        if not looks_like_messages(given):
            return None, None
        return _conversation(given, system, "input", where), None
    if not isinstance(messages, list):
        _expect_type(messages, "a list of chat messages", "messages", where)
    conversation = _conversation(messages, system, "messages", where)
    final = conversation.final_turn if rec.get("output") is None else None
    if final is not None:
        conversation = conversation.without_final()
        messages = messages[:-1]
    elif conversation.final_turn is not None:
        final = conversation.final_turn  # with an output too: refused by the caller
    if rec.get("input") is None:
        rec["input"] = messages
    return conversation, final


def _conversation(messages: Any, system: Any, key: str, where: dict[str, Any]) -> Conversation:
    try:
        return from_messages(messages, system=system)
    except InputError as exc:
        place = exc.field or "messages"
        field_name = key + place.removeprefix("messages") if place.startswith("messages") else place
        raise DatasetError(exc.reason, field=field_name, **where) from None


def _parse_number(text: str) -> int | float | None:
    """``text`` as a finite int or float (``"2"`` -> 2, ``"0.5"`` -> 0.5); None otherwise."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _is_finite_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not isinstance(value, float) or math.isfinite(value)


def iter_cases(
    path: str | Path,
    *,
    fields: Mapping[str, str] | None = None,
    id_from_line: bool = False,
    format: str | None = None,
    unique_ids: bool = True,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[Case]:
    """Read and validate cases one at a time, without holding the file in memory.

    ``fields`` maps a recognised key to a dotted path in the file's own
    records (``{"input": "request.messages.0.content"}``). With
    ``id_from_line``, a record without an ``id`` is named ``line-N``. Raises
    :class:`DatasetError` at the first bad record, so consume it fully (or
    use :func:`load`) before acting on any case. Memory stays flat however
    long the file: the ids seen are kept in memory up to 50,000 of them and in
    a temporary SQLite index on disk beyond. ``unique_ids=False`` skips the
    duplicate check, for a second pass over a file already read once.

    Hostile files end in a :class:`DatasetError`, never a hang or a crash: a
    line longer than ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`,
    64 MiB; for JSON and YAML, read whole, the whole file) is refused before
    more of it is read, so ``/dev/zero`` or a gzip bomb cost bounded memory;
    so are a key given twice in one object, a lone surrogate in any string,
    nesting too deep for the interpreter, an integer beyond Python's digit
    limit, a NUL in a CSV cell, and YAML aliases that expand far past the file.

    >>> import json, tempfile, os
    >>> rows = [{"request_id": "r1", "q": {"text": "¿Cuánto cobran?"}, "a": "Nada."}]
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write("\\n".join(json.dumps(r) for r in rows))
    ...     name = f.name
    >>> mapping = {"id": "request_id", "input": "q.text", "output": "a"}
    >>> [c.input for c in iter_cases(name, fields=mapping)]
    ['¿Cuánto cobran?']
    >>> os.remove(name)
    """
    path = str(path)
    fields = dict(fields or {})
    for key in fields:
        _check_recognised(key, field_name="--field")
    # The line of a first occurrence is looked up only when a duplicate shows.
    with _IdIndex() as seen:
        for line, case in _validated(path, fields, id_from_line, format, max_line_bytes):
            if unique_ids and not seen.add(case.id):
                first = ""
                if path != "-":
                    earlier = _first_line(
                        path, fields, id_from_line, format, case.id, max_line_bytes
                    )
                    first = f" (first on line {earlier})"
                raise DatasetError(
                    f"duplicate id {case.id!r}{first}; ids must be unique",
                    field="id",
                    path=path,
                    line=line,
                )
            yield case


class _IdIndex:
    """The ids seen so far, in flat memory: a set of 96-bit digests while it is small,
    then a temporary SQLite table on disk (deleted when closed).

    >>> with _IdIndex(spill_after=2) as seen:
    ...     [seen.add(i) for i in ["a", "b", "c", "a", "c", "d"]]
    [True, True, True, False, False, True]
    """

    def __init__(self, *, spill_after: int = 50_000) -> None:
        self._memory: set[bytes] = set()
        self._spill_after = spill_after
        self._db: Any = None

    def add(self, case_id: str) -> bool:
        """Record an id; False when it was already there."""
        digest = hashlib.blake2b(case_id.encode("utf-8"), digest_size=12).digest()
        if self._db is None:
            if digest in self._memory:
                return False
            self._memory.add(digest)
            if len(self._memory) > self._spill_after:
                self._spill()
            return True
        import sqlite3

        try:
            self._db.execute("INSERT INTO ids VALUES (?)", (digest,))
        except sqlite3.IntegrityError:
            return False
        return True

    def _spill(self) -> None:
        import sqlite3

        self._db = sqlite3.connect("")  # "" is a private temporary file, removed on close
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute("CREATE TABLE ids (digest BLOB PRIMARY KEY) WITHOUT ROWID")
        self._db.executemany("INSERT INTO ids VALUES (?)", ((d,) for d in self._memory))
        self._memory = set()

    def __enter__(self) -> _IdIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _validated(
    path: str,
    fields: Mapping[str, str],
    id_from_line: bool,
    format: str | None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, Case]]:
    """Every record of the file as a validated case, with its line.

    A ``--field`` path found in none of the records is an error once the file
    is read: a misspelt path must not leave every case without its output.
    """
    found = dict.fromkeys(fields, 0)
    records = 0
    json_cells = {*_JSON_CELLS, *(fields[key] for key in _JSON_CELLS if key in fields)}
    for line, record in _iter_records(path, format, json_cells, max_line_bytes):
        where: dict[str, Any] = {"path": path, "line": line}
        records += 1
        if fields:
            if not isinstance(record, Mapping):
                raise DatasetError(f"expected a JSON object, got {_describe(record)}", **where)
            record = _apply_mapping(record, fields, where)
            for key in fields:
                found[key] += key in record
        yield line, _build_case(record, where, line_id=f"line-{line}" if id_from_line else None)
    for key, count in found.items():
        if records and not count:
            raise DatasetError(
                f"{key}={fields[key]}: the path is in none of the {records} records",
                path=path,
                field="--field",
            )


def _first_line(
    path: str,
    fields: Mapping[str, str],
    id_from_line: bool,
    format: str | None,
    case_id: str,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> int | None:
    """The line where ``case_id`` first occurs (read again: only on the error path)."""
    return next(
        (
            line
            for line, case in _validated(path, fields, id_from_line, format, max_line_bytes)
            if case.id == case_id
        ),
        None,
    )


def load(
    path: str | Path,
    *,
    fields: Mapping[str, str] | None = None,
    id_from_line: bool = False,
    format: str | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> list[Case]:
    """Load and validate every case of a file; raise :class:`DatasetError` on the first problem.

    An empty file is an error: a gate over zero cases would pass vacuously.
    ``max_line_bytes`` bounds a line as in :func:`iter_cases`.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write('{"id": "a", "output": "hola", "expect": {"max_words": 3}}\\n\\n')
    ...     _ = f.write('{"id": "b", "output": "chau", "category": "tone"}\\n')
    >>> [(c.id, c.category) for c in load(f.name)]
    [('a', 'default'), ('b', 'tone')]
    >>> os.remove(f.name)
    """
    cases = list(
        iter_cases(
            path,
            fields=fields,
            id_from_line=id_from_line,
            format=format,
            max_line_bytes=max_line_bytes,
        )
    )
    if not cases:
        raise DatasetError("no cases in the file", path=str(path))
    return cases


# --------------------------------------------------------------------------- sampling


def sample(cases: Iterable[Case], n: int, *, seed: int | str) -> list[Case]:
    """Pick ``n`` cases at random, reproducibly: the same seed gives the same sample.

    A seeded shuffle rather than the first ``n`` lines, so a sample does not all
    come from the top of the file (usually the oldest logs). Raises
    :class:`DatasetError` (field ``sample size``) when ``n`` is not a
    non-negative integer or is more than there are cases.

    >>> cases = [Case(id=str(i)) for i in range(10)]
    >>> [c.id for c in sample(cases, 3, seed=7)] == [c.id for c in sample(cases, 3, seed=7)]
    True
    >>> len(sample(cases, 3, seed=1))
    3
    """
    pool = list(cases)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise DatasetError(f"expected a non-negative integer, got {n!r}", field="sample size")
    if n > len(pool):
        there = "there is only 1 case" if len(pool) == 1 else f"there are only {len(pool)} cases"
        raise DatasetError(f"asked for a sample of {n} but {there}", field="sample size")
    return random.Random(str(seed)).sample(pool, n)


def _holdout_score(case_id: str, salt: str) -> float:
    digest = hashlib.sha256(f"{salt}\x00{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def in_holdout(case_id: str, fraction: float, *, salt: str = "tinyeval-holdout") -> bool:
    """Whether a case id falls in the holdout of :func:`split_holdout` (same hash, same answer).

    >>> in_holdout("amt-001", 0.2) == (split_holdout([Case(id="amt-001")], 0.2)[1] != [])
    True
    """
    if not 0.0 < fraction < 1.0:
        raise DatasetError(
            f"expected a number between 0 and 1 (exclusive), got {fraction!r}",
            field="holdout fraction",
        )
    return _holdout_score(case_id, salt) < fraction


def split_holdout(
    cases: Iterable[Case], fraction: float, *, salt: str = "tinyeval-holdout"
) -> tuple[list[Case], list[Case]]:
    """Split cases into (development, holdout) by a stable hash of each id.

    A case's side depends only on its id and the salt, never on the file's
    order or size: when the file grows, no case moves between the two sets.
    Tune prompts and rubrics on development; look at the holdout only to check
    that what you tuned still holds.

    >>> cases = [Case(id=f"c{i}") for i in range(1000)]
    >>> dev, hold = split_holdout(cases, 0.2)
    >>> len(hold)
    193
    >>> _, hold_again = split_holdout(cases + [Case(id="new")], 0.2)
    >>> {c.id for c in hold} <= {c.id for c in hold_again}
    True
    """
    if not 0.0 < fraction < 1.0:
        raise DatasetError(
            f"expected a number between 0 and 1 (exclusive), got {fraction!r}",
            field="holdout fraction",
        )
    dev: list[Case] = []
    holdout: list[Case] = []
    for case in cases:
        (holdout if in_holdout(case.id, fraction, salt=salt) else dev).append(case)
    return dev, holdout


# --------------------------------------------------------------------------- fingerprint


def case_digest(case: Case) -> int:
    """A sha256 of one case's content (everything but where it was read from), as an int.

    >>> case_digest(Case(id="a")) == case_digest(Case(id="a", line=7))
    True
    """
    blob = json.dumps(case.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(blob.encode("utf-8")).digest(), "big")


def dataset_fingerprint(cases: Iterable[Case]) -> str:
    """A short, order-independent fingerprint of a set of cases.

    Two files holding the same cases in any order give the same fingerprint;
    changing any field of any case changes it. It is stored with every result
    row so that two runs can be checked to be over the same data. It streams:
    memory does not grow with the number of cases.

    >>> a, b = Case(id="a", output="x"), Case(id="b", output="y")
    >>> dataset_fingerprint([a, b]) == dataset_fingerprint([b, a])
    True
    >>> dataset_fingerprint([a, b]) == dataset_fingerprint([a, Case(id="b", output="z")])
    False
    >>> len(dataset_fingerprint([a]))
    16
    """
    total = 0
    count = 0
    for case in cases:
        total = (total + case_digest(case)) % 2**256
        count += 1
    return hashlib.sha256(f"{count}:{total:064x}".encode()).hexdigest()[:16]
