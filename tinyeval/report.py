"""Turn a run's tallies and gate into what people read.

Text, JSON, Markdown, JUnit XML and a single-file HTML page. Every rate is
printed with its denominator and its Wilson interval
(``17/20 = 85.0% [64.0%, 94.8%]``); a category that blocks is marked
``BLOCKS``; the global line is shown and labelled as never gating.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from .gate import CategoryVerdict, GateReport
from .stats import format_rate

__all__ = ["html_report", "summary_dict", "summary_text"]


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _rate_cell(v: CategoryVerdict, confidence: float = 0.95) -> str:
    if v.total == 0:
        return "0 cases"
    return format_rate(v.passed, v.total, confidence) if v.passed <= v.total else "?"


def _mark(v: CategoryVerdict, on: str) -> str:
    if v.threshold is None:
        return "no threshold"
    if not v.blocking:
        return "ok"
    if v.note:
        return f"BLOCKS ({v.note})"
    measured = v.low if on == "lower" else v.rate
    what = "lower bound " if on == "lower" else ""
    return f"BLOCKS ({what}{_pct(measured)} < {_pct(v.threshold)})"


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

    >>> from tinyeval.gate import gate
    >>> report = gate({"amounts": {"passed": 17, "total": 20}, "tone": {"passed": 12, "total": 12}},
    ...               {"amounts": 1.0}, default_threshold=0.8)
    >>> print(summary_text(report))
    category  pass rate [95% Wilson]           threshold  gate
    amounts   17/20 = 85.0% [64.0%, 94.8%]     100.0%     BLOCKS (85.0% < 100.0%)
    tone      12/12 = 100.0% [75.8%, 100.0%]   80.0%      ok
    global    29/32 = 90.6% [75.8%, 96.8%]     —          shown, never gates
    <BLANKLINE>
    gate: FAILED — blocking: amounts (1 of 2 gated)
    """
    width = max([len("category"), len("global")] + [len(c.category) for c in report.categories])
    cells = [
        (c.category, _rate_cell(c, report.confidence), _pct(c.threshold), _mark(c, report.on))
        for c in report.categories
    ]
    overall = report.overall
    cells.append(("global", _rate_cell(overall, report.confidence), "—", "shown, never gates"))
    conf = f"{report.confidence:.0%}"
    rate_width = max(len(f"pass rate [{conf} Wilson]"), *(len(c[1]) for c in cells))
    lines = [header] if header else []
    title = f"pass rate [{conf} Wilson]"
    lines.append(f"{'category':<{width}}  {title:<{rate_width}}   {'threshold':<9}  gate")
    for name, rate, threshold, mark in cells:
        lines.append(f"{name:<{width}}  {rate:<{rate_width}}   {threshold:<9}  {mark}".rstrip())
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
    lines.extend(extra_lines)
    lines.append(_gate_line(report))
    return "\n".join(lines)


def _gate_line(report: GateReport) -> str:
    gated = [c for c in report.categories if c.threshold is not None]
    if not gated:
        return "gate: no thresholds given (--threshold CATEGORY=RATE, --default-threshold RATE)"
    if report.passed:
        return f"gate: PASSED — all {len(gated)} gated categories meet their thresholds"
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

    >>> from tinyeval.gate import gate
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


def describe_failure(row: Mapping[str, Any], *, width: int = 100) -> str:
    """Why a result row did not pass, in one line: the first failed check, the judge, or the error.

    >>> describe_failure({"status": "fail", "checks": {"valid_json": True, "equals:amount": False},
    ...                   "check_details": {"equals:amount": "got 1250, expected 125050"}})
    'equals:amount: got 1250, expected 125050'
    >>> describe_failure({"status": "error", "error": "TimeoutError: no reply", "checks": {}})
    'error: TimeoutError: no reply'
    """
    if row.get("status") == "error":
        text = f"error: {row.get('error')}"
    else:
        failed = [name for name, ok in (row.get("checks") or {}).items() if not ok]
        if failed:
            detail = (row.get("check_details") or {}).get(failed[0])
            text = f"{failed[0]}: {detail}" if detail else failed[0]
            if len(failed) > 1:
                text += f" (+{len(failed) - 1} more)"
        else:
            judge = next(
                (v for v in (row.get("judges") or {}).values() if v.get("verdict") != "PASS"), None
            )
            if judge is None:
                text = "not passed"
            elif judge.get("verdict") is None:
                text = f"judge {judge.get('name')}: no verdict ({judge.get('failure')})"
            else:
                text = f"judge {judge.get('name')}: {judge.get('reason') or judge.get('verdict')}"
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


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
    return lines


def summary_markdown(report: GateReport, *, title: str = "tinyeval") -> str:
    """The gate as a Markdown table, for a pull-request comment or a CI job summary.

    >>> from tinyeval.gate import gate
    >>> print(summary_markdown(gate({"amounts": {"passed": 17, "total": 20}}, {"amounts": 1.0})))
    ### tinyeval: gate FAILED
    <BLANKLINE>
    | category | pass rate [95% Wilson] | threshold | gate |
    | --- | --- | --- | --- |
    | amounts | 17/20 = 85.0% [64.0%, 94.8%] | 100.0% | **BLOCKS** (85.0% < 100.0%) |
    | *global* | 17/20 = 85.0% [64.0%, 94.8%] | — | shown, never gates |
    """
    outcome = "PASSED" if report.passed else "FAILED"
    conf = f"{report.confidence:.0%}"
    lines = [
        f"### {title}: gate {outcome}",
        "",
        f"| category | pass rate [{conf} Wilson] | threshold | gate |",
        "| --- | --- | --- | --- |",
    ]
    for v in report.categories:
        mark = _mark(v, report.on)
        if v.blocking:
            mark = mark.replace("BLOCKS", "**BLOCKS**", 1)
        rate = _rate_cell(v, report.confidence)
        lines.append(f"| {v.category} | {rate} | {_pct(v.threshold)} | {mark} |")
    overall = _rate_cell(report.overall, report.confidence)
    lines.append(f"| *global* | {overall} | — | shown, never gates |")
    return "\n".join(lines)


def junit_xml(rows: list[Mapping[str, Any]], report: GateReport) -> str:
    """JUnit XML: one test suite per category with a test case per case, plus the gate.

    CI systems that read JUnit (GitLab, Jenkins, GitHub actions with a reporter)
    then show each failed case with its reason, and each blocking category as a
    failed ``gate`` test. Errored cases are ``<error>``, failed ones ``<failure>``.

    >>> from tinyeval.gate import gate
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
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
