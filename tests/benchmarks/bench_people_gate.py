"""How often does the people's interval hold the people's rate, and how often does the gate
pass a category that people would fail? Seeded simulation over random suites.

Each suite: judge sensitivity and specificity drawn from 0.55 to 0.99, people's pass rate
(prevalence) from 0.1 to 0.95, up to 30% of the cases failing a check, N cases from 200 to
5,000 and n labels from 30 to 300 drawn at random from the cases people decide, a threshold
within 10 points of the true rate. The estimate is ``people_rates`` (PPI++); the decision is
``tinyeval.gating.gate`` with it. Prints the coverage, the gate's error rate (a pass where the
true rate is below the threshold), and the mean interval widths (people's and the judge-only
Wilson interval, which holds the people's rate far less often).

    python tests/benchmarks/bench_people_gate.py [suites]
"""

from __future__ import annotations

import math
import random
import sys
import time
from typing import Any

from tinyeval.estimates.people import people_rates
from tinyeval.gating import gate
from tinyeval.stats import wilson_interval


def _suite(rng: random.Random) -> tuple[list[dict[str, Any]], float]:
    sensitivity, specificity = rng.uniform(0.55, 0.99), rng.uniform(0.55, 0.99)
    prevalence, failing = rng.uniform(0.1, 0.95), rng.uniform(0.0, 0.3)
    labels, size = rng.randint(30, 300), rng.randint(200, 5000)
    rows, people = [], 0
    for i in range(size):
        if rng.random() < failing:
            rows.append({"id": i, "status": "fail", "checks": {"c": False}, "judges": {}})
            continue
        says = rng.random() < prevalence
        judge = rng.random() < (sensitivity if says else 1.0 - specificity)
        people += says
        row = {"id": i, "status": "pass" if judge else "fail", "checks": {"c": True}}
        rows.append({**row, "judges": {"j": {}}, "people": says})
    opened = [row for row in rows if "people" in row]
    for row in rng.sample(opened, min(labels, len(opened))):
        row["label"] = "PASS" if row["people"] else "FAIL"
    return rows, people / size


def simulate(suites: int, seed: int = 2026) -> dict[str, float]:
    """Coverage, gate error and mean widths over ``suites`` seeded suites."""
    rng = random.Random(seed)
    held = judge_held = below = passed_below = 0
    width = judge_width = 0.0
    for _ in range(suites):
        rows, truth = _suite(rng)
        estimate = people_rates(rows)["default"]
        held += estimate.low <= truth <= estimate.high
        width += estimate.high - estimate.low
        passed = sum(row["status"] == "pass" for row in rows)
        low, high = wilson_interval(passed, len(rows))
        judge_held += low <= truth <= high
        judge_width += high - low
        threshold = min(0.99, max(0.01, truth + rng.uniform(-0.1, 0.1)))
        tallies = {"default": {"passed": passed, "total": len(rows), "judged": 1}}
        report = gate(tallies, {"default": threshold}, people={"default": estimate})
        if truth < threshold:
            below += 1
            passed_below += report.categories[0].outcome == "pass"
    return {
        "suites": suites,
        "coverage": held / suites,
        "gate_error": passed_below / below if below else 0.0,
        "below_threshold": below,
        "width": width / suites,
        "judge_width": judge_width / suites,
        "judge_coverage": judge_held / suites,
    }


def main(suites: int) -> None:
    started = time.perf_counter()
    found = simulate(suites)
    spent = time.perf_counter() - started
    error = math.sqrt(0.95 * 0.05 / suites)
    print(
        f"{suites} suites in {spent:.1f} s: the 95% interval held the people's rate in "
        f"{found['coverage']:.1%} (±{error:.1%} simulation error); the gate passed "
        f"{found['gate_error']:.1%} of the {found['below_threshold']} suites below their "
        f"threshold; mean width {found['width']:.3f} against {found['judge_width']:.3f} for "
        f"the judge-only interval, which held the people's rate in {found['judge_coverage']:.1%}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
