"""``tinyeval stats sample-size|power|detectable`` with an imperfect judge."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from statistics import NormalDist

import pytest
from child import run_tinyeval

from tinyeval.calibration import calibrate

ROOT = Path(__file__).resolve().parents[1]
Z = NormalDist().inv_cdf


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_tinyeval(["stats", *args], ROOT)


def fleiss_n(p1: float, p2: float, alpha: float = 0.05, power: float = 0.80) -> int:
    """Fleiss (1981) eq. 3.14, written out: per-arm n for a two-sided z-test."""
    mean = (p1 + p2) / 2
    root = Z(1 - alpha / 2) * math.sqrt(2 * mean * (1 - mean)) + Z(power) * math.sqrt(
        p1 * (1 - p1) + p2 * (1 - p2)
    )
    return math.ceil((root / (p1 - p2)) ** 2 - 1e-9)


def seen(rate: float, se: float, sp: float) -> float:
    """What a judge reports for a true pass rate: se·p + (1 − sp)·(1 − p)."""
    return se * rate + (1 - sp) * (1 - rate)


def test_sample_size_with_a_judge_says_the_shrink_and_the_cost() -> None:
    done = cli("sample-size", "--baseline", "0.90", "--target", "0.85",
               "--sensitivity", "0.95", "--specificity", "0.80", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    # the judge sees 90% → 85% as 87.5% → 83.75%: the 5-point gap shrinks by 0.75
    assert seen(0.90, 0.95, 0.80) == pytest.approx(0.875)
    assert seen(0.85, 0.95, 0.80) == pytest.approx(0.8375)
    needed, perfect = fleiss_n(0.875, 0.8375), fleiss_n(0.90, 0.85)
    assert (found["n"], found["n_perfect_judge"]) == (needed, perfect)
    assert (
        "shrinks every true difference by (sensitivity + specificity − 1) = 0.75"
        in (found["sentence"])
    )
    assert f"costs {needed - perfect} cases more than the {perfect}" in found["sentence"]
    # the keys of the perfect-judge plan are all still there (new keys only)
    plain = json.loads(cli("sample-size", "--baseline", "0.9", "--target", "0.85", "--json").stdout)
    assert set(plain) <= set(found)
    assert plain["n"] == perfect


def test_power_and_detectable_with_a_judge() -> None:
    done = cli("power", "--baseline", "0.9", "--target", "0.85", "--n", "686",
               "--sensitivity", "95%", "--specificity", "80%", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    p1, p2 = 0.875, 0.8375
    mean = (p1 + p2) / 2
    z = (abs(p1 - p2) * math.sqrt(686) - Z(0.975) * math.sqrt(2 * mean * (1 - mean))) / math.sqrt(
        p1 * (1 - p1) + p2 * (1 - p2)
    )
    assert found["power"] == pytest.approx(NormalDist().cdf(z))
    assert found["power_perfect_judge"] == pytest.approx(0.80, abs=0.002)
    assert "(sensitivity + specificity − 1) = 0.75" in found["sentence"]

    drop = json.loads(
        cli("detectable", "--baseline", "0.9", "--n", "686", "--sensitivity", "0.95",
            "--specificity", "0.8", "--json").stdout
    )  # fmt: skip
    # the true drop found is one whose judged rates are detected with 80% power
    q1, q2 = seen(0.9, 0.95, 0.8), seen(0.9 - drop["drop"], 0.95, 0.8)
    mean = (q1 + q2) / 2
    z = (abs(q1 - q2) * math.sqrt(686) - Z(0.975) * math.sqrt(2 * mean * (1 - mean))) / math.sqrt(
        q1 * (1 - q1) + q2 * (1 - q2)
    )
    assert NormalDist().cdf(z) == pytest.approx(0.80, abs=1e-6)
    assert drop["drop"] > drop["drop_perfect_judge"]
    assert drop["n_for_perfect_judge_drop"] > 686


def test_a_saved_calibration_gives_the_judge(tmp_path: Path) -> None:
    # 20 human PASS of which the judge passed 19 (sensitivity 0.95); 10 FAIL, 8 caught (0.8)
    judge = ["PASS"] * 19 + ["FAIL"] + ["FAIL"] * 8 + ["PASS"] * 2
    human = ["PASS"] * 20 + ["FAIL"] * 10
    saved = tmp_path / "cal.json"
    calibrate(judge, human).save(saved)
    done = cli("sample-size", "--baseline", "0.9", "--target", "0.85",
               "--calibration", str(saved), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["sensitivity"], found["specificity"]) == pytest.approx((0.95, 0.80))
    assert found["n"] == fleiss_n(0.875, 0.8375)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sensitivity", "0.9"], "--specificity: an imperfect judge needs both its"),
        (["--sensitivity", "0.5", "--specificity", "0.5"], "no better than chance"),
        (["--sensitivity", "x", "--specificity", "0.8"], "--sensitivity must be a proportion"),
        (["--calibration", "nope.json"], "nope.json"),
        (["--calibration", "c.json", "--sensitivity", "0.9"], "--calibration: give a calibra"),
    ],
)
def test_bad_judge_options_are_one_line_exit_2(args: list[str], message: str) -> None:
    done = cli("sample-size", "--baseline", "0.9", "--target", "0.85", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
