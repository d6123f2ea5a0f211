"""``tinyeval run``: cases → code checks → judge(s) → one row per case → the gate."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..errors import key_values, plural
from ..suite import CI
from ._common import (
    EXIT_GATE_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
    PROG,
    StatusLine,
    UsageError,
    add_github,
    add_settings,
    print_json,
    print_plan,
    write_reports,
)

_NOTHING_WRITTEN = (
    "A run that calls no model writes its rows once it has read its whole file: nothing was written"
)


def add_run(sub: Any) -> None:
    p = sub.add_parser(
        "run", help="evaluate a cases file: code checks, then the judge, then the gate per category"
    )
    p.add_argument(
        "cases",
        nargs="?",
        metavar="CASES",
        help="the cases file (JSONL, JSON, CSV, YAML; '-': JSONL on stdin); without it, the "
        "suite file (tinyeval.toml, or [tool.tinyeval] in pyproject.toml) here or above",
    )
    p.add_argument("--config", metavar="FILE", help="a suite file to run; options given here win")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    quiet = "print only errors and the gate's line when it fails"
    p.add_argument("--quiet", "-q", action="store_true", help=quiet)
    p.add_argument(
        "--dry-run", action="store_true", help="render the prompts, count calls and cost"
    )
    groups = add_settings(p)
    add_github(groups[CI])
    p.set_defaults(handler=_cmd_run)


def settings_from(args: argparse.Namespace) -> Any:
    """The run's settings from its options and its suite file (whose values ``args`` takes)."""
    from ..dataset import parse_field_mapping
    from ..session import parse_shard
    from ..suite import RunSettings, with_suite

    if args.judge_model and len(args.judge_model) == 1:  # one judge model: no jury
        args.judge_model = args.judge_model[0]
    options = {**vars(args), "fields": parse_field_mapping(args.fields)}
    options["thresholds"] = key_values(args.thresholds, "CATEGORY=RATE", field="thresholds")
    options["shard"] = parse_shard(args.shard) if args.shard else None
    overridden: list[str] = []
    suite = suite_of(args)
    if suite is not None:
        options, overridden = with_suite(options, suite)
        vars(args).update(options)
    named = {f.name for f in fields(RunSettings)} & set(options)
    return RunSettings(
        **{name: options[name] for name in named}, suite=suite, suite_overridden=overridden
    )


def _cmd_run(args: argparse.Namespace) -> int:
    from ..dataset import ResultsNotCasesError
    from ..session import Session

    # what is wrong with the command is found before the cases are read, and with them before a run
    settings = settings_from(args)
    for name, partners in settings.unused():
        wanted = " or ".join(f"--{partner.replace('_', '-')}" for partner in partners)
        raise UsageError(f"--{name.replace('_', '-')} has no effect without {wanted}")
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
        print(summary.to_text())
    elif not summary.passed:
        print(summary.to_text(brief=True), file=sys.stderr)
    rows = args.out if ready.read else []  # a run read as it went and stopped wrote none
    write_reports(args, rows, summary.report, run_info=summary.info, cases_file=args.cases)
    stopped_by = getattr(session.stop, "signal", None)
    if stopped_by is not None:  # asked to stop: said so already, with the resume command
        return 128 + int(stopped_by)
    if not summary.complete:
        kept = (
            f"Rows were kept for {summary.rows} of {ready.in_shard} cases in {args.out}; fix "
            "the cause and run again (--resume keeps them)"
            if ready.read
            else f"{_NOTHING_WRITTEN} to {args.out}; fix the cause and run it again"
        )
        stopped = "stopped early"
        if "every case ran" in str(summary.stopped_reason):  # the error limit, crossed at the end
            stopped, kept = "failed", f"Every row is in {args.out}; it fails for its errors"
        print(f"{PROG}: the run {stopped}: {summary.stopped_reason}. {kept}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK if summary.passed else EXIT_GATE_FAILED


def _run(args: argparse.Namespace, session: Any, ready: Any) -> Any:
    """The run, with the progress line, and Ctrl-C and SIGTERM handled."""
    total = ready.in_shard if ready.read else None  # read as it runs: known at the end
    progress = StatusLine(total, sys.stderr, enabled=not (args.quiet or args.json))
    with contextlib.ExitStack() as stack:
        stack.callback(progress.close)
        stack.enter_context(_stopping_on_signals(session.stop, progress, lambda: session.in_flight))
        try:
            summary = session.run(ready, on_row=progress.update)
        except KeyboardInterrupt:
            progress.close()
            abandoned = (
                "; the cases in flight were abandoned (they have no row, a resumed run does them)"
            )
            said = abandoned if ready.read else ""
            print(f"{PROG}: interrupted{said}{_kept(args.out, ready.read)}", file=sys.stderr)
            raise
    if session.stop.is_set() and summary.capped is None:
        print(f"{PROG}: stopped on request{_kept(args.out, ready.read)}", file=sys.stderr)
    return summary


def _kept(out: str, read: bool) -> str:
    if read:
        return f"; finished rows are kept in {out}. Resume with:\n  {_resume_command()}"
    return f". {_NOTHING_WRITTEN} to {out}; run it again"


@contextlib.contextmanager
def _stopping_on_signals(
    stop: threading.Event, progress: StatusLine, in_flight: Callable[[], int]
) -> Iterator[None]:
    """The first Ctrl-C (or SIGTERM) stops taking cases; a second abandons those in flight."""

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.signal = signum  # type: ignore[attr-defined]
        stop.set()
        progress.close()
        waiting = plural(in_flight(), "case")
        said = f"waiting for {waiting} in flight (Ctrl-C again to abandon them)"
        print(f"{PROG}: stopping: {said}", file=sys.stderr, flush=True)

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
    program = Path(sys.argv[0]).name if sys.argv else PROG
    words = [program, *sys.argv[1:]]
    if program in ("-m", "-c") or program.endswith(".py"):  # __main__.py among them
        package = __package__.rpartition(".")[0] if __package__ else PROG
        words[:1] = [Path(sys.executable).name, "-m", package]
    return shlex.join(words if "--resume" in words else [*words, "--resume"])


def suite_of(args: argparse.Namespace) -> Any:
    """The suite file of a run: ``--config FILE``, else the one found here or above."""
    from ..suite import find_suite, load_suite

    if args.config:
        return load_suite(args.config)
    found = find_suite(".")  # looked for once: it may read every pyproject.toml above
    if found is None and args.cases is None:
        raise UsageError(
            "give a CASES file, or write a suite file (tinyeval init) so that "
            "tinyeval run knows what to run"
        )
    return None if found is None else load_suite(found)
