"""A judge's pass rate corrected with its calibration: figures worked by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyeval.calibration import CalibrationError, calibrate, calibrate_results, load_calibration
from tinyeval.estimates.corrected import corrected_rate_for
from tinyeval.estimates.ppi import corrected_pass_rate
from tinyeval.stats import UndefinedStatisticError

P, F = "PASS", "FAIL"


def result_row(case_id: str, verdict: str) -> dict:
    return {
        "id": case_id,
        "category": "default",
        "output": f"answer {case_id}",
        "judges": {"judge": {"verdict": verdict}},
        "judge_model": "builtin",
        "rubric_fingerprint": "rubric-1",
    }


def label_record(case_id: str, label: object) -> dict:
    return {"id": case_id, "label": label, "labeler": "ana", "at": "2026-01-01T00:00:00Z"}


def test_corrected_rate_by_hand() -> None:
    # (p_obs + spec − 1)/(sens + spec − 1) = (0.70 + 0.80 − 1)/(0.90 + 0.80 − 1) = 0.50/0.70
    c = corrected_pass_rate(70, 100, 0.9, 0.8)
    assert c.rate == pytest.approx(5 / 7)
    assert not c.clipped
    assert c.low < 5 / 7 < c.high
    # 95/100: (0.95 + 0.80 − 1)/0.70 = 1.071 → clipped to 1
    high = corrected_pass_rate(95, 100, 0.9, 0.8)
    assert high.rate == 1.0 and high.clipped
    assert any("clipped" in w for w in high.warnings)
    # 10/100: (0.10 + 0.80 − 1)/0.70 < 0 → clipped to 0
    assert corrected_pass_rate(10, 100, 0.9, 0.8).rate == 0.0
    # a perfect judge changes nothing: (p + 1 − 1)/(1 + 1 − 1) = p
    assert corrected_pass_rate(37, 100, 1.0, 1.0).rate == pytest.approx(0.37)


@pytest.mark.parametrize(("sens", "spec"), [(0.6, 0.4), (0.5, 0.5), (0.2, 0.3)])
def test_correction_is_undefined_for_a_judge_no_better_than_chance(
    sens: float, spec: float
) -> None:
    with pytest.raises(UndefinedStatisticError, match="sensitivity \\+ specificity <= 1"):
        corrected_pass_rate(50, 100, sens, spec)


def test_interval_carries_the_calibrations_uncertainty() -> None:
    # Delta method for c = (p + sp − 1)/Y with Y = se + sp − 1 (p = 0.7 of 1000,
    # se = 90/100, sp = 40/50, so c = 5/7 and Y = 0.7):
    # Var c ≈ [p(1−p)/1000 + c²·se(1−se)/100 + (1−c)²·sp(1−sp)/50] / Y²
    p, se, sp = 0.7, 0.9, 0.8
    y = se + sp - 1
    c = (p + sp - 1) / y
    var = (
        p * (1 - p) / 1000 + c**2 * se * (1 - se) / 100 + (1 - c) ** 2 * sp * (1 - sp) / 50
    ) / y**2
    delta_half_width = 1.959964 * math.sqrt(var)  # 0.0854
    counted = corrected_pass_rate(700, 1000, (90, 100), (40, 50))
    half_width = (counted.high - counted.low) / 2
    assert 0.8 < half_width / delta_half_width < 1.2
    # taking sensitivity and specificity as exact leaves only p's share: 0.0406
    exact = corrected_pass_rate(700, 1000, 0.9, 0.8)
    assert (exact.high - exact.low) / 2 < 0.6 * half_width
    assert "sensitivity 90/100" in counted.method and "taken as exact" in exact.method


def test_bootstrap_is_seeded() -> None:
    first = corrected_pass_rate(70, 100, (45, 50), (40, 50), seed=3)
    again = corrected_pass_rate(70, 100, (45, 50), (40, 50), seed=3)
    other = corrected_pass_rate(70, 100, (45, 50), (40, 50), seed=4)
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)


def test_a_calibration_that_cannot_rule_out_chance_gives_the_whole_interval() -> None:
    # 3/5 and 3/5: sens + spec = 1.2, but many draws fall to ≤ 1
    c = corrected_pass_rate(7, 10, (3, 5), (3, 5))
    assert c.undefined_draws > 0.05 * c.draws
    assert (c.low, c.high) == (0.0, 1.0)
    assert any("no better than chance" in w for w in c.warnings)


@settings(max_examples=40, deadline=None)
@given(
    true_rate=st.floats(0.05, 0.95),
    sens=st.floats(0.6, 1.0),
    spec=st.floats(0.6, 1.0),
)
def test_correction_inverts_the_judges_errors(true_rate: float, sens: float, spec: float) -> None:
    # The judge passes a true PASS with probability sens and a true FAIL with 1 − spec,
    # so it observes p = π·sens + (1 − π)(1 − spec); the correction must give back π.
    n = 1_000_000
    observed = round((true_rate * sens + (1 - true_rate) * (1 - spec)) * n)
    c = corrected_pass_rate(observed, n, sens, spec, draws=100)
    assert c.rate == pytest.approx(true_rate, abs=1e-5 / (sens + spec - 1))


def test_corrected_rate_for_uses_a_category_only_with_enough_labels() -> None:
    # category "big": 30 labels (20 PASS, 10 FAIL); the judge misses 5 of its FAILs.
    # category "small": 10 labels, judge perfect. Overall: 40 labels.
    judge = [P] * 20 + [F] * 5 + [P] * 5 + [P] * 5 + [F] * 5
    human = [P] * 20 + [F] * 10 + [P] * 5 + [F] * 5
    cats = ["big"] * 30 + ["small"] * 10
    cal = calibrate(judge, human, categories=cats)
    assert cal.correctable_categories() == ["big"]
    big = corrected_rate_for(cal, 60, 100, category="big")
    # big: sens 20/20 = 1, spec 5/10 = 0.5 → (0.6 + 0.5 − 1)/(1 + 0.5 − 1) = 0.2
    assert big.scope == "big" and big.rate == pytest.approx(0.2)
    small = corrected_rate_for(cal, 60, 100, category="small")
    # overall: sens 25/25 = 1, spec 10/15 → (0.6 + 2/3 − 1)/(2/3) = 0.4
    assert small.scope == "overall" and small.rate == pytest.approx(0.4)
    assert set(big.to_dict()) >= {"rate", "low", "high", "method", "scope", "warnings"}


def test_corrected_rate_for_flags_another_judge_and_refuses_what_it_cannot_do() -> None:
    cal = calibrate_results(
        [result_row(str(i), P if i % 2 else F) for i in range(60)],
        {str(i): label_record(str(i), P if i % 2 else F) for i in range(60)},
    )
    assert cal.trusted
    fine = corrected_rate_for(cal, 50, 100, judge_model="builtin", rubric_fingerprint="rubric-1")
    assert fine.warnings == ()
    moved = corrected_rate_for(cal, 50, 100, judge_model="openai:gpt-x")
    assert any(w.startswith("CALIBRATION EXPIRED") for w in moved.warnings)
    with pytest.raises(CalibrationError, match="multiclass"):
        corrected_rate_for(calibrate(["A", "B"], ["A", "B"]), 1, 2)
    with pytest.raises(CalibrationError, match="labelled FAIL"):
        corrected_rate_for(calibrate([P, P], [P, P]), 1, 2)


def test_a_loaded_calibration_corrects_as_the_saved_one(tmp_path: Path) -> None:
    cal = calibrate([P] * 45 + [F] * 5 + [F] * 40 + [P] * 10, [P] * 50 + [F] * 50)
    cal.save(tmp_path / "cal.json")
    loaded = load_calibration(tmp_path / "cal.json")
    assert corrected_rate_for(loaded, 40, 50) == corrected_rate_for(cal, 40, 50)
