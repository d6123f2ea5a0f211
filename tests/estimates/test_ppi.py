"""Tests for ``stats.ppi_pass_rate``: prediction-powered pass rates.

Expected values are worked by hand in the test (the arithmetic is in the
comments, z = 1.959964 for 95%), checked against the ``ppi_py`` package when
it is installed, and checked for coverage by a seeded simulation whose
tolerance comes from the binomial standard error of the coverage estimate.
"""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyeval.estimates.ppi import PPIRate, ppi_pass_rate
from tinyeval.stats import StatisticsError, UndefinedStatisticError

Z95 = 1.959964

# Four labelled cases: the judge passes one real failure.
JUDGE_L = ["PASS", "PASS", "FAIL", "FAIL"]
HUMAN_L = ["PASS", "FAIL", "FAIL", "FAIL"]
# Six more judge verdicts, four of them PASS.
JUDGE_U = ["PASS", "PASS", "PASS", "PASS", "FAIL", "FAIL"]


# ------------------------------------------------------------------ hand computation


def test_plain_ppi_by_hand() -> None:
    r = ppi_pass_rate(JUDGE_L, HUMAN_L, JUDGE_U, tuned=False)
    # θ̂ = mean_N(f) + mean_n(Y − f) = 4/6 + (0 − 1 + 0 + 0)/4 = 0.666667 − 0.25
    assert r.value == pytest.approx(0.416667, abs=1e-6)
    # σ²_f on the unlabelled = (2/3)(1/3) = 0.222222, / N = 6 → 0.037037
    # Y − f = [0, −1, 0, 0]: mean −0.25, σ² = 0.25 − 0.0625 = 0.1875, / n = 4 → 0.046875
    # se² = 0.083912, se = 0.289676
    assert r.standard_error == pytest.approx(0.289676, abs=1e-6)
    # 0.416667 ± 1.959964 · 0.289676 = 0.416667 ± 0.567754
    assert r.low == 0.0  # −0.151088, clipped
    assert r.high == pytest.approx(0.984421, abs=1e-5)
    # effective labels: σ²_Y / se² = (0.25 · 0.75) / 0.083912 = 2.2345
    assert r.effective_labels == pytest.approx(2.2345, abs=1e-3)
    assert (r.lambda_, r.tuned, r.weighted) == (1.0, False, False)
    assert (r.n_labelled, r.n_unlabelled) == (4, 6)


def test_tuned_ppi_by_hand() -> None:
    r = ppi_pass_rate(JUDGE_L, HUMAN_L, JUDGE_U)
    # cov_n(Y, f) = Σ(Y − 0.25)(f − 0.5)/4 = (0.375 − 0.125 + 0.125 + 0.125)/4 = 0.125
    # all ten verdicts: 6 PASS, variance 10 · 0.24 / 9 = 0.266667
    # λ = 0.125 / ((1 + 4/6) · 0.266667) = 0.125 / 0.444444 = 0.28125 (= 9/32)
    assert r.lambda_ == pytest.approx(0.28125, abs=1e-12)
    # θ̂ = λ·4/6 + mean(Y − λf) = 0.1875 + (0.25 − 0.140625) = 0.296875 (= 19/64)
    assert r.value == pytest.approx(0.296875, abs=1e-12)
    # λ²·σ²_f/N = (81/1024)(2/9)/6 = 0.0029297
    # Y − λf = [23/32, −9/32, 0, 0]: mean 7/64, σ² = 610/4096 − 49/4096 = 0.136963, / 4 = 0.034241
    # se² = 0.037170, se = 0.192796; high = 0.296875 + 1.959964 · 0.192796 = 0.674751
    assert r.standard_error == pytest.approx(0.192796, abs=1e-6)
    assert r.low == 0.0
    assert r.high == pytest.approx(0.674751, abs=1e-5)
    # σ²_Y / se² = 0.1875 / 0.037170 = 5.0444; labels-only se² = 0.1875 / 4 = 0.046875 is larger
    assert r.effective_labels == pytest.approx(5.0444, abs=1e-3)
    assert r.standard_error**2 < 0.1875 / 4


def test_booleans_and_strings_give_the_same_rate() -> None:
    as_bool = [[v == "PASS" for v in seq] for seq in (JUDGE_L, HUMAN_L, JUDGE_U)]
    assert ppi_pass_rate(*as_bool) == ppi_pass_rate(JUDGE_L, HUMAN_L, JUDGE_U)


def test_weighted_estimator_by_hand() -> None:
    # Three labelled cases, each chosen with probability 1/2, and three not.
    judge_l, human_l, judge_u = ["PASS", "FAIL", "PASS"], ["PASS", "PASS", "FAIL"], [1, 0, 0]
    judge_u_verdicts = [bool(v) for v in judge_u]
    pis = [0.5, 0.5, 0.5]
    # Per-case terms over all M = 6 cases: Z = λ·a + b with
    # a = f(1 − 1/π) = [−1, 0, −1] then f = [1, 0, 0]; b = Y/π = [2, 2, 0] then [0, 0, 0].
    # mean a = −1/6, mean b = 2/3; var a = 3/6 − 1/36 = 17/36; var b = 8/6 − 4/9 = 8/9;
    # cov(a, b) = −2/6 − (−1/6)(2/3) = −2/9.
    plain = ppi_pass_rate(
        judge_l, human_l, judge_u_verdicts, tuned=False, selection_probabilities=pis
    )
    # λ = 1: θ̂ = −1/6 + 2/3 = 0.5; var Z = 17/36 − 4/9 + 8/9 = 0.916667, se² = var Z / 6
    assert plain.value == pytest.approx(0.5, abs=1e-12)
    assert plain.standard_error == pytest.approx(math.sqrt(0.916667 / 6), abs=1e-6)
    tuned = ppi_pass_rate(judge_l, human_l, judge_u_verdicts, selection_probabilities=pis)
    # λ = −cov(a, b) / var a = (2/9) / (17/36) = 8/17
    assert tuned.lambda_ == pytest.approx(8 / 17, abs=1e-12)
    # θ̂ = (8/17)(−1/6) + 2/3 = 10/17; var Z = (64/289)(17/36) − 32/153 + 8/9 = 40/51
    assert tuned.value == pytest.approx(10 / 17, abs=1e-12)
    assert tuned.standard_error == pytest.approx(math.sqrt(40 / 51 / 6), abs=1e-12)
    assert tuned.weighted and tuned.estimator == "ppi++ weighted"
    # the in-sample minimiser beats both λ = 1 and λ = 0 (var b / 6 = 8/54)
    assert tuned.standard_error < plain.standard_error
    assert tuned.standard_error**2 < 8 / 9 / 6


def test_result_forms() -> None:
    r = ppi_pass_rate(JUDGE_L, HUMAN_L, JUDGE_U)
    assert isinstance(r, PPIRate)
    data = json.loads(json.dumps(r.to_dict()))
    assert data["estimator"] == "ppi++" and data["lambda"] == r.lambda_
    assert set(data) == {
        "estimator", "value", "low", "high", "confidence", "standard_error",
        "effective_labels", "n_labelled", "n_unlabelled", "tuned", "lambda", "weighted",
    }  # fmt: skip
    text = str(r)
    assert "29.7% [0.0%, 67.5%]" in text and "4 human labels + 6 judge verdicts" in text
    assert float(r) == r.value
    with pytest.raises(AttributeError):
        r.value = 0.5  # type: ignore[misc]


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((["PASS"] * 3, ["PASS"] * 2, ["PASS"]), {}, "pair up case by case, got 3 and 2"),
        ((["PASS"], ["PASS"], ["PASS"]), {}, "at least 2 human labels, got 1"),
        ((["PASS", "FAIL"], ["PASS", "FAIL"], []), {}, "at least 1 judge verdict"),
        ((["PASS", "pass"], ["PASS", "FAIL"], ["PASS"]), {}, "judge_labelled[1] must be"),
        ((["PASS", "FAIL"], ["PASS", 1], ["PASS"]), {}, "human_labelled[1] must be"),
        ((["PASS", "FAIL"], ["PASS", "FAIL"], ["PASS"]), {"confidence": 1.0}, "confidence"),
        (
            (["PASS", "FAIL"], ["PASS", "FAIL"], ["PASS"]),
            {"selection_probabilities": [0.5]},
            "one probability per labelled case (2), got 1",
        ),
        (
            (["PASS", "FAIL"], ["PASS", "FAIL"], ["PASS"]),
            {"selection_probabilities": [0.5, 0.0]},
            "selection_probabilities[1] must be above 0 and at most 1",
        ),
        (
            (["PASS", "FAIL"], ["PASS", "FAIL"], ["PASS"]),
            {"selection_probabilities": [1.5, 0.5]},
            "selection_probabilities[0]",
        ),
    ],
)
def test_bad_input_is_refused(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(StatisticsError) as info:
        ppi_pass_rate(*args, **kwargs)
    assert message in str(info.value)
    assert not isinstance(info.value, UndefinedStatisticError)


def test_zero_variance_has_no_interval() -> None:
    # humans and judge say PASS everywhere: every variance is 0
    with pytest.raises(UndefinedStatisticError, match="standard error is 0"):
        ppi_pass_rate(["PASS"] * 5, ["PASS"] * 5, ["PASS"] * 20)
    # humans all PASS: the tuned λ is 0 and the labels alone have no spread
    with pytest.raises(UndefinedStatisticError):
        ppi_pass_rate(["PASS", "FAIL", "PASS"], ["PASS"] * 3, ["FAIL", "PASS"] * 5)
    # the plain estimator still has the judge's spread, and says the labels alone have none
    plain = ppi_pass_rate(["PASS", "FAIL", "PASS"], ["PASS"] * 3, ["FAIL", "PASS"] * 5, tuned=False)
    assert plain.effective_labels == 0.0 and plain.low < plain.high


def test_a_constant_judge_gets_no_weight() -> None:
    # the judge always says PASS: it carries no information, λ = 0, labels-only mean
    r = ppi_pass_rate(["PASS"] * 4, ["PASS", "FAIL", "PASS", "PASS"], ["PASS"] * 10)
    assert r.lambda_ == 0.0
    assert r.value == pytest.approx(0.75, abs=1e-12)
    # labels-only normal interval: 0.75 ± 1.959964·sqrt(0.1875/4) = 0.75 ± 0.424344
    assert r.low == pytest.approx(0.325656, abs=1e-5)
    assert r.effective_labels == pytest.approx(4.0, abs=1e-9)


# ------------------------------------------------------------------ properties

verdict_lists = st.lists(st.booleans(), min_size=2, max_size=30)


@st.composite
def ppi_inputs(draw: st.DrawFn) -> tuple[list[bool], list[bool], list[bool]]:
    human = draw(verdict_lists)
    judge = draw(st.lists(st.booleans(), min_size=len(human), max_size=len(human)))
    rest = draw(st.lists(st.booleans(), min_size=1, max_size=40))
    return judge, human, rest


def _defined(*args: list[bool], **kwargs: object) -> PPIRate | None:
    try:
        return ppi_pass_rate(*args, **kwargs)  # type: ignore[arg-type]
    except UndefinedStatisticError:
        return None


@settings(max_examples=100, deadline=None)
@given(ppi_inputs(), st.booleans())
def test_interval_holds_the_estimate_and_stays_in_unit(
    data: tuple[list[bool], list[bool], list[bool]], tuned: bool
) -> None:
    r = _defined(*data, tuned=tuned)
    if r is not None:
        assert 0.0 <= r.low <= r.value <= r.high <= 1.0
        assert 0.0 <= r.lambda_ <= 1.0
        assert r.effective_labels >= 0.0


@settings(max_examples=100, deadline=None)
@given(ppi_inputs(), st.booleans(), st.randoms(use_true_random=False))
def test_invariant_under_case_order_and_mirrored_by_swapping_pass_and_fail(
    data: tuple[list[bool], list[bool], list[bool]], tuned: bool, rng: random.Random
) -> None:
    judge, human, rest = data
    r = _defined(judge, human, rest, tuned=tuned)
    pairs = list(zip(judge, human, strict=True))
    rng.shuffle(pairs)
    shuffled_rest = rest[:]
    rng.shuffle(shuffled_rest)
    shuffled = _defined([p[0] for p in pairs], [p[1] for p in pairs], shuffled_rest, tuned=tuned)
    flipped = _defined(
        [not v for v in judge], [not v for v in human], [not v for v in rest], tuned=tuned
    )
    if r is None:
        assert shuffled is None and flipped is None
        return
    assert shuffled is not None and flipped is not None
    assert shuffled.value == pytest.approx(r.value, abs=1e-9)
    assert shuffled.standard_error == pytest.approx(r.standard_error, abs=1e-9)
    # PASS ↔ FAIL: the pass rate becomes the fail rate, λ and se unchanged
    assert flipped.value == pytest.approx(1.0 - r.value, abs=1e-9)
    assert flipped.low == pytest.approx(1.0 - r.high, abs=1e-9)
    assert flipped.lambda_ == pytest.approx(r.lambda_, abs=1e-9)


# ------------------------------------------------------------------ simulation

TRUE_RATE, SENSITIVITY, SPECIFICITY = 0.70, 0.90, 0.80
CASES, LABELS, REPETITIONS = 1000, 100, 1000
# Coverage over R repetitions is a binomial share: se = sqrt(0.95 · 0.05 / R) = 0.0069 for
# R = 1000; the test allows 3 se (0.021) either side of 95%.
TOLERANCE = 3 * math.sqrt(0.95 * 0.05 / REPETITIONS)


def _suite(rng: random.Random) -> tuple[list[bool], list[bool]]:
    truth = [rng.random() < TRUE_RATE for _ in range(CASES)]
    judge = [(rng.random() < SENSITIVITY) if t else (rng.random() >= SPECIFICITY) for t in truth]
    return truth, judge


def test_coverage_is_nominal_and_tuning_never_widens_on_average() -> None:
    rng = random.Random(20231109)
    covered = {True: 0, False: 0}
    width = {True: 0.0, False: 0.0}
    labels_only_width = 0.0
    for _ in range(REPETITIONS):
        truth, judge = _suite(rng)
        chosen = set(rng.sample(range(CASES), LABELS))
        judge_l = [judge[i] for i in sorted(chosen)]
        human_l = [truth[i] for i in sorted(chosen)]
        judge_u = [judge[i] for i in range(CASES) if i not in chosen]
        for tuned in (True, False):
            r = ppi_pass_rate(judge_l, human_l, judge_u, tuned=tuned)
            covered[tuned] += r.low <= TRUE_RATE <= r.high
            width[tuned] += r.high - r.low
        share = sum(human_l) / LABELS
        labels_only_width += 2 * Z95 * math.sqrt(share * (1 - share) / LABELS)
    for tuned in (True, False):
        assert abs(covered[tuned] / REPETITIONS - 0.95) <= TOLERANCE, (tuned, covered)
    # PPI++ is at most as wide as the labels-only normal interval and as plain PPI
    assert width[True] <= labels_only_width
    assert width[True] <= width[False]


def test_weighted_estimator_covers_under_an_uncertainty_driven_design() -> None:
    # Cases the judge failed are labelled with probability 0.35, passes with 0.15 (a design
    # leaning on the judge's FAILs but mixed with a uniform share, as the docstring advises):
    # about 210 labels per suite.
    repetitions = 400
    tolerance = 3 * math.sqrt(0.95 * 0.05 / repetitions)  # 0.033
    rng = random.Random(7)
    covered = 0
    estimates, naive = [], []
    for _ in range(repetitions):
        truth, judge = _suite(rng)
        probability = [0.15 if verdict else 0.35 for verdict in judge]
        chosen = [i for i in range(CASES) if rng.random() < probability[i]]
        chosen_set = set(chosen)
        judge_l = [judge[i] for i in chosen]
        human_l = [truth[i] for i in chosen]
        judge_u = [judge[i] for i in range(CASES) if i not in chosen_set]
        r = ppi_pass_rate(
            judge_l, human_l, judge_u, selection_probabilities=[probability[i] for i in chosen]
        )
        covered += r.low <= TRUE_RATE <= r.high
        estimates.append(r.value)
        naive.append(ppi_pass_rate(judge_l, human_l, judge_u).value)
    assert abs(covered / repetitions - 0.95) <= tolerance, covered
    # unbiased: the mean estimate is within 3 standard errors of the mean of the truth
    noise = 3 * statistics.stdev(estimates) / math.sqrt(repetitions)
    assert abs(statistics.fmean(estimates) - TRUE_RATE) <= noise
    # ignoring the design is not: the labels over-represent the judge's FAILs
    assert abs(statistics.fmean(naive) - TRUE_RATE) > 3 * noise


# ------------------------------------------------------------------ ppi_py


def _random_case(seed: int, n: int, big_n: int) -> tuple[list[bool], list[bool], list[bool]]:
    rng = random.Random(seed)
    human = [rng.random() < 0.65 for _ in range(n)]
    judge = [h if rng.random() < 0.8 else not h for h in human]
    rest = [rng.random() < 0.6 for _ in range(big_n)]
    return judge, human, rest


@pytest.mark.parametrize(("seed", "n", "big_n"), [(1, 50, 500), (2, 200, 2000), (3, 30, 30)])
def test_matches_ppi_py(seed: int, n: int, big_n: int) -> None:
    np = pytest.importorskip("numpy")
    ppi_py = pytest.importorskip("ppi_py")
    judge, human, rest = _random_case(seed, n, big_n)
    y, yhat, yhat_u = (np.array(v, dtype=float) for v in (human, judge, rest))
    for confidence in (0.95, 0.90):
        alpha = 1 - confidence
        tuned = ppi_pass_rate(judge, human, rest, confidence=confidence)
        plain = ppi_pass_rate(judge, human, rest, confidence=confidence, tuned=False)
        # lam=None: ppi_py estimates the power-tuning weight itself
        low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha)
        point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u)
        assert tuned.value == pytest.approx(float(np.squeeze(point)), abs=1e-12)
        assert (tuned.low, tuned.high) == pytest.approx(
            (float(np.squeeze(low)), float(np.squeeze(high))), abs=1e-12
        )
        # lam given: 1 is plain PPI, and our λ reproduces the tuned figures
        for lam, ours in ((1.0, plain), (tuned.lambda_, tuned)):
            low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha, lam=lam)
            point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)
            assert ours.value == pytest.approx(float(np.squeeze(point)), abs=1e-12)
            assert (ours.low, ours.high) == pytest.approx(
                (float(np.squeeze(low)), float(np.squeeze(high))), abs=1e-12
            )
