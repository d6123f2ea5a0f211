"""The gate per category, the summary table, and paired run comparison."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyeval.errors import InputError
from tinyeval.gating import gate, parse_threshold
from tinyeval.records import CategoryTally
from tinyeval.report import RunSummary, summary_text

ROOT = Path(__file__).resolve().parent.parent


def wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """(p̂ + z²/2n ± z·sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n), the textbook form."""
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


class TestGate:
    def test_one_bad_category_blocks_whatever_the_global_rate(self) -> None:
        tallies = {
            "amount_extraction": {"passed": 17, "total": 20},
            "tone": {"passed": 200, "total": 200},
        }
        report = gate(tallies, {"amount_extraction": 1.0}, default_threshold=0.9)
        assert not report.passed
        assert [c.category for c in report.blocking] == ["amount_extraction"]
        assert report.overall.rate == pytest.approx(
            217 / 220
        )  # above every threshold, and irrelevant
        amount = report.categories[0]
        low, high = wilson_by_hand(17, 20)
        assert (amount.low, amount.high) == (pytest.approx(low), pytest.approx(high))

    def test_errors_and_unparsed_are_in_the_denominator(self) -> None:
        tally = CategoryTally()
        for row in (
            {"status": "pass", "judges": {}},
            {"status": "error", "judges": {}},
            {"status": "fail", "judges": {"j": {"verdict": None, "failure": "unparsed"}}},
        ):
            tally.add(row)
        report = gate({"c": tally}, {"c": 0.5})
        verdict = report.categories[0]
        assert (verdict.passed, verdict.total, verdict.errors, verdict.unparsed) == (1, 3, 1, 1)
        assert verdict.blocking  # 1/3 < 0.5

    def test_rate_equal_to_threshold_passes(self) -> None:
        assert gate({"c": {"passed": 9, "total": 10}}, {"c": 0.9}).passed

    def test_lower_bound_gating(self) -> None:
        # 20/20: Wilson lower bound = 20/(20 + z²) = 0.8389
        tallies = {"c": {"passed": 20, "total": 20}}
        assert gate(tallies, {"c": 0.83}, inconclusive="block").passed
        assert not gate(tallies, {"c": 0.84}, inconclusive="block").passed

    def test_categories_without_threshold_do_not_gate(self) -> None:
        report = gate({"c": {"passed": 0, "total": 10}})
        assert report.passed and report.categories[0].threshold is None

    def test_threshold_for_a_missing_category_blocks(self) -> None:
        report = gate({"c": {"passed": 10, "total": 10}}, {"safety": 0.99})
        missing = next(c for c in report.categories if c.category == "safety")
        assert missing.blocking and missing.total == 0 and missing.rate is None

    @pytest.mark.parametrize("bad", ["1.01", "-0.1", "abc", "nan", "101%"])
    def test_bad_thresholds(self, bad: str) -> None:
        with pytest.raises(InputError):
            parse_threshold(bad)

    def test_bad_inconclusive_policy(self) -> None:
        with pytest.raises(InputError):
            gate({}, inconclusive="mean")

    def test_threshold_parser_refuses_booleans_and_names_its_field(self) -> None:
        with pytest.raises(InputError, match=r"^tone: "):
            parse_threshold(True, field="tone")

    @given(
        st.dictionaries(
            st.sampled_from(["a", "b", "c", "d"]),
            st.tuples(st.integers(0, 50), st.integers(1, 50)),
            min_size=1,
        ),
        st.floats(0, 1),
    )
    def test_blocking_is_exactly_rate_below_threshold(self, counts: dict, threshold: float) -> None:
        tallies = {k: {"passed": min(p, n), "total": n} for k, (p, n) in counts.items()}
        report = gate(tallies, default_threshold=threshold)
        for verdict in report.categories:
            assert verdict.blocking == (verdict.passed / verdict.total < threshold)
        assert report.passed == all(v.passed / v.total >= threshold for v in report.categories)


class TestReport:
    def test_text_shows_denominator_interval_and_mark(self) -> None:
        report = gate({"amounts": {"passed": 17, "total": 20}}, {"amounts": 1})
        text = summary_text(report, judged=10, unparsed=2, errors=1)
        assert "17/20 = 85.0% [64.0%, 94.8%]" in text
        assert "BLOCKS (85.0% < 100.0%)" in text
        assert "did not parse: 2/10 = 20.0%" in text
        assert "cases that errored: 1" in text
        assert "gate: FAILED" in text

    def test_json_summary_keys(self) -> None:
        report = gate({"a": {"passed": 1, "total": 2}}, {"a": 0.4})
        data = RunSummary(report, info={"cases": 2}, judged=2, unparsed=0, errors=0).to_dict()
        assert data["cases"] == 2
        assert data["gate"]["categories"]["a"]["rate"] == 0.5
        assert data["judge"] == {"judged": 2, "unparsed": 0, "unparsed_rate": 0.0}
        json.dumps(data)  # JSON-ready
        data = RunSummary(report, judged=2, unparsed=1).to_dict()
        assert data["judge"]["unparsed_rate"] == 0.5 and data["gate"]["passed"]


def rows(statuses: str, category: str = "c") -> list[dict]:
    return [
        {
            "id": str(i),
            "category": category,
            "status": "pass" if s == "P" else "fail",
            "checks": {"contains:x": s == "P"},
        }
        for i, s in enumerate(statuses)
    ]


class TestReportFiles:
    def test_junit_and_markdown_from_a_run(self, tmp_path: Path) -> None:
        import xml.etree.ElementTree as ET

        cases = tmp_path / "cases.jsonl"
        cases.write_text(
            "".join(
                json.dumps({"id": f"c{i}", "category": "amounts", "output": str(i),
                            "expect": {"regex": "^[0-7]$"}})
                + "\n"
                for i in range(10)
            ),
            encoding="utf-8",
        )  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "tinyeval", "run", str(cases),
             "--out", str(tmp_path / "rows.jsonl"), "--threshold", "amounts=0.9",
             "--junit", str(tmp_path / "j.xml"),
             "--markdown", str(tmp_path / "m.md"), "-q"],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        root = ET.parse(tmp_path / "j.xml").getroot()
        suites = {s.get("name"): s for s in root.iter("testsuite")}
        cases_suite = suites["tinyeval.cases"]
        assert cases_suite.get("tests") == "10" and cases_suite.get("failures") == "2"
        failed = sorted(
            c.get("name") for c in cases_suite.iter("testcase") if c.find("failure") is not None
        )
        assert failed == ["c8", "c9"]  # the category blocks, so its failed cases are failures
        gate_case = suites["tinyeval.gate"].find("testcase")
        assert gate_case is not None and gate_case.find("failure") is not None
        markdown = (tmp_path / "m.md").read_text(encoding="utf-8")
        assert "| amounts | 8/10 = 80.0% [49.0%, 94.3%] | 90.0% | **BLOCKS**" in markdown


class TestHoldout:
    def test_dev_rate_above_the_holdout_interval_is_flagged(self) -> None:
        from tinyeval.dataset import in_holdout
        from tinyeval.gating import compare_holdout

        # every development case passes; of the held-out ones, only every other one
        ids = [f"t{i}" for i in range(80)]
        held = [i for i in ids if in_holdout(i, 0.25)]
        statuses = {i: "pass" if i not in held or held.index(i) % 2 else "fail" for i in ids}
        found = [{"id": i, "category": "tone", "status": s} for i, s in statuses.items()]
        tone, overall = compare_holdout(found, 0.25)
        k, n = sum(statuses[i] == "pass" for i in held), len(held)
        assert (tone.dev_passed, tone.dev_total) == (80 - n, 80 - n)
        assert (tone.holdout_passed, tone.holdout_total) == (k, n)
        assert tone.holdout_high == pytest.approx(wilson_by_hand(k, n)[1])
        assert tone.suspicious and overall.category == "global" and overall.suspicious

    def test_similar_rates_are_not_flagged(self) -> None:
        from tinyeval.gating import compare_holdout

        found = rows("PPPPPPPPF" * 20, "c")
        assert not any(c.suspicious for c in compare_holdout(found, 0.25))

    def test_gate_holdout_uses_the_split_of_tinyeval_split(self, tmp_path: Path) -> None:
        from tinyeval.dataset import Case, split_holdout

        ids = [f"case-{i}" for i in range(200)]
        results = tmp_path / "rows.jsonl"
        results.write_text(
            "".join(
                json.dumps(
                    {"id": i, "category": "c", "status": "pass", "checks": {"contains:x": True}}
                )
                + "\n"
                for i in ids
            )
        )
        done = subprocess.run(
            [sys.executable, "-m", "tinyeval", "gate", str(results), "--holdout", "0.25", "--json"],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        held = json.loads(done.stdout)["holdout"]["c"]
        _, expected = split_holdout([Case(id=i) for i in ids], 0.25)
        assert held["holdout_total"] == len(expected)
        assert held["dev_total"] == 200 - len(expected)


def test_gate_refuses_a_failed_row_stripped_of_its_evidence_and_marked_pass(
    tmp_path: Path,
) -> None:
    cases, results = tmp_path / "cases.jsonl", tmp_path / "rows.jsonl"
    cases.write_text(
        "".join(json.dumps({"id": f"c{i}", "category": "c", "output": out,
                            "expect": {"contains": "ok"}}) + "\n"
                for i, out in enumerate(["ok", "wrong"])),
        encoding="utf-8",
    )  # fmt: skip
    tinyeval = [sys.executable, "-m", "tinyeval"]
    ran = subprocess.run([*tinyeval, "run", str(cases), "--out", str(results), "-q"],
                         cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [row["status"] for row in lines] == ["pass", "fail"]
    del lines[1]["checks"], lines[1]["run"]
    lines[1]["status"] = "pass"
    results.write_text("".join(json.dumps(row) + "\n" for row in lines), encoding="utf-8")
    done = subprocess.run([*tinyeval, "gate", str(results), "--threshold", "c=1"],
                          cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{results}:2: status: the row says 'pass'" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_report_renders_and_exits_0_where_gate_exits_1(tmp_path: Path) -> None:
    results = tmp_path / "rows.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows("PPF", "amounts")))
    base = [sys.executable, "-m", "tinyeval"]
    common = [str(results), "--threshold", "amounts=1", "--html", str(tmp_path / "r.html")]
    gated = subprocess.run([*base, "gate", *common], cwd=ROOT, capture_output=True, text=True)
    shown = subprocess.run([*base, "report", *common], cwd=ROOT, capture_output=True, text=True)
    assert (gated.returncode, shown.returncode) == (1, 0)
    assert gated.stdout == shown.stdout and "BLOCKS" in shown.stdout
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


class TestNoCommandOverwritesItsInput:
    """Every command that writes a file refuses to write it over one it reads."""

    def test_each_writing_option(self, tmp_path: Path) -> None:
        results = tmp_path / "rows.jsonl"
        results.write_text("".join(json.dumps(r) + "\n" for r in rows("PF", "c")))
        labels = tmp_path / "labels.jsonl"
        labels.write_text(json.dumps({"id": "0", "label": "PASS"}) + "\n")
        before = (results.read_text(), labels.read_text())
        r, lab = str(results), str(labels)
        for argv in (
            ["gate", r, "--junit", r], ["report", r, "--html", r], ["gate", r, "--markdown", r],
            ["merge", r, "--out", r], ["pairwise", r, r, "--criterion", "x", "--out", r],
            ["label", r, "--out", r], ["calibrate", r, lab, "--save", lab],
            ["calibrate", r, lab, "--disagreements", r], ["calibrate", r, r],
        ):  # fmt: skip
            done = subprocess.run([sys.executable, "-m", "tinyeval", *argv], cwd=ROOT,
                                  capture_output=True, text=True)  # fmt: skip
            assert done.returncode == 2, (argv, done.stdout, done.stderr)
            assert "same file" in done.stderr or "is the input file" in done.stderr, argv
        assert (results.read_text(), labels.read_text()) == before

    def test_gate_refuses_a_misspelt_threshold_category(self, tmp_path: Path) -> None:
        results = tmp_path / "rows.jsonl"
        results.write_text("".join(json.dumps(r) + "\n" for r in rows("PF", "amounts")))
        done = subprocess.run(
            [sys.executable, "-m", "tinyeval", "gate", str(results), "--threshold", "amount=1"],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 2 and "did you mean 'amounts'?" in done.stderr
