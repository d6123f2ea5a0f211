"""A finished session's summary: the gate, and every figure and warning said beside it.

:func:`summarize` reads what a :class:`~tinyeval.session.Session` ran (its
tallies, and for case-level figures the rows it wrote) and assembles one
:class:`~tinyeval.session.RunSummary`: the gate per category (over cases, not
trials, with ``trials`` above 1), the retrieval table and its gate, what
stopping early saved, each trial's flaky cases, graded judges' histograms, a
jury's warnings and Dawid–Skene estimate, rates corrected for the judge's
measured error, batches, usage, cost and the cache. :func:`summarize_rows`
does the same for the rows of a results file (``tinyeval gate`` and ``report``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .calls import Price
from .errors import plural
from .planning import PreparedCases
from .records import Row, read_rows
from .runner import RunResult

if TYPE_CHECKING:
    from .session import RunSummary, Session

__all__ = ["RowsCost", "cost_of_rows", "header", "rows_header", "summarize", "summarize_rows"]


def summarize(
    session: Session,
    ready: PreparedCases,
    result: RunResult,
    *,
    failures: Sequence[Row] = (),
    batch_lines: Sequence[str] = (),
    review_rows: int = 0,
) -> RunSummary:
    """The summary of ``result``, a run of ``ready`` by ``session``.

    >>> import tempfile, os
    >>> from tinyeval.session import RunSettings, Session
    >>> folder = tempfile.mkdtemp()
    >>> cases = os.path.join(folder, "cases.jsonl")
    >>> with open(cases, "w") as f:
    ...     _ = f.write('{"id": "a", "output": "one two three", "expect": {"max_words": 2}}\\n')
    >>> with Session(RunSettings(cases=cases, out=os.path.join(folder, "r.jsonl"))) as session:
    ...     summary = session.run(session.prepare())
    >>> summary.lines[0], summary.info["rows"]
    ('cases that did not pass (up to 5 per category; every row is in ...r.jsonl):', 1)
    """
    from . import __version__
    from .gating import gate
    from .session import RunSummary

    s = session.settings
    gating = s.gate_options()
    judges = session.judges
    text: list[str] = []
    info: dict[str, Any] = {
        "tinyeval_version": __version__,
        "cases_file": s.cases,
        "cases": ready.in_file,
        "selected": ready.selected,
        "rows": result.total,
        "complete": result.complete,
        "stopped_reason": result.stopped_reason,
        "out": s.out,
        "dataset_fingerprint": ready.fingerprint,
        "judge_model": session.judge_spec if judges else None,
        "judges": [j.name for j in judges],
        "criteria": {j.name: j.criterion_text for j in judges},
        "rubric_fingerprints": {j.name: j.rubric_fingerprint for j in judges},
        "usage": result.usage,
        "elapsed_s": round(result.elapsed_s, 3),
        "suite": None if s.suite is None else {"path": s.suite.path,
                                               "fingerprint": s.suite.fingerprint,
                                               "overridden": list(s.suite_overridden)},
    }  # fmt: skip
    if s.trials > 1:  # the gate counts cases, not trials: the case is the unit
        tallies, lines, info["trials"] = _trial_figures(s.out, s.trials, s.trials_gate)
        report = gate(tallies, **gating)
    else:
        report = gate(result.sorted_categories(), **gating)
        lines = []
    retrieval = _retrieval(s.k, s.retrieval_threshold, ready, gating)
    if retrieval is not None:
        table, verdict = retrieval
        info["retrieval"] = table.to_dict()
        text += [table.to_text(), *([verdict.to_text()] if verdict else []), ""]
        if verdict is not None:
            info["retrieval_gate"] = verdict.to_dict()
    if s.stop_when_decided:
        info["decided_early"] = {c: d.to_dict() for c, d in result.decisions.items()}
        text += _early_lines(result, ready)
    text += lines
    text += _graded_summaries(s.out, judges)
    text += _failure_lines(failures, shown=s.show_failures, where=s.out)
    text += batch_lines
    info["resumed_rows"] = result.resumed
    text += _run_lines(session, result, info, review_rows)
    if len(session.jurors) > 1:
        text += _jury_lines(session, info)
    if judges and s.generate_model:
        from .rag.judges import self_evaluation_warning

        warning = self_evaluation_warning(s.generate_model, session.judge_spec)
        if warning:
            info["self_evaluation_warning"] = warning
            text.append(f"warning: {warning}")
    retrieval_passed = retrieval is None or retrieval[1] is None or retrieval[1].passed
    if not retrieval_passed:
        assert retrieval is not None and retrieval[1] is not None
        text.append(f"retrieval gate: FAILED — blocking: {', '.join(retrieval[1].blocking)}")
    tallies_now = result.categories.values()
    return RunSummary(
        report, info=info, lines=tuple(text), judged=sum(t.judged for t in tallies_now),
        unparsed=sum(t.unparsed for t in tallies_now), errors=result.errors,
        complete=result.complete, stopped_reason=result.stopped_reason, rows=result.total,
        retrieval_passed=retrieval_passed, capped=result.capped,
    )  # fmt: skip


def header(session: Session, ready: PreparedCases) -> str:
    """The line above the gate table: the cases, the dataset, the judges, the rows file (and
    the suite file, when one gave the settings).

    >>> from tinyeval.session import RunSettings, Session
    >>> from tinyeval.planning import PreparedCases
    >>> print(header(Session(RunSettings(cases="c.jsonl")), PreparedCases((), "ab12", in_file=3,
    ...                                                                   selected=3)), end="")
    3 cases from c.jsonl (dataset ab12) · rows in tinyeval-results.jsonl
    """
    s = session.settings
    names = ", ".join(j.name for j in session.judges)
    judge_part = f" · judge {session.judge_spec}: {names}" if session.judges else ""
    selected = f" ({ready.selected:,} selected)" if ready.selected != ready.in_file else ""
    text = (f"{plural(ready.in_file, 'case')}{selected} from {s.cases} (dataset "
            f"{ready.fingerprint}){judge_part} · rows in {s.out}\n")  # fmt: skip
    if s.suite is not None:
        again = list(s.suite_overridden)
        given = f"; given again, overriding it: {', '.join(again)}" if again else ""
        text = f"suite {s.suite.path} ({s.suite.fingerprint}){given}\n{text}"
    return text


def summarize_rows(
    rows: Sequence[Row], *, source: str, gate: Mapping[str, Any] | None = None
) -> RunSummary:
    """The summary of a results file's rows, gated as the run that wrote them gated (the
    settings it recorded) unless ``gate`` (keywords of :func:`tinyeval.gating.gate_rows`)
    gives others; never a pass on an incomplete set of rows. A threshold for a category
    that looks like a misspelling of the rows' is refused.

    >>> rows = [{"id": "a", "category": "tone", "status": "pass"},
    ...         {"id": "b", "category": "tone", "status": "fail"}]
    >>> summary = summarize_rows(rows, source="rows.jsonl", gate={"thresholds": {"tone": 1.0}})
    >>> summary.passed, summary.rows, summary.info["dataset_fingerprints"]
    (False, 2, ['unknown'])
    """
    from .gating import gate_rows
    from .records import tally
    from .session import RunSummary, refuse_unknown_categories

    thresholds = (gate or {}).get("thresholds") or {}
    refuse_unknown_categories("threshold", thresholds, {str(r.get("category")) for r in rows},
                              only_typos=True)  # fmt: skip
    gated = gate_rows(rows, **(gate or {}))
    tallies = tally(rows).values()
    fingerprints = sorted({str(r.get("dataset_fingerprint") or "unknown") for r in rows})
    info: dict[str, Any] = {"results": source, "rows": len(rows),
                            "dataset_fingerprints": fingerprints,
                            "gate_settings_from_results": list(gated.remembered),
                            "gate_settings_overridden": list(gated.overridden)}  # fmt: skip
    notes = []
    if gated.remembered:
        notes.append(f"gate settings from the results (as the run gated): "
                     f"{', '.join(gated.remembered)}")  # fmt: skip
    if gated.overridden:
        notes.append(f"given again, overriding the run's: "
                     f"{', '.join(gated.overridden)}")  # fmt: skip
    return RunSummary(
        gated.report, info=info, lines=tuple(notes), judged=sum(t.judged for t in tallies),
        unparsed=sum(t.unparsed for t in tallies), errors=sum(t.errors for t in tallies),
        complete=gated.report.complete, rows=len(rows),
    )  # fmt: skip


def rows_header(summary: RunSummary) -> str:
    """The line above a results file's gate table: its rows and dataset fingerprints.

    >>> rows_header(summarize_rows([{"id": "a", "category": "c", "status": "pass"}],
    ...                            source="r.jsonl"))
    '1 row from r.jsonl (dataset unknown)\\n'
    """
    info = summary.info
    return (f"{plural(info['rows'], 'row')} from {info['results']} (dataset "
            f"{', '.join(info['dataset_fingerprints'])})\n")  # fmt: skip


@dataclass(frozen=True)
class RowsCost:
    """What the rows of a results file say they cost: the token usage they recorded and, with
    a price, the US dollars (None when no row recorded usage: unknown, never $0).

    >>> from tinyeval.calls import Price
    >>> rows = [{"usage": {"input_tokens": 1500, "output_tokens": 200}}, {"usage": None}]
    >>> print(cost_of_rows(rows, Price(1.0, 5.0), source="r.jsonl"))  # doctest: +ELLIPSIS
    2 rows in r.jsonl, 1 with token usage: 1.5k tokens in, 200 out; about $0.0025 at $1.00/...
    """

    source: str
    rows: int
    rows_without_usage: int
    tokens_in: int
    tokens_out: int
    price: Price | None
    usd: float | None

    def to_dict(self) -> dict[str, Any]:
        """The figures as JSON (what ``cost --results --json`` prints)."""
        return {"results": self.source, "rows": self.rows,
                "rows_without_usage": self.rows_without_usage, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out,
                "price": None if self.price is None else self.price.to_dict(),
                "usd": None if self.usd is None else round(self.usd, 6)}  # fmt: skip

    def __str__(self) -> str:
        from .calls import format_tokens, format_usd

        known = self.rows - self.rows_without_usage
        if not known:
            return (f"{self.rows:,} rows in {self.source}, none with token usage: the cost is "
                    "unknown (the models called reported no usage, or no model was "
                    "called)")  # fmt: skip
        tokens = f"{format_tokens(self.tokens_in)} tokens in, {format_tokens(self.tokens_out)} out"
        line = f"{self.rows:,} rows in {self.source}, {known:,} with token usage: {tokens}"
        if self.usd is None:
            return f"{line}; no price given."
        return f"{line}; about {format_usd(self.usd)} at {self.price}."


def cost_of_rows(rows: Sequence[Row], price: Price | None, *, source: str) -> RowsCost:
    """Add up the token usage the rows recorded, and its cost at ``price``.

    >>> found = cost_of_rows([{"usage": {"input_tokens": 10, "output_tokens": 2}}], None,
    ...                      source="r.jsonl")
    >>> found.tokens_in, found.usd
    (10, None)
    """
    from .calls import run_cost, tally_usage

    usages = [row.get("usage") if isinstance(row.get("usage"), dict) else None for row in rows]
    usage = tally_usage(usages)
    known = usage.calls - usage.unknown
    usd = None if price is None or not known else run_cost(usages, price)
    return RowsCost(source, usage.calls, usage.unknown, usage.input_tokens, usage.output_tokens,
                    price, usd)  # fmt: skip


def _run_lines(
    session: Session, result: RunResult, info: dict[str, Any], review_rows: int
) -> list[str]:
    """Shards, resumed rows, usage and cost, the cache, corrected rates, the review file."""
    from .report import usage_line

    s = session.settings
    text = []
    if s.shard:
        info["shard"] = f"{s.shard[0]}/{s.shard[1]}"
        text.append(f"shard {info['shard']}: join shards with tinyeval merge")
    if result.resumed:
        text.append(f"resumed: {result.resumed} rows were kept from the earlier run")
    line, cost = usage_line(result.usage, session.price)
    if line:
        text.append(line)
    if cost is not None:
        info["cost_usd"] = cost
    if session.cache is not None:
        hits, misses, _stores = session.cache.stats()
        info["cache"] = {"path": s.cache, "hits": hits, "misses": misses}
        if session.cache.warning:
            info["cache"]["warning"] = session.cache.warning
            text.append(f"warning: the response cache: {session.cache.warning}")
    if session.calibration is not None:
        from .calibration import corrected_lines, corrected_rates

        judge = session.judges[0]
        corrected = corrected_rates(session.calibration, result.sorted_categories(),
                                    judge=judge, judge_model=session.judge_spec)  # fmt: skip
        info["corrected"] = {name: item.to_dict() for name, item in corrected.items()}
        text += corrected_lines(corrected, source=str(s.calibration), judge=judge.name)
    if s.review_out:
        info["review_out"], info["review_rows"] = s.review_out, review_rows
        text.append(f"non-unanimous verdicts for review: {review_rows} (in {s.review_out})")
    return text


def _failure_lines(failures: Sequence[Row], *, shown: int, where: str) -> list[str]:
    if not failures:
        return []
    from .report import failure_lines

    text = failure_lines(list(failures), shown=shown, where=where)
    return [*text, ""] if text else []


def _retrieval(
    k: str, thresholds_text: Sequence[str], ready: PreparedCases, gating: Mapping[str, Any]
) -> Any:
    """The retrieval table (and its gate) of the cases with retrieval data, or None."""
    from .errors import InputError

    if not ready.queries and not thresholds_text:
        return None  # no case has retrieval data, and no gate asks for it
    from .rag.retrieval import parse_retrieval_threshold, retrieval_report

    thresholds = [parse_retrieval_threshold(text) for text in thresholds_text]
    queries: list[Any] = []
    if ready.queries:  # the cases without retrieval data count as queries that found nothing
        missing = ready.without_retrieval.items()
        queries = [*ready.queries, *((c, None, None) for c, n in missing for _ in range(n))]
    if not any(query.retrieved is not None for query in queries):
        if thresholds:
            raise InputError("no case has retrieved and relevant data",
                             field="retrieval_threshold")  # fmt: skip
        return None
    try:
        ks = {int(part) for part in k.split(",") if part.strip()}
    except ValueError:
        raise InputError(f"expected whole numbers separated by commas, got {k!r}",
                         field="k") from None  # fmt: skip
    ks |= {t.k for t in thresholds if t.k is not None}
    table = retrieval_report(sorted(queries, key=lambda query: str(query[0])), ks=sorted(ks))
    on = "lower" if gating.get("inconclusive") == "block" else "rate"
    return table, (table.check(thresholds, on=on) if thresholds else None)


def _early_lines(result: RunResult, ready: PreparedCases) -> list[str]:
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


def _trial_figures(
    out: str, trials: int, trials_gate: str
) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """Case-level tallies for the gate, the text per category, the JSON."""
    from .estimates.trials import summarize_trials
    from .records import trial_outcomes

    tallies: dict[str, Any] = {}
    lines: list[str] = []
    data: dict[str, Any] = {"k": trials, "gate": trials_gate, "categories": {}}
    passes = all if trials_gate == "all" else any
    for category, outcomes in trial_outcomes(read_rows(out)).items():
        summary = summarize_trials(outcomes)
        passed = sum(passes(trials) for trials in outcomes.values())
        tallies[category] = {"passed": passed, "total": len(outcomes)}
        data["categories"][category] = summary.to_dict()
        lines += [f"trials of {category}:", str(summary), ""]
    return tallies, lines, data


def _graded_summaries(out: str, judges: Sequence[Any]) -> list[str]:
    """Each graded judge's scores: the histogram beside the mean, and the bottom 10% by id."""
    from .rag.judges import GradedJudge, graded_scores

    graded = [judge for judge in judges if isinstance(judge, GradedJudge)]
    if not graded:
        return []
    from .judges.graded import graded_summary

    rows = read_rows(out)
    lines = []
    for judge in graded:
        scores = graded_scores(rows, judge.name)
        if scores:
            lines += [f"graded scores of {judge.name}:",
                      graded_summary(scores, scale=judge.scale).to_text(), ""]  # fmt: skip
    return lines


def _jury_lines(session: Session, info: dict[str, Any]) -> list[str]:
    """A jury of one family's warning, and with ``dawid_skene`` the jurors' error rates
    estimated from their verdicts alone."""
    from .judges.jury import dawid_skene, shared_family
    from .records import verdicts

    lines = []
    family = shared_family(session.jurors)
    if family:
        lines.append(f"warning: every juror is of the {family} family: jurors of one family "
                     "share blind spots, so the jury adds less than it seems")  # fmt: skip
        info["jury_warning"] = f"shared family {family}"
    if not session.settings.dawid_skene:
        return lines
    by_case: dict[str, dict[str, Any]] = {}
    for row in read_rows(session.settings.out):
        for name, verdict in verdicts(row).items():
            jurors = verdict.get("jurors")
            if isinstance(jurors, Mapping):
                by_case[f"{row['id']}/{name}"] = {
                    str(spec): juror.get("verdict") for spec, juror in jurors.items()
                }
    estimate = dawid_skene(by_case) if by_case else None
    if estimate is not None:
        info["dawid_skene"] = estimate.to_dict()
        lines += ["estimated without labels (Dawid-Skene):", str(estimate)]
    return lines
