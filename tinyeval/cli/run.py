"""``tinyeval run``: cases → code checks → judge(s) → one row per case → the gate."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import IncompleteError, plural
from ._common import (
    EXIT_GATE_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
    PROG,
    Progress,
    UsageError,
    add_model_options,
    add_report_files,
    add_threshold_options,
    gate_options,
    open_model,
    parse_shard,
    print_json,
    refuse_overwriting,
    refuse_unknown_categories,
    write_reports,
)

# (name, function adding the sub-command's parser); collected by tinyeval.cli
COMMANDS: list[tuple[str, Callable[[Any], None]]] = []


DEFAULT_OUT = "tinyeval-results.jsonl"


def _add_run(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="evaluate a cases file: code checks, then the judge, then the gate per category",
        description="Evaluate every case of CASES (JSONL, JSON, CSV or YAML; '-' for stdin): "
        "code checks from each case's expect block first, then the judge where one is asked "
        "for, one result row per case, a table per category and a gate.",
    )
    p.add_argument(
        "cases",
        nargs="?",
        metavar="CASES",
        help="the cases file ('-' reads JSONL from stdin); omit it to run the suite file "
        "(tinyeval.toml, or [tool.tinyeval] in pyproject.toml) found here or above",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="the suite file to run (default, when CASES is omitted: the one found here or "
        "above); options given on the command line win over it",
    )
    p.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="FILE",
        help=f"where result rows are written, one JSON line per case (default: {DEFAULT_OUT})",
    )
    data = p.add_argument_group("reading the cases")
    data.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="map a recognised key to a dotted path in your records, "
        "e.g. input=request.messages.0.content (repeatable)",
    )
    data.add_argument(
        "--id-from-line",
        action="store_true",
        help="name cases without an id after their line: line-N",
    )
    data.add_argument(
        "--format",
        choices=["jsonl", "json", "csv", "yaml", "otel"],
        help="the file format, when the name does not tell it",
    )
    data.add_argument(
        "--sample", type=int, metavar="N", help="run a seeded random sample of N cases"
    )
    data.add_argument("--seed", default="0", help="seed for --sample (default: 0)")
    data.add_argument(
        "--max-line-bytes",
        type=int,
        metavar="N",
        help="the longest line (or, for JSON and YAML, file) read, in bytes (default: 64 MiB); "
        "a longer one is refused before it fills memory",
    )
    data.add_argument(
        "--only",
        metavar="IDS|FILE",
        help="run only these cases: ids separated by commas, or a file of ids (one per line, "
        "or JSON lines with an id, such as a calibrate --disagreements file)",
    )
    data.add_argument(
        "--rejudge",
        metavar="RESULTS",
        help="check and judge again the outputs recorded in RESULTS (an earlier run's rows), "
        "with the expect blocks of CASES; nothing is generated",
    )
    gate_group = p.add_argument_group("the gate")
    add_threshold_options(gate_group)
    gate_group.add_argument(
        "--k",
        default="1,3,5,10",
        metavar="K,K,…",
        help="the cutoffs of the retrieval table, for cases with retrieved and relevant "
        "(default: 1,3,5,10)",
    )
    gate_group.add_argument(
        "--retrieval-threshold",
        action="append",
        default=[],
        metavar="METRIC@K=VALUE",
        help="a minimum for every category with retrieval data, e.g. recall@5=0.8, hit@1=90%%, "
        "mrr=0.5 (repeatable; a category below it blocks)",
    )
    judging = p.add_argument_group("the judge (runs only when a criterion is given)")
    judging.add_argument(
        "--criterion",
        action="append",
        default=[],
        metavar="TEXT|NAME",
        help="one property to judge, as text or a built-in name: unsupported-claims, "
        "answers-the-question, refuses-when-ambiguous; faithfulness-by-claims, "
        "answer-relevance, context-relevance; or graded:TEXT for a 1-5 score (repeatable: one "
        "judge per criterion)",
    )
    judging.add_argument(
        "--rubric",
        action="append",
        default=[],
        metavar="FILE",
        help="a criterion from a file: plain text, or JSON with "
        '"criterion" and optional "name", "steps", "template" (repeatable)',
    )
    judging.add_argument(
        "--judge-model",
        action="append",
        metavar="SPEC",
        help="builtin (offline, the default), openai:MODEL, anthropic:MODEL, "
        "cmd:COMMAND or py:MODULE:FUNCTION; given 3, 5… times, a jury: each model judges, "
        "the majority decides, split panels go to review",
    )
    judging.add_argument(
        "--dawid-skene",
        action="store_true",
        help="with a jury and no labels: estimate each juror's sensitivity and specificity "
        "from their verdicts alone (the Dawid-Skene model; it assumes jurors err independently)",
    )
    judging.add_argument(
        "--votes",
        type=int,
        default=1,
        metavar="N",
        help="ask the judge N times and take the majority (default: 1)",
    )
    judging.add_argument(
        "--judge-style",
        choices=["verdict-first", "evidence-first"],
        default="verdict-first",
        help="answer format the judge is asked for",
    )
    judging.add_argument(
        "--judge-all",
        action="store_true",
        help="judge cases whose code checks failed too (default: skip them, they already fail)",
    )
    judging.add_argument(
        "--judge-category",
        action="append",
        metavar="CATEGORY",
        help="judge only cases of this category (repeatable; default: all)",
    )
    judging.add_argument(
        "--review-out",
        metavar="FILE",
        help="write the rows whose votes were not unanimous, for review",
    )
    judging.add_argument(
        "--calibration",
        metavar="FILE",
        help="a saved calibration (tinyeval calibrate --save): also report pass "
        "rates corrected for the judge's measured error",
    )
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    add_report_files(p)
    p.add_argument(
        "--show-failures",
        type=int,
        default=5,
        metavar="N",
        help="list up to N failed cases per category and why (default: 5; 0 lists none)",
    )
    _add_run_execution_options(p)
    # what every option is when not given, so a suite file can fill in what was left out
    defaults = {action.dest: action.default for action in p._actions}
    p.set_defaults(handler=_cmd_run, option_defaults=defaults, suite_judges=(),
                   suite_overridden=[])  # fmt: skip


def _check_run_options(args: argparse.Namespace) -> None:
    """Options that only mean something with another one, and numbers out of range."""
    judged = bool(args.criterion or args.rubric or args.suite_judges)
    needs = [
        ("--judge-model", args.judge_model is not None, judged, "--criterion or --rubric"),
        ("--votes", args.votes != 1, judged, "--criterion or --rubric"),
        ("--judge-style", args.judge_style != "verdict-first", judged, "--criterion or --rubric"),
        ("--judge-all", args.judge_all, judged, "--criterion or --rubric"),
        ("--judge-category", bool(args.judge_category), judged, "--criterion or --rubric"),
        ("--review-out", bool(args.review_out), judged, "--criterion or --rubric"),
        ("--calibration", bool(args.calibration), judged, "--criterion or --rubric"),
        ("--prompt-template", bool(args.prompt_template), bool(args.generate_model),
         "--generate-model"),
        ("--max-tokens", args.max_tokens is not None, bool(args.generate_model),
         "--generate-model"),
        ("--regenerate", args.regenerate, bool(args.generate_model), "--generate-model"),
        ("--max-cost", args.max_cost is not None, bool(args.price), "--price"),
        ("--trials", args.trials != 1, bool(args.generate_model), "--generate-model"),
    ]  # fmt: skip
    for option, given, partner_given, partner in needs:
        if given and not partner_given:
            raise UsageError(f"{option} has no effect without {partner}")
    for option, value in (("--fail-fast", args.fail_fast), ("--show-failures", args.show_failures),
                          ("--concurrency", args.concurrency - 1)):  # fmt: skip
        if value < 0:
            raise UsageError(f"{option} must be {1 if option == '--concurrency' else 0} or more")
    if args.sample is not None and args.sample < 1:
        raise UsageError(f"--sample must be 1 or more, got {args.sample}")
    if args.rejudge and args.generate_model:
        raise UsageError("--rejudge checks recorded outputs; it does not take --generate-model")
    refuse_overwriting([args.cases, *filter(None, [args.rejudge])],
                       [("--out", args.out), ("--review-out", args.review_out),
                        ("--junit", args.junit), ("--markdown", args.markdown),
                        ("--html", args.html)])  # fmt: skip


def _judges_from_args(args: argparse.Namespace) -> list[Any]:
    from ..judge import load_rubric
    from ..runner import check_judges

    if not (args.criterion or args.rubric):
        return []
    if args.votes < 1 or args.votes % 2 == 0:
        raise UsageError(
            f"--votes must be an odd number (1, 3, 5…) so a majority exists, got {args.votes}"
        )
    from ..rag import make_judge

    judges = [make_judge(text, votes=args.votes, style=args.judge_style)
              for text in args.criterion]  # fmt: skip
    judges += [load_rubric(path).judge(votes=args.votes, style=args.judge_style)
               for path in args.rubric]  # fmt: skip
    return check_judges(judges, args.judge_model or "builtin")


def _only_ids(text: str | None) -> list[str] | None:
    """--only: ids separated by commas, or a file of them."""
    if text is None:
        return None
    from ..records import iter_json_lines

    if not Path(text).is_file():
        return [part.strip() for part in text.split(",") if part.strip()]
    lines = Path(text).read_text(encoding="utf-8").splitlines()
    if any(line.lstrip().startswith("{") for line in lines):
        return [str(record.get("id")) for _, record in iter_json_lines(text, error=UsageError)]
    return [line.strip() for line in lines if line.strip()]


def _recorded_outputs(path: str | None) -> dict[str, Any] | None:
    """--rejudge: the outputs an earlier run recorded, by case id."""
    if path is None:
        return None
    from ..records import read_rows

    return {row["id"]: row.get("output") for row in read_rows(path)}


def _cmd_run(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..dataset import ResultsNotCasesError, parse_field_mapping
    from ..gating import gate, gate_settings
    from ..planning import prepare_cases
    from ..records import run_manifest
    from ..report import summary_dict, summary_text
    from ..runner import check_judges
    from .suite import apply_suite, judges_from_suite

    # Everything that can be wrong with the command is found before the cases are read,
    # and everything wrong with the cases before any of them runs.
    args.jurors = list(args.judge_model or [])
    args.judge_model = args.jurors[0] if len(args.jurors) == 1 else None
    suite = apply_suite(args)
    if len(args.jurors) > 1:
        if len(args.jurors) % 2 == 0:
            raise UsageError(
                f"--judge-model: a jury needs an odd number of models (3, 5…), got "
                f"{len(args.jurors)}"
            )
        args.judge_model = "jury:" + ",".join(args.jurors)
    _check_run_options(args)
    fields = parse_field_mapping(args.field)
    gating = gate_options(args)
    settings = gate_settings(**gating)
    judges = _judges_from_args(args)
    judge_categories: Any = args.judge_category
    if not judges and args.suite_judges:
        judges, per_judge = judges_from_suite(args)
        check_judges(judges, args.judge_model or "builtin")
        judge_categories = per_judge
    args.judge_model = args.judge_model or "builtin"
    shard = parse_shard(args.shard) if args.shard else None
    execution = _Execution(args, judges)  # models, price, template, calibration: checked now
    try:
        only = _only_ids(args.only)
        ready = prepare_cases(
            args.cases, fields=fields, id_from_line=args.id_from_line, format=args.format,
            sample_size=args.sample, seed=args.seed, only=only,
            outputs=_recorded_outputs(args.rejudge), shard=shard,
            shuffle=args.stop_when_decided, max_line_bytes=args.max_line_bytes,
        )  # fmt: skip
        _check_against_cases(args, gating["thresholds"], ready)
    except ResultsNotCasesError as exc:
        execution.close()
        hint = "to re-judge it use --rejudge RESULTS with the cases file"
        raise UsageError(f"{exc}; {hint}") from None
    except BaseException:
        execution.close()
        raise
    if args.dry_run:
        return _dry_run(args, execution, ready, judges, judge_categories)
    manifest = run_manifest(
        cases=ready.selected,
        shard=shard,
        shard_cases=ready.in_shard if shard else None,
        sample={"size": args.sample, "seed": args.seed} if args.sample else None,
        only=ready.selected if (only is not None or args.rejudge) else None,
        judges={j.name: j.rubric_fingerprint for j in judges},
        judge_model=args.judge_model if judges else None,
        gate=settings,
        suite=suite.fingerprint if suite is not None else None,
        cases_file=args.cases,
        trials=args.trials,
        sequential=args.stop_when_decided,
    )
    result = execution.run(ready, manifest=manifest, shard=shard, judge_categories=judge_categories)
    trial_lines: list[str] = []
    if args.trials > 1:  # the gate counts cases, not trials: the case is the unit
        tallies, trial_lines, trial_data = _trial_figures(args)
        report = gate(tallies, **gating)
    else:
        report = gate(result.sorted_categories(), **gating)
        trial_data = None
    early = _early_lines(result, ready) if args.stop_when_decided else []
    missing = [(c, None, None) for c, n in ready.without_retrieval.items() for _ in range(n)]
    retrieval = _retrieval(args, [*ready.queries, *missing] if ready.queries else [], gating)
    judged = sum(t.judged for t in result.categories.values())
    unparsed = sum(t.unparsed for t in result.categories.values())
    info = {
        "tinyeval_version": __version__,
        "cases_file": args.cases,
        "cases": ready.in_file,
        "selected": ready.selected,
        "rows": result.total,
        "complete": result.complete,
        "stopped_reason": result.stopped_reason,
        "out": args.out,
        "dataset_fingerprint": ready.fingerprint,
        "judge_model": args.judge_model if judges else None,
        "judges": [j.name for j in judges],
        "criteria": {j.name: j.criterion_text for j in judges},
        "rubric_fingerprints": {j.name: j.rubric_fingerprint for j in judges},
        "usage": result.usage,
        "elapsed_s": round(result.elapsed_s, 3),
        "suite": None if suite is None else {"path": suite.path, "fingerprint": suite.fingerprint,
                                             "overridden": list(args.suite_overridden)},
    }  # fmt: skip
    extra = execution.extra_summary(result)
    info.update(extra["json"])
    extra["text"][:0] = [*early, *trial_lines, *_graded_summaries(args, judges)]
    if args.stop_when_decided:
        info["decided_early"] = {c: d.to_dict() for c, d in result.decisions.items()}
    if trial_data is not None:
        info["trials"] = trial_data
    if len(args.jurors) > 1:
        from ..jury import shared_family

        family = shared_family(args.jurors)
        if family:
            extra["text"].append(
                f"warning: every juror is of the {family} family: jurors of one family share "
                "blind spots, so the jury adds less than it seems"
            )
            info["jury_warning"] = f"shared family {family}"
        if args.dawid_skene:
            estimate = _dawid_skene(args)
            if estimate is not None:
                info["dawid_skene"] = estimate.to_dict()
                extra["text"] += ["estimated without labels (Dawid-Skene):", str(estimate)]
    warning = _self_evaluation(args, judges)
    if warning:
        info["self_evaluation_warning"] = warning
        extra["text"].append(f"warning: {warning}")
    if retrieval is not None:
        table, verdict = retrieval
        info["retrieval"] = table.to_dict()
        if verdict is not None:
            info["retrieval_gate"] = verdict.to_dict()
        extra["text"][:0] = [table.to_text(), *([verdict.to_text()] if verdict else []), ""]
        if verdict is not None and not verdict.passed:
            names = ", ".join(verdict.blocking)
            extra["text"].append(f"retrieval gate: FAILED — blocking: {names}")
    if args.json:
        print_json(summary_dict(report, run_info=info, judged=judged, unparsed=unparsed,
                                errors=result.errors))  # fmt: skip
    elif not args.quiet:
        judge_part = f" · judge {args.judge_model}: {', '.join(info['judges'])}" if judges else ""
        selected = f" ({ready.selected:,} selected)" if ready.selected != ready.in_file else ""
        header = (f"{plural(ready.in_file, 'case')}{selected} from {args.cases} (dataset "
                  f"{ready.fingerprint}){judge_part} · rows in {args.out}\n")  # fmt: skip
        if suite is not None:
            again = args.suite_overridden
            header = (f"suite {suite.path} ({suite.fingerprint})"
                      f"{'; given again, overriding it: ' + ', '.join(again) if again else ''}\n"
                      + header)  # fmt: skip
        print(summary_text(report, header=header, judged=judged, unparsed=unparsed,
                           errors=result.errors, extra_lines=tuple(extra["text"])))  # fmt: skip
    elif not report.passed:
        print(summary_text(report, judged=judged, unparsed=unparsed, errors=result.errors),
              file=sys.stderr)  # fmt: skip
    from ..records import read_rows

    write_reports(args, lambda: read_rows(args.out), report, run_info=info, cases_file=args.cases)
    stopped_by = getattr(execution.stop, "signal", None)
    if stopped_by is not None:  # asked to stop: said so already, with the resume command
        return 128 + int(stopped_by)
    if not result.complete:
        print(
            f"{PROG}: the run stopped early: {result.stopped_reason}. Rows were kept for "
            f"{result.total} of {ready.in_shard} cases in {args.out}; fix the cause and run "
            "again (--resume keeps them)",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    blocks = retrieval is not None and retrieval[1] is not None and not retrieval[1].passed
    return EXIT_OK if report.passed and not blocks else EXIT_GATE_FAILED


def _retrieval(args: argparse.Namespace, queries: list[Any], gating: dict[str, Any]) -> Any:
    """The retrieval table (and its gate) of the cases with retrieval data, or None."""
    from ..retrieval import parse_retrieval_threshold, retrieval_report

    thresholds = [parse_retrieval_threshold(text) for text in args.retrieval_threshold]
    if not any(query.retrieved is not None for query in queries):
        if thresholds:
            raise UsageError("--retrieval-threshold: no case has retrieved and relevant data")
        return None
    try:
        ks = {int(k) for k in args.k.split(",") if k.strip()}
    except ValueError:
        raise UsageError(f"--k expects whole numbers separated by commas, got {args.k!r}") from None
    ks |= {t.k for t in thresholds if t.k is not None}
    table = retrieval_report(sorted(queries, key=lambda query: str(query[0])), ks=sorted(ks))
    on = "lower" if gating.get("inconclusive") == "block" else "rate"
    return table, (table.check(thresholds, on=on) if thresholds else None)


def _dry_run(
    args: argparse.Namespace, execution: Any, ready: Any, judges: list[Any], where: Any
) -> int:
    from ..planning import dry_run

    try:
        plan = dry_run(
            ready.cases, judges=execution.judges, judge_model=execution.judge_model,
            generate_model=execution.generate_model, prompt_template=execution.template,
            regenerate=args.regenerate, trials=args.trials, judge_all=args.judge_all,
            judge_categories=where,
        )  # fmt: skip
    finally:
        execution.close()
    if args.json:
        data = plan.to_dict()
        if execution.price is not None:
            data["cost_usd"] = plan.cost(execution.price)
        print_json(data)
    else:
        print(plan.to_text(execution.price))
    return EXIT_OK


def _dawid_skene(args: argparse.Namespace) -> Any:
    """The jurors' error rates estimated from their verdicts alone (None with too few)."""
    from ..jury import dawid_skene
    from ..records import read_rows, verdicts

    by_case: dict[str, dict[str, Any]] = {}
    for row in read_rows(args.out):
        for name, verdict in verdicts(row).items():
            jurors = verdict.get("jurors")
            if isinstance(jurors, Mapping):
                by_case[f"{row['id']}/{name}"] = {
                    str(spec): juror.get("verdict") for spec, juror in jurors.items()
                }
    return dawid_skene(by_case) if by_case else None


def _early_lines(result: Any, ready: Any) -> list[str]:
    """What stopping when decided saved: per category, the outcome and cases needed."""
    lines = ["stopped when decided (anytime-valid 95% confidence sequence, Robbins 1970):"]
    for category, decision in sorted(result.decisions.items()):
        ran = result.categories[category].total
        lines.append(f"  {category}: {decision.outcome} after {decision.cases} cases "
                     f"[{decision.low:.1%}, {decision.high:.1%}]; {ran} ran")  # fmt: skip
    skipped = ready.in_shard - result.total
    tokens = sum(result.usage.get(k, 0) for k in ("input_tokens", "output_tokens"))
    per_case = tokens / result.total if result.total else 0
    saved = f", about {round(per_case * skipped):,} tokens" if tokens else ""
    lines.append(f"  {plural(skipped, 'case')} not run{saved}; a later full run (with the "
                 "cache) pays only for those")  # fmt: skip
    return [*lines, ""]


def _trial_figures(args: argparse.Namespace) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """With --trials: case-level tallies for the gate, the text per category, the JSON."""
    from ..records import read_rows, trial_outcomes
    from ..trials import summarize_trials

    tallies: dict[str, Any] = {}
    lines: list[str] = []
    data: dict[str, Any] = {"k": args.trials, "gate": args.trials_gate, "categories": {}}
    for category, outcomes in trial_outcomes(read_rows(args.out)).items():
        summary = summarize_trials(outcomes)
        judge = all if args.trials_gate == "all" else any
        passed = sum(judge(trials) for trials in outcomes.values())
        tallies[category] = {"passed": passed, "total": len(outcomes)}
        data["categories"][category] = summary.to_dict()
        lines += [f"trials of {category}:", str(summary), ""]
    return tallies, lines, data


def _graded_summaries(args: argparse.Namespace, judges: list[Any]) -> list[str]:
    """Each graded judge's scores: the histogram beside the mean, and the bottom 10% by id."""
    from ..graded import graded_summary
    from ..rag import GradedJudge, graded_scores
    from ..records import read_rows

    graded = [judge for judge in judges if isinstance(judge, GradedJudge)]
    if not graded:
        return []
    rows = read_rows(args.out)
    lines = []
    for judge in graded:
        scores = graded_scores(rows, judge.name)
        if scores:
            lines += [f"graded scores of {judge.name}:",
                      graded_summary(scores, scale=judge.scale).to_text(), ""]  # fmt: skip
    return lines


def _self_evaluation(args: argparse.Namespace, judges: list[Any]) -> str | None:
    """The warning when the generating model and the judge are of one family."""
    if not (judges and args.generate_model):
        return None
    from ..rag import self_evaluation_warning

    return self_evaluation_warning(args.generate_model, args.judge_model)


def _check_against_cases(args: argparse.Namespace, thresholds: dict[str, Any], ready: Any) -> None:
    """Refuse, before anything runs, what the cases show cannot be meant."""
    if ready.unknown_only and not ready.selected:
        raise UsageError(f"--only: no case has the id {ready.unknown_only[0]!r}")
    if ready.in_shard == 0:
        where = f" in shard {args.shard}" if args.shard else ""
        raise UsageError(f"no case to run{where} of {args.cases}")
    refuse_unknown_categories("--judge-category", args.judge_category or [], ready.categories)
    refuse_unknown_categories("--threshold", thresholds, ready.categories, only_typos=True)
    if ready.without_output and not args.generate_model:
        first = ready.first_without_output
        where = f"{first.source}:{first.line}" if first.line else repr(first.id)
        raise UsageError(
            f"{ready.without_output} case(s) have no output (the first at {where}) and no "
            "--generate-model was given to generate them"
        )


def _add_run_execution_options(p: argparse.ArgumentParser) -> None:
    ex = add_model_options(p)
    ex.add_argument(
        "--generate-model",
        metavar="SPEC",
        help="generate the output of cases that have none, from their input",
    )
    ex.add_argument(
        "--stop-when-decided",
        action="store_true",
        help="take the cases in a random order (--seed) and stop each gated category once an "
        "anytime-valid confidence sequence puts it on one side of its threshold",
    )
    ex.add_argument(
        "--trials",
        type=int,
        default=1,
        metavar="K",
        help="generate (check and judge) each case K times: one row per trial, figures with "
        "the case as the unit, the flaky cases listed (needs --generate-model)",
    )
    ex.add_argument(
        "--trials-gate",
        choices=["all", "any"],
        default="all",
        help="with --trials, a case passes the gate when all its trials pass (pass^k, the "
        "default: what a user relying on it every time meets) or any does (pass@k)",
    )
    ex.add_argument(
        "--regenerate",
        action="store_true",
        help="generate every case's output, even where a logged one exists (a logged "
        "conversation is sent as its message list, with roles)",
    )
    ex.add_argument(
        "--prompt-template",
        metavar="FILE",
        help="a text file with {input} where the case's input goes (for --generate-model)",
    )
    ex.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="longest generated output to ask for (default: the server's)",
    )
    ex.add_argument(
        "--max-errors",
        type=int,
        metavar="N",
        help="stop and exit 3 once more than N cases have errored (default: no limit; "
        "errored cases always count as not passed)",
    )
    ex.add_argument(
        "--fail-fast",
        type=int,
        default=10,
        metavar="N",
        help="stop and exit 3 when N cases have errored before any model call succeeded, "
        "e.g. an unreachable server (default: 10; 0 never stops)",
    )
    ex.add_argument(
        "--case-timeout",
        type=float,
        metavar="SECONDS",
        help="give up on a case still running after SECONDS: it becomes an error row "
        "(default: none; each model call has its own --timeout)",
    )
    ex.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows already in --out and run only the cases without one",
    )
    ex.add_argument(
        "--shard",
        metavar="I/N",
        help="run only shard I of N (a stable slice by id; join with tinyeval merge)",
    )
    ex.add_argument(
        "--batch",
        action="store_true",
        help="send the judge (and generate) calls through the provider's batch API "
        "(openai: and anthropic: models; half the price, but asynchronous): submitted once, "
        "polled, matched back into ordinary rows; killed while pending, --resume polls the "
        "same batch and never submits it twice",
    )
    ex.add_argument(
        "--batch-poll",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="the first wait between polls of a pending batch; it doubles up to 10 minutes "
        "(default: 30)",
    )
    ex.add_argument(
        "--executor",
        metavar="dask:local|dask://HOST:PORT",
        help="run the cases on a Dask cluster (pip install 'dask[distributed]'): dask:local "
        "starts one on this machine, dask://HOST:PORT joins a scheduler; rows are still written "
        "here, and the response cache file must be one every worker can open",
    )
    ex.add_argument(
        "--dry-run",
        action="store_true",
        help="render every prompt the run would send and count calls, tokens, cache hits and "
        "cost, without calling any model or writing a row",
    )
    ex.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="with --price: stop taking cases once the spent plus the likely cost of the cases "
        "in flight would pass USD; the run is then incomplete (exit 3) and --resume continues",
    )
    ex.add_argument(
        "--price",
        metavar="in=X,out=Y",
        help="USD per million input and output tokens, to report the run's cost",
    )


class _Execution:
    """Wires the run options (models, cache, progress, review file, summary) to runner.run."""

    def __init__(self, args: argparse.Namespace, judges: list[Any]) -> None:
        if args.max_errors is not None and args.max_errors < 0:
            raise UsageError(f"--max-errors must be 0 or more, got {args.max_errors}")
        self.args = args
        self.judges = judges
        self.price = None
        if args.price:
            from ..calls import parse_price

            self.price = parse_price(args.price)
        self.template = None
        if args.prompt_template:
            self.template = Path(args.prompt_template).read_text(encoding="utf-8")
            if "{input}" not in self.template:
                raise UsageError(
                    f"{args.prompt_template}: the template has no {{input}} placeholder"
                )
        self.cache: Any = None
        self.judge_model: Any = None
        if judges and len(args.jurors) > 1:
            from ..jury import Jury

            models = {spec: self._model(spec, max_tokens=args.judge_max_tokens)
                      for spec in args.jurors}  # fmt: skip
            self.judges = [Jury(judge, models) for judge in judges]
            self.judge_model = _Panel(args.judge_model)
        elif judges:
            self.judge_model = self._model(args.judge_model, max_tokens=args.judge_max_tokens)
        self.generate_model = (
            self._model(args.generate_model, max_tokens=args.max_tokens)
            if args.generate_model
            else None
        )
        self.batch_models: list[Any] = []
        if args.batch:
            self._use_batches()
        self.failures: dict[str, list[dict[str, Any]]] = {}
        self.review_count = 0
        self.in_flight = 0
        self.stop = threading.Event()
        self.calibration = None
        if args.calibration:
            from ..calibration import load_calibration

            self.calibration = load_calibration(args.calibration)

    def _use_batches(self) -> None:
        """--batch: the judge and generate models become batch models on the same cache."""
        from ..batch import BatchJob, BatchModel
        from ..cache import ResponseCache

        args = self.args
        if args.no_cache:
            raise UsageError("--batch keeps the batch and its replies in the response cache: "
                             "drop --no-cache")  # fmt: skip
        self.cache = self.cache if self.cache is not None else ResponseCache(args.cache)

        def batched(spec: str | None, model: Any, max_tokens: int | None) -> Any:
            if (
                model is None
                or spec is None
                or spec.partition(":")[0] not in ("openai", "anthropic")
            ):
                return model  # builtin, cmd: and py: models are called as usual
            job = BatchJob(spec, self.cache, base_url=args.base_url, timeout=args.timeout,
                           temperature=args.temperature, max_tokens=max_tokens,
                           poll_interval=args.batch_poll)  # fmt: skip
            found = BatchModel(job)
            self.batch_models.append(found)
            return found

        self.judge_model = batched(args.judge_model, self.judge_model, args.judge_max_tokens)
        self.generate_model = batched(args.generate_model, self.generate_model, args.max_tokens)
        if not self.batch_models:
            raise UsageError("--batch: neither the judge nor the generate model is an openai: or "
                             "anthropic: model, and only those have batch APIs")  # fmt: skip

    def run_batches(self, ready: Any, judge_categories: Any) -> list[str]:
        """Record the calls the run would make, send them as batches, until none is left."""
        from ..runner import run

        lines = []
        for _ in range(4):  # generation, then the judges of what was generated
            run(ready.cases, judges=self.judges, judge_model=self.judge_model,
                generate_model=self.generate_model, prompt_template=self.template,
                regenerate=self.args.regenerate, trials=self.args.trials,
                judge_all=self.args.judge_all, judge_categories=judge_categories,
                concurrency=self.args.concurrency, fail_fast=None, keep_rows=False)  # fmt: skip
            waiting = [(m, m.take_deferred()) for m in self.batch_models]
            if not any(requests for _, requests in waiting):
                break
            for model, requests in waiting:
                if not requests:
                    continue
                outcome = model.job.run(requests)
                model.absorb(outcome)
                lines.append(f"batch: {outcome}")
                if not outcome.complete:
                    raise IncompleteError(
                        f"{outcome}; the batch is still pending at the provider: run again "
                        "with --resume later (it polls the same batch, never submits it twice)"
                    )
        return lines

    def close(self) -> None:
        """Release the cache when the run does not happen."""
        if self.cache is not None:
            self.cache.close()

    def _model(self, spec: str, *, max_tokens: int | None) -> Any:
        model, self.cache = open_model(self.args, spec, max_tokens=max_tokens, cache=self.cache)
        return model

    def run(
        self,
        ready: Any,
        *,
        manifest: dict[str, Any],
        shard: tuple[int, int] | None,
        judge_categories: Any,
    ) -> Any:
        from ..records import write_row
        from ..runner import run

        args = self.args
        self.batch_lines = self.run_batches(ready, judge_categories) if self.batch_models else []
        progress = Progress(ready.in_shard, sys.stderr, enabled=not (args.quiet or args.json))
        with contextlib.ExitStack() as stack:
            stack.callback(progress.close)
            if self.cache is not None:
                stack.callback(self.cache.close)
            review = None
            if args.review_out:
                mode = "a" if args.resume else "w"
                review = stack.enter_context(open(args.review_out, mode, encoding="utf-8"))

            def on_row(row: dict[str, Any]) -> None:
                progress.update(row)
                self._note_failure(row)
                if review is not None and not all(
                    v.get("unanimous", True) for v in row["judges"].values()
                ):
                    write_row(review, row)
                    self.review_count += 1

            executor = stack.enter_context(_executor(args.executor, args.concurrency))
            stop = self.stop
            stack.enter_context(_stopping_on_signals(stop, progress, lambda: self.in_flight))
            try:
                result = run(
                    ready.cases, judges=self.judges, judge_model=self.judge_model,
                    generate_model=self.generate_model, prompt_template=self.template,
                    regenerate=args.regenerate, trials=args.trials,
                    judge_all=args.judge_all, judge_categories=judge_categories,
                    out=args.out, resume=args.resume, shard=shard,
                    concurrency=args.concurrency, max_errors=args.max_errors,
                    case_timeout=args.case_timeout, fail_fast=args.fail_fast or None,
                    keep_rows=False, on_row=on_row, dataset_fingerprint=ready.fingerprint,
                    manifest=manifest, stop=stop, progress=self._progress,
                    stop_when_decided=self.decide_at(ready),
                    max_cost=args.max_cost, price=self.price, executor=executor,
                )  # fmt: skip
            except KeyboardInterrupt:
                progress.close()
                print(
                    f"{PROG}: interrupted; the cases in flight were abandoned (they have no row, "
                    f"a resumed run does them); finished rows are kept in {args.out}. Resume "
                    f"with:\n  {_resume_command()}",
                    file=sys.stderr,
                )
                raise
            except OSError as exc:  # a full disk, a file gone: the run cannot complete
                where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
                raise IncompleteError(
                    f"writing the results failed: {where}{exc.strerror or exc}; the rows "
                    f"written before it are kept in {args.out} (--resume continues there)"
                ) from None
        if stop.is_set() and result.capped is None:
            print(
                f"{PROG}: stopped on request; finished rows are kept in {args.out}. Resume "
                f"with:\n  {_resume_command()}",
                file=sys.stderr,
            )
        return result

    def decide_at(self, ready: Any) -> dict[str, float] | None:
        """With --stop-when-decided: each gated category's threshold."""
        if not self.args.stop_when_decided:
            return None
        from ..gating import gate_settings

        settings = gate_settings(**gate_options(self.args))
        default = settings["default_threshold"]
        limits = {c: settings["thresholds"].get(c, default) for c in ready.categories}
        found = {c: float(t) for c, t in limits.items() if t is not None}
        if not found:
            raise UsageError("--stop-when-decided needs thresholds: it stops a category once "
                             "its gate is decided")  # fmt: skip
        return found

    def _progress(self, in_flight: int) -> None:
        self.in_flight = in_flight

    def _note_failure(self, row: dict[str, Any]) -> None:
        """Keep a few failed rows of each category, to say why they failed: those with the
        smallest ids, so the list is the same whatever order the cases finished in."""
        if row.get("status") == "pass" or not self.args.show_failures:
            return
        kept = self.failures.setdefault(str(row.get("category")), [])
        if any(other["id"] == row["id"] for other in kept):
            return  # with --trials, one line per case (its first failed trial)
        kept.append(row)
        kept.sort(key=lambda r: str(r["id"]))
        del kept[self.args.show_failures :]

    def extra_summary(self, result: Any) -> dict[str, Any]:
        from ..report import failure_lines, usage_line

        failed: list[Mapping[str, Any]] = [
            row for _, rows in sorted(self.failures.items()) for row in rows
        ]
        text = failure_lines(failed, shown=self.args.show_failures, where=self.args.out)
        if text:
            text.append("")
        data: dict[str, Any] = {"resumed_rows": result.resumed}
        text.extend(getattr(self, "batch_lines", []))
        if self.args.shard:
            data["shard"] = self.args.shard
            text.append(f"shard {self.args.shard}: join shards with tinyeval merge")
        if result.resumed:
            text.append(f"resumed: {result.resumed} rows were kept from the earlier run")
        line, cost = usage_line(result.usage, self.price)
        if line:
            text.append(line)
        if cost is not None:
            data["cost_usd"] = cost
        if self.cache is not None:
            hits, misses, _stores = self.cache.stats()
            data["cache"] = {"path": self.args.cache, "hits": hits, "misses": misses}
            if self.cache.warning:
                data["cache"]["warning"] = self.cache.warning
                text.append(f"warning: the response cache: {self.cache.warning}")
        if self.calibration is not None:
            from ..calibration import corrected_lines, corrected_rates

            corrected = corrected_rates(
                self.calibration, result.sorted_categories(), judge=self.judges[0],
                judge_model=self.args.judge_model,
            )  # fmt: skip
            data["corrected"] = {name: item.to_dict() for name, item in corrected.items()}
            text.extend(corrected_lines(corrected, source=self.args.calibration,
                                        judge=self.judges[0].name))  # fmt: skip
        if self.args.review_out:
            data["review_out"] = self.args.review_out
            data["review_rows"] = self.review_count
            text.append(
                f"non-unanimous verdicts for review: {self.review_count} "
                f"(in {self.args.review_out})"
            )
        return {"json": data, "text": text}


@contextlib.contextmanager
def _executor(spec: str | None, concurrency: int) -> Iterator[Any]:
    """The executor --executor names (None: the runner's own thread pool)."""
    if spec is None:
        yield None
        return
    if spec != "dask:local" and not spec.startswith("dask://"):
        raise UsageError(f"--executor expects dask:local or dask://HOST:PORT, got {spec!r}")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "--executor dask needs Dask's distributed scheduler: pip install 'dask[distributed]'"
        ) from None
    if spec == "dask:local":
        cluster = LocalCluster(n_workers=2, threads_per_worker=max(1, concurrency // 2),
                               processes=True, dashboard_address=None)  # fmt: skip
        client = Client(cluster)
    else:
        cluster, client = None, Client(spec.removeprefix("dask://"))
    try:
        yield client.get_executor()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


class _Panel:
    """The judge model a jury's run reports (``jury:SPEC,SPEC,…``); each juror calls its own."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.temperature = None

    def __call__(self, prompt: str) -> str:
        raise RuntimeError("a jury's jurors call their own models")


@contextlib.contextmanager
def _stopping_on_signals(
    stop: threading.Event, progress: Progress, in_flight: Callable[[], int]
) -> Iterator[None]:
    """The first Ctrl-C (or SIGTERM, a cancelled CI job) stops taking cases and says what it
    waits for; a second Ctrl-C abandons the cases in flight at once."""

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.signal = signum  # type: ignore[attr-defined]
        stop.set()
        progress.close()
        waiting = plural(in_flight(), "case")
        print(f"{PROG}: stopping: waiting for {waiting} in flight (Ctrl-C again to abandon "
              "them)", file=sys.stderr, flush=True)  # fmt: skip

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _resume_command() -> str:
    """The command as it was invoked, with --resume: ``python -m tinyeval`` when run so."""
    program = Path(sys.argv[0]).name if sys.argv else PROG
    if program in ("__main__.py", "-m", "-c") or program.endswith(".py"):
        words = [Path(sys.executable).name, "-m", __package__.rpartition(".")[0] if __package__
                 else PROG, *sys.argv[1:]]  # fmt: skip
    else:
        words = [program, *sys.argv[1:]]
    return shlex.join(words if "--resume" in words else [*words, "--resume"])


COMMANDS.append(("run", _add_run))
