"""The suite file on the command line: ``run`` reads one, ``tinyeval init`` writes a starter.

``run`` uses a suite when ``--config FILE`` is given, or when no CASES is given
and a ``tinyeval.toml`` (or ``[tool.tinyeval]`` in ``pyproject.toml``) is found
in the working directory or above. Options given on the command line win over
the file, and the run says which ones did.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._common import EXIT_OK, UsageError


def suite_of(args: argparse.Namespace) -> Any:
    """The suite file that applies to a run: ``--config FILE``, or with no CASES the one found
    here or above; None when CASES is given without ``--config``."""
    from ..suite import find_suite, load_suite

    if args.config:
        return load_suite(args.config)
    if args.cases is not None:
        return None
    found = find_suite(".")  # looked for once: it may read every pyproject.toml above
    if found is None:
        raise UsageError("give a CASES file, or write a suite file (tinyeval init) so that "
                         "tinyeval run knows what to run")  # fmt: skip
    return load_suite(found)


# fmt: off
def add_init(sub: Any) -> None:
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
