"""Tests for tinyeval.judges.graded and the Student t interval it and the retrieval report use.

t quantiles are checked against a published table (NIST/SEMATECH e-Handbook,
section 1.3.6.7.2, "Critical values of the Student's t distribution") and
against scipy when it is installed; quantiles against hand computation and
numpy; the bottom-10% list and the two-values warning on constructed data.
"""

from __future__ import annotations

import json
import math
import random

import pytest

from tinyeval.errors import InputError
from tinyeval.estimates.ppi import _t_quantile, mean_interval
from tinyeval.judges.graded import (
    TWO_VALUES_WARNING,
    HistogramBin,
    Quantiles,
    ScoredCase,
    graded_pass_fail,
    graded_summary,
)
from tinyeval.stats import StatisticsError, UndefinedStatisticError

# ------------------------------------------------------------------ the t interval


@pytest.mark.parametrize(
    ("probability", "df", "table"),
    [
        # NIST/SEMATECH table of upper critical values, to 3 decimals
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 4, 2.776),
        (0.975, 7, 2.365),
        (0.975, 10, 2.228),
        (0.95, 15, 1.753),
        (0.995, 30, 2.750),
        (0.975, 100, 1.984),
        (0.90, 60, 1.296),
    ],
)
def test_t_quantile_matches_the_published_table(probability: float, df: int, table: float) -> None:
    assert _t_quantile(probability, df) == pytest.approx(table, abs=5e-4)


def test_t_quantile_matches_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in [*range(1, 31), 45, 150, 199, 200, 201, 250, 1000, 10**5]:
        for probability in (0.8, 0.9, 0.95, 0.975, 0.995, 0.9995):
            expected = float(scipy_stats.t.ppf(probability, df))
            assert _t_quantile(probability, df) == pytest.approx(expected, rel=1e-7), (
                df,
                probability,
            )


def test_mean_interval_by_hand() -> None:
    # [0, 2]: mean 1, s = √2, se = s/√2 = 1, t(0.975, 1) = 12.706205 → 1 ± 12.706205
    low, high = mean_interval([0, 2])
    assert (low, high) == pytest.approx((1 - 12.706205, 1 + 12.706205), abs=1e-6)
    assert mean_interval([3.0, 3.0]) == (3.0, 3.0)  # no spread, no width
    with pytest.raises(UndefinedStatisticError):
        mean_interval([1.0])
    for bad in ([1.0, math.nan], [1.0, True], [1.0, "2"]):
        with pytest.raises(StatisticsError):
            mean_interval(bad)  # type: ignore[arg-type]
    with pytest.raises(StatisticsError):
        mean_interval([1, 2], confidence=1.0)


def test_mean_interval_matches_scipy_on_random_data() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for n in (2, 3, 8, 40, 300):
        values = [rng.random() for _ in range(n)]
        mean = sum(values) / n
        expected = scipy_stats.t.interval(0.9, n - 1, loc=mean, scale=scipy_stats.sem(values))
        assert mean_interval(values, 0.9) == pytest.approx(expected, rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------ the summary


def test_mean_interval_and_quantiles_by_hand() -> None:
    summary = graded_summary([("a", 4), ("b", 5), ("c", 3), ("d", 5), ("e", 4)], scale=(1, 5))
    # mean 21/5 = 4.2; squared deviations 0.04 + 0.64 + 1.44 + 0.64 + 0.04 = 2.8; s² = 0.7;
    # se = √(0.7/5) = 0.3741657; t(0.975, 4) = 2.776445 → 4.2 ± 1.0388506 = [3.1611494,
    # 5.2388506], clipped to the scale's top: 5.
    assert summary.mean == pytest.approx(4.2)
    assert summary.low == pytest.approx(3.1611494, abs=1e-6)
    assert summary.high == 5.0
    # sorted 3, 4, 4, 5, 5; type 7 at (n − 1)p: p10 → position 0.4 → 3 + 0.4 × (4 − 3) = 3.4;
    # median → position 2 → 4; p90 → position 3.6 → 5 + 0.6 × 0 = 5.
    assert summary.quantiles == pytest.approx(Quantiles(3, 3.4, 4, 5, 5))


def test_quantiles_of_one_to_ten() -> None:
    q = graded_summary([(i, i) for i in range(1, 11)]).quantiles
    # positions 0.9, 4.5, 8.1 among 1..10 → 1.9, 5.5, 9.1
    assert q == pytest.approx(Quantiles(1, 1.9, 5.5, 9.1, 10))


def test_quantiles_match_numpy() -> None:
    numpy = pytest.importorskip("numpy")
    rng = random.Random(11)
    for n in (1, 2, 7, 33, 101):
        values = [rng.random() for _ in range(n)]
        q = graded_summary([(i, v) for i, v in enumerate(values)]).quantiles
        expected = numpy.quantile(values, [0, 0.1, 0.5, 0.9, 1])
        assert list(q) == pytest.approx([float(x) for x in expected], abs=1e-12)


def test_histogram_on_a_one_to_five_scale_lists_every_grade() -> None:
    scores = {"a": 5, "b": 5, "c": 4, "d": 1, "e": 5}
    summary = graded_summary(scores, scale=(1, 5))
    assert [(b.label, b.count) for b in summary.histogram] == [
        ("1", 1), ("2", 0), ("3", 0), ("4", 1), ("5", 3)
    ]  # fmt: skip
    # without the scale only the values seen are listed
    assert [b.label for b in graded_summary(scores).histogram] == ["1", "4", "5"]


def test_histogram_bins_continuous_scores() -> None:
    values = [0.0, 0.05, 0.12, 0.33, 0.34, 0.5, 0.55, 0.71, 0.8, 0.85, 0.99, 1.0]  # 12 distinct
    summary = graded_summary([(f"q{i}", v) for i, v in enumerate(values)])
    assert len(summary.histogram) == 10
    counts = [b.count for b in summary.histogram]
    # [0, .1): 0, .05 · [.1, .2): .12 · [.3, .4): .33, .34 · [.5, .6): .5, .55 · [.7, .8): .71
    # · [.8, .9): .8, .85 · [.9, 1.0]: .99, 1.0 (the last bin is closed)
    assert counts == [2, 1, 0, 2, 0, 2, 0, 1, 2, 2]
    assert summary.histogram[-1] == HistogramBin(0.9, 1.0, 2, closed=True)
    assert summary.histogram[-1].label == "[0.9, 1]"
    assert summary.histogram[0].label == "[0, 0.1)"


def test_bottom_ten_percent_includes_ties_at_the_cut() -> None:
    # 20 scores: ⌈20/10⌉ = 2 → the cut is the 2nd lowest score, 2; all three 2s tie at it.
    scores = [("low", 1.0), ("t1", 2.0), ("t2", 2.0), ("t3", 2.0)]
    scores += [(f"ok{i}", 4.0 + (i % 2)) for i in range(16)]
    summary = graded_summary(scores, scale=(1, 5))
    assert summary.cut == 2.0
    assert summary.bottom == (
        ScoredCase("low", 1.0),
        ScoredCase("t1", 2.0),
        ScoredCase("t2", 2.0),
        ScoredCase("t3", 2.0),
    )


def test_a_cut_inside_a_large_tie_lists_the_tie_lowest_first() -> None:
    # 38 scores of 0.95 and two catastrophes: ⌈40/10⌉ = 4, the 4th lowest is 0.95, so every
    # 0.95 ties at the cut and all 40 are listed; the catastrophes come first, and the text
    # shows 20 and says how many more there are.
    many = [(f"c{i}", 0.95) for i in range(38)] + [("bad-1", 0.0), ("bad-2", 0.05)]
    summary = graded_summary(many)
    assert summary.mean > 0.9
    assert summary.cut == 0.95 and len(summary.bottom) == 40
    assert [case.id for case in summary.bottom[:3]] == ["bad-1", "bad-2", "c0"]
    assert "bad-1 0, bad-2 0.05, c0 0.95" in summary.to_text()
    assert "(and 20 more at 0.95)" in summary.to_text()


def test_bottom_list_with_the_cut_inside_a_tie() -> None:
    many = [(f"c{i}", 0.95) for i in range(36)] + [(f"bad-{i}", i / 100) for i in range(4)]
    summary = graded_summary(many)
    # ⌈40/10⌉ = 4: the 4th lowest is bad-3 (0.03), so exactly the four bad cases are listed
    assert summary.cut == 0.03
    assert [case.id for case in summary.bottom] == ["bad-0", "bad-1", "bad-2", "bad-3"]
    assert "bad-0 0, bad-1 0.01, bad-2 0.02, bad-3 0.03" in summary.to_text()


def test_bottom_of_a_small_set_is_its_lowest_score() -> None:
    summary = graded_summary({"a": 3, "b": 1, "c": 5, "d": 4, "e": 2})
    assert summary.bottom == (ScoredCase("b", 1.0),)  # ⌈5/10⌉ = 1


def test_two_values_warning_above_eighty_percent() -> None:
    # 40 scores: 20 fours and 14 fives = 34 (85%) on two values
    scores = [(f"a{i}", 4) for i in range(20)] + [(f"b{i}", 5) for i in range(14)]
    scores += [(f"c{i}", 1 + i % 3) for i in range(6)]
    summary = graded_summary(scores, scale=(1, 5))
    assert len(summary.warnings) == 1
    assert summary.warnings[0].startswith(TWO_VALUES_WARNING + " (4 and 5: 34 of 40)")


def test_no_warning_at_exactly_eighty_percent() -> None:
    # 32 of 40 (80%, not more) on 4 and 5; the other 8 spread over 1, 2, 3
    scores = [(f"a{i}", 4) for i in range(16)] + [(f"b{i}", 5) for i in range(16)]
    scores += [(f"c{i}", 1 + i % 3) for i in range(8)]
    assert graded_summary(scores, scale=(1, 5)).warnings == ()


def test_one_score_has_no_interval() -> None:
    summary = graded_summary([("only", 0.7)])
    assert (summary.n, summary.low, summary.high) == (1, None, None)
    assert "one score: the mean has no interval" in summary.warnings
    assert "no interval" in summary.to_text()


def test_to_dict_and_text() -> None:
    scores = [(f"a{i}", 4) for i in range(9)] + [("b", 1)]
    summary = graded_summary(scores, scale=(1, 5))
    data = summary.to_dict()
    json.dumps(data)
    assert set(data) == {
        "n", "mean", "low", "high", "confidence", "interval", "quantiles", "quantile_method",
        "histogram", "scale", "cut", "bottom", "warnings",
    }  # fmt: skip
    assert data["quantiles"]["median"] == 4.0
    assert data["bottom"] == [{"id": "b", "score": 1.0}]
    assert data["interval"] == "Student t interval (n - 1 degrees of freedom), clipped to the scale"
    text = summary.to_text()
    lines = text.splitlines()
    assert lines[0] == "graded scores: 10 cases, 1-5 scale"
    # the histogram and the mean share the first row; 9 of 10 on one value gives the longest bar
    assert lines[1].startswith("  1  ##") and "mean    3.70" in lines[1]
    assert "  4  " + "#" * 20 in text
    assert "bottom 10% (score <= 1): b 1" in text
    assert any(line.startswith("warning: " + TWO_VALUES_WARNING) for line in lines)


@pytest.mark.parametrize(
    ("scores", "options", "message"),
    [
        ([("a", 1), ("a", 2)], {}, "appears twice"),
        ([("a", "4")], {}, "a score must be a finite number"),
        ([("a", True)], {}, "a score must be a finite number"),
        ([("a", math.inf)], {}, "a score must be a finite number"),
        ([("", 1)], {}, "an id must be"),
        ([("a", 1, 2)], {}, r"expected an \(id, score\) pair"),
        ("abc", {}, "expected"),
        ([("a", 6)], {"scale": (1, 5)}, "outside the scale 1-5"),
        ([("a", 3)], {"scale": (5, 1)}, "lowest < highest"),
        ([("a", 3)], {"bins": 0}, "bins must be"),
    ],
)
def test_bad_scores_are_input_errors(
    scores: object, options: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        graded_summary(scores, **options)  # type: ignore[arg-type]


def test_no_scores_is_undefined() -> None:
    with pytest.raises(UndefinedStatisticError):
        graded_summary([])


# ------------------------------------------------------------------ PASS/FAIL by threshold


def test_pass_fail_at_an_explicit_threshold() -> None:
    result = graded_pass_fail([("a", 4), ("b", 3.99), ("c", 5), (7, 1)], 4, scale=(1, 5))
    assert [(v.id, v.verdict) for v in result.verdicts] == [
        ("a", "PASS"),  # equal to the threshold passes
        ("b", "FAIL"),
        ("c", "PASS"),
        (7, "FAIL"),
    ]
    assert (result.passed, result.n) == (2, 4)
    assert result.verdict_of("7") == "FAIL"
    data = result.to_dict()
    assert data["verdicts"] == {"a": "PASS", "b": "FAIL", "c": "PASS", "7": "FAIL"}
    assert data["text"] == "2/4 = 50.0% [15.0%, 85.0%]"
    assert result.to_text() == "score >= 4: 2/4 = 50.0% [15.0%, 85.0%] pass"
    with pytest.raises(InputError, match="no score for the id 'z'"):
        result.verdict_of("z")


@pytest.mark.parametrize(
    ("threshold", "scale", "message"),
    [
        (None, None, "a threshold must be a finite number"),
        ("4", None, "a threshold must be a finite number"),
        (math.nan, None, "a threshold must be a finite number"),
        (6, (1, 5), "outside the scale 1-5"),
    ],
)
def test_pass_fail_needs_a_real_threshold(
    threshold: object, scale: tuple[float, float] | None, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        graded_pass_fail([("a", 4)], threshold, scale=scale)  # type: ignore[arg-type]
