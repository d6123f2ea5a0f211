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
    p.add_argument("--out", default=DEFAULT_OUT, metavar="FILE",
                   help=f"where result rows are written, one JSON line per case (default: {DEFAULT_OUT})")
    data = p.add_argument_group("reading the cases")
    data.add_argument("--field", action="append", default=[], metavar="KEY=PATH",
                      help="map a recognised key to a dotted path in your records, "
                      "e.g. input=request.messages.0.content (repeatable)")
    data.add_argument("--id-from-line", action="store_true",
                      help="name cases without an id after their line: line-N")
    data.add_argument("--format", choices=["jsonl", "json", "csv", "yaml"],
                      help="the file format, when the name does not tell it")
    data.add_argument("--sample", type=int, metavar="N", help="run a seeded random sample of N cases")
    data.add_argument("--seed", default="0", help="seed for --sample (default: 0)")
    gate_opts = p.add_argument_group("the gate")
    gate_opts.add_argument("--threshold", action="append", default=[], metavar="CATEGORY=RATE",
                           help="minimum pass rate for a category, e.g. amount_extraction=1.0 or =95%% "
                           "(repeatable)")
    gate_opts.add_argument("--default-threshold", metavar="RATE",
                           help="threshold for categories without their own (default: none, "
                           "such categories are reported but do not gate)")
    gate_opts.add_argument("--gate-on", choices=["rate", "lower"], default="rate",
                           help="gate on the observed rate (default) or on the lower end of "
                           "its 95%% Wilson interval")
    judging = p.add_argument_group("the judge (runs only when a criterion is given)")
    judging.add_argument("--criterion", action="append", default=[], metavar="TEXT|NAME",
                         help="one property to judge, as text or a built-in name: "
                         "unsupported-claims, answers-the-question, refuses-when-ambiguous "
                         "(repeatable: one judge per criterion)")
    judging.add_argument("--rubric", action="append", default=[], metavar="FILE",
                         help="a criterion from a file: plain text, or JSON with "
                         '"criterion" and optional "name", "steps", "template" (repeatable)')
    judging.add_argument("--judge-model", default="builtin", metavar="SPEC",
                         help="builtin (offline, default), openai:MODEL, anthropic:MODEL, "
                         "cmd:COMMAND or py:MODULE:FUNCTION")
    judging.add_argument("--votes", type=int, default=1, metavar="N",
                         help="ask the judge N times and take the majority (default: 1)")
    judging.add_argument("--judge-style", choices=["verdict-first", "evidence-first"],
                         default="verdict-first", help="answer format the judge is asked for")
    judging.add_argument("--judge-all", action="store_true",
                         help="judge cases whose code checks failed too (default: skip them, "
                         "they already fail)")
    judging.add_argument("--review-out", metavar="FILE",
                         help="write the rows whose votes were not unanimous, for review")
    judging.add_argument("--calibration", metavar="FILE",
                         help="a saved calibration (tinyeval calibrate --save): also report pass "
                         "rates corrected for the judge's measured error")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    p.set_defaults(handler=_cmd_run)
    _add_run_execution_options(p)


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
                raise UsageError(f"{path}: unknown keys {sorted(unknown)}; expected criterion, "
                                 "name, steps, template")
            specs.append(spec)
        else:
            if not text.strip():
                raise UsageError(f"{path}: the rubric file is empty")
            specs.append({"criterion": text.strip()})
    judges = [
        Judge(spec["criterion"], votes=args.votes, style=args.judge_style,
              template=spec.get("template"), steps=spec.get("steps"), name=spec.get("name"))
        for spec in specs
    ]
    names = [j.name for j in judges]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"two judges are named {duplicates[0]!r}; give rubrics distinct names")
    return judges


def _cmd_run(args: argparse.Namespace) -> int:
    from . import dataset
    from .gate import gate
    from .report import summary_dict, summary_text

    fields = dataset.parse_field_mapping(args.field)
    thresholds = dict(parse_key_value(t, option="--threshold") for t in args.threshold)
    judges = _judges_from_args(args)
    read = {"fields": fields, "id_from_line": args.id_from_line, "format": args.format}
    # Validate the whole file before anything runs or is written.
    if args.sample is not None or args.cases == "-":
        cases: Any = dataset.load(args.cases, **read)
        if args.sample is not None:
            cases = dataset.sample(cases, args.sample, seed=args.seed)
        fingerprint = dataset.dataset_fingerprint(cases)
        total = len(cases)
    else:
        counted = list(_count_cases(dataset.iter_cases(args.cases, **read)))
        fingerprint, total = counted[0]
        if total == 0:
            raise dataset.DatasetError("no cases in the file", path=args.cases)
        cases = dataset.iter_cases(args.cases, **read)
    from .gate import parse_threshold

    for value in [*thresholds.values(), *filter(None, [args.default_threshold])]:
        parse_threshold(value)  # checked now, not after an expensive run

    execution = _prepare_execution(args, judges, total)
    result = execution.run(cases, fingerprint=fingerprint)

    report = gate(result.categories, thresholds, default_threshold=args.default_threshold, on=args.gate_on)
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
        print_json(summary_dict(report, run_info=info, judged=judged, unparsed=unparsed,
                                errors=result.errors))
    elif not args.quiet:
        judge_part = f" · judge {args.judge_model}: {', '.join(info['judges'])}" if judges else ""
        header = (f"{total} cases from {args.cases} (dataset {fingerprint}){judge_part} "
                  f"· rows in {args.out}\n")
        print(summary_text(report, header=header, judged=judged, unparsed=unparsed,
                           errors=result.errors, extra_lines=tuple(extra.get("text", ()))))
    if not result.complete:
        print(f"{PROG}: the run did not complete: {result.stopped_reason}; "
              f"{result.total} of {total} cases have rows in {args.out}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK if report.passed else EXIT_GATE_FAILED


def _count_cases(cases: Any) -> Any:
    from .dataset import dataset_fingerprint

    count = 0

    def counting() -> Any:
        nonlocal count
        for case in cases:
            count += 1
            yield case

    fingerprint = dataset_fingerprint(counting())
    yield fingerprint, count


def _version() -> str:
    from . import __version__

    return __version__


def _add_run_execution_options(p: argparse.ArgumentParser) -> None:
    ex = p.add_argument_group("calling models")
    ex.add_argument("--generate-model", metavar="SPEC",
                    help="generate the output of cases that have none, from their input")
    ex.add_argument("--prompt-template", metavar="FILE",
                    help="a text file with {input} where the case's input goes (for --generate-model)")
    ex.add_argument("--base-url", metavar="URL",
                    help="base URL of an OpenAI-compatible server (default: $OPENAI_BASE_URL)")
    ex.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                    help="timeout of one model call (default: 60)")
    ex.add_argument("--concurrency", type=int, default=4, metavar="N",
                    help="cases in flight at once (default: 4)")
    ex.add_argument("--max-errors", type=int, metavar="N",
                    help="stop and exit 3 once more than N cases have errored (default: no limit; "
                    "errored cases always count as not passed)")
    ex.add_argument("--cache", default=".tinyeval/cache.sqlite3", metavar="PATH",
                    help="response cache for model calls (default: .tinyeval/cache.sqlite3; "
                    "the offline builtin judge is never cached)")
    ex.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    ex.add_argument("--refresh", action="store_true",
                    help="call the models again and overwrite what the cache holds")
    ex.add_argument("--resume", action="store_true",
                    help="keep the rows already in --out and run only the cases without one")
    ex.add_argument("--shard", metavar="I/N",
                    help="run only shard I of N (a stable slice by id; join with tinyeval merge)")
    ex.add_argument("--price", metavar="in=X,out=Y",
                    help="USD per million input and output tokens, to report the run's cost")


def _prepare_execution(args: argparse.Namespace, judges: list[Any], total: int) -> _Execution:
    return _Execution(args, judges, total)


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
                raise UsageError(f"{args.prompt_template}: the template has no {{input}} placeholder")
        self.cache: Any = None
        self.judge_model = self._model(args.judge_model) if judges else None
        self.generate_model = self._model(args.generate_model) if args.generate_model else None
        self.previous: list[dict[str, Any]] = []
        self.review_count = 0

    def _model(self, spec: str) -> Any:
        from .models import resolve

        model = resolve(spec, base_url=self.args.base_url, timeout=self.args.timeout)
        if self.args.no_cache or spec == "builtin":
            return model
        from .cache import ResponseCache, cached

        if self.cache is None:
            self.cache = ResponseCache(self.args.cache)
        return cached(model, self.cache, refresh=self.args.refresh)

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
                f"{sorted(map(str, other))[0]}, now {fingerprint}); move it away or run without --resume"
            )
        return {r["id"] for r in self.previous}

    def run(self, cases: Any, *, fingerprint: str) -> Any:
        from .runner import Progress, RunResult, run, shard_index

        done = self._load_previous(fingerprint)
        shard = self.shard

        def selected() -> Any:
            for case in cases:
                if shard and shard_index(case.id, shard[1]) != shard[0]:
                    continue
                if case.id not in done:
                    yield case

        progress = Progress(self.total, sys.stderr, enabled=not (self.args.quiet or self.args.json))
        for _ in done:
            progress.done += 1
        review = open(self.args.review_out, "a" if self.args.resume else "w",  # noqa: SIM115
                      encoding="utf-8") if self.args.review_out else None

        def on_row(row: dict[str, Any]) -> None:
            progress.update(row)
            if review is not None and any(not v.get("unanimous", True) for v in row["judges"].values()):
                from .runner import write_row

                write_row(review, row)
                self.review_count += 1

        try:
            result: RunResult = run(
                selected(), judges=self.judges, judge_model=self.judge_model,
                generate_model=self.generate_model, prompt_template=self.template,
                judge_all=self.args.judge_all, out=self.args.out, append=self.args.resume,
                concurrency=self.args.concurrency, max_errors=self.args.max_errors,
                keep_rows=False, on_row=on_row, dataset_fingerprint=fingerprint,
            )
        except KeyboardInterrupt:
            progress.close()
            command = " ".join([PROG, *sys.argv[1:]]) if sys.argv[1:] else f"{PROG} run …"
            if "--resume" not in command:
                command += " --resume"
            print(f"{PROG}: interrupted; finished rows are kept in {self.args.out}. "
                  f"Resume with:\n  {command}", file=sys.stderr)
            raise
        finally:
            progress.close()
            if review is not None:
                review.close()
            if self.cache is not None:
                self.cache.close()
        for row in self.previous:
            result.add(row, keep=False)
        return result

    def extra_summary(self, result: Any) -> dict[str, Any]:
        text: list[str] = []
        data: dict[str, Any] = {"resumed_rows": len(self.previous)}
        if self.shard:
            data["shard"] = f"{self.shard[0]}/{self.shard[1]}"
            text.append(f"shard {self.shard[0]} of {self.shard[1]}: join shards with tinyeval merge")
        if self.previous:
            text.append(f"resumed: {len(self.previous)} rows were kept from the earlier run")
        tokens = result.usage
        if tokens["input_tokens"] or tokens["output_tokens"]:
            line = f"tokens: {tokens['input_tokens']:,} in, {tokens['output_tokens']:,} out"
            if self.price is not None:
                from .cost import run_cost

                dollars = run_cost([tokens], self.price)
                data["cost_usd"] = dollars
                line += f"; cost about ${dollars:,.4f}"
            text.append(line)
        if self.args.review_out:
            data["review_out"] = self.args.review_out
            data["review_rows"] = self.review_count
            text.append(f"non-unanimous verdicts for review: {self.review_count} (in {self.args.review_out})")
        return {"json": data, "text": text}


_COMMANDS.append(("run", _add_run))
# ---- run: end ----

# ---- results: begin ----
def _add_threshold_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", action="append", default=[], metavar="CATEGORY=RATE",
                   help="minimum pass rate for a category (repeatable)")
    p.add_argument("--default-threshold", metavar="RATE",
                   help="threshold for categories without their own (default: none)")
    p.add_argument("--gate-on", choices=["rate", "lower"], default="rate",
                   help="gate on the observed rate (default) or its Wilson lower bound")


def _add_gate(sub: Any) -> None:
    p = sub.add_parser(
        "gate", help="apply per-category thresholds to a results file (e.g. merged shards)",
        description="Recompute the per-category table and gate from result rows, without "
        "running anything.",
    )
    p.add_argument("results", metavar="RESULTS", help="a results file written by tinyeval run")
    _add_threshold_options(p)
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(handler=_cmd_gate)


def _cmd_gate(args: argparse.Namespace) -> int:
    from .gate import gate
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
    thresholds = dict(parse_key_value(t, option="--threshold") for t in args.threshold)
    report = gate(result.categories, thresholds, default_threshold=args.default_threshold,
                  on=args.gate_on)
    judged = sum(t.judged for t in result.categories.values())
    unparsed = sum(t.unparsed for t in result.categories.values())
    fingerprints = sorted({str(r.get("dataset_fingerprint")) for r in rows})
    if args.json:
        info = {"results": args.results, "rows": len(rows), "dataset_fingerprints": fingerprints}
        print_json(summary_dict(report, run_info=info, judged=judged, unparsed=unparsed,
                                errors=result.errors))
    else:
        header = f"{len(rows)} rows from {args.results} (dataset {', '.join(fingerprints)})\n"
        print(summary_text(report, header=header, judged=judged, unparsed=unparsed,
                           errors=result.errors))
    return EXIT_OK if report.passed else EXIT_GATE_FAILED


def _add_merge(sub: Any) -> None:
    p = sub.add_parser(
        "merge", help="join the results of shards (run --shard I/N) into one file",
        description="Join result files into one. Every file must come from the same dataset "
        "(same fingerprint) and no case may appear twice.",
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="result files to join")
    p.add_argument("--out", required=True, metavar="FILE", help="the joined results file")
    p.set_defaults(handler=_cmd_merge)


def _cmd_merge(args: argparse.Namespace) -> int:
    import os
    import tempfile

    from .runner import read_rows, write_row

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
        raise UsageError(f"{path_a} (dataset {fp_a}) and {path_b} (dataset {fp_b}) come from "
                         "different datasets")
    directory = os.path.dirname(os.path.abspath(args.out))
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=directory, delete=False,
                                     suffix=".partial") as tmp:
        for row in merged:
            write_row(tmp, row)
    os.replace(tmp.name, args.out)  # all or nothing: never a half-merged file
    print(f"merged {len(merged)} rows from {len(args.results)} files into {args.out}")
    return EXIT_OK


_COMMANDS.append(("gate", _add_gate))
_COMMANDS.append(("merge", _add_merge))
# ---- results: end ----

# ---- stats: begin ----
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
    p.add_argument("--votes", type=int, default=1, metavar="N",
                   help="judge samples per case (default: 1)")
    p.add_argument("--orders", type=int, default=1, metavar="N",
                   help="2 for a pairwise judge asked in both orders (default: 1)")
    p.add_argument("--price", metavar="in=X,out=Y",
                   help="USD per million input and output tokens, e.g. in=1.0,out=5.0")
    p.add_argument("--results", metavar="FILE",
                   help="instead of estimating, add up the usage recorded in a results file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_cmd_cost)


def _cmd_cost(args: argparse.Namespace) -> int:
    from .cost import estimate, parse_price

    price = parse_price(args.price) if args.price else None
    if args.results:
        return _cost_of_results(args.results, price, as_json=args.json)
    missing = [f"--{name.replace('_', '-')}" for name in ("cases", "tokens_in", "tokens_out")
               if getattr(args, name) is None]
    if missing:
        raise UsageError(f"cost needs {', '.join(missing)} (or --results FILE)")
    result = estimate(args.cases, args.tokens_in, args.tokens_out, votes=args.votes,
                      orders=args.orders, price=price)
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
    usd = None if price is None else run_cost(usages, price)
    if as_json:
        print_json({"results": path, "rows": usage.calls, "rows_without_usage": usage.unknown,
                    "tokens_in": usage.input_tokens, "tokens_out": usage.output_tokens,
                    "price": None if price is None else price.to_dict(),
                    "usd": None if usd is None else round(usd, 6)})
        return EXIT_OK
    known = usage.calls - usage.unknown
    line = (f"{usage.calls:,} rows in {path}, {known:,} with token usage: "
            f"{format_tokens(usage.input_tokens)} tokens in, "
            f"{format_tokens(usage.output_tokens)} out")
    if usd is None:
        print(f"{line}; no price given (--price in=X,out=Y, USD per million tokens).")
    else:
        print(f"{line}; about {format_usd(usd)} at {price}.")
    return EXIT_OK


_COMMANDS.append(("cost", _add_cost))
# ---- cost: end ----

# ---- calibrate and label: begin ----
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
