"""What the commands share: exit codes, the usage error, option groups and small helpers."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from dataclasses import fields
from typing import IO, Any

from .. import _extra
from ..errors import InputError

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3

PROG = "tinyeval"


class UsageError(InputError):
    """A command-line argument that is well-formed for argparse but still wrong."""


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented, key-sorted JSON on stdout (the ``--json`` output)."""
    json.dump(obj, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


def print_plan(plan: Any, price: Any, *, as_json: bool) -> None:
    """Print a dry run (:class:`tinyeval.scale.plan.DryRun`): its text, or JSON with the cost."""
    if as_json:
        cost = {} if price is None else {"cost_usd": _extra("cost", "plan", "a price")(plan, price)}
        print_json({**plan.to_dict(), **cost})
    else:
        text = plan.to_text()
        if price is not None:
            head, sep, prompts = text.partition("\n\nfirst ")
            text = head + "\n" + _extra("cost", "plan_line", "a price")(plan, price) + sep + prompts
        print(text)


def proportion(text: str) -> float:
    """An argparse type for a proportion typed as ``0.2`` or ``20%`` (the gate's rate parser).

    >>> proportion("20%"), proportion("0.05")
    (0.2, 0.05)
    """
    from ..gating import parse_threshold

    try:
        return parse_threshold(text)
    except InputError as exc:  # argparse says a ValueError as "invalid proportion value"
        raise ValueError(str(exc)) from None


def add_settings(p: Any, *names: str) -> dict[str | None, Any]:
    """The options of the run settings ``names`` on ``p`` (none: every setting's, each in its
    group, the core's groups first); returns the groups."""
    from ..suite import GROUPS, RunSettings

    wanted = {f.name: f for f in fields(RunSettings) if "help" in f.metadata}
    groups: dict[str | None, Any] = {None: p}
    if names:
        wanted = {name: wanted[name] for name in names}
    else:
        groups.update((title, p.add_argument_group(title)) for title in GROUPS)
    for name, setting in wanted.items():
        meta, kind = setting.metadata, str(setting.type)
        option: dict[str, Any] = {"dest": name, "help": meta["help"], "default": setting.default}
        if kind.startswith("bool"):
            option["action"] = "store_true"
        elif meta.get("many") or kind.startswith(("Sequence", "Mapping")):
            option.update(action="append", metavar=meta.get("metavar"))
            option["default"] = None if meta.get("many") else []
        else:
            option.update(metavar=meta.get("metavar"), choices=meta.get("choices"))
            for number, metavar in ((int, "N"), (float, "SECONDS")):
                if kind in (number.__name__, f"{number.__name__} | None"):
                    option.update(type=number, metavar=meta.get("metavar", metavar))
        where = groups[None if names else meta["group"]]
        where.add_argument(meta.get("flag", "--" + name.replace("_", "-")), **option)
    return groups


def add_github(p: Any) -> None:
    p.add_argument(
        "--github",
        action="store_true",
        help="append the summary to $GITHUB_STEP_SUMMARY and print ::error/::warning "
        "annotations (on by default when GITHUB_STEP_SUMMARY is set)",
    )


def write_reports(
    args: argparse.Namespace,
    rows: Any,
    report: Any,
    *,
    run_info: Any = None,
    cases_file: Any = None,
) -> None:
    """Write the report files asked for and, in GitHub Actions (or with --github), the job
    summary; print the annotations."""
    from ..report import write_reports as write

    written = write(
        report,
        rows,
        junit=args.junit,
        markdown=args.markdown,
        html=args.html,
        github=args.github or None,
        run_info=run_info,
        cases_file=cases_file,
    )
    if args.github and written.step_summary is None:
        print(
            f"{PROG}: --github: GITHUB_STEP_SUMMARY is not set, so no job summary was "
            "written; the annotations follow",
            file=sys.stderr,
        )
    for command in written.annotations:
        print(command)


class StatusLine:
    """A run's :class:`~tinyeval.session.Progress`, redrawn on one line of a terminal (and not
    written when ``stream`` is no terminal)."""

    def __init__(self, total: int | None, stream: IO[str], *, enabled: bool = True) -> None:
        from ..session import Progress

        self.progress = Progress(total)
        self.stream = stream
        self.enabled = enabled and bool(getattr(stream, "isatty", lambda: False)())
        self._last = 0.0
        self._closed = False

    def update(self, row: Mapping[str, Any]) -> None:
        """Count one finished row and redraw the line."""
        self.progress.update(row)
        now = time.perf_counter()
        if self.enabled and (now - self._last > 0.1 or self.progress.done == self.progress.total):
            self._last = now
            self.stream.write("\r\x1b[K" + self.progress.line(now))
            self.stream.flush()

    def close(self) -> None:
        """End the status line (once; later calls do nothing)."""
        if self.enabled and self.progress.done and not self._closed:
            self.stream.write("\n")
            self.stream.flush()
        self._closed = True
