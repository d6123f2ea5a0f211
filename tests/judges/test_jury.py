"""Tests for tinyeval.judges.jury: the panel's verdict, jurors against labels, Dawid-Skene.

Expected values are worked by hand from scripted jurors (the arithmetic in
comments), checked against numpy (phi as a Pearson correlation) and against
crowd-kit's Dawid-Skene when installed. Simulations use a fixed seed and a
stated tolerance.
"""

from __future__ import annotations

import json
import math
import random

import pytest

import tinyeval.judges.jury as jury_module
from tinyeval.errors import InputError
from tinyeval.judges.jury import (
    dawid_skene,
    juror_agreement,
    jury_verdict,
    shared_family,
)
from tinyeval.stats import StatisticsError, UndefinedStatisticError, wilson_interval


def test_all_lists_public_names_that_exist() -> None:
    for name in jury_module.__all__:
        assert not name.startswith("_")
        assert hasattr(jury_module, name)


# ------------------------------------------------------------------ one case


@pytest.mark.parametrize(
    ("verdicts", "expected", "unanimous"),
    [
        (["PASS"], "PASS", True),
        (["FAIL", "FAIL", "FAIL"], "FAIL", True),
        (["PASS", "FAIL", "PASS"], "PASS", False),
        (["FAIL", "PASS", "FAIL", "PASS", "FAIL"], "FAIL", False),
        # unparsed replies: a strict majority of the whole panel is still needed
        (["PASS", None, "PASS"], "PASS", False),
        (["PASS", None, "FAIL"], None, False),  # parsed verdicts even: no verdict
        (["PASS", None, None], None, False),  # one PASS is not a majority of three
        ([None], None, False),
        (["PASS", "PASS", None, None, "FAIL"], None, False),
        (["pass", " Fail ", True], "PASS", False),  # any case, and booleans
    ],
)
def test_jury_verdict(verdicts: list[object], expected: str | None, unanimous: bool) -> None:
    verdict = jury_verdict(verdicts)  # type: ignore[arg-type]
    assert verdict.verdict == expected
    assert verdict.unanimous is unanimous
    assert verdict.needs_review is not unanimous
    assert verdict.jurors == len(verdicts)
    assert verdict.passes + verdict.fails + verdict.unparsed == len(verdicts)


def test_jury_verdict_refuses_an_even_panel_and_unknown_labels() -> None:
    with pytest.raises(InputError, match=r"odd number of jurors .*got 4"):
        jury_verdict(["PASS", "PASS", "FAIL", "FAIL"])
    with pytest.raises(InputError, match="got 0"):
        jury_verdict([])
    with pytest.raises(InputError, match=r"juror 1: a verdict is 'PASS', 'FAIL'.*got 'maybe'"):
        jury_verdict(["PASS", "maybe", "FAIL"])


def test_jury_verdict_to_dict() -> None:
    data = jury_verdict(["PASS", None, "FAIL"]).to_dict()
    assert data == {
        "verdict": None,
        "passes": 1,
        "fails": 1,
        "unparsed": 1,
        "jurors": 3,
        "unanimous": False,
        "needs_review": True,
    }


# ------------------------------------------------------------------ three scripted judges

# 40 cases: the human labels cases 0-19 FAIL and 20-39 PASS.
HUMAN = ["FAIL"] * 20 + ["PASS"] * 20


def scripted(misses: set[int], false_alarms: set[int], unparsed: set[int] = frozenset()):  # type: ignore[assignment]
    """A judge right everywhere but where scripted to miss, raise a false alarm, or not parse."""
    verdicts: list[str | None] = []
    for i, truth in enumerate(HUMAN):
        if i in unparsed:
            verdicts.append(None)
        elif i in misses:
            verdicts.append("PASS")
        elif i in false_alarms:
            verdicts.append("FAIL")
        else:
            verdicts.append(truth)
    return verdicts


JURORS = {
    "a": scripted(misses={0, 1, 2, 3}, false_alarms={20, 21}),
    "b": scripted(misses={2, 3, 4, 5, 6, 7}, false_alarms={20, 30, 31}, unparsed={39}),
    "c": scripted(misses={10, 11}, false_alarms={25, 26, 27, 28}),
}


def test_per_juror_recall_and_false_alarms_by_hand() -> None:
    report = juror_agreement(JURORS, HUMAN)
    a, b, c = report.jurors
    # a: misses 4 of 20 failures → recall 16/20; 2 false alarms of 20 passes
    assert (a.failure_recall.successes, a.failure_recall.n) == (16, 20)
    assert (a.false_alarm_rate.successes, a.false_alarm_rate.n) == (2, 20)
    # b: misses 6 → 14/20; 3 false alarms over the 19 passes it parsed (39 did not parse)
    assert (b.failure_recall.successes, b.failure_recall.n) == (14, 20)
    assert (b.false_alarm_rate.successes, b.false_alarm_rate.n) == (3, 19)
    assert b.unparsed == 1 and a.unparsed == 0
    # c: misses 2 → 18/20; 4 false alarms of 20
    assert (c.failure_recall.successes, c.failure_recall.n) == (18, 20)
    assert (c.false_alarm_rate.successes, c.false_alarm_rate.n) == (4, 20)
    # each rate carries its Wilson interval
    assert a.failure_recall[2:] == pytest.approx(wilson_interval(16, 20))
    assert b.false_alarm_rate[2:] == pytest.approx(wilson_interval(3, 19))


def test_the_jury_by_hand() -> None:
    report = juror_agreement(JURORS, HUMAN)
    # majority misses a failure only where two jurors miss it: cases 2 and 3 (a and b)
    # → recall 18/20; a false alarm only where two raise it: case 20 (a and b) → 1/20.
    # Case 39 (b unparsed, a and c PASS) is still a PASS: 2 of 3 jurors.
    assert report.jury is not None
    assert (report.jury.failure_recall.successes, report.jury.failure_recall.n) == (18, 20)
    assert (report.jury.false_alarm_rate.successes, report.jury.false_alarm_rate.n) == (1, 20)
    assert report.jury.unparsed == 0
    # unanimous: every case where no juror erred or failed to parse
    # errors or unparsed on {0..7, 10, 11, 20, 21, 25..28, 30, 31, 39}: 19 cases → 21 unanimous
    assert report.unanimous == 21
    assert report.labelled == 40 and report.n == 40


def test_error_correlation_by_hand() -> None:
    report = juror_agreement(JURORS, HUMAN)
    ab, ac, bc = report.pairs
    assert (ab.a, ab.b) == ("a", "b")
    # a and b over the 39 cases both parsed: a wrong on {0,1,2,3,20,21}, b on
    # {2,3,4,5,6,7,20,30,31}; both on {2,3,20} = 3, a only 3, b only 6, neither 27
    assert (ab.errors_n, ab.errors_a, ab.errors_b, ab.both_wrong) == (39, 6, 9, 3)
    expected = (3 * 27 - 3 * 6) / math.sqrt((3 + 3) * (6 + 27) * (3 + 6) * (3 + 27))
    assert ab.error_phi == pytest.approx(expected, rel=1e-12)  # 0.2725
    # a and c never err on the same case: 6 and 6 errors, none shared, 28 neither
    assert (ac.errors_n, ac.both_wrong) == (40, 0)
    assert ac.error_phi == pytest.approx((0 * 28 - 6 * 6) / math.sqrt(6 * 34 * 6 * 34))
    assert bc.n == 39 and ab.n == 39 and ac.n == 40
    assert report.warnings == ()


def test_error_phi_is_the_pearson_correlation_of_the_error_indicators() -> None:
    np = pytest.importorskip("numpy")
    report = juror_agreement(JURORS, HUMAN)
    errors = {
        name: [v != h for v, h in zip(labels, HUMAN, strict=True)]
        for name, labels in JURORS.items()
    }
    keep = [i for i in range(40) if JURORS["b"][i] is not None]
    for pair in report.pairs:
        x = np.array([errors[pair.a][i] for i in keep], dtype=float)
        y = np.array([errors[pair.b][i] for i in keep], dtype=float)
        if pair.n == 40:  # a ~ c: every case
            x = np.array(errors[pair.a], dtype=float)
            y = np.array(errors[pair.b], dtype=float)
        assert pair.error_phi == pytest.approx(float(np.corrcoef(x, y)[0, 1]), rel=1e-9)


def test_jurors_that_fail_together_are_named() -> None:
    copy = list(JURORS["a"])
    report = juror_agreement({"a": JURORS["a"], "a-again": copy, "c": JURORS["c"]}, HUMAN)
    assert report.pairs[0].error_phi == pytest.approx(1.0)
    assert len(report.warnings) == 1
    assert (
        "a and a-again fail on the same cases (error phi 1.00 over 40 cases)"
        in (report.warnings[0])
    )


def test_error_phi_is_none_when_a_juror_never_errs() -> None:
    perfect = list(HUMAN)
    report = juror_agreement({"perfect": perfect, "a": JURORS["a"]}, HUMAN)
    assert report.pairs[0].error_phi is None
    assert report.jury is None  # two jurors: no majority
    assert "phi n/a" in str(report)


def test_without_labels_only_agreement() -> None:
    report = juror_agreement(JURORS)
    assert report.labelled is None and report.jury is None
    assert all(j.failure_recall is None and j.false_alarm_rate is None for j in report.jurors)
    ab = report.pairs[0]
    assert ab.errors_n is None and ab.error_phi is None
    # a and b agree on the 39 cases both parsed except where exactly one of them errs:
    # a only {0, 1, 21}, b only {4, 5, 6, 7, 30, 31} → 39 − 9 = 30
    assert ab.agreed == 30
    # kappa by hand over those 39 cases: a says FAIL on 20 − 4 + 2 = 18 and PASS on 21;
    # b says FAIL on 20 − 6 + 3 = 17 and PASS on 22.
    # p_o = 30/39; p_e = (18·17 + 21·22)/39² = (306 + 462)/1521 = 768/1521
    p_o, p_e = 30 / 39, 768 / 1521
    assert ab.kappa == pytest.approx((p_o - p_e) / (1 - p_e), rel=1e-12)
    assert "a ~ b: agree 30/39" in str(report)


def test_agreement_output_is_json() -> None:
    data = json.loads(json.dumps(juror_agreement(JURORS, HUMAN).to_dict()))
    assert data["jurors"][0]["failure_recall"]["text"] == "16/20 = 80.0% [58.4%, 91.9%]"
    assert data["jury"]["juror"] == "jury"
    assert data["pairs"][0]["errors_n"] == 39
    text = str(juror_agreement(JURORS, HUMAN))
    assert "a: failure recall 16/20 = 80.0%" in text
    assert "jury: failure recall 18/20 = 90.0%" in text


def test_agreement_refuses_mismatched_input() -> None:
    with pytest.raises(InputError, match="needs at least one juror"):
        juror_agreement({})
    with pytest.raises(InputError, match="'a' has 2, 'b' has 1"):
        juror_agreement({"a": ["PASS", "FAIL"], "b": ["PASS"]})
    with pytest.raises(InputError, match="2 cases, 3 labels"):
        juror_agreement({"a": ["PASS", "FAIL"]}, ["PASS", "FAIL", "PASS"])
    with pytest.raises(InputError, match="human label, case 0"):
        juror_agreement({"a": ["PASS"]}, ["good"])


# ------------------------------------------------------------------ Dawid-Skene

RATES = {  # (sensitivity, specificity) of five simulated jurors
    "a": (0.95, 0.80),
    "b": (0.85, 0.90),
    "c": (0.90, 0.70),
    "d": (0.80, 0.85),
    "e": (0.90, 0.90),
}


def simulate(
    seed: int, cases: int = 1000, prevalence: float = 0.7, missing: float = 0.1
) -> tuple[dict[str, bool], dict[str, dict[str, bool]]]:
    """True verdicts and each juror's verdicts; ``missing`` of the verdicts are left out."""
    rng = random.Random(seed)
    truth = {f"case{i:04d}": rng.random() < prevalence for i in range(cases)}
    votes: dict[str, dict[str, bool]] = {}
    for case, passed in truth.items():
        votes[case] = {}
        for juror, (sens, spec) in RATES.items():
            verdict = rng.random() < sens if passed else rng.random() > spec
            if rng.random() >= missing:
                votes[case][juror] = verdict
    return truth, votes


def test_dawid_skene_recovers_the_error_rates() -> None:
    # 1000 cases (about 700 passing, 300 failing), 10% of verdicts missing. Tolerances:
    # 0.06 against the simulated rates (a specificity from ~270 failing verdicts has a
    # standard error of about 0.025) and 0.03 against each juror's realised rates in this
    # very sample, which removes the simulation's own noise; 0.02 on the pass rate.
    truth, votes = simulate(seed=20261201)
    estimate = dawid_skene(votes)
    assert estimate.converged and estimate.warnings == ()
    assert estimate.prevalence == pytest.approx(sum(truth.values()) / len(truth), abs=0.02)
    for juror in estimate.jurors:
        sens, spec = RATES[juror.juror]
        said = [(votes[c][juror.juror], truth[c]) for c in truth if juror.juror in votes[c]]
        realised_sens = sum(v for v, t in said if t) / sum(t for _, t in said)
        realised_spec = sum(not v for v, t in said if not t) / sum(not t for _, t in said)
        assert juror.sensitivity == pytest.approx(sens, abs=0.06)
        assert juror.specificity == pytest.approx(spec, abs=0.06)
        assert juror.sensitivity == pytest.approx(realised_sens, abs=0.03)
        assert juror.specificity == pytest.approx(realised_spec, abs=0.03)
        assert juror.verdicts == len(said)
        assert juror.failure_recall == juror.specificity
        assert juror.false_alarm_rate == pytest.approx(1 - juror.sensitivity)
    # the posteriors sort the cases: most cases' most likely verdict is the true one
    right = sum((estimate.posteriors[c] >= 0.5) == truth[c] for c in truth)
    assert right / len(truth) > 0.95


@pytest.mark.filterwarnings("ignore::Warning:crowdkit")
def test_dawid_skene_matches_crowd_kit() -> None:
    pd = pytest.importorskip("pandas")
    aggregation = pytest.importorskip("crowdkit.aggregation")
    _, votes = simulate(seed=3, cases=300)
    rows = [
        (case, juror, "PASS" if verdict else "FAIL")
        for case, panel in votes.items()
        for juror, verdict in panel.items()
    ]
    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    # crowd-kit stops on a small change of its evidence bound, which can come after two
    # rounds; a tolerance of -inf makes it run all its rounds, and on this sample 50
    # reach the fixed point (tinyeval needs 48 to move less than 1e-13)
    reference = aggregation.DawidSkene(n_iter=50, tol=-math.inf).fit(data)
    estimate = dawid_skene(votes, tol=1e-13, max_iter=5000)
    assert estimate.converged
    errors = reference.errors_
    for juror in estimate.jurors:
        sensitivity = errors.loc[(juror.juror, "PASS"), "PASS"]
        specificity = errors.loc[(juror.juror, "FAIL"), "FAIL"]
        assert juror.sensitivity == pytest.approx(sensitivity, abs=1e-8)
        assert juror.specificity == pytest.approx(specificity, abs=1e-8)
    assert estimate.prevalence == pytest.approx(reference.priors_["PASS"], abs=1e-8)
    probas = reference.probas_
    for case in votes:
        assert estimate.posteriors[case] == pytest.approx(probas.loc[case, "PASS"], abs=1e-7)


def test_dawid_skene_seed_only_breaks_ties_at_the_start() -> None:
    # with four jurors many cases start tied; different seeds start differently and end
    # at the same estimate
    rng = random.Random(3)
    votes = {}
    for i in range(300):
        passed = rng.random() < 0.6
        votes[str(i)] = {
            j: (rng.random() < s if passed else rng.random() > p)
            for j, (s, p) in list(RATES.items())[:4]
        }
    first = dawid_skene(votes, seed=1, tol=1e-12)
    second = dawid_skene(votes, seed=2, tol=1e-12)
    for x, y in zip(first.jurors, second.jurors, strict=True):
        assert x.sensitivity == pytest.approx(y.sensitivity, abs=1e-6)
        assert x.specificity == pytest.approx(y.specificity, abs=1e-6)


def test_dawid_skene_names_a_juror_worse_than_chance() -> None:
    rng = random.Random(11)
    votes = {}
    for i in range(400):
        passed = rng.random() < 0.7
        panel = {
            j: (rng.random() < s if passed else rng.random() > p) for j, (s, p) in RATES.items()
        }
        panel["contrarian"] = not passed if rng.random() < 0.8 else passed
        votes[str(i)] = panel
    estimate = dawid_skene(votes)
    contrarian = next(j for j in estimate.jurors if j.juror == "contrarian")
    assert contrarian.sensitivity + contrarian.specificity < 1
    assert any("contrarian is estimated no better than chance" in w for w in estimate.warnings)


def test_dawid_skene_leaves_out_cases_without_a_verdict_and_reports_non_convergence() -> None:
    _, votes = simulate(seed=5, cases=100)
    votes["silent"] = {"a": None, "b": None}
    votes["empty"] = {}
    estimate = dawid_skene(votes, max_iter=1)
    assert estimate.unjudged == ("silent", "empty")
    assert "silent" not in estimate.posteriors and len(estimate.posteriors) == 100
    assert not estimate.converged and estimate.iterations == 1
    assert any("did not converge in 1 iteration" in w for w in estimate.warnings)
    text = str(estimate)
    assert "NOT converged" in text and "left out: 2 cases with no parsed verdict" in text
    data = json.loads(json.dumps(estimate.to_dict()))
    assert data["model"] == "dawid-skene" and data["unjudged"] == ["silent", "empty"]


def test_dawid_skene_refuses_what_it_cannot_estimate() -> None:
    with pytest.raises(UndefinedStatisticError, match=r"at least three jurors .*got 2"):
        dawid_skene({"x": {"a": "PASS", "b": "FAIL"}, "y": {"a": "PASS", "c": None}})
    with pytest.raises(UndefinedStatisticError, match="got 0"):
        dawid_skene({})
    with pytest.raises(InputError, match="case 'x', juror 'a'"):
        dawid_skene({"x": {"a": "yes"}})
    with pytest.raises(StatisticsError, match="max_iter must be a whole number >= 1"):
        dawid_skene({}, max_iter=0)
    with pytest.raises(StatisticsError, match="tol must be a positive number"):
        dawid_skene({}, tol=0)


# ------------------------------------------------------------------ who the jurors are


@pytest.mark.parametrize(
    ("models", "family"),
    [
        (["openai:gpt-4o-mini", "openai:gpt-4.1", "openai:gpt-5"], "gpt"),
        (["openai:meta-llama/Llama-3.1-8B", "openai:llama-3.3-70b"], "llama"),
        (["anthropic:claude-3-5-haiku", "anthropic:claude-sonnet-4"], "claude"),
        (["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku"], None),
        (["openai:gpt-4o-mini", "openai:Qwen2.5-7B-Instruct"], None),
        (["builtin", "builtin"], "builtin"),
        (["cmd:judge.sh", "cmd:other.sh"], None),
        (["openai:gpt-4o"], None),  # one juror is not a jury
    ],
)
def test_shared_family(models: list[str], family: str | None) -> None:
    assert shared_family(models) == family
