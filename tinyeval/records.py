"""The result row (its keys: those of :func:`new_row`), one JSON line per case: made, written,
read back, tallied, merged, resumed, checked for completeness."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from . import __version__, _formats
from .errors import IncompleteError, InputError, listed, plural, shorten, utc_stamp

Row = dict[str, Any]

STATUSES = ("pass", "fail", "error", "unchecked")


class ResultsFileError(InputError):
    """A results file that cannot be read back as rows, or rows that do not belong together."""


def row_stamp() -> str:
    """:func:`tinyeval.errors.utc_stamp`, computed once per millisecond."""
    return _stamp_of(time.time_ns() // 1_000_000)


@functools.lru_cache(maxsize=1)
def _stamp_of(millisecond: int) -> str:
    return utc_stamp()


def new_row(
    case: Any, *, dataset_fingerprint: str | None = None, run: Mapping[str, Any] | None = None
) -> Row:
    """A result row for ``case`` (a trial's: with its ``trial``) before anything is known:
    ``status`` is "error" until decided."""
    row: Row = {
        "id": case.id,
        "category": case.category,
        "cluster": (case.meta or {}).get("cluster"),
        "origin": case.origin,
        "line": getattr(case, "line", None),
        "input": case.input,
        "output": case.output,
        "context": case.context,
        "tool_calls": list(case.tool_calls) if case.tool_calls else None,
        "label": case.label,
        "checks": {},
        "check_details": {},
        "judges": {},
        "judge_skipped": None,
        "status": "error",
        "error": None,
        "judge_model": None,  # set when a judge runs on the case
        "judge_temperature": None,
        "rubric_fingerprint": None,
        "dataset_fingerprint": dataset_fingerprint,
        "run": dict(run) if run is not None else None,
        "tinyeval_version": __version__,
        "started_at": row_stamp(),
        "finished_at": None,
        "latency_ms": None,
        "usage": None,
    }
    if getattr(case, "trial", None) is not None:
        row["trial"] = case.trial
    return row


def run_manifest(
    *,
    cases: int,
    shard: tuple[int, int] | None = None,
    shard_cases: int | None = None,
    sample: Mapping[str, Any] | None = None,
    only: int | None = None,
    judges: Mapping[str, str] | None = None,
    judge_model: str | None = None,
    gate: Mapping[str, Any] | None = None,
    suite: str | None = None,
    cases_file: str | None = None,
    observers: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What a run was meant to see, in every row's ``run``, so a reader tells a partial run."""
    return {
        "cases": cases,
        "shard": f"{shard[0]}/{shard[1]}" if shard else None,
        "shard_cases": shard_cases,
        "sample": dict(sample) if sample else None,
        "only": only,
        "judges": dict(judges or {}),
        "judge_model": judge_model,
        "gate": dict(gate or {}),
        "suite": suite,
        "cases_file": cases_file,
        "observers": dict(observers or {}),
    }


def verdicts(row: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The row's judge verdicts by name, in the order the judges ran.

    >>> verdicts({"judges": {"tone": {"verdict": "FAIL"}, "broken": None}})
    {'tone': {'verdict': 'FAIL'}}
    """
    judges = row.get("judges")
    if not judges or not isinstance(judges, Mapping):
        return {}
    return {str(name): v for name, v in judges.items() if isinstance(v, Mapping)}


def primary_verdict(row: Mapping[str, Any], judge: str | None = None) -> Mapping[str, Any] | None:
    """The verdict of ``judge`` (by name), or of the row's first judge; None when absent.

    >>> primary_verdict({"judges": {"a": {"verdict": "PASS"}, "b": {"verdict": "FAIL"}}})
    {'verdict': 'PASS'}
    """
    found = verdicts(row)
    return found.get(judge) if judge is not None else next(iter(found.values()), None)


class Provenance(NamedTuple):
    """Which judge gave a row's verdict: its rubric fingerprint, model spec and criterion."""

    rubric_fingerprint: str | None
    judge_model: str | None
    criterion: str | None


def provenance(row: Mapping[str, Any], judge: str | None = None) -> Provenance:
    """The provenance of ``judge``'s verdict in ``row`` (default: the first judge's).

    >>> provenance({"judge_model": "builtin", "judges": {"tone": {"criterion": "Is polite."}}})
    Provenance(rubric_fingerprint=None, judge_model='builtin', criterion='Is polite.')
    """
    verdict = primary_verdict(row, judge) or {}
    rubric = verdict.get("rubric_fingerprint") or row.get("rubric_fingerprint")
    model = row.get("judge_model") or verdict.get("model")
    return Provenance(rubric, model, verdict.get("criterion"))


def verdict_label(verdict: Mapping[str, Any]) -> Any:
    """What a verdict says, as calibration compares it: ``verdict``, or a pairwise ``winner``.

    >>> verdict_label({"verdict": "FAIL"}), verdict_label({"winner": "B", "first": "B"})
    ('FAIL', 'B')
    """
    return verdict["verdict"] if "verdict" in verdict else verdict.get("winner")


def verdict_errored(verdict: Mapping[str, Any]) -> bool:
    """True when the judge's call failed (no reply to read), not when a reply did not parse.

    >>> verdict_errored({"verdict": None, "failure": "error"}), verdict_errored({"verdict": None})
    (True, False)
    """
    if "verdict" in verdict:
        return verdict.get("failure") == "error"
    return bool(verdict.get("error"))  # a pairwise verdict


def derived_status(row: Mapping[str, Any]) -> str:
    """The status a row's own error, checks and judge verdicts give it (as the run decides)."""
    if row.get("error"):
        return "error"
    checks = row.get("checks") or {}
    for value in checks.values():  # a loop: no list or generator made for every row
        if value is not True:
            return "fail"
    gated: list[Mapping[str, Any]] = []
    if row.get("judges"):  # (most rows have no verdict)
        gated = [v for v in verdicts(row).values() if v.get("failure") != "ungated"]
        if not all(
            v.get("verdict") == "PASS" if "verdict" in v else v.get("winner") for v in gated
        ):
            return "fail"
    if str(row.get("judge_skipped") or "").startswith("the case cannot be judged"):
        return "unchecked"
    return "pass" if checks or gated else "unchecked"


def output_fingerprint(output: Any) -> str | None:
    """A short, stable digest of a row's output, so a label can tell its output changed.

    >>> output_fingerprint("hola"), output_fingerprint(None)
    ('b221d9dbb083a7f3', None)
    """
    if output is None:
        return None
    text = output if isinstance(output, str) else json.dumps(output, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class CategoryTally:
    """Counts for one category.

    >>> tally([{"id": "b", "status": "unchecked"}])["default"].unchecked_ids
    ['b']
    """

    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    unchecked: int = 0
    judged: int = 0
    unparsed: int = 0
    labelled: int = 0  # cases with their own label
    clustered: int = 0  # cases with a cluster
    unchecked_ids: list[str] = field(default_factory=list)  # the first 20; the count is exact

    def add(self, row: Mapping[str, Any]) -> None:
        self.total += 1
        status = row.get("status")
        if status == "pass":
            self.passed += 1
        elif status == "error":
            self.errors += 1
        elif status == "unchecked":
            self.unchecked += 1
            if len(self.unchecked_ids) < 20:
                self.unchecked_ids.append(str(row.get("id")))
        else:
            self.failed += 1
        self.labelled += row.get("label") is not None
        self.clustered += row.get("cluster") is not None
        for verdict in verdicts(row).values() if row.get("judges") else ():
            self.judged += 1
            ungated = verdict.get("failure") == "ungated"  # a graded score with no pass mark
            if verdict_label(verdict) is None and not verdict_errored(verdict) and not ungated:
                self.unparsed += 1


def tally(rows: Iterable[Mapping[str, Any]]) -> dict[str, CategoryTally]:
    """Per-category tallies of ``rows``, categories in sorted order.

    >>> [(name, t.total) for name, t in tally([{"category": "b"}, {"category": "a"}]).items()]
    [('a', 1), ('b', 1)]
    """
    found: defaultdict[str, CategoryTally] = defaultdict(CategoryTally)
    for row in rows:
        found[str(row.get("category") or "default")].add(row)
    return dict(sorted(found.items()))


def _trials_of(rows: Iterable[Mapping[str, Any]]) -> tuple[int, str]:
    """``(k, rule)``: each case ran k times, passing when ``all`` (or ``any``) trials pass."""
    for row in rows:
        observers = _manifest(row).get("observers")
        found = observers.get("trials") if isinstance(observers, Mapping) else None
        if isinstance(found, Mapping):
            return max(_whole(found.get("k")), 1), str(found.get("gate") or "all")
        return max(_whole(found), 1), "all"
    return 1, "all"


def case_rows(
    rows: Sequence[Mapping[str, Any]], rule: str | None = None
) -> list[Mapping[str, Any]]:
    """One row per case: its trial rows joined by ``rule`` (default: the run's)."""
    if not any("trial" in row for row in rows):
        return list(rows)
    passes = all if (rule or _trials_of(rows)[1]) == "all" else any
    by_case: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_case.setdefault(str(row["id"]), []).append(row)
    joined: list[Mapping[str, Any]] = []
    for trials in by_case.values():
        statuses = [trial.get("status") for trial in trials]
        failed = next((s for s in ("error", "unchecked") if s in statuses), "fail")
        status = "pass" if passes(s == "pass" for s in statuses) else failed
        joined.append({**trials[0], "status": status})
    return joined


@dataclass(frozen=True)
class Completeness:
    """Whether rows cover what their run was meant to see (``expected`` None: unknown; a
    ``reason``: the run stopped before its end, ``no_rows`` its categories without a row).

    >>> c = completeness([{"id": "a", "run": {"cases": 3, "shard": None}}])
    >>> c.complete, str(c), str(Completeness(29, 45, reason="interrupted"))
    (False, 'incomplete: 1 of 3 cases', 'incomplete: 29 of 45 cases (stopped: interrupted)')
    """

    seen: int
    expected: int | None
    shards: int | None = None
    missing_shards: tuple[int, ...] = ()
    missing_ids: tuple[str, ...] = ()
    reason: str | None = None
    no_rows: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        if self.reason is not None or self.expected is None:
            return self.reason is None
        return self.seen >= self.expected and not self.missing_shards

    def __str__(self) -> str:
        if self.complete:
            return f"complete: {plural(self.seen, 'case')}"
        if self.reason is not None and self.expected is None:
            return f"incomplete: {plural(self.seen, 'case')} before it stopped ({self.reason})"
        text = f"incomplete: {self.seen:,} of {plural(self.expected or 0, 'case')}"
        if self.reason is not None:
            return f"{text} (stopped: {self.reason})"
        if self.missing_shards:
            shown = ", ".join(f"{i}/{self.shards}" for i in self.missing_shards)
            text += f" (missing {plural(len(self.missing_shards), 'shard')}: {shown})"
        if self.missing_ids:
            text += f" (ids {listed(self.missing_ids)})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "seen": self.seen,
            "expected": self.expected,
            "missing_shards": [f"{i}/{self.shards}" for i in self.missing_shards],
            "missing_ids": list(self.missing_ids),
        }


def completeness(
    rows: Sequence[Mapping[str, Any]], *, expected_ids: Iterable[str] | None = None
) -> Completeness:
    """What ``rows`` cover against their ``run`` manifest; ``expected_ids`` names the missing.

    >>> str(completeness([{"id": "a", "run": {"cases": 2, "shard": "1/2"}}]))
    'incomplete: 1 of 2 cases (missing 1 shard: 2/2)'
    """
    manifests = [row["run"] for row in rows if isinstance(row.get("run"), Mapping)]
    trials = Counter(str(row.get("id")) for row in rows)
    k = _trials_of(rows)[0]
    ids = {key for key, count in trials.items() if count >= k}  # a case with every trial
    missing_ids = () if expected_ids is None else tuple(sorted(set(map(str, expected_ids)) - ids))
    if not manifests:
        expected = len(ids) + len(missing_ids) if expected_ids is not None else None
        return Completeness(seen=len(ids), expected=expected, missing_ids=missing_ids)
    if any(m.get("sequential") or _skips_cases(m.get("observers")) for m in manifests):
        # fewer rows than cases by design (a run stopping each category once decided)
        return Completeness(seen=len(ids), expected=None, missing_ids=missing_ids)
    expected = max(_whole(m.get("cases")) for m in manifests)
    shard_names = {m.get("shard") for m in manifests}
    shards: int | None = None
    missing: tuple[int, ...] = ()
    if None not in shard_names:
        shards = max(int(str(name).partition("/")[2]) for name in shard_names)
        present = {int(str(name).partition("/")[0]) for name in shard_names}
        missing = tuple(i for i in range(1, shards + 1) if i not in present)
    return Completeness(len(ids), expected, shards, missing, missing_ids)


def _skips_cases(observers: Any) -> bool:
    found = observers.values() if isinstance(observers, Mapping) else ()
    return any(isinstance(r, Mapping) and r.get("skips_cases") for r in found)


def _whole(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def merge_rows(
    sources: Sequence[tuple[str, Sequence[Row]]], *, allow_partial: bool = False
) -> list[Row]:
    """Join the rows of shards (``[(path, rows), …]``), refusing what cannot be one run."""
    file_of: dict[str, int] = {}  # "case 'a'", "shard 1/2" -> the source that has it
    first: dict[str, tuple[Any, str]] = {}  # a setting -> its value and the file it came from
    merged: list[Row] = []
    for index, (path, rows) in enumerate(sources):
        for row in rows:
            shard = _manifest(row).get("shard")
            for what in (f"case {str(row['id'])!r}", None if shard is None else f"shard {shard}"):
                if what is not None and file_of.setdefault(what, index) != index:
                    raise ResultsFileError(
                        f"{what} is in both {sources[file_of[what]][0]} and {path}"
                    )
            for name, value in _shared_settings(row).items():
                kept, where = first.setdefault(name, (value, path))
                if kept != value:
                    raise ResultsFileError(
                        f"the shards differ in {name}: {_shown(kept)} in {where}, "
                        f"{_shown(value)} in {path}; merge only the shards of one run"
                    )
            merged.append(row)
    found = completeness(merged)
    if not found.complete and not allow_partial:
        raise IncompleteError(f"{found}; merge the missing shards too, or allow a partial merge")
    return merged


def _manifest(row: Mapping[str, Any]) -> Mapping[str, Any]:
    manifest = row.get("run")
    return manifest if isinstance(manifest, Mapping) else {}


def _shared_settings(row: Mapping[str, Any]) -> dict[str, Any]:
    manifest = _manifest(row)
    gate = manifest.get("gate")
    gate = gate if isinstance(gate, Mapping) else {}
    found = {"dataset": row.get("dataset_fingerprint")}
    for key in ("thresholds", "default_threshold", "inconclusive", "allow_unchecked"):
        found[f"gate {key.replace('_', ' ')}"] = gate.get(key) or None
    found["judges (rubric fingerprints)"] = manifest.get("judges") or None
    found["judge model"] = manifest.get("judge_model")
    found["trials and stopping rule"] = manifest.get("observers") or None
    found["shards"] = str(manifest.get("shard") or "/").partition("/")[2] or None
    for name, verdict in verdicts(row).items():
        found[f"the criterion of judge {name!r}"] = verdict.get("criterion")
    return found


def _shown(value: Any) -> str:
    return "none" if value is None else shorten(json.dumps(value, sort_keys=True), 120)


_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dumps makes one a call


def write_row(stream: IO[str], row: Mapping[str, Any], *, flush: bool = True) -> None:
    """Write one row as a JSON line and flush it (a kill loses at most this line)."""
    text = _ROW_ENCODER.encode(row)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(row, ensure_ascii=True)
    stream.write(text + "\n")
    if flush:
        stream.flush()


class RowsWrittenWhole:
    """Rows written beside ``path``, made the results file in one step by :meth:`finish`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        # a symbolic link is written through, as opening it would: the file it names is replaced
        self._target = Path(os.path.realpath(path))
        self._mark = os.urandom(16).hex()  # cannot occur in a row by chance
        self._temporary: Path | None = None
        self._held = contextlib.ExitStack()  # the file is the run's until discarded
        self._held.enter_context(_out_lock(path))
        if _is_null_device(self.path):
            self._stream: IO[str] = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
            return
        handle, name = _temporary_beside(self._target)
        self._temporary = Path(name)
        self._stream = os.fdopen(handle, "w", encoding="utf-8")

    @staticmethod
    def can_write(path: str | os.PathLike[str]) -> bool:
        """Whether rows can go to ``path`` whole, at the end (not a pipe or a terminal)."""
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return True
        return stat.S_ISREG(mode) or _is_null_device(Path(path))

    def write(self, row: Row) -> None:
        kept = row["dataset_fingerprint"], row["run"]
        row["dataset_fingerprint"] = row["run"] = self._mark
        try:
            write_row(self._stream, row, flush=False)
        finally:
            row["dataset_fingerprint"], row["run"] = kept

    def finish(self, dataset_fingerprint: str, run: Mapping[str, Any] | None) -> None:
        self._stream.close()
        if self._temporary is None:
            return
        mark = self._mark
        placeholder = json.dumps({"dataset_fingerprint": mark, "run": mark})[1:-1].encode()
        real = {"dataset_fingerprint": dataset_fingerprint, "run": run}
        filled = json.dumps(real, ensure_ascii=False)[1:-1].encode("utf-8")
        try:
            with open(self._temporary, "rb") as rows, _replacing(self._target) as whole:
                for line in rows:
                    if placeholder not in line:  # a row this writer did not write
                        raise IncompleteError(
                            f"{self._temporary}: a row changed while the run wrote it"
                        )
                    whole.write(line.replace(placeholder, filled, 1))
        finally:
            self.discard()

    def discard(self) -> None:
        self._held.close()
        self._stream.close()
        if self._temporary is not None:
            self._temporary.unlink(missing_ok=True)
            self._temporary = None


def _is_null_device(path: Path) -> bool:
    try:
        return path.samefile(os.devnull)
    except OSError:
        return False


@contextlib.contextmanager
def _out_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``path`` for one run by a lock file beside it: a second run is refused."""
    target = Path(path)
    if target.exists() and not stat.S_ISREG(target.stat().st_mode):
        yield  # a device or a pipe: nothing to hold
        return
    lock = target.parent / f".{target.name}.lock"
    target.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(2):
        try:
            handle = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            break
        except FileExistsError:
            with open(lock, "rb") as held:
                text = held.read(20).strip()
            pid = int(text) if text.isdigit() else 0  # 0: being written, or not a pid
            if attempt or not pid or _alive(pid):
                raise InputError(
                    f"another run (process {pid or 'unknown'}) is writing it; wait for that run, "
                    f"or remove {lock} if it is gone",
                    path=str(path),
                ) from None
            lock.unlink(missing_ok=True)  # its run is gone: a crash left it
    try:
        os.write(handle, str(os.getpid()).encode())
        os.close(handle)
        yield
    finally:
        lock.unlink(missing_ok=True)


def holding_out(run: Callable[..., Any]) -> Callable[..., Any]:
    """``run`` holding its ``out`` path by :func:`_out_lock`."""

    @functools.wraps(run)
    def held(*args: Any, **options: Any) -> Any:
        out = options.get("out")
        with _out_lock(out) if isinstance(out, str | os.PathLike) else contextlib.nullcontext():
            return run(*args, **options)

    return held


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's process
        return True
    except (ProcessLookupError, OverflowError):
        return False
    return True


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` in one step."""
    with _replacing(Path(path)) as stream:
        stream.write(text.encode("utf-8"))


def _temporary_beside(target: Path) -> tuple[int, str]:
    target.parent.mkdir(parents=True, exist_ok=True)
    return tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)


@contextlib.contextmanager
def _replacing(target: Path) -> Iterator[IO[bytes]]:
    handle, temporary = _temporary_beside(target)
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream
        try:  # the mode of the file it replaces, as writing into that file would keep
            mode = os.stat(target).st_mode & 0o7777
        except OSError:
            mask = os.umask(0)  # read, then put back
            os.umask(mask)
            mode = 0o666 & ~mask
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_records(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> None:
    """Write records as JSON lines, all or nothing.

    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
    >>> write_records(target, [{"id": "a"}])
    >>> open(target, encoding="utf-8").read()
    '{"id": "a"}\\n'
    """
    write_text_atomically(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


iter_json_lines = functools.partial(_formats.iter_json_lines, objects=True)
"""``(line number, object)`` for each JSON object of a JSONL file, read with bounds."""


def read_rows(path: str | os.PathLike[str], *, repair: bool = False) -> list[Row]:
    """Read a results file back, refusing what is not one run's rows (``repair``: cut off a cut
    last line).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "r.jsonl")
    >>> _ = open(path, "w").write('{"id": "a", "status": "unchecked"}\\n{"id": "b", "sta')
    >>> read_rows(path)
    Traceback (most recent call last):
    tinyeval.records.ResultsFileError: ...:2: the last line is not complete JSON: ...
    >>> [r["id"] for r in read_rows(path, repair=True)], open(path).read()
    (['a'], '{"id": "a", "status": "unchecked"}\\n')
    """
    where = str(path)
    rows: list[Row] = []
    first_line: dict[tuple[str, Any], int] = {}
    try:
        for number, row in _formats.iter_json_lines(path, error=ResultsFileError):
            _check_row(row, rows[0] if rows else None, where, number)
            key = (row["id"], row.get("trial"))
            if key in first_line:
                what = f"the case {key[0]!r}" + (f" (trial {key[1]})" if key[1] is not None else "")
                raise ResultsFileError(
                    f"{what} has a second row (the first is on line {first_line[key]}): "
                    "a results file holds one row per case (and trial)",
                    path=where,
                    line=number,
                )
            first_line[key] = number
            rows.append(row)
    except ResultsFileError as exc:
        if not (repair and exc.reason.startswith("the last line is not complete")):
            raise
        with open(path, "r+b") as stream:  # cut off the cut line
            for _ in range((exc.line or 1) - 1):
                stream.readline()
            stream.truncate(stream.tell())
    else:
        if repair:  # the next row starts on a line of its own
            with open(path, "r+b") as stream:
                size = stream.seek(0, os.SEEK_END)
                if size and stream.seek(size - 1) >= 0 and stream.read(1) != b"\n":
                    stream.write(b"\n")
    return rows


def resumable_rows(
    out: str | os.PathLike[str],
    fingerprint: str | None,
    now: Mapping[str, str],
    spec: str | None,
    observed: Mapping[str, Any],
    error: type[InputError] = ResultsFileError,
) -> list[Row]:
    """The rows in ``out`` a resumed run keeps; ``error`` when the dataset, a judge's rubric
    (``now``), the model (``spec``) or an observer changed.
    """
    if not Path(out).exists():
        return []
    rows = read_rows(out, repair=True)
    refuse = functools.partial(error, path=str(out))
    other = {r.get("dataset_fingerprint") for r in rows} - {fingerprint}
    if fingerprint is not None and other:
        raise refuse(
            f"holds rows from another dataset (fingerprint {sorted(map(str, other))[0]}, now "
            f"{fingerprint}); move it away or run without resuming"
        )
    for row in rows:
        judges = verdicts(row)
        manifest = row.get("run")
        observers = dict(manifest.get("observers") or {}) if isinstance(manifest, Mapping) else None
        kept: dict[str, tuple[Any, Any]] = {"trials and stopping rule": (observers, observed)}
        kept["judge model"] = (row.get("judge_model") if judges else None, spec)
        for name, verdict in judges.items():  # a setting the row was written with: then, now
            then = str(verdict.get("rubric_fingerprint"))
            kept[f"the rubric of judge {name!r}"] = then, str(now.get(name, "none: no such judge"))
        for setting, (was, has) in kept.items():
            if was is not None and was != has:
                raise refuse(
                    f"the case {row['id']!r} was run with {setting} {_shown(was)}, this run has "
                    f"{_shown(has)}: resuming would mix the two; move the file away or run "
                    "with the same settings"
                )
    return rows


_ROW_TYPES = {"checks": dict, "judges": dict, "check_details": dict, "category": str, "run": dict}


def _check_row(row: Any, first: Row | None, path: str, line: int) -> None:
    fail = functools.partial(ResultsFileError, path=path, line=line)
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        raise fail('expected a result row with an "id"')
    if row.get("status") not in STATUSES:
        raise fail(
            'not a result row (no "status" of pass, fail, error or unchecked): is this a '
            "cases or labels file? Result rows are what tinyeval run writes"
        )
    for key, kind in _ROW_TYPES.items():
        value = row.get(key)
        if value is not None and not isinstance(value, kind):
            raise fail(f"expected {'an object' if kind is dict else 'a string'}", field=key)
    derived = derived_status(row)  # a row as a run writes it records its evidence
    recorded = "checks" in row or isinstance(row.get("run"), dict)
    if row["status"] != derived and (recorded or row["status"] == "pass"):  # no unearned pass
        raise fail(
            f"the row says {row['status']!r} but its own checks, judge verdicts and error say "
            f"{derived!r}: the row was changed after the run; run the case again",
            field="status",
        )
    (k, rule), trial, before = _trials_of([row]), row.get("trial"), _trials_of([first or row])
    if (k, rule) != before:
        raise fail(
            f"this row's run had {k} trials ({rule}), the first row's {before}: "
            "a results file holds the rows of one run"
        )
    if (trial is not None or k > 1) and not (k > 1 and type(trial) is int and 0 <= trial < k):
        raise fail(
            f"expected a trial from 0 to {k - 1} (the run had {plural(k, 'trial')}), got "
            f"{shorten(json.dumps(trial), 40)}",
            field="trial",
        )
