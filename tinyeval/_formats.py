"""Reading data files with bounds: JSONL, JSON, CSV and YAML records, gzip, BOM, UTF-8.

:func:`read_text` and :func:`iter_json_lines` are the package's one bounded reader of text
and JSON Lines files; :func:`tinyeval.dataset.load` reads cases through ``_iter_records``.
Whatever cannot be read safely (a line past :data:`MAX_LINE_BYTES`, a duplicate JSON key, a
YAML alias bomb) is a :class:`DatasetError` naming the file and line.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from . import _extra
from .errors import InputError, TinyevalError, describe_json, json_problem, plural, shorten

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_FILE_BYTES",
    "MAX_LINES",
    "MAX_LINE_BYTES",
    "MAX_TEXT_BYTES",
    "YAML_MAX_EXPANSION",
    "DatasetError",
    "iter_json_lines",
    "read_text",
]

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
    """A data file that cannot be read as it is: ``FILE:LINE: FIELD: what was expected``.

    >>> str(DatasetError("expected a non-empty string", path="cases.jsonl", line=3, field="id"))
    'cases.jsonl:3: id: expected a non-empty string'
    """


def _detect_format(path: str) -> str:
    """The format a file name says."""
    if path == "-":
        return "jsonl"
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    fmt = _SUFFIX_FORMATS.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        raise DatasetError(
            "cannot tell the format from the file name; expected .jsonl, .ndjson, .json, .csv, "
            ".yaml or .yml (optionally .gz), or give the format (format jsonl, json, csv, yaml or "
            "otel)",
            path=path,
        )
    return fmt


MAX_LINE_BYTES = 64 * 2**20
"""The longest line a file may hold, in bytes (64 MiB); raise it with ``max_line_bytes``."""

MAX_TEXT_BYTES = MAX_LINE_BYTES
"""The largest file read whole (JSON, YAML, :func:`read_text`), in bytes (64 MiB)."""

MAX_FILE_BYTES = 2**30
"""The most bytes read from one file, after decompression (1 GiB)."""

MAX_LINES = 2_000_000
"""The most lines read from one file, blank ones included."""

MAX_CONFIG_BYTES = 256 * 2**10
"""The largest suite file, rubric or prompt template, in bytes (256 KiB)."""

_CHUNK = 2**20  # bytes read at a time: memory stays near the line cap, whatever the file


def _too_long(limit: int, path: str, line: int, what: str, knob: str | None) -> DatasetError:
    more = f" (max_line_bytes); is this the right file? pass a larger {knob} to read it"
    reason = f"{what} is longer than {plural(limit, 'byte')}"
    if knob is None:
        more = ", the most tinyeval reads of it; is this the right file?"
    return DatasetError(reason + more, path=path, line=line)


def _too_big(path: str, line: int, what: str) -> DatasetError:
    return DatasetError(
        f"the file holds more than {what}, the most tinyeval reads from one file; "
        "is this the right file? split it",
        path=path,
        line=line,
    )


def _lines(
    raw: IO[bytes], path: str, limit: int, what: str, knob: str | None = "max_line_bytes"
) -> Iterator[tuple[int, str]]:
    """The lines decoded from UTF-8 (a BOM dropped), endings kept, numbered; a line over
    ``limit`` bytes is refused before more of it is held (``/dev/zero``, a gzip bomb).

    >>> import io
    >>> list(_lines(io.BytesIO(b"\\xef\\xbb\\xbfa\\r\\nb"), "f.jsonl", 10, "the line"))
    [(1, 'a\\r\\n'), (2, 'b')]
    """
    number = total = size = 0
    pending: list[bytes] = []

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
        start, total = 0, total + len(chunk)
        if total > MAX_FILE_BYTES:
            raise _too_big(path, number + 1, plural(MAX_FILE_BYTES, "byte"))
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            if number > MAX_LINES:
                raise _too_big(path, number, plural(MAX_LINES, "line"))
            if size + end - start > limit:
                raise _too_long(limit, path, number, what, knob)
            piece = chunk[start : end + 1]
            yield number, decoded(b"".join([*pending, piece]) if pending else piece)
            pending, size, start = [], 0, end + 1
        if start < len(chunk):
            pending.append(chunk[start:])
            size += len(chunk) - start
            if size > limit:
                raise _too_long(limit, path, number + 1, what, knob)
    if pending:
        number += 1
        yield number, decoded(b"".join(pending))


def _read_whole(
    raw: IO[bytes], path: str, limit: int, what: str, knob: str | None = "max_line_bytes"
) -> str:
    """A whole document, refused past ``limit`` bytes."""
    parts, size = [], 0
    for number, text in _lines(raw, path, limit, what, knob):
        size += len(text)
        if size > limit:
            raise _too_long(limit, path, number, what, knob)
        parts.append(text)
    return "".join(parts)


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
_BETWEEN = re.compile(r"[ \t\r\n,]*")  # what stands between the items of a valid JSON list


class _json_errors:
    """Turn every way decoding JSON (or YAML: ``kind``) can fail, but a syntax error, into a
    one-line error (a class, not a generator: it is entered once per line read)."""

    __slots__ = ("field", "kind", "line", "path")

    def __init__(
        self, path: str, line: int | None, field: str | None = None, kind: str = "JSON"
    ) -> None:
        self.path, self.line, self.field, self.kind = path, line, field, kind

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, trace: Any) -> None:
        if exc is None or isinstance(exc, json.JSONDecodeError | DatasetError):
            return
        if isinstance(exc, _DuplicateKey):
            reason = f"duplicate key {exc.args[0]!r} in a JSON object"
        elif isinstance(exc, RecursionError):
            reason = f"{self.kind} nested too deeply to read (deeper than the interpreter's limit)"
        elif isinstance(exc, ValueError):  # an integer beyond Python's digit limit
            limit = sys.get_int_max_str_digits()
            reason = (
                f"an integer too long to read (Python reads integers of at most {limit:,} digits)"
            )
        else:
            return
        raise DatasetError(reason, path=self.path, line=self.line, field=self.field) from None


def _decode_json(text: str, path: str, line: int | None, field: str | None = None) -> Any:
    """One JSON value; a duplicate key, too deep a nesting, too long an integer or a lone
    surrogate is a one-line :class:`DatasetError` (a syntax error stays a JSONDecodeError)."""
    try:
        with _json_errors(path, line, field):
            value = _DECODER.decode(text)
    except DatasetError as exc:  # name the member at fault: file:line:field
        member = None if field else _member_at_fault(text)
        raise DatasetError(exc.reason, path=path, line=line, field=member or field) from None
    if _SURROGATE_ESCAPE.search(text):
        _refuse_surrogates(value, path, line, field)
    return value


def _member_at_fault(text: str) -> str | None:
    """The key of the top-level member of a JSON object whose value alone cannot be read."""
    position = _skip_space(text, 0)
    with suppress(ValueError, IndexError):
        while text[position] in "{,":
            position = _skip_space(text, position + 1)
            key, position = _DECODER.raw_decode(text, position)
            position = _skip_space(text, text.index(":", position) + 1)
            try:
                position = _skip_space(text, _DECODER.raw_decode(text, position)[1])
            except (ValueError, RecursionError, TinyevalError):
                return str(key)
    return None


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


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
            reason = f"not valid JSON: {json_problem(exc)}"
            if not text.endswith("\n"):
                reason = f"the last line is not complete JSON: {json_problem(exc)}"
                reason += " (is the file cut short?)"
            raise DatasetError(reason, path=path, line=number) from None


def _whole_json(text: str, path: str) -> Any:
    try:
        with _json_errors(path, None):
            return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"not valid JSON: {json_problem(exc)}", path=path, line=exc.lineno
        ) from None


def _otel(document: Any, text: str, path: str) -> Iterator[tuple[int, Any]]:
    try:
        read = _extra("reader", "otel", what="an OpenTelemetry trace file")
    except InputError as exc:  # this copy lacks the extra
        raise DatasetError(exc.reason, path=path) from None
    return read(document, text, path)


def _records_json(text: str, path: str) -> Iterator[tuple[int, Any]]:
    """Yield the items of a top-level JSON list with the line each starts on."""
    whole = _whole_json(text, path)  # structure first; an item's own problems get its line
    if isinstance(whole, dict) and "resourceSpans" in whole:
        yield from _otel(whole, text, path)
        return
    if _in_cases_member(whole, path, "JSON", "an object"):
        start = _member_start(text, "cases")
    else:
        start = text.index("[")
    line, counted, pos = 1, 0, start + 1
    while True:
        pos = _BETWEEN.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos] == "]":  # the whole is valid JSON: the list closes
            return
        line += text.count("\n", counted, pos)
        counted = pos
        with _json_errors(path, line):
            item, pos = _DECODER.raw_decode(text, pos)
        if _SURROGATE_ESCAPE.search(text, counted, pos):
            _refuse_surrogates(item, path, line, None)
        yield line, item


def _in_cases_member(data: Any, path: str, kind: str, holder: str) -> bool:
    """Whether a document's cases are its ``"cases"`` list (else it is the list of them)."""
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        return True
    if isinstance(data, list):
        return False
    raise DatasetError(
        f'expected a {kind} list of cases (or {holder} with a "cases" list), '
        f"got {describe_json(data)}",
        path=path,
        line=1,
    )


def _member_start(text: str, key: str) -> int:
    """Where the value of ``key`` begins in a valid top-level JSON object (the last one wins)."""
    decoder = json.JSONDecoder()
    pos, found = text.index("{") + 1, -1
    while True:
        pos = _BETWEEN.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos] == "}":
            return found
        name, pos = decoder.raw_decode(text, pos)
        pos = _BETWEEN.match(text, text.index(":", pos) + 1).end()  # type: ignore[union-attr]
        if name == key:
            found = pos
        _, pos = decoder.raw_decode(text, pos)


_JSON_CELLS = ("expect", "tool_calls", "messages")
_CSV_FIELD_LIMIT = 2**31 - 1  # logged contexts outgrow the csv module's default 128 KiB per cell


def _records_csv(
    lines: Iterable[tuple[int, str]], path: str, json_cells: Iterable[str]
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
    raise DatasetError(
        f"the header has 1 column {shorten(names[0], 60)!r}: tinyeval reads comma-separated CSV "
        "(re-export with commas)",
        path=path,
        line=line,
    )


def _csv_record(
    names: list[str], cells: list[str], path: str, line: int, json_cells: frozenset[str]
) -> dict[str, Any]:
    """One CSV row as a record: an empty cell is absent, ``json_cells`` are decoded."""
    if cells and len(cells) != len(names):
        raise DatasetError(
            f"{plural(len(cells), 'cell')} but the header has {plural(len(names), 'column')}",
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
                    f"expected JSON in this cell: {json_problem(exc)}",
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
        with _json_errors(path, None, kind="YAML"):
            root = loader.get_single_node()
            if root is not None:
                _refuse_alias_bomb(root, path)
            data = None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DatasetError(f"not valid YAML: {problem}", path=path, line=line) from None
    finally:
        loader.dispose()
    if data is None:
        return
    if _in_cases_member(data, path, "YAML", "a mapping"):
        nodes = [v for k, v in root.value if k.value == "cases"][-1].value  # the last one wins
        data = data["cases"]
    else:
        nodes = root.value
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
            written: dict[str, str] = {}  # an id as written: 0123, not 83
            for key_node, value_node in node.value:
                if key_node.value == "id" and value_node.tag.endswith((":int", ":float")):
                    written["id"] = value_node.value
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
            return super().construct_mapping(node, deep=deep) | written

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
        # a child still open (one that holds this node) is refused when it is popped
        stack.extend((child, False) for child in children if id(child) not in sizes)
    bound = YAML_MAX_EXPANSION * len(distinct) + 10_000
    if sizes[id(root)] > bound:
        raise DatasetError(
            f"YAML aliases expand {plural(len(distinct), 'node')} to more than"
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


def _check_limit(limit: Any, name: str) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise DatasetError(f"expected a number of bytes, got {limit!r}", field=name)
    if limit < 1:
        raise DatasetError(f"expected a positive number of bytes, got {limit}", field=name)


def _open_bytes(path: str) -> IO[bytes]:
    if "\x00" in path:
        raise DatasetError("a NUL character (\\x00) in the file name", path=repr(path)[1:-1])
    if path == "-":
        return sys.stdin.buffer
    if path.lower().endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


@contextmanager
def _opened(path: str, error: type[InputError]) -> Iterator[IO[bytes]]:
    """The file's bytes (gunzipped for ``.gz``, standard input for ``-``); every problem
    reading it is an ``error`` naming the file."""
    try:
        raw = _open_bytes(path)
        try:
            yield raw
        finally:
            if raw is not sys.stdin.buffer:
                raw.close()
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise error(f"not a readable gzip file: {exc}", path=path) from None
    except DatasetError as exc:
        if error is DatasetError:
            raise
        raise error(exc.reason, path=exc.path, line=exc.line, field=exc.field) from None


def read_text(
    path: str | os.PathLike[str],
    *,
    what: str = "the file",
    max_bytes: int = MAX_TEXT_BYTES,
    error: type[InputError] = DatasetError,
) -> str:
    """A whole UTF-8 text file (BOM dropped, ``.gz`` decompressed), refused past ``max_bytes``.

    ``what`` names the file in the error; ``error`` is the error class raised.

    >>> import os, tempfile
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
    ...     _ = f.write(b"\\xef\\xbb\\xbfhola\\n")
    >>> read_text(f.name)
    'hola\\n'
    >>> os.remove(f.name)
    """
    _check_limit(max_bytes, "max_bytes")
    with _opened(str(path), error) as raw:
        return _read_whole(raw, str(path), max_bytes, what, None)


def iter_json_lines(
    path: str | os.PathLike[str],
    *,
    what: str = "the line",
    max_line_bytes: int = MAX_LINE_BYTES,
    error: type[InputError] = DatasetError,
) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` for each non-blank line of a JSON Lines file, read with bounds.

    A line past ``max_line_bytes`` (``what`` names it), a duplicate key, a line that is not
    JSON (a cut last line said so) raise ``error`` naming the file and line.

    >>> import os, tempfile
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(b'{"id": 1}\\n\\n[2]\\n')
    >>> list(iter_json_lines(f.name))
    [(1, {'id': 1}), (3, [2])]
    >>> os.remove(f.name)
    """
    _check_limit(max_line_bytes, "max_line_bytes")
    with _opened(str(path), error) as raw:
        lines = _lines(raw, str(path), max_line_bytes, what)
        yield from _records_jsonl(lines, str(path))


def _iter_records(
    path: str, fmt: str | None, json_cells: Iterable[str], max_line_bytes: int
) -> Iterator[tuple[int, Any]]:
    detected = _detect_format(path) if fmt is None else fmt
    if detected not in _FORMATS:
        raise DatasetError(
            f"unknown format {detected!r}; expected one of {', '.join(_FORMATS)}", path=path
        )
    if detected == "jsonl":
        yield from iter_json_lines(path, max_line_bytes=max_line_bytes)
        return
    _check_limit(max_line_bytes, "max_line_bytes")
    with _opened(path, DatasetError) as raw:
        if detected == "csv":
            yield from _records_csv(_lines(raw, path, max_line_bytes, "the line"), path, json_cells)
            return
        text = _read_whole(raw, path, max_line_bytes, "the document (JSON and YAML are read whole)")
    if detected == "json":
        yield from _records_json(text, path)
    elif detected == "otel":
        yield from _otel(_whole_json(text, path), text, path)
    else:
        yield from _records_yaml(text, path)
