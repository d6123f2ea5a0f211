"""Before and after: paired intervals, Holm, Connor's paired plan and clusters, against the papers'
worked examples and computations written out here."""

from __future__ import annotations

import json
import math
import random
from statistics import NormalDist

import pytest

from tinyeval.cli import main
from tinyeval.stats import (
    StatisticsError,
    UndefinedStatisticError,
    design_effect,
    holm,
    mcnemar,
    paired_difference_interval,
    paired_sample_size,
    wilson_interval,
)

Z = NormalDist().inv_cdf


def wilson_by_hand(k: float, n: float, z: float) -> tuple[float, float]:
    """Wilson (1927), the textbook form, for any positive n."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def newcombe_by_hand(a: int, b: int, c: int, d: int, z: float) -> tuple[float, float]:
    """Newcombe (1998) method 10, as printed: Wilson limits of both margins, corrected phi."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_by_hand(a + b, n, z)
    l2, u2 = wilson_by_hand(a + c, n, z)
    product = (a + b) * (c + d) * (a + c) * (b + d)
    excess = a * d - b * c
    if excess > 0:
        excess = max(excess - n / 2, 0)
    phi = excess / math.sqrt(product) if product else 0.0
    delta = math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    epsilon = math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return (b - c) / n - delta, (b - c) / n + epsilon


def tango_statistic_by_search(b: int, c: int, n: int, delta: float) -> float:
    """Tango's score statistic with the restricted MLE found by maximising the likelihood."""
    low, high = max(0.0, -delta) + 1e-15, (1 - delta) / 2 - 1e-15

    def loglik(p21: float) -> float:
        p12, same = p21 + delta, 1 - 2 * p21 - delta
        terms = [(b, p12), (c, p21), (n - b - c, same)]
        return sum(k * math.log(p) for k, p in terms if k)

    for _ in range(300):  # ternary search: the log-likelihood is concave in p21
        one, two = low + (high - low) / 3, high - (high - low) / 3
        if loglik(one) < loglik(two):
            low = one
        else:
            high = two
    p21 = (low + high) / 2
    return (b - c - n * delta) / math.sqrt(n * (2 * p21 + delta * (1 - delta)))


# ---------------------------------------------------------------- Newcombe's method 10


def test_newcombe_matches_the_papers_worked_example() -> None:
    # Newcombe (1998), the example with a = 20, b = 12, c = 2, d = 16: method 10 gives
    # +0.0562 to +0.3292 (and method 8, without phi, 0.0618 to 0.3242 is NOT it)
    low, high = paired_difference_interval(20, 12, 2, 16)
    assert (round(low, 4), round(high, 4)) == (0.0562, 0.3292)


def test_newcombe_matches_fagerland_lydersen_laake() -> None:
    # Fagerland, Lydersen & Laake (2014), Bentur et al. data (1, 1, 7, 12): -0.507 to -0.026
    low, high = paired_difference_interval(1, 1, 7, 12)
    assert (round(low, 3), round(high, 3)) == (-0.507, -0.026)


@pytest.mark.parametrize(
    "table",
    [(20, 12, 2, 16), (1, 1, 7, 12), (59, 6, 16, 80), (10, 3, 3, 10), (0, 4, 1, 0), (30, 0, 0, 5)],
)
@pytest.mark.parametrize("confidence", [0.90, 0.95, 0.99])
def test_newcombe_matches_the_formula_written_out(
    table: tuple[int, int, int, int], confidence: float
) -> None:
    found = paired_difference_interval(*table, confidence=confidence)
    expected = newcombe_by_hand(*table, Z((1 + confidence) / 2))
    assert found == pytest.approx(expected, abs=1e-12)


# ---------------------------------------------------------------- Tango's score interval


@pytest.mark.parametrize(
    ("table", "confidence", "expected"),
    [
        ((4, 9, 3, 16), 0.95, (-0.027, 0.390)),  # Tango (1998), first example
        ((43, 0, 1, 0), 0.90, (-0.096, 0.037)),  # Tango (1998), second example
        ((1, 1, 7, 12), 0.95, (-0.517, -0.026)),  # Fagerland, Lydersen & Laake (2014)
    ],
)
def test_tango_matches_the_published_examples(
    table: tuple[int, int, int, int], confidence: float, expected: tuple[float, float]
) -> None:
    low, high = paired_difference_interval(*table, confidence=confidence, method="tango")
    assert (round(low, 3), round(high, 3)) == expected


@pytest.mark.parametrize("table", [(4, 9, 3, 16), (1, 1, 7, 12), (59, 6, 16, 80), (5, 0, 2, 3)])
def test_tango_limits_are_where_the_score_statistic_is_plus_or_minus_z(
    table: tuple[int, int, int, int],
) -> None:
    a, b, c, d = table
    n = a + b + c + d
    low, high = paired_difference_interval(*table, method="tango")
    assert tango_statistic_by_search(b, c, n, low) == pytest.approx(Z(0.975), abs=1e-6)
    assert tango_statistic_by_search(b, c, n, high) == pytest.approx(-Z(0.975), abs=1e-6)


def test_paired_intervals_at_the_edges_and_refusals() -> None:
    for method in ("newcombe", "tango"):
        low, high = paired_difference_interval(0, 0, 0, 5, method=method)
        assert low == pytest.approx(-high) and 0 < high < 1  # nothing changed: symmetric
        assert paired_difference_interval(0, 5, 0, 0, method=method).high == 1.0
        assert paired_difference_interval(0, 0, 5, 0, method=method).low == -1.0
    with pytest.raises(UndefinedStatisticError, match="no pairs"):
        paired_difference_interval(0, 0, 0, 0)
    with pytest.raises(StatisticsError, match="method must be 'newcombe' or 'tango'"):
        paired_difference_interval(1, 1, 1, 1, method="wald")
    with pytest.raises(StatisticsError, match="broke must not be negative"):
        paired_difference_interval(1, 1, -1, 1)


# ---------------------------------------------------------------- Holm


def test_holm_by_hand() -> None:
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → kept at 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert holm([0.0, 1.0]) == [0.0, 1.0]
    assert holm([]) == []
    with pytest.raises(StatisticsError, match=r"each p-value must be a number in \[0, 1\]"):
        holm([0.01, 1.5])


# ---------------------------------------------------------------- Connor


def connor_by_hand(delta: float, psi: float, alpha: float, power: float) -> int:
    root = Z(1 - alpha / 2) * math.sqrt(psi) + Z(power) * math.sqrt(psi - delta**2)
    return math.ceil((root / delta) ** 2)


@pytest.mark.parametrize(
    ("delta", "psi", "alpha", "power"),
    [
        (0.05, 0.10, 0.05, 0.80),
        (0.10, 0.20, 0.05, 0.80),
        (0.03, 0.15, 0.01, 0.90),
        (0.2, 0.2, 0.05, 0.8),
    ],
)
def test_connor_matches_the_closed_form(
    delta: float, psi: float, alpha: float, power: float
) -> None:
    assert paired_sample_size(delta, psi, alpha=alpha, power=power) == connor_by_hand(
        delta, psi, alpha, power
    )
    assert paired_sample_size(-delta, psi, alpha=alpha, power=power) == connor_by_hand(
        delta, psi, alpha, power
    )


def test_connor_gives_about_the_planned_power_to_the_exact_mcnemar_test() -> None:
    n = paired_sample_size(0.10, 0.20)  # 15% of cases fixed, 5% broken
    rng = random.Random(1987)

    def power(size: int, runs: int = 2000) -> float:
        detected = 0
        for _ in range(runs):
            draws = [rng.random() for _ in range(size)]
            fixed = sum(u < 0.15 for u in draws)
            broke = sum(0.15 <= u < 0.20 for u in draws)
            detected += mcnemar(broke, fixed) < 0.05
        return detected / runs

    # the exact test is a little conservative: a few points under the planned 80%
    assert 0.72 <= power(n) <= 0.85
    assert power(n // 2) < 0.55


def test_connor_refuses_a_difference_larger_than_the_discordance() -> None:
    with pytest.raises(StatisticsError, match="at most the discordance"):
        paired_sample_size(0.2, 0.1)
    with pytest.raises(StatisticsError, match="discordance must be above 0"):
        paired_sample_size(0.1, 0.0)


# ---------------------------------------------------------------- clusters


def test_design_effect_and_the_clustered_wilson_interval() -> None:
    assert design_effect(5, 0.3) == pytest.approx(2.2)
    assert design_effect(1, 0.9) == 1.0  # clusters of one: no inflation
    assert wilson_interval(27, 30, design_effect=1.0) == wilson_interval(27, 30)
    # the clustered interval is Wilson's over the effective n = 30 / 2.2
    found = wilson_interval(27, 30, design_effect=2.2)
    assert found == pytest.approx(wilson_by_hand(27 / 2.2, 30 / 2.2, Z(0.975)), abs=1e-12)
    with pytest.raises(StatisticsError, match="icc must be a number in"):
        design_effect(5, 1.5)
    with pytest.raises(StatisticsError, match="cluster_size must be a number of at least 1"):
        design_effect(0.5, 0.1)
    with pytest.raises(StatisticsError, match="design_effect must be a number of at least 1"):
        wilson_interval(27, 30, design_effect=0.5)


def test_the_clustered_interval_covers_where_the_naive_one_does_not() -> None:
    # 40 clusters of 5 cases, ICC 0.3, true rate 0.8: cluster rates drawn from a beta with
    # alpha + beta = 1/ICC − 1; 1,000 runs
    rng, rate, icc, size, clusters = random.Random(2024), 0.8, 0.3, 5, 40
    total = 1 / icc - 1
    deff = design_effect(size, icc)
    covered = {"clustered": 0, "naive": 0}
    for _ in range(1000):
        passes = 0
        for _ in range(clusters):
            p = rng.betavariate(rate * total, (1 - rate) * total)
            passes += sum(rng.random() < p for _ in range(size))
        for name, effect in (("clustered", deff), ("naive", 1.0)):
            low, high = wilson_interval(passes, size * clusters, design_effect=effect)
            covered[name] += low <= rate <= high
    assert covered["clustered"] >= 930
    assert covered["naive"] < 900


# ---------------------------------------------------------------- tinyeval stats


def stats_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["stats", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_paired_sample_size_is_connors_and_says_its_test(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["sample-size", "--baseline", "0.87", "--target", "0.91", "--paired"]
    code, out, _ = stats_cli(capsys, *argv, "--discordance", "10%", "--json")
    found = json.loads(out)
    assert code == 0
    assert found["n"] == connor_by_hand(0.04, 0.10, 0.05, 0.80) == 489
    assert found["test"] == "McNemar's test (runs over the same cases)"
    assert "you need 489 paired cases when 10% of cases change outcome" in found["sentence"]
    assert found["sentence"].endswith("Test: McNemar's test (runs over the same cases).")
    # the same change planned for runs on different cases needs far more, and says its test
    _, out, _ = stats_cli(capsys, "sample-size", "--baseline", "0.87", "--target", "0.91")
    assert "Test: two-proportion z-test (runs on different cases)." in out
    assert int(out.split("you need ")[1].split()[0]) > 489


def test_cli_clusters_inflate_the_plan_and_widen_the_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plan = ["sample-size", "--baseline", "0.87", "--target", "0.91", "--paired",
            "--discordance", "0.10", "--cluster-size", "5", "--icc", "0.3", "--json"]  # fmt: skip
    code, out, _ = stats_cli(capsys, *plan)
    found = json.loads(out)
    assert code == 0
    assert found["design_effect"] == pytest.approx(2.2)
    assert (found["n_without_clusters"], found["n"]) == (489, math.ceil(489 * 2.2))
    assert "in clusters of 5 cases with ICC 0.3 (design effect 2.2) that is 1076" in out
    code, out, _ = stats_cli(capsys, "wilson", "27", "30", "--cluster-size", "5", "--icc", "0.3")
    low, high = wilson_by_hand(27 / 2.2, 30 / 2.2, Z(0.975))
    assert code == 0
    assert f"95% Wilson interval {low:.1%}–{high:.1%} in clusters of 5 cases" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--paired"], "--discordance: a paired plan needs both --paired and --discordance"),
        (["--discordance", "0.1"], "--paired: a paired plan needs both"),
        (["--paired", "--discordance", "0.02"], "at most the discordance 0.02"),
        (["--paired", "--discordance", "0.1", "--continuity"], "without a judge's rates"),
        (["--icc", "0.1"], "--cluster-size: clusters need both --cluster-size and --icc"),
        (["--cluster-size", "5", "--icc", "2"], "icc must be a proportion"),
        (["--cluster-size", "five", "--icc", "0.1"], "--cluster-size must be a number"),
        (["--cluster-size", "0.5", "--icc", "0.1"], "cluster_size must be a number of at least 1"),
    ],
)
def test_cli_bad_paired_and_cluster_options_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    base = ["sample-size", "--baseline", "0.87", "--target", "0.91"]
    code, out, err = stats_cli(capsys, *base, *argv)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and message in err
