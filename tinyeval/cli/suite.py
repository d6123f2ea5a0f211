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
    if len(suite.cases) > 1:
        raise UsageError(f"{suite.path}: cases: one cases file per run (got {len(suite.cases)})")
    overridden: list[str] = []

    def fill(name: str, value: Any, *, key: str | None = None) -> None:
        if value is None:
            return
        if given(args, name):
            if getattr(args, name) != value:
                overridden.append(key or name)
            return
        setattr(args, name, value)

    if args.cases is None:
        args.cases = suite.cases[0] if suite.cases else None
    elif suite.cases and os.path.abspath(args.cases) != os.path.abspath(suite.cases[0]):
        overridden.append("cases")
    if args.cases is None:
        raise UsageError(f"{suite.path}: cases: the suite names no cases file")
    file_fields = [f"{key}={path}" for key, path in suite.fields.items()]
    fill("field", [*file_fields, *args.field] if args.field else file_fields or None)
    fill("format", suite.format)
    fill("id_from_line", suite.id_from_line or None)
    fill("concurrency", suite.concurrency)
    thresholds = {**{k: str(v) for k, v in suite.thresholds.items()}}
    for item in args.threshold:  # the command line wins, category by category
        category, _, rate = item.partition("=")
        if category.strip() in thresholds:
            overridden.append(f"thresholds.{category.strip()}")
        thresholds[category.strip()] = rate.strip()
    args.threshold = [f"{k}={v}" for k, v in thresholds.items()]
    fill("default_threshold", None if suite.default_threshold is None
         else str(suite.default_threshold))  # fmt: skip
    if suite.inconclusive is not None or suite.gate_on != "rate":
        policy = suite.inconclusive or {"lower": "block", "rate": "pass"}[suite.gate_on]
        if not (given(args, "inconclusive") or given(args, "gate_on")):
            args.inconclusive = policy
    fill("allow_unchecked", suite.allow_unchecked or None)
    if not (args.criterion or args.rubric) and suite.judges:
        args.suite_judges = suite.judges
    _apply_models(args, suite, fill)
    fill("price", suite.price)
    fill("out", suite.out)
    fill("junit", suite.junit)
    fill("markdown", suite.markdown)
    fill("html", suite.html)
    args.suite_overridden = overridden
    return suite


def _apply_models(args: argparse.Namespace, suite: Any, fill: Callable[..., None]) -> None:
    judge, generate = suite.judge_model, suite.generate_model
    if judge is not None:
        fill("judge_model", judge.spec)
        fill("judge_max_tokens", judge.max_tokens)
    if generate is not None:
        fill("generate_model", generate.spec)
        fill("max_tokens", generate.max_tokens)
        fill("prompt_template", generate.prompt_template)
    for name in ("temperature", "timeout", "base_url"):
        values = {getattr(m, name) for m in (judge, generate) if m is not None} - {None}
        if len(values) > 1:
            raise UsageError(
                f"{suite.path}: models: the judge and generate models differ in {name}; "
                "one value is used for both"
            )
        if values:
            fill(name, values.pop())


# fmt: off
def _add_init(sub: Any) -> None:
    p = sub.add_parser("init", help="write a commented starter suite file, tinyeval.toml",
                       description="Write a commented tinyeval.toml in the working directory "
                       "(or PATH): the cases file, thresholds, judges and reports of a suite, "
                       "so that `tinyeval run` needs no options. It refuses to write over an "
                       "existing file.")
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
