"""What people would say of a judged category (``tinyeval.estimates.people``), worked by hand.

PPI++ is recomputed from its closed form in this file (power-tuning λ = cov_n(Y, f) /
((1 + n/N)·var(f)), the pooled variance dividing by n + N − 1, as ppi_py does); reference
values computed that way are stored below; ppi_py itself is compared when it is installed.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import statistics
from pathlib import Path
from typing import Any

import pytest

from tinyeval.calibration import calibrate
from tinyeval.errors import InputError
from tinyeval.estimates.people import people_rates
from tinyeval.gating import gate
from tinyeval.humans.labelers import gate_probabilities
from tinyeval.report import summary_text

Z95 = 1.959963984540054


def _closed_form(f_l: list[int], y: list[int], f_u: list[int]) -> tuple[float, float, float]:
    """PPI++ for a mean: (θ, se², λ), written out from the formulas."""
    n, big_n = len(y), len(f_u)

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    def var(xs: list[float]) -> float:
        return sum((x - mean(xs)) ** 2 for x in xs) / len(xs)

    every = [*f_l, *f_u]
    pooled = var(every) * len(every) / (len(every) - 1)
    cov = sum((a - mean(y)) * (b - mean(f_l)) for a, b in zip(y, f_l, strict=True)) / n
    lam = min(1.0, max(0.0, cov / ((1 + n / big_n) * pooled)))
    residual = [a - lam * b for a, b in zip(y, f_l, strict=True)]
    theta = lam * mean(f_u) + mean(residual)
    return theta, lam * lam * var(f_u) / big_n + var(residual) / n, lam


def _rows(judge: list[int], people: dict[int, int], closed: int = 0) -> list[dict[str, Any]]:
    """Rows of category c: ``closed`` failing a check, then one open row per judge verdict,
    labelled where ``people`` says."""
    rows = [
        {"id": f"x{i}", "category": "c", "status": "fail", "checks": {"k": False}, "judges": {}}
        for i in range(closed)
    ]
    for i, verdict in enumerate(judge):
        row = {"id": i, "category": "c", "status": ["fail", "pass"][verdict], "checks": {"k": True}}
        row["judges"] = {"j": {"verdict": ["FAIL", "PASS"][verdict]}}
        if i in people:
            row["label"] = ["FAIL", "PASS"][people[i]]
        rows.append(row)
    return rows


def test_ppi_on_the_open_cases_times_their_share_by_hand() -> None:
    # 20 cases, 4 fail a check; 16 open, the judge passes 10; people label 8 of the open ones
    judge = [1] * 10 + [0] * 6
    people = {0: 1, 1: 1, 2: 0, 3: 1, 10: 0, 11: 0, 12: 1, 13: 0}
    found = people_rates(_rows(judge, people, closed=4))["c"]
    # f_l = [1, 1, 1, 1, 0, 0, 0, 0], Y = [1, 1, 0, 1, 0, 0, 1, 0]; f_u = [1] * 6 + [0] * 2
    # pooled var(f) = (10/16)(6/16)·16/15 = 1/4; cov_n(Y, f) = 1/8; λ = (1/8) / ((1 + 8/8)/4)
    # = 1/4; θ_U = λ·6/8 + mean(Y − f/4) = 3/16 + 3/8 = 9/16
    # se² = λ²·var(f_u)/8 + var(Y − f/4)/8 = (1/16)(3/16)/8 + (13/64)/8 = 55/2048
    assert _closed_form([judge[i] for i in people], list(people.values()), [*judge[4:10], 0, 0])[
        2
    ] == pytest.approx(0.25, abs=1e-12)
    w = 16 / 20
    value = w * 9 / 16  # 9/20
    variance = w * w * 55 / 2048 + (9 / 16) ** 2 * w * (1 - w) / 20  # 631/32000
    assert found.value == pytest.approx(0.45, abs=1e-12) and variance == pytest.approx(631 / 32000)
    half = Z95 * math.sqrt(variance)
    assert (found.low, found.high) == pytest.approx((value - half, value + half), abs=1e-12)
    assert (found.low, found.high) == pytest.approx((0.17477506, 0.72522494), abs=1e-8)
    assert (found.method, found.labels, found.how) == ("ppi", 8, "PPI++, 8 labels")


# reference values from _closed_form (seeded data, every case open): θ, low, high
STORED = {
    (11, 40, 400): (0.6069315275517317, 0.4863986003291406, 0.7274644547743229),
    (12, 120, 2000): (0.6361141954027805, 0.5676541822886986, 0.7045742085168624),
    (13, 300, 700): (0.6412906204762135, 0.5928969308371814, 0.6896843101152457),
}


def _seeded(seed: int, n: int, big_n: int) -> tuple[list[int], dict[int, int]]:
    rng = random.Random(seed)
    people = [int(rng.random() < 0.62) for _ in range(n + big_n)]
    judge = [p if rng.random() < 0.8 else 1 - p for p in people]
    return judge, {i: people[i] for i in rng.sample(range(n + big_n), n)}


@pytest.mark.parametrize("key", sorted(STORED))
def test_ppi_matches_the_closed_form_and_the_stored_values(key: tuple[int, int, int]) -> None:
    judge, people = _seeded(*key)
    found = people_rates(_rows(judge, people))["c"]
    f_u = [v for i, v in enumerate(judge) if i not in people]
    theta, se2, _ = _closed_form([judge[i] for i in people], list(people.values()), f_u)
    half = Z95 * math.sqrt(se2)
    assert (found.value, found.low, found.high) == pytest.approx(
        (theta, theta - half, theta + half), abs=1e-9
    )
    assert (found.value, found.low, found.high) == pytest.approx(STORED[key], abs=1e-9)


@pytest.mark.parametrize("key", sorted(STORED))
def test_ppi_matches_ppi_py(key: tuple[int, int, int]) -> None:
    np = pytest.importorskip("numpy")
    ppi_py = pytest.importorskip("ppi_py")
    judge, people = _seeded(*key)
    found = people_rates(_rows(judge, people))["c"]
    y = np.array(list(people.values()), dtype=float)
    yhat = np.array([judge[i] for i in people], dtype=float)
    rest = np.array([v for i, v in enumerate(judge) if i not in people], dtype=float)
    low, high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, rest)
    assert found.value == pytest.approx(float(np.squeeze(point)), abs=1e-9)
    assert (found.low, found.high) == pytest.approx(
        (float(np.squeeze(low)), float(np.squeeze(high))), abs=1e-9
    )


def test_rogan_gladen_with_a_calibration_by_hand() -> None:
    # the calibration: 45 of 50 human PASSes passed (sensitivity 0.9), 40 of 50 FAILs failed
    cal = calibrate(["PASS"] * 45 + ["FAIL"] * 5 + ["FAIL"] * 40 + ["PASS"] * 10,
                    ["PASS"] * 50 + ["FAIL"] * 50)  # fmt: skip
    judge = [1] * 10 + [0] * 6  # 16 open cases, 10 judge PASS; 4 more fail a check
    found = people_rates(_rows(judge, {}, closed=4), calibration=cal)["c"]
    # (10/16 + 0.8 − 1) / (0.9 + 0.8 − 1) = 0.425 / 0.7, times the open share 16/20
    assert found.method == "rogan-gladen"
    assert found.value == pytest.approx(16 / 20 * 0.425 / 0.7, abs=1e-12)
    assert found.low < found.value < found.high and found.labels == 100
    assert found.distrust is None  # 1.7 [1.5, 1.8]: well above chance


def test_labels_win_over_the_calibration_and_too_few_labels_fall_back() -> None:
    cal = calibrate(
        ["PASS"] * 9 + ["FAIL"] + ["FAIL"] * 9 + ["PASS"], ["PASS"] * 10 + ["FAIL"] * 10
    )
    judge = [1, 0] * 10
    assert people_rates(_rows(judge, {0: 1, 1: 0, 2: 1}), calibration=cal)["c"].method == "ppi"
    assert people_rates(_rows(judge, {0: 1}), calibration=cal)["c"].method == "rogan-gladen"
    alone = people_rates(_rows(judge, {0: 1}))["c"]
    assert str(alone) == "judge not calibrated: 1 label on its cases, too few (2 needed)"


def test_a_judge_no_better_than_chance_is_not_trusted_and_never_passes() -> None:
    rng = random.Random(5)
    judge = [int(rng.random() < 0.7) for _ in range(600)]
    people = {i: int(rng.random() < 0.8) for i in range(200)}  # unrelated to the judge
    found = people_rates(_rows(judge, people), min_kappa=0.6)
    estimate = found["c"]
    assert "no better than chance" in estimate.distrust and "< 0.6" in estimate.distrust
    tallies = {"c": {"passed": sum(judge), "total": 600, "judged": 600}}
    for policy, blocks in (("pass", False), ("block", True)):
        verdict = gate(tallies, {"c": 0.5}, inconclusive=policy, people=found).categories[0]
        assert (verdict.outcome, verdict.blocking) == ("judge not trusted", blocks)


def test_an_interval_across_the_threshold_says_how_many_more_labels() -> None:
    judge, people = _seeded(11, 40, 400)
    found = people_rates(_rows(judge, people))
    threshold = found["c"].value - 0.06
    verdict = gate({"c": {"passed": 1, "total": 440, "judged": 1}}, {"c": threshold},
                   people=found).categories[0]  # fmt: skip
    assert verdict.outcome == "inconclusive" and verdict.decided_on == "people"
    more = verdict.more_cases_needed
    assert more is not None and more > 0
    # with that many labels the half-width would be the 6 points to the threshold
    a, b, _ = found["c"].projection
    assert Z95 * math.sqrt(a + b / (40 + more)) <= 0.06 < Z95 * math.sqrt(a + b / (39 + more))
    assert found["c"].more_labels(found["c"].value - 0.001) is None  # more than the 440 cases
    report = gate({"c": {"passed": 1, "total": 440, "judged": 1}}, {"c": threshold}, people=found)
    assert f"inconclusive — about {more} more labels would decide it (let through; people ≈ " in (
        summary_text(report)
    )


def test_a_label_that_is_not_pass_or_fail_names_its_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": 0, "label": "PASS"}\n{"id": 1, "label": 4}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"labels.jsonl:2: the label of id '1' is 4"):
        people_rates(_rows([1, 0, 1], {}), labels=str(labels))


def test_labels_drawn_by_the_gate_strategy_are_reweighted(tmp_path: Path) -> None:
    """The strategy's chances differ by stratum; inverse-probability weights keep it unbiased."""
    rng = random.Random(11)
    errors, naive_errors, held = [], [], 0
    for suite in range(150):
        people = [int(rng.random() < 0.4) for _ in range(800)]
        judge = [int(rng.random() < (0.95 if says else 0.5)) for says in people]  # too lenient
        rows = _rows(judge, {})
        for row in rows:
            row["run"] = {"gate": {"thresholds": {"c": 0.5}}}
        # a pilot shows people split the judge's PASSes and mostly agree with its FAILs
        pilot = {str(i): {"label": ["FAIL", "PASS"][people[i]]} for i in range(60)}
        chances = gate_probabilities(rows, 80, pilot)
        drawn = [i for i in range(800) if rng.random() < chances[str(i)]]
        design = {"strategy": "gate", "budget": 80, "population": 800}
        labels = tmp_path / f"labels-{suite}.jsonl"
        with labels.open("w", encoding="utf-8") as f:
            for i in drawn:
                selection = {**design, "probability": chances[str(i)]}
                f.write(json.dumps({"id": i, "label": ["FAIL", "PASS"][people[i]],
                                    "selection": selection}) + "\n")  # fmt: skip
        truth = sum(people) / 800
        weighted = people_rates(rows, labels=str(labels))["c"]
        naive = people_rates(_rows(judge, {i: people[i] for i in drawn}))["c"]
        errors.append(weighted.value - truth)
        naive_errors.append(naive.value - truth)
        held += weighted.low <= truth <= weighted.high
    assert weighted.how.startswith("PPI++ weighted")
    noise = 3 * statistics.stdev(errors) / math.sqrt(150)
    assert abs(statistics.fmean(errors)) <= noise
    assert abs(statistics.fmean(naive_errors)) > noise  # ignoring the design is biased
    assert held / 150 >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 150)


def test_the_coverage_simulation_in_the_default_run() -> None:
    """300 seeded suites (the 1,000-suite run is tests/benchmarks/bench_people_gate.py)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_people_gate.py"
    spec = importlib.util.spec_from_file_location("bench_people_gate", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    found = bench.simulate(300, seed=7)
    error = math.sqrt(0.95 * 0.05 / 300)  # 0.0126
    assert found["coverage"] >= 0.94 - 2 * error
    below = found["below_threshold"]
    assert found["gate_error"] <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / below)
    assert found["judge_coverage"] < 0.5  # the judge's own interval is not about people


def test_a_calibration_no_better_than_chance_leaves_only_the_open_share() -> None:
    cal = calibrate(["PASS", "FAIL"] * 10, ["PASS"] * 10 + ["FAIL"] * 10)  # 5/10 and 5/10
    found = people_rates(_rows([1, 0] * 15, {}, closed=10), calibration=cal)["c"]
    assert (found.method, found.low, found.high) == ("rogan-gladen", 0.0, 0.75)
    assert "no better than chance" in (found.distrust or "")
    report = gate({"c": {"passed": 15, "total": 40, "judged": 30}}, {"c": 0.8}, people={"c": found})
    assert report.categories[0].outcome == "block"  # even all 30 open cases would be 75% < 80%


def test_case_labels_that_are_not_pass_or_fail_are_left_to_their_own_use() -> None:
    rows = _rows([1, 0, 1, 1], {})
    for row, grade in zip(rows, (4, 2, 5, 3), strict=True):
        row["label"] = grade  # a graded case's own label: not a PASS/FAIL for people's rate
    assert str(people_rates(rows)["c"]).startswith("judge not calibrated: no label")


def test_a_people_estimate_of_100_percent_does_not_meet_a_100_percent_rule_unseen() -> None:
    judge, people = [1] * 50, {i: 1 for i in range(10)}  # 10 of 50 labelled, all PASS
    found = people_rates(_rows(judge, people))
    assert found["c"].value == 1.0 and found["c"].low < 1.0
    tallies = {"c": {"passed": 50, "total": 50, "judged": 50}}
    verdict = gate(tallies, {"c": 1.0}, people=found).categories[0]
    assert verdict.outcome == "inconclusive"  # 40 cases nobody looked at
    assert gate(tallies, {"c": 1.0}).categories[0].outcome == "pass"  # the judge's 50 of 50
