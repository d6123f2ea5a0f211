"""The checks and parsers of a run's settings, and a suite file filling them in (session.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tinyeval.cli._common import StatusLine
from tinyeval.errors import InputError, key_values
from tinyeval.session import RunSettings, parse_shard
from tinyeval.suite import JudgeSpec, Suite, with_suite


@pytest.mark.parametrize(
    ("given", "field", "reason"),
    [
        ({"max_errors": -1}, "max_errors", "must be 0 or more, got -1"),
        ({"fail_fast": -2}, "fail_fast", "must be 0 or more, got -2"),
        ({"show_failures": -1}, "show_failures", "must be 0 or more, got -1"),
        ({"concurrency": 0}, "concurrency", "must be 1 or more, got 0"),
        ({"sample": 0}, "sample", "must be 1 or more, got 0"),
    ],
)
def test_numbers_out_of_range_are_refused_with_their_setting(
    given: dict, field: str, reason: str
) -> None:
    with pytest.raises(InputError) as caught:
        RunSettings(cases="c.jsonl", **given).refuse_out_of_range()
    assert (caught.value.field, caught.value.reason) == (field, reason)


def test_the_lowest_values_allowed_pass() -> None:
    lowest = RunSettings(cases="c", max_errors=0, fail_fast=0, show_failures=0, concurrency=1,
                         sample=1)  # fmt: skip
    assert lowest.refuse_out_of_range() is None  # raises InputError for any one below


def test_rejudging_takes_no_generate_model() -> None:
    with pytest.raises(InputError) as caught:
        RunSettings(cases="c", rejudge="rows.jsonl", generate_model="builtin").refuse_out_of_range()
    assert caught.value.field == "rejudge" and "(generate_model)" in caught.value.reason


def test_unused_names_each_setting_without_its_partner_in_field_order() -> None:
    settings = RunSettings(cases="c", judge_model="openai:m", votes=3, prompt_template="t.txt",
                           trials=2, max_cost=1.0)  # fmt: skip
    assert settings.unused() == [
        ("judge_model", ("criterion", "rubric")),
        ("votes", ("criterion", "rubric")),
        ("trials", ("generate_model",)),
        ("max_cost", ("price",)),
        ("prompt_template", ("generate_model",)),
    ]


def test_a_partner_from_anywhere_gives_a_setting_its_effect() -> None:
    assert RunSettings(cases="c").unused() == []  # every setting at its default
    assert RunSettings(cases="c", votes=3, criterion=["Is polite."]).unused() == []
    assert RunSettings(cases="c", votes=3, rubric=["r.txt"]).unused() == []
    suite_judge = JudgeSpec(criterion="Is polite.")
    assert RunSettings(cases="c", judge_model="builtin", judges=[suite_judge]).unused() == []
    assert RunSettings(cases="c", trials=3, generate_model="builtin").unused() == []


def test_thresholds_are_parsed_by_category() -> None:
    def parse_thresholds(items: list[str]) -> dict[str, str]:  # as the command line reads them
        return key_values(items, "CATEGORY=RATE", field="thresholds")

    assert parse_thresholds([]) == {}
    assert parse_thresholds([" tone = 90% ", "amounts=1"]) == {"tone": "90%", "amounts": "1"}
    for bad in ("tone", "=0.9"):
        with pytest.raises(InputError) as caught:
            parse_thresholds([bad])
        assert caught.value.field == "thresholds" and "CATEGORY=RATE" in caught.value.reason


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "2/"])
def test_a_shard_outside_one_to_n_is_refused(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_shard(text)
    assert caught.value.field == "shard" and repr(text) in caught.value.reason


def test_a_shard_is_one_based() -> None:
    assert [parse_shard(t) for t in ("1/1", "1/3", "3/3")] == [(1, 1), (1, 3), (3, 3)]


SUITE_SETTINGS = {"fields": {"input": "q"}, "thresholds": {"tone": 0.9, "amounts": 1.0},
                  "concurrency": 8, "out": "suite.jsonl", "junit": "suite.xml"}  # fmt: skip


class TestWithSuite:
    suite = Suite(path="tinyeval.toml", cases=("cases.jsonl",), settings=SUITE_SETTINGS,
                  judges=(JudgeSpec(criterion="Is polite."),))  # fmt: skip

    def test_what_the_options_leave_out_comes_from_the_suite(self) -> None:
        options, overridden = with_suite({"concurrency": 4, "out": "tinyeval-results.jsonl"},
                                         self.suite)  # fmt: skip
        assert options["cases"] == "cases.jsonl" and options["fields"] == {"input": "q"}
        assert options["thresholds"] == {"tone": "0.9", "amounts": "1.0"}
        assert (options["concurrency"], options["out"], options["junit"]) == (
            8, "suite.jsonl", "suite.xml")  # fmt: skip
        assert [j.criterion for j in options["judges"]] == ["Is polite."]
        assert overridden == []

    def test_options_given_win_key_by_key_and_are_said(self) -> None:
        given = {"cases": "other.jsonl", "fields": {"output": "a"}, "thresholds": {"tone": "0.5"},
                 "concurrency": 2, "junit": "mine.xml", "criterion": ["Is short."]}  # fmt: skip
        options, overridden = with_suite(given, self.suite)
        assert options["cases"] == "other.jsonl"
        assert options["fields"] == {"input": "q", "output": "a"}
        assert options["thresholds"] == {"tone": "0.5", "amounts": "1.0"}
        assert (options["concurrency"], options["junit"]) == (2, "mine.xml")
        assert "judges" not in options  # a criterion given: the suite's judges are not used
        # fields and thresholds are said key by key: the suite has no "output" field
        assert overridden == ["cases", "thresholds.tone", "concurrency", "junit"]

    def test_an_option_given_as_the_suite_has_it_overrides_nothing(self) -> None:
        _, overridden = with_suite({"cases": "cases.jsonl", "concurrency": 8}, self.suite)
        assert overridden == []

    def test_a_suite_without_cases_needs_them_from_the_options(self) -> None:
        with pytest.raises(InputError) as caught:
            with_suite({}, Suite(path="tinyeval.toml"))
        assert (caught.value.path, caught.value.field) == ("tinyeval.toml", "cases")
        options, _ = with_suite({"cases": "given.jsonl"}, Suite(path="tinyeval.toml"))
        assert options["cases"] == "given.jsonl"

    def test_the_gate_handling_given_wins_over_the_suite_and_is_said(self) -> None:
        suite = Suite(cases=("c.jsonl",), settings={"inconclusive": "block"})
        assert with_suite({}, suite)[0]["inconclusive"] == "block"
        options, overridden = with_suite({"inconclusive": "pass"}, suite)
        assert (options["inconclusive"], overridden) == ("pass", ["inconclusive"])


def test_progress_counts_rows_and_says_the_time_left() -> None:
    progress = StatusLine(4, io.StringIO())
    for status in ("pass", "fail", "error"):
        progress.update({"status": status})
    assert (progress.done, progress.failed, progress.errors) == (3, 1, 1)
    # 3 rows in 6 s: 0.5 cases/s, so the 1 left takes 2 s
    assert progress.line(progress.started + 6.0) == (
        "3/4 · 0.5 cases/s · ETA 2s · 1 failed · 1 errors"
    )
    assert StatusLine(2, io.StringIO()).line().startswith("0/2 · 0.0 cases/s · ETA ? ·")


@pytest.mark.parametrize(
    ("given", "field", "reason"),
    [
        ({"concurrency": 10**8}, "concurrency", "must be at most 1,024, got 100,000,000"),
        ({"votes": 10_000_001}, "votes", "must be at most 101, got 10,000,001"),
        ({"trials": 10**8}, "trials", "must be at most 1,000, got 100,000,000"),
        ({"max_tokens": 10**9}, "max_tokens", "must be at most 1,000,000, got 1,000,000,000"),
        ({"timeout": 1e9}, "timeout", "must be at most 86,400, got 1e+09"),
        ({"case_timeout": float("inf")}, "case_timeout", "expected a finite number, got inf"),
        ({"concurrency": 10**5000}, "concurrency", "must be at most 1,024, got a number of more"),
        ({"out": "rows\x00.jsonl"}, "out", "a NUL character (\\x00) in the value"),
        ({"rubric": ["r\x00.txt"]}, "rubric", "a NUL character (\\x00) in the value"),
    ],
)
def test_settings_past_their_bounds_or_holding_nul_are_refused_by_the_session(
    given: dict, field: str, reason: str
) -> None:
    from tinyeval.session import Session

    with pytest.raises(InputError) as caught:
        Session(RunSettings(cases="c.jsonl", **given))
    assert caught.value.field == field and caught.value.reason.startswith(reason)


def test_every_bound_is_declared_once_and_the_suite_file_uses_it(tmp_path: Path) -> None:
    from dataclasses import fields

    from tinyeval.suite import load_suite

    bounded = {f.name: f.metadata["most"] for f in fields(RunSettings) if "most" in f.metadata}
    assert {"concurrency", "votes", "trials", "max_tokens", "timeout"} <= set(bounded)
    suite = tmp_path / "tinyeval.toml"
    suite.write_text('cases = "c.jsonl"\n[models.generate]\nspec = "x"\nmax_tokens = 1000001\n')
    with pytest.raises(InputError, match=f"must be at most {bounded['max_tokens']:,}, got"):
        load_suite(suite)
