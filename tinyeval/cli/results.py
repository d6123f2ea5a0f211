"""Commands over results files: ``gate``, ``report``, ``merge``, ``split`` and ``compare``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ._common import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    UsageError,
    add_report_files,
    add_threshold_options,
    plural,
    print_json,
    proportion,
    refuse_overwriting,
    refuse_unknown_categories,
    thresholds_from,
    write_records,
    write_reports,
)

# (name, function adding the sub-command's parser); collected by tinyeval.cli
COMMANDS: list[tuple[str, Callable[[Any], None]]] = []


def _add_gate(sub: Any) -> None:
    _add_results_command(
        sub,
        "gate",
        summary="apply per-category thresholds to a results file (e.g. merged shards); exit 1 "
        "when a category blocks",
        description="Recompute the per-category table and gate from result rows, without "
        "running anything. Exit 1 when a category blocks.",
        handler=_cmd_gate,
    )


def _add_report(sub: Any) -> None:
    _add_results_command(
        sub,
        "report",
        summary="render a results file: the table, and --html/--junit/--markdown files (exit 0)",
        description="The same table and files as gate, for reading rather than gating: "
        "it exits 0 whatever the thresholds say (bad input still exits 2).",
        handler=_cmd_report,
    )


def _add_results_command(
    sub: Any, name: str, *, summary: str, description: str, handler: Callable[..., int]
) -> None:
    p = sub.add_parser(name, help=summary, description=description)
    p.add_argument("results", metavar="RESULTS", help="a results file written by tinyeval run")
    add_threshold_options(p)
    p.add_argument(
        "--holdout",
        type=proportion,
        metavar="FRACTION",
        help="also compare the development cases with the held-out ones, split as "
        "tinyeval split does (e.g. 0.2); the gate itself is unchanged",
    )
    p.add_argument(
        "--salt", default="tinyeval-holdout", help="salt of the holdout split (as for split)"
    )
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    add_report_files(p)
    p.set_defaults(handler=handler)


def _cmd_gate(args: argparse.Namespace) -> int:
    from ..gating import gate
    from ..report import summary_dict, summary_text
    from ..runner import RunResult, read_rows

    refuse_overwriting(
        [args.results],
        [("--junit", args.junit), ("--markdown", args.markdown), ("--html", args.html)],
    )
    rows = read_rows(args.results)
    if not rows:
        raise UsageError(f"{args.results}: no result rows")
    result = RunResult()
    for row in rows:
        if not isinstance(row.get("category"), str):
            raise UsageError(f"{args.results}: row {row['id']!r} has no category")
        result.add(row, keep=False)
    thresholds = thresholds_from(args.threshold)
    refuse_unknown_categories("--threshold", thresholds, result.categories, only_typos=True)
    report = gate(
        result.categories, thresholds, default_threshold=args.default_threshold, on=args.gate_on
    )
    judged = sum(t.judged for t in result.categories.values())
    unparsed = sum(t.unparsed for t in result.categories.values())
    fingerprints = sorted({str(r.get("dataset_fingerprint") or "unknown") for r in rows})
    holdout_lines = _holdout_lines(args, rows) if args.holdout is not None else []
    if args.json:
        info = {"results": args.results, "rows": len(rows), "dataset_fingerprints": fingerprints}
        if args.holdout is not None:
            info["holdout"] = {c.category: c.to_dict() for c in holdout_lines}
        print_json(
            summary_dict(
                report, run_info=info, judged=judged, unparsed=unparsed, errors=result.errors
            )
        )
    else:
        header = (
            f"{plural(len(rows), 'row')} from {args.results} (dataset {', '.join(fingerprints)})\n"
        )
        print(
            summary_text(
                report, header=header, judged=judged, unparsed=unparsed, errors=result.errors
            )
        )
        if args.holdout is not None:
            print(_holdout_text(args, holdout_lines))
    write_reports(
        args,
        lambda: rows,
        report,
        run_info={"results": args.results, "rows": len(rows), "dataset_fingerprints": fingerprints},
    )
    return EXIT_OK if report.passed else EXIT_GATE_FAILED


def _cmd_report(args: argparse.Namespace) -> int:
    _cmd_gate(args)
    return EXIT_OK


def _holdout_lines(args: argparse.Namespace, rows: list[dict[str, Any]]) -> list[Any]:
    from ..dataset import in_holdout
    from ..gating import compare_holdout

    held = [in_holdout(r["id"], args.holdout, salt=args.salt) for r in rows]
    dev = [r for r, h in zip(rows, held, strict=True) if not h]
    return compare_holdout(dev, [r for r, h in zip(rows, held, strict=True) if h])


def _holdout_text(args: argparse.Namespace, lines: list[Any]) -> str:
    from ..stats import format_rate

    out = [f"\ndevelopment vs holdout ({args.holdout:g} held out, salt {args.salt!r}):"]
    width = max(len(c.category) for c in lines)
    dev = [format_rate(c.dev_passed, c.dev_total) for c in lines]
    dev_width = max(map(len, dev))
    mark = "  ← above what the holdout supports: tuned to the development cases?"
    for c, dev_rate in zip(lines, dev, strict=True):
        holdout = format_rate(c.holdout_passed, c.holdout_total)
        line = f"  {c.category:<{width}}  dev {dev_rate:<{dev_width}}   holdout {holdout}"
        out.append(line + (mark if c.suspicious else ""))
    return "\n".join(out)


def _add_merge(sub: Any) -> None:
    p = sub.add_parser(
        "merge",
        help="join the results of shards (run --shard I/N) into one file",
        description="Join result files into one. Every file must come from the same dataset "
        "(same fingerprint) and no case may appear twice.",
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="result files to join")
    p.add_argument("--out", required=True, metavar="FILE", help="the joined results file")
    p.set_defaults(handler=_cmd_merge)


def _cmd_merge(args: argparse.Namespace) -> int:
    from ..runner import read_rows

    refuse_overwriting(args.results, [("--out", args.out)])
    seen: dict[str, str] = {}
    fingerprints: dict[str, str] = {}
    merged: list[dict[str, Any]] = []
    for path in args.results:
        for row in read_rows(path):
            if row["id"] in seen:
                raise UsageError(f"case {row['id']!r} is in both {seen[row['id']]} and {path}")
            seen[row["id"]] = path
            fingerprints.setdefault(str(row.get("dataset_fingerprint")), path)
            merged.append(row)
    if len(fingerprints) > 1:
        (fp_a, path_a), (fp_b, path_b) = list(fingerprints.items())[:2]
        raise UsageError(
            f"{path_a} (dataset {fp_a}) and {path_b} (dataset {fp_b}) come from different datasets"
        )
    write_records(args.out, merged)  # all or nothing: never a half-merged file
    sources = plural(len(args.results), "file")
    print(f"merged {plural(len(merged), 'row')} from {sources} into {args.out}")
    return EXIT_OK


def _add_split(sub: Any) -> None:
    p = sub.add_parser(
        "split",
        help="split cases into development and holdout sets by a stable hash of the id",
        description="Write the development and holdout cases to two JSONL files. A case's side "
        "depends only on its id and the salt, so it never moves when the file grows. Tune "
        "rubrics and prompts on development; check on the holdout that what you tuned still "
        "holds (tinyeval gate --holdout).",
    )
    p.add_argument("cases", metavar="CASES", help="the cases file")
    p.add_argument(
        "--holdout",
        type=proportion,
        default=0.2,
        metavar="FRACTION",
        help="share of cases held out (default: 0.2)",
    )
    p.add_argument(
        "--salt", default="tinyeval-holdout", help="salt of the hash (default: tinyeval-holdout)"
    )
    p.add_argument("--dev-out", required=True, metavar="FILE", help="where development cases go")
    p.add_argument("--holdout-out", required=True, metavar="FILE", help="where holdout cases go")
    p.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="map a recognised key to a dotted path (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(handler=_cmd_split)


def _cmd_split(args: argparse.Namespace) -> int:
    from ..dataset import load, parse_field_mapping, split_holdout

    refuse_overwriting(
        [args.cases], [("--dev-out", args.dev_out), ("--holdout-out", args.holdout_out)]
    )
    cases = load(args.cases, fields=parse_field_mapping(args.field))
    dev, holdout = split_holdout(cases, args.holdout, salt=args.salt)
    for path, part in ((args.dev_out, dev), (args.holdout_out, holdout)):
        write_records(path, [case.to_record() for case in part])
    if args.json:
        print_json(
            {
                "cases": len(cases),
                "dev": len(dev),
                "holdout": len(holdout),
                "salt": args.salt,
                "dev_out": args.dev_out,
                "holdout_out": args.holdout_out,
            }
        )
    else:
        print(
            f"{len(cases)} cases: {len(dev)} for development in {args.dev_out}, "
            f"{len(holdout)} held out in {args.holdout_out} (salt {args.salt!r})"
        )
    return EXIT_OK


def _add_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two runs case by case (before → after), with McNemar's exact test",
        description="Pair the rows of two results files by id and report, per category, how many "
        "cases broke (pass → fail) and how many were fixed (fail → pass), with McNemar's exact "
        "two-sided p-value.",
    )
    p.add_argument("before", metavar="BEFORE", help="results of the earlier run")
    p.add_argument("after", metavar="AFTER", help="results of the later run")
    p.add_argument(
        "--alpha", type=proportion, default=0.05, help="significance level (default: 0.05)"
    )
    p.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a category got significantly worse",
    )
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    p.set_defaults(handler=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    from ..gating import compare_runs
    from ..runner import read_rows
    from ..stats import format_rate

    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {args.alpha}")
    before, after = read_rows(args.before), read_rows(args.after)
    report = compare_runs(before, after)
    warnings = []
    for key, what in (
        ("dataset_fingerprint", "datasets"),
        ("rubric_fingerprint", "rubrics"),
        ("judge_model", "judge models"),
    ):
        old = {str(r.get(key)) for r in before}
        new = {str(r.get(key)) for r in after}
        if old != new:
            warnings.append(
                f"the runs used different {what} ({', '.join(sorted(old))} → "
                f"{', '.join(sorted(new))}): a difference may come from that"
            )
    regressions = [c.category for c in report.categories if c.regressed and c.p_value < args.alpha]
    if args.json:
        print_json(
            {
                **report.to_dict(),
                "alpha": args.alpha,
                "significant_regressions": regressions,
                "warnings": warnings,
            }
        )
    else:
        for c in (*report.categories, report.overall):
            verdict = "significant" if c.p_value < args.alpha else "not significant"
            print(
                f"{c.category}: {format_rate(c.before_passed, c.n)} → "
                f"{format_rate(c.after_passed, c.n)}; "
                f"{c.pass_to_fail} broke, {c.fail_to_pass} fixed; "
                f"McNemar exact p = {c.p_value:.3g} "
                f"({verdict} at α = {args.alpha:g})"
            )
        if report.only_before or report.only_after:
            print(
                f"not paired: {len(report.only_before)} cases only in {args.before}, "
                f"{len(report.only_after)} only in {args.after}"
            )
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
    if args.fail_on_regression and regressions:
        return EXIT_GATE_FAILED
    return EXIT_OK


COMMANDS.append(("gate", _add_gate))
COMMANDS.append(("report", _add_report))
COMMANDS.append(("compare", _add_compare))
COMMANDS.append(("merge", _add_merge))
COMMANDS.append(("split", _add_split))
