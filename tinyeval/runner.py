"""Run cases through generate → code checks → judge(s), one result row per case.

Every case is counted before it can fail: whatever happens to it (a check
raises, the model times out, the judge babbles) it ends as exactly one row
with ``status`` ``"pass"``, ``"fail"`` or ``"error"``, and every rate counts it
in its denominator.

Rows are handed out (and written, when ``out`` is given) as each case
finishes, so a long run can be watched, interrupted and resumed.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import itertools
import json
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from . import checks as checks_mod
from .calls import USAGE_KEYS, CallModel, add_usage, ask, model_spec
from .dataset import Case
from .errors import InputError

__all__ = [
    "CategoryTally",
    "DaemonThreadPool",
    "Progress",
    "ResultsFileError",
    "RunResult",
    "RunnerError",
    "evaluate_case",
    "input_text",
    "parse_shard",
    "read_rows",
    "run",
    "shard_index",
    "timed_out_row",
    "write_row",
]

Row = dict[str, Any]


class RunnerError(InputError):
    """A run asked for with settings that cannot work (a bad concurrency, shard or timeout)."""


@dataclass
class CategoryTally:
    """Counts for one category: every case is in ``total``, whatever became of it.

    >>> t = CategoryTally()
    >>> t.add({"status": "pass", "judge": None}); t.add({"status": "error", "judge": None})
    >>> (t.passed, t.total, t.errors)
    (1, 2, 1)
    """

    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    judged: int = 0
    unparsed: int = 0
    primary_judged: int = 0
    primary_passed: int = 0

    def add(self, row: Mapping[str, Any]) -> None:
        """Count one result row."""
        self.total += 1
        status = row.get("status")
        if status == "pass":
            self.passed += 1
        elif status == "error":
            self.errors += 1
        else:
            self.failed += 1
        for verdict in (row.get("judges") or {}).values():
            self.judged += 1
            if verdict.get("verdict") is None and verdict.get("failure") != "error":
                self.unparsed += 1
        primary = row.get("judge") or {}
        if primary.get("verdict") is not None:  # the first judge's parsed verdicts
            self.primary_judged += 1
            self.primary_passed += primary["verdict"] == "PASS"

    def to_dict(self) -> dict[str, int]:
        """The counts as a plain dict.

        >>> CategoryTally(total=2, passed=1, failed=1).to_dict()["failed"]
        1
        """
        return {
            "total": self.total,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "judged": self.judged,
            "unparsed": self.unparsed,
        }


@dataclass
class RunResult:
    """What a run produced: per-category tallies, and the rows when they were kept.

    ``complete`` is False when the run stopped early (``max_errors`` exceeded or
    interrupted); ``stopped_reason`` then says why.
    """

    categories: dict[str, CategoryTally] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    complete: bool = True
    stopped_reason: str | None = None
    dataset_fingerprint: str | None = None
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    elapsed_s: float = 0.0
    abandoned: int = 0  # cases given up on after the per-case timeout

    def add(self, row: Row, *, keep: bool) -> None:
        """Count a row (and keep it when asked)."""
        self.categories.setdefault(row["category"], CategoryTally()).add(row)
        add_usage(self.usage, row.get("usage"))
        if keep:
            self.rows.append(row)

    @property
    def total(self) -> int:
        """Number of cases with a row."""
        return sum(t.total for t in self.categories.values())

    @property
    def errors(self) -> int:
        """Number of cases that errored."""
        return sum(t.errors for t in self.categories.values())


# --------------------------------------------------------------------------- one case


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def input_text(value: Any) -> str:
    """The case's input as text for a prompt (structured inputs become JSON).

    >>> input_text("hola"), input_text(None), input_text([{"role": "user", "content": "hi"}])
    ('hola', '', '[{"role": "user", "content": "hi"}]')
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _new_row(case: Case, dataset_fingerprint: str | None) -> Row:
    """A result row for ``case`` before anything is known: status "error" until decided."""
    from . import __version__

    return {
        "id": case.id,
        "category": case.category,
        "origin": case.origin,
        "input": case.input,
        "output": case.output,
        "context": case.context,
        "label": case.label,
        "checks": {},
        "check_details": {},
        "judge": None,
        "judges": {},
        "judge_skipped": None,
        "status": "error",
        "error": None,
        "judge_model": None,  # set when a judge runs on the case
        "judge_temperature": None,
        "rubric_fingerprint": None,
        "dataset_fingerprint": dataset_fingerprint,
        "tinyeval_version": __version__,
        "started_at": _now(),
        "finished_at": None,
        "latency_ms": None,
        "usage": None,
    }


def timed_out_row(case: Case, seconds: float, task: Mapping[str, Any]) -> Row:
    """The error row of a case that ran past the per-case timeout.

    >>> row = timed_out_row(Case(id="slow"), 30, {})
    >>> row["status"], row["error"]
    ('error', 'TimeoutError: the case ran longer than 30 s (per-case timeout)')
    """
    row = _new_row(case, task.get("dataset_fingerprint"))
    row["error"] = f"TimeoutError: the case ran longer than {seconds:g} s (per-case timeout)"
    row["finished_at"] = row["started_at"]
    row["latency_ms"] = round(seconds * 1000, 3)
    return row


def _evaluate_noting_start(starts: dict[str, float], case: Case, **task: Any) -> Row:
    starts[case.id] = time.monotonic()  # when it left the queue: the per-case clock starts here
    return evaluate_case(case, **task)


def evaluate_case(
    case: Case,
    *,
    checks: Sequence[Any] = (),
    judges: Sequence[Any] = (),
    judge_model: CallModel | None = None,
    generate_model: CallModel | None = None,
    prompt_template: str | None = None,
    judge_all: bool = False,
    judge_categories: frozenset[str] | None = None,
    dataset_fingerprint: str | None = None,
) -> Row:
    """Evaluate one case into one result row; never raises for the case's own failures.

    >>> from tinyeval.dataset import Case
    >>> row = evaluate_case(Case(id="a", output="hola", expect={"max_words": 1}))
    >>> row["status"], row["checks"]
    ('pass', {'max_words': True})
    >>> evaluate_case(Case(id="b"))["status"]
    'error'
    """
    started = time.perf_counter()
    usage: dict[str, int] = {}
    row = _new_row(case, dataset_fingerprint)
    try:
        output = case.output
        if output is None:
            if generate_model is None:
                raise RunnerError("the case has no output and no generate model was given")
            prompt = input_text(case.input)
            if prompt_template is not None:
                prompt = prompt_template.replace("{input}", prompt)
            reply = ask(generate_model, prompt)
            add_usage(
                usage, getattr(reply, "usage", None), cached=getattr(reply, "cached", False) is True
            )
            output = str(reply)
            row["output"] = output
            row["generate_model"] = model_spec(generate_model)

        all_checks = [*checks_mod.checks_from_expect(case.expect), *checks]
        results = checks_mod.run_checks_detailed(output, all_checks, case=case)
        row["checks"] = {name: r.passed for name, r in results.items()}
        row["check_details"] = {name: r.detail for name, r in results.items() if r.detail}
        checks_ok = all(row["checks"].values())

        judges_ok = True
        if judges and judge_categories is not None and case.category not in judge_categories:
            row["judge_skipped"] = "category not judged"
        elif judges and not checks_ok and not judge_all:
            row["judge_skipped"] = "a code check failed"
        elif judges:
            if judge_model is None:
                raise RunnerError("judges were given but no judge model")
            row["judge_model"] = model_spec(judge_model)
            row["judge_temperature"] = getattr(judge_model, "temperature", None)
            row["rubric_fingerprint"] = getattr(judges[0], "rubric_fingerprint", None)
            for judge in judges:
                verdict = judge(
                    judge_model,
                    response=output,
                    context=case.context,
                    question=input_text(case.input),
                )
                data = verdict.to_dict()
                add_usage(usage, data.get("usage"))
                row["judges"][data["name"]] = data
                if getattr(verdict, "error", None) and not row["error"]:
                    row["error"] = f"judge {data['name']}: {verdict.error}"
                judges_ok = judges_ok and data.get("verdict") == "PASS"
            row["judge"] = next(iter(row["judges"].values()))
        if row["error"]:
            row["status"] = "error"
        else:
            row["status"] = "pass" if checks_ok and judges_ok else "fail"
    except Exception as exc:  # the case errors; the run goes on
        row["status"] = "error"
        row["error"] = f"{type(exc).__name__}: {exc}"
    row["finished_at"] = _now()
    row["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
    row["usage"] = usage or None
    return row


# --------------------------------------------------------------------------- the run


def _open_out(out: str | Path | IO[str] | None, append: bool) -> tuple[IO[str] | None, bool]:
    if out is None:
        return None, False
    if isinstance(out, (str, Path)):
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        return open(out, "a" if append else "w", encoding="utf-8"), True
    return out, False


def write_row(stream: IO[str], row: Row) -> None:
    """Write one row as a JSON line and flush it, so a kill loses at most this line.

    >>> import io
    >>> buf = io.StringIO(); write_row(buf, {"id": "a", "status": "pass"}); buf.getvalue()
    '{"id": "a", "status": "pass"}\\n'
    """
    stream.write(json.dumps(row, ensure_ascii=False) + "\n")
    stream.flush()


def run(
    cases: Iterable[Case],
    *,
    checks: Sequence[Any] = (),
    judges: Any = (),
    judge_model: CallModel | str | None = None,
    generate_model: CallModel | str | None = None,
    prompt_template: str | None = None,
    judge_all: bool = False,
    judge_categories: Iterable[str] | None = None,
    out: str | Path | IO[str] | None = None,
    append: bool = False,
    executor: cf.Executor | None = None,
    concurrency: int = 1,
    max_errors: int | None = None,
    fail_fast: int | None = 10,
    case_timeout: float | None = None,
    keep_rows: bool = True,
    on_row: Callable[[Row], None] | None = None,
    dataset_fingerprint: str | None = None,
) -> RunResult:
    """Evaluate every case and return the tallies (and rows, unless ``keep_rows=False``).

    ``checks`` are extra checks applied to every case, on top of each case's
    ``expect`` block. ``judges`` is a :class:`~tinyeval.judge.Judge` or a list
    of them; they run only on cases whose code checks passed (``judge_all=True``
    runs them there too), and, with ``judge_categories``, only in those
    categories. Model arguments take a ``prompt -> str`` callable or a spec
    string such as ``"builtin"`` or ``"openai:gpt-4o-mini"``.

    Cases run on ``executor`` (any :class:`concurrent.futures.Executor`) or on
    a thread pool of ``concurrency`` workers; each row is written to ``out`` and
    passed to ``on_row`` as soon as its case finishes. With ``max_errors``, the
    run stops taking new cases once more than that many have errored, and the
    result is marked incomplete; so it is when ``fail_fast`` cases (default
    10) have errored before any model call succeeded — an unreachable server
    or a wrong model name, not worth a full run of retries (None never stops). With
    ``case_timeout`` (seconds), a case still running that long after it started
    becomes an error row and the run moves on without it.

    >>> from tinyeval.dataset import Case
    >>> cases = [Case(id="a", output="hola", expect={"contains": ["hola"]}),
    ...          Case(id="b", output="chau", expect={"contains": ["hola"]})]
    >>> result = run(cases)
    >>> [r["status"] for r in result.rows], result.categories["default"].passed
    (['pass', 'fail'], 1)
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise RunnerError(f"concurrency must be a positive integer, got {concurrency!r}")
    if max_errors is not None and max_errors < 0:
        raise RunnerError(f"max_errors must be 0 or more, got {max_errors!r}")
    if case_timeout is not None and not case_timeout > 0:
        raise RunnerError(
            f"case_timeout must be a positive number of seconds, got {case_timeout!r}"
        )
    judge_list = list(judges) if isinstance(judges, (list, tuple)) else ([judges] if judges else [])
    judge_model = _resolve(judge_model)
    generate_model = _resolve(generate_model)
    if judge_list and judge_model is None:
        judge_model = _resolve("builtin")

    task = dict(
        checks=tuple(checks),
        judges=tuple(judge_list),
        judge_model=judge_model,
        generate_model=generate_model,
        prompt_template=prompt_template,
        judge_all=judge_all,
        judge_categories=frozenset(judge_categories) if judge_categories is not None else None,
        dataset_fingerprint=dataset_fingerprint,
    )
    result = RunResult(dataset_fingerprint=dataset_fingerprint)
    started = time.perf_counter()
    stream, owned = _open_out(out, append)
    own_executor = executor is None
    if executor is not None:
        pool = executor
    elif case_timeout is not None:  # a case given up on must not hold up the interpreter's exit
        pool = DaemonThreadPool(concurrency)
    else:
        pool = cf.ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="tinyeval")
    try:
        rows = _run_rows(
            pool,
            cases,
            task,
            window=2 * concurrency + 2,
            result=result,
            max_errors=max_errors,
            case_timeout=case_timeout,
            fail_fast=fail_fast,
        )
        for row in rows:
            if stream is not None:
                write_row(stream, row)
            result.add(row, keep=keep_rows)
            if on_row is not None:
                on_row(row)
    except KeyboardInterrupt:
        result.complete = False
        result.stopped_reason = "interrupted"
        raise
    finally:
        result.elapsed_s = time.perf_counter() - started
        if own_executor:  # never wait for a case abandoned past its timeout
            pool.shutdown(wait=not result.abandoned, cancel_futures=True)
        if owned and stream is not None:
            stream.close()
    return result


class DaemonThreadPool(cf.Executor):
    """A small thread pool whose workers never hold up the interpreter's exit.

    :class:`concurrent.futures.ThreadPoolExecutor` joins its threads when the
    interpreter exits, so a case abandoned past its timeout would keep a
    finished run from ending. These workers are daemon threads instead.

    >>> with DaemonThreadPool(2) as pool:
    ...     [f.result() for f in [pool.submit(pow, 2, n) for n in range(4)]]
    [1, 2, 4, 8]
    """

    def __init__(self, workers: int) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"tinyeval-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        """Queue ``fn(*args, **kwargs)`` and return its future."""
        future: cf.Future[Any] = cf.Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args, kwargs = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the workers once the queued jobs are done (or cancelled)."""
        if cancel_futures:
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[0].cancel()
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


def _run_rows(
    pool: cf.Executor,
    cases: Iterable[Case],
    task: Mapping[str, Any],
    *,
    window: int,
    result: RunResult,
    max_errors: int | None,
    case_timeout: float | None = None,
    fail_fast: int | None = None,
) -> Iterator[Row]:
    """Yield rows as cases finish, keeping at most ``window`` cases in flight.

    With ``case_timeout``, a case still running that long after it started is
    given an error row at once and left behind (a thread cannot be stopped; its
    late result is ignored).
    """
    pending: dict[cf.Future[Row], tuple[int, Case]] = {}  # future -> (submission order, case)
    starts: dict[str, float] = {}
    sequence = itertools.count()
    case_iter = iter(cases)
    errors = model_successes = 0
    stopping = False

    def count_error(row: Row) -> None:
        nonlocal errors, model_successes, stopping
        if row["status"] != "error":
            model_successes += bool(row.get("judges") or row.get("generate_model"))
            return
        if not result.complete:
            return
        errors += 1
        reason = None
        if max_errors is not None and errors > max_errors:
            reason = f"more than {max_errors} cases errored"
        elif fail_fast and errors == fail_fast and not model_successes:
            reason = (
                f"{fail_fast} cases errored before any model call succeeded (last: {row['error']})"
            )
        if reason:
            result.complete = False
            result.stopped_reason = reason
            stopping = True

    try:
        while True:
            while not stopping and len(pending) < window:
                case = next(case_iter, None)
                if case is None:
                    stopping = True
                    break
                if case_timeout is None:
                    future = pool.submit(evaluate_case, case, **task)
                else:
                    future = pool.submit(_evaluate_noting_start, starts, case, **task)
                pending[future] = (next(sequence), case)
            if not pending:
                return
            wait = _time_to_next_deadline(pending.values(), starts, case_timeout)
            done, _ = cf.wait(pending, timeout=wait, return_when=cf.FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: pending[f][0]):
                _, case = pending.pop(future)
                starts.pop(case.id, None)  # only the cases in flight are kept
                row = future.result()
                count_error(row)
                yield row
            if case_timeout is not None:
                now = time.monotonic()
                for future, (_, case) in list(pending.items()):
                    began = starts.get(case.id)
                    if began is not None and now - began >= case_timeout and not future.done():
                        del pending[future]
                        del starts[case.id]
                        future.cancel()
                        result.abandoned += 1
                        row = timed_out_row(case, case_timeout, task)
                        count_error(row)
                        yield row
    finally:
        for future in pending:
            future.cancel()
        if not result.abandoned:
            with contextlib.suppress(Exception):
                cf.wait(pending)


def _time_to_next_deadline(
    in_flight: Iterable[tuple[int, Case]], starts: Mapping[str, float], case_timeout: float | None
) -> float | None:
    """Seconds until the first running case reaches its timeout (None: no timeout)."""
    if case_timeout is None:
        return None
    now = time.monotonic()
    remaining = [starts[case.id] + case_timeout - now for _, case in in_flight if case.id in starts]
    return max(0.0, min(remaining)) if remaining else min(case_timeout, 0.05)


def _resolve(model: CallModel | str | None) -> CallModel | None:
    if model is None or callable(model):
        return model
    from .models import resolve

    return resolve(model)


# --------------------------------------------------------------------------- resume and shards


class ResultsFileError(InputError):
    """A results file that cannot be read back as rows."""


def read_rows(path: str | Path, *, repair: bool = False) -> list[Row]:
    """Read a results file back; detect (and with ``repair``, cut) a partial last line.

    A run killed mid-write leaves at most one incomplete trailing line. Without
    ``repair`` that is an error naming the line; with it, the line is cut off
    the file so the case runs again on ``--resume``.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write('{"id": "a", "status": "pass"}\\n{"id": "b", "sta')
    >>> read_rows(f.name)
    Traceback (most recent call last):
    ...
    tinyeval.runner.ResultsFileError: ...:2: the last line is cut short ...; --resume repairs it
    >>> [r["id"] for r in read_rows(f.name, repair=True)], open(f.name).read()
    (['a'], '{"id": "a", "status": "pass"}\\n')
    >>> os.remove(f.name)
    """
    path = Path(path)
    rows: list[Row] = []
    with open(path, "rb") as stream:
        data = stream.read()
    good_end = 0
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        complete = raw.endswith(b"\n")
        try:
            row = json.loads(raw) if raw.strip() else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            row = None
            if complete:
                raise ResultsFileError(f"{path}:{number}: not a JSON result row") from None
        if not complete and (row is None or raw.strip()):
            if repair:
                with open(path, "r+b") as stream:
                    stream.truncate(good_end)
                break
            raise ResultsFileError(
                f"{path}:{number}: the last line is cut short (a run killed mid-write?); "
                "--resume repairs it"
            )
        good_end += len(raw)
        if row is None:
            continue
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise ResultsFileError(f'{path}:{number}: expected a result row with an "id"')
        if row.get("status") not in ("pass", "fail", "error"):
            raise ResultsFileError(
                f'{path}:{number}: not a result row (no "status" of pass, fail or error): '
                "is this a cases or labels file? Result rows are what tinyeval run writes"
            )
        rows.append(row)
    return rows


def shard_index(case_id: str, shards: int) -> int:
    """Which of ``shards`` shards (numbered from 1) a case belongs to, by a stable hash of its id.

    >>> shard_index("amt-001", 4) == shard_index("amt-001", 4)
    True
    >>> sorted({shard_index(str(i), 3) for i in range(100)})
    [1, 2, 3]
    """
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1


def parse_shard(text: str) -> tuple[int, int]:
    """Parse ``I/N`` (shard I of N, 1-based).

    >>> parse_shard("2/4")
    (2, 4)
    """
    left, sep, right = text.partition("/")
    try:
        index, count = int(left), int(right)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise RunnerError(f"--shard expects I/N with 1 <= I <= N, got {text!r}")
    return index, count


class Progress:
    """One self-overwriting status line on a terminal: done/total, rate, ETA, failures, errors.

    It prints nothing unless ``stream`` is a terminal, so piped output stays clean.
    """

    def __init__(self, total: int, stream: IO[str], *, enabled: bool = True) -> None:
        self.total = total
        self.stream = stream
        self.enabled = enabled and bool(getattr(stream, "isatty", lambda: False)())
        self.done = self.failed = self.errors = 0
        self.started = time.perf_counter()
        self._last = 0.0
        self._closed = False

    def update(self, row: Mapping[str, Any]) -> None:
        """Count one finished row and redraw at most ten times a second."""
        self.done += 1
        self.failed += row.get("status") == "fail"
        self.errors += row.get("status") == "error"
        now = time.perf_counter()
        if self.enabled and (now - self._last > 0.1 or self.done == self.total):
            self._last = now
            self.stream.write("\r\x1b[K" + self.line(now))
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        """The status line.

        >>> import io
        >>> p = Progress(10, io.StringIO()); p.update({"status": "fail"})
        >>> p.line(p.started + 2.0)
        '1/10 · 0.5 cases/s · ETA 18s · 1 failed · 0 errors'
        """
        elapsed = max((now or time.perf_counter()) - self.started, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta_text = f"{eta:.0f}s" if eta != float("inf") else "?"
        return (
            f"{self.done}/{self.total} · {rate:.1f} cases/s · ETA {eta_text} · "
            f"{self.failed} failed · {self.errors} errors"
        )

    def close(self) -> None:
        """End the status line (once; later calls do nothing)."""
        if self.enabled and self.done and not self._closed:
            self.stream.write("\n")
            self.stream.flush()
        self._closed = True
