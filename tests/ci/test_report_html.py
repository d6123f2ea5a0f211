"""The single-file HTML report: structure, escaping, chart geometry, judge figures, failures."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyeval.ci.html import html_report
from tinyeval.gating import GateReport, gate
from tinyeval.records import read_rows
from tinyeval.runner import RunResult
from tinyeval.stats import format_rate

ROOT = Path(__file__).resolve().parents[2]
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "source", "area", "base"}
HOSTILE = '"&<>'


# --------------------------------------------------------------------------- a tiny DOM


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str, cls: str | None = None) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if child.tag == tag and (cls is None or cls in child.classes):
                    found.append(child)
                found.extend(child.find_all(tag, cls))
        return found

    def find(self, tag: str, cls: str | None = None) -> Node:
        found = self.find_all(tag, cls)
        assert found, f"no <{tag} class={cls}>"
        return found[0]


class TreeBuilder(HTMLParser):
    """Builds a tree and records every end tag that does not close the open element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if self.stack[-1].tag != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1].tag}>")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.problems == []
    assert [n.tag for n in builder.stack] == ["#document"], "elements left open"
    return builder.root


# --------------------------------------------------------------------------- fixtures


def row(case_id: str, category: str, status: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": case_id,
        "category": category,
        "origin": "ticket #1",
        "status": status,
        "output": "ok",
        "checks": {"valid_json": status == "pass"},
        "check_details": {},
        "judges": {},
        "error": None,
        "dataset_fingerprint": "5425c98b524d7634",
        "tinyeval_version": "0.1.0",
    }
    base.update(extra)
    return base


def report_for(rows: list[dict[str, Any]], thresholds: dict[str, Any], **kw: Any) -> GateReport:
    result = RunResult()
    for r in rows:
        result.add(r, keep=False)
    return gate(result.categories, thresholds, **kw)


def amounts_and_tone() -> list[dict[str, Any]]:
    """amounts 17/20 (threshold 1.0: blocks), tone 12/12 (threshold 0.9: ok)."""
    rows = [row(f"amt-{i:02}", "amounts", "pass" if i < 17 else "fail") for i in range(20)]
    rows += [row(f"tone-{i:02}", "tone", "pass") for i in range(12)]
    return rows


def chart_group(page: Node, category: str) -> Node:
    svg = page.find("svg", "chart")
    for g in svg.find_all("g"):
        title = g.find_all("title")
        if title and title[0].text().startswith(f"{category}: "):
            return g
    raise AssertionError(f"no chart row for {category!r}")


def wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """(p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n), the textbook form."""
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


# --------------------------------------------------------------------------- structure


def test_document_is_well_formed_and_self_contained() -> None:
    rows = amounts_and_tone()
    page = html_report(rows, report_for(rows, {"amounts": 1.0, "tone": 0.9}))
    assert page.startswith("<!DOCTYPE html>\n")
    tree = parse(page)
    html_el = tree.find("html")
    assert html_el.attrs["lang"] == "en"
    assert tree.find("title").text() == "tinyeval report: gate FAILED"
    # nothing from elsewhere: no script, stylesheet link, image, frame, or URL but the SVG namespace
    for tag in ("script", "link", "img", "iframe", "object", "embed"):
        assert tree.find_all(tag) == []
    assert "url(" not in page
    assert page.replace('xmlns="http://www.w3.org/2000/svg"', "").count("://") == 0
    # tables have header cells with a scope
    for table in tree.find_all("table"):
        headers = table.find_all("th")
        assert headers and all("scope" in th.attrs for th in headers)


def test_failure_table_lists_every_failed_row_grouped_by_category() -> None:
    rows = [row(f"a-{i:02}", "amounts", "pass" if i < 8 else "fail") for i in range(20)]
    rows.append(row("a-err", "amounts", "error", output=None, error="TimeoutError: no reply",
                    checks={}))  # fmt: skip
    rows += [row(f"t-{i}", "tone", "fail" if i == 0 else "pass") for i in range(4)]
    tree = parse(html_report(rows, report_for(rows, {"amounts": 0.9})))
    table = tree.find("table", "failures")
    cases = table.find_all("tr", "case")
    failed = [r for r in rows if r["status"] != "pass"]
    assert len(cases) == len(failed) == 12 + 1 + 1  # every one, not the first five
    groups = [g.text() for g in table.find_all("tr", "group")]
    assert groups == ["amounts: 13 of 21 did not pass", "tone: 1 of 4 did not pass"]
    first = cases[0].children
    assert [c.text() for c in first if isinstance(c, Node)][:3] == ["a-08", "ticket #1", "fail"]
    error_row = next(c for c in cases if c.find("th").text() == "a-err")
    assert "error" in error_row.classes
    assert error_row.find("td", "why").text() == "error: TimeoutError: no reply"
    assert error_row.find("td", "output").text() == "—"


def test_long_outputs_are_cut() -> None:
    rows = [row("x", "c", "fail", output="y" * 1000)]
    tree = parse(html_report(rows, report_for(rows, {})))
    shown = tree.find("td", "output").text()
    assert shown == "y" * 299 + "…"


def test_no_failures_says_so_and_has_no_table() -> None:
    rows = [row(f"t-{i}", "tone", "pass") for i in range(5)]
    tree = parse(html_report(rows, report_for(rows, {"tone": 0.8})))
    assert tree.find_all("table", "failures") == []
    assert "All 5 cases passed." in tree.text()
    assert tree.find("title").text() == "tinyeval report: gate PASSED"
    assert "passed" in tree.find("section", "verdict").classes


def test_no_thresholds_is_not_called_a_pass() -> None:
    rows = [row("t-1", "tone", "pass")]
    tree = parse(html_report(rows, report_for(rows, {})))
    assert tree.find("p", "outcome").text() == "Gate NOT GATED"
    assert "no thresholds given" in tree.find("section", "verdict").text()


# --------------------------------------------------------------------------- escaping


def test_hostile_text_is_escaped_everywhere() -> None:
    script = "<script>alert(1)</script>"
    rows = [
        row('<img src=x onerror="alert(2)">', HOSTILE, "fail", output=script,
            origin="</td><td>", checks={"equals:<b>": False},
            check_details={"equals:<b>": "got <i>1</i>"}),
        row("ok-1", HOSTILE, "pass"),
    ]  # fmt: skip
    page = html_report(
        rows,
        report_for(rows, {HOSTILE: 1.0}),
        title="<h1>t</h1>",
        run_info={"out": "<svg onload=alert(3)>", "notes": {"<k>": "<v>"}},
    )
    tree = parse(page)
    for tag in ("script", "img", "b", "i"):
        assert tree.find_all(tag) == [], tag
    assert [h.text() for h in tree.find_all("h1")] == ["<h1>t</h1>"]
    assert len(tree.find_all("svg")) == 1  # the chart, not the run_info value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # the decoded text is exactly what the rows held
    case = tree.find("table", "failures").find("tr", "case")
    cells = [c.text() for c in case.children if isinstance(c, Node)]
    assert cells == [
        '<img src=x onerror="alert(2)">', "</td><td>", "fail", "equals:<b>: got <i>1</i>", script,
    ]  # fmt: skip
    assert tree.find("tr", "group").text().startswith(f"{HOSTILE}: ")
    gate_rows = tree.find("table", "gate").find("tbody").find_all("th")
    assert [th.text() for th in gate_rows] == [HOSTILE]
    assert chart_group(tree, HOSTILE).find("text", "name").text() == HOSTILE
    assert "results file<svg onload=alert(3)>" in tree.find("header").find("dl", "facts").text()
    assert "<k><v>" in tree.find("details").text()  # a term and its value, not a "k=v" dump


@settings(max_examples=40, deadline=None)
@given(
    names=st.lists(
        st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    data=st.data(),
)
def test_any_category_name_round_trips_and_the_page_stays_well_formed(
    names: list[str], data: st.DataObject
) -> None:
    rows = []
    for name in names:
        total = data.draw(st.integers(1, 30))
        passed = data.draw(st.integers(0, total))
        rows += [row(f"{name}-{i}", name, "pass" if i < passed else "fail") for i in range(total)]
    tree = parse(html_report(rows, report_for(rows, dict.fromkeys(names, 0.5))))
    headers = tree.find("table", "gate").find("tbody").find_all("th")
    assert [th.text() for th in headers] == sorted(names)  # one stable order everywhere
    assert len(tree.find_all("tr", "case")) == sum(r["status"] != "pass" for r in rows)


# --------------------------------------------------------------------------- table and chart


def test_category_table_matches_the_text_summary() -> None:
    rows = amounts_and_tone()
    tree = parse(html_report(rows, report_for(rows, {"amounts": 1.0, "tone": 0.75})))
    table = tree.find("table", "gate")
    heads = [th.text() for th in table.find("thead").find_all("th")]
    assert heads == ["category", "pass rate [95% Wilson]", "unchecked", "threshold", "gate"]
    body = [[c.text() for c in tr.children if isinstance(c, Node)] for tr in table.find_all("tr")]
    assert body[1:] == [
        ["amounts", "17/20 = 85.0% [64.0%, 94.8%]", "0", "100.0%", "BLOCKS (85.0% < 100.0%)"],
        ["tone", "12/12 = 100.0% [75.8%, 100.0%]", "0", "75.0%", "ok"],
        ["global", "29/32 = 90.6% [75.8%, 96.8%]", "0", "—", "shown, never gates"],
    ]
    assert "blocking" in table.find_all("tr")[1].classes
    assert table.find("strong", "blocks").text() == "BLOCKS"


def test_a_17_of_20_bar_is_85_percent_of_the_scale_with_its_interval_and_tick() -> None:
    rows = amounts_and_tone()
    tree = parse(html_report(rows, report_for(rows, {"amounts": 1.0, "tone": 0.9})))
    g = chart_group(tree, "amounts")
    track, bar = g.find("rect", "track"), g.find("rect", "bar")
    x0, scale = float(track.attrs["x"]), float(track.attrs["width"])
    assert float(bar.attrs["x"]) == x0
    assert float(bar.attrs["width"]) == pytest.approx(17 / 20 * scale, abs=0.01)
    # 17/20: p̂ = 0.85, z²/2n = 0.0960, spread 0.1836, divisor 1.1921 → [0.6396, 0.9476]
    low, high = wilson_by_hand(17, 20)
    assert (round(low, 4), round(high, 4)) == (0.6396, 0.9476)
    interval = g.find("line", "interval")
    assert float(interval.attrs["x1"]) == pytest.approx(x0 + low * scale, abs=0.01)
    assert float(interval.attrs["x2"]) == pytest.approx(x0 + high * scale, abs=0.01)
    caps = sorted(float(c.attrs["x1"]) for c in g.find_all("line", "cap"))
    assert caps == pytest.approx([x0 + low * scale, x0 + high * scale], abs=0.01)
    tick = g.find("line", "threshold")
    assert float(tick.attrs["x1"]) == pytest.approx(x0 + 1.0 * scale)  # threshold 100%
    assert float(chart_group(tree, "tone").find("line", "threshold").attrs["x1"]) == (
        pytest.approx(x0 + 0.9 * scale)
    )


def test_blocking_is_said_in_words_not_only_colour() -> None:
    rows = [*amounts_and_tone(), row("free-1", "free", "pass")]
    # tone 12/12 = 100.0% [75.8%, 100.0%]: the whole interval clears 75%, so it is decided
    tree = parse(html_report(rows, report_for(rows, {"amounts": 1.0, "tone": 0.75})))
    amounts, tone, free = (chart_group(tree, c) for c in ("amounts", "tone", "free"))
    assert "blocking" in amounts.classes and tone.classes == ["ok"]
    assert amounts.find("tspan", "word").text() == "BLOCKS"
    assert tone.find("tspan", "word").text() == "ok"
    assert free.find("tspan", "word").text() == "no threshold"
    assert free.find_all("line", "threshold") == []
    svg = tree.find("svg", "chart")
    assert svg.attrs["role"] == "img"
    assert "Blocking categories: amounts." in svg.find("desc").text()
    overall = chart_group(tree, "global")
    assert overall.classes == ["global"]
    assert overall.find("tspan", "word").text() == "never gates"
    assert overall.find_all("line", "threshold") == []
    assert "blocking: amounts (1 of 2 gated)" in tree.find("section", "verdict").text()


def test_a_vanished_category_blocks_with_no_bar() -> None:
    rows = [row("t-1", "tone", "pass")]
    tree = parse(html_report(rows, report_for(rows, {"vanished": 0.9})))
    g = chart_group(tree, "vanished")
    assert g.find_all("rect", "bar") == [] and g.find_all("line", "interval") == []
    assert g.find("text", "mark").text() == "BLOCKS 0 cases"


def test_the_report_confidence_is_used_for_every_interval() -> None:
    rows = amounts_and_tone()
    tree = parse(html_report(rows, report_for(rows, {}, confidence=0.90)))
    table = tree.find("table", "gate")
    assert table.find("thead").find_all("th")[1].text() == "pass rate [90% Wilson]"
    # z = 1.6449 for 90%, z² = 2.7055: centre 0.85 + 2.7055/40 = 0.91764,
    # spread 1.6449·sqrt(0.006375 + 2.7055/1600) = 0.14773, divisor 1 + 2.7055/20 = 1.13528
    # → [0.76991/1.13528, 1.06537/1.13528] = [67.8%, 93.8%], narrower than 95%'s [64.0%, 94.8%]
    low, high = wilson_by_hand(17, 20, z=1.6448536269514722)
    expected = f"17/20 = 85.0% [{low:.1%}, {high:.1%}]"
    assert expected == "17/20 = 85.0% [67.8%, 93.8%]"
    assert table.find("tbody").find_all("td")[0].text() == expected


# --------------------------------------------------------------------------- header and judge


def verdict(name: str, value: str | None, failure: str | None = None, **extra: Any) -> dict:
    return {"name": name, "verdict": value, "parsed": value is not None, "failure": failure,
            "votes": [value], "unanimous": True, "reason": "r", "model": None,
            "rubric_fingerprint": "0123456789abcdef", **extra}  # fmt: skip


def test_judge_figures_overall_and_per_judge() -> None:
    rows = [
        row("s-1", "sup", "pass", judge_model="openai:m",
            judges={"claims": verdict("claims", "PASS"), "tone": verdict("tone", "PASS")}),
        row("s-2", "sup", "fail", judge_model="openai:m",
            judges={"claims": verdict("claims", "FAIL"),
                    "tone": verdict("tone", None, "unparsed")}),
        row("s-3", "sup", "error", judge_model="openai:m",
            judges={"claims": verdict("claims", None, "error")}),
        row("s-4", "sup", "fail", judge_model="openai:m",
            judges={"claims": verdict("claims", "FAIL", votes=["PASS", "FAIL", "FAIL"],
                                      unanimous=False, model="m-2025")}),
        row("a-1", "amounts", "pass"),
    ]  # fmt: skip
    tree = parse(html_report(rows, report_for(rows, {})))
    section = next(
        s for s in tree.find_all("section") if s.attrs.get("aria-labelledby") == "h-judges"
    )
    facts = section.find("dl", "facts").text()
    # 6 verdicts on 4 cases; 1 did not parse (the call error is counted apart)
    assert "verdicts6 on 4 cases" in facts
    assert f"did not parse{format_rate(1, 6)} (counted as not passed)" in facts
    assert "call errors1 (the case is an error row)" in facts
    by_judge = {
        tr.find("th").text(): [td.text() for td in tr.find_all("td")]
        for tr in section.find("table", "judges").find("tbody").find_all("tr")
    }
    # claims: 4 verdicts, 1 PASS, 0 unparsed, 1 call error, 1 split vote (2 of 3 FAIL)
    assert by_judge["claims"] == [
        "openai:m (reported: m-2025)", "0123456789ab", "4", format_rate(1, 4), format_rate(0, 4),
        "1", "1",
    ]  # fmt: skip
    assert by_judge["tone"] == [
        "openai:m", "0123456789ab", "2", format_rate(1, 2), format_rate(1, 2), "0", "0",
    ]  # fmt: skip
    header = tree.find("header").find("dl", "facts").text()
    assert "judge modelopenai:m" in header


def test_no_judge_section_is_empty_but_present() -> None:
    rows = amounts_and_tone()
    tree = parse(html_report(rows, report_for(rows, {})))
    assert tree.find_all("table", "judges") == []
    assert "No judge ran on these rows." in tree.text()
    assert "judge modelno judge" in tree.find("header").find("dl", "facts").text()


def test_header_names_every_dataset_and_the_run_info() -> None:
    rows = amounts_and_tone()
    rows[0] = dict(rows[0], dataset_fingerprint="ffff000011112222")
    run_info = {"cases_file": "cases.jsonl", "elapsed_s": 1.25, "stopped_reason": None,
                "dataset_fingerprint": "shown from the rows instead"}  # fmt: skip
    tree = parse(html_report(rows, report_for(rows, {}), run_info=run_info))
    header = tree.find("header")
    facts = header.find("dl", "facts").text()
    assert "cases32 result rows" in facts
    assert "5425c98b524d7634, ffff000011112222 — rows from more than one dataset" in facts
    assert "cases filecases.jsonl" in facts and "elapsed1.25 s" in facts
    assert header.find_all("details") == []  # nothing left that the facts do not say
    assert "stopped reason" not in header.text() and "shown from the rows" not in header.text()


def test_rows_and_gate_that_disagree_are_flagged() -> None:
    rows = amounts_and_tone()
    report = report_for(rows, {})
    facts = parse(html_report(rows[:5], report)).find("header").find("dl", "facts").text()
    assert "gate counts32 cases (not the rows listed here)" in facts


# --------------------------------------------------------------------------- the bundled example


def test_bundled_example_renders(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", "examples/cases.jsonl",
         "--criterion", "unsupported-claims", "--judge-category", "support_answers",
         "--out", str(out), "-q", "--no-cache"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = read_rows(out)
    report = report_for(rows, {"amount_extraction": 1.0}, default_threshold=0.8)
    tree = parse(html_report(rows, report, run_info={"cases_file": "examples/cases.jsonl"}))
    failed = [r for r in rows if r["status"] != "pass"]
    assert len(tree.find("table", "failures").find_all("tr", "case")) == len(failed) > 0
    groups = [r["category"] for r in rows]
    chart_names = [g.find("text", "name").text() for g in tree.find("svg").find_all("g")[1:]]
    assert chart_names == [*sorted(set(groups)), "global"]
    assert tree.find_all("table", "judges")  # support_answers was judged
    assert tree.find("p", "outcome").text() == "Gate FAILED"


# --------------------------------------------------------------------------- Markdown summary


def test_markdown_without_thresholds_says_not_gated() -> None:
    from tinyeval.report import summary_markdown

    ungated = summary_markdown(gate({"tone": {"passed": 1, "total": 2}}))
    assert ungated.splitlines()[0] == "### tinyeval: not gated (no thresholds)"
    assert "PASSED" not in ungated
    passed = summary_markdown(gate({"tone": {"passed": 2, "total": 2}}, {"tone": 0.5}))
    assert passed.splitlines()[0] == "### tinyeval: gate PASSED"


def test_markdown_escapes_category_names() -> None:
    from tinyeval.report import summary_markdown

    table = summary_markdown(gate({"a|b<i>": {"passed": 1, "total": 2}}, {"a|b<i>": 0.9}))
    row = table.splitlines()[4]
    assert row.startswith("| a\\|b&lt;i&gt; | 1/2 = 50.0% ")
    # Four cells: the unescaped pipes are exactly the five borders of the row.
    assert row.replace("\\|", "").count("|") == 5
    assert "<i>" not in table
    assert summary_markdown(gate({"R&D": {"passed": 1, "total": 1}})).count("| R&amp;D |") == 1


def test_counts_of_one_are_singular() -> None:
    rows = [{"id": "t-1", "category": "tone", "status": "pass"}]
    page = html_report(rows, gate({"tone": {"passed": 1, "total": 1}}, {"tone": 0.5}))
    assert "The 1 case passed." in page and "1 result row<" in page
    assert "the gated category meets its threshold" in page


# --------------------------------------------------------------------------- the gate's outcomes


def gate_row(tree: Node, category: str) -> Node:
    for tr in tree.find("table", "gate").find_all("tr"):
        if tr.find_all("th") and tr.find("th").text() == category:
            return tr
    raise AssertionError(f"no table row for {category!r}")


def test_an_inconclusive_category_says_so_and_how_many_more_cases() -> None:
    # 12/13 under 80%: the rate (92.3%) meets it, the Wilson interval [66.7%, 98.6%] does not
    rows = [row(f"t-{i:02}", "tone", "pass" if i < 12 else "fail") for i in range(13)]
    report = report_for(rows, {"tone": 0.8})
    (tone,) = report.categories
    assert tone.outcome == "inconclusive" and tone.more_cases_needed
    tree = parse(html_report(rows, report))
    need = f"about {tone.more_cases_needed} more cases needed"
    assert tree.find("p", "outcome").text() == "Gate PASSED"  # let through, by default
    undecided = tree.find("div", "undecided").text()
    assert f"tone: inconclusive — {need} (let through)" in undecided
    tr = gate_row(tree, "tone")
    assert tr.classes == ["inconclusive"]
    assert tr.find("strong", "inconclusive-word").text() == "inconclusive"
    g = chart_group(tree, "tone")
    assert g.classes == ["inconclusive"] and g.find("tspan", "word").text() == "inconclusive"
    assert "Inconclusive: tone." in tree.find("svg", "chart").find("desc").text()

    blocked = parse(html_report(rows, report_for(rows, {"tone": 0.8}, inconclusive="block")))
    assert blocked.find("p", "outcome").text() == "Gate FAILED"
    tr = gate_row(blocked, "tone")
    assert tr.classes == ["blocking", "inconclusive"]
    assert tr.find_all("td")[-1].text() == f"inconclusive — {need} (BLOCKS)"
    assert tr.find("strong", "blocks").text() == "BLOCKS"
    assert chart_group(blocked, "tone").find("tspan", "word").text() == "inconclusive, BLOCKS"


def test_unchecked_cases_have_their_column_their_bar_and_their_ids() -> None:
    rows = [row(f"r-{i}", "raw", "pass") for i in range(6)]
    rows += [row(f"r-u{i}", "raw", "unchecked", checks={}, judge_skipped=None) for i in range(2)]
    rows += [row(f"t-{i}", "tone", "pass") for i in range(4)]
    report = report_for(rows, {"raw": 0.5})
    tree = parse(html_report(rows, report))
    assert tree.find("p", "outcome").text() == "Gate FAILED"  # a gated category nothing checked
    cells = [td.text() for td in gate_row(tree, "raw").find_all("td")]
    assert cells[1] == "2" and cells[-1] == "BLOCKS (2 cases had nothing to check them)"
    assert [td.text() for td in gate_row(tree, "tone").find_all("td")][1] == "0"
    assert tree.find("tfoot").find_all("td")[1].text() == "2"
    line = tree.find("p", "unchecked").text()
    assert line.startswith("2 cases had nothing to check them") and "r-u0, r-u1" in line
    g = chart_group(tree, "raw")
    track, bar, unchecked = (
        g.find("rect", "track"),
        g.find("rect", "bar"),
        g.find("rect", "unchecked"),
    )
    x0, scale = float(track.attrs["x"]), float(track.attrs["width"])
    # 6 of 8 passed: the bar ends at 6/8 of the scale, and the 2 unchecked take the next 2/8
    assert float(unchecked.attrs["x"]) == pytest.approx(x0 + float(bar.attrs["width"]))
    assert float(unchecked.attrs["x"]) == pytest.approx(x0 + 6 / 8 * scale)
    assert float(unchecked.attrs["width"]) == pytest.approx(2 / 8 * scale)
    assert g.find("tspan", "count").text() == "· 2 unchecked"
    assert chart_group(tree, "tone").find_all("rect", "unchecked") == []
    case = next(tr for tr in tree.find_all("tr", "case") if tr.find("th").text() == "r-u0")
    assert "unchecked" in case.classes
    assert case.find("td", "why").text() == "unchecked: no check and no judge looked at it"


def test_an_incomplete_run_has_a_banner_naming_what_is_missing() -> None:
    from tinyeval.records import completeness

    manifest = {"cases": 5, "shard": None}
    rows = [row(f"a-{i}", "amounts", "pass", run=manifest) for i in range(3)]
    found = completeness(rows, expected_ids=[f"a-{i}" for i in range(5)])
    report = report_for(rows, {"amounts": 0.5}, completeness=found)
    tree = parse(html_report(rows, report, run_info={"stopped_reason": "interrupted (Ctrl-C)"}))
    assert tree.find("title").text() == "tinyeval report: gate INCOMPLETE"
    banner = tree.find("section", "verdict")
    assert "incomplete" in banner.classes
    assert banner.find("p", "outcome").text() == "Gate INCOMPLETE"
    assert banner.find("p", "missing").text() == "Missing: 3 of 5 cases (ids a-3, a-4)"
    assert "The run stopped early: interrupted (Ctrl-C)." in banner.text()
    assert "PASSED" not in banner.text()


# --------------------------------------------------------------------------- what was judged


def test_the_criterion_is_shown_in_words() -> None:
    from tinyeval.judge import CRITERIA

    rows = [
        row("s-1", "sup", "fail", judge_model="builtin",
            judges={"unsupported-claims": verdict("unsupported-claims", "FAIL",
                                                  criterion="unsupported-claims"),
                    "polite": verdict("polite", "PASS", criterion="Is <polite> & kind.")}),
        row("s-2", "sup", "pass", judge_model="builtin",
            judges={"mine": verdict("mine", "PASS", criterion="old words")}),
    ]  # fmt: skip
    page = html_report(rows, report_for(rows, {}), run_info={"criteria": {"mine": "new words"}})
    asked = parse(page).find("dl", "criteria")
    terms = [dt.text() for dt in asked.find_all("dt")]
    said = dict(zip(terms, [dd.text() for dd in asked.find_all("dd")], strict=True))
    assert said == {
        "unsupported-claims": CRITERIA["unsupported-claims"],  # a built-in name, resolved
        "polite": "Is <polite> & kind.",  # the text the row carried, escaped
        "mine": "new words",  # the run's own text wins over the rows'
    }
    assert "Is &lt;polite&gt; &amp; kind." in page


def test_one_model_is_listed_once() -> None:
    long_name = "SmolLM2-135M-Instruct"
    rows = [row("s-1", "sup", "fail", judge_model=f"openai:{long_name}",
                judges={"j": verdict("j", "FAIL", model=long_name)})]  # fmt: skip
    tree = parse(html_report(rows, report_for(rows, {})))
    assert tree.find("td", "model").text() == f"openai:{long_name}"
    rows[0]["judge_model"] = f"openai:HuggingFaceTB/{long_name}"
    tree = parse(html_report(rows, report_for(rows, {})))
    assert tree.find("td", "model").text() == f"openai:HuggingFaceTB/{long_name}"


# --------------------------------------------------------------------------- failed cases


def test_a_failed_case_shows_input_context_tool_calls_and_the_judge_reply_collapsed() -> None:
    babble = "Well, I think the response is kind of okay but maybe not. " * 5
    calls = [
        {"type": "function", "function": {"name": "transfer", "arguments": '{"payee": "Nacho"}'}},
        {"type": "tool_use", "name": "notify", "input": {}},
        "audit",
    ]
    rows = [
        row("c-1", "sup", "fail", input="¿puedo <mandar> 800 mil?", context="Límite: $ 500.000",
            tool_calls=calls, output="", judge_model="openai:m",
            checks={"tools_forbidden:transfer": False},
            check_details={"tools_forbidden:transfer": "called 1 time(s)"},
            judges={"claims": verdict("claims", None, "unparsed", raw=[babble, "  "])}),
        row("c-2", "sup", "fail", input=None, context=None, output="x"),
    ]  # fmt: skip
    tree = parse(html_report(rows, report_for(rows, {})))
    case, more = tree.find("tr", "case"), tree.find("tr", "more")
    assert case.find("td", "output").text() == "(empty output)"
    why = [li.text() for li in case.find("td", "why").find_all("li")]
    assert why[0] == "tools_forbidden:transfer: called 1 time(s)"
    assert why[1].startswith('judge claims: no verdict (unparsed): replied "Well, I think')
    details = more.find("details", "case")
    assert "open" not in details.attrs  # collapsed by default
    assert details.find("summary").text() == "details: input, context, tool calls, judge reply"
    terms = [dt.text() for dt in details.find_all("dt")]
    blocks = [dd for dd in details.find_all("dd")]
    shown = dict(zip(terms, blocks, strict=True))
    assert shown["input"].find("pre").text() == "¿puedo <mandar> 800 mil?"
    assert shown["context"].find("pre").text() == "Límite: $ 500.000"
    assert shown["tool calls"].find("pre").text() == (
        'transfer({"payee": "Nacho"})\nnotify()\naudit()'
    )
    replies = [pre.text() for pre in shown["judge claims"].find_all("pre")]
    assert replies == [babble]  # the whole reply, as received
    assert "reply 2 of 2 was empty" in shown["judge claims"].text()
    # a case with nothing more to show has no details row
    assert len(tree.find_all("tr", "more")) == 1


def test_every_failing_check_is_listed() -> None:
    checks = {f"field:f{i}": False for i in range(7)}
    details = {name: "not valid JSON: Expecting value: line 1 column 1 (char 0)" for name in checks}
    rows = [row("j-1", "json", "fail", checks=checks, check_details=details)]
    tree = parse(html_report(rows, report_for(rows, {})))
    why = [li.text() for li in tree.find("td", "why").find_all("li")]
    assert why == [f"{name}: {details[name]}" for name in checks]
    assert "more)" not in tree.find("td", "why").text()


# --------------------------------------------------------------------------- run details


def test_run_details_are_words_and_numbers_with_relative_paths(tmp_path: Path) -> None:
    from tinyeval import __version__

    rows = [row("a", "c", "pass", tinyeval_version=__version__, run={"cases": 1})]
    info = {
        "tinyeval_version": __version__, "cases_file": str(tmp_path / "cases.jsonl"),
        "cases": 1, "selected": 1, "rows": 1, "complete": True, "out": str(tmp_path / "r.jsonl"),
        "usage": {"input_tokens": 3181, "output_tokens": 200, "cached_input_tokens": 0},
        "cache": {"path": str(tmp_path / ".tinyeval" / "c.sqlite3"), "hits": 8, "misses": 6},
        "review_out": "/elsewhere/review.jsonl", "resumed_rows": 4, "elapsed_s": 17.2391,
        "calibrated": False,
    }  # fmt: skip
    tree = parse(html_report(rows, report_for(rows, {}), run_info=info, cwd=tmp_path))
    header = tree.find("header")
    terms, values = header.find_all("dt"), header.find_all("dd")
    facts = {dt.text(): dd.text() for dt, dd in zip(terms, values, strict=True)}
    assert facts["cases file"] == "cases.jsonl" and facts["results file"] == "r.jsonl"
    assert facts["usage"] == "3,181 in, 200 out"
    assert facts["cache"] == f"8 hits, 6 misses in {os.path.join('.tinyeval', 'c.sqlite3')}"
    assert facts["review out"] == "/elsewhere/review.jsonl"  # outside the working directory
    assert facts["calibrated"] == "no"
    assert facts["elapsed"] == "17.24 s in this session; 4 rows kept from an earlier run"
    text = header.text()
    for literal in ("True", "False", "None", "=", "path", "{", "'"):
        assert literal not in text, literal
    assert tree.text().count(__version__) == 1  # the version once, the cases count once
    assert text.count("1 result row") == 1 and "selected" not in text


def test_the_csp_and_no_script_stay() -> None:
    rows = amounts_and_tone()
    page = html_report(rows, report_for(rows, {"amounts": 1.0}))
    assert (
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">" in page
    )
    tree = parse(page)
    assert tree.find_all("script") == []

    def attributes(node: Node) -> list[str]:
        inner = [name for c in node.children if isinstance(c, Node) for name in attributes(c)]
        return [*node.attrs, *inner]

    assert [name for name in attributes(tree) if name.startswith("on")] == []


def test_a_conversation_is_shown_as_a_transcript_with_its_tool_calls() -> None:
    messages = [
        {"role": "user", "content": "Cancel <N3007>"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "lookup_order", "arguments": '{"order_id": "N3007"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "processing"}'},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Cancelling."},
            {"type": "tool_use", "id": "t2", "name": "cancel_order",
             "input": {"order_id": "N3007"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "done"}]},
    ]  # fmt: skip
    rows = [row("cx-07", "cancel", "fail", input=messages, output="N3007 is cancelled.")]
    tree = parse(html_report(rows, report_for(rows, {})))
    details = tree.find("details", "case")
    assert details.find("summary").text() == "details: conversation, tool calls"
    shown = dict(
        zip([dt.text() for dt in details.find_all("dt")],
            [dd.find("pre").text() for dd in details.find_all("dd")], strict=True)
    )  # fmt: skip
    assert shown["conversation"] == "\n".join([
        "user: Cancel <N3007>",
        'assistant: calls lookup_order({"order_id": "N3007"})',
        'tool (c1): {"status": "processing"}',
        "assistant: Cancelling.",
        '  calls cancel_order({"order_id": "N3007"})',
        "user: tool result (t2): done",
    ])  # fmt: skip
    assert shown["tool calls"] == (
        'lookup_order({"order_id": "N3007"})\ncancel_order({"order_id": "N3007"})'
    )
