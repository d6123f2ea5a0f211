"""Tests for tinyeval.estimates.trials: pass@k, pass^k and the case-level summary of trials.

Expected values are worked by hand in the test (the arithmetic in a
comment), computed exactly with ``math.comb`` and ``Fraction``, or checked
against the defining property of an estimator (its expectation). Simulations
use a fixed seed and a stated tolerance. z = 1.959964 for 95%.
"""

from __future__ import annotations

import ast
import json
import math
import random
import re
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tinyeval.estimates.trials as trials_module
from tinyeval.estimates.trials import CaseTrials, pass_all_k, pass_at_k, summarize_trials
from tinyeval.stats import StatisticsError, UndefinedStatisticError, wilson_interval

Z = 1.959963984540054

# ------------------------------------------------------------------ module shape


@pytest.mark.parametrize("module", ["estimates/trials", "judges/jury", "estimates/sequential"])
def test_module_imports_only_the_standard_library_stats_and_errors(module: str) -> None:
    # the statistics can be copied with stats.py and errors.py alone; a run observer in the
    # module reads result rows or the gate settings only when a run uses it
    path = Path(trials_module.__file__).parents[1] / f"{module}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] in sys.stdlib_module_names, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level:
            allowed = ("stats", "errors") if node in top else ("records", "gating")
            assert node.module in allowed, f"{module} imports .{node.module}"
        elif isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] in sys.stdlib_module_names, node.module


def test_all_lists_public_names_that_exist() -> None:
    for name in trials_module.__all__:
        assert not name.startswith("_")
        assert hasattr(trials_module, name)


# ------------------------------------------------------------------ pass@k and pass^k


def test_pass_at_k_by_hand() -> None:
    # k = 1 is the pass rate: 2/5
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4, rel=1e-15)
    # 1 − C(3,2)/C(5,2) = 1 − 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7, rel=1e-15)
    # 1 − C(7,5)/C(10,5) = 1 − 21/252 = 11/12
    assert pass_at_k(10, 3, 5) == pytest.approx(11 / 12, rel=1e-15)
    # fewer failures (2) than k (3): every draw of 3 holds a pass
    assert pass_at_k(10, 8, 3) == 1.0
    # no passes: no draw holds one
    assert pass_at_k(10, 0, 4) == 0.0
    # k = n: at least one pass among all n trials
    assert pass_at_k(5, 1, 5) == 1.0


def test_pass_all_k_by_hand() -> None:
    # C(4,2)/C(5,2) = 6/10
    assert pass_all_k(5, 4, 2) == pytest.approx(0.6, rel=1e-15)
    # C(7,3)/C(10,3) = 35/120 = 7/24
    assert pass_all_k(10, 7, 3) == pytest.approx(7 / 24, rel=1e-15)
    # k = 1 is the pass rate again
    assert pass_all_k(10, 7, 1) == pytest.approx(0.7, rel=1e-15)
    assert pass_all_k(5, 5, 5) == 1.0
    assert pass_all_k(5, 4, 5) == 0.0  # fewer passes than k


def test_against_the_combinatorial_formulas_for_small_n() -> None:
    for n in range(1, 16):
        for c in range(n + 1):
            for k in range(1, n + 1):
                at_k = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
                all_k = Fraction(math.comb(c, k), math.comb(n, k))
                assert pass_at_k(n, c, k) == pytest.approx(float(at_k), rel=1e-13, abs=1e-15)
                assert pass_all_k(n, c, k) == pytest.approx(float(all_k), rel=1e-13, abs=1e-15)


def test_large_n_is_exact_without_huge_binomials() -> None:
    # C(10000, 100) has 242 digits; the float ratio must still be right to ~1e-12
    n, c, k = 10_000, 25, 100
    exact_at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    exact_all = Fraction(math.comb(9_990, 50), math.comb(n, 50))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact_at), rel=1e-12)
    assert pass_all_k(n, 9_990, 50) == pytest.approx(float(exact_all), rel=1e-12)


def test_pass_at_k_matches_the_numpy_reference_of_chen_et_al() -> None:
    np = pytest.importorskip("numpy")

    def reference(n: int, c: int, k: int) -> float:  # the paper's own numerically stable code
        if n - c < k:
            return 1.0
        return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))

    for n, c, k in [(200, 13, 1), (200, 13, 10), (200, 13, 100), (1000, 1, 50), (37, 36, 2)]:
        assert pass_at_k(n, c, k) == pytest.approx(reference(n, c, k), rel=1e-12)


@pytest.mark.parametrize("p", [0.1, 0.35, 0.8])
def test_estimators_are_unbiased(p: float) -> None:
    # Their defining property: over c ~ Binomial(n, p), E[pass@k] = 1 − (1 − p)^k and
    # E[pass^k] = p^k, summed exactly over every c.
    n = 12
    for k in (1, 3, 7, 12):
        weights = [math.comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
        mean_at = math.fsum(w * pass_at_k(n, c, k) for c, w in enumerate(weights))
        mean_all = math.fsum(w * pass_all_k(n, c, k) for c, w in enumerate(weights))
        assert mean_at == pytest.approx(1 - (1 - p) ** k, rel=1e-12)
        assert mean_all == pytest.approx(p**k, rel=1e-12)


@pytest.mark.parametrize(
    ("n", "c", "k", "fragment"),
    [
        (0, 0, 1, "n (the number of trials) must be at least 1"),
        (5, 6, 1, "c (the passes) must be between 0 and n = 5, got 6"),
        (5, -1, 1, "c (the passes) must be between 0 and n = 5, got -1"),
        (5, 2, 0, "k must be between 1 and n = 5, got 0"),
        (5, 2, 6, "k must be between 1 and n = 5, got 6"),
        (5.0, 2, 1, "n must be a whole number, got 5.0"),
        (5, True, 1, "c must be a whole number, got True"),
    ],
)
def test_bad_arguments_raise(n: object, c: object, k: object, fragment: str) -> None:
    for func in (pass_at_k, pass_all_k):
        with pytest.raises(StatisticsError, match=f"{func.__name__}: .*" + re.escape(fragment)):
            func(n, c, k)  # type: ignore[arg-type]


counts = st.integers(1, 60).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
)


@given(counts)
def test_pass_at_k_is_a_probability_monotone_in_k_and_c(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    value = pass_at_k(n, c, k)
    assert 0.0 <= value <= 1.0
    if k < n:
        assert pass_at_k(n, c, k + 1) >= value
    if c < n:
        assert pass_at_k(n, c + 1, k) >= value


@given(counts)
def test_pass_all_k_is_a_probability_falling_in_k_rising_in_c(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    value = pass_all_k(n, c, k)
    assert 0.0 <= value <= 1.0
    if k < n:
        assert pass_all_k(n, c, k + 1) <= value
    if c < n:
        assert pass_all_k(n, c + 1, k) >= value
    # all k pass ≤ one trial passes ≤ any of k passes
    assert value <= c / n + 1e-12
    assert c / n <= pass_at_k(n, c, k) + 1e-12


# ------------------------------------------------------------------ the issue's scenario


def scripted_generator(seed: int = 15) -> tuple[dict[str, list[bool]], list[str]]:
    """100 cases, 5 trials: 80 always right, 10 always wrong, 10 right half the time."""
    rng = random.Random(seed)
    outcomes: dict[str, list[bool]] = {}
    half = []
    for i in range(100):
        case = f"case{i:03d}"
        if i < 80:
            outcomes[case] = [True] * 5
        elif i < 90:
            outcomes[case] = [False] * 5
        else:
            outcomes[case] = [rng.random() < 0.5 for _ in range(5)]
            half.append(case)
    return outcomes, half


def test_the_issue_scenario_flaky_cases_pass_k_and_a_wider_interval() -> None:
    outcomes, half = scripted_generator()
    # precondition of this seed: every half-right case got both outcomes in its 5 trials
    assert all(0 < sum(outcomes[case]) < 5 for case in half), "pick a seed with mixed cases"
    half_passes = sum(sum(outcomes[case]) for case in half)

    summary = summarize_trials(outcomes)

    assert summary.k == 5
    assert summary.flaky == tuple(sorted(half))
    # pass^5 per case: 1 for the 80 always right, 0 for the other 20 (each misses a trial)
    assert summary.pass_all_k.value == pytest.approx(80 / 100, rel=1e-15)
    # pass@5 per case: 1 for the 80 and for the 10 half-right (each has a pass), 0 for 10
    assert summary.pass_at_k.value == pytest.approx(90 / 100, rel=1e-15)
    # pass@1: (80 cases × 5 passes + the half-right cases' passes) / 500 trials
    assert summary.pass_rate.value == pytest.approx((80 * 5 + half_passes) / 500, rel=1e-15)
    assert summary.naive.successes == 80 * 5 + half_passes and summary.naive.n == 500

    case_level = summary.pass_rate.high - summary.pass_rate.low
    naive = summary.naive.high - summary.naive.low
    assert case_level > 1.5 * naive  # ~100 cases' worth of information, not 500 trials'
    assert summary.pass_rate.low < summary.naive.low
    assert summary.pass_rate.effective_n < 150


def test_the_case_level_interval_covers_where_the_naive_one_does_not() -> None:
    # Cases drawn from a population: 75% always pass, 15% always fail, 10% pass half the
    # time, so the mean pass rate over cases is 0.75 + 0.05 = 0.80. 40 cases × 5 trials,
    # 400 seeded suites. Tolerance: the case-level interval must cover at least 92% (95%
    # nominal, 400 suites: one standard error is 1.1 points); the naive one, which treats
    # 200 trials as independent, covers far less.
    rng = random.Random(20261201)
    truth, suites = 0.80, 400
    covered = naive_covered = 0
    for _ in range(suites):
        outcomes = {}
        for i in range(40):
            draw = rng.random()
            p = 1.0 if draw < 0.75 else 0.0 if draw < 0.90 else 0.5
            outcomes[str(i)] = [rng.random() < p for _ in range(5)]
        summary = summarize_trials(outcomes, k=1)
        covered += summary.pass_rate.low <= truth <= summary.pass_rate.high
        naive_covered += summary.naive.low <= truth <= summary.naive.high
    assert covered / suites >= 0.92
    assert naive_covered / suites < 0.85


# ------------------------------------------------------------------ the interval itself


def wilson_by_hand(p: float, n: float) -> tuple[float, float]:
    """(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n), written out."""
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    spread = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - spread, centre + spread


def test_design_effect_by_hand() -> None:
    # rates 5/5, 5/5, 0/5, 3/5: mean 2.6/4 = 0.65
    # Σ(x − x̄)² = 2·0.35² + 0.65² + 0.05² = 0.245 + 0.4225 + 0.0025 = 0.67
    # n_eff = x̄(1 − x̄)·N²/Σ = 0.65·0.35·16/0.67 = 5.43284 (between 4 cases and 20 trials)
    outcomes = {
        "a": [True] * 5,
        "b": [True] * 5,
        "c": [False] * 5,
        "d": [True, False, True, False, True],
    }
    summary = summarize_trials(outcomes, k=1)
    assert summary.pass_rate.value == pytest.approx(0.65, rel=1e-15)
    assert summary.pass_rate.effective_n == pytest.approx(0.65 * 0.35 * 16 / 0.67, rel=1e-12)
    low, high = wilson_by_hand(0.65, 0.65 * 0.35 * 16 / 0.67)
    assert summary.pass_rate.low == pytest.approx(low, rel=1e-12)
    assert summary.pass_rate.high == pytest.approx(high, rel=1e-12)


def test_deterministic_cases_give_the_wilson_interval_over_cases() -> None:
    # every case always passes or always fails: each is one observation, so the interval
    # is exactly the Wilson interval of 17 passing cases of 20
    outcomes = {str(i): [i < 17] * 4 for i in range(20)}
    summary = summarize_trials(outcomes)
    assert summary.pass_rate.effective_n == 20
    assert summary.pass_rate[1:3] == pytest.approx(wilson_interval(17, 20), rel=1e-12)
    assert summary.naive[2:] == pytest.approx(wilson_interval(68, 80), rel=1e-12)
    assert summary.flaky == ()


def test_alike_cases_give_the_wilson_interval_over_trials() -> None:
    # every case passes 3 of 5: no between-case variation, so the trials count in full
    outcomes = {str(i): [True, True, True, False, False] for i in range(10)}
    summary = summarize_trials(outcomes, k=1)
    assert summary.pass_rate.effective_n == 50
    assert summary.pass_rate[1:3] == pytest.approx(wilson_interval(30, 50), rel=1e-12)
    assert len(summary.flaky) == 10


def test_all_pass_counts_cases_not_trials() -> None:
    # 12 of 12 cases pass all 5 trials: the data cannot show the trials are independent
    summary = summarize_trials({str(i): [True] * 5 for i in range(12)})
    assert summary.pass_rate.effective_n == 12
    assert summary.pass_rate[1:3] == pytest.approx(wilson_interval(12, 12), rel=1e-12)
    assert summary.pass_rate.high == 1.0
    assert summary.naive.low > summary.pass_rate.low


def test_one_case_is_one_observation() -> None:
    summary = summarize_trials({"only": [True, False, True]})
    assert summary.pass_rate.effective_n == 1
    assert summary.pass_rate.low == pytest.approx(wilson_by_hand(2 / 3, 1)[0], rel=1e-12)


def test_unequal_trials_weigh_each_case_the_same() -> None:
    # case a: 1/1, case b: 1/4 → mean of rates (1 + 0.25)/2 = 0.625, not pooled 2/5
    summary = summarize_trials({"a": [True], "b": [True, False, False, False]})
    assert summary.k == 1
    assert summary.pass_rate.value == pytest.approx(0.625, rel=1e-15)
    assert summary.naive.successes == 2 and summary.naive.n == 5
    assert summary.cases == (CaseTrials("a", 1, 1), CaseTrials("b", 1, 4))
    assert summary.n_trials == 5 and summary.n_passes == 2 and summary.n_cases == 2
    assert "trials per case vary" in str(summary)


def test_pass_k_uses_every_trial_when_a_case_has_more_than_k() -> None:
    # k = 2: a has 3/4 → C(3,2)/C(4,2) = 3/6; b has 2/2 → 1. pass^2 = (0.5 + 1)/2 = 0.75
    # pass@2: a → 1 − C(1,2)/C(4,2) = 1; b → 1. pass@2 = 1
    summary = summarize_trials({"a": [True, True, False, True], "b": [True, True]})
    assert summary.k == 2
    assert summary.pass_all_k.value == pytest.approx(0.75, rel=1e-15)
    assert summary.pass_at_k.value == 1.0
    # the cap on n_eff is the number of disjoint k-draws: 4 // 2 + 2 // 2 = 3
    assert summary.pass_all_k.effective_n <= 3


def test_a_narrower_confidence_gives_a_narrower_interval() -> None:
    outcomes, _ = scripted_generator()
    wide = summarize_trials(outcomes, confidence=0.99).pass_rate
    narrow = summarize_trials(outcomes, confidence=0.80).pass_rate
    assert wide.low < narrow.low < narrow.high < wide.high


# ------------------------------------------------------------------ output and errors


def test_to_dict_is_json_with_stable_keys_and_text_names_the_flaky() -> None:
    outcomes, half = scripted_generator()
    summary = summarize_trials(outcomes)
    data = json.loads(json.dumps(summary.to_dict()))
    assert data["flaky"] == sorted(half)
    assert data["cases"]["case000"] == {"passes": 5, "trials": 5}
    assert set(data["pass_rate"]) == {"value", "low", "high", "effective_n", "text"}
    assert data["naive"]["n"] == 500
    text = str(summary)
    assert "flaky: 10 cases: case090, case091" in text
    assert "pass^5 (all 5 pass)" in text and "naive, trials as independent: " in text


def test_text_lists_at_most_ten_flaky_ids() -> None:
    outcomes = {f"c{i:02d}": [True, False] for i in range(13)}
    assert "c09 and 3 more" in str(summarize_trials(outcomes))


def test_bad_input_raises() -> None:
    with pytest.raises(UndefinedStatisticError, match="needs at least one case"):
        summarize_trials({})
    with pytest.raises(StatisticsError, match="case 'a' has no trials"):
        summarize_trials({"a": []})
    with pytest.raises(StatisticsError, match="case 'a', trial 1: an outcome must be True"):
        summarize_trials({"a": [True, 1]})  # type: ignore[list-item]
    with pytest.raises(StatisticsError, match="k = 3 is more than the 2 trials of case 'b'"):
        summarize_trials({"a": [True] * 3, "b": [True] * 2}, k=3)
    with pytest.raises(StatisticsError, match="k must be at least 1"):
        summarize_trials({"a": [True]}, k=0)
    with pytest.raises(StatisticsError, match="confidence must be a number strictly between"):
        summarize_trials({"a": [True]}, confidence=1.0)


def test_the_trials_observer_runs_each_case_k_times_and_resumes_by_trial(tmp_path: Path) -> None:
    from tinyeval.dataset import Case
    from tinyeval.runner import RunnerError, run

    def generate(prompt: str, *, sample: int = 0) -> str:
        return "right" if sample % 2 == 0 else "wrong"

    cases = [Case(id=f"c{i}", input=f"q{i}", expect={"contains": ["right"]}) for i in range(4)]
    out = tmp_path / "rows.jsonl"
    trials = trials_module.Trials(3)
    result = run(cases, generate_model=generate, out=out, observers=[trials])
    assert result.total == 12 and sorted({r["trial"] for r in result.rows}) == [0, 1, 2]
    assert trials.tallies() == {"default": {"passed": 0, "total": 4}}
    assert trials.to_dict()["categories"]["default"]["flaky"] == ["c0", "c1", "c2", "c3"]
    again = run(cases, generate_model=generate, out=out, resume=True, observers=[trials])
    assert again.resumed == 12 and again.total == 12
    with pytest.raises(RunnerError, match="trials"):
        run(
            cases,
            generate_model=generate,
            out=out,
            resume=True,
            observers=[trials_module.Trials(2)],
        )


def test_trials_need_a_whole_number_and_a_generate_model() -> None:
    from types import SimpleNamespace

    from tinyeval.errors import InputError

    with pytest.raises(InputError, match="whole number"):
        trials_module.Trials(0)
    with pytest.raises(InputError, match="generate model"):
        trials_module.make(SimpleNamespace(trials=3, generate_model=None, out=None), None)
