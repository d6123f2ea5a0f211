"""Cases into rows: prepare the cases, run them (concurrency, resume, shards, timeouts), or
count what a run would send. Every case ends as exactly one row, its ``status`` ``"pass"``,
``"fail"``, ``"error"`` or ``"unchecked"`` (nothing looked at it); only ``"pass"`` passes.
Extras watch a run through :class:`Observer` (trials, early stopping, the spend cap).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import functools
import hashlib
import itertools
import json
import os
import queue
import stat
import sys
import threading
import time
from collections.abc import Callable, Container, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from . import checks as checks_mod
from . import dataset
from .dataset import Case
from .errors import InputError, plural
from .models import USAGE_KEYS, CallModel, ChatPrompt, add_usage, ask, model_spec
from .records import (
    CategoryTally,
    Row,
    new_row,
    read_rows,
    row_stamp,
    run_manifest,
    verdicts,
    write_row,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "READ_ONCE_BYTES",
    "DaemonThreadPool",
    "DryRun",
    "Observer",
    "PreparedCases",
    "RunResult",
    "RunnerError",
    "check_judges",
    "dry_run",
    "evaluate_case",
    "input_text",
    "prepare_cases",
    "run",
    "shard_index",
    "timed_out_row",
]


class RunnerError(InputError):
    """A run asked for with settings that cannot work (a bad concurrency, shard or timeout)."""


@dataclass
class RunResult:
    """What a run produced: per-category tallies, and the rows when they were kept.

    ``complete`` is False when the run stopped early (``stopped_reason`` says why;
    ``stopped_by``, when an observer stopped it). ``resumed`` counts the rows kept
    from an earlier run of the same ``out``.

    >>> result = run([Case(id="a", output="hola", expect={"max_words": 1})])
    >>> result.total, result.complete, result.categories["default"].passed
    (1, True, 1)
    """

    categories: dict[str, CategoryTally] = field(default_factory=dict)
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
        """Count a row (and keep it when asked)."""
        category = row["category"]
        key = category if type(category) is str else str(category)
        tally = self.categories.get(key)
        if tally is None:  # (not setdefault: it would make a tally for every row)
            tally = self.categories[key] = CategoryTally()
        tally.add(row)
        add_usage(self.usage, row.get("usage"))
        if keep:
            self.rows.append(row)

    def sorted_categories(self) -> dict[str, CategoryTally]:
        """The tallies in category order, the order every table uses."""
        return dict(sorted(self.categories.items()))

    @property
    def total(self) -> int:
        """Number of cases with a row."""
        return sum(t.total for t in self.categories.values())

    @property
    def errors(self) -> int:
        """Number of cases that errored."""
        return sum(t.errors for t in self.categories.values())


class Observer:
    """Watches a run and may stop it; every method's default does nothing.

    ``name`` is its key in the run's manifest and JSON summary: the setting that turns it on.
    """

    name = ""

    def cases(self, cases: Iterable[Case]) -> Iterable[Case]:
        """Before the run: the cases it is to see (may expand them, or reorder them)."""
        return cases

    def skip(self, case: Case) -> bool:
        """Before a case starts: True when it is not to run (its category is decided)."""
        return False

    def row(self, row: Row, result: RunResult) -> str | None:
        """Each finished row, in the run's own thread: a sentence saying why the run must
        stop, or None."""
        return None

    def summary(self) -> list[str]:
        """Lines for the run's text summary."""
        return []

    def to_dict(self) -> dict[str, Any]:
        """Its part of the JSON summary (under its ``name``)."""
        return {}

    def manifest(self) -> Any:
        """What the run's manifest records of it (None: nothing); a resumed run refuses rows
        recorded otherwise."""
        return None


# === One case ===


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


def timed_out_row(case: Case, seconds: float, task: Mapping[str, Any]) -> Row:
    """The error row of a case that ran past the per-case timeout.

    >>> row = timed_out_row(Case(id="slow"), 30, {})
    >>> row["status"], row["error"]
    ('error', 'TimeoutError: the case ran longer than 30 s (per-case timeout)')
    """
    row = new_row(case, dataset_fingerprint=task.get("dataset_fingerprint"), run=task.get("run"))
    row["error"] = f"TimeoutError: the case ran longer than {seconds:g} s (per-case timeout)"
    row["finished_at"] = row["started_at"]
    row["latency_ms"] = round(seconds * 1000, 3)
    return row


def _key(case: Case) -> tuple[str, int]:
    """A case in flight: its id and, for repeated trials, the trial's index."""
    return case.id, getattr(case, "trial", 0)


def _evaluate_noting_start(starts: dict[tuple[str, int], float], case: Case, **task: Any) -> Row:
    starts[_key(case)] = time.monotonic()  # when it left the queue: the per-case clock starts here
    return evaluate_case(case, **task)


def _missing_needs(judge: Any, case: Case) -> list[str]:
    """What ``judge`` needs (``Judge.needs``) that ``case`` does not have."""
    conversation = getattr(case, "conversation", None)
    asked = conversation.question if conversation is not None else case.input
    have = {"context": case.context is not None, "question": asked not in (None, "")}
    return [need for need in getattr(judge, "needs", ()) if not have.get(need, True)]


def _generation_prompt(case: Case, template: str | None) -> str:
    """What the generate model is sent: a logged conversation as its message list, with roles
    (and the case's ``meta["tools"]`` definitions), or the input as text in the template."""
    conversation = getattr(case, "conversation", None)
    if conversation is not None:
        tools = case.meta.get("tools") if isinstance(case.meta, Mapping) else None
        return ChatPrompt.of(conversation, tools=tools if isinstance(tools, list) else ())
    prompt = input_text(case.input)
    return prompt if template is None else template.replace("{input}", prompt)


def _shown(judge: Any, case: Case, parts: Any) -> dict[str, Any]:
    """What ``judge`` is shown of ``case`` besides the response: its context, the question (a
    conversation's last user turn), and the conversation's parts when the judge takes them."""
    question = input_text(case.input) if parts is None else (parts.question or "")
    shown: dict[str, Any] = {"context": case.context, "question": question}
    if parts is not None and getattr(judge, "takes_conversation", False):
        shown["conversation"] = parts
    return shown


def _conversation_parts(case: Case, output: str) -> Any:
    """A conversation case cut into what the judge is shown, or None for a plain case."""
    conversation = getattr(case, "conversation", None)
    if conversation is None:
        return None
    return conversation.with_response(output, case.tool_calls).judge_parts()


JudgeCategories = frozenset[str] | Mapping[str, frozenset[str]] | None
"""Where judges look: every category (None), these categories, or per judge name (empty: all)."""


def _judges_category(judge: Any, category: str, where: JudgeCategories) -> bool:
    if where is None:
        return True
    if isinstance(where, frozenset):
        return category in where
    own = where.get(getattr(judge, "name", ""), frozenset())
    return not own or category in own


def _judge_categories(given: Iterable[str] | Mapping[str, Iterable[str]] | None) -> JudgeCategories:
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
    trial = getattr(case, "trial", None)
    if trial is not None:
        row["trial"] = trial
    try:
        output = case.output
        tool_calls = case.tool_calls
        if output is None or (regenerate and generate_model is not None):
            if generate_model is None:
                raise RunnerError("the case has no output and no generate model was given")
            reply = ask(
                generate_model, _generation_prompt(case, prompt_template), sample=trial or 0
            )
            tool_calls = ()  # the logged calls belong to the logged output, not this one
            if type(reply) is not str:  # a Reply carries its usage and whether it was cached
                cached = getattr(reply, "cached", False) is True
                add_usage(usage, getattr(reply, "usage", None), cached=cached)
            output = str(reply)
            row["output"] = output
            row["generate_model"] = model_spec(generate_model)

        if tool_calls is not case.tool_calls:
            case = replace(case, output=output, tool_calls=tool_calls)
        if checks or type(output) is not str:
            extra = [*case.expect_checks(), *checks]
            results = checks_mod.run_checks_detailed(output, extra, case=case)
        else:  # the case's own checks only: built, named and told apart when it was read
            results = checks_mod.run_built_checks(output, case.expect_checks(), case)
        passed = row["checks"] = {name: r.passed for name, r in results.items()}
        row["check_details"] = {name: r.detail for name, r in results.items() if r.detail}
        checks_ok = all(passed.values())

        judges_ok = True
        gated_by_judge = False
        cannot_judge: list[str] = []
        applicable = (
            [j for j in judges if _judges_category(j, case.category, judge_categories)]
            if judges
            else []
        )
        if judges and not applicable:
            row["judge_skipped"] = "category not judged"
        elif judges and not checks_ok and not judge_all:
            row["judge_skipped"] = "a code check failed"
        elif judges:
            if judge_model is None:
                raise RunnerError("judges were given but no judge model")
            row["judge_model"] = model_spec(judge_model)
            row["judge_temperature"] = getattr(judge_model, "temperature", None)
            parts = _conversation_parts(case, output)
            for judge in applicable:
                missing = _missing_needs(judge, case)
                if missing:
                    cannot_judge.append(f"{judge.name} needs a {' and a '.join(missing)}")
                    continue
                verdict = judge(judge_model, response=output, **_shown(judge, case, parts))
                data = verdict.to_dict()
                add_usage(usage, data.get("usage"))
                row["judges"][data["name"]] = data
                row["rubric_fingerprint"] = row["rubric_fingerprint"] or data["rubric_fingerprint"]
                if getattr(verdict, "error", None) and not row["error"]:
                    row["error"] = f"judge {data['name']}: {verdict.error}"
                if data.get("failure") == "ungated":
                    continue  # a graded score without a pass mark is shown, never gates
                gated_by_judge = True
                judges_ok = judges_ok and data.get("verdict") == "PASS"
            if cannot_judge:
                row["judge_skipped"] = "the case cannot be judged: " + "; ".join(cannot_judge)
        if row["error"]:
            row["status"] = "error"
        elif not (checks_ok and judges_ok):
            row["status"] = "fail"
        elif cannot_judge or not (row["checks"] or gated_by_judge):
            row["status"] = "unchecked"  # nothing (or not everything asked for) looked at it
        else:
            row["status"] = "pass"
    except Exception as exc:  # the case errors; the run goes on
        row["status"] = "error"
        row["error"] = f"{type(exc).__name__}: {exc}"
    row["finished_at"] = row_stamp()
    row["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
    row["usage"] = usage or None
    return row


# === The run ===


def shard_index(case_id: str, shards: int) -> int:
    """Which of ``shards`` shards (numbered from 1) a case belongs to, by a stable hash of its id.

    >>> sorted({shard_index(str(i), 3) for i in range(100)})
    [1, 2, 3]
    """
    digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1


def _check_shard(shard: Any) -> tuple[int, int] | None:
    if shard is None:
        return None
    ok = (
        isinstance(shard, tuple)
        and len(shard) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in shard)
        and 1 <= shard[0] <= shard[1]
    )
    if not ok:
        raise RunnerError(f"shard must be (I, N) with 1 <= I <= N, got {shard!r}", field="shard")
    return shard[0], shard[1]


def check_judges(judges: Any, judge_model: CallModel | str | None = None) -> list[Any]:
    """The judges as a list, refused when two share a name (one would overwrite the other's
    verdict) or the built-in judge is asked for a criterion of your own.

    >>> from tinyeval.judge import Judge
    >>> check_judges([Judge("Is polite.", name="a"), Judge("Is short.", name="a")], "cmd:cat")
    Traceback (most recent call last):
    ...
    tinyeval.runner.RunnerError: judges: two judges are named 'a': give them distinct names ...
    """
    found = list(judges) if isinstance(judges, list | tuple) else ([judges] if judges else [])
    names = [getattr(judge, "name", None) for judge in found]
    for name in names:
        if names.count(name) > 1:
            raise RunnerError(
                f"two judges are named {name!r}: give them distinct names (name=...), "
                "or each would overwrite the other's verdict",
                field="judges",
            )
    if not found:
        return found
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


def _previous_rows(
    out: str | Path,
    fingerprint: str | None,
    judges: Sequence[Any],
    judge_model: Any,
    observed: Mapping[str, Any],
) -> list[Row]:
    """The rows an earlier run left in ``out`` that a resumed run keeps; refused, naming what
    changed, when another dataset, judge, rubric, judge model or observer made them."""
    if not Path(out).exists():
        return []
    rows = read_rows(out, repair=True)
    where = str(out)
    other = {r.get("dataset_fingerprint") for r in rows} - {fingerprint}
    if fingerprint is not None and other:
        raise RunnerError(
            f"holds rows from another dataset (fingerprint {sorted(map(str, other))[0]}, now "
            f"{fingerprint}); move it away or run without resuming",
            path=where,
        )
    now = {judge.name: judge.rubric_fingerprint for judge in judges}
    spec = model_spec(judge_model) if judges else None
    for row in rows:
        found = verdicts(row)
        for name, verdict in found.items():
            if name not in now:
                raise RunnerError(
                    f"the case {row['id']!r} was judged by {name!r}, which this run does not "
                    "have: resuming would mix two judges; move the file away or run the same "
                    "judges",
                    path=where,
                )
            if verdict.get("rubric_fingerprint") != now[name]:
                raise RunnerError(
                    f"the case {row['id']!r} was judged by {name!r} with another rubric "
                    f"({verdict.get('rubric_fingerprint')}, now {now[name]}): move the file "
                    "away or re-judge",
                    path=where,
                )
        if found and row.get("judge_model") not in (None, spec):
            raise RunnerError(
                f"the case {row['id']!r} was judged by the model {row.get('judge_model')!r}, "
                f"this run uses {spec!r}: move the file away or re-judge",
                path=where,
            )
        manifest = row.get("run")
        before = (manifest.get("observers") or {}) if isinstance(manifest, Mapping) else None
        if before is not None and dict(before) != dict(observed):
            raise RunnerError(
                f"the case {row['id']!r} was run with {json.dumps(before, sort_keys=True)}, "
                f"this run has {json.dumps(dict(observed), sort_keys=True)} (trials, stopping "
                "rule): move the file away or run with the same settings",
                path=where,
            )
    return rows


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
    """Evaluate every case into a row and return the tallies (and rows, unless
    ``keep_rows=False``).

    ``checks`` apply to every case on top of its ``expect`` block; ``judges`` (distinct names)
    run on cases whose checks passed (every case with ``judge_all``), in ``judge_categories``.
    Models are callables or spec strings; a case without an output is generated.
    Cases run on ``executor`` or ``concurrency`` threads; each row goes to ``out`` and
    ``on_row`` as its case finishes. ``shard=(I, N)`` runs shard I of N; ``resume`` keeps the
    rows in ``out``. ``max_errors``, ``fail_fast``, ``stop`` (an event) and ``observers``
    stop a run early, incomplete; ``case_timeout`` gives up on a slow case.

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
    shard = _check_shard(shard)
    if resume and not isinstance(out, str | Path):
        raise RunnerError("resume needs out to be a path: the rows to keep are read from it")
    observers = tuple(observers)
    if observers and stop is None:
        stop = threading.Event()
    judge_list = check_judges(judges, judge_model)
    judge_model = _resolve(judge_model)
    generate_model = _resolve(generate_model)
    if judge_list and judge_model is None:
        judge_model = _resolve("builtin")
    observed = {o.name: o.manifest() for o in observers if o.manifest() is not None}
    if manifest is None and isinstance(cases, Sequence):
        manifest = run_manifest(
            cases=len(cases),
            shard=shard,
            shard_cases=sum(shard_index(c.id, shard[1]) == shard[0] for c in cases)
            if shard
            else None,
            judges={j.name: j.rubric_fingerprint for j in judge_list},
            judge_model=model_spec(judge_model) if judge_list else None,
            observers=observed,
        )
    elif manifest is not None and observed and "observers" not in manifest:
        manifest = {**manifest, "observers": observed}
    previous: list[Row] = []
    if resume and isinstance(out, str | Path):
        previous = _previous_rows(out, dataset_fingerprint, judge_list, judge_model, observed)
    done = {(row["id"], row.get("trial") or 0) for row in previous}

    task = dict(
        checks=tuple(checks),
        judges=tuple(judge_list),
        judge_model=judge_model,
        generate_model=generate_model,
        prompt_template=prompt_template,
        regenerate=regenerate,
        judge_all=judge_all,
        judge_categories=_judge_categories(judge_categories),
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
            if shard and shard_index(case.id, shard[1]) != shard[0]:
                continue
            if done and _key(case) in done:
                continue
            if observers and any(observer.skip(case) for observer in observers):
                continue
            yield case

    started = time.perf_counter()
    stream, owned = _open_out(out, append=resume)
    own_executor = executor is None
    # daemon workers: an abandoned case must not hold up the interpreter's exit
    pool = executor if executor is not None else DaemonThreadPool(concurrency)
    abandon = threading.Event()  # set when the cases in flight are not to be waited for
    here = None  # under a per-case timeout, or on an executor given, every case goes to it
    if executor is None and case_timeout is None:
        here = _here(task, every_case=concurrency == 1)
    rows = _run_rows(
        pool,
        selected(),
        task,
        # enough cases queued to keep every worker busy while finished rows are written
        window=2 * concurrency + 2,
        result=result,
        max_errors=max_errors,
        case_timeout=case_timeout,
        fail_fast=fail_fast,
        stop=stop,
        abandon=abandon,
        progress=progress,
        here=here,
    )
    try:
        for row in rows:
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
    except KeyboardInterrupt:  # asked twice: the cases in flight are abandoned, not waited for
        result.complete = False
        result.stopped_reason = "interrupted"
        abandon.set()
        raise
    finally:
        result.elapsed_s = time.perf_counter() - started
        # the row stream first: its cleanup cancels what is queued and waits for what runs
        rows.close()
        if own_executor:
            pool.shutdown(wait=not (abandon.is_set() or result.abandoned), cancel_futures=True)
        if owned and stream is not None:
            stream.close()
    if stop is not None and stop.is_set() and result.complete:
        result.complete = False
        result.stopped_reason = result.stopped_by or "interrupted"
    return result


def _here(task: Mapping[str, Any], *, every_case: bool) -> Callable[[Case], Row | None] | None:
    """What evaluates a case in the calling thread, where a worker would add nothing (None
    from it: a worker runs the case): every case on one worker; on more, a case sure to call
    no model, or one the caches answer whole. The caller's own checks may be slow: workers."""
    evaluate: Callable[[Case], Row] = functools.partial(evaluate_case, **task)
    if every_case:
        return evaluate
    if task["checks"]:
        return None
    no_model, from_cache = _calls_no_model(task), _from_cache(task)
    if from_cache is None:
        return lambda case: evaluate(case) if no_model(case) else None
    return lambda case: evaluate(case) if no_model(case) else from_cache(case)


def _calls_no_model(task: Mapping[str, Any]) -> Callable[[Case], bool]:
    """Whether a case of this run is sure to call no model: it has an output (or nothing could
    generate one) and no judge looks at its category."""
    judges, where = task["judges"], task["judge_categories"]
    generate, regenerate = task["generate_model"], task["regenerate"]

    def no_model(case: Case) -> bool:
        if generate is not None and (regenerate or case.output is None):
            return False
        return not any(_judges_category(judge, case.category, where) for judge in judges)

    return no_model


def _from_cache(task: Mapping[str, Any]) -> Callable[[Case], Row | None] | None:
    """What evaluates a case in the calling thread when the models' caches answer its every
    call (None from it: a worker runs it), or None when that cannot be: a model without a
    cache, or a judge whose very class does not set ``calls_only_the_given_model = True``.

    A fully cached re-run so costs no thread hops. Once the cache has missed clearly more
    often than it answered (a first run), it is not tried again.
    """
    cache = sys.modules.get(f"{__package__}.cache")  # not imported: no model can be cached
    judges = task["judges"]
    if cache is None:
        return None

    def answering(model: Any) -> Any:  # the model answering from its cache alone, or None
        return model.cache_only() if isinstance(model, cache.CachedModel) else None

    judging = answering(task["judge_model"]) if judges else None
    if judges and (
        judging is None
        or not all(vars(type(judge)).get("calls_only_the_given_model", False) for judge in judges)
    ):
        return None
    generate, regenerate = task["generate_model"], task["regenerate"]
    generating = answering(generate)
    views = [view for view in (judging, generating) if view is not None]
    if not views:  # nothing a cache could answer (or refreshing: every call is made again)
        return None
    attempt = dict(
        task, judge_model=judging or task["judge_model"], generate_model=generating or generate
    )
    miss = cache._CacheMiss
    answered = missed = 0

    def from_cache(case: Case) -> Row | None:
        nonlocal answered, missed
        generates = generate is not None and (regenerate or case.output is None)
        if missed > answered + 32 or (generates and generating is None):
            return None
        try:
            row = evaluate_case(case, **attempt)
        except miss:
            for view in views:
                view.forget()
            missed += 1
            return None
        for view in views:
            view.settle()
        answered += 1
        return row

    return from_cache


def _open_out(out: str | Path | IO[str] | None, append: bool) -> tuple[IO[str] | None, bool]:
    if out is None:
        return None, False
    if isinstance(out, str | Path):
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        return open(out, "a" if append else "w", encoding="utf-8"), True
    return out, False


def _run_rows(
    pool: cf.Executor,
    cases: Iterable[Case],
    task: Mapping[str, Any],
    *,
    window: int,
    result: RunResult,
    max_errors: int | None,
    case_timeout: float | None,
    fail_fast: int | None,
    stop: threading.Event | None,
    abandon: threading.Event,
    progress: Callable[[int], None] | None,
    here: Callable[[Case], Row | None] | None,
) -> Generator[Row, None, None]:
    """Yield rows as cases finish, at most ``window`` cases in flight (``result.in_flight``),
    none taken once ``stop`` is set. A case past ``case_timeout`` gets an error row at once
    and is left behind (a thread cannot be stopped; its late result is ignored); once
    ``abandon`` is set, the cases in flight are not waited for."""
    pending: dict[cf.Future[Row], tuple[int, Case]] = {}  # future -> (submission order, case)
    finished = Finished()
    starts: dict[tuple[str, int], float] = {}
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
            return  # already stopping: the rows still in flight are kept, not counted again
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
            if stop is not None and stop.is_set() and not stopping:
                stopping = True
                for future in [f for f in pending if f.cancel()]:  # queued, not yet started
                    del pending[future]  # no row: a resumed run does them
            while not stopping and len(pending) < window:
                case = next(case_iter, None)
                if case is None:
                    stopping = True
                    break
                if here is not None:  # no thread hop, when a worker would add nothing
                    if progress is not None:
                        progress(1)
                    row = here(case)
                    if row is not None:
                        if row["status"] == "error" or not model_successes:
                            count_error(row)
                        yield row
                        if stop is not None and stop.is_set():
                            break
                        continue
                if case_timeout is None:
                    future = pool.submit(evaluate_case, case, **task)
                else:
                    future = pool.submit(_evaluate_noting_start, starts, case, **task)
                pending[future] = (next(sequence), case)
                finished.watch(future)
            result.in_flight = len(pending)
            if progress is not None:  # the cases running now (the others are only queued)
                progress(sum(1 for future in pending if future.running()))
            if not pending:
                return
            wait = _time_to_next_deadline(pending.values(), starts, case_timeout)
            if stop is not None and not stopping:  # look at the stop request now and then
                wait = 0.1 if wait is None else min(wait, 0.1)
            done = finished.take(wait, pending)
            for future in sorted(done, key=lambda f: pending[f][0]):
                _, case = pending.pop(future)
                result.in_flight = len(pending)
                starts.pop(_key(case), None)  # only the cases in flight are kept
                row = future.result()
                count_error(row)
                yield row
            if case_timeout is not None:
                now = time.monotonic()
                for future, (_, case) in list(pending.items()):
                    began = starts.get(_key(case))
                    if began is not None and now - began >= case_timeout and not future.done():
                        del pending[future]
                        del starts[_key(case)]
                        future.cancel()
                        result.abandoned += 1
                        row = timed_out_row(case, case_timeout, task)
                        count_error(row)
                        yield row
    except KeyboardInterrupt:  # raised here, while waiting: abandon what is in flight
        abandon.set()
        raise
    finally:
        for future in pending:
            future.cancel()
        if abandon.is_set():
            result.abandoned += sum(not future.cancelled() for future in pending)
        elif not result.abandoned:
            with contextlib.suppress(Exception):
                cf.wait(pending)


def _time_to_next_deadline(
    in_flight: Iterable[tuple[int, Case]],
    starts: Mapping[tuple[str, int], float],
    case_timeout: float | None,
) -> float | None:
    """Seconds until the first running case reaches its timeout (None: no timeout)."""
    if case_timeout is None:
        return None
    now = time.monotonic()
    remaining = [starts[_key(c)] + case_timeout - now for _, c in in_flight if _key(c) in starts]
    return max(0.0, min(remaining)) if remaining else min(case_timeout, 0.05)


def _resolve(model: CallModel | str | None) -> CallModel | None:
    if model is None or callable(model):
        return model
    from .models import resolve

    return resolve(model)


# === Threads ===


class DaemonThreadPool(cf.Executor):
    """A thread pool whose daemon workers never hold up the interpreter's exit (a case
    abandoned past its timeout would, on a ``ThreadPoolExecutor``).

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


class Finished:
    """The futures given to :meth:`watch`, as they finish: each puts itself on a queue when
    done, so waiting costs the same however many are in flight (``cf.wait`` does not)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[cf.Future[Row]] = queue.SimpleQueue()

    def watch(self, future: cf.Future[Row]) -> None:
        """Have ``future`` come out of :meth:`take` once it is done (cancelled included)."""
        future.add_done_callback(self._queue.put)

    def take(self, wait: float | None, among: Container[cf.Future[Row]]) -> set[cf.Future[Row]]:
        """The finished futures still ``among`` those wanted: waiting up to ``wait`` seconds
        for the first (None: as long as it takes), then taking every other one already there."""
        done = set()
        try:
            future = self._queue.get(timeout=wait)
            while True:
                if future in among:  # not one dropped already (cancelled, or past its timeout)
                    done.add(future)
                future = self._queue.get_nowait()
        except queue.Empty:
            return done


# === A dry run ===

CHARS_PER_TOKEN = 4
"""The dry run's token estimate (a cached reply's reported usage is used when there is one)."""


@dataclass
class DryRun:
    """What a run would send, counted and rendered without calling any model: ``calls``,
    ``tokens_in`` and ``cached`` (answered by the cache) by kind, ``estimated`` calls whose
    prompt cannot be rendered yet, ``offline`` calls to the built-in judge, ``first_prompt``.

    >>> from tinyeval.judge import Judge
    >>> plan = dry_run([Case(id="a", input="Hours?", output="9 to 5.")],
    ...                judges=[Judge("answers-the-question", votes=3)], judge_model="builtin")
    >>> plan.calls["judge"], plan.first_prompt["judge"].count("<<<QUESTION>>>")
    (3, 1)
    """

    cases: int = 0
    calls: dict[str, int] = field(default_factory=lambda: {"generate": 0, "judge": 0})
    tokens_in: dict[str, int] = field(default_factory=lambda: {"generate": 0, "judge": 0})
    cached: dict[str, int] = field(default_factory=lambda: {"generate": 0, "judge": 0})
    estimated: int = 0
    offline: int = 0  # calls to the built-in offline judge: no cost
    first_prompt: dict[str, str] = field(default_factory=dict)

    def billable_tokens(self) -> int:
        """The input tokens of the calls neither the cache nor the offline judge would answer
        (what a price applies to; output tokens are not known before the replies)."""
        free = sum(self.cached.values()) + self.offline
        share = max(0.0, 1 - free / max(sum(self.calls.values()), 1))
        return round(sum(self.tokens_in.values()) * share)

    def to_dict(self) -> dict[str, Any]:
        """The counts as JSON (prompts included)."""
        return {**dataclasses.asdict(self), "chars_per_token": CHARS_PER_TOKEN}

    def to_text(self) -> str:
        """What the run would call, and the first prompt of each kind."""
        lines = [f"dry run: {plural(self.cases, 'case')}, no model called"]
        for kind in ("generate", "judge"):
            if self.calls[kind]:
                lines.append(
                    f"  {kind}: {plural(self.calls[kind], 'call')}, about "
                    f"{self.tokens_in[kind]:,} tokens in (~{CHARS_PER_TOKEN} characters a token); "
                    f"the cache answers {self.cached[kind]:,}"
                )
        if self.offline:
            lines.append(
                f"  of the judge calls, {self.offline:,} go to the built-in offline judge (no cost)"
            )
        if self.estimated:
            lines.append(
                f"  {plural(self.estimated, 'call')} counted without a rendered prompt (judges "
                "of outputs still to be generated, or judges without one fixed prompt): their "
                "tokens are not in the figure"
            )
        for kind, prompt in self.first_prompt.items():
            lines += ["", f"first {kind} prompt:", prompt]
        return "\n".join(lines)


def dry_run(cases: Iterable[Case], *, observers: Sequence[Observer] = (), **options: Any) -> DryRun:
    """Render and count every prompt :func:`run` with these ``options`` (its ``checks``,
    ``judges``, ``judge_model``, ``generate_model``, ``prompt_template``, ``regenerate``,
    ``judge_all``, ``judge_categories``) and ``observers`` would send, calling no model.
    Code checks run (they are free) to tell which cases the judge would see.
    """
    import inspect

    known = set(inspect.signature(evaluate_case).parameters) - {
        "case",
        "dataset_fingerprint",
        "run",
    }
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"dry_run() got an unexpected keyword argument {unknown[0]!r}")
    checks, judge_model = options.get("checks", ()), options.get("judge_model")
    generate_model, judge_all = options.get("generate_model"), options.get("judge_all", False)
    judge_list = check_judges(options.get("judges", ()), judge_model)
    judge_spec = judge_model if isinstance(judge_model, str) else model_spec(judge_model)
    where = _judge_categories(options.get("judge_categories"))
    for observer in observers:
        cases = observer.cases(cases)
    plan = DryRun()
    for case in cases:
        trial = getattr(case, "trial", 0)
        plan.cases += not trial  # a case counts once, however many trials it has
        output = case.output
        if output is None or (options.get("regenerate") and generate_model is not None):
            prompt = _generation_prompt(case, options.get("prompt_template"))
            _count(plan, "generate", prompt, _peek(generate_model, prompt, trial))
            output = None
        for judge in judge_list:
            if not _judges_category(judge, case.category, where) or _missing_needs(judge, case):
                continue
            votes = getattr(judge, "votes", 1)
            if judge_spec == "builtin":
                plan.offline += votes
            render = getattr(judge, "render", None)
            if output is None or render is None:
                plan.calls["judge"] += votes
                plan.estimated += votes
                continue
            results = checks_mod.run_checks_detailed(
                output, [*case.expect_checks(), *checks], case=case
            )
            if not judge_all and not all(r.passed for r in results.values()):
                continue
            prompt = render(output, **_shown(judge, case, _conversation_parts(case, output)))
            for sample in range(votes):
                _count(plan, "judge", prompt, _peek(judge_model, prompt, sample))
    return plan


def _peek(model: Any, prompt: str, sample: int) -> Any:
    peek = getattr(model, "peek", None)
    return peek(prompt, sample=sample) if callable(peek) else None


def _count(plan: DryRun, kind: str, prompt: str, stored: Any) -> None:
    plan.calls[kind] += 1
    usage = getattr(stored, "usage", None) or {}
    plan.tokens_in[kind] += int(usage.get("input_tokens") or -(-len(prompt) // CHARS_PER_TOKEN))
    plan.cached[kind] += stored is not None
    plan.first_prompt.setdefault(kind, prompt)


# === Which cases a run sees ===


@dataclass
class PreparedCases:
    """The cases a run is to evaluate, validated, with what the reading pass learnt.

    ``cases`` can be iterated more than once. ``in_file`` counts the cases read,
    ``selected`` those the run is to see (all shards), ``in_shard`` those of this shard,
    ``without_output`` the selected ones with no output; ``read`` is False until a one-pass
    stream has been read to its end.
    """

    cases: Iterable[Case]
    fingerprint: str
    in_file: int = 0
    selected: int = 0
    in_shard: int = 0
    categories: set[str] = field(default_factory=set)
    without_output: int = 0
    first_without_output: Case | None = None
    unknown_only: tuple[str, ...] = ()
    read: bool = True


class _Again:
    """Cases that can be iterated again and again, each time from ``make()`` (not a sequence:
    a run given them counts them as it would a stream)."""

    def __init__(self, make: Callable[[], Iterator[Case]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[Case]:
        return self.make()


def _reread(
    path: str, read: Mapping[str, Any], keep: Callable[[Case], Case | None]
) -> Iterator[Case]:
    """A fresh, validated stream over the file (its ids checked already)."""
    for case in dataset.iter_cases(path, **read, unique_ids=False):
        kept = keep(case)
        if kept is not None:
            yield kept


READ_ONCE_BYTES = 2**20
"""A regular file up to this size is read once, its cases kept in memory; a larger one is
read twice (to validate and fingerprint, then to run), so memory does not grow with it."""


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
    """Read and validate every case of ``path`` before anything runs, and select the run's:
    a seeded ``sample_size``, the ids in ``only`` (``unknown_only`` lists those no case has),
    the ids of ``outputs`` with that output (to re-judge), shard I of ``shard=(I, N)``
    counted, ``shuffle``\\d by ``seed``. ``one_pass`` (a run calling no model) reads a large
    file once, as the run goes: the counts and fingerprint are whole once ``read`` is True.
    ``note`` is shown each case of the shard as it is read (an extra's summary section
    learns what it needs of the cases there).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write('{"id": "a", "output": "x"}\\n{"id": "b"}\\n{"id": "c", "output": "z"}\\n')
    >>> ready = prepare_cases(f.name, only=["a", "b", "q"])
    >>> [c.id for c in ready.cases], ready.selected, ready.without_output, ready.unknown_only
    (['a', 'b'], 2, 1, ('q',))
    >>> os.remove(f.name)
    """
    read: dict[str, Any] = {"fields": fields, "id_from_line": id_from_line, "format": format}
    if max_line_bytes is not None:
        read["max_line_bytes"] = max_line_bytes
    wanted = set(only) if only is not None else None
    if outputs is not None:
        wanted = set(outputs) if wanted is None else wanted & set(outputs)
    wanted_ids = set(only) if only is not None else set()
    seen_ids: set[str] = set()

    def keep(case: Case) -> Case | None:
        if wanted is not None and case.id not in wanted:
            return None
        if outputs is not None:
            return replace(case, output=outputs[case.id])
        return case

    ready = PreparedCases(cases=(), fingerprint="")

    def noted(cases: Iterable[Case]) -> Iterator[tuple[Case, Case | None]]:
        """Each case counted, with what the run keeps of it (None: not selected)."""
        for case in cases:
            ready.in_file += 1
            if only is not None and case.id in wanted_ids:
                seen_ids.add(case.id)
            kept = keep(case)
            if kept is not None:
                _note(ready, kept, shard, note)
            yield case, kept

    def finished(fingerprint: str) -> None:  # once every case has been read
        if ready.in_file == 0:
            raise dataset.DatasetError("no cases in the file", path=path)
        ready.fingerprint = fingerprint
        if only is not None:
            ready.unknown_only = tuple(sorted(wanted_ids - seen_ids))

    def keeping(cases: Iterable[Case], into: list[Case] | None) -> Iterator[Case]:
        """Every case, counted; the selected ones also put ``into`` the list (if one)."""
        for case, chosen in noted(cases):
            if into is not None and chosen is not None:
                into.append(chosen)
            yield case

    streamable = path != "-" and sample_size is None and not shuffle
    size = None
    if streamable:
        try:
            found = os.stat(path)
        except OSError:
            pass  # let the reader name the problem
        else:
            streamable, size = stat.S_ISREG(found.st_mode), found.st_size
    if streamable:
        kept: list[Case] | None = [] if size is not None and size <= READ_ONCE_BYTES else None
        if kept is None and one_pass and size is not None:
            ready.read = False
            digests = dataset.Fingerprinting()
            stream = noted(digests.adding(dataset.iter_cases(path, **read)))

            def once() -> Iterator[Case]:  # the reading pass and the run's in one
                if ready.read:  # read to the end already: read the file afresh
                    yield from _reread(path, read, keep)
                    return
                for _, chosen in stream:
                    if chosen is not None:
                        yield chosen
                ready.read = True
                finished(digests.value())

            ready.cases = _Again(once)
            return ready
        finished(dataset.dataset_fingerprint(keeping(dataset.iter_cases(path, **read), kept)))
        if kept is not None:
            ready.cases = _Again(functools.partial(iter, kept))
        else:
            ready.cases = _Again(lambda: _reread(path, read, keep))
        return ready
    loaded: list[Case] = dataset.load(path, **read)
    if sample_size is not None:
        loaded = dataset.sample(loaded, sample_size, seed=seed)
    elif shuffle:
        loaded = dataset.sample(loaded, len(loaded), seed=seed)
    selected: list[Case] = []
    finished(dataset.dataset_fingerprint(keeping(loaded, selected)))
    ready.cases = selected
    return ready


def _note(
    ready: PreparedCases,
    case: Case,
    shard: tuple[int, int] | None,
    note: Callable[[Case], None] | None,
) -> None:
    ready.selected += 1
    if shard is None or shard_index(case.id, shard[1]) == shard[0]:
        ready.in_shard += 1
        if note is not None:
            note(case)
        ready.categories.add(case.category)
        if case.output is None:
            ready.without_output += 1
            if ready.first_without_output is None:
                ready.first_without_output = case
