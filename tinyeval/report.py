"""A run's summary in text, JSON and Markdown, and the one place text from data is neutralised
for where it is printed; extras add sections and reports through ``_EXTRAS``."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from . import __version__, _extra
from .errors import listed, plural, shorten
from .gating import (
    CategoryVerdict,
    GateReport,
    from_rows,
    gate,
    gate_rows,
    refuse_unknown_categories,
)
from .records import Completeness, Row, case_rows, read_rows, tally, verdicts, write_text_atomically
from .runner import PreparedCases, RunResult
from .stats import format_rate

if TYPE_CHECKING:
    from .session import Session


class Section(NamedTuple):
    """A part of the summary an extra contributes (``failed``: why its own gate failed).

    >>> Section(["retrieval: ..."], {"retrieval": {}}).failed is None
    True
    """

    lines: list[str]
    info: dict[str, Any]
    failed: str | None = None


@dataclass(frozen=True)
class RunSummary:
    """What a run found: the gate, its JSON ``info``, the text ``lines`` under the table and the
    ``header`` above it."""

    report: GateReport
    header: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)
    lines: tuple[str, ...] = ()
    judged: int = 0
    unparsed: int = 0
    errors: int = 0
    complete: bool = True
    stopped_reason: str | None = None
    rows: int = 0
    sections_failed: tuple[str, ...] = ()  # why extras' sections failed their own gates
    capped: str | None = None

    @property
    def passed(self) -> bool:
        return self.report.passed and not self.sections_failed

    def to_dict(self) -> dict[str, Any]:
        """What ``run --json`` prints."""
        rate = self.unparsed / self.judged if self.judged else None
        judge = {"judged": self.judged, "unparsed": self.unparsed, "unparsed_rate": rate}
        return {**self.info, "gate": self.report.to_dict(), "judge": judge, "errors": self.errors}

    def to_text(self, *, brief: bool = False) -> str:
        """The table and the lines under it; ``brief`` (``run -q``): the gate's line, and why
        the extras' sections failed, if one did."""
        if brief:
            return terminal_text("\n".join([_gate_line(self.report), *self.sections_failed]))
        counts = {"judged": self.judged, "unparsed": self.unparsed, "errors": self.errors}
        return summary_text(self.report, header=self.header, extra_lines=self.lines, **counts)


_NO_SECTION = Section([], {})


def summarize(
    session: Session,
    ready: PreparedCases,
    result: RunResult,
    *,
    observers: Mapping[str, Any] | None = None,
    failures: Sequence[Row] = (),
    batch_lines: Sequence[str] = (),
) -> RunSummary:
    """The summary of ``result``, a run of ``ready`` by ``session``."""
    s = session.settings
    judges = session.judges
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
        "suite": s.suite and {"path": s.suite.path, "fingerprint": s.suite.fingerprint},
    }
    names = ", ".join(j.name for j in judges)
    judge_part = f" · judge {session.judge_spec}: {names}" if judges else ""
    selected = f" ({ready.selected:,} selected)" if ready.selected != ready.in_file else ""
    header = (
        f"{plural(ready.in_file, 'case')}{selected} from {s.cases} (dataset "
        f"{ready.fingerprint}){judge_part} · rows in {s.out}\n"
    )
    if s.suite is not None:
        info["suite"]["overridden"] = again = list(s.suite_overridden)
        given = f"; given again, overriding it: {', '.join(again)}" if again else ""
        header = f"suite {s.suite.path} ({s.suite.fingerprint}){given}\n{header}"
    # an observer that changes what the gate counts (trials: cases, not trials) says so
    counted = [o.tallies() for o in (observers or {}).values() if hasattr(o, "tallies")]
    labelled = any(t.labelled for t in result.categories.values())  # only a file is read back
    clustered = any(t.clustered for t in result.categories.values())
    needed = (s.labels or session.calibration or labelled or clustered) and os.path.isfile(s.out)
    rows = case_rows(read_rows(s.out)) if needed else []
    wanted = {"labels": s.labels, "min_kappa": s.min_kappa, "calibration": session.calibration}
    tallies = counted[0] if counted else result.sorted_categories()
    report = gate(tallies, **s.gate_options(), **from_rows(rows, **wanted))
    expected = ready.in_shard if ready.read else None
    if not result.complete and report.overall.total != expected:  # say what is missing
        empty = tuple(sorted(ready.categories - set(tallies)))
        reason = str(result.stopped_reason)
        stopped = Completeness(report.overall.total, expected, reason=reason, no_rows=empty)
        report = replace(report, completeness=stopped)
    used = {  # the sections the run uses, decided without loading an extra
        "retrieval": bool(session.retrieved or s.retrieval_threshold),
        "graded": any(getattr(judge, "scale", None) is not None for judge in judges),
        "jury": len(session.jurors) > 1,
        "self_evaluation": bool(judges and s.generate_model),
    }
    sections = {n: _extra("section", n, n)(session, ready, result) for n, on in used.items() if on}
    text = [*sections.get("retrieval", _NO_SECTION).lines]
    if clustered and not needed:  # the rows were not kept in a file to read the clusters from
        text.append("the cases' clusters do not widen these intervals: --out is not a file")
    for name, observer in (observers or {}).items():
        text += observer.summary()
        info[name] = observer.to_dict()
    text += sections.get("graded", _NO_SECTION).lines
    if failures:
        text += [*failure_lines(failures, shown=s.show_failures, where=s.out), ""]
    text += batch_lines
    info["resumed_rows"] = result.resumed
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
    for name in ("jury", "self_evaluation"):
        text += sections.get(name, _NO_SECTION).lines
    failed = [part.failed for part in sections.values() if part.failed]
    for part in sections.values():
        info.update(part.info)
    return RunSummary(
        report,
        header=header,
        info=info,
        lines=(*text, *failed),
        judged=sum(t.judged for t in result.categories.values()),
        unparsed=sum(t.unparsed for t in result.categories.values()),
        errors=result.errors,
        complete=result.complete,
        stopped_reason=result.stopped_reason,
        rows=result.total,
        sections_failed=tuple(failed),
        capped=result.stopped_reason if result.stopped_by == "max_cost" else None,
    )


class Failures(dict[str, list[Row]]):
    """A few failed rows of each category: those with the smallest ids, in any finish order."""

    def __init__(self, shown: int) -> None:
        self.shown = shown

    def note(self, row: Row) -> None:
        if row.get("status") == "pass":  # most rows: nothing to keep
            return
        kept = self.setdefault(str(row.get("category")), [])
        cut = len(kept) >= self.shown and (not kept or str(row["id"]) >= str(kept[-1]["id"]))
        if not cut and all(other["id"] != row["id"] for other in kept):  # cut: it sorts last
            kept.append(row)  # with trials, one line per case (its first failed trial)
            kept.sort(key=lambda r: str(r["id"]))
            del kept[self.shown :]

    def rows(self) -> list[Row]:
        return [row for _, rows in sorted(self.items()) for row in rows]


def summarize_rows(
    rows: Sequence[Row], *, source: str, gate: Mapping[str, Any] | None = None
) -> RunSummary:
    """The summary of a results file's rows, gated as their run gated unless ``gate`` says."""
    thresholds = (gate or {}).get("thresholds") or {}
    refuse_unknown_categories(
        "threshold", thresholds, {str(r.get("category")) for r in rows}, only_typos=True
    )
    gated = gate_rows(rows, **(gate or {}))
    tallies = tally(rows).values()
    fingerprints = sorted({str(r.get("dataset_fingerprint") or "unknown") for r in rows})
    info: dict[str, Any] = {
        "results": source,
        "rows": len(rows),
        "dataset_fingerprints": fingerprints,
        "gate_settings_from_results": list(gated.remembered),
        "gate_settings_overridden": list(gated.overridden),
    }
    said = {
        "gate settings from the results (as the run gated)": gated.remembered,
        "given again, overriding the run's": gated.overridden,
    }
    notes = [f"{words}: {', '.join(names)}" for words, names in said.items() if names]
    failures = Failures(5)  # listed as a run lists them
    for row in rows:
        failures.note(row)
    listed = failure_lines(failures.rows(), shown=5, where=source)
    return RunSummary(
        gated,
        header=f"{plural(len(rows), 'row')} from {source} (dataset {', '.join(fingerprints)})\n",
        info=info,
        lines=(*listed, *([""] if listed else []), *notes),
        judged=sum(t.judged for t in tallies),
        unparsed=sum(t.unparsed for t in tallies),
        errors=sum(t.errors for t in tallies),
        complete=gated.complete,
        rows=len(rows),
    )


# Text from data (ids, categories, reasons, criteria) is neutralised for where it goes
_CONTROLS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
    "\ufeff\ufffe\uffff\ud800-\udfff"
)
_UNSEEN = re.compile(f"[{_CONTROLS}]")
_UNSEEN_IN_LINE = re.compile(f"[\t\n{_CONTROLS}]")
_COMMAND_START = re.compile(r"^(\s*):(?=:)", re.MULTILINE)
_MARKDOWN = re.compile(r"([\\`*\[\]|~$@])")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text_of(value: object) -> str:
    """Text for a file or a page: newlines kept, other controls shown as escapes.

    >>> text_of("a\u202eb\\nc\\x00")
    'a\\\\u202eb\\nc\\\\x00'
    """
    return _UNSEEN.sub(_visible, str(value))


def line_of(value: object) -> str:
    """Text on one line: newlines and tabs shown as escapes too.

    >>> line_of("x\\n::error::forged")
    'x\\\\x0a::error::forged'
    """
    return _UNSEEN_IN_LINE.sub(_visible, str(value))


def terminal_text(value: object) -> str:
    """Text for a terminal or a CI log: no line starts a workflow command GitHub would obey.

    >>> terminal_text("::stop-commands::tok")
    '\\\\x3a:stop-commands::tok'
    """
    return _COMMAND_START.sub(r"\1\\x3a", text_of(value)).replace("##[", "##\\x5b")


def markdown_text(value: object) -> str:
    """Text for Markdown: links, images, HTML and emphasis are inert.

    >>> markdown_text("[Approve](https://e.x) <b>|")
    '\\\\[Approve\\\\](https://e.x) &lt;b&gt;\\\\|'
    """
    return html.escape(_MARKDOWN.sub(r"\\\1", line_of(value)), quote=False)


def command_data(value: object, *, prop: bool = False) -> str:
    """Text for a GitHub workflow command's message, or (``prop``) a property's value.

    >>> command_data("50% done\\nnext"), command_data("a::b,c", prop=True)
    ('50%25 done%0Anext', 'a%3A%3Ab%2Cc')
    """
    text = text_of(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def gate_word(report: GateReport) -> str:
    """The gate's outcome as every report says it: INCOMPLETE before anything else."""
    if not report.complete:
        return "INCOMPLETE"
    if not any(v.threshold is not None for v in report.categories):
        return "not gated"
    return "PASSED" if report.passed else "FAILED"


def missing(report: GateReport) -> str | None:
    """What an incomplete report misses (None: complete)."""
    if report.complete:
        return None
    empty = [*getattr(report.completeness, "no_rows", ())]
    empty += [v.category for v in report.categories if not v.total and v.category not in empty]
    said = [str(report.completeness).removeprefix("incomplete: ")]
    return "; ".join([*said, *(f"{line_of(name)}: no rows" for name in empty)])


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _rate_cell(v: CategoryVerdict, confidence: float = 0.95) -> str:
    """The rate with its interval, widened by the design effect of clusters (said from 1.2)."""
    if v.measured is None:
        return "0 cases"
    effect = f" (design effect {v.design_effect:.1f})" if v.design_effect > 1.2 else ""
    return f"{v.passed}/{v.total} = {v.rate:.1%} [{v.low:.1%}, {v.high:.1%}]{effect}"


def _mark(v: CategoryVerdict) -> str:
    basis = f"; {v.basis}" if v.basis else ""
    verdict = "BLOCKS" if v.blocking else "let through"
    if v.threshold is None:
        ungated = v.note if v.note and v.note.startswith("ungated") else "no threshold"
        return f"{ungated}{basis}"
    if v.outcome == "judge not trusted":
        return f"judge not trusted: {v.note} ({verdict}{basis})"
    if v.outcome == "inconclusive":
        people, more = v.decided_on == "people", v.more_cases_needed
        if more is None:
            need = f"no number of {'labels' if people else 'cases'} decides it at this rate"
        elif people:
            need = f"about {plural(more, 'more label')} would decide it"
        else:
            need = f"about {plural(more, 'more case')} needed"
        return f"inconclusive — {need} ({verdict}{basis})"
    if not v.blocking:
        return f"ok ({v.basis})" if v.basis else "ok"
    if v.note:
        return f"BLOCKS ({v.note}{basis})"
    figure = v.estimate.value if v.decided_on == "people" else v.rate
    return f"BLOCKS ({_pct(figure)} < {_pct(v.threshold)}{basis})"


def _rate_lines(report: GateReport) -> list[str]:
    """A line per judged category (the global one last): the judge's rate, what decides."""
    lines = []
    for v in [*report.categories, report.overall]:
        if v.decided_on != "checks" and v.total:
            judge = f"judge {_pct(v.rate)} [{_pct(v.low)}, {_pct(v.high)}]"
            gate = f"threshold {_pct(v.threshold)} · {_mark(v).partition(' (')[0]}"
            gate = "no threshold" if v.threshold is None else gate
            gate = "shown, never gates" if v is report.overall else gate
            lines.append(f"{line_of(v.category)}: {judge} · {v.basis} · {gate}")
    return lines


_Cell = tuple[str, str, str, str, str]


def _cells(report: GateReport, shown: Callable[[object], str], overall: str) -> list[_Cell]:
    def row(v: CategoryVerdict, name: str, threshold: str, mark: str) -> _Cell:
        return name, _rate_cell(v, report.confidence), str(v.unchecked), threshold, mark

    cells = [row(c, shown(c.category), _pct(c.threshold), _mark(c)) for c in report.categories]
    return [*cells, row(report.overall, overall, "—", "shown, never gates")]


def summary_text(
    report: GateReport,
    *,
    header: str | None = None,
    judged: int = 0,
    unparsed: int = 0,
    errors: int = 0,
    extra_lines: tuple[str, ...] = (),
) -> str:
    """The run's summary as a plain-text table, one line per category.

    >>> from tinyeval.gating import gate
    >>> print(summary_text(gate({"amounts": {"passed": 17, "total": 20}}, {"amounts": 1.0})))
    category  pass rate [95% Wilson]         threshold  gate
    amounts   17/20 = 85.0% [64.0%, 94.8%]   100.0%     BLOCKS (85.0% < 100.0%)
    global    17/20 = 85.0% [64.0%, 94.8%]   —          shown, never gates
    <BLANKLINE>
    gate: FAILED — blocking: amounts (1 of 1 gated)
    """
    cells = _cells(report, lambda name: terminal_text(line_of(name)), "global")
    show_unchecked = any(c.unchecked for c in report.categories)
    title = f"pass rate [{report.confidence:.0%} Wilson]"
    width = max(len("category"), *(len(c[0]) for c in cells))
    rate_width = max(len(title), *(len(c[1]) for c in cells))
    lines = [header] if header else []
    heads = ("category", title, "unchecked", "threshold", "gate")
    for name, rate, unchecked, threshold, mark in [heads, *cells]:
        middle = f"{unchecked:<9}  " if show_unchecked else ""
        line = f"{name:<{width}}  {rate:<{rate_width}}   {middle}{threshold:<9}  {mark}"
        lines.append(line.rstrip())
    lines.append("")
    if judged:
        lines.append(
            f"judge verdicts that did not parse: {format_rate(unparsed, judged)} "
            "(counted as not passed)"
        )
    if errors:
        lines.append(
            f'cases that errored: {errors} (counted as not passed; see the rows\' "error")'
        )
    lines += [*_unchecked_lines(report), *_rate_lines(report), *extra_lines, _gate_line(report)]
    return terminal_text("\n".join(lines))


def _unchecked_lines(report: GateReport) -> list[str]:
    count = report.overall.unchecked
    if not count:
        return []
    ids = [i for c in report.categories for i in c.unchecked_ids]
    shown = listed([line_of(i) for i in ids[:10]], total=count)
    text = f"{plural(count, 'case')} had nothing to check them (no check, no judge that could "
    return [f"{text}judge them): {shown}; they count as not passed"]


def _gate_line(report: GateReport) -> str:
    word = gate_word(report)
    if word == "INCOMPLETE":
        return f"gate: INCOMPLETE — {missing(report)} (no gate is decided on missing cases)"
    if word == "not gated":
        return "gate: no thresholds given, so nothing gates"
    gated = [c for c in report.categories if c.threshold is not None]
    undecided = [c for c in report.undecided if not c.blocking]
    if report.passed:
        said = "the gated category meets its threshold"
        if len(gated) > 1:
            said = f"all {len(gated)} gated categories meet their thresholds"
        text = f"gate: PASSED — {said}"
        if undecided:
            names = ", ".join(line_of(c.category) for c in undecided)
            why = " or ".join(sorted({c.outcome for c in undecided}))
            text += f" ({why}, let through: {names})"
        return text
    names = ", ".join(line_of(c.category) for c in report.blocking)
    return f"gate: FAILED — blocking: {names} ({len(report.blocking)} of {len(gated)} gated)"


def usage_line(usage: Mapping[str, int], price: Any = None) -> tuple[str, float | None]:
    """The run's token line and its cost in US dollars (with a price).

    >>> usage_line({"input_tokens": 1500, "output_tokens": 200})
    ('tokens: 1,500 in, 200 out', None)
    """
    if not any(usage.values()):
        return "", None
    paid = {key: usage.get(key, 0) for key in ("input_tokens", "output_tokens")}
    line = f"tokens: {paid['input_tokens']:,} in, {paid['output_tokens']:,} out"
    cost = None
    if price is not None:
        cost, said = _extra("cost", "usage", "a price")(paid, price)
        line += f"; {said}"
    cached_in, cached_out = (usage.get(f"cached_{key}", 0) for key in paid)
    if cached_in or cached_out:
        line += f"; replayed from the cache, not paid again: {cached_in:,} in, {cached_out:,} out"
    return line, cost


def describe_failure(row: Mapping[str, Any], *, width: int = 100) -> str:
    """Why a result row did not pass, in one line.

    >>> describe_failure({"status": "fail", "checks": {"valid_json": True, "equals:amount": False},
    ...                   "check_details": {"equals:amount": "got 1250, expected 125050"}})
    'equals:amount: got 1250, expected 125050'
    """
    status = row.get("status")
    if status in ("error", "unchecked"):
        unseen = row.get("judge_skipped") or "no check and no judge looked at it"
        reason = row.get("error") if status == "error" else unseen
        return line_of(shorten(" ".join(f"{status}: {reason}".split()), width))
    checks: Mapping[str, Any] = row.get("checks") or {}
    details: Mapping[str, Any] = row.get("check_details") or {}
    if not isinstance(checks, Mapping) or not isinstance(details, Mapping):
        checks, details = {}, {}
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        parts = [f"{name}: {details[name]}" if details.get(name) else str(name) for name in failed]
        return line_of(_listed(parts, width))
    for name, judge in verdicts(row).items():
        if judge.get("verdict") == "PASS" or "winner" in judge:
            continue
        if judge.get("verdict") is None:
            replies = [str(r) for r in judge.get("raw") or [] if str(r).strip()]
            said = f': replied "{shorten(" ".join(replies[0].split()), 60)}"' if replies else ""
            text = f"judge {name}: no verdict ({judge.get('failure')}){said}"
        else:
            said, quote = str(judge.get("reason") or judge.get("verdict")), r'"([^"]{12,})"'
            room = max(width - len(f"judge {name}: ") - len(re.sub(quote, '""', said)), 8)
            clipped = re.sub(quote, lambda m: f'"{shorten(m[1], room)}"', said)  # noqa: B023
            text = f"judge {name}: {clipped}"  # the quotes of the output clipped: the why shows
        return line_of(shorten(" ".join(text.split()), width))
    return "not passed"


def _listed(parts: list[str], width: int) -> str:
    parts = [" ".join(part.split()) for part in parts]
    text = parts[0]
    for index, part in enumerate(parts[1:], start=1):
        rest = len(parts) - index - 1
        tail = f" (+{rest} more)" if rest else ""
        if len(text) + 2 + len(part) + len(tail) > width:
            return shorten(text, width - 12) + f" (+{len(parts) - index} more)"
        text += "; " + part
    return shorten(text, width)


def failure_lines(rows: Sequence[Mapping[str, Any]], *, shown: int, where: str) -> list[str]:
    """Lines listing failed cases and why.

    >>> rows = [{"id": "amt-3", "category": "amounts", "status": "fail",
    ...          "checks": {"valid_json": False}, "check_details": {}}]
    >>> print("\\n".join(failure_lines(rows, shown=5, where="rows.jsonl")))
    cases that did not pass (up to 5 per category; every row is in rows.jsonl):
      amounts  amt-3  valid_json
    """
    if not rows:
        return []
    named = [(terminal_text(line_of(r.get("category"))), line_of(r.get("id")), r) for r in rows]
    width = max(len(category) for category, _, _ in named)
    id_width = max(len(case) for _, case, _ in named)
    lines = [f"cases that did not pass (up to {shown} per category; every row is in {where}):"]
    for category, case, row in named:
        lines.append(f"  {category:<{width}}  {case:<{id_width}}  {describe_failure(row)}")
    return [terminal_text(line) for line in lines]


def summary_markdown(report: GateReport, *, title: str = "tinyeval") -> str:
    """The gate as a Markdown table (a pull-request comment, a CI job summary).

    >>> from tinyeval.gating import gate
    >>> print(summary_markdown(gate({"amounts": {"passed": 17, "total": 20}}, {"amounts": 1.0})))
    ### tinyeval: gate FAILED
    <BLANKLINE>
    | category | pass rate [95% Wilson] | threshold | gate |
    | --- | --- | --- | --- |
    | amounts | 17/20 = 85.0% [64.0%, 94.8%] | 100.0% | **BLOCKS** (85.0% < 100.0%) |
    | *global* | 17/20 = 85.0% [64.0%, 94.8%] | — | shown, never gates |
    """
    word = gate_word(report)
    outcome = "not gated (no thresholds)" if word == "not gated" else f"gate {word}"
    lines = [f"### {title}: {outcome}"]
    if not report.complete:
        said = markdown_text(missing(report))
        lines.append(f"\n**Incomplete:** {said} — no gate is decided on missing cases")
    lines += [
        "",
        f"| category | pass rate [{report.confidence:.0%} Wilson] | threshold | gate |",
        "| --- | --- | --- | --- |",
    ]
    cells = _cells(report, markdown_text, "*global*")
    every = [*report.categories, report.overall]
    for v, (name, rate, _, threshold, mark) in zip(every, cells, strict=True):
        mark = mark.replace("|", "\\|")
        if v.blocking:
            mark = mark.replace("BLOCKS", "**BLOCKS**", 1)
        lines.append(f"| {name} | {rate} | {threshold} | {mark} |")
    return "\n".join(lines)


class ReportsWritten(NamedTuple):
    """What :func:`write_reports` did (``annotations``: for the caller to print).

    >>> ReportsWritten(("gate.md",), None, ()).step_summary is None
    True
    """

    files: tuple[str, ...]
    step_summary: str | None
    annotations: tuple[str, ...]


def write_reports(
    report: GateReport,
    rows: Iterable[Mapping[str, Any]] | str,
    *,
    junit: str | None = None,
    markdown: str | None = None,
    html: str | None = None,
    github: bool | None = None,
    run_info: Mapping[str, Any] | None = None,
    cases_file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ReportsWritten:
    """Write the reports asked for, each all or nothing (``github``: by default when
    ``GITHUB_STEP_SUMMARY`` is set).

    >>> import os, tempfile
    >>> from tinyeval.gating import gate
    >>> report = gate({"tone": {"passed": 2, "total": 3}}, thresholds={"tone": 0.9})
    >>> table = os.path.join(tempfile.mkdtemp(), "gate.md")
    >>> written = write_reports(report, [], markdown=table, environ={})
    >>> written.files == (table,), "BLOCKS" in open(table, encoding="utf-8").read()
    (True, True)
    """
    env = os.environ if environ is None else environ
    github = bool(env.get("GITHUB_STEP_SUMMARY")) if github is None else github
    needed = junit or html or github
    every = list(read_rows(rows) if isinstance(rows, str) else rows) if needed else []
    if markdown:
        write_text_atomically(markdown, summary_markdown(report) + "\n")
    for name, path in (("junit", junit), ("html", html)):
        if path:
            text = _extra("report", name, f"the {name} report")(report, every, run_info=run_info)
            write_text_atomically(path, text)
    files = tuple(path for path in (junit, markdown, html) if path)
    if not github:
        return ReportsWritten(files, None, ())
    github_report = _extra("report", "github", "the GitHub report")
    summary, annotations = github_report(report, every, cases_file=cases_file, environ=env)
    return ReportsWritten(files, summary, tuple(annotations))
