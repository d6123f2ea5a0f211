"""Cases into rows, one per case: prepared, then run (concurrency, resume, shards, timeouts)."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import hashlib
import json
import os
import queue
import stat
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from . import _extra, dataset
from . import checks as checks_mod
from .dataset import Case
from .errors import InputError
from .models import USAGE_KEYS, CallModel, ChatPrompt, add_usage, ask, model_spec, resolve
from .records import (
    CategoryTally,
    Row,
    derived_status,
    holding_out,
    new_row,
    resumable_rows,
    row_stamp,
    run_manifest,
    write_row,
)


class RunnerError(InputError):
    """A run asked for with settings that cannot work (a bad concurrency, shard or timeout)."""


@dataclass
class RunResult:
    """What a run produced: per-category tallies, and the rows when kept.

    >>> result = run([Case(id="a", output="hola", expect={"max_words": 1})])
    >>> result.total, result.complete, result.categories["default"].passed
    (1, True, 1)
    """

    categories: dict[str, CategoryTally] = field(default_factory=lambda: defaultdict(CategoryTally))
    rows: list[Row] = field(default_factory=list)
    complete: bool = True
    stopped_reason: str | None = None
    dataset_fingerprint: str | None = None
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    elapsed_s: float = 0.0
    abandoned: int = 0  # cases given up on (past the per-case timeout, or on a second interrupt)
    resumed: int = 0
    in_flight: int = 0  # cases running now
    stopped_by: str | None = None  # the sentence of the observer that stopped the run

    def add(self, row: Row, *, keep: bool) -> None:
        self.categories[str(row["category"])].add(row)
        if row.get("usage"):  # (most rows have none)
            add_usage(self.usage, row["usage"])
        if keep:
            self.rows.append(row)

    def sorted_categories(self) -> dict[str, CategoryTally]:
        return dict(sorted(self.categories.items()))

    @property
    def total(self) -> int:
        return sum(t.total for t in self.categories.values())

    @property
    def errors(self) -> int:
        return sum(t.errors for t in self.categories.values())


class Observer:
    """Watches a run and may stop it; ``name`` (its setting) keys it in the manifest and summary."""

    name = ""

    def cases(self, cases: Iterable[Case]) -> Iterable[Case]:
        """Before the run: the cases it is to see (expanded or reordered)."""
        return cases

    def skip(self, case: Case) -> bool:
        """Before a case starts: True when it is not to run (its category is decided)."""
        return False

    def row(self, row: Row, result: RunResult) -> str | None:
        """Each finished row, in the run's thread: why the run must stop, or None."""
        return None

    def summary(self) -> list[str]:
        return []

    def to_dict(self) -> dict[str, Any]:
        return {}

    def manifest(self) -> Any:
        """What the manifest records of it (None: nothing); resuming refuses other rows."""
        return None


def input_text(value: Any) -> str:
    """The case's input as text for a prompt.

    >>> input_text("hola"), input_text(None), input_text([{"role": "user", "content": "hi"}])
    ('hola', '', '[{"role": "user", "content": "hi"}]')
    """
    if value is None or isinstance(value, str):
        return value or ""
    return json.dumps(value, ensure_ascii=False)


def _evaluate_noting_start(starts: dict[int, float], case: Case, **task: Any) -> Row:
    starts[id(case)] = time.monotonic()  # the per-case clock starts as it leaves the queue
    return evaluate_case(case, **task)


def missing_needs(judge: Any, case: Case) -> list[str]:
    conversation = getattr(case, "conversation", None)
    asked = conversation.question if conversation is not None else case.input
    have = {"context": case.context is not None, "question": asked not in (None, "")}
    return [need for need in getattr(judge, "needs", ()) if not have.get(need, True)]


def generation_prompt(case: Case, template: str | None) -> str:
    conversation = getattr(case, "conversation", None)
    if conversation is not None:
        tools = case.meta.get("tools") if isinstance(case.meta, Mapping) else None
        return ChatPrompt.of(conversation, tools=tools if isinstance(tools, list) else ())
    prompt = input_text(case.input)
    return prompt if template is None else template.replace("{input}", prompt)


def judge_inputs(judge: Any, case: Case, output: str) -> dict[str, Any]:
    conversation = getattr(case, "conversation", None)
    if conversation is None:
        return {"context": case.context, "question": input_text(case.input)}
    parts = conversation.with_response(output, case.tool_calls).judge_parts()
    shown = {"context": case.context, "question": parts.question or ""}
    if getattr(judge, "takes_conversation", False):
        shown["conversation"] = parts
    return shown


JudgeCategories = frozenset[str] | Mapping[str, frozenset[str]] | None
"""Where judges look: every category (None), these categories, or per judge name (empty: all)."""


def judges_category(judge: Any, category: str, where: JudgeCategories) -> bool:
    if where is None:
        return True
    if isinstance(where, frozenset):
        return category in where
    own = where.get(getattr(judge, "name", ""), frozenset())
    return not own or category in own


def categories_judged(given: Iterable[str] | Mapping[str, Iterable[str]] | None) -> JudgeCategories:
    if given is None:
        return None
    if isinstance(given, Mapping):
        return {str(name): frozenset(categories) for name, categories in given.items()}
    return frozenset(given)


def evaluate_case(
    case: Case,
    *,
    checks: Sequence[Any] = (),
    judges: Sequence[Any] = (),
    judge_model: CallModel | None = None,
    generate_model: CallModel | None = None,
    prompt_template: str | None = None,
    judge_all: bool = False,
    judge_categories: JudgeCategories = None,
    dataset_fingerprint: str | None = None,
    run: Mapping[str, Any] | None = None,
    regenerate: bool = False,
) -> Row:
    """Evaluate one case into one result row; never raises for the case's own failures.

    >>> row = evaluate_case(Case(id="a", output="hola", expect={"max_words": 1}))
    >>> row["status"], row["checks"]
    ('pass', {'max_words': True})
    """
    started = time.perf_counter()
    usage: dict[str, int] = {}
    row = new_row(case, dataset_fingerprint=dataset_fingerprint, run=run)
    trial = row.get("trial")
    try:
        output = case.output
        if output is None or (regenerate and generate_model is not None):
            if generate_model is None:
                raise RunnerError("the case has no output and no generate model was given")
            prompt = generation_prompt(case, prompt_template)
            reply = ask(generate_model, prompt, sample=trial or 0)
            if type(reply) is not str:  # a Reply carries its usage and whether it was cached
                cached = getattr(reply, "cached", False) is True
                add_usage(usage, getattr(reply, "usage", None), cached=cached)
            output = str(reply)
            row["output"] = output
            row["generate_model"] = model_spec(generate_model)
            if case.tool_calls:  # the logged calls belong to the logged output, not this one
                case = replace(case, output=output, tool_calls=())
        if checks or type(output) is not str:
            extra = [*case.expect_checks(), *checks]
            results = checks_mod.run_checks_detailed(output, extra, case=case)
        else:  # the case's own checks only: built, named and told apart when it was read
            results = checks_mod.run_built_checks(output, case.expect_checks(), case)
        passed = row["checks"] = {name: r.passed for name, r in results.items()}
        row["check_details"] = {name: r.detail for name, r in results.items() if r.detail}
        cannot_judge: list[str] = []
        applicable = [j for j in judges if judges_category(j, case.category, judge_categories)]
        if judges and not applicable:
            row["judge_skipped"] = "category not judged"
        elif judges and not all(passed.values()) and not judge_all:
            row["judge_skipped"] = "a code check failed"
        elif judges:
            if judge_model is None:
                raise RunnerError("judges were given but no judge model")
            row["judge_model"] = model_spec(judge_model)
            row["judge_temperature"] = getattr(judge_model, "temperature", None)
            for judge in applicable:
                missing = missing_needs(judge, case)
                if missing:
                    cannot_judge.append(f"{judge.name} needs a {' and a '.join(missing)}")
                    continue
                verdict = judge(judge_model, response=output, **judge_inputs(judge, case, output))
                data = verdict.to_dict()
                add_usage(usage, data.get("usage"))
                row["judges"][data["name"]] = data
                row["rubric_fingerprint"] = row["rubric_fingerprint"] or data["rubric_fingerprint"]
                if getattr(verdict, "error", None) and not row["error"]:
                    row["error"] = f"judge {data['name']}: {verdict.error}"
            if cannot_judge:
                row["judge_skipped"] = "the case cannot be judged: " + "; ".join(cannot_judge)
        row["status"] = derived_status(row)  # as every reader of the results file decides
    except Exception as exc:  # the case errors; the run goes on
        row["status"] = "error"
        row["error"] = f"{type(exc).__name__}: {exc}"
    row["finished_at"] = row_stamp()
    row["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
    row["usage"] = usage or None
    return row


def shard_index(case_id: str, shards: int) -> int:
    """Which of ``shards`` shards (from 1) a case belongs to, by a stable hash of its id."""
    digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1


def check_judges(judges: Any, judge_model: CallModel | str | None = None) -> list[Any]:
    """The judges as a list; two of one name, or a criterion the built-in judge lacks, refused."""
    found = list(judges) if isinstance(judges, list | tuple) else ([judges] if judges else [])
    names = [getattr(judge, "name", None) for judge in found]
    for name in names:
        if names.count(name) > 1:
            raise RunnerError(
                f"two judges are named {name!r}: give them distinct names (name=...), "
                "or each would overwrite the other's verdict",
                field="judges",
            )
    from .judge import CRITERIA

    model = "builtin" if judge_model is None else judge_model
    spec = model.strip() if isinstance(model, str) else model_spec(model)
    for judge in found if spec == "builtin" else ():
        if getattr(judge, "criterion", None) not in CRITERIA:
            raise RunnerError(
                f"the built-in judge implements only {', '.join(CRITERIA)}; the judge "
                f"{judge.name!r} asks for a criterion of your own: give a judge model for it",
                field="judge_model",
            )
    return found


@holding_out
def run(
    cases: Iterable[Case],
    *,
    checks: Sequence[Any] = (),
    judges: Any = (),
    judge_model: CallModel | str | None = None,
    generate_model: CallModel | str | None = None,
    prompt_template: str | None = None,
    regenerate: bool = False,
    judge_all: bool = False,
    judge_categories: Iterable[str] | Mapping[str, Iterable[str]] | None = None,
    out: str | Path | IO[str] | None = None,
    resume: bool = False,
    shard: tuple[int, int] | None = None,
    executor: cf.Executor | None = None,
    concurrency: int = 1,
    max_errors: int | None = None,
    fail_fast: int | None = 10,
    case_timeout: float | None = None,
    keep_rows: bool = True,
    on_row: Callable[[Row], None] | None = None,
    dataset_fingerprint: str | None = None,
    manifest: Mapping[str, Any] | None = None,
    stop: threading.Event | None = None,
    progress: Callable[[int], None] | None = None,
    observers: Sequence[Observer] = (),
) -> RunResult:
    """Evaluate every case into a row (to ``out`` and ``on_row`` as it finishes).

    >>> cases = [Case(id="a", output="hola", expect={"contains": ["hola"]}),
    ...          Case(id="b", output="chau", expect={"contains": ["hola"]})]
    >>> result = run(cases)
    >>> [r["status"] for r in result.rows], result.rows[0]["run"]["cases"]
    (['pass', 'fail'], 2)
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise RunnerError(f"concurrency must be a positive integer, got {concurrency!r}")
    if max_errors is not None and max_errors < 0:
        raise RunnerError(f"max_errors must be 0 or more, got {max_errors!r}")
    if case_timeout is not None and not case_timeout > 0:
        raise RunnerError(
            f"case_timeout must be a positive number of seconds, got {case_timeout!r}"
        )
    whole = isinstance(shard, tuple) and len(shard) == 2 and all(type(n) is int for n in shard)
    if shard is not None and not (whole and 1 <= shard[0] <= shard[1]):
        raise RunnerError(f"shard must be (I, N) with 1 <= I <= N, got {shard!r}", field="shard")
    if resume and not isinstance(out, str | Path):
        raise RunnerError("resume needs out to be a path: the rows to keep are read from it")
    observers = tuple(observers)
    if observers and stop is None:
        stop = threading.Event()
    judge_list = check_judges(judges, judge_model)
    judge_model = _resolve("builtin" if judge_list and judge_model is None else judge_model)
    generate_model = _resolve(generate_model)
    observed = {o.name: o.manifest() for o in observers if o.manifest() is not None}
    rubrics = {judge.name: judge.rubric_fingerprint for judge in judge_list}
    spec = model_spec(judge_model) if judge_list else None
    if manifest is None and isinstance(cases, Sequence):
        in_shard = sum(shard_index(c.id, shard[1]) == shard[0] for c in cases) if shard else None
        given: dict[str, Any] = {"judges": rubrics, "judge_model": spec, "observers": observed}
        manifest = run_manifest(cases=len(cases), shard=shard, shard_cases=in_shard, **given)
    elif manifest is not None and observed and "observers" not in manifest:
        manifest = {**manifest, "observers": observed}
    previous: list[Row] = []
    if resume and isinstance(out, str | Path):
        previous = resumable_rows(out, dataset_fingerprint, rubrics, spec, observed, RunnerError)
    done = {(row["id"], row.get("trial") or 0) for row in previous}

    task: dict[str, Any] = dict(
        checks=tuple(checks),
        judges=tuple(judge_list),
        judge_model=judge_model,
        generate_model=generate_model,
        prompt_template=prompt_template,
        regenerate=regenerate,
        judge_all=judge_all,
        judge_categories=categories_judged(judge_categories),
        dataset_fingerprint=dataset_fingerprint,
        run=dict(manifest) if manifest is not None else None,
    )
    result = RunResult(dataset_fingerprint=dataset_fingerprint, resumed=len(previous))
    for row in previous:
        result.add(row, keep=keep_rows)
    for observer in observers:
        cases = observer.cases(cases)

    def selected() -> Iterator[Case]:
        for case in cases:
            elsewhere = shard and shard_index(case.id, shard[1]) != shard[0]
            ran = (case.id, getattr(case, "trial", 0)) in done
            if not (elsewhere or ran or any(o.skip(case) for o in observers)):
                yield case

    started = time.perf_counter()
    stream = None if isinstance(out, str | Path) else out
    if isinstance(out, str | Path):
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        stream = open(out, "a" if resume else "w", encoding="utf-8")  # noqa: SIM115
    own_executor = executor is None
    pool = executor if executor is not None else _DaemonThreadPool(concurrency)
    # under a per-case timeout, or on an executor given, every case goes to it
    here = _here(task, every_case=concurrency == 1) if own_executor and not case_timeout else None

    case_iter = iter(selected() if shard or previous or observers else cases)
    pending: dict[cf.Future[Row], Case] = {}  # the cases sent to the pool, in the order sent
    errors = model_successes = 0
    calls_model = bool(judge_list) or generate_model is not None  # else no success to count

    def count_error(row: Row) -> None:
        nonlocal errors, model_successes
        if row["status"] != "error":
            model_successes += bool(row.get("judges") or row.get("generate_model"))
            return
        if not result.complete:
            return  # already stopping: the rows still in flight are kept, not counted again
        errors += 1
        reason = None
        if max_errors is not None and errors > max_errors:
            reason = f"more than {max_errors} cases errored"
        elif fail_fast and errors == fail_fast and not model_successes:
            last = row["error"]
            reason = f"{fail_fast} cases errored before any model call succeeded (last: {last})"
        if reason and next(case_iter, None) is None:  # nothing was left to stop
            reason += " (on the last case: every case ran and has its row)"
        if reason:
            result.complete = False
            result.stopped_reason = reason

    def case_rows() -> Iterator[Row]:
        window = 2 * concurrency + 2  # enough to keep every worker busy while rows are written
        finished: queue.SimpleQueue[cf.Future[Row]] = queue.SimpleQueue()  # as they finish
        starts: dict[int, float] = {}  # by id(case), of the cases running
        stopping = False  # no more cases are sent (the run's errors stop it through result)
        while True:
            if stop is not None and stop.is_set() and not stopping:
                stopping = True
                for future in [f for f in pending if f.cancel()]:  # queued, not yet started
                    del pending[future]  # no row: a resumed run does them
            while not stopping and result.complete and len(pending) < window:
                case = next(case_iter, None)
                if case is None:
                    stopping = True
                    break
                if here is not None:  # no thread hop, when a worker would add nothing
                    if progress is not None:
                        progress(1)
                    row = here(case)
                    if row is not None:
                        yield row
                        if stop is not None and stop.is_set():
                            break
                        continue
                if case_timeout is None:
                    future = pool.submit(evaluate_case, case, **task)
                else:
                    future = pool.submit(_evaluate_noting_start, starts, case, **task)
                pending[future] = case
                future.add_done_callback(finished.put)
            result.in_flight = len(pending)
            if own_executor:
                pool.grow(len(pending))  # type: ignore[attr-defined]
            if progress is not None:  # the cases running now (the others are only queued)
                progress(sum(1 for future in pending if future.running()))
            if not pending:
                return
            wait = None  # till the first running case reaches its timeout (if one)
            if case_timeout is not None:
                ends = [starts[k] + case_timeout for k in map(id, pending.values()) if k in starts]
                wait = max(0.0, min(ends) - time.monotonic()) if ends else min(case_timeout, 0.05)
            if stop is not None and not stopping:  # look at the stop request now and then
                wait = 0.1 if wait is None else min(wait, 0.1)
            done = _finished(finished, wait, pending)
            for future in [f for f in pending if f in done]:
                case = pending.pop(future)
                result.in_flight = len(pending)
                starts.pop(id(case), None)  # only the cases in flight are kept
                yield future.result()
            if case_timeout is not None:
                now = time.monotonic()
                for future, case in list(pending.items()):
                    if now - starts.get(id(case), now) >= case_timeout and not future.done():
                        del pending[future]
                        del starts[id(case)]
                        future.cancel()
                        result.abandoned += 1
                        row = new_row(
                            case, dataset_fingerprint=dataset_fingerprint, run=task["run"]
                        )
                        said = f"the case ran longer than {case_timeout:g} s (per-case timeout)"
                        row["error"] = f"TimeoutError: {said}"
                        row["finished_at"] = row["started_at"]
                        row["latency_ms"] = round(case_timeout * 1000, 3)
                        yield row

    try:
        for row in case_rows():
            if row["status"] == "error" or (calls_model and not model_successes):
                count_error(row)  # (a passing row after a model's success changes nothing)
            if stream is not None:
                write_row(stream, row)
            result.add(row, keep=keep_rows)
            for observer in observers:
                reason = observer.row(row, result)
                if reason is not None and stop is not None and not stop.is_set():
                    result.stopped_by = reason
                    stop.set()
            if on_row is not None:
                on_row(row)
    except KeyboardInterrupt:  # while waiting, or asked twice: what is in flight is abandoned
        result.complete = False
        result.stopped_reason = "interrupted"
        result.abandoned += sum(not future.cancel() for future in pending)  # running already
        pending.clear()
        raise
    finally:
        result.elapsed_s = time.perf_counter() - started
        for future in pending:  # the queued ones cancelled, the running ones waited for
            future.cancel()
        if not result.abandoned:
            with contextlib.suppress(Exception):
                cf.wait(pending)
        if own_executor:
            pool.shutdown(wait=not result.abandoned, cancel_futures=True)
        if isinstance(out, str | Path) and stream is not None:
            stream.close()
    if stop is not None and stop.is_set() and result.complete:
        result.complete = False
        result.stopped_reason = result.stopped_by or "interrupted"
    return result


def _here(task: Mapping[str, Any], *, every_case: bool) -> Callable[[Case], Row | None] | None:
    """What evaluates a case in the calling thread (None: a worker does)."""
    evaluate: Callable[[Case], Row] = functools.partial(evaluate_case, **task)
    if every_case:
        return evaluate
    if task["checks"]:
        return None
    judges, where = task["judges"], task["judge_categories"]
    generate, regenerate = task["generate_model"], task["regenerate"]
    if not judges and generate is None:  # no case calls a model
        return evaluate
    from_cache: Callable[[Case], Row | None] | None = None
    cache = sys.modules.get(f"{__package__}.cache")  # not imported: no model can be cached
    if cache and any(isinstance(m, cache.CachedModel) for m in (task["judge_model"], generate)):
        with contextlib.suppress(InputError):  # a copy without tinyeval/scale/: workers run them
            from_cache = _extra("wrapper", "cache_first", "the cache-first path")(task)

    def here(case: Case) -> Row | None:
        generates = generate is not None and (regenerate or case.output is None)
        if not generates and not any(judges_category(j, case.category, where) for j in judges):
            return evaluate(case)
        return None if from_cache is None else from_cache(case)

    return here


def _resolve(model: CallModel | str | None) -> CallModel | None:
    return model if model is None or callable(model) else resolve(model)


class _DaemonThreadPool(cf.Executor):
    """A thread pool whose daemon workers never hold up the interpreter's exit."""

    def __init__(self, workers: int) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._workers = workers
        self._threads: list[threading.Thread] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        future: cf.Future[Any] = cf.Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def grow(self, jobs: int) -> None:
        while len(self._threads) < min(jobs, self._workers):  # never more threads than cases
            name = f"tinyeval-{len(self._threads)}"
            self._threads.append(threading.Thread(target=self._work, name=name, daemon=True))
            self._threads[-1].start()

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
        with contextlib.suppress(queue.Empty):
            while cancel_futures:
                job = self._jobs.get_nowait()
                if job is not None:
                    job[0].cancel()
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


def _finished(done: queue.SimpleQueue[Any], wait: float | None, among: Container[Any]) -> set[Any]:
    """Those of ``among`` that ``done`` holds, waiting up to ``wait`` s (cf.wait's cost grows)."""
    found = set()
    try:
        future = done.get(timeout=wait)
        while True:
            if future in among:  # not one dropped already (cancelled, or past its timeout)
                found.add(future)
            future = done.get_nowait()
    except queue.Empty:
        return found


@dataclass
class PreparedCases:
    """The validated cases of a run (iterable again and again) and their counts."""

    cases: Iterable[Case]
    fingerprint: str
    in_file: int = 0
    selected: int = 0
    in_shard: int = 0
    categories: set[str] = field(default_factory=set)
    without_output: int = 0
    first_without_output: Case | None = None
    unknown_only: tuple[str, ...] = ()
    read: bool = True  # False until a one-pass stream has been read to its end


class _Again:
    def __init__(self, make: Callable[[], Iterator[Case]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[Case]:
        return self.make()


READ_ONCE_BYTES = 2**20  # a larger file is read twice (or once as it runs), not kept


def prepare_cases(
    path: str,
    *,
    fields: Mapping[str, str] | None = None,
    id_from_line: bool = False,
    format: str | None = None,
    sample_size: int | None = None,
    seed: int | str = 0,
    only: Iterable[str] | None = None,
    outputs: Mapping[str, str | None] | None = None,
    shard: tuple[int, int] | None = None,
    shuffle: bool = False,
    max_line_bytes: int | None = None,
    one_pass: bool = False,
    note: Callable[[Case], None] | None = None,
) -> PreparedCases:
    """Read and validate every case of ``path`` before anything runs, and select the run's."""
    read: dict[str, Any] = {"fields": fields, "id_from_line": id_from_line, "format": format}
    if max_line_bytes is not None:
        read["max_line_bytes"] = max_line_bytes
    wanted = set(only) if only is not None else None
    if outputs is not None:
        wanted = set(outputs) if wanted is None else wanted & set(outputs)
    unseen = set(only or ())  # the ids asked for by ``only`` not read yet
    ready = PreparedCases(cases=(), fingerprint="")
    digests = dataset.Fingerprinting()

    def keep(case: Case) -> Case | None:
        if wanted is not None and case.id not in wanted:
            return None
        return case if outputs is None else replace(case, output=outputs[case.id])

    def noted(cases: Iterable[Case]) -> Iterator[Case | None]:  # each as kept (None: not)
        for case in digests.adding(cases):
            ready.in_file += 1
            unseen.discard(case.id)
            kept = keep(case)
            if kept is not None:
                ready.selected += 1
                if shard is None or shard_index(kept.id, shard[1]) == shard[0]:
                    ready.in_shard += 1
                    if note is not None:
                        note(kept)
                    ready.categories.add(kept.category)
                    if kept.output is None:
                        ready.without_output += 1
                        if ready.first_without_output is None:
                            ready.first_without_output = kept
            yield kept

    def finished() -> None:  # once every case has been read
        if ready.in_file == 0:
            raise dataset.DatasetError("no cases in the file", path=path)
        ready.fingerprint = digests.value()
        ready.unknown_only = tuple(sorted(unseen))

    def again() -> Iterator[Case]:  # a fresh stream over the file, its ids checked already
        return filter(None, map(keep, dataset.iter_cases(path, **read, unique_ids=False)))

    size = 0  # of a large regular file: the others are read into memory
    if path != "-" and sample_size is None and not shuffle:
        with contextlib.suppress(OSError):  # (the reader names the problem)
            found = os.stat(path)
            size = found.st_size if stat.S_ISREG(found.st_mode) else 0
    if size > READ_ONCE_BYTES and one_pass:
        ready.read = False
        stream = filter(None, noted(dataset.iter_cases(path, **read)))

        def once() -> Iterator[Case]:  # the reading pass and the run's in one
            if ready.read:  # read to the end already: read the file afresh
                yield from again()
                return
            yield from stream
            ready.read = True
            finished()

        ready.cases = _Again(once)
        return ready
    if size > READ_ONCE_BYTES:
        for _ in noted(dataset.iter_cases(path, **read)):
            pass
        finished()
        ready.cases = _Again(again)
        return ready
    loaded: list[Case] = dataset.load(path, **read)
    if sample_size is not None or shuffle:
        count = len(loaded) if sample_size is None else sample_size
        loaded = dataset.sample(loaded, count, seed=seed)
    ready.cases = [case for case in noted(loaded) if case is not None]
    finished()
    return ready
