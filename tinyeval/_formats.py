"""The bounded reading of JSONL, JSON, CSV and YAML files (gzip, BOM, UTF-8): what cannot be
read safely (a line too long, a duplicate key, an alias bomb) is a DatasetError naming the line."""

from __future__ import annotations

import collections
import csv
import gzip
import importlib
import json
import os
import re
import select
import sys
import zlib
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import IO, Any

from . import _extra
from .errors import InputError, TinyevalError, describe_json, json_problem, plural, shorten

_SUFFIXES = dict(jsonl="jsonl", ndjson="jsonl", json="json", csv="csv", yaml="yaml", yml="yaml")
_FORMATS = (*dict.fromkeys(_SUFFIXES.values()), "otel")

MAX_LINE_BYTES = 64 * 2**20  # the longest line read (64 MiB); raise it with max_line_bytes
MAX_TEXT_BYTES = MAX_LINE_BYTES  # the largest file read whole (JSON, YAML, read_text)
MAX_FILE_BYTES = 2**30  # the most bytes read from one file, after decompression (1 GiB)
MAX_LINES = 2_000_000  # the most lines read from one file, blank ones included
MAX_CONFIG_BYTES = 256 * 2**10  # the largest suite file, rubric or prompt template (256 KiB)
YAML_MAX_EXPANSION = 100  # how many times its own nodes a YAML file's aliases may expand to
PIPE_WAIT = 60  # seconds a named pipe (a FIFO, `<(...)`) may stay silent before its first byte
_JSON_CELLS = ("expect", "tool_calls", "messages")
_NUL_IN_CELL = "a NUL character (\\x00) in the cell; is this a text file?"


class DatasetError(InputError):
    """A data file that cannot be read as it is: ``FILE:LINE: FIELD: what was expected``."""


def _too_long(limit: int, path: str, line: int, what: str, knob: str | None) -> DatasetError:
    more = f" (max_line_bytes); is this the right file? pass a larger {knob} to read it"
    reason = f"{what} is longer than {plural(limit, 'byte')}"
    if knob is None:
        more = ", the most tinyeval reads of it; is this the right file?"
    return DatasetError(reason + more, path=path, line=line)


def _too_big(path: str, line: int, what: str) -> DatasetError:
    reason = f"the file holds more than {what}, the most tinyeval reads from one file; "
    return DatasetError(reason + "is this the right file? split it", path=path, line=line)


def _lines(
    raw: IO[bytes], path: str, limit: int, what: str, knob: str | None = "max_line_bytes"
) -> Iterator[tuple[int, str]]:
    """The numbered UTF-8 lines (endings kept, BOM dropped), refusing one past ``limit`` bytes."""
    number = total = 0
    while line := raw.readline(limit + 1):  # a line past the limit is not read further
        number += 1
        total += len(line)
        if total > MAX_FILE_BYTES:
            raise _too_big(path, number, plural(MAX_FILE_BYTES, "byte"))
        if number > MAX_LINES:
            raise _too_big(path, number, plural(MAX_LINES, "line"))
        if len(line) - line.endswith(b"\n") > limit:
            raise _too_long(limit, path, number, what, knob)
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = f"not UTF-8 text (byte {line[exc.start]:#04x} cannot be decoded); "
            raise DatasetError(bad + "save the file as UTF-8", path=path, line=number) from None
        yield number, text[1:] if number == 1 and text.startswith("\ufeff") else text


def _read_whole(
    raw: IO[bytes], path: str, limit: int, what: str, knob: str | None = "max_line_bytes"
) -> str:
    parts, size = [], 0
    for number, text in _lines(raw, path, limit, what, knob):
        size += len(text)
        if size > limit:
            raise _too_long(limit, path, number, what, knob)
        parts.append(text)
    return "".join(parts)


class _DuplicateKey(TinyevalError, ValueError):
    """A JSON object giving a key twice: which value counts would be the reader's guess."""

    def __str__(self) -> str:  # the key is its one argument: it pickles back as it was
        return f"the key {shorten(repr(self.args[0]), 80)} is given twice"


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members as a dict, refusing a key given twice (last-wins hides data)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        counts = collections.Counter(key for key, _ in pairs)
        raise _DuplicateKey(next(key for key, count in counts.items() if count > 1))
    return result


class StrictJSONDecoder(json.JSONDecoder):
    """The JSON the checks read: no NaN or Infinity, no key given twice.

    >>> json.loads('{"cents": 125050, "cents": 1250}', cls=StrictJSONDecoder)
    Traceback (most recent call last):
    tinyeval._formats._DuplicateKey: the key 'cents' is given twice
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options, parse_constant=self._refuse, object_pairs_hook=_unique_pairs)

    @staticmethod
    def _refuse(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs)  # data files and server replies
_PLAIN_DECODER = json.JSONDecoder()
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_BETWEEN = re.compile(r"[ \t\r\n,]*")  # what stands between the items of a valid JSON list


def _unreadable(exc: ValueError | RecursionError, kind: str = "JSON") -> str:
    """Why a document cannot be read: its syntax, or what a valid document may still hold."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {json_problem(exc)}"
    if isinstance(exc, _DuplicateKey):
        return str(exc)
    if isinstance(exc, RecursionError):
        return f"{kind} nested too deeply to read (deeper than the interpreter's limit)"
    limit = sys.get_int_max_str_digits()  # what else a valid document raises: a long integer
    return f"an integer too long to read (Python reads integers of at most {limit:,} digits)"


def _decode_json(
    text: str, path: str, line: int | None, field: str | None = None, *, cut: bool = False
) -> Any:
    """One JSON value of a line (``cut``: the last line, unended) or of a CSV cell (``field``)."""
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        problem = json_problem(exc)
        reason = f"expected JSON in this cell: {problem}" if field else f"not valid JSON: {problem}"
        if cut:
            reason = f"the last line is not complete JSON: {problem} (is the file cut short?)"
        raise DatasetError(reason, path=path, line=line, field=field) from None
    except (ValueError, RecursionError) as exc:  # name the member at fault: file:line:field
        member = None if field else _member_at_fault(text)
        raise DatasetError(_unreadable(exc), path=path, line=line, field=member or field) from None
    if _SURROGATE_ESCAPE.search(text):
        _refuse_surrogates(value, path, line, field)
    return value


def _skip(text: str, position: int) -> int:
    return _BETWEEN.match(text, position).end()  # type: ignore[union-attr]


def _members(text: str, decoder: json.JSONDecoder) -> Iterator[tuple[Any, int]]:
    """Each key of a top-level JSON object, with where its value starts."""
    position = _skip(text, 0)
    if text[position] != "{":
        return
    position += 1
    while text[position := _skip(text, position)] != "}":
        key, position = decoder.raw_decode(text, position)
        position = _skip(text, text.index(":", position) + 1)
        yield key, position
        position = decoder.raw_decode(text, position)[1]


def _member_at_fault(text: str) -> str | None:
    """The key of the top-level member whose value alone cannot be read."""
    last = None
    try:
        for key, _ in _members(text, _DECODER):
            last = key
    except (ValueError, RecursionError, IndexError):
        return None if last is None else str(last)
    return None


def _refuse_surrogates(value: Any, path: str, line: int | None, field: str | None) -> None:
    """Refuse a lone surrogate (``"\\ud800"`` escaped in JSON or YAML): it is not text."""
    stack: list[tuple[str | None, Any]] = [(field, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                lone = f"a lone surrogate ({item[exc.start]!r}) is not text; "
                reason = lone + "fix the escape that made it"
                raise DatasetError(reason, path=path, line=line, field=where) from None
        elif isinstance(item, Mapping):
            for key, member in item.items():
                stack.append((f"{where}.{key}" if where else str(key), member))
                stack.append((where, key))
        elif isinstance(item, list):
            stack.extend((f"{where or ''}[{n}]", member) for n, member in enumerate(item))


def _records_json(text: str, path: str, otel: bool = False) -> Iterator[tuple[int, Any]]:
    """The items of a top-level JSON list (or ``"cases"`` list), with the line each starts on."""
    try:  # structure first; an item's own problems get its line
        whole = json.loads(text)
    except (ValueError, RecursionError) as exc:  # its syntax, too deep, an integer too long
        raise DatasetError(_unreadable(exc), path=path, line=getattr(exc, "lineno", None)) from None
    if otel or (isinstance(whole, dict) and "resourceSpans" in whole):
        try:
            read = _extra("reader", "otel", what="an OpenTelemetry trace file")
        except InputError as exc:  # this copy lacks the extra
            raise DatasetError(exc.reason, path=path) from None
        yield from read(whole, text, path)
        return
    if _in_cases_member(whole, path, "JSON", "an object"):  # the last "cases" wins, as in json
        start = [at for key, at in _members(text, _PLAIN_DECODER) if key == "cases"][-1]
    else:
        start = text.index("[")
    line, counted, pos = 1, 0, start + 1
    while text[pos := _skip(text, pos)] != "]":  # the whole is valid JSON: the list closes
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            item, pos = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            raise DatasetError(_unreadable(exc), path=path, line=line) from None
        if _SURROGATE_ESCAPE.search(text, counted, pos):
            _refuse_surrogates(item, path, line, None)
        yield line, item


def _in_cases_member(data: Any, path: str, kind: str, holder: str) -> bool:
    """Whether a document's cases are its ``"cases"`` list (else it is the list of them)."""
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        return True
    if isinstance(data, list):
        return False
    got = describe_json(data)
    reason = f'expected a {kind} list of cases (or {holder} with a "cases" list), got {got}'
    raise DatasetError(reason, path=path, line=1)


def _records_csv(
    lines: Iterable[tuple[int, str]], path: str, json_cells: Container[str]
) -> Iterator[tuple[int, Any]]:
    csv.field_size_limit(2**31 - 1)  # logged contexts outgrow csv's default 128 KiB per cell
    reader = csv.reader((text for _, text in lines), strict=True)
    start = 1  # the line the row being read begins on
    try:
        header = next(reader, None)
        while header == []:  # blank lines before the header
            start = reader.line_num + 1
            header = next(reader, None)
        if header is None:
            return
        names = [name.strip() for name in header]
        twice = sorted({name for name in names if names.count(name) > 1})
        problem = None
        if any("\x00" in name for name in names):
            problem = _NUL_IN_CELL
        elif len(names) == 1 and any(separator in names[0] for separator in ";\t"):
            problem = (
                f"the header has 1 column {shorten(names[0], 60)!r}: tinyeval reads "
                "comma-separated CSV (re-export with commas)"
            )
        elif not all(names):
            problem = "the header row has an empty column name"
        elif twice:
            problem = f"the header row names the column {twice[0]!r} twice"
        if problem:
            raise DatasetError(problem, path=path, line=start)
        start = reader.line_num + 1
        for cells in reader:  # a blank line gives [] and is skipped
            record = _csv_record(names, cells, path, start, json_cells)
            if record:
                yield start, record
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DatasetError(f"not valid CSV: {exc}", path=path, line=start) from None


def _csv_record(
    names: list[str], cells: list[str], path: str, line: int, json_cells: Container[str]
) -> dict[str, Any]:
    """One CSV row as a record: an empty cell is absent, ``json_cells`` are decoded."""
    if cells and len(cells) != len(names):
        counts = f"{plural(len(cells), 'cell')} but the header has {plural(len(names), 'column')}"
        raise DatasetError(counts, path=path, line=line)
    record: dict[str, Any] = {}
    for key, cell in zip(names, cells, strict=False):  # [] (a blank line) gives no record
        if "\x00" in cell:
            raise DatasetError(_NUL_IN_CELL, path=path, line=line, field=key)
        if cell and key in json_cells:
            record[key] = _decode_json(cell, path, line, key)
        elif cell:
            record[key] = cell
    return record


def _records_yaml(text: str, path: str) -> Iterator[tuple[int, Any]]:
    try:
        import yaml  # optional: only when a YAML file is given
    except ImportError:
        needs = "reading YAML needs PyYAML, which is not installed: pip install pyyaml "
        raise DatasetError(needs + "(or convert the file to JSONL)", path=path) from None

    class Loader(yaml.SafeLoader):  # PyYAML's safe loader, refusing a mapping key given twice
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            written: dict[str, str] = {}  # an id as written: 0123, not 83
            for key_node, value_node in node.value:
                if key_node.value == "id" and value_node.tag.endswith((":int", ":float")):
                    written["id"] = value_node.value
                key = self.construct_object(key_node, deep=True)
                with suppress(TypeError):  # an unhashable key: PyYAML itself refuses it below
                    if key in seen:
                        twice = f"duplicate key {key!r} in a mapping"
                        raise yaml.MarkedYAMLError(problem=twice, problem_mark=key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep) | written

    loader = Loader(text)
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
    except DatasetError:
        raise
    except (ValueError, RecursionError) as exc:
        raise DatasetError(_unreadable(exc, "YAML"), path=path) from None
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
            reason = f"a value JSON cannot hold ({exc}); quote dates and times"
            raise DatasetError(reason, path=path, line=line) from None
        _refuse_surrogates(item, path, line, None)
        yield line, item


def _refuse_alias_bomb(root: Any, path: str) -> None:
    """Refuse aliases that expand far past the document ("billion laughs") or hold themselves."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        items = node.value if isinstance(node.value, list) else []
        children = [child for item in items for child in (item if type(item) is tuple else [item])]
        if done:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
        elif id(node) in open_nodes:
            line = node.start_mark.line + 1
            raise DatasetError("a YAML alias refers to a node that holds it", path=path, line=line)
        elif id(node) not in sizes:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
    bound = YAML_MAX_EXPANSION * len(sizes) + 10_000
    if sizes[id(root)] > bound:
        expand = f"YAML aliases expand {plural(len(sizes), 'node')} to more than {bound:,}"
        raise DatasetError(f"{expand}; refusing what looks like an alias bomb", path=path)


def python_target(spec: str, error: Callable[[str], Exception]) -> Callable[..., Any]:
    """The callable ``py:MODULE:NAME`` names (MODULE imported as ``python -m`` would; a leading
    dot is tinyeval's), or ``error`` saying why not.

    >>> python_target("py:json:dumps", ValueError)([1])
    '[1]'
    """
    module_name, sep, attribute = (part.strip() for part in spec.removeprefix("py:").partition(":"))
    if not spec.startswith("py:") or not sep or not module_name or not attribute:
        raise error(f"expected py:MODULE:FUNCTION, got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # as ``python -m`` does
    try:
        found: Any = importlib.import_module(module_name, __package__)
    except Exception as exc:  # the user's module: whatever importing it raises
        from ._http import scrub  # its message may quote the environment

        problem = f"cannot import module {module_name!r} ({type(exc).__name__}: {exc})"
        raise error(scrub(f"{spec}: {problem}")) from None
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except Exception:  # no such name, or whatever a module's __getattr__ raises
            raise error(f"{spec}: module {module_name!r} has no {attribute!r}") from None
    if not callable(found):
        raise error(f"{spec}: {attribute!r} is not callable (got {describe_json(found)})")
    return found


def _check_limit(limit: Any, name: str) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise DatasetError(f"expected a positive number of bytes, got {limit!r}", field=name)


def _pipe(path: str, error: type[InputError]) -> IO[bytes] | None:
    """A named pipe, opened without waiting for a writer; refused if nothing comes in time."""
    if not Path(path).is_fifo():
        return None
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    waiting = select.poll()
    waiting.register(descriptor, select.POLLIN)
    if not waiting.poll(PIPE_WAIT * 1000):  # a writer's first bytes, or its end
        os.close(descriptor)
        raise error(f"a named pipe that nothing wrote to in {PIPE_WAIT} seconds", path=path)
    os.set_blocking(descriptor, True)
    return open(descriptor, "rb")


@contextmanager
def _opened(path: str, error: type[InputError]) -> Iterator[IO[bytes]]:
    """The file's bytes (gunzipped ``.gz``, standard input ``-``); its problems raise ``error``."""
    if "\x00" in path:
        raise error("a NUL character (\\x00) in the file name", path=repr(path)[1:-1])
    try:
        if path == "-":
            yield sys.stdin.buffer
        else:
            gunzip: Any = gzip.open if path.lower().endswith(".gz") else nullcontext
            plain = _pipe(path, error) or open(path, "rb")  # noqa: SIM115 (closed just below)
            with plain, gunzip(plain) as raw:
                yield raw
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise error(f"not a readable gzip file: {exc}", path=path) from None
    except DatasetError as exc:  # said as the caller's error
        raise error(exc.reason, path=exc.path, line=exc.line, field=exc.field) from None


def read_text(
    path: str | os.PathLike[str],
    *,
    what: str = "the file",
    max_bytes: int = MAX_TEXT_BYTES,
    error: type[InputError] = DatasetError,
) -> str:
    """A whole UTF-8 text file (BOM dropped, ``.gz`` decompressed), refused past ``max_bytes``.

    >>> "The bounded reading" in read_text(__file__)
    True
    """
    _check_limit(max_bytes, "max_bytes")
    with _opened(str(path), error) as raw:
        return _read_whole(raw, str(path), max_bytes, what, None)


def iter_json_lines(
    path: str | os.PathLike[str],
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    error: type[InputError] = DatasetError,
    objects: bool = False,
) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` for each non-blank line of a JSON Lines file (``objects``: each must be a
    JSON object); a problem is an ``error``.

    >>> import os, tempfile
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write(b'{"id": 1}\\n\\n[2]\\n')
    >>> list(iter_json_lines(f.name))
    [(1, {'id': 1}), (3, [2])]
    >>> os.remove(f.name)
    """
    _check_limit(max_line_bytes, "max_line_bytes")
    where = str(path)
    with _opened(where, error) as raw:
        for number, text in _lines(raw, where, max_line_bytes, "the line"):
            if not text.strip():
                continue
            # read without its ending, an error at the end of the line gets its column
            value = _decode_json(text.rstrip("\r\n"), where, number, cut=not text.endswith("\n"))
            if objects and not isinstance(value, dict):
                problem = f"expected a JSON object, got {describe_json(value)}"
                raise error(problem, path=where, line=number)
            yield number, value


def _iter_records(
    path: str, fmt: str | None, json_cells: Container[str], max_line_bytes: int
) -> Iterator[tuple[int, Any]]:
    if fmt is None:
        suffix = "jsonl" if path == "-" else Path(path.lower().removesuffix(".gz")).suffix[1:]
        if suffix not in _SUFFIXES:
            raise DatasetError(
                "cannot tell the format from the file name; expected .jsonl, .ndjson, .json, "
                ".csv, .yaml or .yml (optionally .gz), or give the format (format jsonl, json, "
                "csv, yaml or otel)",
                path=path,
            )
        fmt = _SUFFIXES[suffix]
    if fmt not in _FORMATS:
        expected = ", ".join(_FORMATS)
        raise DatasetError(f"unknown format {fmt!r}; expected one of {expected}", path=path)
    if fmt == "jsonl":
        yield from iter_json_lines(path, max_line_bytes=max_line_bytes)
        return
    _check_limit(max_line_bytes, "max_line_bytes")
    with _opened(path, DatasetError) as raw:
        if fmt == "csv":
            yield from _records_csv(_lines(raw, path, max_line_bytes, "the line"), path, json_cells)
            return
        text = _read_whole(raw, path, max_line_bytes, "the document (JSON and YAML are read whole)")
    if fmt == "yaml":
        yield from _records_yaml(text, path)
    else:
        yield from _records_json(text, path, otel=fmt == "otel")
