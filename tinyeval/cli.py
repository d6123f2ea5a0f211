"""The command line: ``tinyeval COMMAND …`` and ``python -m tinyeval COMMAND …``.

Thin by design: each command parses its arguments, calls the library, prints,
and returns an exit code.

Exit codes: 0 the gate passed or the command did its job; 1 a gate failed;
2 bad usage or bad input (one line on stderr, no traceback); 3 the run could
not complete (for example more errored cases than ``--max-errors``).

Set ``TINYEVAL_TRACEBACK=1`` to see the full traceback behind a one-line error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3

PROG = "tinyeval"


class UsageError(ValueError):
    """A command-line argument that is well-formed for argparse but still wrong."""


# Each command registers itself here as (name, add_parser_function); the
# function receives the sub-parsers object and must set ``handler`` defaults.
_COMMANDS: list[tuple[str, Callable[[Any], None]]] = []


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented, key-sorted JSON on stdout (the ``--json`` output)."""
    json.dump(obj, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


def proportion(text: str) -> float:
    """An argparse type for a proportion typed as ``0.2`` or ``20%``.

    >>> proportion("20%"), proportion("0.05")
    (0.2, 0.05)
    """
    number = text.strip()
    scale = 100.0 if number.endswith("%") else 1.0
    return float(number.removesuffix("%")) / scale  # a ValueError becomes argparse's message


def _count(n: int, noun: str) -> str:
    """``3 cases``, ``1 case``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def parse_key_value(text: str, *, option: str) -> tuple[str, str]:
    """Split ``KEY=VALUE`` as given to a repeatable option such as ``--threshold``.

    >>> parse_key_value("amount_extraction=1.0", option="--threshold")
    ('amount_extraction', '1.0')
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{option} expects KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


# ---- run: begin ----
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
    _add_threshold_options(p.add_argument_group("the gate"))
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
    _add_report_files(p)
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
    _refuse_overwriting([args.cases], [("--out", args.out), ("--review-out", args.review_out),
                                       ("--junit", args.junit), ("--markdown", args.markdown),
                                       ("--html", args.html)])  # fmt: skip


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare the paths
        return os.path.realpath(a) == os.path.realpath(b)


def _refuse_overwriting(inputs: list[str], outputs: list[tuple[str, str | None]]) -> None:
    """An output that is an input, or two outputs that are one file, would lose data."""
    given = [(option, path) for option, path in outputs if path]
    for option, path in given:
        for source in inputs:
            if source != "-" and _same_file(source, path):
                raise UsageError(f"{option} {path} is the input file {source}; write elsewhere")
    for i, (option, path) in enumerate(given):
        for other, other_path in given[i + 1 :]:
            if _same_file(path, other_path):
                raise UsageError(f"{option} and {other} are the same file {path}")


def _thresholds(items: list[str]) -> dict[str, str]:
    """--threshold CATEGORY=RATE options as a dict; a category given twice is an error."""
    thresholds: dict[str, str] = {}
    for item in items:
        category, rate = parse_key_value(item, option="--threshold")
        if category in thresholds:
            raise UsageError(f"--threshold: the category {category!r} is given twice")
        thresholds[category] = rate
    return thresholds


def _judges_from_args(args: argparse.Namespace) -> list[Any]:
    from pathlib import Path

    if not (args.criterion or args.rubric):
        return []
    from .judge import Judge

    if args.votes < 1:
        raise UsageError(f"--votes must be 1 or more, got {args.votes}")
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
    from .dataset import parse_field_mapping
    from .gating import gate, parse_threshold
    from .report import summary_dict, summary_text

    # Everything that can be wrong with the command is found before the cases are read,
    # and everything wrong with the cases before any of them runs.
    _check_run_options(args)
    fields = parse_field_mapping(args.field)
    thresholds = _thresholds(args.threshold)
    for value in [*thresholds.values(), *filter(None, [args.default_threshold])]:
        parse_threshold(value)
    judges = _judges_from_args(args)
    args.judge_model = args.judge_model or "builtin"
    read = {"fields": fields, "id_from_line": args.id_from_line, "format": args.format}
    cases, fingerprint, seen = _read_cases(args, read)
    _check_against_cases(args, thresholds, seen)
    total = seen.total

    execution = _Execution(args, judges, seen.selected)
    result = execution.run(cases, fingerprint=fingerprint)

    report = gate(
        result.categories, thresholds, default_threshold=args.default_threshold, on=args.gate_on
    )
    judged = sum(t.judged for t in result.categories.values())
    unparsed = sum(t.unparsed for t in result.categories.values())
    info = {
        "tinyeval_version": _version(),
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
            f"{_count(total, 'case')} from {args.cases} (dataset {fingerprint}){judge_part} "
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
        from .runner import read_rows

        _write_reports(args, lambda: read_rows(args.out), report, run_info=info)
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
    from . import dataset
    from .runner import parse_shard, shard_index

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
    import difflib

    if seen.selected == 0:
        raise UsageError(f"no case to run in shard {args.shard} of {args.cases}")
    known = sorted(seen.categories)
    for option, names in (
        ("--judge-category", args.judge_category or []),
        ("--threshold", thresholds),
    ):
        for name in names:
            if name in seen.categories:
                continue
            close = difflib.get_close_matches(name, known, n=1)
            if option == "--judge-category" or close:
                hint = (
                    f"did you mean {close[0]!r}?"
                    if close
                    else f"the categories are {', '.join(known)}"
                )
                raise UsageError(f"{option}: no case has the category {name!r}; {hint}")
    if seen.without_output and not args.generate_model:
        first = seen.first_without_output
        where = f"{first.source}:{first.line}" if first.line else repr(first.id)
        raise UsageError(
            f"{seen.without_output} case(s) have no output (the first at {where}) and no "
            "--generate-model was given to generate them"
        )


def _version() -> str:
    from . import __version__

    return __version__


def _add_run_execution_options(p: argparse.ArgumentParser) -> None:
    ex = _add_model_options(p)
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


def _add_model_options(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Options shared by the commands that call models (run, pairwise)."""
    ex = p.add_argument_group("calling models")
    ex.add_argument(
        "--base-url",
        metavar="URL",
        help="base URL of an OpenAI-compatible server (default: $OPENAI_BASE_URL)",
    )
    ex.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="timeout of one model call (default: 60)",
    )
    ex.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        metavar="T",
        help="sampling temperature sent to models (default: 0, recorded in each row; "
        "repeated samples, such as votes, differ only above 0)",
    )
    ex.add_argument(
        "--judge-max-tokens",
        type=int,
        default=256,
        metavar="N",
        help="longest judge reply to ask for (default: 256; a verdict is a line and a sentence)",
    )
    ex.add_argument(
        "--concurrency",
        type=int,
        default=4,
        metavar="N",
        help="cases in flight at once (default: 4)",
    )
    ex.add_argument(
        "--cache",
        default=".tinyeval/cache.sqlite3",
        metavar="PATH",
        help="response cache for model calls (default: .tinyeval/cache.sqlite3; "
        "the offline builtin judge is never cached)",
    )
    ex.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    ex.add_argument(
        "--refresh",
        action="store_true",
        help="call the models again and overwrite what the cache holds",
    )
    return ex


def _open_model(
    args: argparse.Namespace, spec: str, *, max_tokens: int | None, cache: Any
) -> tuple[Any, Any]:
    """Resolve a model spec with the command's options; wrap it in the cache unless told not to.

    Returns the model and the cache (opened on first need, shared by later models).
    """
    from .models import resolve

    model = resolve(
        spec,
        base_url=args.base_url,
        timeout=args.timeout,
        temperature=args.temperature,
        max_tokens=max_tokens,
    )
    if args.no_cache or spec == "builtin":
        return model, cache
    from .cache import ResponseCache, cached

    cache = cache if cache is not None else ResponseCache(args.cache)
    return cached(model, cache, refresh=args.refresh), cache


class _Execution:
    """Wires the run options (models, cache, resume, shard, progress, review) to runner.run."""

    def __init__(self, args: argparse.Namespace, judges: list[Any], total: int) -> None:
        from .runner import parse_shard

        if args.concurrency < 1:
            raise UsageError(f"--concurrency must be 1 or more, got {args.concurrency}")
        if args.max_errors is not None and args.max_errors < 0:
            raise UsageError(f"--max-errors must be 0 or more, got {args.max_errors}")
        self.args = args
        self.judges = judges
        self.total = total
        self.shard = parse_shard(args.shard) if args.shard else None
        self.price = None
        if args.price:
            from .cost import parse_price

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
            from .calibration import load_calibration

            if not judges:
                raise UsageError(
                    "--calibration corrects a judge's pass rate: give a --criterion too"
                )
            self.calibration = load_calibration(args.calibration)

    def _model(self, spec: str, *, max_tokens: int | None) -> Any:
        model, self.cache = _open_model(self.args, spec, max_tokens=max_tokens, cache=self.cache)
        return model

    def _load_previous(self, fingerprint: str) -> set[str]:
        from pathlib import Path

        from .runner import read_rows

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

        from .runner import Progress, run, shard_index, write_row

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
        """Keep the first few failed rows of each category, to say why they failed."""
        if row.get("status") == "pass":
            return
        kept = self.failures.setdefault(str(row.get("category")), [])
        if len(kept) < self.args.show_failures:
            kept.append(row)

    def extra_summary(self, result: Any) -> dict[str, Any]:
        from .report import failure_lines

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
                from .cost import run_cost

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
        from .calibration import CalibrationError, corrected_rate_for

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
        from .stats import format_rate

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


_COMMANDS.append(("run", _add_run))
# ---- run: end ----


# ---- results: begin ----
def _add_threshold_options(p: Any) -> None:
    """--threshold, --default-threshold and --gate-on, on a parser or an argument group."""
    p.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="CATEGORY=RATE",
        help="minimum pass rate for a category, e.g. amount_extraction=1.0 or =95%% (repeatable)",
    )
    p.add_argument(
        "--default-threshold",
        metavar="RATE",
        help="threshold for categories without their own (default: none, "
        "such categories are reported but do not gate)",
    )
    p.add_argument(
        "--gate-on",
        choices=["rate", "lower"],
        default="rate",
        help="gate on the observed rate (default) or on the lower end of its 95%% Wilson interval",
    )


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
    _add_threshold_options(p)
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
    _add_report_files(p)
    p.set_defaults(handler=handler)


def _add_report_files(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--junit", metavar="FILE", help="also write JUnit XML: a test per case, and the gate"
    )
    p.add_argument(
        "--markdown",
        metavar="FILE",
        help="also write the gate table as Markdown (for a PR comment)",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML report (table, chart, judge, every failed case)",
    )


def _write_reports(
    args: argparse.Namespace, rows: Any, report: Any, *, run_info: dict[str, Any] | None = None
) -> None:
    """Write the --junit, --markdown and --html files asked for, each all or nothing.

    ``rows`` is a function returning the result rows, called only when a file needs them.
    """
    from .files import write_text_atomically
    from .report import html_report, junit_xml, summary_markdown

    if args.junit:
        write_text_atomically(args.junit, junit_xml(list(rows()), report) + "\n")
    if args.markdown:
        write_text_atomically(args.markdown, summary_markdown(report) + "\n")
    if args.html:
        write_text_atomically(args.html, html_report(list(rows()), report, run_info=run_info))


def _cmd_gate(args: argparse.Namespace) -> int:
    from .gating import gate
    from .report import summary_dict, summary_text
    from .runner import RunResult, read_rows

    rows = read_rows(args.results)
    if not rows:
        raise UsageError(f"{args.results}: no result rows")
    result = RunResult()
    for row in rows:
        if not isinstance(row.get("category"), str):
            raise UsageError(f"{args.results}: row {row['id']!r} has no category")
        result.add(row, keep=False)
    thresholds = _thresholds(args.threshold)
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
            f"{_count(len(rows), 'row')} from {args.results} (dataset {', '.join(fingerprints)})\n"
        )
        print(
            summary_text(
                report, header=header, judged=judged, unparsed=unparsed, errors=result.errors
            )
        )
        if args.holdout is not None:
            print(_holdout_text(args, holdout_lines))
    _write_reports(
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
    from .dataset import in_holdout
    from .gating import compare_holdout

    held = [in_holdout(r["id"], args.holdout, salt=args.salt) for r in rows]
    dev = [r for r, h in zip(rows, held, strict=True) if not h]
    return compare_holdout(dev, [r for r, h in zip(rows, held, strict=True) if h])


def _holdout_text(args: argparse.Namespace, lines: list[Any]) -> str:
    from .stats import format_rate

    out = [f"\ndevelopment vs holdout ({args.holdout:g} held out, salt {args.salt!r}):"]
    width = max(len(c.category) for c in lines)
    for c in lines:
        mark = "  ← above what the holdout supports: tuned to the development cases?"
        out.append(
            f"  {c.category:<{width}}  dev {format_rate(c.dev_passed, c.dev_total)}   "
            f"holdout {format_rate(c.holdout_passed, c.holdout_total)}"
            + (mark if c.suspicious else "")
        )
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
    from .runner import read_rows

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
    _write_atomically(args.out, merged)  # all or nothing: never a half-merged file
    print(f"merged {len(merged)} rows from {len(args.results)} files into {args.out}")
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
    from .dataset import load, parse_field_mapping, split_holdout

    _refuse_overwriting(
        [args.cases], [("--dev-out", args.dev_out), ("--holdout-out", args.holdout_out)]
    )
    cases = load(args.cases, fields=parse_field_mapping(args.field))
    dev, holdout = split_holdout(cases, args.holdout, salt=args.salt)
    for path, part in ((args.dev_out, dev), (args.holdout_out, holdout)):
        _write_atomically(path, [case.to_record() for case in part])
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


def _write_atomically(path: str, records: list[dict[str, Any]]) -> None:
    """Write records as JSON lines, all or nothing."""
    from .files import write_text_atomically

    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    write_text_atomically(path, text)


_COMMANDS.append(("split", _add_split))


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
    from .gating import compare_runs
    from .runner import read_rows
    from .stats import format_rate

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


_COMMANDS.append(("compare", _add_compare))
_COMMANDS.append(("gate", _add_gate))
_COMMANDS.append(("report", _add_report))
_COMMANDS.append(("merge", _add_merge))
# ---- results: end ----


# ---- pairwise: begin ----
def _add_pairwise(sub: Any) -> None:
    p = sub.add_parser(
        "pairwise",
        help="which of two runs answered better, each case asked in both orders",
        description="Pair two results files by case id and ask a pairwise judge which output is "
        "better on one criterion, always in both orders (A/B, then B/A). A case has a winner "
        "only when both orders agree; the judge's position consistency and first-position "
        "preference are reported.",
    )
    p.add_argument("a", metavar="RESULTS_A", help="results whose outputs are response A")
    p.add_argument("b", metavar="RESULTS_B", help="results whose outputs are response B")
    p.add_argument(
        "--criterion",
        required=True,
        metavar="TEXT|NAME",
        help="the one property to compare on (text, or a built-in name)",
    )
    p.add_argument("--judge-model", default="builtin", metavar="SPEC", help="default: builtin")
    p.add_argument(
        "--category",
        action="append",
        metavar="CATEGORY",
        help="compare only cases of this category (repeatable; default: all)",
    )
    p.add_argument("--out", metavar="FILE", help="write one JSON line per compared case")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    _add_model_options(p)
    p.set_defaults(handler=_cmd_pairwise)


def _cmd_pairwise(args: argparse.Namespace) -> int:
    import concurrent.futures as cf

    from .judge import PairwiseJudge, position_stats
    from .runner import input_text, read_rows
    from .stats import format_rate

    def wanted(row: dict[str, Any]) -> bool:
        return args.category is None or row.get("category") in args.category

    first = {r["id"]: r for r in read_rows(args.a) if wanted(r)}
    second = {r["id"]: r for r in read_rows(args.b) if wanted(r)}
    pairs = [
        (first[i], second[i])
        for i in first
        if i in second
        and first[i].get("output") is not None
        and second[i].get("output") is not None
    ]
    if not pairs:
        raise UsageError(f"{args.a} and {args.b} share no case with an output on both sides")
    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be 1 or more, got {args.concurrency}")
    judge = PairwiseJudge(args.criterion)
    model, cache = _open_model(args, args.judge_model, max_tokens=args.judge_max_tokens, cache=None)

    def compare(pair: tuple[dict[str, Any], dict[str, Any]]) -> Any:
        a, b = pair
        return judge(model, a=a["output"], b=b["output"], question=input_text(a.get("input")),
                     context=a.get("context"))  # fmt: skip

    try:
        with cf.ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            verdicts = list(pool.map(compare, pairs))
    finally:
        if cache is not None:
            cache.close()
    if args.out:
        _write_atomically(
            args.out,
            [{"id": a["id"], "category": b.get("category"), **v.to_dict()}
             for (a, b), v in zip(pairs, verdicts, strict=True)],
        )  # fmt: skip
    n = len(verdicts)
    counts = {w: sum(v.winner == w for v in verdicts) for w in ("A", "B", "TIE", None)}
    position = position_stats(verdicts)
    call_errors = [v.error for v in verdicts if v.error]
    unpaired = len(set(first) ^ set(second)) + (len(set(first) & set(second)) - n)
    if len(call_errors) == n:
        print(f"{PROG}: every model call failed, nothing was compared: {call_errors[0]}",
              file=sys.stderr)  # fmt: skip
        return EXIT_INCOMPLETE
    if args.json:
        print_json({
            "criterion": args.criterion, "judge_model": args.judge_model, "n": n,
            "a_wins": counts["A"], "b_wins": counts["B"], "ties": counts["TIE"],
            "no_winner": counts[None], "call_errors": len(call_errors),
            "not_compared": unpaired, "position": position,
            "rubric_fingerprint": judge.rubric_fingerprint,
        })  # fmt: skip
        return EXIT_OK
    print(f"{n} cases compared on {args.criterion!r} (judge {args.judge_model}), "
          "each asked in both orders:")  # fmt: skip
    print(f"  A better ({args.a}): {format_rate(counts['A'], n)}")
    print(f"  B better ({args.b}): {format_rate(counts['B'], n)}")
    print(f"  tie:                {format_rate(counts['TIE'], n)}")
    print(f"  no winner (the orders disagreed, a reply did not parse, or a call failed): "
          f"{format_rate(counts[None], n)}")  # fmt: skip
    picks = position["picks"]
    print(f"position consistency: {format_rate(position['consistent'], n)}; "
          f"first-position picks: {format_rate(position['first_position_picks'], picks)} "
          "(an unbiased judge sits near 50%)")  # fmt: skip
    print(f"replies that did not parse or whose call failed: {position['parse_failures']} of "
          f"{position['replies']}")  # fmt: skip
    if call_errors:
        print(f"comparisons with a failed model call: {len(call_errors)} (first: {call_errors[0]})")
    if unpaired:
        print(f"not compared: {unpaired} cases missing from one file or without an output")
    return EXIT_OK


_COMMANDS.append(("pairwise", _add_pairwise))
# ---- pairwise: end ----


# ---- stats: begin ----
def _add_stats(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="intervals, sample sizes, power and paired tests, in sentences for a pull request",
        description="Answer the statistical questions behind an eval in one sentence each: "
        "how sure a pass rate is, how many cases a suite needs, what it can detect, and "
        "whether two runs over the same cases really differ.",
    )
    which = p.add_subparsers(dest="statistic", metavar="STATISTIC")
    which.required = True

    w = which.add_parser("wilson", help="the Wilson interval for K passes out of N cases")
    w.add_argument("successes", metavar="K", help="cases that passed")
    w.add_argument("n", metavar="N", help="cases in total")
    w.add_argument("--confidence", default="0.95", help="confidence level (default: 0.95)")
    w.set_defaults(handler=_cmd_stats_wilson)

    s = which.add_parser("sample-size", help="cases per run needed to detect a drop")
    _add_stats_rates(s, target=True)
    s.add_argument("--power", default="0.80", help="chance of detecting the drop (default: 0.80)")
    s.set_defaults(handler=_cmd_stats_sample_size)

    pw = which.add_parser("power", help="the chance that N cases per run detect a drop")
    _add_stats_rates(pw, target=True)
    pw.add_argument("--n", required=True, help="cases per run")
    pw.set_defaults(handler=_cmd_stats_power)

    d = which.add_parser("detectable", help="the smallest drop N cases per run can detect")
    _add_stats_rates(d, target=False)
    d.add_argument("--n", required=True, help="cases per run")
    d.add_argument("--power", default="0.80", help="chance of detecting the drop (default: 0.80)")
    d.set_defaults(handler=_cmd_stats_detectable)

    m = which.add_parser("mcnemar", help="exact McNemar test for two runs over the same cases")
    m.add_argument("b", metavar="B", help="cases that went from pass to fail")
    m.add_argument("c", metavar="C", help="cases that went from fail to pass")
    m.add_argument("--alpha", default="0.05", help="significance level (default: 0.05)")
    m.set_defaults(handler=_cmd_stats_mcnemar)

    for each in (w, s, pw, d, m):
        each.add_argument("--json", action="store_true", help="print one JSON object")


def _add_stats_rates(p: argparse.ArgumentParser, *, target: bool) -> None:
    p.add_argument("--baseline", required=True, help="today's pass rate: 0.90 or 90%%")
    if target:
        p.add_argument("--target", required=True, help="the pass rate to detect: 0.85 or 85%%")
    p.add_argument("--alpha", default="0.05", help="two-sided significance level (default: 0.05)")
    p.add_argument(
        "--continuity",
        action="store_true",
        help="apply Fleiss' continuity correction (a more conservative plan)",
    )


def _stats_whole(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{what} must be a whole number, got {text!r}") from None


def _stats_rate(text: str, what: str) -> float:
    """A proportion typed as 0.9 or 90%."""
    try:
        return proportion(text)
    except ValueError:
        raise UsageError(f"{what} must be a proportion such as 0.9 or 90%, got {text!r}") from None


def _stats_percent(p: float) -> str:
    """A rate the user typed, as they would say it: 0.9 → '90%', 0.875 → '87.5%'."""
    return f"{p * 100:.10g}%"


def _stats_alpha(alpha: float) -> str:
    return f"α = {alpha:g}"


def _stats_print(as_json: bool, sentence: str, fields: dict[str, Any]) -> int:
    if as_json:
        print_json({**fields, "sentence": sentence})
    else:
        print(sentence)
    return EXIT_OK


def _cmd_stats_wilson(args: argparse.Namespace) -> int:
    from .stats import wilson_interval

    k, n = _stats_whole(args.successes, "K"), _stats_whole(args.n, "N")
    confidence = _stats_rate(args.confidence, "--confidence")
    low, high = wilson_interval(k, n, confidence)
    sentence = (
        f"{k}/{n} = {k / n:.1%}; {_stats_percent(confidence)} Wilson interval {low:.1%}–{high:.1%}."
    )
    fields = {
        "statistic": "wilson",
        "successes": k,
        "n": n,
        "rate": k / n,
        "confidence": confidence,
        "low": low,
        "high": high,
    }
    return _stats_print(args.json, sentence, fields)


def _stats_plan(args: argparse.Namespace) -> dict[str, Any]:
    plan: dict[str, Any] = {
        "baseline": _stats_rate(args.baseline, "--baseline"),
        "alpha": _stats_rate(args.alpha, "--alpha"),
        "continuity": args.continuity,
    }
    if hasattr(args, "target"):
        plan["target"] = _stats_rate(args.target, "--target")
    return plan


def _stats_change(baseline: float, target: float) -> str:
    direction = "drop" if target < baseline else "rise"
    return f"a {direction} from {_stats_percent(baseline)} to {_stats_percent(target)}"


def _stats_correction(continuity: bool) -> str:
    return " (with Fleiss' continuity correction)" if continuity else ""


def _cmd_stats_sample_size(args: argparse.Namespace) -> int:
    from .stats import sample_size

    plan = _stats_plan(args)
    goal = _stats_rate(args.power, "--power")
    needed = sample_size(
        plan["baseline"],
        plan["target"],
        alpha=plan["alpha"],
        power=goal,
        continuity=plan["continuity"],
    )
    sentence = (
        f"To detect {_stats_change(plan['baseline'], plan['target'])} with "
        f"{_stats_percent(goal)} power at {_stats_alpha(plan['alpha'])} you need "
        f"{needed} cases per run{_stats_correction(plan['continuity'])}."
    )
    fields = {"statistic": "sample-size", **plan, "power": goal, "n": needed}
    return _stats_print(args.json, sentence, fields)


def _cmd_stats_power(args: argparse.Namespace) -> int:
    from .stats import power, sample_size

    plan = _stats_plan(args)
    n = _stats_whole(args.n, "--n")
    chance = power(
        plan["baseline"], plan["target"], n, alpha=plan["alpha"], continuity=plan["continuity"]
    )
    needed = sample_size(
        plan["baseline"], plan["target"], alpha=plan["alpha"], continuity=plan["continuity"]
    )
    sentence = (
        f"With {n} cases per run, {_stats_change(plan['baseline'], plan['target'])} "
        f"is detected with {chance:.1%} power at {_stats_alpha(plan['alpha'])}"
        f"{_stats_correction(plan['continuity'])}; 80% power needs {needed} cases per run."
    )
    fields = {"statistic": "power", **plan, "n": n, "power": chance, "n_for_80_percent": needed}
    return _stats_print(args.json, sentence, fields)


def _cmd_stats_detectable(args: argparse.Namespace) -> int:
    from .stats import UndefinedStatisticError, detectable_difference

    plan = _stats_plan(args)
    n = _stats_whole(args.n, "--n")
    goal = _stats_rate(args.power, "--power")
    baseline = plan["baseline"]
    opening = (
        f"With {n} cases per run and a {_stats_percent(baseline)} baseline, the "
        f"smallest drop you can detect with {_stats_percent(goal)} power at "
        f"{_stats_alpha(plan['alpha'])}{_stats_correction(plan['continuity'])}"
    )
    try:
        drop: float | None = detectable_difference(
            baseline, n, alpha=plan["alpha"], power=goal, continuity=plan["continuity"]
        )
    except UndefinedStatisticError:
        drop = None  # too few cases: say so in words rather than as an error
    if drop is None:
        sentence = f"{opening} does not exist: not even a drop to 0% is detected reliably."
    else:
        sentence = f"{opening} is to {baseline - drop:.1%} ({drop * 100:.1f} points)."
    fields = {
        "statistic": "detectable",
        **plan,
        "n": n,
        "power": goal,
        "drop": drop,
        "target": None if drop is None else baseline - drop,
    }
    return _stats_print(args.json, sentence, fields)


def _cmd_stats_mcnemar(args: argparse.Namespace) -> int:
    from .stats import mcnemar

    b, c = _stats_whole(args.b, "B"), _stats_whole(args.c, "C")
    alpha = _stats_rate(args.alpha, "--alpha")
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"--alpha must be between 0 and 1 (exclusive), got {args.alpha!r}")
    p = mcnemar(b, c)
    shown = f"p = {p:.3f}" if p >= 0.001 else "p < 0.001"
    chance = f"{p:.1%}" if p >= 0.001 else "under 0.1%"
    significant = p < alpha
    if b + c == 0:
        sentence = (
            "No case changed outcome between the two runs (exact McNemar p = 1.000), "
            "so there is no evidence of a difference."
        )
    else:
        verdict = (
            f"so the second run is {'worse' if b > c else 'better'}"
            if significant
            else "so this is no evidence of a difference"
        )
        sentence = (
            f"{b} cases went from pass to fail and {c} from fail to pass "
            f"(exact McNemar {shown}): a split at least this lopsided happens by chance "
            f"in {chance} of comparisons between equally good runs, {verdict} at "
            f"{_stats_alpha(alpha)}."
        )
    fields = {
        "statistic": "mcnemar",
        "b": b,
        "c": c,
        "p_value": p,
        "alpha": alpha,
        "significant": significant,
    }
    return _stats_print(args.json, sentence, fields)


_COMMANDS.append(("stats", _add_stats))
# ---- stats: end ----


# ---- cost: begin ----
def _add_cost(sub: Any) -> None:
    p = sub.add_parser(
        "cost",
        help="estimate the judge calls, tokens and dollars of a run (or add up a finished one)",
        description="Before a run: cases × votes × orders judge calls, their tokens and, with "
        "--price, their cost. After a run: --results adds up the token usage recorded in the "
        "result rows. Prices are given by you (USD per million tokens): there is no built-in "
        "price list, because prices change.",
    )
    p.add_argument("--cases", type=int, metavar="N", help="number of cases to judge")
    p.add_argument("--tokens-in", type=int, metavar="N", help="input tokens per judge call")
    p.add_argument("--tokens-out", type=int, metavar="N", help="output tokens per judge call")
    p.add_argument(
        "--votes", type=int, default=1, metavar="N", help="judge samples per case (default: 1)"
    )
    p.add_argument(
        "--orders",
        type=int,
        default=1,
        metavar="N",
        help="2 for a pairwise judge asked in both orders (default: 1)",
    )
    p.add_argument(
        "--price",
        metavar="in=X,out=Y",
        help="USD per million input and output tokens, e.g. in=1.0,out=5.0",
    )
    p.add_argument(
        "--results",
        metavar="FILE",
        help="instead of estimating, add up the usage recorded in a results file",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_cmd_cost)


def _cmd_cost(args: argparse.Namespace) -> int:
    from .cost import estimate, parse_price

    price = parse_price(args.price) if args.price else None
    if args.results:
        return _cost_of_results(args.results, price, as_json=args.json)
    missing = [
        f"--{name.replace('_', '-')}"
        for name in ("cases", "tokens_in", "tokens_out")
        if getattr(args, name) is None
    ]
    if missing:
        raise UsageError(f"cost needs {', '.join(missing)} (or --results FILE)")
    result = estimate(
        args.cases,
        args.tokens_in,
        args.tokens_out,
        votes=args.votes,
        orders=args.orders,
        price=price,
    )
    if args.json:
        print_json(result.to_dict())
    elif price is None:
        print(f"{result} Pass --price in=X,out=Y (USD per million tokens) for one.")
    else:
        print(result)
    return EXIT_OK


def _cost_of_results(path: str, price: Any, *, as_json: bool) -> int:
    from .cost import format_tokens, format_usd, run_cost, tally_usage
    from .runner import read_rows

    rows = read_rows(path)
    usages = [row.get("usage") if isinstance(row.get("usage"), dict) else None for row in rows]
    usage = tally_usage(usages)
    known = usage.calls - usage.unknown
    usd = None if price is None or not known else run_cost(usages, price)
    if as_json:
        print_json(
            {
                "results": path,
                "rows": usage.calls,
                "rows_without_usage": usage.unknown,
                "tokens_in": usage.input_tokens,
                "tokens_out": usage.output_tokens,
                "price": None if price is None else price.to_dict(),
                "usd": None if usd is None else round(usd, 6),
            }
        )
        return EXIT_OK
    if not known:
        print(f"{usage.calls:,} rows in {path}, none with token usage: the cost is unknown "
              "(the models called reported no usage, or no model was called)")  # fmt: skip
        return EXIT_OK
    line = (
        f"{usage.calls:,} rows in {path}, {known:,} with token usage: "
        f"{format_tokens(usage.input_tokens)} tokens in, "
        f"{format_tokens(usage.output_tokens)} out"
    )
    if usd is None:
        print(f"{line}; no price given (--price in=X,out=Y, USD per million tokens).")
    else:
        print(f"{line}; about {format_usd(usd)} at {price}.")
    return EXIT_OK


_COMMANDS.append(("cost", _add_cost))
# ---- cost: end ----


# ---- calibrate and label: begin ----
def _add_label(sub: Any) -> None:
    p = sub.add_parser(
        "label",
        help="label result rows by hand, blind to the judge (resumable)",
        description="Show the cases of RESULTS one at a time (input, context, output; never "
        "the judge's verdict, checks or status) and append each label to LABELS at once. "
        "Keys: p PASS, f FAIL, s skip, u undo, q quit. Running the same command again "
        "resumes where it stopped. Without a terminal, stdin gives one key per line.",
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
        help="the judge (by name) whose rubric and model the labels record "
        "(default: the rows' first judge)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON summary on stdout; the session itself goes to stderr",
    )
    p.set_defaults(handler=_cmd_label)


def _cmd_label(args: argparse.Namespace) -> int:
    from .label import label_session, parse_choices, parse_grades
    from .runner import read_rows

    labeler = args.labeler  # None: the session falls back to $USER, the login name, "anonymous"
    choices = None
    if args.grades:
        choices = parse_grades(args.grades)
    elif args.choices:
        choices = parse_choices(args.choices)
    stream = sys.stderr if args.json else sys.stdout

    def write(text: str) -> None:
        print(text, file=stream, flush=True)

    summary = label_session(
        read_rows(args.results),
        args.out,
        labeler=labeler,
        seed=args.seed,
        write=write,
        break_every=args.break_every,
        choices=choices,
        judge=args.judge,
    )
    if args.json:
        print_json(summary.to_dict())
    return EXIT_OK


def _add_calibrate(sub: Any) -> None:
    p = sub.add_parser(
        "calibrate",
        help="compare the judge with your labels: failure recall, false alarms, kappa",
        description="Join RESULTS (result rows) and LABELS (written by tinyeval label) by id "
        "and report how far the judge can stand for your criterion: agreement, the share of "
        "your FAILs it caught, its false alarms, Cohen's kappa, the confusion matrix, and in "
        "words what speaks against trusting it.",
    )
    p.add_argument("results", metavar="RESULTS", help="result rows written by tinyeval run")
    p.add_argument("labels", metavar="LABELS", help="the labels file written by tinyeval label")
    p.add_argument(
        "--judge", metavar="NAME", help="which judge of the rows to calibrate (default: the first)"
    )
    p.add_argument(
        "--only",
        metavar="FILE",
        help="score only the ids in FILE (one JSON object with an id per line, "
        "e.g. a --disagreements file)",
    )
    p.add_argument(
        "--disagreements",
        metavar="FILE",
        help="write every case where judge and human differ: the result row plus "
        "'human', your label record",
    )
    p.add_argument(
        "--save", metavar="CAL.json", help="save the calibration for tinyeval run --calibration"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_cmd_calibrate)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibration import calibrate_results, disagreement_rows
    from .label import read_labels
    from .runner import read_rows

    rows = read_rows(args.results)
    labels = read_labels(args.labels)
    only = [row["id"] for row in read_rows(args.only)] if args.only else None
    cal = calibrate_results(rows, labels, judge=args.judge, only=only)
    for warning in cal.expired:
        print(f"{PROG}: WARNING: {warning}", file=sys.stderr)
    notes = []
    if args.disagreements:
        found = disagreement_rows(cal, rows, labels)
        with open(args.disagreements, "w", encoding="utf-8") as stream:
            stream.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in found)
        notes.append(f"wrote {len(found)} disagreements to {args.disagreements}")
    if args.save:
        cal.save(args.save)
        notes.append(f"saved the calibration to {args.save}")
    if args.json:
        print_json(cal.to_dict())
        for note in notes:
            print(f"{PROG}: {note}", file=sys.stderr)
    else:
        print(cal.to_text())
        print(f"\ndisagreements: {len(cal.disagreements())} of {cal.n} compared cases")
        for note in notes:
            print(note)
    return EXIT_OK


_COMMANDS.append(("label", _add_label))
_COMMANDS.append(("calibrate", _add_calibrate))
# ---- calibrate and label: end ----


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered sub-command."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Evaluate LLM output: code checks, a calibrated PASS/FAIL judge, "
        "Wilson intervals and a gate per category.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for _name, add in _COMMANDS:
        add(sub)
    return parser


def _is_user_error(exc: BaseException) -> bool:
    """Errors raised by tinyeval for bad input or usage (any ValueError it defines)."""
    return isinstance(exc, ValueError) and type(exc).__module__.startswith(("tinyeval", __name__))


def main(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code (it does not call ``sys.exit``).

    >>> main(["stats", "wilson", "27", "30"])
    27/30 = 90.0%; 95% Wilson interval 74.4%–96.5%.
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``tinyeval … | head``): not an error of ours
        sys.stderr.close()
        return EXIT_OK
    except (ValueError, OSError) as exc:
        if os.environ.get("TINYEVAL_TRACEBACK"):
            raise
        if isinstance(exc, OSError):
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            print(f"{PROG}: error: {where}{exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if not _is_user_error(exc):
            raise
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
