"""``tinyeval run``: cases → code checks → judge(s) → one row per case → the gate."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import plural
from ._common import (
    EXIT_GATE_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
    PROG,
    StatusLine,
    UsageError,
    add_model_options,
    add_report_files,
    add_threshold_options,
    gate_options,
    print_json,
    print_plan,
    write_reports,
)

DEFAULT_OUT = "tinyeval-results.jsonl"
_NOTHING_WRITTEN = ("A run that calls no model writes its rows once it has read its whole file: "
                    "nothing was written")  # fmt: skip


# fmt: off
def add_run(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="evaluate a cases file: code checks, then the judge, then the gate per category",
        description="Evaluate every case of CASES (JSONL, JSON, CSV or YAML; '-' for stdin): "
        "code checks from each case's expect block first, then the judge where one is asked "
        "for, one result row per case, a table per category and a gate.",
    )
    p.add_argument("cases", nargs="?", metavar="CASES",
                   help="the cases file ('-' reads JSONL from stdin); omit it to run the suite "
                   "file (tinyeval.toml, or [tool.tinyeval] in pyproject.toml) found here or "
                   "above")
    p.add_argument("--config", metavar="FILE",
                   help="the suite file to run (default, when CASES is omitted: the one found "
                   "here or above); options given on the command line win over it")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="FILE",
                   help="where result rows are written, one JSON line per case (default: "
                   f"{DEFAULT_OUT})")
    data = p.add_argument_group("reading the cases")
    data.add_argument("--field", action="append", default=[], metavar="KEY=PATH",
                      help="map a recognised key to a dotted path in your records, e.g. "
                      "input=request.messages.0.content (repeatable)")
    data.add_argument("--id-from-line", action="store_true",
                      help="name cases without an id after their line: line-N")
    data.add_argument("--format", choices=["jsonl", "json", "csv", "yaml", "otel"],
                      help="the file format, when the name does not tell it")
    data.add_argument("--sample", type=int, metavar="N",
                      help="run a seeded random sample of N cases")
    data.add_argument("--seed", default="0", help="seed for --sample (default: 0)")
    data.add_argument("--max-line-bytes", type=int, metavar="N",
                      help="the longest line (or, for JSON and YAML, file) read, in bytes "
                      "(default: 64 MiB); a longer one is refused before it fills memory")
    data.add_argument("--only", metavar="IDS|FILE",
                      help="run only these cases: ids separated by commas, or a file of ids "
                      "(one per line, or JSON lines with an id: calibrate --disagreements)")
    data.add_argument("--rejudge", metavar="RESULTS",
                      help="check and judge again the outputs recorded in RESULTS (an earlier "
                      "run's rows), with the expect blocks of CASES; nothing is generated")
    gate_group = p.add_argument_group("the gate")
    add_threshold_options(gate_group)
    gate_group.add_argument("--k", default="1,3,5,10", metavar="K,K,…",
                            help="the cutoffs of the retrieval table, for cases with retrieved "
                            "and relevant (default: 1,3,5,10)")
    gate_group.add_argument("--retrieval-threshold", action="append", default=[],
                            metavar="METRIC@K=VALUE",
                            help="a minimum for every category with retrieval data, e.g. "
                            "recall@5=0.8, hit@1=90%%, mrr=0.5 (repeatable; a category below it "
                            "blocks)")
    judging = p.add_argument_group("the judge (runs only when a criterion is given)")
    judging.add_argument("--criterion", action="append", default=[], metavar="TEXT|NAME",
                         help="one property to judge, as text or a built-in name: "
                         "unsupported-claims, answers-the-question, refuses-when-ambiguous; "
                         "faithfulness-by-claims, answer-relevance, context-relevance; or "
                         "graded:TEXT for a 1-5 score (repeatable: one judge per criterion)")
    judging.add_argument("--rubric", action="append", default=[], metavar="FILE",
                         help='a criterion from a file: plain text, or JSON with "criterion" '
                         'and optional "name", "steps", "template" (repeatable)')
    judging.add_argument("--judge-model", action="append", metavar="SPEC",
                         help="builtin (offline, the default), openai:MODEL, anthropic:MODEL, "
                         "cmd:COMMAND or py:MODULE:FUNCTION; given 3, 5… times, a jury: each "
                         "model judges, the majority decides, split panels go to review")
    judging.add_argument("--dawid-skene", action="store_true",
                         help="with a jury and no labels: estimate each juror's sensitivity and "
                         "specificity from the verdicts alone (Dawid-Skene; errors independent)")
    judging.add_argument("--votes", type=int, default=1, metavar="N",
                         help="ask the judge N times and take the majority (default: 1)")
    judging.add_argument("--judge-style", choices=["verdict-first", "evidence-first"],
                         default="verdict-first", help="answer format the judge is asked for")
    judging.add_argument("--judge-all", action="store_true",
                         help="judge cases whose code checks failed too (default: skip them, "
                         "they already fail)")
    judging.add_argument("--judge-category", action="append", metavar="CATEGORY",
                         help="judge only cases of this category (repeatable; default: all)")
    judging.add_argument("--review-out", metavar="FILE",
                         help="write the rows whose votes were not unanimous, for review")
    judging.add_argument("--calibration", metavar="FILE",
                         help="a saved calibration (tinyeval calibrate --save): also report "
                         "pass rates corrected for the judge's measured error")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    add_report_files(p)
    p.add_argument("--show-failures", type=int, default=5, metavar="N",
                   help="list up to N failed cases per category and why (default: 5)")
    _add_run_execution_options(p)
    p.set_defaults(handler=_cmd_run)
# fmt: on


def _check_run_options(args: argparse.Namespace, settings: Any) -> None:
    """Options that only mean something with another one, and outputs over an input."""
    from ..session import refuse_overwriting

    for name, partners in settings.unused():
        wanted = " or ".join(f"--{partner.replace('_', '-')}" for partner in partners)
        raise UsageError(f"--{name.replace('_', '-')} has no effect without {wanted}")
    refuse_overwriting([settings.cases, settings.rejudge],
                       {"out": settings.out, "review_out": settings.review_out, "junit": args.junit,
                        "markdown": args.markdown, "html": args.html})  # fmt: skip


def settings_from(args: argparse.Namespace) -> Any:
    """The run's :class:`~tinyeval.session.RunSettings` from its parsed options, with the suite
    file's where they are left out (``args`` takes the suite's values too: its report files)."""
    from dataclasses import fields

    from ..dataset import parse_field_mapping
    from ..session import RunSettings, parse_shard, with_suite
    from .suite import suite_of

    options = {**vars(args), **gate_options(args), "fields": parse_field_mapping(args.field),
               "shard": parse_shard(args.shard) if args.shard else None}  # fmt: skip
    overridden: list[str] = []
    suite = suite_of(args)
    if suite is not None:
        options, overridden = with_suite(options, suite)
        vars(args).update(options)
    named = {f.name for f in fields(RunSettings)} & set(options)
    return RunSettings(**{name: options[name] for name in named}, suite=suite,
                       suite_overridden=overridden)  # fmt: skip


def _cmd_run(args: argparse.Namespace) -> int:
    from ..dataset import ResultsNotCasesError
    from ..session import Session
    from ..summary import header

    # Everything that can be wrong with the command is found before the cases are read,
    # and everything wrong with the cases before any of them runs.
    jurors = list(args.judge_model or [])
    args.judge_model = jurors[0] if len(jurors) == 1 else (jurors or None)
    settings = settings_from(args)
    _check_run_options(args, settings)
    session = Session(settings)
    with session:
        try:
            ready = session.prepare()
        except ResultsNotCasesError as exc:
            hint = "to re-judge it use --rejudge RESULTS with the cases file"
            raise UsageError(f"{exc}; {hint}") from None
        if args.dry_run:
            print_plan(session.dry_run(ready), session.price, as_json=args.json)
            return EXIT_OK
        summary = _run(args, session, ready)
    if args.json:
        print_json(summary.to_dict())
    elif not args.quiet:
        print(summary.to_text(header(session, ready)))
    elif not summary.report.passed:
        print(summary.to_text(brief=True), file=sys.stderr)
    rows = args.out if ready.read else []  # a run read as it went and stopped wrote none
    write_reports(args, rows, summary.report, run_info=summary.info, cases_file=args.cases)
    stopped_by = getattr(session.stop, "signal", None)
    if stopped_by is not None:  # asked to stop: said so already, with the resume command
        return 128 + int(stopped_by)
    if not summary.complete and not ready.read:
        print(f"{PROG}: the run stopped early: {summary.stopped_reason}. {_NOTHING_WRITTEN} "
              f"to {args.out}; fix the cause and run it again", file=sys.stderr)  # fmt: skip
        return EXIT_INCOMPLETE
    if not summary.complete:
        print(f"{PROG}: the run stopped early: {summary.stopped_reason}. Rows were kept for "
              f"{summary.rows} of {ready.in_shard} cases in {args.out}; fix the cause and run "
              "again (--resume keeps them)", file=sys.stderr)  # fmt: skip
        return EXIT_INCOMPLETE
    return EXIT_OK if summary.passed else EXIT_GATE_FAILED


def _run(args: argparse.Namespace, session: Any, ready: Any) -> Any:
    """The run, with the progress line, and Ctrl-C and SIGTERM handled."""
    total = ready.in_shard if ready.read else None  # read as it runs: known at the end
    progress = StatusLine(total, sys.stderr, enabled=not (args.quiet or args.json))
    with contextlib.ExitStack() as stack:
        stack.callback(progress.close)
        stack.enter_context(_stopping_on_signals(session.stop, progress,
                                                 lambda: session.in_flight))  # fmt: skip
        try:
            summary = session.run(ready, on_row=progress.update)
        except KeyboardInterrupt:
            progress.close()
            if total is None:  # its rows were to be written whole, once the file was read
                print(f"{PROG}: interrupted. {_NOTHING_WRITTEN} to {args.out}; run it again",
                      file=sys.stderr)  # fmt: skip
                raise
            print(f"{PROG}: interrupted; the cases in flight were abandoned (they have no row, "
                  f"a resumed run does them); finished rows are kept in {args.out}. Resume "
                  f"with:\n  {_resume_command()}", file=sys.stderr)  # fmt: skip
            raise
    if session.stop.is_set() and summary.capped is None and not ready.read:
        print(f"{PROG}: stopped on request. {_NOTHING_WRITTEN} to {args.out}; run it again",
              file=sys.stderr)  # fmt: skip
    elif session.stop.is_set() and summary.capped is None:
        print(f"{PROG}: stopped on request; finished rows are kept in {args.out}. Resume "
              f"with:\n  {_resume_command()}", file=sys.stderr)  # fmt: skip
    return summary


# fmt: off
def _add_run_execution_options(p: argparse.ArgumentParser) -> None:
    ex = add_model_options(p)
    ex.add_argument("--generate-model", metavar="SPEC",
                    help="generate the output of cases that have none, from their input")
    ex.add_argument("--stop-when-decided", action="store_true",
                    help="take the cases in a random order (--seed) and stop each gated "
                    "category once an anytime-valid confidence sequence decides its gate")
    ex.add_argument("--trials", type=int, default=1, metavar="K",
                    help="generate (check and judge) each case K times: one row per trial, "
                    "figures with the case as the unit, the flaky cases listed")
    ex.add_argument("--trials-gate", choices=["all", "any"], default="all",
                    help="with --trials, a case passes the gate when all its trials pass "
                    "(pass^k, the default) or when any does (pass@k)")
    ex.add_argument("--regenerate", action="store_true",
                    help="generate every case's output, even where a logged one exists (a "
                    "logged conversation is sent as its message list, with roles)")
    ex.add_argument("--prompt-template", metavar="FILE",
                    help="a text file with {input} where the case's input goes (for "
                    "--generate-model)")
    ex.add_argument("--max-tokens", type=int, metavar="N",
                    help="longest generated output to ask for (default: the server's)")
    ex.add_argument("--max-errors", type=int, metavar="N",
                    help="stop and exit 3 once more than N cases have errored (default: no "
                    "limit; errored cases always count as not passed)")
    ex.add_argument("--fail-fast", type=int, default=10, metavar="N",
                    help="stop and exit 3 when N cases have errored before any model call "
                    "succeeded, e.g. an unreachable server (default: 10; 0 never stops)")
    ex.add_argument("--case-timeout", type=float, metavar="SECONDS",
                    help="give up on a case still running after SECONDS: it becomes an error "
                    "row (default: none; each model call has its own --timeout)")
    ex.add_argument("--resume", action="store_true",
                    help="keep the rows already in --out and run only the cases without one")
    ex.add_argument("--shard", metavar="I/N",
                    help="run only shard I of N (a stable slice by id; join with tinyeval merge)")
    ex.add_argument("--batch", action="store_true",
                    help="send the judge (and generate) calls through the provider's batch API "
                    "(openai: and anthropic: models; half the price, but asynchronous); "
                    "--resume polls a pending batch again, never submitting it twice")
    ex.add_argument("--batch-poll", type=float, default=30.0, metavar="SECONDS",
                    help="the first wait between polls of a pending batch; it doubles up to 10 "
                    "minutes (default: 30)")
    ex.add_argument("--executor", metavar="dask:local|dask://HOST:PORT",
                    help="run the cases on a Dask cluster (pip install 'dask[distributed]'): "
                    "dask:local starts one here, dask://HOST:PORT joins a scheduler; every "
                    "worker must be able to open the response cache file")
    ex.add_argument("--dry-run", action="store_true",
                    help="render every prompt the run would send and count calls, tokens, cache "
                    "hits and cost, without calling any model or writing a row")
    ex.add_argument("--max-cost", type=float, metavar="USD",
                    help="with --price: stop taking cases once the spent plus the likely cost "
                    "of the cases in flight would pass USD (exit 3; --resume continues)")
    ex.add_argument("--price", metavar="in=X,out=Y",
                    help="USD per million input and output tokens, to report the run's cost")
# fmt: on


@contextlib.contextmanager
def _stopping_on_signals(
    stop: threading.Event, progress: StatusLine, in_flight: Callable[[], int]
) -> Iterator[None]:
    """The first Ctrl-C (or SIGTERM, a cancelled CI job) stops taking cases and says what it
    waits for; a second Ctrl-C abandons the cases in flight at once."""

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.signal = signum  # type: ignore[attr-defined]
        stop.set()
        progress.close()
        waiting = plural(in_flight(), "case")
        print(f"{PROG}: stopping: waiting for {waiting} in flight (Ctrl-C again to abandon "
              "them)", file=sys.stderr, flush=True)  # fmt: skip

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _resume_command() -> str:
    """The command as it was invoked, with --resume: ``python -m tinyeval`` when run so."""
    program = Path(sys.argv[0]).name if sys.argv else PROG
    if program in ("__main__.py", "-m", "-c") or program.endswith(".py"):
        words = [Path(sys.executable).name, "-m", __package__.rpartition(".")[0] if __package__
                 else PROG, *sys.argv[1:]]  # fmt: skip
    else:
        words = [program, *sys.argv[1:]]
    return shlex.join(words if "--resume" in words else [*words, "--resume"])
