"""The suite file on the command line: ``run`` reads one, ``tinyeval init`` writes a starter.

``run`` uses a suite when ``--config FILE`` is given, or when no CASES is given
and a ``tinyeval.toml`` (or ``[tool.tinyeval]`` in ``pyproject.toml``) is found
in the working directory or above. Options given on the command line win over
the file, and the run says which ones did.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._common import EXIT_OK, UsageError

# (name, function adding the sub-command's parser); collected by tinyeval.cli
COMMANDS: list[tuple[str, Callable[[Any], None]]] = []


def given(args: argparse.Namespace, name: str) -> bool:
    """Whether the option ``name`` was given on the command line (it differs from its default)."""
    defaults = getattr(args, "option_defaults", {})
    return getattr(args, name, None) != defaults.get(name)


def apply_suite(args: argparse.Namespace) -> Any:
    """Fill the run's options the command line left out from the suite file, if one applies.

    Returns the suite (None when none applies). Judges come from the suite only
    when no ``--criterion`` or ``--rubric`` was given.
    """
    from ..session import suite_options
    from ..suite import find_suite, load_suite

    if args.config:
        suite = load_suite(args.config)
    elif args.cases is None:
        if find_suite(".") is None:
            raise UsageError(
                "give a CASES file, or write a suite file (tinyeval init) so that "
                "tinyeval run knows what to run"
            )
        suite = load_suite(start=".")
    else:
        return None
    options = suite_options(suite)
    overridden: list[str] = []
    cases = options.pop("cases")
    if args.cases is None:
        args.cases = cases
    elif cases and os.path.abspath(args.cases) != os.path.abspath(cases):
        overridden.append("cases")
    if args.cases is None:
        raise UsageError(f"{suite.path}: cases: the suite names no cases file")
    fields = [f"{key}={path}" for key, path in options.pop("fields").items()]
    if fields and args.field:
        overridden.append("fields")
    args.field = [*fields, *args.field]
    thresholds = options.pop("thresholds")
    for item in args.threshold:  # the command line wins, category by category
        category, _, rate = item.partition("=")
        if category.strip() in thresholds:
            overridden.append(f"thresholds.{category.strip()}")
        thresholds[category.strip()] = rate.strip()
    args.threshold = [f"{k}={v}" for k, v in thresholds.items()]
    if given(args, "inconclusive") or given(args, "gate_on"):
        options.pop("inconclusive")
    judges = options.pop("judges")
    if not (args.criterion or args.rubric) and judges:
        args.suite_judges = judges
    for name, value in options.items():
        if value is None:
            continue
        if given(args, name):
            overridden += [name] if getattr(args, name) != value else []
        else:
            setattr(args, name, value)
    args.suite_overridden = overridden
    return suite


# fmt: off
def _add_init(sub: Any) -> None:
    p = sub.add_parser(
        "init",
        help="write a commented starter suite file, tinyeval.toml",
        description="Write a commented tinyeval.toml in the working directory "
        "(or PATH): the cases file, thresholds, judges and reports of a suite, "
        "so that `tinyeval run` needs no options. It refuses to write over an "
        "existing file.",
    )
    p.add_argument("path", nargs="?", default="tinyeval.toml", metavar="PATH")
    p.set_defaults(handler=_cmd_init)


# fmt: on


def _cmd_init(args: argparse.Namespace) -> int:
    from ..records import write_text_atomically
    from ..suite import starter_text

    target = Path(args.path)
    if target.exists():
        raise UsageError(f"{target} exists already; edit it, or give another PATH")
    write_text_atomically(target, starter_text())
    print(f"wrote {target}: set cases, thresholds and judges, then run `tinyeval run`")
    return EXIT_OK


COMMANDS.append(("init", _add_init))
