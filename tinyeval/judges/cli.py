"""``tinyeval pairwise``: two runs' outputs judged against each other, in both orders."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..cli._common import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    PROG,
    UsageError,
    add_settings,
    print_json,
)
from ..records import write_records


# fmt: off
def add_pairwise(sub: Any) -> None:
    p = sub.add_parser("pairwise",
                       help="which of two runs answered better, each case asked in both orders",
                       description="Pair two results files by case id and ask a pairwise judge "
                       "which output is better on one criterion, always in both orders (A/B, "
                       "then B/A). A case has a winner only when both orders agree; the judge's "
                       "position consistency and first-position preference are reported.")
    p.add_argument("a", metavar="RESULTS_A", help="results whose outputs are response A")
    p.add_argument("b", metavar="RESULTS_B", help="results whose outputs are response B")
    p.add_argument("--criterion", required=True, metavar="TEXT|NAME",
                   help="the one property to compare on (text, or a built-in name)")
    p.add_argument("--judge-model", default="builtin", metavar="SPEC", help="default: builtin")
    p.add_argument("--category", action="append", metavar="CATEGORY",
                   help="compare only cases of this category (repeatable; default: all)")
    p.add_argument("--out", metavar="FILE",
                   help="write a result row per compared case (calibrate and label read them; "
                   "the label of a pairwise verdict is its winner)")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    add_settings(p, "base_url", "timeout", "temperature", "judge_max_tokens", "concurrency",
                 "cache", "no_cache", "max_response_bytes", "refresh")
    p.set_defaults(handler=_cmd_pairwise)
# fmt: on


def _cmd_pairwise(args: argparse.Namespace) -> int:
    from ..records import read_rows
    from ..session import open_model, refuse_overwriting
    from .pairwise import PairwiseJudge, PairwiseSummary, run_pairs

    refuse_overwriting([args.a, args.b], {"out": args.out})
    judge = PairwiseJudge(args.criterion)
    model, cache = open_model(args.judge_model, base_url=args.base_url, timeout=args.timeout,
                              temperature=args.temperature, max_tokens=args.judge_max_tokens,
                              max_response_bytes=args.max_response_bytes, cache_path=args.cache,
                              no_cache=args.no_cache, refresh=args.refresh)  # fmt: skip
    try:
        done = run_pairs(read_rows(args.a), read_rows(args.b), judge, model,
                         categories=args.category, concurrency=args.concurrency)  # fmt: skip
    finally:
        if cache is not None:
            cache.close()
    if done.stopped_reason:
        print(f"{PROG}: {done.stopped_reason}; nothing more was compared", file=sys.stderr)
        return EXIT_INCOMPLETE
    if not done.rows:
        raise UsageError(f"{args.a} and {args.b} share no case with an output on both sides")
    if args.out:
        write_records(args.out, done.rows)
    summary = PairwiseSummary.of(done, judge, judge_model=args.judge_model, a=args.a, b=args.b)
    if args.json:
        print_json(summary.to_dict())
    else:
        print(summary.to_text())
    return EXIT_OK
