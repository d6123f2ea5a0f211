"""JUnit that matches the gate: red exactly when a category blocks, valid for Jenkins and GitLab."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from tinyeval.ci.github import junit_gate_xml, junit_xml
from tinyeval.ci.testing import SuiteRunner
from tinyeval.dataset import load
from tinyeval.gating import GateReport, gate
from tinyeval.records import Completeness
from tinyeval.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
SCENE = ROOT / "examples" / "pytest"
XSD = Path(__file__).resolve().parents[1] / "data" / "jenkins-xunit-junit-10.xsd"


def scene_rows() -> tuple[list[dict], GateReport]:
    runner = SuiteRunner(load_suite(SCENE / "tinyeval.toml"))
    rows = [runner.evaluate(case) for case in load(SCENE / "cases.jsonl")]
    return rows, runner.gate(rows)


def suites(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    return {s.get("name", ""): s for s in root.findall("testsuite")}


def outcome(case: ET.Element) -> str:
    for kind in ("failure", "error", "skipped"):
        if case.find(kind) is not None:
            return kind
    return "passed"


def test_only_the_blocking_category_fails_in_the_gate_suite() -> None:
    rows, report = scene_rows()
    gate_suite = suites(junit_gate_xml(report, rows))["tinyeval.gate"]
    results = {c.get("name"): outcome(c) for c in gate_suite.findall("testcase")}
    assert results == {"amount_extraction": "failure", "refusal": "passed", "tone": "passed"}
    assert (gate_suite.get("tests"), gate_suite.get("failures")) == ("3", "1")
    failure = gate_suite.find("testcase[@name='amount_extraction']/failure")
    assert failure is not None and "17/20" in (failure.get("message") or "")
    # the failure's text lists the failing cases with why
    assert "amt-005: equals:amount_cents: got 300, expected 300000" in (failure.text or "")


def test_failed_cases_of_a_passing_category_are_skipped_not_failed() -> None:
    rows, report = scene_rows()
    case_suite = suites(junit_gate_xml(report, rows))["tinyeval.cases"]
    results = {c.get("name"): outcome(c) for c in case_suite.findall("testcase")}
    assert len(results) == 72
    assert sorted(k for k, v in results.items() if v == "failure") == [
        "amt-005", "amt-011", "amt-018"
    ]  # fmt: skip
    assert sorted(k for k, v in results.items() if v == "skipped") == ["tone-017", "tone-033"]
    counts = {k: case_suite.get(k) for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "72", "failures": "3", "errors": "0", "skipped": "2"}
    skipped = case_suite.find("testcase[@name='tone-017']/skipped")
    assert skipped is not None and "tolerated" in (skipped.get("message") or "")
    assert "not_contains" in (skipped.text or "")


def test_a_passing_gate_has_no_failure_anywhere() -> None:
    rows, _ = scene_rows()
    report = gate(
        {"amount_extraction": {"passed": 17, "total": 20}, "tone": {"passed": 38, "total": 40},
         "refusal": {"passed": 12, "total": 12}},
        {"amount_extraction": 0.8, "tone": 0.85, "refusal": 1.0},
    )  # fmt: skip
    root = ET.fromstring(junit_gate_xml(report, rows))
    assert root.findall(".//failure") == [] and root.findall(".//error") == []
    assert (root.get("failures"), root.get("errors")) == ("0", "0")


def test_incomplete_results_add_an_error_testcase() -> None:
    rows, report = scene_rows()
    report = replace(report, completeness=Completeness(seen=50, expected=72))
    xml = junit_gate_xml(report, rows[:50])
    gate_suite = suites(xml)["tinyeval.gate"]
    complete = gate_suite.find("testcase[@name='complete']")
    assert complete is not None and outcome(complete) == "failure"
    assert "50 of 72 cases" in complete.find("failure").get("message")


def test_an_ungated_category_is_skipped_and_an_errored_case_is_an_error() -> None:
    rows = [
        {"id": "a", "category": "amounts", "status": "error", "error": "TimeoutError"},
        {"id": "n", "category": "notes", "status": "fail", "checks": {"x": False}},
    ]
    report = gate({"amounts": {"passed": 0, "total": 1}, "notes": {"passed": 0, "total": 1}},
                  {"amounts": 1.0})  # fmt: skip
    found = suites(junit_gate_xml(report, rows))
    gate_cases = {c.get("name"): outcome(c) for c in found["tinyeval.gate"].findall("testcase")}
    assert gate_cases == {"amounts": "failure", "notes": "skipped"}
    case_results = {c.get("name"): outcome(c) for c in found["tinyeval.cases"].findall("testcase")}
    assert case_results == {"a": "error", "n": "skipped"}


def test_an_inconclusive_verdict_from_the_gate_is_named(tmp_path: Path) -> None:
    # the gate may mark a category inconclusive (its interval straddles the threshold); when
    # it blocks on that, the failure says so
    report = gate({"tone": {"passed": 13, "total": 13}}, {"tone": 0.8}, inconclusive="block")
    assert report.categories[0].outcome == "inconclusive"
    failure = suites(junit_gate_xml(report, []))["tinyeval.gate"].find("testcase/failure")
    assert failure is not None and failure.get("type") == "inconclusive"


def test_the_xml_is_valid_against_the_jenkins_junit_schema() -> None:
    etree = pytest.importorskip("lxml.etree")
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    rows, report = scene_rows()
    for xml in (
        junit_gate_xml(report, rows),
        junit_gate_xml(replace(report, completeness=Completeness(10, 72)), rows[:10]),
        junit_xml(rows, report),  # the older writer too
    ):
        document = etree.fromstring(xml.encode("utf-8"))
        assert schema.validate(document), schema.error_log
    # and the schema does reject what it should: a testsuite without its required "tests"
    bad = etree.fromstring(b'<testsuites><testsuite name="x"/></testsuites>')
    assert not schema.validate(bad)


def test_control_characters_in_a_reason_keep_the_xml_well_formed() -> None:
    rows = [{"id": "x\x00", "category": "a", "status": "error", "error": "boom \x1b[31m\x07"}]
    report = gate({"a": {"passed": 0, "total": 1}}, {"a": 1.0})
    root = ET.fromstring(junit_gate_xml(report, rows))  # parses: no forbidden character left
    error = root.find(".//testcase[@classname='tinyeval.cases.a']/error")
    assert error is not None and "boom \\x1b[31m\\x07" in (error.get("message") or "")
