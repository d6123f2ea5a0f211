"""The gate for CI: JUnit files, GitHub's job summary and annotations.

:func:`junit_report` and :func:`github_report` are the reports ``write_reports`` reaches
through ``_EXTRAS["report"]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..gating import CategoryVerdict, GateReport
from ..report import (
    _mark,
    _pct,
    _rate_cell,
    command_data,
    describe_failure,
    line_of,
    markdown_text,
    missing,
    summary_markdown,
    text_of,
)

__all__ = [
    "append_step_summary",
    "github_report",
    "github_summary",
    "junit_gate_xml",
    "junit_report",
    "junit_xml",
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


def _verdict_line(v: CategoryVerdict, report: GateReport) -> str:
    """``17/20 = 85.0% [64.0%, 94.8%], threshold 100.0%: BLOCKS (85.0% < 100.0%)``."""
    state = _gate_state(v)
    mark = "inconclusive" if state == "inconclusive" else _mark(v)
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


def junit_gate_xml(report: GateReport, rows: Iterable[Mapping[str, Any]]) -> str:
    """JUnit XML whose failures are exactly the gate's: red in CI only when a category blocks.

    Two test suites. ``tinyeval.gate`` has one test case per category: a
    ``<failure>`` when the category blocks, ``<skipped>`` when it has no
    threshold (it is shown, not gated), passed otherwise; plus a ``complete``
    test case with a ``<failure>`` naming what is missing when the results are incomplete.
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
            gate_suite, "testcase", classname="tinyeval.gate", name=line_of(v.category),
            time="0.000",
        )  # fmt: skip
        counts["tests"] += 1
        line = _verdict_line(v, report)
        state = _gate_state(v)
        if state == "block":
            counts["failures"] += 1
            members = failed.get(v.category, [])
            listed = [f"{line_of(r.get('id'))}: {describe_failure(r, width=300)}" for r in members]
            detail = [line, *listed]
            kind = "inconclusive" if v.outcome == "inconclusive" else "blocking"
            ET.SubElement(case, "failure", message=line, type=kind).text = "\n".join(detail)
        elif state == "ungated":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=f"not gated (no threshold): {line}")
        else:
            ET.SubElement(case, "system-out").text = line
    reason = missing(report)
    if reason:
        case = ET.SubElement(
            gate_suite, "testcase", classname="tinyeval.gate", name="complete", time="0.000"
        )
        counts["tests"] += 1
        counts["failures"] += 1
        reason = f"INCOMPLETE: {reason}; no gate is decided on missing cases"
        ET.SubElement(case, "failure", message=reason, type="incomplete").text = reason
    for key, value in counts.items():
        gate_suite.set(key, str(value))

    case_suite = ET.SubElement(root, "testsuite", name="tinyeval.cases")
    case_counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for row in rows:
        category = str(row.get("category", "default"))
        seconds = float(row.get("latency_ms") or 0.0) / 1000
        case = ET.SubElement(
            case_suite, "testcase", classname=f"tinyeval.cases.{line_of(category)}",
            name=line_of(row.get("id")), time=f"{seconds:.3f}",
        )  # fmt: skip
        case_counts["tests"] += 1
        status = row.get("status")
        if status == "pass":
            continue
        why = describe_failure(row, width=1000)
        if category in blocking:
            kind = "error" if status == "error" else "failure"
            case_counts["errors" if kind == "error" else "failures"] += 1
            ET.SubElement(case, kind, message=why, type=line_of(status)).text = why
        else:
            case_counts["skipped"] += 1
            message = (
                f"did not pass ({line_of(status)}), tolerated: category {line_of(category)} "
                "passes its gate"
            )
            ET.SubElement(case, "skipped", message=message, type=line_of(status)).text = why
    for key, value in case_counts.items():
        case_suite.set(key, str(value))
    for key in ("tests", "failures", "errors"):
        root.set(key, str(counts[key] + case_counts[key]))
    for element in root.iter():  # what XML 1.0 cannot carry (and bidi), shown as escapes
        if element.text:
            element.text = text_of(element.text)
        for name, text in element.attrib.items():
            element.set(name, text_of(text))
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def github_summary(
    report: GateReport,
    rows: Iterable[Mapping[str, Any]],
    *,
    title: str = "tinyeval",
    shown: int = 10,
) -> str:
    """The Markdown for a GitHub Actions job summary: the table, what blocks, and why.

    Under the gate's table: the blocking categories with their figures, the
    inconclusive ones, then the cases that did not pass (up to ``shown`` per
    category, smallest ids first) with the reason each failed; text from the
    rows made inert (:func:`tinyeval.report.markdown_text`).

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "amt-018", "category": "amounts", "status": "fail",
    ...          "checks": {"equals:amount_cents": False},
    ...          "check_details": {"equals:amount_cents": "got 1250, expected 125050"}}]
    >>> text = github_summary(gate({"amounts": {"passed": 0, "total": 1}}, {"amounts": 1.0}), rows)
    >>> print(text.split("\\n\\n", 2)[2])
    **Blocking:** amounts — 0/1 = 0.0% [0.0%, 79.3%], threshold 100.0%: BLOCKS (0.0% < 100.0%)
    <BLANKLINE>
    #### Cases that did not pass
    <BLANKLINE>
    | category | case | gate | why |
    | --- | --- | --- | --- |
    | amounts | amt-018 | blocks | equals:amount_cents: got 1250, expected 125050 |
    """
    lines = [summary_markdown(report, title=title), ""]
    for word, state in (("Blocking", "block"), ("Inconclusive", "inconclusive")):
        for v in report.categories:
            if _gate_state(v) == state:
                line = _verdict_line(v, report).replace("|", "\\|")
                lines += [f"**{word}:** {markdown_text(v.category)} — {line}", ""]
    failed = _failed_by_category(rows)
    if not failed:
        lines.append("Every case passed." if report.complete else "Every case with a row passed.")
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
                f"| {markdown_text(category)} | {markdown_text(row.get('id'))} | {counted} "
                f"| {markdown_text(why)} |"
            )
        if len(members) > shown:
            hidden.append(f"{len(members) - shown} more in {markdown_text(category)}")
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
    root: str | None = None,
) -> list[str]:
    """GitHub Actions ``::error`` / ``::warning`` lines for what blocks and what is undecided.

    One ``::error`` per blocking category and one ``::warning`` per
    inconclusive one that does not block, each pointing at the cases file and
    line of the category's first failing case (smallest id), so the
    annotation lands on it in the pull request. ``cases`` gives the places:
    the loaded cases (their ``source`` and ``line``) or a mapping ``id ->
    (file, line)``; without one, each row's own ``line`` in ``cases_file`` (or
    ``cases_file`` alone, for a row without a line). An incomplete
    run adds an ``::error`` of its own. Files are shown relative to ``root`` (the
    repository's, ``GITHUB_WORKSPACE``) when they are inside it, so that the annotations attach
    when the job runs in a subfolder. Messages and properties are escaped
    by GitHub's rules (:func:`tinyeval.report.command_data`).

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "amt-018", "category": "amounts", "status": "fail",
    ...          "checks": {"equals:amount_cents": False}}]
    >>> report = gate({"amounts": {"passed": 0, "total": 1}}, {"amounts": 1.0})
    >>> print(workflow_commands(report, rows, cases={"amt-018": ("cases.jsonl", 18)})[0])
    ::error file=cases.jsonl,line=18,title=tinyeval gate%3A amounts blocks::amounts: 0/1 = ...
    """
    rows = list(rows)
    places = _locations(cases)
    if not places and cases_file:
        places = {str(r["id"]): (cases_file, r["line"]) for r in rows
                  if isinstance(r.get("line"), int)}  # fmt: skip
    failed = _failed_by_category(rows)
    commands = []
    reason = missing(report)
    if reason:
        shown = _from_root(cases_file, root) if cases_file else ""
        props = f"file={command_data(shown, prop=True)}," if shown else ""
        title = command_data("tinyeval: gate INCOMPLETE", prop=True)
        said = f"{reason}; no gate is decided on missing cases"
        commands.append(f"::error {props}title={title}::{command_data(said)}")
    for v in report.categories:
        state = _gate_state(v)
        if state not in ("block", "inconclusive"):
            continue
        level = "error" if state == "block" else "warning"
        word = "blocks" if state == "block" else "is inconclusive"
        message = f"{line_of(v.category)}: {_verdict_line(v, report)}"
        members = failed.get(v.category) or []
        first = members[0] if members else None
        parts: list[str] = []
        file, line = cases_file, None
        if first is not None:
            why = describe_failure(first, width=300)
            message += f"; first failing case {line_of(first.get('id'))}: {why}"
            file, line = places.get(str(first.get("id")), (cases_file, None))
            file = file or cases_file
        if file:
            parts.append(f"file={command_data(_from_root(file, root), prop=True)}")
            if line:
                parts.append(f"line={int(line)}")
        title = command_data(f"tinyeval gate: {line_of(v.category)} {word}", prop=True)
        parts.append(f"title={title}")
        commands.append(f"::{level} {','.join(parts)}::{command_data(message)}")
    return commands


def _from_root(file: str, root: str | None) -> str:
    """``file`` relative to the repository's root ``root``, when it is inside it.

    >>> import os
    >>> _from_root("evals/cases.yaml", os.path.dirname(os.getcwd()))[-17:]
    '/evals/cases.yaml'
    """
    if root:
        try:
            relative = os.path.relpath(os.path.abspath(file), os.path.abspath(root))
        except ValueError:  # another drive, on Windows
            return file
        if relative != ".." and not relative.startswith(".." + os.sep):
            return Path(relative).as_posix()
    return file


def junit_xml(rows: list[Mapping[str, Any]], report: GateReport) -> str:
    """JUnit XML: one test suite per category with a test case per case, plus the gate.

    Errored cases are ``<error>``, failed ones ``<failure>``; each blocking category is a
    failed ``gate`` test.

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "a", "category": "c", "status": "pass", "latency_ms": 5.0},
    ...         {"id": "b", "category": "c", "status": "fail", "checks": {"valid_json": False}}]
    >>> xml = junit_xml(rows, gate({"c": {"passed": 1, "total": 2}}, {"c": 1.0}))
    >>> '<testcase classname="c" name="b" time="0.000"><failure message="valid_json"' in xml
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
            message = f"{_rate_cell(v, report.confidence)} {_mark(v)}"
            ET.SubElement(case, "failure", message=message).text = message
    if not report.complete:
        case = ET.SubElement(suite, "testcase", classname="gate", name="complete", time="0.000")
        message = f"INCOMPLETE: {missing(report)}"
        ET.SubElement(case, "failure", message=message).text = message
        suite.set("tests", str(len(gated) + 1))
        suite.set("failures", str(sum(1 for v in gated if v.blocking) + 1))
    for element in root.iter():
        element.text = text_of(element.text) if element.text else element.text
        for name, text in element.attrib.items():
            element.set(name, line_of(text))
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def junit_report(report: GateReport, rows: list[Mapping[str, Any]], *, run_info: Any = None) -> str:
    """The JUnit gate file's text (the ``junit`` report of ``write_reports``)."""
    return junit_gate_xml(report, rows) + "\n"


def github_report(
    report: GateReport,
    rows: list[Mapping[str, Any]],
    *,
    cases_file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[str | None, list[str]]:
    """Append the job summary (the file written, or None) and make the annotations (the
    ``github`` report of ``write_reports``)."""
    summary = append_step_summary(github_summary(report, rows), environ=environ)
    root = (os.environ if environ is None else environ).get("GITHUB_WORKSPACE")
    return summary, workflow_commands(report, rows, cases_file=cases_file, root=root)
