"""``tinyeval run``: cases → code checks → judge(s) → one row per case → the gate."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from ._common import (
    EXIT_GATE_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
    PROG,
    UsageError,
    add_model_options,
    add_report_files,
    add_threshold_options,
    open_model,
    plural,
    print_json,
    refuse_overwriting,
    refuse_unknown_categories,
    thresholds_from,
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
    p.add_argument("cases", metavar="CASES", help="the cases file ('-' reads JSONL from stdin)")
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
        choices=["jsonl", "json", "csv", "yaml"],
        help="the file format, when the name does not tell it",
    )
    data.add_argument(
        "--sample", type=int, metavar="N", help="run a seeded random sample of N cases"
    )
    data.add_argument("--seed", default="0", help="seed for --sample (default: 0)")
    add_threshold_options(p.add_argument_group("the gate"))
    judging = p.add_argument_group("the judge (runs only when a criterion is given)")
    judging.add_argument(
        "--criterion",
        action="append",
        default=[],
        metavar="TEXT|NAME",
        help="one property to judge, as text or a built-in name: "
        "unsupported-claims, answers-the-question, refuses-when-ambiguous "
        "(repeatable: one judge per criterion)",
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
        metavar="SPEC",
        help="builtin (offline, the default), openai:MODEL, anthropic:MODEL, "
        "cmd:COMMAND or py:MODULE:FUNCTION",
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
    p.set_defaults(handler=_cmd_run)
    _add_run_execution_options(p)


def _check_run_options(args: argparse.Namespace) -> None:
    """Options that only mean something with another one, and numbers out of range."""
    judged = bool(args.criterion or args.rubric)
    needs = [
        ("--judge-model", args.judge_model is not None, judged, "--criterion or --rubric"),
        ("--votes", args.votes != 1, judged, "--criterion or --rubric"),
        ("--judge-style", args.judge_style != "verdict-first", judged, "--criterion or --rubric"),
        ("--judge-all", args.judge_all, judged, "--criterion or --rubric"),
        ("--judge-category", bool(args.judge_category), judged, "--criterion or --rubric"),
        ("--review-out", bool(args.review_out), judged, "--criterion or --rubric"),
        ("--prompt-template", bool(args.prompt_template), bool(args.generate_model),
         "--generate-model"),
        ("--max-tokens", args.max_tokens is not None, bool(args.generate_model),
         "--generate-model"),
    ]  # fmt: skip
    for option, given, partner_given, partner in needs:
        if given and not partner_given:
            raise UsageError(f"{option} has no effect without {partner}")
    for option, value in (("--fail-fast", args.fail_fast), ("--show-failures", args.show_failures)):
        if value < 0:
            raise UsageError(f"{option} must be 0 or more, got {value}")
    refuse_overwriting([args.cases], [("--out", args.out), ("--review-out", args.review_out),
                                       ("--junit", args.junit), ("--markdown", args.markdown),
                                       ("--html", args.html)])  # fmt: skip


def _judges_from_args(args: argparse.Namespace) -> list[Any]:
    from pathlib import Path

    if not (args.criterion or args.rubric):
        return []
    from ..judge import Judge

    if args.votes < 1 or args.votes % 2 == 0:
        raise UsageError(
            f"--votes must be an odd number (1, 3, 5…) so a majority exists, got {args.votes}"
        )
    specs: list[dict[str, Any]] = [{"criterion": text} for text in args.criterion]
    for path in args.rubric:
        text = Path(path).read_text(encoding="utf-8")
        if path.endswith(".json"):
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
            if not isinstance(spec, dict) or not isinstance(spec.get("criterion"), str):
                raise UsageError(f'{path}: expected a JSON object with a "criterion" string')
            unknown = set(spec) - {"criterion", "name", "steps", "template"}
            if unknown:
                raise UsageError(
                    f"{path}: unknown keys {sorted(unknown)}; expected criterion, "
                    "name, steps, template"
                )
            specs.append(spec)
        else:
            if not text.strip():
                raise UsageError(f"{path}: the rubric file is empty")
            specs.append({"criterion": text.strip()})
    judges = [
        Judge(
            spec["criterion"],
            votes=args.votes,
            style=args.judge_style,
            template=spec.get("template"),
            steps=spec.get("steps"),
            name=spec.get("name"),
        )
        for spec in specs
    ]
    names = [j.name for j in judges]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"two judges are named {duplicates[0]!r}; give rubrics distinct names")
    return judges


def _cmd_run(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..dataset import parse_field_mapping
    from ..gating import gate, parse_threshold
    from ..report import summary_dict, summary_text

    # Everything that can be wrong with the command is found before the cases are read,
    # and everything wrong with the cases before any of them runs.
    _check_run_options(args)
    fields = parse_field_mapping(args.field)
    thresholds = thresholds_from(args.threshold)
    for value in [*thresholds.values(), *filter(None, [args.default_threshold])]:
        parse_threshold(value)
    judges = _judges_from_args(args)
    args.judge_model = args.judge_model or "builtin"
    execution = _Execution(args, judges)  # models, price, template, calibration: checked now
    read = {"fields": fields, "id_from_line": args.id_from_line, "format": args.format}
    try:
        cases, fingerprint, seen = _read_cases(args, read)
        _check_against_cases(args, thresholds, seen)
    except BaseException:
        execution.close()
        raise
    total = seen.total

    execution.total = seen.selected
    result = execution.run(cases, fingerprint=fingerprint)

    report = gate(
        result.categories, thresholds, default_threshold=args.default_threshold, on=args.gate_on
    )
    judged = sum(t.judged for t in result.categories.values())
    unparsed = sum(t.unparsed for t in result.categories.values())
    info = {
        "tinyeval_version": __version__,
        "cases_file": args.cases,
        "cases": total,
        "rows": result.total,
        "complete": result.complete,
        "stopped_reason": result.stopped_reason,
        "out": args.out,
        "dataset_fingerprint": fingerprint,
        "judge_model": args.judge_model if judges else None,
        "judges": [j.name for j in judges],
        "rubric_fingerprints": {j.name: j.rubric_fingerprint for j in judges},
        "usage": result.usage,
        "elapsed_s": round(result.elapsed_s, 3),
    }
    extra = execution.extra_summary(result)
    info.update(extra.get("json", {}))
    if args.json:
        print_json(
            summary_dict(
                report, run_info=info, judged=judged, unparsed=unparsed, errors=result.errors
            )
        )
    elif not args.quiet:
        judge_part = f" · judge {args.judge_model}: {', '.join(info['judges'])}" if judges else ""
        header = (
            f"{plural(total, 'case')} from {args.cases} (dataset {fingerprint}){judge_part} "
            f"· rows in {args.out}\n"
        )
        print(
            summary_text(
                report,
                header=header,
                judged=judged,
                unparsed=unparsed,
                errors=result.errors,
                extra_lines=tuple(extra.get("text", ())),
            )
        )
    if args.junit or args.markdown or args.html:
        from ..runner import read_rows

        write_reports(args, lambda: read_rows(args.out), report, run_info=info)
    if not result.complete:
        print(
            f"{PROG}: the run stopped early: {result.stopped_reason}. Rows were kept for "
            f"{result.total} of {total} cases in {args.out}; fix the cause and run again "
            "(--resume keeps them)",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    return EXIT_OK if report.passed else EXIT_GATE_FAILED


class _CasesSeen:
    """What the validation pass learnt about the cases, for the checks made before running."""

    def __init__(self) -> None:
        self.total = 0
        self.selected = 0
        self.categories: set[str] = set()
        self.without_output = 0
        self.first_without_output: Any = None

    def note(self, case: Any, selected: bool) -> None:
        self.total += 1
        self.selected += selected
        self.categories.add(case.category)
        if case.output is None:
            self.without_output += 1
            if self.first_without_output is None:
                self.first_without_output = case


def _read_cases(args: argparse.Namespace, read: dict[str, Any]) -> tuple[Any, str, _CasesSeen]:
    """Validate the whole file before anything runs or is written.

    Returns the cases to run (a list, or a fresh stream over the file), the
    dataset fingerprint, and what was seen on the way.
    """
    from .. import dataset
    from ..runner import parse_shard, shard_index

    shard = parse_shard(args.shard) if args.shard else None
    seen = _CasesSeen()

    def noted(cases: Any) -> Any:
        for case in cases:
            seen.note(case, shard is None or shard_index(case.id, shard[1]) == shard[0])
            yield case

    if args.sample is not None or args.cases == "-":
        if args.sample is not None and args.sample < 1:
            raise UsageError(f"--sample must be 1 or more, got {args.sample}")
        cases: Any = dataset.load(args.cases, **read)
        if args.sample is not None:
            cases = dataset.sample(cases, args.sample, seed=args.seed)
        fingerprint = dataset.dataset_fingerprint(noted(cases))
        return cases, fingerprint, seen
    fingerprint = dataset.dataset_fingerprint(noted(dataset.iter_cases(args.cases, **read)))
    if seen.total == 0:
        raise dataset.DatasetError("no cases in the file", path=args.cases)
    # the second pass streams the file again; the first one has checked the ids already
    return dataset.iter_cases(args.cases, **read, unique_ids=False), fingerprint, seen


def _check_against_cases(
    args: argparse.Namespace, thresholds: dict[str, str], seen: _CasesSeen
) -> None:
    """Refuse, before anything runs, what the cases show cannot be meant."""
    if seen.selected == 0:
        raise UsageError(f"no case to run in shard {args.shard} of {args.cases}")
    refuse_unknown_categories("--judge-category", args.judge_category or [], seen.categories)
    refuse_unknown_categories("--threshold", thresholds, seen.categories, only_typos=True)
    if seen.without_output and not args.generate_model:
        first = seen.first_without_output
        where = f"{first.source}:{first.line}" if first.line else repr(first.id)
        raise UsageError(
            f"{seen.without_output} case(s) have no output (the first at {where}) and no "
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
        "--price",
        metavar="in=X,out=Y",
        help="USD per million input and output tokens, to report the run's cost",
    )


class _Execution:
    """Wires the run options (models, cache, resume, shard, progress, review) to runner.run."""

    def __init__(self, args: argparse.Namespace, judges: list[Any]) -> None:
        from ..runner import parse_shard

        if args.concurrency < 1:
            raise UsageError(f"--concurrency must be 1 or more, got {args.concurrency}")
        if args.max_errors is not None and args.max_errors < 0:
            raise UsageError(f"--max-errors must be 0 or more, got {args.max_errors}")
        self.args = args
        self.judges = judges
        self.total = 0  # cases this run will evaluate, known once the file is read
        self.shard = parse_shard(args.shard) if args.shard else None
        self.price = None
        if args.price:
            from ..calls import parse_price

            self.price = parse_price(args.price)
        self.template = None
        if args.prompt_template:
            from pathlib import Path

            self.template = Path(args.prompt_template).read_text(encoding="utf-8")
            if "{input}" not in self.template:
                raise UsageError(
                    f"{args.prompt_template}: the template has no {{input}} placeholder"
                )
        self.cache: Any = None
        self.judge_model = (
            self._model(args.judge_model, max_tokens=args.judge_max_tokens) if judges else None
        )
        self.generate_model = (
            self._model(args.generate_model, max_tokens=args.max_tokens)
            if args.generate_model
            else None
        )
        self.previous: list[dict[str, Any]] = []
        self.failures: dict[str, list[dict[str, Any]]] = {}
        self.review_count = 0
        self.calibration = None
        if args.calibration:
            from ..calibration import load_calibration

            if not judges:
                raise UsageError(
                    "--calibration corrects a judge's pass rate: give a --criterion too"
                )
            self.calibration = load_calibration(args.calibration)

    def close(self) -> None:
        """Release the cache when the run does not happen."""
        if self.cache is not None:
            self.cache.close()

    def _model(self, spec: str, *, max_tokens: int | None) -> Any:
        model, self.cache = open_model(self.args, spec, max_tokens=max_tokens, cache=self.cache)
        return model

    def _load_previous(self, fingerprint: str) -> set[str]:
        from pathlib import Path

        from ..runner import read_rows

        if not self.args.resume or not Path(self.args.out).exists():
            return set()
        self.previous = read_rows(self.args.out, repair=True)
        other = {r.get("dataset_fingerprint") for r in self.previous} - {fingerprint}
        if other:
            raise UsageError(
                f"{self.args.out} holds rows from another dataset (fingerprint "
                f"{sorted(map(str, other))[0]}, now {fingerprint}); "
                "move it away or run without --resume"
            )
        return {r["id"] for r in self.previous}

    def run(self, cases: Any, *, fingerprint: str) -> Any:
        import contextlib

        from ..runner import Progress, run, shard_index, write_row

        done = self._load_previous(fingerprint)
        shard = self.shard

        def selected() -> Any:
            for case in cases:
                if shard and shard_index(case.id, shard[1]) != shard[0]:
                    continue
                if case.id not in done:
                    yield case

        progress = Progress(self.total, sys.stderr, enabled=not (self.args.quiet or self.args.json))
        progress.done = len(done)
        with contextlib.ExitStack() as stack:
            stack.callback(progress.close)
            if self.cache is not None:
                stack.callback(self.cache.close)
            review = None
            if self.args.review_out:
                mode = "a" if self.args.resume else "w"
                review = stack.enter_context(open(self.args.review_out, mode, encoding="utf-8"))

            def on_row(row: dict[str, Any]) -> None:
                progress.update(row)
                self._note_failure(row)
                if review is not None and not all(
                    v.get("unanimous", True) for v in row["judges"].values()
                ):
                    write_row(review, row)
                    self.review_count += 1

            try:
                result = run(
                    selected(),
                    judges=self.judges,
                    judge_model=self.judge_model,
                    generate_model=self.generate_model,
                    prompt_template=self.template,
                    judge_all=self.args.judge_all,
                    judge_categories=self.args.judge_category,
                    out=self.args.out,
                    append=self.args.resume,
                    concurrency=self.args.concurrency,
                    max_errors=self.args.max_errors,
                    case_timeout=self.args.case_timeout,
                    fail_fast=self.args.fail_fast or None,
                    keep_rows=False,
                    on_row=on_row,
                    dataset_fingerprint=fingerprint,
                )
            except KeyboardInterrupt:
                progress.close()
                import shlex

                words = [PROG, *sys.argv[1:]]
                command = shlex.join(words if "--resume" in words else [*words, "--resume"])
                print(
                    f"{PROG}: interrupted; finished rows are kept in {self.args.out}. "
                    f"Resume with:\n  {command}",
                    file=sys.stderr,
                )
                raise
        for row in self.previous:
            result.add(row, keep=False)
            self._note_failure(row)
        return result

    def _note_failure(self, row: dict[str, Any]) -> None:
        """Keep a few failed rows of each category, to say why they failed: those with the
        smallest ids, so the list is the same whatever order the cases finished in."""
        if row.get("status") == "pass" or not self.args.show_failures:
            return
        kept = self.failures.setdefault(str(row.get("category")), [])
        kept.append(row)
        kept.sort(key=lambda r: str(r["id"]))
        del kept[self.args.show_failures :]

    def extra_summary(self, result: Any) -> dict[str, Any]:
        from ..report import failure_lines

        failed = [row for rows in self.failures.values() for row in rows]
        text = failure_lines(failed, shown=self.args.show_failures, where=self.args.out)
        if text:
            text.append("")
        data: dict[str, Any] = {"resumed_rows": len(self.previous)}
        if self.shard:
            data["shard"] = f"{self.shard[0]}/{self.shard[1]}"
            text.append(
                f"shard {self.shard[0]} of {self.shard[1]}: join shards with tinyeval merge"
            )
        if self.previous:
            text.append(f"resumed: {len(self.previous)} rows were kept from the earlier run")
        tokens = result.usage
        if any(tokens.values()):
            line = f"tokens: {tokens['input_tokens']:,} in, {tokens['output_tokens']:,} out"
            if self.price is not None:
                from ..calls import run_cost

                paid = {k: tokens[k] for k in ("input_tokens", "output_tokens")}
                dollars = run_cost([paid], self.price)
                data["cost_usd"] = dollars
                line += f"; cost about ${dollars:,.4f}"
            if tokens["cached_input_tokens"] or tokens["cached_output_tokens"]:
                line += (
                    f"; replayed from the cache, not paid again: "
                    f"{tokens['cached_input_tokens']:,} in, {tokens['cached_output_tokens']:,} out"
                )
            text.append(line)
        if self.cache is not None:
            hits, misses, _stores = self.cache.stats()
            data["cache"] = {"path": self.args.cache, "hits": hits, "misses": misses}
        if self.calibration is not None:
            corrected = self._corrected(result)
            data["corrected"] = corrected
            text.extend(self._corrected_lines(corrected))
        if self.args.review_out:
            data["review_out"] = self.args.review_out
            data["review_rows"] = self.review_count
            text.append(
                f"non-unanimous verdicts for review: {self.review_count} "
                f"(in {self.args.review_out})"
            )
        return {"json": data, "text": text}

    def _corrected(self, result: Any) -> dict[str, Any]:
        """Judge pass rates per category corrected for the calibrated judge's error."""
        from ..calibration import CalibrationError, corrected_rate_for

        judge = self.judges[0]
        corrected: dict[str, Any] = {}
        for category, tally in result.categories.items():
            if not tally.primary_judged:
                continue
            try:
                corrected[category] = corrected_rate_for(
                    self.calibration,
                    tally.primary_passed,
                    tally.primary_judged,
                    category=category,
                    judge_model=self.args.judge_model,
                    rubric_fingerprint=judge.rubric_fingerprint,
                )
            except CalibrationError as exc:  # e.g. a judge no better than chance: say it, in words
                corrected[category] = {
                    "error": str(exc),
                    "passes": tally.primary_passed,
                    "n": tally.primary_judged,
                }
        return corrected

    def _corrected_lines(self, corrected: dict[str, Any]) -> list[str]:
        from ..stats import format_rate

        lines = [
            f"judge pass rates corrected with the calibration in {self.args.calibration} "
            f"(judge {self.judges[0].name}; parsed verdicts only):"
        ]
        warnings: list[str] = []
        for category, item in corrected.items():
            if "error" in item:
                lines.append(
                    f"  {category}: {format_rate(item['passes'], item['n'])} observed; "
                    f"cannot correct: {item['error']}"
                )
                continue
            observed = item["observed"]
            lines.append(
                f"  {category}: {format_rate(observed['successes'], observed['n'])} observed → "
                f"{item['rate']:.1%} [{item['low']:.1%}, {item['high']:.1%}] corrected "
                f"({item['scope']} sensitivity/specificity)"
            )
            warnings.extend(w for w in item["warnings"] if w not in warnings)
        lines.extend(f"  warning: {w}" for w in warnings)
        return lines


COMMANDS.append(("run", _add_run))
