"""User regexes are bounded: exponential shapes are refused, the rest run under a time budget."""

from __future__ import annotations

import re
import time

import pytest

from tinyeval.checks import CheckSpecError, checks_from_expect, matches, not_matches, run_checks

EXPONENTIAL = [
    r"^(a+)+$",
    r"(a*)*b",
    r"(a|a)*c",
    r"(ab|a.)*$",
    r"^(\w+\s?)*$",
    r"(x+x+)+y",
    r"([a-z]+)*=",
    r"(.+,)+x",
    r"((a+)+b)+",
]

SAFE = [
    r"\b\d{22}\b",
    r"(?i)refund",
    r"\s+$",
    r"^\w+@\w+\.com$",
    r"(\d+,)*\d+",
    r"[a-z]+(-[a-z]+)*",
    r"(\w+\s)*$",
    r"(a++)+$",
    r"(?>a+)+$",
    r"(foo|bar)*",
]


@pytest.mark.parametrize("pattern", EXPONENTIAL)
@pytest.mark.parametrize("key", ["regex", "not_regex"])
def test_exponential_shapes_are_refused_when_built(pattern: str, key: str) -> None:
    with pytest.raises(CheckSpecError) as caught:
        checks_from_expect({key: pattern})
    assert caught.value.field == f"expect.{key}"
    assert "exponential" in str(caught.value)
    assert "possessive" in str(caught.value)


@pytest.mark.parametrize("pattern", SAFE)
def test_common_safe_patterns_are_accepted_and_agree_with_re(pattern: str) -> None:
    check = matches(pattern)
    for text in ["", "a", "1,22,333", "foo-bar baz ", "x@y.com", "a" * 30, "Refund now"]:
        assert check(text).passed is (re.search(pattern, text) is not None), (pattern, text)


def test_the_reported_pattern_cannot_hang_the_run() -> None:
    # the pattern of the report: refused before any case runs
    started = time.monotonic()
    with pytest.raises(CheckSpecError, match="exponential"):
        checks_from_expect({"regex": r"^(a+)+$"})
    assert time.monotonic() - started < 5


def test_a_backtracking_pattern_that_passes_analysis_is_stopped_by_the_budget() -> None:
    # (a|aa)+ is ambiguous in a way the analysis does not claim to see; the budget stops it
    check = matches(r"^(a|aa)+$", timeout=0.5)
    outcome = check("a" * 60 + "b")
    assert outcome.passed is False
    assert outcome.detail is not None and "stopped" in outcome.detail
    # the worker was replaced: the next search on the same check works
    assert check("aaaa").passed is True


def test_a_stopped_not_regex_fails_rather_than_passes() -> None:
    outcome = not_matches(r"\s+$", timeout=0.2)(" " * 200_000 + "x")
    assert outcome.passed is False
    assert outcome.detail is not None and "200,001 characters" in outcome.detail


def test_bounded_search_reports_the_match_like_re() -> None:
    text = "total $1250.50 due"
    outcome = not_matches(r"\$\d+\.\d{2}")(text)
    assert outcome.detail == "matched '$1250.50' at character 6"
    assert run_checks("aaa", [matches(r"a+$")]) == {"regex:a+$": True}


def test_surrogates_and_non_ascii_survive_the_worker() -> None:
    assert matches(r"é+\ud800")("caféé\ud800").passed is True
    assert matches(r"中+$")("中中中").passed is True


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), "2", True])
def test_a_wrong_budget_is_refused(timeout: object) -> None:
    with pytest.raises(CheckSpecError, match="positive number of seconds"):
        matches("a+", timeout=timeout)  # type: ignore[arg-type]
