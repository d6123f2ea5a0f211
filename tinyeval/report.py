"""Turn a run's tallies and gate into what people read.

Text, JSON, Markdown, JUnit XML and a single-file HTML page. Every rate is
printed with its denominator and its Wilson interval
(``17/20 = 85.0% [64.0%, 94.8%]``); a category that blocks is marked
``BLOCKS``; the global line is shown and labelled as never gating.

Every writer returns text that can be written anywhere: a lone surrogate
taken from a row (``"\\ud800"``, which no UTF-8 file can hold) is shown as
its escape ``\\ud800``; in JUnit XML so is every other character XML 1.0
forbids (the C0 controls but tab, line feed and carriage return, and U+FFFE
and U+FFFF), so a control character in an id cannot make the file unreadable.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from .calls import Price, format_usd, run_cost
from .errors import plural, shorten
from .gating import CategoryVerdict, GateReport
from .records import verdicts
from .stats import format_rate

__all__ = [
    "describe_failure",
    "failure_lines",
    "html_report",
    "junit_xml",
    "summary_dict",
    "summary_markdown",
    "summary_text",
    "usage_line",
]


_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _writable(text: str) -> str:
    """``text`` with each lone surrogate shown as its escape, so any file can hold it.

    >>> _writable("ok \\ud800 ok")
    'ok \\\\ud800 ok'
    """
    return _SURROGATE.sub(_visible, text)


def _xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids shown as its escape.

    >>> _xml_text("a\\x07b\\tc\\udfff")
    'a\\\\x07b\\tc\\\\udfff'
    """
    return _NOT_XML.sub(_visible, text)


def _count(number: int, noun: str, plural: str | None = None) -> str:
    """``number`` and ``noun``, plural unless there is exactly one: ``1 case``, ``2 cases``."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _rate_cell(v: CategoryVerdict, confidence: float = 0.95) -> str:
    if v.total == 0:
        return "0 cases"
    return format_rate(v.passed, v.total, confidence)


def _mark(v: CategoryVerdict, on: str = "rate") -> str:
    """The gate column: ok, BLOCKS and why, inconclusive and what would decide it."""
    if v.threshold is None:
        return "no threshold"
    if v.outcome == "inconclusive":
        if v.more_cases_needed is None:
            need = "no suite size decides it at this rate"
        else:
            need = f"about {plural(v.more_cases_needed, 'more case')} needed"
        verdict = "BLOCKS" if v.blocking else "let through"
        return f"inconclusive — {need} ({verdict})"
    if not v.blocking:
        return "ok"
    if v.note:
        return f"BLOCKS ({v.note})"
    return f"BLOCKS ({_pct(v.rate)} < {_pct(v.threshold)})"


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
    >>> report = gate({"amounts": {"passed": 17, "total": 20}, "tone": {"passed": 12, "total": 12}},
    ...               {"amounts": 1.0}, default_threshold=0.7)
    >>> print(summary_text(report))
    category  pass rate [95% Wilson]           threshold  gate
    amounts   17/20 = 85.0% [64.0%, 94.8%]     100.0%     BLOCKS (85.0% < 100.0%)
    tone      12/12 = 100.0% [75.8%, 100.0%]   70.0%      ok
    global    29/32 = 90.6% [75.8%, 96.8%]     —          shown, never gates
    <BLANKLINE>
    gate: FAILED — blocking: amounts (1 of 2 gated)
    """
    width = max([len("category"), len("global")] + [len(c.category) for c in report.categories])
    show_unchecked = any(c.unchecked for c in report.categories)
    cells = [
        (c.category, _rate_cell(c, report.confidence), str(c.unchecked), _pct(c.threshold),
         _mark(c, report.on))
        for c in report.categories
    ]  # fmt: skip
    overall = report.overall
    cells.append(("global", _rate_cell(overall, report.confidence), str(overall.unchecked), "—",
                  "shown, never gates"))  # fmt: skip
    conf = f"{report.confidence:.0%}"
    rate_width = max(len(f"pass rate [{conf} Wilson]"), *(len(c[1]) for c in cells))
    lines = [header] if header else []
    title = f"pass rate [{conf} Wilson]"
    middle = "unchecked  " if show_unchecked else ""
    lines.append(f"{'category':<{width}}  {title:<{rate_width}}   {middle}{'threshold':<9}  gate")
    for name, rate, unchecked, threshold, mark in cells:
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
    lines.extend(_unchecked_lines(report))
    lines.extend(extra_lines)
    lines.append(_gate_line(report))
    return _writable("\n".join(lines))


def _unchecked_lines(report: GateReport) -> list[str]:
    """``N cases had nothing to check them: ids …``, when any had nothing."""
    count = report.overall.unchecked
    if not count:
        return []
    ids = [i for c in report.categories for i in c.unchecked_ids]
    shown = ", ".join(ids[:10]) + (f" and {count - min(len(ids), 10):,} more" if count > 10 else "")
    text = f"{plural(count, 'case')} had nothing to check them (no check, no judge that could "
    return [f"{text}judge them): {shown}; they count as not passed"]


def _gate_line(report: GateReport) -> str:
    gated = [c for c in report.categories if c.threshold is not None]
    if not report.complete:
        return f"gate: INCOMPLETE — {report.completeness}: no gate is decided on missing cases"
    if not gated:
        return "gate: no thresholds given, so nothing gates"
    undecided = [c for c in report.undecided if not c.blocking]
    if report.passed:
        text = (
            "gate: PASSED — the gated category meets its threshold"
            if len(gated) == 1
            else f"gate: PASSED — all {len(gated)} gated categories meet their thresholds"
        )
        if undecided:
            names = ", ".join(c.category for c in undecided)
            text += f" (inconclusive, let through: {names})"
        return text
    names = ", ".join(c.category for c in report.blocking)
    return f"gate: FAILED — blocking: {names} ({len(report.blocking)} of {len(gated)} gated)"


def summary_dict(
    report: GateReport,
    *,
    run_info: Mapping[str, Any] | None = None,
    judged: int = 0,
    unparsed: int = 0,
    errors: int = 0,
) -> dict[str, Any]:
    """The run's summary as one JSON-ready object (what ``run --json`` prints).

    Keys: ``gate`` (see :meth:`GateReport.to_dict`), ``judge`` (``judged``,
    ``unparsed``, ``unparsed_rate``), ``errors``, plus whatever ``run_info``
    carries (cases, files, fingerprints, models, usage).

    >>> from tinyeval.gating import gate
    >>> d = summary_dict(gate({"tone": {"passed": 1, "total": 2}}), judged=2, unparsed=1)
    >>> d["judge"]["unparsed_rate"], d["gate"]["passed"]
    (0.5, True)
    """
    data: dict[str, Any] = dict(run_info or {})
    data["gate"] = report.to_dict()
    data["judge"] = {
        "judged": judged,
        "unparsed": unparsed,
        "unparsed_rate": (unparsed / judged) if judged else None,
    }
    data["errors"] = errors
    return data


def usage_line(usage: Mapping[str, int], price: Price | None = None) -> tuple[str, float | None]:
    """The run's token line (and its cost in US dollars, with a price): ``("", None)`` when no
    call reported usage. Tokens replayed from the cache are shown apart and not costed.

    >>> usage_line({"input_tokens": 1500, "output_tokens": 200}, Price(1.0, 5.0))
    ('tokens: 1,500 in, 200 out; cost about $0.0025', 0.0025)
    """
    if not any(usage.values()):
        return "", None
    line = f"tokens: {usage.get('input_tokens', 0):,} in, {usage.get('output_tokens', 0):,} out"
    cost = None
    if price is not None:
        paid = {key: usage.get(key, 0) for key in ("input_tokens", "output_tokens")}
        cost = run_cost([paid], price)
        line += f"; cost about {format_usd(cost)}"
    cached_in = usage.get("cached_input_tokens", 0)
    cached_out = usage.get("cached_output_tokens", 0)
    if cached_in or cached_out:
        line += f"; replayed from the cache, not paid again: {cached_in:,} in, {cached_out:,} out"
    return line, cost


def describe_failure(row: Mapping[str, Any], *, width: int = 100) -> str:
    """Why a result row did not pass, in one line: the first failed check, the judge, or the error.

    >>> describe_failure({"status": "fail", "checks": {"valid_json": True, "equals:amount": False},
    ...                   "check_details": {"equals:amount": "got 1250, expected 125050"}})
    'equals:amount: got 1250, expected 125050'
    >>> describe_failure({"status": "error", "error": "TimeoutError: no reply", "checks": {}})
    'error: TimeoutError: no reply'
    """
    if row.get("status") == "error":
        return _writable(shorten(" ".join(f"error: {row.get('error')}".split()), width))
    if row.get("status") == "unchecked":
        reason = row.get("judge_skipped") or "no check and no judge looked at it"
        return _writable(shorten(" ".join(f"unchecked: {reason}".split()), width))
    checks: Mapping[str, Any] = row.get("checks") or {}
    details: Mapping[str, Any] = row.get("check_details") or {}
    if not isinstance(checks, Mapping) or not isinstance(details, Mapping):
        checks, details = {}, {}
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        parts = [f"{name}: {details[name]}" if details.get(name) else str(name) for name in failed]
        return _writable(_listed(parts, width))
    for judge in verdicts(row).values():
        if judge.get("verdict") == "PASS" or "winner" in judge:
            continue
        name = judge.get("name")
        if judge.get("verdict") is None:
            replies = [str(r) for r in judge.get("raw") or [] if str(r).strip()]
            said = f': replied "{shorten(" ".join(replies[0].split()), 60)}"' if replies else ""
            text = f"judge {name}: no verdict ({judge.get('failure')}){said}"
        else:
            text = f"judge {name}: {judge.get('reason') or judge.get('verdict')}"
        return _writable(shorten(" ".join(text.split()), width))
    return "not passed"


def _listed(parts: list[str], width: int) -> str:
    """As many of ``parts`` as fit in ``width``, then ``(+N more)`` for the rest."""
    parts = [" ".join(part.split()) for part in parts]
    text = parts[0]
    for index, part in enumerate(parts[1:], start=1):
        rest = len(parts) - index - 1
        tail = f" (+{rest} more)" if rest else ""
        if len(text) + 2 + len(part) + len(tail) > width:
            return shorten(text, width - 12) + f" (+{len(parts) - index} more)"
        text += "; " + part
    return shorten(text, width)


def failure_lines(rows: list[Mapping[str, Any]], *, shown: int, where: str) -> list[str]:
    """Lines listing failed cases by category (up to ``shown`` each) and why.

    >>> rows = [{"id": "amt-3", "category": "amounts", "status": "fail",
    ...          "checks": {"valid_json": False}, "check_details": {}}]
    >>> print("\\n".join(failure_lines(rows, shown=5, where="rows.jsonl")))
    cases that did not pass (up to 5 per category; every row is in rows.jsonl):
      amounts  amt-3  valid_json
    """
    if not rows:
        return []
    width = max(len(str(r.get("category"))) for r in rows)
    id_width = max(len(str(r.get("id"))) for r in rows)
    lines = [f"cases that did not pass (up to {shown} per category; every row is in {where}):"]
    for row in rows:
        lines.append(
            f"  {row.get('category')!s:<{width}}  {row.get('id')!s:<{id_width}}  "
            f"{describe_failure(row)}"
        )
    return [_writable(line) for line in lines]


def _md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell: no markup, no ``|`` that splits the cell.

    >>> print(_md_cell("a|b<i>&c"))
    a\\|b&lt;i&gt;&amp;c
    """
    text = " ".join(html.escape(text, quote=False).split())
    return text.replace("|", "\\|")


def summary_markdown(report: GateReport, *, title: str = "tinyeval") -> str:
    """The gate as a Markdown table, for a pull-request comment or a CI job summary.

    The heading says ``gate PASSED``, ``gate FAILED`` or, when no category
    has a threshold, ``not gated (no thresholds)``. Category names are
    escaped (``|``, ``<``, ``>``, ``&``), so a name cannot break the table or
    inject markup into the page that shows it.

    >>> from tinyeval.gating import gate
    >>> print(summary_markdown(gate({"amounts": {"passed": 17, "total": 20}}, {"amounts": 1.0})))
    ### tinyeval: gate FAILED
    <BLANKLINE>
    | category | pass rate [95% Wilson] | threshold | gate |
    | --- | --- | --- | --- |
    | amounts | 17/20 = 85.0% [64.0%, 94.8%] | 100.0% | **BLOCKS** (85.0% < 100.0%) |
    | *global* | 17/20 = 85.0% [64.0%, 94.8%] | — | shown, never gates |
    """
    if not any(v.threshold is not None for v in report.categories):
        outcome = "not gated (no thresholds)"
    else:
        outcome = "gate PASSED" if report.passed else "gate FAILED"
    conf = f"{report.confidence:.0%}"
    lines = [
        f"### {title}: {outcome}",
        "",
        f"| category | pass rate [{conf} Wilson] | threshold | gate |",
        "| --- | --- | --- | --- |",
    ]
    for v in report.categories:
        mark = _mark(v, report.on).replace("|", "\\|")
        if v.blocking:
            mark = mark.replace("BLOCKS", "**BLOCKS**", 1)
        rate = _rate_cell(v, report.confidence)
        lines.append(f"| {_md_cell(v.category)} | {rate} | {_pct(v.threshold)} | {mark} |")
    overall = _rate_cell(report.overall, report.confidence)
    lines.append(f"| *global* | {overall} | — | shown, never gates |")
    return _writable("\n".join(lines))


def junit_xml(rows: list[Mapping[str, Any]], report: GateReport) -> str:
    """JUnit XML: one test suite per category with a test case per case, plus the gate.

    CI systems that read JUnit (GitLab, Jenkins, GitHub actions with a reporter)
    then show each failed case with its reason, and each blocking category as a
    failed ``gate`` test. Errored cases are ``<error>``, failed ones ``<failure>``.

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "a", "category": "c", "status": "pass", "latency_ms": 5.0},
    ...         {"id": "b", "category": "c", "status": "fail", "checks": {"valid_json": False}}]
    >>> xml = junit_xml(rows, gate({"c": {"passed": 1, "total": 2}}, {"c": 1.0}))
    >>> '<testcase classname="c" name="b" time="0.000"><failure message="valid_json"' in xml
    True
    >>> '<testsuite name="gate" tests="1" failures="1"' in xml
    True
    """
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="tinyeval")
    by_category: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_category.setdefault(str(row.get("category")), []).append(row)
    for category, members in by_category.items():
        failures = sum(1 for r in members if r.get("status") == "fail")
        errors = sum(1 for r in members if r.get("status") == "error")
        suite = ET.SubElement(
            root, "testsuite", name=category, tests=str(len(members)),
            failures=str(failures), errors=str(errors),
        )  # fmt: skip
        for row in members:
            seconds = float(row.get("latency_ms") or 0.0) / 1000
            case = ET.SubElement(
                suite, "testcase", classname=category, name=str(row.get("id")),
                time=f"{seconds:.3f}",
            )  # fmt: skip
            if row.get("status") != "pass":
                kind = "error" if row.get("status") == "error" else "failure"
                reason = describe_failure(row, width=1000)
                ET.SubElement(case, kind, message=reason).text = reason
    gated = [v for v in report.categories if v.threshold is not None]
    suite = ET.SubElement(
        root, "testsuite", name="gate", tests=str(len(gated)),
        failures=str(sum(1 for v in gated if v.blocking)), errors="0",
    )  # fmt: skip
    for v in gated:
        case = ET.SubElement(suite, "testcase", classname="gate", name=v.category, time="0.000")
        if v.blocking:
            message = f"{_rate_cell(v, report.confidence)} {_mark(v, report.on)}"
            ET.SubElement(case, "failure", message=message).text = message
    return _xml_text(ET.tostring(root, encoding="unicode", xml_declaration=True))


# --------------------------------------------------------------------------- HTML

# Chart geometry in SVG user units; the SVG scales to the page width.
_LABEL_W = 240  # category names, right-aligned before the bars
_BAR_W = 400  # the 0%..100% scale
_TEXT_W = 400  # the mark, the rate and the unchecked count, after the bars
_ROW_H = 32
_BAR_H = 16
_AXIS_H = 30
_GLOBAL_GAP = 10  # space and a rule between the categories and the global line
_NAME_CHARS = 26  # longer category names are clipped in the chart (never in the tables)
_OUTPUT_CHARS = 300  # an output in the failures table (in full in the case's details)
_DETAIL_CHARS = 4000  # an input, context, output or judge reply in a case's details
_EXCERPT_CHARS = 120  # an unparsed reply quoted in the "why" column

_HTML_STYLE = """
body{margin:0;color:#1a202c;background:#fff;
 font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:1.6em;margin:0 0 12px}
h2{font-size:1.2em;margin:28px 0 8px;border-bottom:1px solid #e2e8f0;padding-bottom:4px}
.verdict{padding:10px 16px;border-left:10px solid;border-radius:4px;margin-bottom:12px}
.verdict p,.verdict ul{margin:2px 0}
.verdict .outcome{font-size:1.5em;font-weight:700}
.verdict.failed{background:#fff5f5;border-color:#c53030}
.verdict.failed .outcome{color:#9b2c2c}
.verdict.passed{background:#f0fff4;border-color:#2f855a}
.verdict.passed .outcome{color:#22543d}
.verdict.ungated{background:#f7fafc;border-color:#718096}
.verdict.incomplete{background:#fffaf0;border-color:#c05621}
.verdict.incomplete .outcome{color:#9c4221}
.verdict .missing{font-weight:600;color:#9c4221}
.verdict .undecided{color:#744210}
.verdict .unchecked{color:#553c9a}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 16px;margin:8px 0}
dl.facts dt{font-weight:600;color:#4a5568}
dl.facts dd{margin:0;overflow-wrap:anywhere}
dl.facts dl.facts{margin:0}
table{border-collapse:collapse;margin:8px 0 12px;max-width:100%}
caption{text-align:left;color:#4a5568;padding:4px 0;caption-side:top}
th,td{text-align:left;vertical-align:top;padding:4px 10px;border-bottom:1px solid #e2e8f0;
 overflow-wrap:break-word}
td.model,td.why,td.output,tr.case th,table.judges th[scope=row]{overflow-wrap:anywhere}
td.model{min-width:14ch}
td.status{white-space:nowrap}
thead th{border-bottom:2px solid #a0aec0}
.rate,.num{font-variant-numeric:tabular-nums;white-space:nowrap}
.num{text-align:right}
.blocks{color:#9b2c2c;font-weight:700}
.inconclusive-word{color:#975a16;font-weight:700}
tr.blocking th[scope=row]{border-left:4px solid #c53030}
tr.inconclusive th[scope=row]{border-left:4px solid #d69e2e}
tr.global th,tr.global td{color:#4a5568;font-style:italic}
tbody tr.group th{background:#edf2f7;font-weight:600}
table.failures{width:100%}
table.failures tr.case th{min-width:9ch}
table.judges th[scope=row]{min-width:12ch}
table.failures tr.case.has-more td,table.failures tr.case.has-more th{border-bottom:0}
td.output{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.85em;
 white-space:pre-wrap;min-width:24ch;max-width:48ch}
td.output.empty{font-family:inherit;font-style:italic;color:#718096}
td.why{min-width:24ch}
ul.why{margin:0;padding-left:1.1em}
tr.error td.status{color:#9b2c2c;font-weight:600}
tr.unchecked td.status{color:#553c9a;font-weight:600}
tr.more td{padding-top:0}
details.case summary{color:#2c5282;cursor:pointer}
details.case dl.facts{margin:4px 0 8px 1.1em}
details.case dd p{margin:0 0 2px}
pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.85em;
 white-space:pre-wrap;overflow-wrap:anywhere;margin:0;max-height:24em;overflow-y:auto;
 background:#f7fafc;border:1px solid #e2e8f0;border-radius:3px;padding:4px 6px}
code{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.9em}
.note{color:#4a5568}
dl.criteria dd{font-style:italic}
svg.chart{width:100%;max-width:1040px;height:auto;display:block}
svg.chart text{font-size:13px;fill:#1a202c}
svg.chart .axis text{fill:#4a5568;font-size:12px}
svg.chart .grid{stroke:#e2e8f0;stroke-width:1}
svg.chart .track{fill:#f7fafc;stroke:#cbd5e0;stroke-width:1}
svg.chart .ok .bar{fill:#48a06a}
svg.chart .blocking .bar{fill:#d9534f}
svg.chart .inconclusive .bar{fill:#d69e2e}
svg.chart .ungated .bar{fill:#6b8fc7}
svg.chart .global .bar{fill:#cbd5e0}
svg.chart .unchecked{fill:#805ad5}
svg.chart .interval,svg.chart .cap{stroke:#1a202c;stroke-width:1.5}
svg.chart .threshold{stroke:#1a202c;stroke-width:3}
svg.chart .rule{stroke:#a0aec0;stroke-dasharray:4 3}
svg.chart .blocking .word{fill:#9b2c2c;font-weight:700}
svg.chart .inconclusive .word{fill:#975a16;font-weight:700}
svg.chart .ok .word{fill:#22543d;font-weight:600}
svg.chart .ungated .word,svg.chart .global text{fill:#4a5568}
svg.chart .global text{font-style:italic}
svg.chart .count{fill:#553c9a}
.swatch{display:inline-block;width:.9em;height:.9em;vertical-align:-.1em;border-radius:2px}
.swatch.inconclusive{background:#d69e2e}.swatch.unchecked{background:#805ad5}
footer{margin-top:32px;color:#718096;font-size:.85em}
@media print{main{max-width:none;padding:0}.verdict{break-inside:avoid}pre{max-height:none}}
"""


def _esc(value: Any) -> str:
    return html.escape(_writable(str(value)), quote=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _x(rate: float) -> float:
    """The chart's x coordinate of a rate between 0 and 1."""
    return round(_LABEL_W + rate * _BAR_W, 2)


def _outcome(report: GateReport) -> tuple[str, str]:
    """The verdict word and its CSS class."""
    if not report.complete:
        return "INCOMPLETE", "incomplete"
    if not any(c.threshold is not None for c in report.categories):
        return "NOT GATED", "ungated"
    return ("PASSED", "passed") if report.passed else ("FAILED", "failed")


def _state(v: CategoryVerdict) -> tuple[str, str]:
    """A category's CSS class(es) and the word that says it without colour."""
    if v.outcome == "inconclusive":
        if v.blocking:
            return "blocking inconclusive", "inconclusive, BLOCKS"
        return "inconclusive", "inconclusive"
    if v.blocking:
        return "blocking", "BLOCKS"
    if v.threshold is None:
        return "ungated", "no threshold"
    return "ok", "ok"


def _distinct(rows: Iterable[Mapping[str, Any]], key: str) -> list[str]:
    return sorted({str(r[key]) for r in rows if r.get(key) is not None})


def _facts(pairs: Iterable[tuple[str, str]], css: str = "facts") -> str:
    """A ``<dl>`` of (term, already escaped HTML) pairs."""
    items = "".join(f"<dt>{_esc(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="{css}">{items}</dl>'


def _plain_facts(pairs: Iterable[tuple[str, str]], css: str = "facts") -> str:
    return _facts(((k, _esc(v)) for k, v in pairs), css)


def _relative(path: Any, cwd: str) -> str:
    """A path as shown: relative to ``cwd`` when it lies under it, else as given."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        inside = os.path.relpath(text, cwd)
    except ValueError:  # another drive
        return text
    return text if inside == ".." or inside.startswith(".." + os.sep) else inside


# run_info keys shown elsewhere on the page (header facts, the judge section, the banner)
_SHOWN_APART = frozenset({
    "tinyeval_version", "cases_file", "cases", "selected", "rows", "complete", "stopped_reason",
    "out", "results", "dataset_fingerprint", "dataset_fingerprints", "judge_model", "judges",
    "criteria", "rubric_fingerprints", "elapsed_s", "resumed_rows",
})  # fmt: skip
_PATH_KEYS = frozenset({"out", "results", "cases_file", "review_out", "calibration", "path"})
_LABELS = {"cost_usd": "cost", "review_rows": "rows for review"}


def _info_value(key: str, value: Any, cwd: str) -> str:
    """One run_info value as HTML in words and numbers: no Python literal, no ``key=value``."""
    if key == "usage" and isinstance(value, Mapping):
        line, _ = usage_line({k: v for k, v in value.items() if isinstance(v, int)})
        return _esc(line.removeprefix("tokens: "))
    if key == "cost_usd" and isinstance(value, int | float):
        return _esc(f"about {format_usd(float(value))}")
    if key == "cache" and isinstance(value, Mapping):
        hits, misses = value.get("hits", 0), value.get("misses", 0)
        text = f"{plural(int(hits or 0), 'hit')}, {plural(int(misses or 0), 'miss', 'misses')}"
        if value.get("path"):
            text += f" in {_relative(value['path'], cwd)}"
        return _esc(text)
    if key == "suite" and isinstance(value, Mapping):
        text = _relative(value.get("path") or "suite file", cwd)
        if value.get("fingerprint"):
            text += f" (fingerprint {value['fingerprint']})"
        if value.get("overridden"):
            text += "; given again on the command line: " + ", ".join(map(str, value["overridden"]))
        return _esc(text)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        pairs = [
            (_label(str(k)), _info_value(str(k), v, cwd))
            for k, v in value.items()
            if v not in (None, "", [], {})
        ]
        return _facts(pairs) if pairs else "—"
    if isinstance(value, list | tuple | set | frozenset):
        if key.startswith("gate_settings"):  # setting names, as the text summary words them
            return ", ".join(_esc(_label(str(item))) for item in value)
        return ", ".join(_info_value(key, item, cwd) for item in value)
    if isinstance(value, float):
        return _esc(f"{value:g}")
    if isinstance(value, int):
        return _esc(f"{value:,}")
    if key in _PATH_KEYS:
        return _esc(_relative(value, cwd))
    return _esc(value)


def _label(key: str) -> str:
    return _LABELS.get(key, key.replace("_", " "))


def _unchecked_html(report: GateReport) -> list[str]:
    return [f'<p class="unchecked">{_esc(line)}</p>' for line in _unchecked_lines(report)]


def _banner(report: GateReport, info: Mapping[str, Any]) -> list[str]:
    word, css = _outcome(report)
    how = (
        f"the lower end of the {report.confidence:.0%} Wilson interval"
        if report.on == "lower"
        else "the observed pass rate"
    )
    parts = [
        f'<section class="verdict {css}" aria-label="gate verdict">',
        f'<p class="outcome">Gate {word}</p>',
    ]
    if not report.complete:
        parts.append(f'<p class="missing">Missing: {_esc(report.completeness)}</p>')
        if info.get("stopped_reason"):
            parts.append(f"<p>The run stopped early: {_esc(info['stopped_reason'])}.</p>")
        parts.append(
            "<p>No gate is decided on missing cases: the figures below are those of the rows "
            "present.</p>"
        )
    else:
        parts.append(f"<p>{_esc(_gate_line(report).split(' — ', 1)[-1])}</p>")
    if report.undecided:
        items = "".join(
            f"<li>{_esc(v.category)}: {_esc(_mark(v, report.on))}</li>" for v in report.undecided
        )
        parts.append(
            '<div class="undecided"><p>Inconclusive (the interval straddles the threshold: the '
            f"suite is too small to tell):</p><ul>{items}</ul></div>"
        )
    parts += _unchecked_html(report)
    parts += [
        f'<p class="note">Each category is gated on {how}; the global line never gates.</p>',
        "</section>",
    ]
    return parts


def _html_header(
    rows: list[Mapping[str, Any]],
    report: GateReport,
    title: str,
    run_info: Mapping[str, Any] | None,
    cwd: str,
) -> str:
    info = dict(run_info or {})
    judged_rows = [r for r in rows if verdicts(r)]
    fingerprints = _distinct(rows, "dataset_fingerprint")
    if not fingerprints:
        given = info.get("dataset_fingerprints") or info.get("dataset_fingerprint") or []
        fingerprints = sorted({str(f) for f in ([given] if isinstance(given, str) else given)})
    errors = sum(1 for r in rows if r.get("status") == "error")
    cases = plural(len(rows), "result row")
    in_file, selected = info.get("cases"), info.get("selected")
    if isinstance(in_file, int) and in_file != len(rows):
        cases += f" of {plural(in_file, 'case')} in the cases file"
        if isinstance(selected, int) and selected != in_file:
            cases += f" ({selected:,} selected)"
    facts = [("cases", cases)]
    if report.overall.total != len(rows):
        counted = plural(report.overall.total, "case")
        facts.append(("gate counts", f"{counted} (not the rows listed here)"))
    for key, name in (("cases_file", "cases file"), ("out", "results file"),
                      ("results", "results file")):  # fmt: skip
        if info.get(key):
            facts.append((name, _relative(info[key], cwd)))
    facts.append(("errored", f"{errors} (counted as not passed)"))
    dataset = ", ".join(fingerprints) or "unknown"
    if len(fingerprints) > 1:
        dataset += " — rows from more than one dataset"
    facts.append(("dataset fingerprint", dataset))
    models = _distinct(judged_rows, "judge_model")
    if not models and info.get("judge_model"):
        models = [str(info["judge_model"])]
    facts.append(("judge model", ", ".join(models) or "no judge"))
    versions = set(_distinct(rows, "tinyeval_version"))
    if info.get("tinyeval_version"):
        versions.add(str(info["tinyeval_version"]))
    if versions:
        facts.append(("tinyeval version", ", ".join(sorted(versions))))
    started, finished = _distinct(rows, "started_at"), _distinct(rows, "finished_at")
    if started and finished:
        facts.append(("cases ran", f"{started[0]} → {finished[-1]}"))
    if isinstance(info.get("elapsed_s"), int | float):
        took = f"{info['elapsed_s']:.2f} s"
        resumed = info.get("resumed_rows")
        if isinstance(resumed, int) and resumed:
            took += f" in this session; {plural(resumed, 'row')} kept from an earlier run"
        facts.append(("elapsed", took))
    parts = [f"<header>\n<h1>{_esc(title)}</h1>", *_banner(report, info), _plain_facts(facts)]
    extra = [
        (_label(str(k)), shown)
        for k, v in info.items()
        if str(k) not in _SHOWN_APART and (isinstance(v, bool) or v not in (None, "", [], {}, 0))
        for shown in [_info_value(str(k), v, cwd)]
        if shown
    ]
    if extra:
        parts.append("<details open><summary>run details</summary>")
        parts.append(_facts(extra))
        parts.append("</details>")
    parts.append("</header>")
    return "\n".join(parts)


def _html_gate_table(report: GateReport) -> str:
    conf = f"{report.confidence:.0%}"
    lines = [
        '<section aria-labelledby="h-categories">',
        '<h2 id="h-categories">Pass rate per category</h2>',
        '<table class="gate">',
        "<thead><tr>"
        '<th scope="col">category</th>'
        f'<th scope="col">pass rate [{conf} Wilson]</th>'
        '<th scope="col">unchecked</th>'
        '<th scope="col">threshold</th>'
        '<th scope="col">gate</th>'
        "</tr></thead>",
        "<tbody>",
    ]
    for v in report.categories:
        css, _ = _state(v)
        mark = _esc(_mark(v, report.on))
        if v.outcome == "inconclusive":
            mark = mark.replace(
                "inconclusive", '<strong class="inconclusive-word">inconclusive</strong>', 1
            )
            mark = mark.replace("(BLOCKS)", '(<strong class="blocks">BLOCKS</strong>)', 1)
        elif v.blocking:
            mark = mark.replace("BLOCKS", '<strong class="blocks">BLOCKS</strong>', 1)
        lines.append(
            f'<tr class="{css}"><th scope="row">{_esc(v.category)}</th>'
            f'<td class="rate">{_esc(_rate_cell(v, report.confidence))}</td>'
            f'<td class="num">{v.unchecked}</td>'
            f'<td class="rate">{_esc(_pct(v.threshold))}</td><td>{mark}</td></tr>'
        )
    overall = report.overall
    lines += [
        "</tbody>",
        '<tfoot><tr class="global"><th scope="row">global</th>'
        f'<td class="rate">{_esc(_rate_cell(overall, report.confidence))}</td>'
        f'<td class="num">{overall.unchecked}</td>'
        "<td>—</td><td>shown, never gates</td></tr></tfoot>",
        "</table>",
        "</section>",
    ]
    return "\n".join(lines)


def _svg_row(v: CategoryVerdict, top: float, css: str, word: str, report: GateReport) -> str:
    middle = top + _ROW_H / 2
    bar_top = middle - _BAR_H / 2
    rate = _rate_cell(v, report.confidence)
    threshold = "none" if v.threshold is None else _pct(v.threshold)
    mark = "shown, never gates" if css == "global" else _mark(v, report.on)
    unchecked = f"; {v.unchecked} unchecked" if v.unchecked else ""
    tooltip = f"{v.category}: {rate}{unchecked}; threshold {threshold}; {mark}"
    parts = [
        f'<g class="{css}">',
        f"<title>{_esc(tooltip)}</title>",
        f'<text class="name" x="{_LABEL_W - 10}" y="{middle}" dy="0.35em" text-anchor="end">'
        f"{_esc(_clip(v.category, _NAME_CHARS))}</text>",
        f'<rect class="track" x="{_LABEL_W}" y="{bar_top}" width="{_BAR_W}" height="{_BAR_H}"/>',
    ]
    if v.rate is not None and v.low is not None and v.high is not None:
        low, high = _x(v.low), _x(v.high)
        parts.append(
            f'<rect class="bar" x="{_LABEL_W}" y="{bar_top}" '
            f'width="{round(v.rate * _BAR_W, 2)}" height="{_BAR_H}"/>'
        )
        if v.unchecked and v.total:
            parts.append(
                f'<rect class="unchecked" x="{_x(v.rate)}" y="{bar_top}" '
                f'width="{round(v.unchecked / v.total * _BAR_W, 2)}" height="{_BAR_H}"/>'
            )
        parts += [
            f'<line class="interval" x1="{low}" x2="{high}" y1="{middle}" y2="{middle}"/>',
            f'<line class="cap" x1="{low}" x2="{low}" y1="{middle - 5}" y2="{middle + 5}"/>',
            f'<line class="cap" x1="{high}" x2="{high}" y1="{middle - 5}" y2="{middle + 5}"/>',
        ]
    if v.threshold is not None:
        tick = _x(v.threshold)
        parts.append(
            f'<line class="threshold" x1="{tick}" x2="{tick}" '
            f'y1="{bar_top - 6}" y2="{bar_top + _BAR_H + 6}"/>'
        )
    count = f' <tspan class="count">· {v.unchecked} unchecked</tspan>' if v.unchecked else ""
    parts.append(
        f'<text class="mark" x="{_LABEL_W + _BAR_W + 14}" y="{middle}" dy="0.35em">'
        f'<tspan class="word">{_esc(word)}</tspan> {_esc(rate)}{count}</text>'
    )
    parts.append("</g>")
    return "\n".join(parts)


def _html_chart(report: GateReport) -> str:
    count = len(report.categories)
    rows_bottom = _AXIS_H + count * _ROW_H
    height = rows_bottom + _GLOBAL_GAP + _ROW_H + 6
    width = _LABEL_W + _BAR_W + _TEXT_W
    conf = f"{report.confidence:.0%}"
    blocking = ", ".join(c.category for c in report.blocking) or "none"
    undecided = ", ".join(c.category for c in report.undecided)
    parts = [
        '<section aria-labelledby="h-chart">',
        '<h2 id="h-chart">Chart</h2>',
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" '
        'aria-labelledby="chart-title chart-desc">',
        f'<title id="chart-title">Pass rate per category with its {conf} Wilson interval '
        "and threshold</title>",
        f'<desc id="chart-desc">Blocking categories: {_esc(blocking)}. '
        + (f"Inconclusive: {_esc(undecided)}. " if undecided else "")
        + "The global line is shown and never gates.</desc>",
        '<g class="axis">',
    ]
    for step in range(5):
        x = _x(step / 4)
        parts.append(
            f'<line class="grid" x1="{x}" x2="{x}" y1="{_AXIS_H - 6}" y2="{height - 4}"/>'
            f'<text x="{x}" y="{_AXIS_H - 12}" text-anchor="middle">{step * 25}%</text>'
        )
    parts.append("</g>")
    for i, v in enumerate(report.categories):
        css, word = _state(v)
        parts.append(_svg_row(v, _AXIS_H + i * _ROW_H, css, word, report))
    rule = rows_bottom + _GLOBAL_GAP / 2
    parts.append(f'<line class="rule" x1="0" x2="{width}" y1="{rule}" y2="{rule}"/>')
    parts.append(
        _svg_row(report.overall, rows_bottom + _GLOBAL_GAP, "global", "never gates", report)
    )
    parts += [
        "</svg>",
        f'<p class="note">Bar: pass rate. Whisker: its {conf} Wilson interval. '
        "Thick dark tick: the category's threshold. "
        "<strong>BLOCKS</strong> (red) is below its threshold, <em>ok</em> (green) meets it "
        'with its whole interval, <span class="swatch inconclusive"></span> '
        "<em>inconclusive</em> (amber) meets it on its rate but its interval reaches below it, "
        "<em>no threshold</em> (blue) is not gated; "
        '<span class="swatch unchecked"></span> purple: cases nothing checked (never a pass); '
        "the grey global line never gates.</p>",
        "</section>",
    ]
    return "\n".join(parts)


def _criterion_text(name: str, given: Mapping[str, Any], seen: set[str]) -> list[str]:
    """What the judge ``name`` was asked, in words: the run's own text, else the rows'."""
    from .judge import CRITERIA

    if isinstance(given.get(name), str) and given[name].strip():
        return [given[name]]
    return sorted({CRITERIA.get(text, text) for text in seen if text})


def _new_judge_counts() -> dict[str, Any]:
    zeros: dict[str, Any] = dict.fromkeys(("judged", "passed", "unparsed", "errors", "split"), 0)
    return {**zeros, "specs": set(), "reported": set(), "rubrics": set(), "criteria": set()}


def _judge_counts(rows: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per judge name: verdicts, PASS, unparsed replies, call errors, split votes, models."""
    counts: dict[str, dict[str, Any]] = {}
    for row in rows:
        for name, verdict in verdicts(row).items():
            c = counts.setdefault(str(name), _new_judge_counts())
            c["judged"] += 1
            c["passed"] += verdict.get("verdict") == "PASS"
            if verdict.get("verdict") is None:
                c["errors" if verdict.get("failure") == "error" else "unparsed"] += 1
            if len(verdict.get("votes") or ()) > 1 and not verdict.get("unanimous", True):
                c["split"] += 1
            if row.get("judge_model"):
                c["specs"].add(str(row["judge_model"]))
            if verdict.get("model"):
                c["reported"].add(str(verdict["model"]))
            if verdict.get("rubric_fingerprint"):
                c["rubrics"].add(str(verdict["rubric_fingerprint"]))
            if isinstance(verdict.get("criterion"), str):
                c["criteria"].add(verdict["criterion"])
    return counts


def _model_text(specs: set[str], reported: set[str]) -> str:
    """Each model once: the specs the run used, then any other name the server reported."""
    # a server reporting "m" for the spec "openai:org/m" names the same model
    known = set(specs) | {spec.partition(":")[2] for spec in specs}
    known |= {name.rpartition("/")[2] for name in known}
    others = sorted(name for name in reported if name not in known)
    text = ", ".join(sorted(specs))
    if others:
        said = ", ".join(others)
        text = f"{text} (reported: {said})" if text else said
    return text or "—"


def _html_judges(
    rows: list[Mapping[str, Any]], confidence: float, criteria: Mapping[str, Any]
) -> str:
    counts = _judge_counts(rows)
    head = ['<section aria-labelledby="h-judges">', '<h2 id="h-judges">Judge</h2>']
    if not counts:
        return "\n".join([*head, '<p class="note">No judge ran on these rows.</p>', "</section>"])
    lines = list(head)
    if len(counts) > 1:  # with one judge, its row of the table says all of it
        judged = sum(c["judged"] for c in counts.values())
        unparsed = sum(c["unparsed"] for c in counts.values())
        errors = sum(c["errors"] for c in counts.values())
        cases = sum(1 for r in rows if verdicts(r))
        lines.append(_plain_facts([
            ("verdicts", f"{judged} on {plural(cases, 'case')}"),
            ("did not parse",
             f"{format_rate(unparsed, judged, confidence)} (counted as not passed)"),
            ("call errors", f"{errors} (the case is an error row)"),
        ]))  # fmt: skip
    lines += [
        '<table class="judges">',
        "<thead><tr>"
        '<th scope="col">judge</th><th scope="col">model</th><th scope="col">rubric</th>'
        '<th scope="col">verdicts</th><th scope="col">PASS</th>'
        '<th scope="col">did not parse (counted as not passed)</th>'
        '<th scope="col">call errors</th><th scope="col">split votes</th>'
        "</tr></thead>",
        "<tbody>",
    ]
    asked = []
    for name, c in counts.items():
        rubrics = " ".join(
            f'<code title="{_esc(r)}">{_esc(r[:12])}</code>' for r in sorted(c["rubrics"])
        )
        lines.append(
            f'<tr><th scope="row">{_esc(name)}</th>'
            f'<td class="model">{_esc(_model_text(c["specs"], c["reported"]))}</td>'
            f"<td>{rubrics or '—'}</td>"
            f'<td class="num">{c["judged"]}</td>'
            f'<td class="rate">{_esc(format_rate(c["passed"], c["judged"], confidence))}</td>'
            f'<td class="rate">{_esc(format_rate(c["unparsed"], c["judged"], confidence))}</td>'
            f'<td class="num">{c["errors"]}</td><td class="num">{c["split"]}</td></tr>'
        )
        texts = _criterion_text(name, criteria, c["criteria"])
        asked.append((name, "<br>".join(_esc(t) for t in texts) or "not recorded"))
    lines += ["</tbody>", "</table>", "<h3>What each judge was asked</h3>"]
    lines += [_facts(asked, "facts criteria"), "</section>"]
    return "\n".join(lines)


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _reasons(row: Mapping[str, Any]) -> list[str]:
    """Every reason a row did not pass: its error, every failing check, every judge not PASS."""
    status = row.get("status")
    reasons = []
    if status == "error":
        reasons.append(f"error: {_one_line(row.get('error'))}")
    if status == "unchecked":
        why = row.get("judge_skipped") or "no check and no judge looked at it"
        reasons.append(f"unchecked: {_one_line(why)}")
    checks = row.get("checks")
    details = row.get("check_details")
    if isinstance(checks, Mapping):
        details = details if isinstance(details, Mapping) else {}
        for name, ok in checks.items():
            if not ok:
                said = details.get(name)
                reasons.append(f"{name}: {_one_line(said)}" if said else str(name))
    for name, judge in verdicts(row).items():
        if judge.get("verdict") == "PASS" or "winner" in judge:
            continue
        if judge.get("verdict") is not None:
            reasons.append(f"judge {name}: {_one_line(judge.get('reason') or judge['verdict'])}")
        elif judge.get("failure") == "error":
            if status != "error":
                reasons.append(f"judge {name}: the call failed: {_one_line(judge.get('error'))}")
        else:
            replies = [str(r) for r in judge.get("raw") or [] if str(r).strip()]
            said = (
                f': replied "{shorten(_one_line(replies[0]), _EXCERPT_CHARS)}"'
                if replies
                else ": the reply was empty"
            )
            reasons.append(f"judge {name}: no verdict ({judge.get('failure') or 'unparsed'}){said}")
    return reasons or [describe_failure(row, width=500)]


def _block(value: Any) -> str:
    """A value of a case as a ``<pre>`` block: text as it is, anything else as indented JSON."""
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if not text.strip():
        return '<p class="note">(empty)</p>'
    return f"<pre>{_esc(_clip(text, _DETAIL_CHARS))}</pre>"


def _tool_call_text(call: Any) -> str:
    """``name(arguments)`` for a tool call in any of the shapes the checks read."""
    if isinstance(call, str):
        return f"{call}()"
    if not isinstance(call, Mapping):
        return _one_line(call)
    function = call.get("function")
    inner: Mapping[str, Any] = function if isinstance(function, Mapping) else call
    name = inner.get("name") or "?"
    arguments = inner.get("arguments", call.get("input"))
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    if arguments in (None, "", {}):
        shown = ""
    elif isinstance(arguments, str):
        shown = arguments
    else:
        shown = json.dumps(arguments, ensure_ascii=False, default=str)
    return f"{name}({shown})"


def _is_chat(value: Any) -> TypeGuard[list[Mapping[str, Any]]]:
    """True for a message list (``[{"role": ..., "content": ...}, ...]``)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, Mapping) and "role" in m for m in value)
    )


def _content_text(content: Any, calls: list[str]) -> list[str]:
    """A message's content as lines; its tool-use blocks are appended to ``calls`` too."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return [json.dumps(content, ensure_ascii=False, default=str)]
    lines = []
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if isinstance(block, str):
            lines.append(block)
        elif kind == "text" and isinstance(block, Mapping):
            lines.append(str(block.get("text", "")))
        elif kind == "tool_use":
            calls.append(_tool_call_text(block))
            lines.append(f"calls {calls[-1]}")
        elif kind == "tool_result" and isinstance(block, Mapping):
            inner = _content_text(block.get("content"), [])
            lines.append(f"tool result ({block.get('tool_use_id')}): " + " ".join(inner))
        else:
            lines.append(json.dumps(block, ensure_ascii=False, default=str))
    return lines


def _transcript(messages: list[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """A conversation as ``role: text`` lines, and the tool calls it holds, in order."""
    lines: list[str] = []
    calls: list[str] = []
    for message in messages:
        role = str(message.get("role"))
        if message.get("tool_call_id"):
            role += f" ({message['tool_call_id']})"
        said = _content_text(message.get("content"), calls)
        for call in message.get("tool_calls") or ():
            calls.append(_tool_call_text(call))
            said.append(f"calls {calls[-1]}")
        lines.append(f"{role}: " + "\n  ".join(said) if said else f"{role}: (nothing)")
    return "\n".join(lines), calls


def _case_details(row: Mapping[str, Any], columns: int) -> str:
    """The collapsed row under a failed case: input, context, tool calls, output, the judges."""
    parts: list[tuple[str, str]] = []
    shown: list[str] = []
    calls: list[str] = []
    given = row.get("input")
    if _is_chat(given):
        text, calls = _transcript(given)
        parts.append(("conversation", _block(text)))
        shown.append("conversation")
    elif given not in (None, ""):
        parts.append(("input", _block(given)))
        shown.append("input")
    if row.get("context") not in (None, ""):
        parts.append(("context", _block(row["context"])))
        shown.append("context")
    listed = row.get("tool_calls")
    if isinstance(listed, list | tuple):
        calls += [_tool_call_text(c) for c in listed]
    if calls:
        parts.append(("tool calls", _block("\n".join(calls))))
        shown.append("tool calls")
    output = row.get("output")
    if isinstance(output, str) and len(output) > _OUTPUT_CHARS:
        parts.append(("output, in full", _block(output)))
        shown.append("the whole output")
    replies = False
    for name, judge in verdicts(row).items():
        if "winner" in judge:
            continue
        said = judge.get("verdict") or f"no verdict ({judge.get('failure') or 'unparsed'})"
        body = [f"<p>{_esc(said)}"]
        if judge.get("reason") and judge.get("verdict") is not None:
            body[0] += f": {_esc(_one_line(judge['reason']))}"
        body[0] += "</p>"
        if judge.get("verdict") is None:
            if judge.get("failure") == "error":
                body.append(f"<p>{_esc(_one_line(judge.get('error')))}</p>")
            raw = [str(r) for r in judge.get("raw") or []]
            for number, reply in enumerate(raw, start=1):
                which = f"reply {number} of {len(raw)}" if len(raw) > 1 else "its reply"
                if reply.strip():
                    body.append(f'<p class="note">{which}, as received:</p>{_block(reply)}')
                else:
                    body.append(f'<p class="note">{which} was empty</p>')
            replies = replies or bool(raw)
        parts.append((f"judge {name}", "".join(body)))
    if not parts:
        return ""
    if replies:
        shown.append("judge reply")
    elif verdicts(row):
        shown.append("judge verdict")
    summary = "details: " + ", ".join(shown)
    return (
        f'<tr class="more"><td colspan="{columns}"><details class="case">'
        f"<summary>{_esc(summary)}</summary>{_facts(parts)}</details></td></tr>"
    )


def _output_cell(output: Any) -> str:
    if output is None:
        return '<td class="output">—</td>'
    text = str(output)
    if not text.strip():
        return '<td class="output empty">(empty output)</td>'
    return f'<td class="output">{_esc(_clip(text, _OUTPUT_CHARS))}</td>'


def _html_failures(rows: list[Mapping[str, Any]], report: GateReport) -> str:
    head = [
        '<section aria-labelledby="h-failures">',
        '<h2 id="h-failures">Cases that did not pass</h2>',
    ]
    failed = [r for r in rows if r.get("status") != "pass"]
    if not failed:
        return "\n".join([*head, f'<p class="note">{_all_passed(len(rows))}</p>', "</section>"])
    order = {v.category: i for i, v in enumerate(report.categories)}
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in failed:
        groups.setdefault(str(row.get("category")), []).append(row)
    in_category: dict[str, int] = {}
    for row in rows:
        key = str(row.get("category"))
        in_category[key] = in_category.get(key, 0) + 1
    origins = any(r.get("origin") for r in failed)
    columns = 5 if origins else 4
    lines = [
        *head,
        '<table class="failures">',
        f"<caption>{len(failed)} of {plural(len(rows), 'case')}, every one listed, "
        "grouped by category, each with every reason it did not pass; "
        f"outputs cut at {_OUTPUT_CHARS} characters. Open a case's details for its input, "
        "context, tool calls and the judge's reply.</caption>",
        '<thead><tr><th scope="col">id</th>'
        + ('<th scope="col">origin</th>' if origins else "")
        + '<th scope="col">status</th><th scope="col">why</th><th scope="col">output</th>'
        "</tr></thead>",
    ]
    for category in sorted(groups, key=lambda name: (order.get(name, len(order)), name)):
        members = sorted(groups[category], key=lambda r: str(r.get("id")))
        lines.append("<tbody>")
        lines.append(
            f'<tr class="group"><th scope="rowgroup" colspan="{columns}">{_esc(category)}: '
            f"{len(members)} of {in_category[category]} did not pass</th></tr>"
        )
        for row in members:
            status = str(row.get("status"))
            more = _case_details(row, columns)
            css = "case" + (f" {status}" if status in ("error", "unchecked") else "")
            css += " has-more" if more else ""
            why = "".join(f"<li>{_esc(reason)}</li>" for reason in _reasons(row))
            lines.append(
                f'<tr class="{css}"><th scope="row">{_esc(row.get("id"))}</th>'
                + (f"<td>{_esc(row.get('origin') or '—')}</td>" if origins else "")
                + f'<td class="status">{_esc(status)}</td>'
                f'<td class="why"><ul class="why">{why}</ul></td>'
                f"{_output_cell(row.get('output'))}</tr>"
            )
            if more:
                lines.append(more)
        lines.append("</tbody>")
    lines += ["</table>", "</section>"]
    return "\n".join(lines)


def _all_passed(count: int) -> str:
    if count == 1:
        return "The 1 case passed."
    return "No cases." if count == 0 else f"All {count} cases passed."


def html_report(
    rows: list[Mapping[str, Any]],
    report: GateReport,
    *,
    title: str = "tinyeval report",
    run_info: Mapping[str, Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> str:
    """One self-contained HTML page to debug a run from: the verdict, the table, a chart, the
    judges and what they were asked, and every case that did not pass with why.

    The page needs nothing but itself: inline CSS, an inline SVG chart, no
    script, no font, image or request from elsewhere (a Content-Security-Policy
    says so to the browser). It holds the gate's verdict in words: the blocking
    categories, the inconclusive ones with about how many more cases would
    decide them, the cases nothing checked (with ids), and, when the rows miss
    cases or shards of their run, a banner naming what is missing. Then each
    figure once: the cases, the dataset fingerprint(s), judge model(s) and
    versions found in ``rows``, and whatever else ``run_info`` carries (as
    ``summary_dict`` takes it; booleans, token usage and cache figures in words
    and numbers, paths relative to ``cwd``, the working directory by default);
    the per-category table of the text summary with its unchecked column; a bar
    per category with its Wilson interval, threshold tick and unchecked share,
    each state said in words as well as colour, the global line greyed as never
    gating; per judge its verdicts, unparsed replies and call errors, and the
    criterion's text (``run_info["criteria"]``, else the rows', built-in names
    resolved to their text); and every case that did not pass, by category,
    with every failing check and judge reason, and its input, context, tool
    calls and the judge's reply collapsed under it.

    The table and chart come from ``report``; the rest from ``rows``. Every
    text taken from the rows (ids, categories, outputs, reasons) is escaped.

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "t-1", "category": "tone", "status": "pass"},
    ...         {"id": "t-2", "category": "tone", "status": "fail",
    ...          "checks": {"max_words": False}, "output": "<b>far too long</b>"}]
    >>> page = html_report(rows, gate({"tone": {"passed": 1, "total": 2}}, {"tone": 0.9}))
    >>> page.startswith("<!DOCTYPE html>"), "Gate FAILED" in page
    (True, True)
    >>> "&lt;b&gt;far too long&lt;/b&gt;" in page, "<b>far" in page
    (True, False)
    """
    rows = list(rows)
    word, _ = _outcome(report)
    from . import __version__

    here = os.fspath(cwd) if cwd is not None else os.getcwd()
    info = run_info or {}
    criteria = info.get("criteria") if isinstance(info.get("criteria"), Mapping) else {}
    versions = set(_distinct(rows, "tinyeval_version"))
    if info.get("tinyeval_version"):
        versions.add(str(info["tinyeval_version"]))
    footer = "One self-contained file: no script, nothing loaded from elsewhere."
    if versions != {__version__}:
        footer = f"Written by tinyeval {__version__}. {footer}"
    body = "\n".join(
        [
            _html_header(rows, report, title, run_info, here),
            _html_gate_table(report),
            _html_chart(report),
            _html_judges(rows, report.confidence, criteria or {}),
            _html_failures(rows, report),
            f"<footer>{_esc(footer)}</footer>",
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)}: gate {word}</title>\n"
        f"<style>{_HTML_STYLE}</style>\n"
        f"</head>\n<body>\n<main>\n{_writable(body)}\n</main>\n</body>\n</html>\n"
    )


# ------------------------------------------------------------------- CI: a JUnit gate, GitHub

__all__ += [
    "append_step_summary",
    "github_summary",
    "junit_gate_xml",
    "workflow_commands",
]


def _gate_state(v: CategoryVerdict) -> str:
    """``block``, ``inconclusive`` (let through), ``pass`` or ``ungated``.

    >>> from tinyeval.gating import gate
    >>> [_gate_state(v) for v in gate({"t": {"passed": 9, "total": 10}}).categories]
    ['ungated']
    """
    if v.blocking:
        return "block"
    return v.outcome


def _incomplete_reason(report: GateReport, incomplete: str | None) -> str | None:
    """Why the results are incomplete: as given, or as the report says (None when complete)."""
    if incomplete:
        return incomplete
    return None if report.complete else str(report.completeness)


def _verdict_line(v: CategoryVerdict, report: GateReport) -> str:
    """``17/20 = 85.0% [64.0%, 94.8%], threshold 100.0%: BLOCKS (85.0% < 100.0%)``."""
    state = _gate_state(v)
    mark = "inconclusive" if state == "inconclusive" else _mark(v, report.on)
    return f"{_rate_cell(v, report.confidence)}, threshold {_pct(v.threshold)}: {mark}"


def _failed_by_category(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Rows that did not pass, by category, each list sorted by id (stable whatever the order)."""
    failed: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("status") != "pass":
            failed.setdefault(str(row.get("category", "default")), []).append(row)
    for members in failed.values():
        members.sort(key=lambda r: str(r.get("id")))
    return failed


def junit_gate_xml(
    report: GateReport, rows: Iterable[Mapping[str, Any]], *, incomplete: str | None = None
) -> str:
    """JUnit XML whose failures are exactly the gate's: red in CI only when a category blocks.

    Two test suites. ``tinyeval.gate`` has one test case per category: a
    ``<failure>`` when the category blocks, ``<skipped>`` when it has no
    threshold (it is shown, not gated), passed otherwise; plus a ``complete``
    test case with an ``<error>`` when the results are incomplete
    (``incomplete`` says why, or the report's own ``incomplete`` mark).
    ``tinyeval.cases`` has one test case per case, class name
    ``tinyeval.cases.CATEGORY``: a case that did not pass is a ``<failure>``
    (``<error>`` when it errored) in a category that blocks, and
    ``<skipped>`` with the reason in a category whose gate passed — a failure
    the gate tolerates. Jenkins, GitLab and the GitHub test-report actions
    count skipped tests apart and do not turn the build red for them, yet
    show their message; a property would be kept by Jenkins only and shown by
    none of them.

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "a1", "category": "amounts", "status": "fail",
    ...          "checks": {"valid_json": False}},
    ...         {"id": "t1", "category": "tone", "status": "fail", "checks": {"polite": False}},
    ...         {"id": "t2", "category": "tone", "status": "pass"}]
    >>> report = gate({"amounts": {"passed": 0, "total": 1}, "tone": {"passed": 1, "total": 2}},
    ...               {"amounts": 1.0, "tone": 0.5})
    >>> xml = junit_gate_xml(report, rows)
    >>> '<testsuite name="tinyeval.gate" tests="2" failures="1" errors="0" skipped="0">' in xml
    True
    >>> '<testcase classname="tinyeval.cases.tone" name="t1" time="0.000"><skipped' in xml
    True
    """
    import xml.etree.ElementTree as ET

    rows = list(rows)
    blocking = {v.category for v in report.categories if v.blocking}
    root = ET.Element("testsuites", name="tinyeval")

    gate_suite = ET.SubElement(root, "testsuite", name="tinyeval.gate")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failed = _failed_by_category(rows)
    for v in report.categories:
        case = ET.SubElement(
            gate_suite, "testcase", classname="tinyeval.gate", name=v.category, time="0.000"
        )
        counts["tests"] += 1
        line = _verdict_line(v, report)
        state = _gate_state(v)
        if state == "block":
            counts["failures"] += 1
            members = failed.get(v.category, [])
            detail = [line, *(f"{r.get('id')}: {describe_failure(r, width=300)}" for r in members)]
            kind = "inconclusive" if v.outcome == "inconclusive" else "blocking"
            ET.SubElement(case, "failure", message=line, type=kind).text = "\n".join(detail)
        elif state == "ungated":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=f"not gated (no threshold): {line}")
        else:
            ET.SubElement(case, "system-out").text = line
    reason = _incomplete_reason(report, incomplete)
    if reason:
        case = ET.SubElement(
            gate_suite, "testcase", classname="tinyeval.gate", name="complete", time="0.000"
        )
        counts["tests"] += 1
        counts["errors"] += 1
        ET.SubElement(case, "error", message=reason, type="incomplete").text = reason
    for key, value in counts.items():
        gate_suite.set(key, str(value))

    case_suite = ET.SubElement(root, "testsuite", name="tinyeval.cases")
    case_counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for row in rows:
        category = str(row.get("category", "default"))
        seconds = float(row.get("latency_ms") or 0.0) / 1000
        case = ET.SubElement(
            case_suite, "testcase", classname=f"tinyeval.cases.{category}",
            name=str(row.get("id")), time=f"{seconds:.3f}",
        )  # fmt: skip
        case_counts["tests"] += 1
        status = row.get("status")
        if status == "pass":
            continue
        why = describe_failure(row, width=1000)
        if category in blocking:
            kind = "error" if status == "error" else "failure"
            case_counts["errors" if kind == "error" else "failures"] += 1
            ET.SubElement(case, kind, message=why, type=str(status)).text = why
        else:
            case_counts["skipped"] += 1
            message = f"did not pass ({status}), tolerated: category {category} passes its gate"
            ET.SubElement(case, "skipped", message=message, type=str(status)).text = why
    for key, value in case_counts.items():
        case_suite.set(key, str(value))
    for key in ("tests", "failures", "errors"):
        root.set(key, str(counts[key] + case_counts[key]))
    for element in root.iter():  # what XML 1.0 cannot carry, shown as an escape instead
        if element.text:
            element.text = _xml_safe(element.text)
        for name, text in element.attrib.items():
            element.set(name, _xml_safe(text))
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    """``text`` without the characters XML 1.0 forbids, each shown as its escape.

    >>> _xml_safe("ok\\x1b[31m red\\x00")
    'ok\\\\x1b[31m red\\\\x00'
    """
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def github_summary(
    report: GateReport,
    rows: Iterable[Mapping[str, Any]],
    *,
    title: str = "tinyeval",
    shown: int = 10,
    incomplete: str | None = None,
) -> str:
    """The Markdown for a GitHub Actions job summary: the table, what blocks, and why.

    Under the gate's table: the blocking categories with their figures, the
    inconclusive ones, an incomplete run's reason, then the cases that did not
    pass (up to ``shown`` per category, smallest ids first) with the reason
    each failed. Text from the rows is escaped as in :func:`summary_markdown`.

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "amt-018", "category": "amounts", "status": "fail",
    ...          "checks": {"equals:amount_cents": False},
    ...          "check_details": {"equals:amount_cents": "got 1250, expected 125050"}}]
    >>> text = github_summary(gate({"amounts": {"passed": 0, "total": 1}}, {"amounts": 1.0}), rows)
    >>> print(text.split("\\n\\n", 2)[2])
    **Blocking:** `amounts` — 0/1 = 0.0% [0.0%, 79.3%], threshold 100.0%: BLOCKS (0.0% < 100.0%)
    <BLANKLINE>
    #### Cases that did not pass
    <BLANKLINE>
    | category | case | gate | why |
    | --- | --- | --- | --- |
    | amounts | amt-018 | blocks | equals:amount_cents: got 1250, expected 125050 |
    """
    lines = [summary_markdown(report, title=title), ""]
    reason = _incomplete_reason(report, incomplete)
    if reason:
        lines += [f"**Incomplete:** {_md_cell(reason)} — the gate cannot pass on these results", ""]
    for word, state in (("Blocking", "block"), ("Inconclusive", "inconclusive")):
        for v in report.categories:
            if _gate_state(v) == state:
                line = _verdict_line(v, report).replace("|", "\\|")
                lines += [f"**{word}:** `{_md_cell(v.category)}` — {line}", ""]
    failed = _failed_by_category(rows)
    if not failed:
        lines.append("Every case passed.")
        return "\n".join(lines)
    lines += [
        "#### Cases that did not pass",
        "",
        "| category | case | gate | why |",
        "| --- | --- | --- | --- |",
    ]
    blocking = {v.category for v in report.categories if v.blocking}
    hidden = []
    for category in sorted(failed):
        members = failed[category]
        for row in members[: max(shown, 0)]:
            why = describe_failure(row, width=300)
            counted = "blocks" if category in blocking else "tolerated"
            lines.append(
                f"| {_md_cell(category)} | {_md_cell(str(row.get('id')))} | {counted} "
                f"| {_md_cell(why)} |"
            )
        if len(members) > shown:
            hidden.append(f"{len(members) - shown} more in {_md_cell(category)}")
    if hidden:
        lines += ["", f"Not listed: {', '.join(hidden)} (every row is in the results file)."]
    return "\n".join(lines)


def append_step_summary(
    markdown: str, path: str | None = None, *, environ: Mapping[str, str] | None = None
) -> str | None:
    """Append ``markdown`` to the job summary file; never overwrite what earlier steps wrote.

    The file is ``path``, or the one named by ``GITHUB_STEP_SUMMARY`` in
    ``environ`` (default: the process environment). Returns the path written
    to, or None when there is none (not running in GitHub Actions).

    >>> import os, tempfile
    >>> name = os.path.join(tempfile.mkdtemp(), "summary.md")
    >>> for text in ("first", "second"):
    ...     _ = append_step_summary(text, environ={"GITHUB_STEP_SUMMARY": name})
    >>> print(open(name).read())
    first
    <BLANKLINE>
    second
    <BLANKLINE>
    """
    import os

    target = path or (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as stream:
        if stream.tell() > 0:
            stream.write("\n")  # a blank line between this summary and what came before
        stream.write(markdown.rstrip("\n") + "\n")
    return target


def _command_data(text: str) -> str:
    """A workflow command's message escaped as GitHub's runner reads it back.

    >>> _command_data("50% done\\nnext")
    '50%25 done%0Anext'
    """
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _command_property(text: str) -> str:
    """A workflow command's property value: also ``:`` and ``,``, which end a property.

    >>> _command_property("a:b,c")
    'a%3Ab%2Cc'
    """
    return _command_data(text).replace(":", "%3A").replace(",", "%2C")


def _locations(cases: Any) -> dict[str, tuple[str | None, int | None]]:
    """Case id -> (file, line), from a mapping of that shape or from cases with those attributes."""
    if isinstance(cases, Mapping):
        return {str(k): (v[0], v[1]) for k, v in cases.items()}
    found: dict[str, tuple[str | None, int | None]] = {}
    for case in cases or ():
        found[str(case.id)] = (getattr(case, "source", None), getattr(case, "line", None))
    return found


def workflow_commands(
    report: GateReport,
    rows: Iterable[Mapping[str, Any]],
    *,
    cases: Any = (),
    cases_file: str | None = None,
    incomplete: str | None = None,
) -> list[str]:
    """GitHub Actions ``::error`` / ``::warning`` lines for what blocks and what is undecided.

    One ``::error`` per blocking category and one ``::warning`` per
    inconclusive one that does not block, each pointing at the cases file and
    line of the category's first failing case (smallest id), so the
    annotation lands on it in the pull request. ``cases`` gives the places:
    the loaded cases (their ``source`` and ``line``) or a mapping ``id ->
    (file, line)``; without one, ``cases_file`` alone is named. An incomplete
    run adds an ``::error`` of its own. Messages and properties are escaped
    by GitHub's rules (``%``, CR and LF; and ``:`` and ``,`` in properties).

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "amt-018", "category": "amounts", "status": "fail",
    ...          "checks": {"equals:amount_cents": False}}]
    >>> report = gate({"amounts": {"passed": 0, "total": 1}}, {"amounts": 1.0})
    >>> print(workflow_commands(report, rows, cases={"amt-018": ("cases.jsonl", 18)})[0])
    ::error file=cases.jsonl,line=18,title=tinyeval gate%3A amounts blocks::amounts: 0/1 = ...
    """
    places = _locations(cases)
    failed = _failed_by_category(rows)
    commands = []
    reason = _incomplete_reason(report, incomplete)
    if reason:
        props = f"file={_command_property(cases_file)}," if cases_file else ""
        title = _command_property("tinyeval: results incomplete")
        commands.append(f"::error {props}title={title}::{_command_data(reason)}")
    for v in report.categories:
        state = _gate_state(v)
        if state not in ("block", "inconclusive"):
            continue
        level = "error" if state == "block" else "warning"
        word = "blocks" if state == "block" else "is inconclusive"
        message = f"{v.category}: {_verdict_line(v, report)}"
        members = failed.get(v.category) or []
        first = members[0] if members else None
        parts: list[str] = []
        file, line = cases_file, None
        if first is not None:
            message += (
                f"; first failing case {first.get('id')}: {describe_failure(first, width=300)}"
            )
            file, line = places.get(str(first.get("id")), (cases_file, None))
            file = file or cases_file
        if file:
            parts.append(f"file={_command_property(str(file))}")
            if line:
                parts.append(f"line={int(line)}")
        parts.append(f"title={_command_property(f'tinyeval gate: {v.category} {word}')}")
        commands.append(f"::{level} {','.join(parts)}::{_command_data(message)}")
    return commands
