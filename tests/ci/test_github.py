"""GitHub Actions: the job summary is appended, annotations point at the failing case's line."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tinyeval.ci.github import (
    append_step_summary,
    github_summary,
    junit_gate_xml,
    workflow_commands,
)
from tinyeval.ci.testing import SuiteRunner
from tinyeval.dataset import load
from tinyeval.gating import gate
from tinyeval.records import Completeness
from tinyeval.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
SCENE = ROOT / "examples" / "pytest"
WORKFLOW = ROOT / "examples" / "github" / "tinyeval.yml"


@pytest.fixture(scope="module")
def scene() -> tuple[list, list[dict], object]:
    cases = load(SCENE / "cases.jsonl")
    runner = SuiteRunner(load_suite(SCENE / "tinyeval.toml"))
    rows = [runner.evaluate(case) for case in cases]
    return cases, rows, runner.gate(rows)


def line_of(path: Path, case_id: str) -> int:
    """The line of the case in the file, read here by hand."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if json.loads(text)["id"] == case_id:
            return number
    raise AssertionError(case_id)


def unescape_data(text: str) -> str:
    """What GitHub's runner makes of a command's message (its documented escapes)."""
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def test_two_successive_appends_leave_both_summaries(tmp_path: Path, monkeypatch, scene) -> None:
    _, rows, report = scene
    target = tmp_path / "step-summary.md"
    target.write_text("## an earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    first = github_summary(report, rows, title="first run")
    second = github_summary(report, rows, title="second run")
    assert append_step_summary(first) == str(target)
    assert append_step_summary(second) == str(target)
    text = target.read_text(encoding="utf-8")
    assert text.startswith("## an earlier step\n")
    assert text.count("### first run: gate FAILED") == 1
    assert text.count("### second run: gate FAILED") == 1
    assert text.index("first run") < text.index("second run")


def test_no_summary_file_outside_github(monkeypatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert append_step_summary("anything") is None
    assert append_step_summary("anything", environ={}) is None


def test_summary_names_blocking_category_and_failing_cases(scene) -> None:
    _, rows, report = scene
    text = github_summary(report, rows)
    assert "**Blocking:** amount_extraction — 17/20 = 85.0%" in text
    table = text[text.index("#### Cases that did not pass") :]
    expected = (
        "| amount_extraction | amt-005 | blocks | equals:amount_cents: got 300, expected 300000 |"
    )
    assert expected in table
    # the failures the gate tolerates are listed too, with their reason, and said to be tolerated
    assert table.count("| tone | tone-0") == 2 and table.count("| tolerated |") == 2


def test_summary_escapes_cells_and_limits_the_list() -> None:
    rows = [
        {"id": f"c{i}", "category": "x", "status": "fail", "checks": {"a|b<i>": False}}
        for i in range(4)
    ]
    text = github_summary(gate({"x": {"passed": 0, "total": 4}}, {"x": 1.0}), rows, shown=2)
    assert "a\\|b&lt;i&gt;" in text and "<i>" not in text
    assert "Not listed: 2 more in x" in text


def test_the_only_blocking_category_gives_exactly_one_failing_gate_testcase(scene) -> None:
    _, rows, report = scene
    root = ET.fromstring(junit_gate_xml(report, rows))
    gate_suite = root.find("testsuite[@name='tinyeval.gate']")
    assert gate_suite is not None
    failing = [
        c.get("name") for c in gate_suite.findall("testcase") if c.find("failure") is not None
    ]
    assert failing == ["amount_extraction"]


def test_an_error_annotation_points_at_the_first_failing_case(scene) -> None:
    cases, rows, report = scene
    commands = workflow_commands(report, rows, cases=cases)
    # one blocking category (an error) and tone, 38/40 [83.5%, 98.6%] over 85%, inconclusive
    assert [c.split(" ", 1)[0] for c in commands] == ["::error", "::warning"]
    assert "tone" in commands[1]
    match = re.fullmatch(r"::error (?P<props>[^:]*)::(?P<message>.*)", commands[0])
    assert match is not None, commands[0]
    props = dict(p.split("=", 1) for p in match["props"].split(","))
    assert Path(unescape_property(props["file"])).resolve() == (SCENE / "cases.jsonl").resolve()
    assert int(props["line"]) == line_of(SCENE / "cases.jsonl", "amt-005")
    assert unescape_property(props["title"]) == "tinyeval gate: amount_extraction blocks"
    message = unescape_data(match["message"])
    assert message.startswith("amount_extraction: 17/20 = 85.0% [64.0%, 94.8%]")
    assert "amt-005" in message


def test_commands_escape_what_github_reads_specially() -> None:
    rows = [{"id": "x1", "category": "a:b,c", "status": "error", "error": "50% done\r\nthen"}]
    report = gate({"a:b,c": {"passed": 0, "total": 1}}, {"a:b,c": 1.0})
    (command,) = workflow_commands(report, rows, cases={"x1": ("dir:1/cases,v2.jsonl", 7)})
    head, _, message = command.partition("::")[2].partition("::")
    assert "\n" not in command and "\r" not in command
    props = dict(p.split("=", 1) for p in head.split(" ", 1)[1].split(","))
    assert unescape_property(props["file"]) == "dir:1/cases,v2.jsonl" and props["line"] == "7"
    assert unescape_property(props["title"]) == "tinyeval gate: a:b,c blocks"
    assert "error: 50% done then" in unescape_data(message)  # the reason, on one line


def test_an_inconclusive_category_is_a_warning_and_incomplete_an_error() -> None:
    report = gate({"tone": {"passed": 13, "total": 13}}, {"tone": 0.8},  # 13/13 [77.2%, 100%]
                  completeness=Completeness(seen=13, expected=30))  # fmt: skip
    assert report.categories[0].outcome == "inconclusive"
    commands = workflow_commands(report, [], cases_file="cases.jsonl")
    assert [c.split(" ", 1)[0] for c in commands] == ["::error", "::warning"]
    assert "file=cases.jsonl" in commands[1] and "inconclusive" in commands[1]


def test_the_workflow_file_is_documented_and_appends() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert text.lstrip().startswith("#")
    assert "GITHUB_STEP_SUMMARY" in text or "--github" in text
    assert '> "$GITHUB_STEP_SUMMARY"' not in text  # never overwrite the summary


def test_the_workflow_file_is_valid_yaml() -> None:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["eval"]["steps"]
    run = next(step["run"] for step in steps if step.get("name") == "Evaluate")
    assert "--github" in run and "--junit" in run


def test_write_reports_writes_what_is_asked_and_reads_a_results_file_only_when_needed(
    tmp_path: Path,
) -> None:
    from tinyeval.report import write_reports

    rows = [{"id": i, "category": "tone", "status": s, "input": "x", "output": "y",
             "checks": {"contains:y": s == "pass"}}
            for i, s in (("a", "pass"), ("b", "fail"))]  # fmt: skip
    report = gate({"tone": {"passed": 1, "total": 2}}, thresholds={"tone": 1.0})
    table = tmp_path / "gate.md"
    # a Markdown table needs no rows: a results file that does not exist is never opened
    written = write_reports(report, str(tmp_path / "missing.jsonl"), markdown=str(table),
                            environ={})  # fmt: skip
    assert written.files == (str(table),) and written.step_summary is None
    assert written.annotations == () and "BLOCKS" in table.read_text(encoding="utf-8")
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    results = tmp_path / "rows.jsonl"
    results.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    written = write_reports(report, str(results), junit=str(junit),
                            environ={"GITHUB_STEP_SUMMARY": str(summary)})  # fmt: skip
    cases = {c.get("name") for c in ET.parse(junit).getroot().iter("testcase")}
    assert {"a", "b"} <= cases  # a test per case, read from the results file
    assert written.step_summary == str(summary) and "tone" in summary.read_text(encoding="utf-8")
    assert any(a.startswith("::error") and "tone" in a for a in written.annotations)


def test_write_reports_without_github_writes_no_summary_even_when_one_is_set(
    tmp_path: Path,
) -> None:
    from tinyeval.report import write_reports

    summary = tmp_path / "summary.md"
    report = gate({"tone": {"passed": 2, "total": 2}}, thresholds={"tone": 1.0})
    written = write_reports(report, [], github=False,
                            environ={"GITHUB_STEP_SUMMARY": str(summary)})  # fmt: skip
    assert written == ((), None, ()) and not summary.exists()
