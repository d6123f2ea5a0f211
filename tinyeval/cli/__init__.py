"""The command line. Exit codes: 0 done, 1 a gate failed, 2 bad usage or input, 3 incomplete
or a bug of ours."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
from typing import Any

from .. import _EXTRAS, _extra
from ..errors import IncompleteError, InputError
from ..stats import StatisticsError
from ._common import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_OK, PROG, UsageError

__all__ = ["UsageError", "build_parser", "main"]

# the core's commands, in the order of --help: name -> "module:function adding its parser"
_CORE = {
    "run": "run:add_run",
    "gate": "results:add_gate_and_report",
    "report": "results:add_gate_and_report",
    "compare": "results:add_compare",
    "merge": "results:add_merge",
    "split": "results:add_split",
    "calibrate": "results:add_calibrate",
    "stats": "statistics:add_stats",
}


def _adder(name: str) -> Any:
    if name not in _CORE:
        return _extra("command", name, f"the command {name!r}")  # InputError without it
    module, _, function = _CORE[name].partition(":")
    return getattr(importlib.import_module(f".{module}", __name__), function)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone.

    >>> build_parser("run").parse_args(["run", "cases.jsonl"]).cases
    'cases.jsonl'
    """
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Evaluate LLM output: code checks, a calibrated PASS/FAIL judge, "
        "Wilson intervals and a gate per category.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback behind an error (for a report)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    if command in _CORE or command in _EXTRAS["command"]:
        adders = [_adder(command)]
    else:
        adders = []
        for name in [*_CORE, *_EXTRAS["command"]]:  # calibrate's entry: the core's, extended
            with contextlib.suppress(InputError):  # a copy without that extra
                adders.append(_adder(name))
    for add in dict.fromkeys(adders):  # gate's adds report too
        add(sub)
    for action in sub._choices_actions:  # a command without a description: its help heads it
        named = sub._name_parser_map[action.dest]
        named.description = named.description or action.help
    return parser


def _command_named(argv: list[str]) -> str | None:
    """The command ``argv`` runs, unless it needs them all (``--help``, a misspelt command)."""
    for arg in argv:
        if arg != "--debug":
            return arg if arg in _CORE or arg in _EXTRAS["command"] else None
    return None


def _as_given(exc: Exception, parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The error with a setting's keyword (``max_errors``) said as its option (``--max-errors``)."""
    if not isinstance(exc, InputError):
        return str(exc)
    command = parser  # the (sub-)command that was run: tinyeval stats wilson is two levels down
    while subs := [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]:
        command = subs[0].choices[getattr(args, subs[0].dest)]  # subcommands are required
    options = {a.dest: max(a.option_strings, key=len) for a in command._actions if a.option_strings}

    def option(found: re.Match[str]) -> str:
        return f"({options.get(found[1]) or found[1]}{found[2]}"

    reason = re.sub(r"\((\w+)([ )])", option, exc.reason)
    field = exc.field
    if exc.path is None and field and options.get(field):
        field = options[field]
    return str(InputError(reason, path=exc.path, line=exc.line, field=field))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return its exit code.

    >>> main(["stats", "wilson", "27", "30"])
    27/30 = 90.0%; 95% Wilson interval 74.4%–96.5%.
    0
    """
    try:
        parser = build_parser(_command_named(sys.argv[1:] if argv is None else argv))
    except InputError as exc:  # the command of an extra this copy lacks
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        if args.command != "run":  # run says itself how to resume
            print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``tinyeval … | head``): not our error
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:
        if args.debug or os.environ.get("TINYEVAL_TRACEBACK"):
            raise
        if isinstance(exc, InputError | StatisticsError):
            code, said = EXIT_BAD_INPUT, f"error: {_as_given(exc, parser, args)}"
        elif isinstance(exc, IncompleteError):
            code, said = EXIT_INCOMPLETE, str(exc)
        elif isinstance(exc, OSError):
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            code, said = EXIT_BAD_INPUT, f"error: {where}{exc.strerror or exc}"
        else:  # a bug of ours: one line and exit 3, never a gate's exit 1
            from ..models import scrub

            code, bug = EXIT_INCOMPLETE, f"{type(exc).__name__}: {scrub(str(exc))}"
            said = (
                f"internal error, the command could not complete: {bug} (run again with "
                "--debug for the traceback, and please report it)"
            )
        print(f"{PROG}: {said}", file=sys.stderr)
        return code
