"""The statistics said in one sentence (tinyeval stats), against figures worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import pytest

from tinyeval.calibration import calibrate
from tinyeval.cli.statistics import (
    Sentence,
    detectable_sentence,
    judge_rates_from_calibration,
    mcnemar_sentence,
    power_sentence,
    sample_size_sentence,
    wilson_sentence,
)
from tinyeval.errors import InputError
from tinyeval.stats import StatisticsError

Z = NormalDist().inv_cdf
PHI = NormalDist().cdf


def wilson_by_hand(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z·sqrt(p(1 − p)/n + z²/4n²)) / (1 + z²/n)."""
    z = Z((1 + confidence) / 2)
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def fleiss_n(p1: float, p2: float, alpha: float = 0.05, power: float = 0.80) -> float:
    """Fleiss (1981) eq. 3.14, unrounded: per-arm n for a two-sided two-proportion z-test."""
    mean = (p1 + p2) / 2
    root = Z(1 - alpha / 2) * math.sqrt(2 * mean * (1 - mean)) + Z(power) * math.sqrt(
        p1 * (1 - p1) + p2 * (1 - p2)
    )
    return (root / (p1 - p2)) ** 2


def power_by_hand(p1: float, p2: float, n: int, alpha: float = 0.05) -> float:
    """The same test solved for power: Φ((|p1 − p2|·√n − z₁₋α/₂·√(2p̄q̄)) / √(p1q1 + p2q2))."""
    mean = (p1 + p2) / 2
    z = (abs(p1 - p2) * math.sqrt(n) - Z(1 - alpha / 2) * math.sqrt(2 * mean * (1 - mean))) / (
        math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    )
    return PHI(z)


def seen(rate: float, se: float, sp: float) -> float:
    """What a judge reports for a true pass rate: se·p + (1 − sp)·(1 − p)."""
    return se * rate + (1 - sp) * (1 - rate)


# ------------------------------------------------------------------ the result type


def test_a_sentence_is_its_text_and_its_json_is_the_fields_plus_the_text() -> None:
    said = Sentence("3 of 4.", {"statistic": "count", "k": 3})
    assert str(said) == "3 of 4."
    assert said.to_dict() == {"statistic": "count", "k": 3, "sentence": "3 of 4."}
    assert "sentence" not in said.fields  # to_dict builds a new object
    with pytest.raises(AttributeError):
        said.text = "other"  # type: ignore[misc]


# ------------------------------------------------------------------ wilson


def test_wilson_sentence_matches_the_interval_worked_by_hand() -> None:
    said = wilson_sentence(27, 30)
    low, high = wilson_by_hand(27, 30)
    assert (round(low, 3), round(high, 3)) == (0.744, 0.965)
    assert str(said) == f"27/30 = 90.0%; 95% Wilson interval {low:.1%}–{high:.1%}."
    assert said.fields["low"] == pytest.approx(low) and said.fields["high"] == pytest.approx(high)
    assert said.fields["rate"] == 0.9 and said.fields["statistic"] == "wilson"
    json.dumps(said.to_dict())  # plain JSON values


def test_wilson_sentence_for_no_passes_has_the_closed_form_upper_bound() -> None:
    # for 0/n the Wilson upper bound is z² / (n + z²): 3.8415 / 23.8415 = 0.1611 for n = 20
    z2 = Z(0.975) ** 2
    assert z2 / (20 + z2) == pytest.approx(0.1611, abs=1e-4)
    assert str(wilson_sentence(0, 20)) == "0/20 = 0.0%; 95% Wilson interval 0.0%–16.1%."


def test_wilson_sentence_says_the_confidence_as_typed() -> None:
    low, high = wilson_by_hand(17, 20, 0.875)
    said = wilson_sentence(17, 20, confidence=0.875)
    assert str(said) == f"17/20 = 85.0%; 87.5% Wilson interval {low:.1%}–{high:.1%}."


# ------------------------------------------------------------------ planning


def test_sample_size_sentence_is_fleiss_rounded_up() -> None:
    assert math.ceil(fleiss_n(0.90, 0.85)) == 686
    said = sample_size_sentence(0.90, 0.85)
    assert str(said) == (
        "To detect a drop from 90% to 85% with 80% power at α = 0.05 you need 686 cases per run."
        " Test: two-proportion z-test (runs on different cases)."
    )
    assert said.fields == {"statistic": "sample-size", "baseline": 0.90, "target": 0.85,
                           "alpha": 0.05, "continuity": False, "power": 0.80, "n": 686,
                           "test": "two-proportion z-test (runs on different cases)"}  # fmt: skip


def test_sample_size_sentence_with_a_rise_other_settings_and_the_continuity_correction() -> None:
    n = fleiss_n(0.80, 0.90, alpha=0.01, power=0.90)
    corrected = n / 4 * (1 + math.sqrt(1 + 4 / (n * 0.10))) ** 2  # Fleiss, Tytun and Ury (1980)
    said = sample_size_sentence(0.80, 0.90, alpha=0.01, power=0.90, continuity=True)
    assert str(said) == (
        "To detect a rise from 80% to 90% with 90% power at α = 0.01 you need "
        f"{math.ceil(corrected)} cases per run (with Fleiss' continuity correction)."
        " Test: two-proportion z-test (runs on different cases)."
    )


def test_sample_size_sentence_with_a_judge_says_the_shrink_and_its_cost() -> None:
    # 90% → 85% through a 0.95/0.80 judge is seen as 87.5% → 83.75%
    assert (seen(0.90, 0.95, 0.80), seen(0.85, 0.95, 0.80)) == pytest.approx((0.875, 0.8375))
    needed, perfect = math.ceil(fleiss_n(0.875, 0.8375)), math.ceil(fleiss_n(0.90, 0.85))
    said = sample_size_sentence(0.90, 0.85, sensitivity=0.95, specificity=0.80,
                                judge_source="cal.json")  # fmt: skip
    assert str(said) == (
        f"To detect a drop from 90% to 85% with 80% power at α = 0.05 you need {needed} cases "
        "per run: the judge (sensitivity 95%, specificity 80%) shrinks every true difference by "
        f"(sensitivity + specificity − 1) = 0.75, which costs {needed - perfect} cases more than "
        f"the {perfect} a perfect judge would need."
        " Test: two-proportion z-test (runs on different cases)."
    )
    assert (said.fields["n"], said.fields["n_perfect_judge"]) == (needed, perfect)
    assert said.fields["judge_source"] == "cal.json"
    assert said.fields["sensitivity"] == 0.95 and said.fields["specificity"] == 0.80


def test_power_sentence_matches_the_z_test_by_hand() -> None:
    chance = power_by_hand(0.90, 0.85, 200)
    said = power_sentence(0.90, 0.85, 200)
    assert str(said) == (
        f"With 200 cases per run, a drop from 90% to 85% is detected with {chance:.1%} power at "
        "α = 0.05; 80% power needs 686 cases per run."
        " Test: two-proportion z-test (runs on different cases)."
    )
    assert said.fields["power"] == pytest.approx(chance)
    assert said.fields["n_for_80_percent"] == 686
    assert "sensitivity" not in said.fields and "judge_source" not in said.fields


def test_power_sentence_with_a_judge_gives_the_perfect_judges_figures() -> None:
    said = power_sentence(0.90, 0.85, 686, sensitivity=0.95, specificity=0.80)
    judged = power_by_hand(0.875, 0.8375, 686)
    perfect = power_by_hand(0.90, 0.85, 686)
    needed, perfect_n = math.ceil(fleiss_n(0.875, 0.8375)), 686
    assert said.fields["power"] == pytest.approx(judged)
    assert said.fields["power_perfect_judge"] == pytest.approx(perfect)
    assert said.fields["n_for_80_percent_perfect_judge"] == perfect_n
    assert str(said).endswith(
        ". The judge (sensitivity 95%, specificity 80%) shrinks every true difference by "
        f"(sensitivity + specificity − 1) = 0.75: a perfect judge would detect it with "
        f"{perfect:.1%} power, and 80% power costs {needed - perfect_n} cases more than its 686."
        " Test: two-proportion z-test (runs on different cases)."
    )


def test_detectable_sentence_reports_the_drop_detected_with_the_planned_power() -> None:
    said = detectable_sentence(0.90, 40)
    drop = said.fields["drop"]
    assert power_by_hand(0.90, 0.90 - drop, 40) == pytest.approx(0.80, abs=1e-6)
    assert str(said) == (
        "With 40 cases per run and a 90% baseline, the smallest drop you can detect with 80% "
        f"power at α = 0.05 is to {0.90 - drop:.1%} ({drop * 100:.1f} points)."
        " Test: two-proportion z-test (runs on different cases)."
    )
    assert said.fields["target"] == pytest.approx(0.90 - drop)


def test_detectable_sentence_says_when_no_drop_is_detectable() -> None:
    # two cases per run: even 90% → 0% gives |d|·√n = 0.9·1.41 < z·√(2·0.45·0.55) + …
    assert power_by_hand(0.90, 1e-12, 2) < 0.80
    said = detectable_sentence(0.90, 2)
    assert said.fields["drop"] is None and said.fields["target"] is None
    assert " does not exist: not even a drop to 0% is detected reliably. Test: " in str(said)


def test_detectable_sentence_with_a_judge_prices_the_perfect_judges_drop() -> None:
    said = detectable_sentence(0.90, 500, sensitivity=5 / 6, specificity=1.0)
    drop, perfect = said.fields["drop"], said.fields["drop_perfect_judge"]
    # the judge's drop is detected on the rates it reports; the perfect judge's on the true ones
    assert power_by_hand(seen(0.9, 5 / 6, 1), seen(0.9 - drop, 5 / 6, 1), 500) == pytest.approx(
        0.80, abs=1e-6
    )
    assert power_by_hand(0.9, 0.9 - perfect, 500) == pytest.approx(0.80, abs=1e-6)
    through = math.ceil(fleiss_n(seen(0.9, 5 / 6, 1), seen(0.9 - perfect, 5 / 6, 1)) - 1e-9)
    assert said.fields["n_for_perfect_judge_drop"] == through
    assert f"takes {through} cases per run ({through - 500} more). Test: " in str(said)
    assert "(sensitivity 83.33%, specificity 100%)" in str(said)
    assert "(sensitivity + specificity − 1) = 0.833" in str(said)


def test_detectable_sentence_when_not_even_a_perfect_judge_detects_a_drop() -> None:
    said = detectable_sentence(0.90, 2, sensitivity=0.95, specificity=0.8)
    assert said.fields["drop"] is None and said.fields["drop_perfect_judge"] is None
    assert "; not even a perfect judge would detect a drop reliably here. Test: " in str(said)


def test_planning_refuses_what_the_statistics_refuse_without_naming_an_option() -> None:
    for make in (
        lambda: sample_size_sentence(0.9, 0.85, sensitivity=0.9),
        lambda: power_sentence(0.9, 0.85, 100, sensitivity=0.5, specificity=0.5),
        lambda: detectable_sentence(1.2, 100),
        lambda: sample_size_sentence(0.9, 0.9),
    ):
        with pytest.raises(StatisticsError) as caught:
            make()
        assert "--" not in str(caught.value)


# ------------------------------------------------------------------ mcnemar


def test_mcnemar_sentence_with_the_exact_p_value_by_hand() -> None:
    # 15 changed cases, 3 the rarer way: 2·(C(15,0) + … + C(15,3)) / 2¹⁵ = 2·576/32768
    p = 2 * sum(math.comb(15, i) for i in range(4)) / 2**15
    assert p == 0.03515625
    said = mcnemar_sentence(12, 3)
    assert str(said) == (
        "12 cases went from pass to fail and 3 from fail to pass (exact McNemar p = 0.035): a "
        "split at least this lopsided happens by chance in 3.5% of comparisons between equally "
        "good runs, so the second run is worse at α = 0.05."
    )
    assert said.fields == {"statistic": "mcnemar", "b": 12, "c": 3, "p_value": p,
                           "alpha": 0.05, "significant": True}  # fmt: skip
    assert "so the second run is better" in str(mcnemar_sentence(3, 12))


def test_mcnemar_sentence_without_evidence_and_with_a_tiny_p_value() -> None:
    p = 2 * sum(math.comb(12, i) for i in range(6)) / 2**12  # 7 against 5: 0.774
    said = mcnemar_sentence(7, 5)
    assert f"(exact McNemar p = {p:.3f})" in str(said) and f"in {p:.1%} of" in str(said)
    assert "so this is no evidence of a difference at α = 0.05." in str(said)
    assert said.fields["significant"] is False
    # 40 against 0: 2 / 2⁴⁰, far below 0.001
    tiny = mcnemar_sentence(0, 40, alpha=0.01)
    assert "(exact McNemar p < 0.001)" in str(tiny) and "by chance in under 0.1% of" in str(tiny)
    assert str(tiny).endswith("so the second run is better at α = 0.01.")
    assert str(mcnemar_sentence(0, 0)) == (
        "No case changed outcome between the two runs (exact McNemar p = 1.000), "
        "so there is no evidence of a difference."
    )


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, math.nan, True, "0.05"])
def test_mcnemar_sentence_refuses_an_alpha_outside_zero_and_one(alpha: object) -> None:
    with pytest.raises(InputError) as caught:
        mcnemar_sentence(3, 1, alpha)  # type: ignore[arg-type]
    assert caught.value.field == "alpha" and "--" not in str(caught.value)
    assert str(caught.value).startswith("alpha: must be between 0 and 1 (exclusive)")


# ------------------------------------------------------------------ a judge from a calibration


def test_judge_rates_come_from_a_saved_calibration(tmp_path: Path) -> None:
    # 20 human PASS of which the judge passed 19 (sensitivity 0.95); 10 FAIL, 8 caught (0.8)
    judge = ["PASS"] * 19 + ["FAIL"] + ["FAIL"] * 8 + ["PASS"] * 2
    human = ["PASS"] * 20 + ["FAIL"] * 10
    saved = tmp_path / "cal.json"
    calibrate(judge, human).save(saved)
    assert judge_rates_from_calibration(saved) == pytest.approx((0.95, 0.80))


@pytest.mark.parametrize(
    ("judge", "human", "missing"),
    [(["FAIL", "PASS"], ["FAIL", "FAIL"], "PASS"), (["PASS", "FAIL"], ["PASS", "PASS"], "FAIL")],
)
def test_judge_rates_need_both_labels_in_the_calibration(
    tmp_path: Path, judge: list[str], human: list[str], missing: str
) -> None:
    saved = tmp_path / "one-sided.json"
    calibrate(judge, human).save(saved)
    with pytest.raises(InputError) as caught:
        judge_rates_from_calibration(saved)
    assert caught.value.path == str(saved)
    assert f"no parsed case labelled {missing}" in caught.value.reason
    assert "--" not in str(caught.value)


def test_judge_rates_from_a_missing_file_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        judge_rates_from_calibration(tmp_path / "nope.json")
    assert caught.value.filename == str(tmp_path / "nope.json")
