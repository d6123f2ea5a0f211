"""``tinyeval init``: a commented starter suite file, ``tinyeval.toml``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..cli._common import EXIT_OK, UsageError

_STARTER = """\
# tinyeval suite: what `tinyeval run` (and `pytest --tinyeval`) evaluates, checked in.
# Paths are relative to this file. Command-line flags override what is set here.
# Reference: every key is optional except `cases`.

# The cases: one JSON object per line (or .json, .csv, .yaml); a list for several files.
cases = "cases.jsonl"

# The threshold of every category without one of its own (0 to 1, or "85%").
default_threshold = 0.8

# Your logs' field names, mapped onto tinyeval's (dotted paths allowed).
# [fields]
# input = "request.messages.0.content"
# output = "response.text"

# Your own keys in the cases' expect blocks: each one a built-in check (its value used
# as that check's), a check that reads the JSON output at a path, or "py:MODULE:FUNCTION",
# a function of yours called with (output, expected, case) that returns True, False,
# None (does not apply) or (bool, detail).
# [expect]
# cents_paid = { check = "equals", path = "amount_cents" }
# never_says = "not_contains"

# One threshold per category: a category under its threshold fails the gate,
# whatever the global rate.
[thresholds]
# amount_extraction = 1.0
# tone = "85%"

[gate]
# a rate at or above its threshold whose 95% interval reaches below it is inconclusive:
inconclusive = "pass"     # "pass" lets it through, marked; "block" demands the margin
allow_unchecked = false   # true: cases nothing checked stop blocking (still not passed)

# A judge for what code cannot check: one criterion, PASS/FAIL. Repeat [[judges]]
# for more. `criterion` is text or a built-in name (unsupported-claims,
# answers-the-question, refuses-when-ambiguous); `rubric` is a file instead.
# [[judges]]
# criterion = "unsupported-claims"
# categories = ["support_answers"]
# votes = 1                 # odd: 1, 3, 5
# style = "verdict-first"   # or "evidence-first"

# The judge's model: "builtin" needs no key and no network. API keys are read
# from the environment (e.g. OPENAI_API_KEY), never from this file.
[models.judge]
spec = "builtin"
# temperature = 0.0
# max_tokens = 512
# timeout = 60
# base_url = "http://127.0.0.1:8080/v1"

# A model to generate outputs for cases that have none.
# [models.generate]
# spec = "openai:gpt-4o-mini"
# prompt_template = "prompt.txt"   # a text file with {input}

# US dollars per million tokens, to report what a run cost.
# [price]
# in = 0.15
# out = 0.60

# The share of cases kept aside to check the suite is not tuned to its own cases.
# [holdout]
# fraction = 0.2
# salt = "tinyeval-holdout"

[reports]
out = "tinyeval-results.jsonl"
# junit = "tinyeval-junit.xml"
# markdown = "tinyeval-summary.md"
# html = "tinyeval-report.html"
"""


def starter_text() -> str:
    """A commented starter ``tinyeval.toml``: it loads as it is.

    >>> text = starter_text()
    >>> text.startswith("# tinyeval suite"), 'cases = "cases.jsonl"' in text
    (True, True)
    """
    return _STARTER


def add_init(sub: Any) -> None:
    p = sub.add_parser("init", help="write a commented starter suite file, tinyeval.toml")
    p.add_argument(
        "path", nargs="?", default="tinyeval.toml", metavar="PATH", help="never an existing file"
    )
    p.set_defaults(handler=_cmd_init)


def _cmd_init(args: argparse.Namespace) -> int:
    from ..records import write_text_atomically

    target = Path(args.path)
    if target.exists():
        raise UsageError(f"{target} exists already; edit it, or give another PATH")
    write_text_atomically(target, starter_text())
    print(f"wrote {target}: set cases, thresholds and judges, then run `tinyeval run`")
    return EXIT_OK
