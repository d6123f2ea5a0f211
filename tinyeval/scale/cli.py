"""``tinyeval cost``: what a judged run will call and spend, or what a finished one spent."""

from __future__ import annotations

import argparse
from typing import Any

from ..cli._common import (
    EXIT_OK,
    UsageError,
    print_json,
    print_plan,
)


# fmt: off
def add_cost(sub: Any) -> None:
    p = sub.add_parser(
        "cost",
        help="estimate the judge calls, tokens and dollars of a run (or add up a finished one)",
        description="From a cases file or a suite file: every prompt the run would send, "
        "rendered and counted, as run --dry-run does. By hand: cases × votes × orders judge "
        "calls, their tokens and, with --price, their cost. After a run: --results adds up the "
        "token usage recorded in the result rows. Prices are given by you (USD per million "
        "tokens): there is no built-in price list, because prices change.",
    )
    p.add_argument("cases_file", nargs="?", metavar="CASES",
                   help="a cases file: render and count the calls of a run over it")  # fmt: skip
    p.add_argument("--config", metavar="FILE",
                   help="a suite file: its cases, judges and models (the one found here or "
                   "above, when CASES is given without it, is not used)")  # fmt: skip
    p.add_argument("--criterion", action="append", default=[], metavar="TEXT|NAME",
                   help="with CASES: a criterion to judge (repeatable)")  # fmt: skip
    p.add_argument("--judge-category", action="append", metavar="CATEGORY",
                   help="with CASES: judge only cases of this category (repeatable)")
    p.add_argument("--judge-model", metavar="SPEC", help="with CASES: the judge model")
    p.add_argument("--generate-model", metavar="SPEC", help="with CASES: the generate model")
    p.add_argument("--trials", type=int, default=1, metavar="K",
                   help="with CASES: generations per case (default: 1)")  # fmt: skip
    p.add_argument("--cases", dest="n_cases", type=int, metavar="N",
                   help="by hand: the number of cases to judge")  # fmt: skip
    p.add_argument("--tokens-in", type=int, metavar="N", help="input tokens per judge call")
    p.add_argument("--tokens-out", type=int, metavar="N", help="output tokens per judge call")
    p.add_argument("--votes", type=int, default=1, metavar="N",
                   help="judge samples per case (default: 1)")
    p.add_argument("--orders", type=int, default=1, metavar="N",
                   help="2 for a pairwise judge asked in both orders (default: 1)")
    p.add_argument("--price", metavar="in=X,out=Y",
                   help="USD per million input and output tokens, e.g. in=1.0,out=5.0")
    p.add_argument("--results", metavar="FILE",
                   help="instead of estimating, add up the usage recorded in a results file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    # the run settings a cost of CASES takes from no option of its own: the run's defaults
    p.set_defaults(handler=_cmd_cost, fields=[], thresholds=[], default_threshold=None,
                   inconclusive=None, allow_unchecked=None, shard=None)
# fmt: on


def _cmd_cost(args: argparse.Namespace) -> int:
    from .cost import estimate, parse_price

    if args.cases_file or args.config:
        return _cost_of_a_run(args)
    price = parse_price(args.price) if args.price else None
    if args.results:
        return _cost_of_results(args.results, price, as_json=args.json)
    needed = {
        "--cases": args.n_cases,
        "--tokens-in": args.tokens_in,
        "--tokens-out": args.tokens_out,
    }
    missing = [option for option, value in needed.items() if value is None]
    if missing:
        raise UsageError(f"cost needs {', '.join(missing)} (or CASES, or --results FILE)")
    result = estimate(*needed.values(), votes=args.votes, orders=args.orders, price=price)
    if args.json:
        print_json(result.to_dict())
    elif price is None:
        print(f"{result} Pass --price in=X,out=Y (USD per million tokens) for one.")
    else:
        print(result)
    return EXIT_OK


def _cost_of_a_run(args: argparse.Namespace) -> int:
    """The dry run of a run over CASES (or the suite's cases): its calls, tokens and cost."""
    from ..cli.run import settings_from
    from ..session import Session

    args.cases = args.cases_file
    with Session(settings_from(args)) as session:
        plan = session.dry_run(session.prepare())
    print_plan(plan, session.price, as_json=args.json)
    return EXIT_OK


def _cost_of_results(path: str, price: Any, *, as_json: bool) -> int:
    from ..records import read_rows
    from .rows_cost import cost_of_rows

    found = cost_of_rows(read_rows(path), price, source=path)
    if as_json:
        print_json(found.to_dict())
    elif found.usd is None and found.rows > found.rows_without_usage:
        print(str(found).removesuffix(".") + " (--price in=X,out=Y, USD per million tokens).")
    else:
        print(found)
    return EXIT_OK
