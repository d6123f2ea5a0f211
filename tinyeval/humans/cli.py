"""``tinyeval label`` and ``tinyeval calibrate``: human labels, and the judge against them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..cli._common import (
    EXIT_OK,
    UsageError,
    print_json,
    proportion,
)


def add_label(sub: Any) -> None:
    p = sub.add_parser(
        "label",
        help="label result rows by hand, blind to the judge (resumable)",
        description="Show the cases of RESULTS one at a time (input, context, "
        "output; never the judge's verdict, checks or status) and append each "
        "label to LABELS at once. Keys: p PASS, f FAIL, s skip, u undo, q quit. "
        "Running the same command again resumes where it stopped. Without a "
        "terminal, stdin gives one key per line.",
    )
    p.add_argument("results", metavar="RESULTS", help="result rows written by tinyeval run")
    p.add_argument(
        "--out", required=True, metavar="LABELS", help="the labels file (JSON lines), appended to"
    )
    p.add_argument("--labeler", metavar="NAME", help="who is labelling (default: $USER)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the shuffled case order (default: 0)"
    )
    p.add_argument(
        "--break-every",
        type=int,
        default=25,
        metavar="N",
        help="suggest a break every N labels; 0 never (default: 25)",
    )
    keys = p.add_mutually_exclusive_group()
    keys.add_argument(
        "--grades", metavar="LOW-HIGH", help="label with grades instead of PASS/FAIL, e.g. 1-5"
    )
    keys.add_argument(
        "--choices", metavar="KEY=LABEL,...", help="label with other labels, e.g. a=A,b=B,t=TIE"
    )
    p.add_argument(
        "--judge",
        metavar="NAME",
        help="the judge whose rubric and model the labels record (default: the first)",
    )
    p.add_argument(
        "--all-rows",
        action="store_true",
        help="offer every row; by default, when some rows were judged, only those "
        "are offered (the ones calibration compares)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--budget",
        type=int,
        metavar="N",
        help="offer about N cases chosen by --strategy, each label recording its "
        "selection probability (what prediction-powered rates need)",
    )
    mode.add_argument(
        "--recheck",
        type=proportion,
        metavar="FRACTION",
        help="re-show FRACTION (0.1 or 10%%) of the cases you already labelled "
        "and report how often you agree with yourself (drift)",
    )
    mode.add_argument(
        "--adjudicate",
        action="store_true",
        help="walk the cases where labelers disagree, showing each one's label, "
        "and record the adjudicated label",
    )
    p.add_argument(
        "--strategy",
        choices=("random", "uncertain", "gate"),
        help="with --budget: random (a uniform sample, the default), uncertain "
        "(mostly the cases the judge is least sure of; every case keeps a chance) or gate "
        "(where the gated categories' intervals shrink most, by category and judge verdict)",
    )
    p.add_argument(
        "--pilot",
        metavar="LABELS",
        help="with --strategy gate: earlier labels (another file) that show where people and "
        "the judge differ, so the budget goes where they do",
    )
    _add_field(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON summary on stdout; the session itself goes to stderr",
    )
    p.set_defaults(handler=_cmd_label)


def _gate_plan(rows: list[Any], budget: int, seed: int, pilot: str | None) -> Any:
    """The ``gate`` strategy's plan: each open case offered with its chance, independently (the
    chances depend on the rows, the pilot and the seed only: a resumed session offers the same
    cases)."""
    import random

    from ..calibration import read_labels
    from .labelers import gate_probabilities
    from .session import LabelPlan

    if budget < 1:
        raise UsageError(f"--budget must be 1 or more, got {budget}")
    chances = gate_probabilities(rows, budget, read_labels(pilot) if pilot else None)
    draw = random.Random(seed)
    chosen = [key for key in sorted(chances) if draw.random() < chances[key]]
    draw.shuffle(chosen)
    ids = {str(row["id"]): row["id"] for row in rows}
    probabilities = {ids[key]: value for key, value in chances.items()}
    return LabelPlan("gate", budget, len(chances), tuple(ids[k] for k in chosen), probabilities)


def _add_field(p: Any) -> None:
    p.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="read LABELS through a field mapping: KEY is id, label, labeler or at, "
        "PATH a dotted path such as annotations.human (repeatable)",
    )


def _cmd_label(args: argparse.Namespace) -> int:
    from ..calibration import parse_label_fields
    from ..records import read_rows
    from ..session import refuse_overwriting
    from .session import label_session, parse_choices, parse_grades, plan_labels, rows_to_offer

    refuse_overwriting([args.results, args.pilot], {"out": args.out})
    if args.strategy and args.budget is None:
        raise UsageError("--strategy chooses the cases of a --budget: give --budget N too")
    fields = parse_label_fields(args.field)
    choices = parse_grades(args.grades) if args.grades else None
    if args.choices:  # --grades and --choices exclude each other
        choices = parse_choices(args.choices)
    stream = sys.stderr if args.json else sys.stdout

    def write(text: str) -> None:
        print(text, file=stream, flush=True)

    rows, note = rows_to_offer(read_rows(args.results), all_rows=args.all_rows)
    if note:
        write(f"{note} (--all-rows offers every row)")
    plan = None
    if args.pilot and args.strategy != "gate":
        raise UsageError("--pilot guides --strategy gate: give --strategy gate --budget N too")
    if args.strategy == "gate":
        plan = _gate_plan(rows, args.budget, args.seed, args.pilot)
    elif args.budget is not None:
        plan = plan_labels(
            rows, args.budget, strategy=args.strategy or "random", seed=args.seed, judge=args.judge
        )
    summary = label_session(
        rows,
        args.out,
        labeler=args.labeler,  # None: $USER, the login name, or "anonymous"
        seed=args.seed,
        write=write,
        break_every=args.break_every,
        choices=choices,
        judge=args.judge,
        plan=plan,
        recheck=args.recheck,
        adjudicate=args.adjudicate,
        fields=fields,
    )
    if args.json:
        print_json({**summary.to_dict(), "plan": plan.to_dict() if plan else None})
    return EXIT_OK


def extend_calibrate(p: Any) -> None:
    """The core's ``calibrate`` with this extra: several labelers' agreement and drift, the
    jury's jurors, and ``--estimate ppi``."""
    p.add_argument(
        "--estimate",
        choices=("ppi",),
        help="ppi: also print each category's prediction-powered pass rate (judge verdicts plus "
        "your labels) beside the raw and the labels-only rates",
    )
    p.set_defaults(report=_calibration_report)


def _calibration_report(args: argparse.Namespace, rows: Any, fields: Any, only: Any) -> Any:
    """What ``calibrate`` prints and saves, read labeler by labeler."""
    from .labelers import calibration_report, read_label_set

    label_set = read_label_set(args.labels, fields=fields)
    ppi = args.estimate == "ppi"
    return calibration_report(rows, label_set, judge=args.judge, ppi=ppi, only=only)
