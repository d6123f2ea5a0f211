"""What stopping a gate early saves, and what it costs in wrong decisions.

Run from the project root:

    python tests/benchmarks/bench_sequential.py [REPETITIONS]

For each scenario (a true pass rate and a gate threshold), REPETITIONS seeded
suites of SUITE cases are simulated in a random order. Three rules decide
each suite:

* ``sequence``: ``sequential_gate``, which stops at the first decision of
  the anytime-valid confidence sequence (95%);
* ``wilson, every case``: the naive rule, which stops at the first 95%
  Wilson interval wholly on one side of the threshold;
* ``wilson, full suite``: one look at the 95% Wilson interval after all
  SUITE cases, the baseline that spends every case.

A decision is wrong when it says "pass" for a true rate below the threshold,
or "block" for one at or above it; "undecided" is not wrong, only unhelpful.
The figures printed are the mean cases used (and that as a share of the full
suite), the share of suites decided, and the wrong-decision rate, all
measured in this run.
"""

from __future__ import annotations

import platform
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tinyeval.estimates.sequential import sequential_gate
from tinyeval.stats import wilson_interval

SUITE = 300
SCENARIOS = [  # (true pass rate, threshold)
    (0.99, 0.80),
    (0.95, 0.90),
    (0.92, 0.90),
    (0.90, 0.90),
    (0.88, 0.90),
    (0.80, 0.90),
    (0.50, 0.80),
]


def wilson_every_case(outcomes: list[bool], threshold: float) -> tuple[str, int]:
    passes = 0
    for n, passed in enumerate(outcomes, 1):
        passes += passed
        low, high = wilson_interval(passes, n)
        if low >= threshold:
            return "pass", n
        if high < threshold:
            return "block", n
    return "undecided", len(outcomes)


def wilson_full_suite(outcomes: list[bool], threshold: float) -> tuple[str, int]:
    low, high = wilson_interval(sum(outcomes), len(outcomes))
    if low >= threshold:
        return "pass", len(outcomes)
    if high < threshold:
        return "block", len(outcomes)
    return "undecided", len(outcomes)


def main() -> None:
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print(
        f"Python {platform.python_version()}; {repetitions} seeded suites of {SUITE} cases "
        "per scenario; 95% everywhere"
    )
    header = (
        f"{'true':>5} {'gate':>5}  {'rule':<19} {'cases used':>10} {'of suite':>8} "
        f"{'decided':>8} {'wrong':>7}"
    )
    print(header)
    print("-" * len(header))
    start = time.perf_counter()
    for truth, threshold in SCENARIOS:
        rng = random.Random(f"{truth}-{threshold}")
        right = "pass" if truth >= threshold else "block"
        tallies = {rule: [0, 0, 0] for rule in ("sequence", "wilson, every case", "full")}
        for _ in range(repetitions):
            outcomes = [rng.random() < truth for _ in range(SUITE)]
            decision = sequential_gate(outcomes, threshold)
            results = {
                "sequence": (decision.decision, decision.cases_used),
                "wilson, every case": wilson_every_case(outcomes, threshold),
                "full": wilson_full_suite(outcomes, threshold),
            }
            for rule, (outcome, used) in results.items():
                tally = tallies[rule]
                tally[0] += used
                tally[1] += outcome != "undecided"
                tally[2] += outcome not in (right, "undecided")
        for rule, (used, decided, wrong) in tallies.items():
            label = "wilson, full suite" if rule == "full" else rule
            mean_used = used / repetitions
            print(
                f"{truth:>5.0%} {threshold:>5.0%}  {label:<19} {mean_used:>10.1f} "
                f"{mean_used / SUITE:>8.0%} {decided / repetitions:>8.0%} "
                f"{wrong / repetitions:>7.1%}"
            )
        print()
    print(f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
