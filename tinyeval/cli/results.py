"""Commands over results files: ``gate``, ``report``, ``merge``, ``split`` and ``compare``."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from .. import _extra
from ..errors import InputError, key_values, plural
from ..gating import FAIL_ON, compare_holdout, compare_runs, holdout_text, rank_runs
from ..records import completeness, merge_rows, read_rows, write_records
from ..suite import RunSettings
from ._common import (
    EXIT_GATE_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
    PROG,
    UsageError,
    add_github,
    add_settings,
    print_json,
    proportion,
    write_reports,
)

_GATE_AND_REPORT = {
    "gate": "the per-category table and gate of a results file (e.g. merged shards), run "
    "again; exit 1 when a category blocks",
    "report": "the table and the --html/--junit/--markdown files of a results file; exit 0 "
    "whatever the gate says",
}
_GATE = list(RunSettings(cases="").gate_options(recorded=True))
_SALT = "tinyeval-holdout"
_REPORTS = ("junit", "markdown", "html")


def _add_holdout(p: Any, help: str, **more: Any) -> None:
    p.add_argument("--holdout", type=proportion, metavar="FRACTION", help=help, **more)
    p.add_argument("--salt", default=_SALT, help=f"salt of the holdout hash (default: {_SALT})")


def add_gate_and_report(sub: Any) -> None:
    for name, summary in _GATE_AND_REPORT.items():
        p = sub.add_parser(name, help=summary)
        p.add_argument("results", metavar="RESULTS", help="a results file written by tinyeval run")
        add_settings(p, *_GATE, "calibration")
        held = "also compare the development cases with the held-out ones, split as tinyeval "
        _add_holdout(p, held + "split does (e.g. 0.2); the gate itself is unchanged")
        p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
        add_settings(p, *_REPORTS)
        add_github(p)
        p.set_defaults(handler=_cmd_gate)


def _cmd_gate(args: argparse.Namespace) -> int:
    from ..report import rows_header, summarize_rows
    from ..session import refuse_overwriting

    refuse_overwriting([args.results], {name: getattr(args, name) for name in _REPORTS})
    rows = read_rows(args.results)
    if not rows:
        raise UsageError(f"{args.results}: no result rows")
    gate = {name: getattr(args, name) for name in (*_GATE, "calibration")}
    gate["thresholds"] = key_values(args.thresholds, "CATEGORY=RATE", field="thresholds")
    summary = summarize_rows(rows, source=args.results, gate=gate)
    holdout = compare_holdout(rows, args.holdout, salt=args.salt) if args.holdout else None
    if args.json:
        held = {"holdout": {c.category: c.to_dict() for c in holdout}} if holdout else {}
        print_json({**summary.to_dict(), **held})
    else:
        print(summary.to_text(rows_header(summary)))
        if holdout is not None:
            print(holdout_text(holdout, held_out=args.holdout, salt=args.salt))
    cases_file = (rows[0].get("run") or {}).get("cases_file")  # a row's run is an object
    write_reports(args, rows, summary.report, run_info=summary.info, cases_file=cases_file)
    if not summary.complete:
        return EXIT_INCOMPLETE
    return EXIT_OK if summary.passed or args.command == "report" else EXIT_GATE_FAILED


def add_merge(sub: Any) -> None:
    help = "join the results of shards (run --shard I/N) into one file: each shard once, all "
    p = sub.add_parser("merge", help=help + "there, no case twice, the same run settings in each")
    p.add_argument("results", nargs="+", metavar="RESULTS", help="result files to join")
    p.add_argument("--out", required=True, metavar="FILE", help="the joined results file")
    partial = "merge even when shards or cases are missing (the result is incomplete: exit 3"
    p.add_argument("--allow-partial", action="store_true", help=partial + ", gate on it too)")
    p.set_defaults(handler=_cmd_merge)


def _cmd_merge(args: argparse.Namespace) -> int:
    from ..session import refuse_overwriting

    refuse_overwriting(args.results, {"out": args.out})
    sources = [(path, read_rows(path)) for path in args.results]
    merged = merge_rows(sources, allow_partial=args.allow_partial)
    write_records(args.out, merged)  # all or nothing: never a half-merged file
    found = completeness(merged)
    print(
        f"merged {plural(len(merged), 'row')} from {plural(len(sources), 'file')} into "
        f"{args.out}{'' if found.complete else f'; {found}'}"
    )
    return EXIT_OK if found.complete else EXIT_INCOMPLETE


def add_split(sub: Any) -> None:
    help = "split cases into development and holdout sets by a hash of the id and the salt "
    p = sub.add_parser("split", help=help + "(a case never moves as the file grows)")
    p.add_argument("cases", metavar="CASES", help="the cases file")
    _add_holdout(p, "share of cases held out (default: 0.2)", default=0.2)
    p.add_argument("--dev-out", required=True, metavar="FILE", help="where development cases go")
    p.add_argument("--holdout-out", required=True, metavar="FILE", help="where holdout cases go")
    add_settings(p, "fields")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(handler=_cmd_split)


def _cmd_split(args: argparse.Namespace) -> int:
    from ..dataset import Case, load, parse_field_mapping, split_holdout
    from ..session import refuse_overwriting

    refuse_overwriting([args.cases], {"dev_out": args.dev_out, "holdout_out": args.holdout_out})
    cases = load(args.cases, fields=parse_field_mapping(args.fields))
    dev, holdout = split_holdout(cases, args.holdout, salt=args.salt)
    for path, part in ((args.dev_out, dev), (args.holdout_out, holdout)):
        write_records(path, map(Case.to_record, part))
    if args.json:
        counts = {"cases": len(cases), "dev": len(dev), "holdout": len(holdout), "salt": args.salt}
        print_json({**counts, "dev_out": args.dev_out, "holdout_out": args.holdout_out})
    else:
        print(
            f"{len(cases)} cases: {len(dev)} for development in {args.dev_out}, "
            f"{len(holdout)} held out in {args.holdout_out} (salt {args.salt!r})"
        )
    return EXIT_OK


def add_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="per category, the change from one run to the next: the cases fixed and broken, "
        "the change with its 95%% interval, McNemar's exact p, a decision; with more runs, a rank",
    )
    p.add_argument("runs", nargs="+", metavar="RESULTS", help="the earlier run, the later one")
    p.add_argument("--alpha", type=proportion, default=0.05, help="significance (default: 0.05)")
    margin = "decide 'not worse by more than M' (points, e.g. 2, or a fraction, e.g. 0.02)"
    p.add_argument("--margin", type=_margin, metavar="M", help=margin)
    p.add_argument("--interval", choices=("newcombe", "tango"), default="newcombe", help="of Δ")
    p.add_argument("--adjust", choices=("holm", "none"), default="holm", help="across categories")
    fail = "exit 1 when a category is worse (not-noninferior: or not shown within --margin)"
    p.add_argument("--fail-on", choices=FAIL_ON, help=fail)
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    p.set_defaults(handler=_cmd_compare)


def _margin(text: str) -> float:
    """``--margin``: points from 1 up (``2``), a fraction below 1 (``0.02``)."""
    value = float(text) if text.replace(".", "", 1).isdigit() else -1.0
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected points (2) or a fraction (0.02), got {text!r}")
    return value / 100 if value >= 1 else value


def _cmd_compare(args: argparse.Namespace) -> int:
    from ..suite import find_suite, load_suite

    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {args.alpha}")
    if len(args.runs) == 1 or (len(args.runs) > 2 and (args.fail_on or args.margin is not None)):
        raise UsageError(
            "compare takes two results files, or more to rank (not with --margin, --fail-on)"
        )
    if args.margin is None and len(args.runs) == 2 and (found := find_suite(".")) is not None:
        args.margin = load_suite(found).margin  # the suite file's, when there is one
    if args.fail_on == "not-noninferior" and args.margin is None:
        raise UsageError("--fail-on not-noninferior needs --margin (or the suite file's margin)")
    runs = [(path, read_rows(path)) for path in args.runs]
    if len(runs) > 2:
        ranked = rank_runs(runs, alpha=args.alpha, adjust=args.adjust)
        if args.json:
            print_json({"ranking": [{"run": c.category, **c.to_dict()} for c in ranked]})
        else:
            print(f"ranked by pass rate, each against the best, {ranked[0].category}:")
            width = max(len(c.category) for c in ranked)
            print("\n".join(c.to_text(width, c.p != c.p_adjusted) for c in ranked))
        return EXIT_OK
    options = {"margin": args.margin, "interval": args.interval, "adjust": args.adjust}
    report = compare_runs(runs[0][1], runs[1][1], alpha=args.alpha, **options)
    failing = report.failing(args.fail_on) if args.fail_on else []
    if args.json:
        print_json({**report.to_dict(), "alpha": args.alpha, **options, "failing": failing})
    else:
        print(report.to_text(before=args.runs[0], after=args.runs[1]))
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return EXIT_GATE_FAILED if failing else EXIT_OK


def add_calibrate(sub: Any) -> None:
    help = "compare the judge with your labels, joined by id: agreement, failure recall, false "
    help += "alarms, Cohen's kappa; with several labelers (tinyeval/humans/), their agreement too"
    p = sub.add_parser("calibrate", help=help)
    p.add_argument("results", metavar="RESULTS", help="result rows written by tinyeval run")
    p.add_argument("labels", metavar="LABELS", help="the labels file written by tinyeval label")
    p.add_argument("--judge", metavar="NAME", help="the judge of the rows to calibrate")
    p.add_argument("--only", metavar="FILE", help="score only the ids in FILE")
    p.add_argument("--disagreements", metavar="FILE", help="write the rows judge and you differ on")
    p.add_argument("--save", metavar="CAL.json", help="save it, for tinyeval run --calibration")
    field = "read LABELS through a field mapping: KEY is id, label, labeler or at (repeatable)"
    p.add_argument("--field", action="append", default=[], metavar="KEY=PATH", help=field)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_cmd_calibrate, report=None)
    with contextlib.suppress(InputError):  # a copy without tinyeval/humans/
        _extra("command", "calibrate")(p)  # sets ``report``: several labelers, jurors, PPI


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from ..calibration import calibrate_results, disagreement_rows, parse_label_fields, read_labels
    from ..session import case_ids, refuse_overwriting, same_file

    if same_file(args.results, args.labels):
        raise UsageError(f"RESULTS and LABELS are the same file {args.results}")
    outputs = {"save": args.save, "disagreements": args.disagreements}
    refuse_overwriting([args.results, args.labels, args.only], outputs)
    rows = read_rows(args.results)
    fields, only = parse_label_fields(args.field), case_ids(args.only)
    if args.report is not None:
        report = args.report(args, rows, fields, only)
        calibration, labels = report.calibration, report.reference
    else:
        labels = read_labels(args.labels, fields=fields)
        several = {str(record.get("labeler")) for record in labels.values()}
        if len(several) > 1 or any(record.get("adjudicated") is True for record in labels.values()):
            _extra("command", "calibrate", "labels of several labelers")  # says what is missing
        report = calibration = calibrate_results(rows, labels, judge=args.judge, only=only)
    for warning in calibration.expired:
        print(f"{PROG}: WARNING: {warning}", file=sys.stderr)
    notes = []
    if args.disagreements:
        found = disagreement_rows(calibration, rows, labels)
        write_records(args.disagreements, found)  # all or nothing, like every other output
        notes.append(f"wrote {len(found)} disagreements to {args.disagreements}")
    if args.save:
        calibration.save(args.save)
        notes.append(f"saved the calibration to {args.save}")
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.to_text())
    for note in notes:  # on stderr beside --json, so the standard output stays one object
        print(f"{PROG}: {note}" if args.json else note, file=sys.stderr if args.json else None)
    return EXIT_OK
