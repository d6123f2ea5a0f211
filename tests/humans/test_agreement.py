"""Tests for tinyeval.humans.agreement and for planning with an imperfect judge.

Kappa and its interval are checked against a published SAS printout, Fleiss'
kappa against Fleiss (1971) and a textbook example, Krippendorff's alpha
against the worked example of Krippendorff (2011), all with their data written
out here; and against ``statsmodels`` and ``krippendorff`` when installed.
The imperfect-judge planning figures are worked by hand (z₀.₉₇₅ = 1.959964,
z₀.₈₀ = 0.841621).
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Hashable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyeval.humans.agreement import (
    PairKappa,
    fleiss_kappa,
    krippendorff_alpha,
    pairwise_kappas,
)
from tinyeval.stats import (
    AgreementInterval,
    StatisticsError,
    UndefinedStatisticError,
    cohen_kappa,
    detectable_difference,
    kappa_interval,
    power,
    sample_size,
    spearman_interval,
)

Z95 = 1.959964


def _expand(table: list[list[int]]) -> tuple[list[int], list[int]]:
    """Rater a's and rater b's labels from a contingency table (rows: a, columns: b)."""
    a: list[int] = []
    b: list[int] = []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [i] * count
            b += [j] * count
    return a, b


# ------------------------------------------------------------------ kappa interval

# A SAS PROC FREQ example (as reproduced in statsmodels' test suite): simple kappa
# 0.4842, ASE 0.1380, 95% limits 0.2137 and 0.7547.
SAS_TABLE = [[0, 4, 1], [0, 8, 0], [0, 1, 5]]


def test_kappa_interval_matches_the_sas_printout() -> None:
    r = kappa_interval(*_expand(SAS_TABLE))
    assert r.estimate == pytest.approx(0.4842, abs=5e-5)
    assert (r.high - r.low) / (2 * Z95) == pytest.approx(0.1380, abs=5e-5)
    assert r.low == pytest.approx(0.2137, abs=5e-5)
    assert r.high == pytest.approx(0.7547, abs=5e-5)
    assert r.n == 19 and r.statistic == "cohen_kappa"
    assert "Fleiss, Cohen & Everitt" in r.method


def test_kappa_interval_by_hand_for_two_labels() -> None:
    # 2x2 table [[8, 4], [4, 4]] over n = 20: p_o = 0.6, both margins (0.6, 0.4), p_e = 0.52,
    # κ = 0.08 / 0.48 = 1/6.
    r = kappa_interval(*_expand([[8, 4], [4, 4]]))
    assert r.estimate == pytest.approx(1 / 6, abs=1e-12)
    # term a = 0.4·(1 − 1.2·5/6)² + 0.2·(1 − 0.8·5/6)² = 0 + 0.2·(1/3)² = 0.022222
    # term b = (5/6)²·[0.2·(0.6 + 0.4)² + 0.2·(0.4 + 0.6)²] = 0.694444·0.4 = 0.277778
    # term c = (1/6 − 0.52·5/6)² = (0.166667 − 0.433333)² = 0.071111
    # var = (0.022222 + 0.277778 − 0.071111) / (20·0.48²) = 0.228889 / 4.608 = 0.049672
    half = Z95 * math.sqrt(0.049672)
    assert r.low == pytest.approx(1 / 6 - half, abs=1e-5)
    assert r.high == pytest.approx(1 / 6 + half, abs=1e-5)


def test_kappa_interval_matches_statsmodels() -> None:
    np = pytest.importorskip("numpy")
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = random.Random(3)
    a = [rng.choice("ABC") for _ in range(150)]
    b = [x if rng.random() < 0.6 else rng.choice("ABC") for x in a]
    cells = Counter(zip(a, b, strict=True))
    table = np.array([[cells[i, j] for j in "ABC"] for i in "ABC"])
    expected = inter_rater.cohens_kappa(table)
    r = kappa_interval(a, b)
    assert r.estimate == pytest.approx(expected.kappa, abs=1e-12)
    assert (r.low, r.high) == pytest.approx((expected.kappa_low, expected.kappa_upp), abs=1e-6)


def test_kappa_interval_refuses_and_is_undefined_where_it_should() -> None:
    with pytest.raises(UndefinedStatisticError, match="agree on all 4 cases"):
        kappa_interval(["PASS", "FAIL"] * 2, ["PASS", "FAIL"] * 2)
    with pytest.raises(UndefinedStatisticError):  # p_e = 1: kappa itself is undefined
        kappa_interval(["PASS"] * 3, ["PASS"] * 3)
    with pytest.raises(StatisticsError, match="same length"):
        kappa_interval(["PASS", "FAIL"], ["PASS"])
    with pytest.raises(StatisticsError, match="confidence"):
        kappa_interval(["PASS", "FAIL"], ["FAIL", "PASS"], confidence=0)


def test_interval_forms() -> None:
    r = kappa_interval(*_expand(SAS_TABLE), confidence=0.90)
    assert isinstance(r, AgreementInterval)
    data = json.loads(json.dumps(r.to_dict()))
    assert set(data) == {"statistic", "estimate", "low", "high", "n", "confidence", "method"}
    assert data["confidence"] == 0.90
    assert str(r).startswith("kappa = 0.48 [") and str(r).endswith("(n = 19)")


labels = st.sampled_from(["PASS", "FAIL", "tie"])


@st.composite
def rater_pairs(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    a = draw(st.lists(labels, min_size=2, max_size=40))
    b = draw(st.lists(labels, min_size=len(a), max_size=len(a)))
    return a, b


@settings(max_examples=100, deadline=None)
@given(rater_pairs())
def test_kappa_interval_properties(pair: tuple[list[str], list[str]]) -> None:
    a, b = pair
    try:
        r = kappa_interval(a, b)
    except UndefinedStatisticError:
        return
    assert -1.0 <= r.low <= r.estimate <= r.high <= 1.0
    # symmetric in the raters, and blind to what the labels are called
    swapped = kappa_interval(b, a)
    rename = {"PASS": 1, "FAIL": 2, "tie": 3}
    renamed = kappa_interval([rename[x] for x in a], [rename[y] for y in b])
    for other in (swapped, renamed):
        assert other.estimate == pytest.approx(r.estimate, abs=1e-12)
        assert (other.low, other.high) == pytest.approx((r.low, r.high), abs=1e-12)


# ------------------------------------------------------------------ Spearman interval


def test_spearman_interval_by_hand() -> None:
    # neighbours swapped: Σd² = 8, ρ = 1 − 6·8/(8·63) = 0.904762
    r = spearman_interval([1, 2, 3, 4, 5, 6, 7, 8], [2, 1, 4, 3, 6, 5, 8, 7])
    assert r.estimate == pytest.approx(0.904762, abs=1e-6)
    # z = atanh(0.904762) = ½·ln(1.904762/0.095238) = ½·ln 20 = 1.497866
    # se = sqrt((1 + 0.904762²/2) / 5) = sqrt(1.409297/5) = 0.530905
    # tanh(1.497866 ∓ 1.959964·0.530905) = tanh(0.457313), tanh(2.538419)
    assert r.low == pytest.approx(math.tanh(0.457313), abs=1e-5)
    assert r.high == pytest.approx(math.tanh(2.538419), abs=1e-5)
    assert r.statistic == "spearman" and "Bonett & Wright" in r.method


def test_spearman_interval_refusals() -> None:
    with pytest.raises(StatisticsError, match="at least 4 pairs"):
        spearman_interval([1, 2, 3], [1, 3, 2])
    with pytest.raises(UndefinedStatisticError, match="rho is -1"):
        spearman_interval([1, 2, 3, 4], [4, 3, 2, 1])
    with pytest.raises(UndefinedStatisticError):
        spearman_interval([1, 1, 1, 1], [4, 3, 2, 1])


# ------------------------------------------------------------------ Fleiss' kappa

# Fleiss (1971), Psychological Bulletin 76:378-382: 30 patients, 6 psychiatrists each,
# five diagnoses (1 depression, 2 personality disorder, 3 schizophrenia, 4 neurosis,
# 5 other); the paper reports κ = 0.430. Here one row per patient, one diagnosis per rating.
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]  # fmt: skip

# The worked example of the Wikipedia article "Fleiss' kappa": 10 subjects, 14 raters,
# counts per category; P̄ = 0.378, P̄e = 0.213, κ = 0.210.
WIKIPEDIA_COUNTS = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]  # fmt: skip


def test_fleiss_kappa_matches_fleiss_1971() -> None:
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(0.430, abs=5e-4)


def test_fleiss_kappa_matches_the_textbook_example() -> None:
    cases = [[c for c, count in enumerate(row) for _ in range(count)] for row in WIKIPEDIA_COUNTS]
    assert fleiss_kappa(cases) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_kappa_by_hand_and_from_mappings() -> None:
    # 3 raters, 2 cases: (P, P, F) and (F, F, F). Σn² per case: 5 and 9; P̄ = (5 + 9 − 6)/(2·6) = 2/3
    # shares: P 2/6, F 4/6; P̄e = 1/9 + 4/9 = 5/9; κ = (2/3 − 5/9)/(4/9) = 1/4
    cases = [{"ann": "P", "bob": "P", "cy": "F"}, {"ann": "F", "bob": "F", "cy": "F"}]
    assert fleiss_kappa(cases) == pytest.approx(0.25, abs=1e-12)


def test_fleiss_kappa_matches_statsmodels() -> None:
    np = pytest.importorskip("numpy")
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = random.Random(11)
    cases = []
    for _ in range(40):
        truth = rng.randrange(3)
        cases.append([truth if rng.random() < 0.6 else rng.randrange(3) for _ in range(5)])
    table, _ = inter_rater.aggregate_raters(np.array(cases))
    assert fleiss_kappa(cases) == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-12)


def test_fleiss_kappa_refusals() -> None:
    with pytest.raises(StatisticsError, match="same number"):
        fleiss_kappa([["P", "F"], ["P", "F", "F"]])
    with pytest.raises(StatisticsError, match="missing rating"):
        fleiss_kappa([["P", "F"], ["P", None]])
    with pytest.raises(StatisticsError, match="case 0 must be"):
        fleiss_kappa(["PF", "PP"])
    with pytest.raises(StatisticsError, match="at least 1 case"):
        fleiss_kappa([])
    with pytest.raises(UndefinedStatisticError):
        fleiss_kappa([["P", "P"], ["P", "P"]])


# ------------------------------------------------------------------ Krippendorff's alpha

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the example with
# 4 observers, 12 units and missing values; published α: nominal 0.743, ordinal 0.815,
# interval 0.849, ratio 0.797. Rows are observers A-D, columns units 1-12.
_ = None
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
]
PUBLISHED_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def _units(by_observer: list[list[int | None]]) -> list[list[int | None]]:
    return [list(unit) for unit in zip(*by_observer, strict=True)]


@pytest.mark.parametrize("level", sorted(PUBLISHED_ALPHA))
def test_krippendorff_alpha_matches_the_published_example(level: str) -> None:
    alpha = krippendorff_alpha(_units(KRIPPENDORFF_2011), level=level)
    assert alpha == pytest.approx(PUBLISHED_ALPHA[level], abs=5e-4)


def test_krippendorff_alpha_takes_mappings_with_absent_raters() -> None:
    units = [
        {name: value for name, value in zip("ABCD", unit, strict=True) if value is not None}
        for unit in _units(KRIPPENDORFF_2011)
    ]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_alpha_by_hand() -> None:
    # units (P, P), (F, F), (P, —), (F, P), (P, P); the single rating is dropped.
    # Coincidences: o_PP = 2·2 = 4, o_FF = 2, o_PF = o_FP = 1; n_P = 5, n_F = 3, n = 8.
    # α = 1 − (n − 1)·(o_PF + o_FP) / (2·n_P·n_F) = 1 − 7·2/30 = 0.533333
    units = [["P", "P"], ["F", "F"], ["P", None], ["F", "P"], ["P", "P"]]
    assert krippendorff_alpha(units) == pytest.approx(1 - 14 / 30, abs=1e-12)


def test_krippendorff_alpha_matches_the_krippendorff_package() -> None:
    np = pytest.importorskip("numpy")
    krippendorff = pytest.importorskip("krippendorff")
    rng = random.Random(5)
    by_observer: list[list[int | None]] = [[] for _ in range(4)]
    for _unit in range(60):
        truth = rng.randrange(1, 6)
        for row in by_observer:
            value = truth if rng.random() < 0.5 else rng.randrange(1, 6)
            row.append(None if rng.random() < 0.2 else value)
    data = np.array([[np.nan if v is None else v for v in row] for row in by_observer], float)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        ours = krippendorff_alpha(_units(by_observer), level=level)
        assert ours == pytest.approx(expected, abs=1e-9), level


def test_krippendorff_alpha_refusals() -> None:
    with pytest.raises(StatisticsError, match="level must be one of"):
        krippendorff_alpha([[1, 2]], level="nominl")
    with pytest.raises(StatisticsError, match="interval ratings must be numbers"):
        krippendorff_alpha([["P", "F"]], level="interval")
    with pytest.raises(StatisticsError, match="must not be negative"):
        krippendorff_alpha([[1, -2]], level="ratio")
    with pytest.raises(StatisticsError, match="at least one case with 2 ratings"):
        krippendorff_alpha([[1, None], [None, 2]])
    with pytest.raises(UndefinedStatisticError):
        krippendorff_alpha([[1, 1], [1, 1, 1]])


ratings = st.lists(
    st.lists(st.one_of(st.none(), st.sampled_from("abc")), min_size=2, max_size=4),
    min_size=1,
    max_size=15,
)


@settings(max_examples=100, deadline=None)
@given(ratings, st.randoms(use_true_random=False))
def test_alpha_ignores_rater_order_and_label_names(
    units: list[list[str | None]], rng: random.Random
) -> None:
    try:
        alpha = krippendorff_alpha(units)
    except (UndefinedStatisticError, StatisticsError):
        return
    shuffled = [rng.sample(unit, len(unit)) for unit in rng.sample(units, len(units))]
    rename: dict[Hashable, Hashable] = {"a": 10, "b": 20, "c": 30}
    renamed = [[None if v is None else rename[v] for v in unit] for unit in units]
    assert krippendorff_alpha(shuffled) == pytest.approx(alpha, abs=1e-9)
    assert krippendorff_alpha(renamed) == pytest.approx(alpha, abs=1e-9)
    assert alpha <= 1.0


# ------------------------------------------------------------------ pairwise kappas


def test_pairwise_kappas_by_hand() -> None:
    pairs = pairwise_kappas(
        {
            "ann": ["PASS", "FAIL", "PASS", "FAIL"],
            "bob": ["PASS", "FAIL", "FAIL", None],
            "cy": {0: "PASS", 1: "FAIL", 3: "FAIL"},
            "dee": {0: "PASS"},
        }
    )
    by_pair = {(p.rater_a, p.rater_b): p for p in pairs}
    assert list(by_pair)[:3] == [("ann", "bob"), ("ann", "cy"), ("ann", "dee")]
    # ann vs bob on cases 0-2: p_o = 2/3, PASS shares 2/3 and 1/3, p_e = 4/9,
    # κ = (2/3 − 4/9)/(5/9) = 0.4
    assert by_pair["ann", "bob"] == PairKappa("ann", "bob", 3, pytest.approx(0.4, abs=1e-12))
    assert by_pair["ann", "cy"].kappa == 1.0 and by_pair["ann", "cy"].n == 3
    assert by_pair["bob", "cy"].n == 2  # cases 0 and 1
    assert by_pair["ann", "dee"] == PairKappa("ann", "dee", 1, None)  # one shared case
    assert by_pair["bob", "cy"].kappa == cohen_kappa(["PASS", "FAIL"], ["PASS", "FAIL"])
    assert json.loads(json.dumps(by_pair["ann", "dee"].to_dict()))["kappa"] is None
    assert str(by_pair["ann", "dee"]) == "ann vs dee: kappa = undefined (n = 1)"


def test_pairwise_kappas_refusals() -> None:
    with pytest.raises(StatisticsError, match="at least 2 raters"):
        pairwise_kappas({"ann": ["PASS"]})
    with pytest.raises(StatisticsError, match="lengths"):
        pairwise_kappas({"ann": ["PASS", "FAIL"], "bob": ["PASS"]})
    with pytest.raises(StatisticsError, match="rater 'bob'"):
        pairwise_kappas({"ann": ["PASS", "FAIL"], "bob": "PF"})


# ------------------------------------------------------------------ planning with a judge

JUDGE = {"sensitivity": 0.95, "specificity": 0.80}


def test_sample_size_with_a_judge_by_hand() -> None:
    # observed 0.875 → 0.8375, mean 0.85625:
    # sqrt(2·0.85625·0.14375) = 0.496158; sqrt(0.875·0.125 + 0.8375·0.1625) = 0.495448
    # (1.959964·0.496158 + 0.841621·0.495448)² / 0.0375² = 1.389431² / 0.00140625 = 1372.8 → 1373
    assert sample_size(0.90, 0.85, **JUDGE) == 1373
    # the default is unchanged, and a perfect judge is no judge at all
    assert sample_size(0.90, 0.85) == 686
    assert sample_size(0.90, 0.80) == 199
    assert sample_size(0.90, 0.85, sensitivity=1.0, specificity=1.0) == 686


def test_power_with_a_judge_by_hand() -> None:
    # z = (0.0375·sqrt(686) − 1.959964·0.496158) / 0.495448 = (0.982185 − 0.972452) / 0.495448
    #   = 0.019645 → Φ(z) = 0.50784
    assert power(0.90, 0.85, 686, **JUDGE) == pytest.approx(0.50784, abs=5e-5)
    assert power(0.90, 0.85, 686) == power(0.90, 0.85, 686, sensitivity=1, specificity=1)


def test_detectable_difference_with_a_judge_is_the_observed_one_scaled_back() -> None:
    # the judge sees 90% as 87.5% and a true drop d as 0.75·d, so the smallest true drop is
    # the smallest observed drop from 87.5% divided by 0.75
    seen = detectable_difference(0.875, 686)
    assert detectable_difference(0.90, 686, **JUDGE) == pytest.approx(seen / 0.75, rel=1e-9)
    assert detectable_difference(0.90, 686) == detectable_difference(
        0.90, 686, sensitivity=1.0, specificity=1.0
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sensitivity": 0.9}, "specificity is missing"),
        ({"specificity": 0.9}, "sensitivity is missing"),
        ({"sensitivity": 0.5, "specificity": 0.5}, "no better than chance"),
        ({"sensitivity": 0.0, "specificity": 0.9}, "above 0 and at most 1"),
        ({"sensitivity": 1.2, "specificity": 0.9}, "above 0 and at most 1"),
        ({"sensitivity": True, "specificity": 0.9}, "must be a number"),
    ],
)
def test_planning_refuses_a_bad_judge(kwargs: dict, message: str) -> None:
    for call in (
        lambda: sample_size(0.9, 0.85, **kwargs),
        lambda: power(0.9, 0.85, 100, **kwargs),
        lambda: detectable_difference(0.9, 100, **kwargs),
    ):
        with pytest.raises(StatisticsError, match=message):
            call()
