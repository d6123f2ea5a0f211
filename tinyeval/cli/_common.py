"""What the commands share: exit codes, the usage error, option groups and small helpers."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from typing import IO, Any

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
    """Print a dry run (:class:`tinyeval.planning.DryRun`): its text, or its JSON with the cost."""
    if as_json:
        print_json({**plan.to_dict(), **({} if price is None else {"cost_usd": plan.cost(price)})})
    else:
        print(plan.to_text(price))


def proportion(text: str) -> float:
    """An argparse type for a proportion typed as ``0.2`` or ``20%``.

    >>> proportion("20%"), proportion("0.05")
    (0.2, 0.05)
    """
    number = text.strip()
    scale = 100.0 if number.endswith("%") else 1.0
    return float(number.removesuffix("%")) / scale  # a ValueError becomes argparse's message


# fmt: off
def add_model_options(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Options shared by the commands that call models (run, pairwise)."""
    ex = p.add_argument_group("calling models")
    ex.add_argument("--base-url", metavar="URL",
                    help="base URL of an OpenAI-compatible server (default: $OPENAI_BASE_URL)")
    ex.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                    help="timeout of one model call (default: 60)")
    ex.add_argument("--temperature", type=float, default=0.0, metavar="T",
                    help="sampling temperature sent to models, recorded in each row (default: "
                    "0; votes differ only above 0)")
    ex.add_argument("--judge-max-tokens", type=int, default=256, metavar="N",
                    help="longest judge reply to ask for (default: 256)")
    ex.add_argument("--concurrency", type=int, default=4, metavar="N",
                    help="cases in flight at once (default: 4)")
    ex.add_argument("--cache", default=".tinyeval/cache.sqlite3", metavar="PATH",
                    help="response cache for model calls (default: .tinyeval/cache.sqlite3; the "
                    "offline builtin judge is never cached)")
    ex.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    ex.add_argument("--max-response-bytes", type=int, metavar="N",
                    help="the largest reply read from a model server, in bytes (default: 8 "
                    "MiB); a larger one is a failed call, refused before more of it is read")
    ex.add_argument("--refresh", action="store_true",
                    help="call the models again and overwrite what the cache holds")
    return ex
# fmt: on


# fmt: off
def add_threshold_options(p: Any) -> None:
    """The gate's options (thresholds, inconclusive handling), on a parser or an argument group."""
    p.add_argument("--threshold", action="append", default=[], metavar="CATEGORY=RATE",
                   help="minimum pass rate for a category, e.g. amount_extraction=1.0 or =95%% "
                   "(repeatable)")
    p.add_argument("--default-threshold", metavar="RATE",
                   help="threshold for categories without their own (default: none, such "
                   "categories are reported but do not gate)")
    p.add_argument("--inconclusive", choices=["pass", "block"],
                   help="what a category does whose rate meets its threshold but whose 95%% "
                   "interval reaches below it: pass (the default, marked inconclusive with the "
                   "cases needed) or block (the interval must clear the threshold)")
    p.add_argument("--gate-on", choices=["rate", "lower"],
                   help="older spelling: rate is --inconclusive pass, lower is --inconclusive "
                   "block")
    p.add_argument("--allow-unchecked", action="store_true", default=None,
                   help="decide a gated category with unchecked cases on its rate (they count "
                   "as not passed); by default it blocks")
# fmt: on


def gate_options(args: argparse.Namespace) -> dict[str, Any]:
    """The gate keywords of :func:`tinyeval.gating.gate` from the command's options."""
    from ..session import parse_thresholds

    older = {"lower": "block", "rate": "pass", None: None}[args.gate_on]
    if args.inconclusive and older and older != args.inconclusive:
        raise UsageError(f"--gate-on {args.gate_on} and --inconclusive {args.inconclusive} "
                         "contradict each other; give one")  # fmt: skip
    return {
        "thresholds": parse_thresholds(args.threshold),
        "default_threshold": args.default_threshold,
        "inconclusive": args.inconclusive or older,
        "allow_unchecked": args.allow_unchecked,
    }


# fmt: off
def add_report_files(p: argparse.ArgumentParser) -> None:
    p.add_argument("--junit", metavar="FILE",
                   help="also write JUnit XML: a test per category, failing when it blocks, and "
                   "a test per case (failures the gate tolerates are skipped)")
    p.add_argument("--markdown", metavar="FILE",
                   help="also write the gate table as Markdown (for a PR comment)")
    p.add_argument("--html", metavar="FILE",
                   help="also write a self-contained HTML report (table, chart, judge, every "
                   "failed case)")
    p.add_argument("--github", action="store_true",
                   help="append the summary to $GITHUB_STEP_SUMMARY and print ::error/::warning "
                   "annotations (on by default when GITHUB_STEP_SUMMARY is set)")
# fmt: on


def write_reports(
    args: argparse.Namespace,
    rows: Any,
    report: Any,
    *,
    run_info: Any = None,
    cases_file: Any = None,
) -> None:
    """Write the --junit, --markdown and --html files asked for and, in GitHub Actions (or
    with --github), the job summary; print the annotations. ``rows``: rows or a results file."""
    from ..report import write_reports as write

    written = write(report, rows, junit=args.junit, markdown=args.markdown, html=args.html,
                    github=args.github or None, run_info=run_info,
                    cases_file=cases_file)  # fmt: skip
    if args.github and written.step_summary is None:
        print(f"{PROG}: --github: GITHUB_STEP_SUMMARY is not set, so no job summary was "
              "written; the annotations follow", file=sys.stderr)  # fmt: skip
    for command in written.annotations:
        print(command)


class StatusLine:
    """A run's :class:`~tinyeval.session.Progress` as one self-overwriting line on a terminal,
    redrawn at most ten times a second; nothing unless ``stream`` is a terminal, so piped
    output stays clean."""

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
