"""Tests for tinyeval.stats and the ``tinyeval stats`` command.

Expected values come from published tables or are worked by hand in the test,
with the arithmetic in a comment. z = 1.959964 (the 97.5% normal quantile,
z² = 3.841459) and z₀.₈₀ = 0.841621 throughout.
"""

from __future__ import annotations

import ast
import json
import math
import random
import sys
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tinyeval.stats as stats_module
from tinyeval.cli import main
from tinyeval.stats import (
    Interval,
    StatisticsError,
    UndefinedStatisticError,
    cases_to_decide,
    cohen_kappa,
    detectable_difference,
    format_rate,
    mcnemar,
    power,
    sample_size,
    spearman,
    wilson_interval,
)

# ------------------------------------------------------------------ module shape


def test_stats_imports_only_the_standard_library() -> None:
    tree = ast.parse(Path(stats_module.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            # only the optional error root (test_package checks the file works alone)
            assert node.module == "errors", "stats must not import the rest of the package"
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_error_classes_are_value_errors() -> None:
    assert issubclass(StatisticsError, ValueError)
    assert issubclass(UndefinedStatisticError, StatisticsError)


# ------------------------------------------------------------------ Wilson interval


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # Newcombe (1998), Stat Med 17:857-872, Table I, method 3 (score, no
        # continuity correction), four decimals as published.
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_newcombe_table_one(successes: int, n: int, low: float, high: float) -> None:
    interval = wilson_interval(successes, n)
    assert round(interval.low, 4) == low
    assert round(interval.high, 4) == high


def test_wilson_27_of_30_by_hand() -> None:
    # (2k + z² ± z·sqrt(z² + 4k(n−k)/n)) / (2(n + z²)) with k = 27, n = 30:
    # 4·27·3/30 = 10.8; sqrt(3.841459 + 10.8) = 3.826416; × z = 7.499637
    # denominator 2·33.841459 = 67.682918
    # low  = (54 + 3.841459 − 7.499637) / 67.682918 = 0.743789
    # high = (54 + 3.841459 + 7.499637) / 67.682918 = 0.965400
    low, high = wilson_interval(27, 30)
    assert low == pytest.approx(0.743789, abs=1e-6)
    assert high == pytest.approx(0.965400, abs=1e-6)


def test_wilson_180_of_200_matches_the_issue_figures() -> None:
    low, high = wilson_interval(180, 200)
    assert (round(low * 100, 1), round(high * 100, 1)) == (85.1, 93.4)


def test_wilson_is_a_named_tuple() -> None:
    interval = wilson_interval(3, 4)
    assert isinstance(interval, tuple) and isinstance(interval, Interval)
    assert interval == (interval.low, interval.high)


def test_wilson_is_exact_at_the_edges() -> None:
    assert wilson_interval(0, 20).low == 0.0
    assert wilson_interval(20, 20).high == 1.0


def test_wider_confidence_gives_a_wider_interval() -> None:
    narrow, wide = wilson_interval(17, 20, 0.80), wilson_interval(17, 20, 0.99)
    assert wide.low < narrow.low and narrow.high < wide.high


@st.composite
def counts(draw: st.DrawFn, max_n: int = 10_000) -> tuple[int, int]:
    n = draw(st.integers(1, max_n))
    return draw(st.integers(0, n)), n


@given(counts(), st.floats(0.5, 0.999))
def test_wilson_contains_the_observed_rate(pair: tuple[int, int], confidence: float) -> None:
    k, n = pair
    low, high = wilson_interval(k, n, confidence)
    assert 0.0 <= low <= k / n <= high <= 1.0


@given(counts(max_n=2_000), st.integers(2, 50))
def test_wilson_narrows_as_n_grows_for_the_same_rate(pair: tuple[int, int], factor: int) -> None:
    k, n = pair
    small, large = wilson_interval(k, n), wilson_interval(k * factor, n * factor)
    assert large.high - large.low < small.high - small.low


@given(counts())
def test_wilson_is_symmetric_in_passes_and_failures(pair: tuple[int, int]) -> None:
    k, n = pair
    assert wilson_interval(k, n).low == pytest.approx(
        1.0 - wilson_interval(n - k, n).high, abs=1e-12
    )


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((31, 30), "between 0 and n = 30, got 31"),
        ((-1, 30), "must not be negative"),
        ((2.5, 30), "whole number"),
        ((27, 30.0), "whole number"),
        ((True, 30), "whole number"),
        (("27", 30), "whole number"),
        ((27, 30, 0.0), "confidence"),
        ((27, 30, 1.0), "confidence"),
        ((27, 30, 95), "confidence"),
        ((27, 30, math.nan), "confidence"),
        ((27, 30, "0.95"), "confidence"),
    ],
)
def test_wilson_rejects_bad_input(args: tuple, match: str) -> None:
    with pytest.raises(StatisticsError, match=match):
        wilson_interval(*args)


def test_wilson_on_no_cases_is_undefined() -> None:
    with pytest.raises(UndefinedStatisticError, match="n = 0"):
        wilson_interval(0, 0)


# ------------------------------------------------------------------ format_rate


def test_format_rate_17_of_20_by_hand() -> None:
    # 4·17·3/20 = 10.2; sqrt(3.841459 + 10.2) = 3.747193; × z = 7.344364
    # low  = (34 + 3.841459 − 7.344364) / 47.682918 = 0.639581 → 64.0%
    # high = (34 + 3.841459 + 7.344364) / 47.682918 = 0.947631 → 94.8%
    assert format_rate(17, 20) == "17/20 = 85.0% [64.0%, 94.8%]"


def test_format_rate_without_cases() -> None:
    assert format_rate(0, 0) == "0/0 = n/a"


def test_format_rate_at_the_edges() -> None:
    # k = 0: high = (z² + z·z) / (2(n + z²)) = z² / (n + z²) = 3.841459 / 8.841459 = 0.4345
    assert format_rate(0, 5) == "0/5 = 0.0% [0.0%, 43.4%]"
    assert format_rate(5, 5) == "5/5 = 100.0% [56.6%, 100.0%]"


@pytest.mark.parametrize("args", [(1, 0), (21, 20), (-1, 20), (1.5, 20)])
def test_format_rate_rejects_bad_counts(args: tuple) -> None:
    with pytest.raises(StatisticsError):
        format_rate(*args)


# ------------------------------------------------------------------ planning


def test_sample_size_reference_values_by_hand() -> None:
    # 0.90 → 0.85: p̄ = 0.875, sqrt(2·0.875·0.125) = 0.467707,
    # sqrt(0.9·0.1 + 0.85·0.15) = sqrt(0.2175) = 0.466369
    # (1.959964·0.467707 + 0.841621·0.466369)² / 0.05² = 1.309195² / 0.0025 = 685.60 → 686
    assert sample_size(0.90, 0.85) == 686
    # 0.90 → 0.80: p̄ = 0.85, sqrt(0.255) = 0.504975, sqrt(0.09 + 0.16) = 0.5
    # (0.989733 + 0.420811)² / 0.01 = 1.410544² / 0.01 = 198.96 → 199
    assert sample_size(0.90, 0.80) == 199


def test_sample_size_is_symmetric_in_direction_and_complement() -> None:
    # The formula depends on p1, p2 only through p̄(1−p̄), p(1−p) and |p1 − p2|.
    assert sample_size(0.80, 0.90) == sample_size(0.10, 0.20) == sample_size(0.90, 0.80)


def test_sample_size_with_continuity_correction_by_hand() -> None:
    # Fleiss, Tytun & Ury (1980): n' = n/4·(1 + sqrt(1 + 4/(n·d)))², n = 198.9634, d = 0.1
    # 4/19.89634 = 0.201042; sqrt(1.201042) = 1.095921; 2.095921² = 4.392883
    # 198.9634/4 · 4.392883 = 218.506 → 219
    assert sample_size(0.90, 0.80, continuity=True) == 219


@given(st.floats(0.02, 0.98), st.floats(0.02, 0.98))
def test_continuity_correction_adds_about_two_over_d(p1: float, p2: float) -> None:
    # With e = 4/(n·d): n' = n/4·(1 + sqrt(1 + e))² = n/2 + 1/d + (n/2)·sqrt(1 + e),
    # and 1 + e/2 − e²/8 ≤ sqrt(1 + e) ≤ 1 + e/2 gives
    # n + 2/d − 1/(n·d²) ≤ n' ≤ n + 2/d (unrounded); rounding both up adds ±1.
    d = abs(p1 - p2)
    assume(d > 0.01)
    plain, corrected = sample_size(p1, p2), sample_size(p1, p2, continuity=True)
    assume(plain >= 2)  # the unrounded n is then at least plain − 1 > 0
    assert 2 / d - 1 / ((plain - 1) * d * d) - 1 < corrected - plain < 2 / d + 1


def test_power_by_hand_at_200_cases() -> None:
    # z = (0.05·sqrt(200) − 1.959964·0.467707) / 0.466369
    #   = (0.707107 − 0.916689) / 0.466369 = −0.449392
    phi = NormalDist().cdf(-0.449392)  # Φ(−0.4494) ≈ 0.3266
    assert power(0.90, 0.85, 200) == pytest.approx(phi, abs=1e-6)


def test_power_is_consistent_with_sample_size_for_the_reference_case() -> None:
    assert power(0.90, 0.85, 686) >= 0.80
    assert power(0.90, 0.85, 685) < 0.80


plans = st.tuples(
    st.floats(0.02, 0.98),
    st.floats(0.02, 0.98),
    st.sampled_from([0.01, 0.05, 0.10]),
    st.sampled_from([0.5, 0.8, 0.9, 0.95]),
    st.booleans(),
)


@given(plans)
def test_sample_size_reaches_the_power_and_one_less_does_not(plan: tuple) -> None:
    baseline, target, alpha, goal, continuity = plan
    assume(abs(baseline - target) > 0.01)
    n = sample_size(baseline, target, alpha=alpha, power=goal, continuity=continuity)
    assert power(baseline, target, n, alpha=alpha, continuity=continuity) >= goal - 1e-9
    if n > 1:
        assert power(baseline, target, n - 1, alpha=alpha, continuity=continuity) < goal


@given(st.floats(0.02, 0.98), st.floats(0.02, 0.98), st.integers(1, 5_000), st.integers(1, 5_000))
def test_power_increases_with_n(baseline: float, target: float, n1: int, n2: int) -> None:
    assume(baseline != target)
    low_n, high_n = sorted((n1, n2))
    assert power(baseline, target, low_n) <= power(baseline, target, high_n)


def test_detectable_difference_with_40_cases_is_a_catastrophe() -> None:
    drop = detectable_difference(0.90, 40)
    assert 0.25 < drop < 0.27  # 90% → about 64%: only a collapse shows up
    # at the answer the plan's power is reached, just short of it is not
    assert power(0.90, 0.90 - drop, 40) >= 0.80
    assert power(0.90, 0.90 - drop * (1 - 1e-9), 40) < 0.80


def test_detectable_difference_inverts_sample_size() -> None:
    # 686 cases detect 90% → 85% (power 0.8002), so a slightly smaller drop too
    drop = detectable_difference(0.90, 686)
    assert 0.049 < drop < 0.05
    assert sample_size(0.90, 0.90 - drop) == 686


@given(st.floats(0.05, 0.99), st.integers(20, 100_000), st.sampled_from([0.5, 0.8, 0.9]))
def test_detectable_difference_is_the_smallest_detected_drop(
    baseline: float, n: int, goal: float
) -> None:
    try:
        drop = detectable_difference(baseline, n, power=goal)
    except UndefinedStatisticError:
        assert power(baseline, baseline * 1e-9, n) < goal
        return
    assert 0 < drop < baseline
    assert power(baseline, baseline - drop, n) >= goal
    assert power(baseline, baseline - drop * (1 - 1e-6), n) < goal


def test_detectable_difference_with_too_few_cases_is_undefined() -> None:
    with pytest.raises(UndefinedStatisticError, match="with 2 cases per run"):
        detectable_difference(0.90, 2)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sample_size(0.0, 0.5), "baseline"),
        (lambda: sample_size(1.0, 0.5), "baseline"),
        (lambda: sample_size(0.9, 1.2), "target"),
        (lambda: sample_size(math.nan, 0.5), "baseline"),
        (lambda: sample_size(0.9, 0.9), "must differ"),
        (lambda: sample_size(0.9, 0.8, alpha=0), "alpha"),
        (lambda: sample_size(0.9, 0.8, alpha=1.5), "alpha"),
        (lambda: sample_size(0.9, 0.8, power=1.0), "power"),
        (lambda: sample_size(0.9, 0.8, power=0.3), "at least 0.5"),
        (lambda: sample_size("0.9", 0.8), "baseline"),
        (lambda: power(0.9, 0.8, 0), "at least 1"),
        (lambda: power(0.9, 0.8, 10.5), "whole number"),
        (lambda: power(0.9, 0.8, -3), "negative"),
        (lambda: power(0.9, 0.9, 10), "must differ"),
        (lambda: detectable_difference(0.9, 0), "at least 1"),
        (lambda: detectable_difference(1.0, 10), "baseline"),
        (lambda: detectable_difference(0.9, 10, power=0.2), "at least 0.5"),
    ],
)
def test_planning_rejects_bad_input(call: object, match: str) -> None:
    with pytest.raises(StatisticsError, match=match):
        call()  # type: ignore[operator]


# ------------------------------------------------------------------ McNemar


def exact_mcnemar(b: int, c: int) -> Fraction:
    """min(1, 2·Σ_{i ≤ min(b, c)} C(b + c, i) / 2^(b + c)), in exact integers."""
    m, k = b + c, min(b, c)
    term = total = math.comb(m, k)
    for i in range(k, 0, -1):  # C(m, i−1) = C(m, i)·i / (m − i + 1), exactly
        term = term * i // (m - i + 1)
        total += term
    return min(Fraction(1), Fraction(2 * total, 2**m))


def test_mcnemar_12_3_by_hand() -> None:
    # X ~ Binomial(15, 1/2): P(X ≤ 3) = (1 + 15 + 105 + 455) / 2^15 = 576 / 32768
    # p = 2 · 576 / 32768 = 1152 / 32768 = 0.03515625 (a dyadic fraction: exact in floats)
    assert mcnemar(12, 3) == 0.03515625


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),  # nothing changed: no evidence
        (5, 5, 1.0),  # 2·P(X ≤ 5) for Binomial(10, 1/2) exceeds 1
        (1, 0, 1.0),  # 2·P(X = 0) = 2 · 1/2
        (6, 0, 2 / 64),  # 2 · (1/2)^6
        (0, 6, 2 / 64),
        (9, 1, 2 * (1 + 10) / 1024),  # 2·(C(10,0) + C(10,1)) / 2^10 = 22/1024
    ],
)
def test_mcnemar_small_cases_by_hand(b: int, c: int, expected: float) -> None:
    assert mcnemar(b, c) == expected


def test_mcnemar_is_exact_for_ten_thousand_changed_cases() -> None:
    assert mcnemar(5100, 4900) == pytest.approx(float(exact_mcnemar(5100, 4900)), rel=1e-15)
    assert 0.04 < mcnemar(5100, 4900) < 0.05


@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemar_matches_the_exact_binomial_sum(b: int, c: int) -> None:
    assert mcnemar(b, c) == pytest.approx(float(exact_mcnemar(b, c)), rel=1e-15)


@pytest.mark.parametrize(("b", "c"), [(12, 3), (30, 10), (99, 1), (5100, 4900), (25_100, 24_850)])
def test_mcnemar_saddle_point_agrees_with_the_exact_sum(
    b: int, c: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact = mcnemar(b, c)
    monkeypatch.setattr(stats_module, "_EXACT_COMB_LIMIT", 0)
    assert mcnemar(b, c) == pytest.approx(exact, rel=1e-12)


def test_mcnemar_handles_millions_of_changed_cases() -> None:
    p = mcnemar(500_500, 499_500)  # a 1000-case imbalance out of a million: z ≈ 1.0
    assert 0.31 < p < 0.33
    assert mcnemar(1_000_000, 0) == 0.0  # 2^-999999 underflows, and no NaN
    assert mcnemar(500_000, 500_000) == 1.0


@given(st.integers(0, 2_000), st.integers(0, 2_000))
def test_mcnemar_is_symmetric_and_a_probability(b: int, c: int) -> None:
    p = mcnemar(b, c)
    assert p == mcnemar(c, b)
    assert 0.0 <= p <= 1.0


@given(st.integers(0, 500), st.integers(0, 500))
def test_mcnemar_falls_as_the_split_gets_more_lopsided(b: int, c: int) -> None:
    assume(b >= c)
    assert mcnemar(b + 1, c) <= mcnemar(b, c)


@pytest.mark.parametrize(("b", "c"), [(-1, 3), (3, -1), (1.5, 2), (True, 2), ("3", 2)])
def test_mcnemar_rejects_bad_counts(b: object, c: object) -> None:
    with pytest.raises(StatisticsError):
        mcnemar(b, c)  # type: ignore[arg-type]


# ------------------------------------------------------------------ Cohen's kappa


def expand(table: dict[tuple[str, str], int]) -> tuple[list[str], list[str]]:
    """Two label lists from a contingency table {(rater A, rater B): count}."""
    a: list[str] = []
    b: list[str] = []
    for (x, y), count in table.items():
        a += [x] * count
        b += [y] * count
    return a, b


def test_kappa_two_by_two_by_hand() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15
    # p_o = (20 + 15)/50 = 0.70; A says yes 25/50, B says yes 30/50
    # p_e = 0.5·0.6 + 0.5·0.4 = 0.50; κ = (0.70 − 0.50)/(1 − 0.50) = 0.40
    a, b = expand({("yes", "yes"): 20, ("yes", "no"): 5, ("no", "yes"): 10, ("no", "no"): 15})
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-15)


def test_kappa_three_by_three_by_hand() -> None:
    # rows A, columns B:   A    B   tie | total
    #                 A   25    3    2  |  30
    #                 B    4   30    6  |  40
    #               tie    1    5   24  |  30
    #             total   30   38   32  | 100
    # p_o = (25 + 30 + 24)/100 = 0.79
    # p_e = (30·30 + 40·38 + 30·32)/100² = (900 + 1520 + 960)/10000 = 0.338
    # κ = (0.79 − 0.338)/(1 − 0.338) = 0.452/0.662 = 226/331
    table = {
        ("A", "A"): 25, ("A", "B"): 3, ("A", "tie"): 2,
        ("B", "A"): 4, ("B", "B"): 30, ("B", "tie"): 6,
        ("tie", "A"): 1, ("tie", "B"): 5, ("tie", "tie"): 24,
    }  # fmt: skip
    a, b = expand(table)
    assert cohen_kappa(a, b) == float(Fraction(226, 331))


def test_kappa_perfect_disagreement_and_independent_constant_raters() -> None:
    # p_o = 0, p_e = 0.5·0.5 + 0.5·0.5 = 0.5 → κ = −0.5/0.5 = −1
    assert cohen_kappa(["P", "F", "P", "F"], ["F", "P", "F", "P"]) == -1.0
    # one rater always PASS, the other always FAIL: p_o = p_e = 0 → κ = 0
    assert cohen_kappa(["P", "P", "P"], ["F", "F", "F"]) == 0.0


labels = st.lists(st.sampled_from(["PASS", "FAIL", "tie", 3, None]), min_size=2, max_size=200)


@given(labels)
def test_kappa_is_one_for_identical_labels(a: list) -> None:
    assume(len(set(a)) >= 2)
    assert cohen_kappa(a, list(a)) == 1.0


@given(st.data())
def test_kappa_is_symmetric_bounded_and_blind_to_label_names(data: st.DataObject) -> None:
    a = data.draw(labels)
    b = data.draw(
        st.lists(st.sampled_from(["PASS", "FAIL", "tie"]), min_size=len(a), max_size=len(a))
    )
    try:
        kappa = cohen_kappa(a, b)
    except UndefinedStatisticError:
        assert len(set(a)) == 1 and set(a) == set(b)
        return
    assert kappa == cohen_kappa(b, a)
    assert -1.0 <= kappa <= 1.0
    renamed = {label: f"label-{i}" for i, label in enumerate(["PASS", "FAIL", "tie", 3, None])}
    assert cohen_kappa([renamed[x] for x in a], [renamed[y] for y in b]) == kappa


def test_kappa_accepts_any_iterables() -> None:
    assert cohen_kappa(iter("ABAB"), (x for x in "ABAB")) == 1.0


@pytest.mark.parametrize(
    ("a", "b", "error", "match"),
    [
        (["P", "F"], ["P"], StatisticsError, "same length, got 2 and 1"),
        (["P"], ["P"], StatisticsError, "at least 2 pairs, got 1"),
        ([], [], StatisticsError, "at least 2 pairs, got 0"),
        (["P", "P"], ["P", "P"], UndefinedStatisticError, "expected agreement is 1"),
    ],
)
def test_kappa_rejects_bad_input(a: list, b: list, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        cohen_kappa(a, b)


# ------------------------------------------------------------------ Spearman


def test_spearman_with_ties_by_hand() -> None:
    # x = 1 2 3 4 5 → ranks 1 2 3 4 5; y = 5 6 7 8 7 → ranks 1 2 3.5 5 3.5 (the two 7s share 3, 4)
    # both rank means are 3; deviations dx = −2 −1 0 1 2, dy = −2 −1 0.5 2 0.5
    # Σdx·dy = 4 + 1 + 0 + 2 + 1 = 8; Σdx² = 10; Σdy² = 4 + 1 + 0.25 + 4 + 0.25 = 9.5
    # r = 8 / sqrt(10 · 9.5) = 8 / sqrt(95) = 0.820783
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95), rel=1e-15)


def test_spearman_with_ties_on_both_sides_by_hand() -> None:
    # x = 1 1 2 3 → ranks 1.5 1.5 3 4 (mean 2.5): dx = −1 −1 0.5 1.5, Σdx² = 4.5
    # y = 2 1 1 3 → ranks 3 1.5 1.5 4 (mean 2.5): dy = 0.5 −1 −1 1.5, Σdy² = 4.5
    # Σdx·dy = −0.5 + 1 − 0.5 + 2.25 = 2.25; r = 2.25 / 4.5 = 0.5
    assert spearman([1, 1, 2, 3], [2, 1, 1, 3]) == 0.5


def test_spearman_on_graded_scores() -> None:
    judge = [5, 4, 4, 2, 1, 3]
    human = [4, 4, 5, 1, 2, 3]
    # ranks judge: 6 4.5 4.5 2 1 3; human: 4.5 4.5 6 1 2 3 (means 3.5)
    # dx = 2.5 1 1 −1.5 −2.5 −0.5; dy = 1 1 2.5 −2.5 −1.5 −0.5
    # Σdx·dy = 2.5 + 1 + 2.5 + 3.75 + 3.75 + 0.25 = 13.75; Σdx² = Σdy² = 17
    assert spearman(judge, human) == pytest.approx(13.75 / 17, rel=1e-15)


def test_spearman_without_ties_by_hand() -> None:
    # x = 0.5 0.1 0.9 0.3 → ranks 3 1 4 2; y = 10 20 40 30 → ranks 1 2 4 3
    # d = 2 −1 0 −1, Σd² = 6; with no ties r = 1 − 6·Σd² / (n(n² − 1)) = 1 − 36/60 = 0.4
    x, y = [0.5, 0.1, 0.9, 0.3], [10, 20, 40, 30]
    assert spearman(x, y) == pytest.approx(0.4, rel=1e-15)
    # the same values inside lists cannot be hashed and are ranked by sorted position
    assert spearman([[v] for v in x], y) == spearman(x, y)
    # one tie on one side takes the tied path: x = 0.5 0.1 0.9 0.1 → ranks 3 1.5 4 1.5
    # dx = 0.5 −1 1.5 −1 (Σdx² = 4.5), dy = −1.5 −0.5 1.5 0.5 (Σdy² = 5)
    # Σdx·dy = −0.75 + 0.5 + 2.25 − 0.5 = 1.5; r = 1.5 / sqrt(22.5)
    assert spearman([0.5, 0.1, 0.9, 0.1], y) == pytest.approx(1.5 / math.sqrt(22.5), rel=1e-15)


finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(
    st.lists(
        st.tuples(st.integers(-20, 20), st.integers(-(10**6), 10**6)), min_size=2, max_size=300
    )
)
def test_spearman_ignores_strictly_monotone_transforms(pairs: list[tuple[int, int]]) -> None:
    x = [p[0] for p in pairs]
    y = [p[1] for p in pairs]
    assume(len(set(x)) > 1 and len(set(y)) > 1)
    r = spearman(x, y)
    # transforms that stay strictly increasing in floating point on these ranges
    assert spearman([math.exp(v) for v in x], [v**3 + 7 * v for v in y]) == r
    assert spearman(y, x) == r
    assert spearman(x, [-v for v in y]) == -r
    assert -1.0 <= r <= 1.0


@given(st.lists(finite, min_size=2, max_size=300))
def test_spearman_of_a_series_with_itself_is_one(x: list[float]) -> None:
    assume(len(set(x)) > 1)
    assert spearman(x, x) == 1.0
    assert spearman(x, [-v for v in x]) == -1.0


@pytest.mark.parametrize(
    ("x", "y", "error", "match"),
    [
        ([1, 2, 3], [1, 2], StatisticsError, "same length, got 3 and 2"),
        ([1], [1], StatisticsError, "at least 2 pairs"),
        ([1.0, math.nan, 3.0], [1, 2, 3], StatisticsError, "NaN"),
        ([2, 2, 2], [1, 2, 3], UndefinedStatisticError, "x is constant"),
        ([1, 2, 3], [4, 4, 4], UndefinedStatisticError, "y is constant"),
    ],
)
def test_spearman_rejects_bad_input(x: list, y: list, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        spearman(x, y)


# ------------------------------------------------------------------ the command line


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["stats", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_wilson_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "wilson", "27", "30")
    assert (code, out) == (0, "27/30 = 90.0%; 95% Wilson interval 74.4%–96.5%.\n")


def test_cli_sample_size_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "sample-size", "--baseline", "0.90", "--target", "0.85")
    assert code == 0
    assert out == (
        "To detect a drop from 90% to 85% with 80% power at α = 0.05 you need 686 cases per run."
        " Test: two-proportion z-test (runs on different cases).\n"
    )


def test_cli_accepts_percentages(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "sample-size", "--baseline", "90%", "--target", "80%", "--json")
    assert json.loads(out)["n"] == 199


def test_cli_power_and_detectable_sentences(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "power", "--baseline", "0.90", "--target", "0.85", "--n", "200")
    assert code == 0
    assert f"{power(0.90, 0.85, 200):.1%} power" in out and "686 cases per run" in out
    code, out, _ = run_cli(capsys, "detectable", "--baseline", "0.90", "--n", "40")
    drop = detectable_difference(0.90, 40)
    assert code == 0
    assert f"is to {0.90 - drop:.1%} ({drop * 100:.1f} points). Test: two-proportion" in out


def test_cli_detectable_says_when_no_drop_is_detectable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "detectable", "--baseline", "0.90", "--n", "2", "--json")
    report = json.loads(out)
    assert code == 0
    assert report["drop"] is None and report["target"] is None
    assert "not even a drop to 0%" in report["sentence"]


def test_cli_mcnemar_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "mcnemar", "12", "3")
    assert code == 0
    assert "p = 0.035" in out and "the second run is worse at α = 0.05" in out
    _, out, _ = run_cli(capsys, "mcnemar", "7", "5")
    assert "no evidence of a difference" in out


@pytest.mark.parametrize(
    ("argv", "keys"),
    [
        (["wilson", "27", "30"], {"successes", "n", "rate", "confidence", "low", "high"}),
        (
            ["sample-size", "--baseline", "0.9", "--target", "0.85"],
            {"baseline", "target", "alpha", "power", "continuity", "n"},
        ),
        (
            ["power", "--baseline", "0.9", "--target", "0.85", "--n", "200"],
            {"baseline", "target", "alpha", "continuity", "n", "power", "n_for_80_percent"},
        ),
        (
            ["detectable", "--baseline", "0.9", "--n", "40"],
            {"baseline", "alpha", "continuity", "n", "power", "drop", "target"},
        ),
        (["mcnemar", "12", "3"], {"b", "c", "p_value", "alpha", "significant"}),
    ],
)
def test_cli_json_keys(capsys: pytest.CaptureFixture[str], argv: list[str], keys: set[str]) -> None:
    code, out, _ = run_cli(capsys, *argv, "--json")
    report = json.loads(out)
    assert code == 0
    planning = {"test"} if argv[0] in ("sample-size", "power", "detectable") else set()
    assert set(report) == keys | planning | {"statistic", "sentence"}
    assert report["statistic"] == argv[0]


def test_cli_json_figures_match_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "wilson", "17", "20", "--json")
    report = json.loads(out)
    assert (report["low"], report["high"]) == tuple(wilson_interval(17, 20))
    _, out, _ = run_cli(capsys, "mcnemar", "12", "3", "--json")
    assert json.loads(out)["p_value"] == 0.03515625


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["wilson", "31", "30"], "successes must be between 0 and n = 30, got 31"),
        (["wilson", "0", "0"], "undefined for n = 0"),
        (["wilson", "x", "30"], "K must be a whole number, got 'x'"),
        (["wilson", "27", "30", "--confidence", "1.5"], "confidence"),
        (["sample-size", "--baseline", "1.2", "--target", "0.8"], "baseline"),
        (["sample-size", "--baseline", "0.9", "--target", "0.9"], "must differ"),
        (
            ["sample-size", "--baseline", "ninety", "--target", "0.8"],
            "--baseline must be a proportion",
        ),
        (["power", "--baseline", "0.9", "--target", "0.8", "--n", "0"], "at least 1"),
        (["mcnemar", "-1", "3"], "must not be negative"),
        (["mcnemar", "1", "3", "--alpha", "0"], "--alpha"),
    ],
)
def test_cli_bad_numbers_give_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


# ------------------------------------------------------------------ other implementations


class TestAgainstOtherLibraries:
    """The same figures from scipy, statsmodels and scikit-learn, when installed."""

    def test_spearman_matches_scipy(self) -> None:
        scipy_stats = pytest.importorskip("scipy.stats")
        rng = random.Random(20240601)
        for size in (2, 3, 10, 100, 1000):
            x = [rng.randint(0, 9) for _ in range(size)]  # many ties
            y = [rng.choice([rng.random(), 0.5]) for _ in range(size)]
            if len(set(x)) < 2 or len(set(y)) < 2:
                continue
            expected = scipy_stats.spearmanr(x, y).statistic
            assert spearman(x, y) == pytest.approx(expected, rel=1e-12, abs=1e-15)

    def test_spearman_without_ties_matches_scipy(self) -> None:
        scipy_stats = pytest.importorskip("scipy.stats")
        rng = random.Random(7)
        for size in (2, 3, 10, 100, 5000):
            x = [rng.random() for _ in range(size)]  # no ties: the path that never builds ranks
            y = [v + rng.gauss(0.0, 0.5) for v in x]
            expected = scipy_stats.spearmanr(x, y).statistic
            assert spearman(x, y) == pytest.approx(expected, rel=1e-12, abs=1e-15)

    @pytest.mark.parametrize(
        ("b", "c"), [(12, 3), (0, 7), (40, 25), (5100, 4900), (25_100, 24_850), (500_500, 499_500)]
    )
    def test_mcnemar_matches_scipy_binomtest(self, b: int, c: int) -> None:
        scipy_stats = pytest.importorskip("scipy.stats")
        expected = scipy_stats.binomtest(min(b, c), b + c, 0.5).pvalue
        assert mcnemar(b, c) == pytest.approx(expected, rel=1e-9)

    @pytest.mark.parametrize(("k", "n"), [(81, 263), (0, 20), (27, 30), (999, 1000)])
    def test_wilson_matches_statsmodels(self, k: int, n: int) -> None:
        proportion = pytest.importorskip("statsmodels.stats.proportion")
        low, high = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
        assert wilson_interval(k, n) == pytest.approx((low, high), abs=1e-12)

    def test_kappa_matches_scikit_learn(self) -> None:
        metrics = pytest.importorskip("sklearn.metrics")
        rng = random.Random(7)
        a = [rng.choice("ABC") for _ in range(500)]
        b = [x if rng.random() < 0.6 else rng.choice("ABC") for x in a]
        assert cohen_kappa(a, b) == pytest.approx(metrics.cohen_kappa_score(a, b), rel=1e-12)

    def test_sample_size_matches_the_normal_quantiles_of_scipy(self) -> None:
        scipy_stats = pytest.importorskip("scipy.stats")
        za, zb = scipy_stats.norm.ppf(0.975), scipy_stats.norm.ppf(0.80)
        p1, p2 = 0.9, 0.85
        pbar = (p1 + p2) / 2
        root = za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
        assert sample_size(p1, p2) == math.ceil(root**2 / (p1 - p2) ** 2)


@settings(max_examples=25)
@given(st.integers(2, 60))
def test_kappa_and_spearman_agree_on_binary_scores(n: int) -> None:
    # Two raters, two balanced-label sequences: Spearman on 0/1 is the phi
    # coefficient and kappa equals phi when both raters have the same margins.
    a = [i % 2 for i in range(n)]
    b = list(a)
    random.Random(n).shuffle(b)  # same margins as a, both labels present
    assert cohen_kappa(a, b) == pytest.approx(spearman(a, b), abs=1e-12)


def test_examples_the_docstrings_used_to_show() -> None:
    from tinyeval.stats import _doubled_ranks

    assert [round(bound, 3) for bound in wilson_interval(180, 200)] == [0.851, 0.934]
    assert cases_to_decide(20, 20, 1.0) is None and cases_to_decide(10, 20, 0.5) is None
    assert cases_to_decide(17, 20, 1.0) == 20  # already decided: its upper bound is 94.8%
    assert round(power(0.90, 0.85, 686, sensitivity=0.95, specificity=0.80), 3) == 0.508
    assert round(detectable_difference(0.90, 686), 3) == 0.05
    assert round(detectable_difference(0.90, 686, sensitivity=0.95, specificity=0.80), 3) == 0.072
    assert (mcnemar(0, 0), spearman([1, 2, 3], [30, 20, 10])) == (1.0, -1.0)
    assert _doubled_ranks([30, 10, 20, 10]) == ([8, 3, 6, 3], 18)
    assert _doubled_ranks([[30], [10], [20], [10]]) == ([8, 3, 6, 3], 18)
