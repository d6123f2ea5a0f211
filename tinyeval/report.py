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

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .ci.github import append_step_summary, github_summary, junit_gate_xml, workflow_commands
from .ci.html import html_report
from .gating import GateReport
from .report_text import (
    describe_failure,
    failure_lines,
    junit_xml,
    summary_dict,
    summary_markdown,
    summary_text,
    usage_line,
)

__all__ = [
    "ReportsWritten",
    "append_step_summary",
    "describe_failure",
    "failure_lines",
    "github_summary",
    "html_report",
    "junit_gate_xml",
    "junit_xml",
    "summary_dict",
    "summary_markdown",
    "summary_text",
    "usage_line",
    "workflow_commands",
    "write_reports",
]


class ReportsWritten(NamedTuple):
    """What :func:`write_reports` did: the ``files`` it wrote, the job summary file it appended
    to (``step_summary``, None when there was none), and the GitHub workflow commands
    (``annotations``) for the caller to print on its standard output.

    >>> ReportsWritten(("gate.md",), None, ()).to_dict()
    {'files': ['gate.md'], 'step_summary': None, 'annotations': []}
    """

    files: tuple[str, ...]
    step_summary: str | None
    annotations: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The files, the job summary file and the annotations as a JSON object."""
        return {"files": list(self.files), "step_summary": self.step_summary,
                "annotations": list(self.annotations)}  # fmt: skip


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
    """Write the report files asked for, each all or nothing: ``junit`` (JUnit XML),
    ``markdown`` (the gate table) and ``html`` (the single-file page); and with ``github``
    (by default, when ``GITHUB_STEP_SUMMARY`` is set in ``environ``, the process environment
    unless given) append the job summary and make the annotations.

    ``rows`` are the result rows, or the path of a results file, read only when a report
    needs the rows; ``cases_file`` is where the annotations point when a row has no source.

    >>> import os, tempfile
    >>> from tinyeval.gating import gate
    >>> report = gate({"tone": {"passed": 2, "total": 3}}, thresholds={"tone": 0.9})
    >>> folder = tempfile.mkdtemp()
    >>> table = os.path.join(folder, "gate.md")
    >>> written = write_reports(report, [], markdown=table, environ={})
    >>> written.files == (table,), "BLOCKS" in open(table, encoding="utf-8").read()
    (True, True)
    """
    import os

    from .records import read_rows, write_text_atomically

    env = os.environ if environ is None else environ
    github = bool(env.get("GITHUB_STEP_SUMMARY")) if github is None else github
    every: list[Mapping[str, Any]] = []
    if junit or html or github:
        every = list(read_rows(rows) if isinstance(rows, str) else rows)
    if junit:
        write_text_atomically(junit, junit_gate_xml(report, every) + "\n")
    if markdown:
        write_text_atomically(markdown, summary_markdown(report) + "\n")
    if html:
        write_text_atomically(html, html_report(every, report, run_info=run_info))
    files = tuple(path for path in (junit, markdown, html) if path)
    if not github:
        return ReportsWritten(files, None, ())
    summary = append_step_summary(github_summary(report, every), environ=env)
    annotations = workflow_commands(report, every, cases_file=cases_file)
    return ReportsWritten(files, summary, tuple(annotations))
