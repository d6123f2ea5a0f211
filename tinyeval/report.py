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

from .report_ci import append_step_summary, github_summary, junit_gate_xml, workflow_commands
from .report_html import html_report
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
]
