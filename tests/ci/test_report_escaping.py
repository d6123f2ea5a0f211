"""Every report writer returns writable text; JUnit stays valid XML 1.0 whatever the rows hold."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyeval.ci.github import junit_xml
from tinyeval.ci.html import html_report
from tinyeval.gating import gate
from tinyeval.report import describe_failure, failure_lines, summary_markdown, summary_text

HOSTILE = ["a\x00b", "bell\x07", "esc\x1b[31mred", "\x0b\x0c", "lone\ud800", "\udfffx", "\ufffe"]


def rows_with(text: str) -> list[dict[str, Any]]:
    return [
        {"id": f"id-{text}", "category": f"cat-{text}", "status": "pass"},
        {
            "id": f"f-{text}",
            "category": f"cat-{text}",
            "status": "fail",
            "checks": {f"contains:{text}": False},
            "check_details": {f"contains:{text}": f"missing {text}"},
            "output": text,
        },
        {"id": f"e-{text}", "category": "plain", "status": "error", "error": f"boom {text}"},
        {
            "id": f"j-{text}",
            "category": "plain",
            "status": "fail",
            "checks": {},
            "judges": {"j": {"name": "j", "verdict": "FAIL", "reason": f"said {text}"}},
        },
    ]


def all_writers(rows: list[dict[str, Any]]) -> dict[str, str]:
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        tally = counts.setdefault(row["category"], {"passed": 0, "total": 0})
        tally["total"] += 1
        tally["passed"] += row["status"] == "pass"
    report = gate(counts, dict.fromkeys(counts, 0.9))
    return {
        "text": summary_text(report),
        "markdown": summary_markdown(report),
        "junit": junit_xml(rows, report),
        "html": html_report(rows, report),
        "failures": "\n".join(failure_lines(rows, shown=5, where="rows.jsonl")),
        "describe": "\n".join(describe_failure(row) for row in rows),
    }


@pytest.mark.parametrize("text", HOSTILE)
def test_every_writer_returns_text_a_utf8_file_can_hold(text: str) -> None:
    for name, output in all_writers(rows_with(text)).items():
        try:
            output.encode("utf-8")
        except UnicodeEncodeError as exc:
            pytest.fail(f"the {name} writer returned text no file can hold: {exc}")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\x00b", "a\\x00b"),
        ("bell\x07", "bell\\x07"),
        ("esc\x1b[31mred", "esc\\x1b[31mred"),
        ("\x0b\x0c", "\\x0b\\x0c"),
        ("lone\ud800", "lone\\ud800"),
        ("\udfffx", "\\udfffx"),
        ("\ufffe", "\\ufffe"),
    ],
)
def test_junit_stays_valid_xml_and_shows_the_character_escaped(text: str, shown: str) -> None:
    xml = all_writers(rows_with(text))["junit"]
    root = ET.fromstring(xml.encode("utf-8"))  # a strict XML 1.0 parser
    names = [case.get("name") for case in root.iter("testcase")]
    assert f"id-{shown}" in names
    categories = {suite.get("name") for suite in root.iter("testsuite")}
    assert f"cat-{shown}" in categories


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(codec=None, categories=None), min_size=1, max_size=12))
def test_junit_is_valid_xml_for_any_text(text: str) -> None:
    writers = all_writers(rows_with(text))
    ET.fromstring(writers["junit"].encode("utf-8"))
    for output in writers.values():
        output.encode("utf-8")
