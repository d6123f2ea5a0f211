"""What the commands share: exit codes, the usage error, option groups and small helpers."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

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


def proportion(text: str) -> float:
    """An argparse type for a proportion typed as ``0.2`` or ``20%``.

    >>> proportion("20%"), proportion("0.05")
    (0.2, 0.05)
    """
    number = text.strip()
    scale = 100.0 if number.endswith("%") else 1.0
    return float(number.removesuffix("%")) / scale  # a ValueError becomes argparse's message


def plural(n: int, noun: str) -> str:
    """``3 cases``, ``1 case``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def parse_key_value(text: str, *, option: str) -> tuple[str, str]:
    """Split ``KEY=VALUE`` as given to a repeatable option such as ``--threshold``.

    >>> parse_key_value("amount_extraction=1.0", option="--threshold")
    ('amount_extraction', '1.0')
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{option} expects KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare the paths
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_overwriting(inputs: list[str], outputs: list[tuple[str, str | None]]) -> None:
    """An output that is an input, or two outputs that are one file, would lose data."""
    given = [(option, path) for option, path in outputs if path]
    for option, path in given:
        for source in inputs:
            if source != "-" and same_file(source, path):
                raise UsageError(f"{option} {path} is the input file {source}; write elsewhere")
    for i, (option, path) in enumerate(given):
        for other, other_path in given[i + 1 :]:
            if same_file(path, other_path):
                raise UsageError(f"{option} and {other} are the same file {path}")


def refuse_unknown_categories(
    option: str, names: Any, known: Any, *, only_typos: bool = False
) -> None:
    """Refuse category names that no case has. With ``only_typos``, only those that look like
    a misspelling of one that does (a category that vanished must still block the gate).

    >>> refuse_unknown_categories("--threshold", ["tone"], {"tone", "amounts"})
    >>> refuse_unknown_categories("--threshold", ["amount"], {"tone", "amounts"})
    Traceback (most recent call last):
    ...
    tinyeval.cli._common.UsageError: --threshold: no case has the category 'amount'; did you ...
    """
    import difflib

    listed = sorted(known)
    for name in names:
        if name in known:
            continue
        close = difflib.get_close_matches(name, listed, n=1)
        if close or not only_typos:
            hint = (
                f"did you mean {close[0]!r}?"
                if close
                else f"the categories are {', '.join(listed)}"
            )
            raise UsageError(f"{option}: no case has the category {name!r}; {hint}")


def thresholds_from(items: list[str]) -> dict[str, str]:
    """--threshold CATEGORY=RATE options as a dict; a category given twice is an error."""
    thresholds: dict[str, str] = {}
    for item in items:
        category, rate = parse_key_value(item, option="--threshold")
        if category in thresholds:
            raise UsageError(f"--threshold: the category {category!r} is given twice")
        thresholds[category] = rate
    return thresholds


def add_model_options(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Options shared by the commands that call models (run, pairwise)."""
    ex = p.add_argument_group("calling models")
    ex.add_argument(
        "--base-url",
        metavar="URL",
        help="base URL of an OpenAI-compatible server (default: $OPENAI_BASE_URL)",
    )
    ex.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="timeout of one model call (default: 60)",
    )
    ex.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        metavar="T",
        help="sampling temperature sent to models (default: 0, recorded in each row; "
        "repeated samples, such as votes, differ only above 0)",
    )
    ex.add_argument(
        "--judge-max-tokens",
        type=int,
        default=256,
        metavar="N",
        help="longest judge reply to ask for (default: 256; a verdict is a line and a sentence)",
    )
    ex.add_argument(
        "--concurrency",
        type=int,
        default=4,
        metavar="N",
        help="cases in flight at once (default: 4)",
    )
    ex.add_argument(
        "--cache",
        default=".tinyeval/cache.sqlite3",
        metavar="PATH",
        help="response cache for model calls (default: .tinyeval/cache.sqlite3; "
        "the offline builtin judge is never cached)",
    )
    ex.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    ex.add_argument(
        "--refresh",
        action="store_true",
        help="call the models again and overwrite what the cache holds",
    )
    return ex


def open_model(
    args: argparse.Namespace, spec: str, *, max_tokens: int | None, cache: Any
) -> tuple[Any, Any]:
    """Resolve a model spec with the command's options; wrap it in the cache unless told not to.

    Returns the model and the cache (opened on first need, shared by later models).
    """
    from ..models import resolve

    model = resolve(
        spec,
        base_url=args.base_url,
        timeout=args.timeout,
        temperature=args.temperature,
        max_tokens=max_tokens,
    )
    if args.no_cache or spec == "builtin":
        return model, cache
    from ..cache import ResponseCache, cached

    cache = cache if cache is not None else ResponseCache(args.cache)
    return cached(model, cache, refresh=args.refresh), cache


def add_threshold_options(p: Any) -> None:
    """--threshold, --default-threshold and --gate-on, on a parser or an argument group."""
    p.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="CATEGORY=RATE",
        help="minimum pass rate for a category, e.g. amount_extraction=1.0 or =95%% (repeatable)",
    )
    p.add_argument(
        "--default-threshold",
        metavar="RATE",
        help="threshold for categories without their own (default: none, "
        "such categories are reported but do not gate)",
    )
    p.add_argument(
        "--gate-on",
        choices=["rate", "lower"],
        default="rate",
        help="gate on the observed rate (default) or on the lower end of its 95%% Wilson interval",
    )


def add_report_files(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--junit", metavar="FILE", help="also write JUnit XML: a test per case, and the gate"
    )
    p.add_argument(
        "--markdown",
        metavar="FILE",
        help="also write the gate table as Markdown (for a PR comment)",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML report (table, chart, judge, every failed case)",
    )


def write_reports(
    args: argparse.Namespace, rows: Any, report: Any, *, run_info: dict[str, Any] | None = None
) -> None:
    """Write the --junit, --markdown and --html files asked for, each all or nothing.

    ``rows`` is a function returning the result rows, called only when a file needs them.
    """
    from ..files import write_text_atomically
    from ..report import html_report, junit_xml, summary_markdown

    if args.junit:
        write_text_atomically(args.junit, junit_xml(list(rows()), report) + "\n")
    if args.markdown:
        write_text_atomically(args.markdown, summary_markdown(report) + "\n")
    if args.html:
        write_text_atomically(args.html, html_report(list(rows()), report, run_info=run_info))


def write_records(path: str, records: list[dict[str, Any]]) -> None:
    """Write records as JSON lines, all or nothing."""
    from ..files import write_text_atomically

    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    write_text_atomically(path, text)
