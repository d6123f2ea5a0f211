"""Run cases through generate → code checks → judge(s), one result row per case.

Every case is counted before it can fail: whatever happens to it (a check
raises, the model times out, the judge babbles) it ends as exactly one row
with ``status`` ``"pass"``, ``"fail"``, ``"error"`` or ``"unchecked"``, and
every rate counts it in its denominator. Only ``"pass"`` passes: a case that
nothing looked at (no check, no judge able to judge it) is ``"unchecked"``.

Rows are handed out (and written, when ``out`` is given) as each case
finishes, so a long run can be watched, interrupted and resumed. The rows'
schema is :mod:`tinyeval.records`'s.

=======================  ======================================================
``run(cases, ...)``      every case into a row, on any executor; resume, shards
``evaluate_case``        one case into one row (what ``run`` sends to workers)
=======================  ======================================================

Two runs compared case by case with a pairwise judge: :func:`tinyeval.judges.pairwise.run_pairs`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import functools
import hashlib
import itertools
import json
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, NamedTuple

from . import checks as checks_mod
from .dataset import Case
from .errors import InputError
from .models import USAGE_KEYS, CallModel, ChatPrompt, add_usage, ask, model_spec
from .pool import DaemonThreadPool, Finished
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
from .scale.cost import Price, format_usd, run_cost  # FIXME-DOOR

__all__ = [
    "DaemonThreadPool",
    "EarlyDecision",
    "RunResult",
    "RunnerError",
    "check_judges",
    "evaluate_case",
    "input_text",
    "run",
    "shard_index",
    "timed_out_row",
]


class RunnerError(InputError):
    """A run asked for with settings that cannot work (a bad concurrency, shard or timeout)."""


@dataclass
class RunResult:
    """What a run produced: per-category tallies, and the rows when they were kept.

    ``complete`` is False when the run stopped early (``max_errors`` exceeded,
    a dead model, interrupted); ``stopped_reason`` then says why.
    ``resumed`` counts the rows kept from an earlier run of the same ``out``
    (they are in the tallies and, when rows are kept, in ``rows``).

    >>> from tinyeval.dataset import Case
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
    decisions: dict[str, Any] = field(default_factory=dict)  # categories stopped when decided
    capped: str | None = None  # why the spend cap stopped the run

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


@dataclass(frozen=True)
class _Trial(Case):
    """One of the repeated trials of a case (``run(trials=K)``): the case and its index."""

    trial: int = 0


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
    """A conversation case cut into what the judge is shown (system, earlier turns, the
    question, the agent's steps, the response), or None for a plain case."""
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

    >>> from tinyeval.dataset import Case
    >>> row = evaluate_case(Case(id="a", output="hola", expect={"max_words": 1}))
    >>> row["status"], row["checks"]
    ('pass', {'max_words': True})
    >>> evaluate_case(Case(id="b", output="anything"))["status"]
    'unchecked'
    >>> evaluate_case(Case(id="c"))["status"]
    'error'
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
            results = checks_mod.run_checks_detailed(output, [*case.expect_checks(), *checks],
                                                     case=case)  # fmt: skip
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

    >>> shard_index("amt-001", 4) == shard_index("amt-001", 4)
    True
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


def _judge_list(judges: Any) -> list[Any]:
    found = list(judges) if isinstance(judges, list | tuple) else ([judges] if judges else [])
    names = [getattr(judge, "name", None) for judge in found]
    for name in names:
        if names.count(name) > 1:
            raise RunnerError(
                f"two judges are named {name!r}: give them distinct names (name=...), "
                "or each would overwrite the other's verdict",
                field="judges",
            )
    return found


def check_judges(judges: Any, judge_model: CallModel | str | None = None) -> list[Any]:
    """The judges as a list, refused when they cannot work together: two with one name (one
    would overwrite the other's verdict), or the built-in judge asked for a criterion of
    your own (it implements only its named criteria).

    >>> from tinyeval.judge import Judge
    >>> check_judges([Judge("Is polite.", name="a"), Judge("Is short.", name="a")], "cmd:cat")
    Traceback (most recent call last):
    ...
    tinyeval.runner.RunnerError: judges: two judges are named 'a': give them distinct names ...
    """
    found = _judge_list(judges)
    if found:
        _refuse_builtin_for_own_criteria(found, "builtin" if judge_model is None else judge_model)
    return found


def _refuse_builtin_for_own_criteria(judges: Sequence[Any], judge_model: Any) -> None:
    from .judge import CRITERIA

    spec = judge_model.strip() if isinstance(judge_model, str) else model_spec(judge_model)
    if spec != "builtin":
        return
    for judge in judges:
        if getattr(judge, "criterion", None) not in CRITERIA:
            raise RunnerError(
                f"the built-in judge implements only {', '.join(CRITERIA)}; the judge "
                f"{judge.name!r} asks for a criterion of your own: give a judge model for it",
                field="judge_model",
            )


def _previous_rows(
    out: str | Path, fingerprint: str | None, judges: Sequence[Any], judge_model: Any
) -> list[Row]:
    """The rows an earlier run left in ``out`` that a resumed run keeps.

    Refused, naming what changed, when they come from another dataset, or were
    judged by other judges, another rubric or another judge model: mixing them
    would gate verdicts of two different judges as one.
    """
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
    return rows


def _sized_count(cases: Iterable[Case], shard: tuple[int, int] | None) -> tuple[int, int] | None:
    """(cases in all, cases in the shard) when ``cases`` is a sized collection."""
    if not isinstance(cases, Sequence):
        return None
    if shard is None:
        return len(cases), len(cases)
    return len(cases), sum(shard_index(case.id, shard[1]) == shard[0] for case in cases)


def run(
    cases: Iterable[Case],
    *,
    checks: Sequence[Any] = (),
    judges: Any = (),
    judge_model: CallModel | str | None = None,
    generate_model: CallModel | str | None = None,
    prompt_template: str | None = None,
    regenerate: bool = False,
    trials: int = 1,
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
    stop_when_decided: Mapping[str, float] | None = None,
    max_cost: float | None = None,
    price: Price | None = None,
) -> RunResult:
    """Evaluate every case and return the tallies (and rows, unless ``keep_rows=False``).

    ``checks`` are extra checks applied to every case, on top of each case's
    ``expect`` block. ``judges`` is a :class:`~tinyeval.judge.Judge` or a list
    of them, with distinct names; they run only on cases whose code checks
    passed (``judge_all=True`` runs them there too), and, with
    ``judge_categories``, only in those categories (a mapping of judge name to
    categories gives each judge its own; an empty list means every category). Model arguments take a
    ``prompt -> str`` callable or a spec string such as ``"builtin"`` or
    ``"openai:gpt-4o-mini"``. A case without an output is generated from its
    input (a logged conversation is sent as its message list, with roles);
    ``regenerate=True`` generates every case, logged output or not.
    ``trials=K`` generates (and checks and judges) each case K times, with
    distinct sample indexes so a cache keeps them apart: one row per trial,
    with its ``trial`` index (see :func:`tinyeval.summarize_trials` for the
    figures with the case as the unit).

    Cases run on ``executor`` (any :class:`concurrent.futures.Executor`) or on
    a thread pool of ``concurrency`` workers; each row is written to ``out`` and
    passed to ``on_row`` as soon as its case finishes. ``shard=(I, N)`` runs only
    the cases of shard I of N (a stable split by id). With ``resume=True``, the
    rows already in ``out`` (a path) are kept and counted, and only cases
    without one run; rows of another dataset, judge, rubric or judge model are
    refused. With ``max_errors``, the run stops taking new cases once more than
    that many have errored, and the result is marked incomplete; so it is when
    ``fail_fast`` cases (default 10) have errored before any model call
    succeeded — an unreachable server or a wrong model name, not worth a full
    run of retries (None never stops). With ``case_timeout`` (seconds), a case
    still running that long after it started becomes an error row and the run
    moves on without it.

    ``stop`` (a :class:`threading.Event`) ends the run early when set: no new
    case is taken, the cases in flight finish and are written, and the result
    is incomplete. A ``KeyboardInterrupt`` abandons the cases in flight at once
    (they get no row; a resumed run does them). ``progress`` is told, now and
    then, how many cases are running.

    ``stop_when_decided`` (category → threshold) stops sending a category's
    cases once an anytime-valid confidence sequence of its pass rate
    (:class:`tinyeval.ConfidenceSequence`, valid however often it is looked at)
    lies wholly on one side of its threshold; ``result.decisions`` says when.
    Give the cases in a random order, or the early stop is not a fair sample.

    ``max_cost`` (US dollars, with ``price``) stops taking cases once what
    was spent, plus what the cases in flight will likely cost, would pass it;
    the result is then incomplete, and a resumed run continues.

    ``manifest`` is what every row records as ``run`` (see
    :func:`tinyeval.records.run_manifest`); given a list of cases, it is made
    from its length, so a reader of the rows can tell whether they are complete.

    >>> from tinyeval.dataset import Case
    >>> cases = [Case(id="a", output="hola", expect={"contains": ["hola"]}),
    ...          Case(id="b", output="chau", expect={"contains": ["hola"]})]
    >>> result = run(cases)
    >>> [r["status"] for r in result.rows], result.categories["default"].passed
    (['pass', 'fail'], 1)
    >>> result.rows[0]["run"]["cases"]
    2
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
    if max_cost is not None and (price is None or not max_cost > 0):
        raise RunnerError("max_cost needs a price and a positive number of dollars",
                          field="max_cost")  # fmt: skip
    if max_cost is not None:
        stop = stop if stop is not None else threading.Event()
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise RunnerError(f"trials must be a whole number >= 1, got {trials!r}", field="trials")
    if trials > 1 and generate_model is None:
        raise RunnerError(
            "repeated trials sample the system under test: they need a generate model",
            field="trials",
        )
    if resume and not isinstance(out, str | Path):
        raise RunnerError("resume needs out to be a path: the rows to keep are read from it")
    judge_list = check_judges(judges, judge_model)
    judge_model = _resolve(judge_model)
    generate_model = _resolve(generate_model)
    if judge_list and judge_model is None:
        judge_model = _resolve("builtin")
    if manifest is None:
        counts = _sized_count(cases, shard)
        if counts is not None:
            manifest = run_manifest(
                cases=counts[0],
                shard=shard,
                shard_cases=counts[1] if shard else None,
                judges={j.name: j.rubric_fingerprint for j in judge_list},
                judge_model=model_spec(judge_model) if judge_list else None,
            )
    previous: list[Row] = []
    if resume and isinstance(out, str | Path):
        previous = _previous_rows(out, dataset_fingerprint, judge_list, judge_model)
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

    sequences: dict[str, Any] = {}
    if stop_when_decided:
        from .estimates.sequential import ConfidenceSequence

        sequences = {name: ConfidenceSequence() for name in stop_when_decided}

    def selected() -> Iterator[Case]:
        decided = result.decisions
        for case in cases:
            if shard and shard_index(case.id, shard[1]) != shard[0]:
                continue
            if decided and case.category in decided:
                continue  # decided: its remaining cases would change nothing
            if trials == 1:
                if not done or (case.id, 0) not in done:
                    yield case
                continue
            fields = {f.name: getattr(case, f.name) for f in dataclasses.fields(case)}
            for trial in range(trials):
                if (case.id, trial) not in done:
                    yield _Trial(**fields, trial=trial)

    started = time.perf_counter()
    stream, owned = _open_out(out, append=resume)
    own_executor = executor is None
    # daemon workers: a case abandoned (past its timeout, or on a second interrupt) must not
    # hold up the interpreter's exit
    pool = executor if executor is not None else DaemonThreadPool(concurrency)
    started_rows = result.total  # rows kept from an earlier run are not this session's spending
    control = _Control()
    # under a per-case timeout only a worker can be left behind; an executor given is used
    # for every case
    here = None
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
        control=control,
        progress=progress,
        here=here,
    )
    try:
        for row in rows:
            if stream is not None:
                write_row(stream, row)
            result.add(row, keep=keep_rows)
            if sequences:
                _watch(result, sequences, stop_when_decided or {}, row)
            if max_cost is not None and price is not None and stop is not None:
                _mind_the_cap(result, max_cost, price, stop, started_rows)
            if on_row is not None:
                on_row(row)
    except KeyboardInterrupt:  # asked twice: the cases in flight are abandoned, not waited for
        result.complete = False
        result.stopped_reason = "interrupted"
        control.abandon = True
        raise
    finally:
        result.elapsed_s = time.perf_counter() - started
        # the row stream first: its cleanup cancels what is queued and waits for what runs
        rows.close()
        if own_executor:
            pool.shutdown(wait=not (control.abandon or result.abandoned), cancel_futures=True)
        if owned and stream is not None:
            stream.close()
    if stop is not None and stop.is_set() and result.complete:
        result.complete = False
        result.stopped_reason = result.capped or "interrupted"
    return result


def _here(task: Mapping[str, Any], *, every_case: bool) -> Callable[[Case], Row | None] | None:
    """What evaluates a case in the calling thread, where a worker would add nothing, and gives
    its row (None: a worker is to run it); None when no case is to run here.

    Every case runs here on one worker (``every_case``); on more, a case sure to call no
    model, or one whose every call the cache answers (:func:`_from_cache`). Checks of the
    caller's own keep every case on its worker: they may be slow.
    """
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
    """What evaluates a case in the calling thread when the caches of the models it calls
    answer every call it makes (None: it would call a model, so a worker runs it), or None
    when that cannot be: a model without a cache, or a judge that may call a model of its own.
    A judge class says it calls no model but the one it is given by setting
    ``calls_only_the_given_model = True`` in its own body (``Judge``, the RAG judges, the
    graded judge): the attribute is read from the judge's very class, so a subclass, which
    may call a model of its own, says it itself.

    A fully cached re-run so costs no thread hops: its cases are read from the cache as
    fast as one thread can, where 32 workers would contend for the interpreter. Once the
    cache has missed clearly more often than it answered (a first run), it is not tried
    again, so a run that calls its models pays for at most a few dozen look-ups.
    """
    cache = sys.modules.get(f"{__package__}.cache")  # not imported: no model can be cached
    judges = task["judges"]
    if cache is None:
        return None

    def answering(model: Any) -> Any:  # the model answering from its cache alone, or None
        return model.cache_only() if isinstance(model, cache.CachedModel) else None

    judging = answering(task["judge_model"]) if judges else None
    if judges and (judging is None or not all(
        vars(type(judge)).get("calls_only_the_given_model", False) for judge in judges
    )):  # fmt: skip
        return None
    generate, regenerate = task["generate_model"], task["regenerate"]
    generating = answering(generate)
    views = [view for view in (judging, generating) if view is not None]
    if not views:  # nothing a cache could answer (or refreshing: every call is made again)
        return None
    attempt = dict(task, judge_model=judging or task["judge_model"],
                   generate_model=generating or generate)  # fmt: skip
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


def _mind_the_cap(
    result: RunResult, max_cost: float, price: Price, stop: threading.Event, before: int
) -> None:
    """Stop taking cases once the spent plus the in-flight cases' likely cost reaches the cap."""
    usage = {key: result.usage.get(key, 0) for key in ("input_tokens", "output_tokens")}
    spent = run_cost([usage], price)
    done = max(result.total - before, 1)
    projected = spent + spent / done * result.in_flight
    if projected >= max_cost and not stop.is_set():
        result.capped = (
            f"the spend cap of {format_usd(max_cost)} was reached: {format_usd(spent)} spent, "
            f"about {format_usd(projected - spent)} more in flight"
        )
        stop.set()


def _watch(
    result: RunResult, sequences: Mapping[str, Any], thresholds: Mapping[str, float], row: Row
) -> None:
    """Update the row's category's confidence sequence; note the category once it is decided."""
    from .estimates.sequential import gate_decision

    category = str(row["category"])
    sequence = sequences.get(category)
    if sequence is None or category in result.decisions:
        return
    sequence.update(row["status"] == "pass")
    decision = gate_decision(sequence, thresholds[category])
    if decision != "undecided":
        result.decisions[category] = EarlyDecision(category, decision, sequence.n,
                                                   sequence.low, sequence.high)  # fmt: skip


class EarlyDecision(NamedTuple):
    """A category decided before all its cases ran: the outcome, after how many cases, and
    the confidence sequence's interval then."""

    category: str
    outcome: str
    cases: int
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        """``{"outcome", "cases", "low", "high"}``."""
        return {"outcome": self.outcome, "cases": self.cases, "low": self.low, "high": self.high}


def _open_out(out: str | Path | IO[str] | None, append: bool) -> tuple[IO[str] | None, bool]:
    if out is None:
        return None, False
    if isinstance(out, str | Path):
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        return open(out, "a" if append else "w", encoding="utf-8"), True
    return out, False


@dataclass
class _Control:
    """Set by the run when the row stream must stop without waiting for the cases in flight."""

    abandon: bool = False


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
    stop: threading.Event | None = None,
    control: _Control | None = None,
    progress: Callable[[int], None] | None = None,
    here: Callable[[Case], Row | None] | None = None,
) -> Generator[Row, None, None]:
    """Yield rows as cases finish, keeping at most ``window`` cases in flight.

    A case is evaluated in the calling thread, rather than handed to ``pool``,
    when ``here`` gives its row (see :func:`_here`).

    ``result.in_flight`` says how many cases are running at any moment; once
    ``stop`` is set no new case is taken.

    With ``case_timeout``, a case still running that long after it started is
    given an error row at once and left behind (a thread cannot be stopped; its
    late result is ignored).
    """
    pending: dict[cf.Future[Row], tuple[int, Case]] = {}  # future -> (submission order, case)
    finished: Finished[Row] = Finished()
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
        if control is not None:
            control.abandon = True
        raise
    finally:
        for future in pending:
            future.cancel()
        if control is not None and control.abandon:
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
