"""The run's tallies and gate as text, JSON, Markdown and JUnit XML, and the helpers they share.

:mod:`tinyeval.report` re-exports every public name here; the HTML page is in
:mod:`tinyeval.ci.html` and the CI writers in :mod:`tinyeval.ci.github`.

>>> _count(1, "case"), _count(3, "case")
('1 case', '3 cases')
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from .calls import Price, format_usd, run_cost
from .errors import plural, shorten
from .gating import CategoryVerdict, GateReport
from .records import verdicts
from .stats import format_rate

__all__ = [
    "describe_failure",
    "failure_lines",
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
