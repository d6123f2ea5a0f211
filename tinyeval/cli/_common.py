"""What the commands share: exit codes, the usage error, the run settings' options, helpers."""

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
    """A command-line argument that argparse accepts but is still wrong."""


def print_json(obj: Any) -> None:
    """Print ``obj`` as the ``--json`` output."""
    json.dump(obj, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


def print_plan(plan: Any, price: Any, *, as_json: bool) -> None:
    """Print a dry run: its text, or its JSON, with the cost."""
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
    """An argparse type for a proportion typed as ``0.2`` or ``20%``.

    >>> proportion("20%"), proportion("0.05")
    (0.2, 0.05)
    """
    from ..gating import parse_threshold

    try:
        return parse_threshold(text)
    except InputError as exc:  # argparse says a ValueError as "invalid proportion value"
        raise ValueError(str(exc)) from None


def add_settings(p: Any, *names: str) -> dict[str | None, Any]:
    """The options of the run settings ``names`` on ``p`` (none: all, in their groups)."""
    from ..suite import GROUPS, RunSettings

    wanted = {f.name: f for f in fields(RunSettings) if "help" in f.metadata}
    groups: dict[str | None, Any] = {None: p}
    if names:
        wanted = {name: wanted[name] for name in names}
    else:
        groups.update((title, p.add_argument_group(title)) for title in GROUPS)
    for name, setting in wanted.items():
        meta, kind = setting.metadata, str(setting.type)
        default = setting.default
        said = f"{default:g}" if isinstance(default, float) else str(default)
        shown = isinstance(default, int | float | str) and not isinstance(default, bool)
        help = f"{meta['help']} (default: {said})" if shown else meta["help"]
        repeatable = kind.startswith(("Sequence", "Mapping"))
        option: dict[str, Any] = {"dest": name, "default": default}
        option["help"] = f"{help} (repeatable)" if repeatable else help
        if kind.startswith("bool"):
            option["action"] = "store_true"
        elif meta.get("many") or repeatable:
            option.update(action="append", metavar=meta.get("metavar"))
            option["default"] = None if meta.get("many") else []
        else:
            file = "FILE" if kind == "str | None" and "choices" not in meta else None
            option.update(metavar=meta.get("metavar", file), choices=meta.get("choices"))
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


def write_reports(args: argparse.Namespace, rows: Any, report: Any, **more: Any) -> None:
    """Write the report files asked for, and the GitHub job summary and annotations."""
    from ..report import write_reports as write

    files = {name: getattr(args, name) for name in ("junit", "markdown", "html")}
    written = write(report, rows, **files, github=args.github or None, **more)
    if args.github and written.step_summary is None:
        said = "GITHUB_STEP_SUMMARY is not set, so no job summary was written"
        print(f"{PROG}: --github: {said}; the annotations follow", file=sys.stderr)
    for command in written.annotations:
        print(command)


class StatusLine:
    """A run's progress: rows done of ``total`` (None: not known yet), speed and time left,
    redrawn on one line of a terminal (nothing is written to another stream).

    >>> status = StatusLine(10, sys.stderr)
    >>> status.update({"status": "fail"})
    >>> status.line(status.started + 2.0)
    '1/10 · 0.5 cases/s · ETA 18s · 1 failed · 0 errors'
    """

    def __init__(self, total: int | None, stream: IO[str], *, enabled: bool = True) -> None:
        self.total = total
        self.done = self.failed = self.errors = 0
        self.started = time.perf_counter()
        self.stream = stream
        self.enabled = enabled and bool(getattr(stream, "isatty", lambda: False)())
        self._last = 0.0

    def update(self, row: Mapping[str, Any]) -> None:
        self.done += 1
        self.failed += row.get("status") == "fail"
        self.errors += row.get("status") == "error"
        now = time.perf_counter()
        if self.enabled and (now - self._last > 0.1 or self.done == self.total):
            self._last = now
            self.stream.write("\r\x1b[K" + self.line(now))
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        elapsed = max((now or time.perf_counter()) - self.started, 1e-9)
        rate = self.done / elapsed
        done, eta = f"{self.done}", ""
        if self.total is not None:
            left = f"{(self.total - self.done) / rate:.0f}s" if rate > 0 else "?"
            done, eta = f"{self.done}/{self.total}", f" · ETA {left}"
        return f"{done} · {rate:.1f} cases/s{eta} · {self.failed} failed · {self.errors} errors"

    def close(self) -> None:
        """End the status line: it is drawn no more (later calls do nothing)."""
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()
        self.enabled = False
