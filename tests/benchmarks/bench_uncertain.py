"""When does ``label --strategy uncertain`` pay off? Coverage and width against ``random``.

Seeded simulation: 2,000 judged cases, a quarter of them with split votes; a budget of
200 labels drawn either uniformly (``random``) or by ``plan_labels(strategy="uncertain")``,
then ``ppi_rates`` (PPI++). Prints, per scenario, each strategy's coverage of the true
pass rate and its mean interval width relative to ``random`` in the same run.

    python tests/benchmarks/bench_uncertain.py [repetitions]
"""

from __future__ import annotations

import random
import sys

from tinyeval.humans.labelers import ppi_rates
from tinyeval.humans.session import plan_labels

SCENARIOS = {
    # (accuracy when sure, accuracy when the votes split)
    "errors in the split cases (sure 0.97, split 0.55)": (0.97, 0.55),
    "errors everywhere (sure 0.80, split 0.75)": (0.80, 0.75),
}


def population(rng: random.Random, sure: float, split: float) -> tuple[list[dict], dict]:
    rows, truth = [], {}
    for i in range(2000):
        unsure = i % 4 == 0
        passed = rng.random() < 0.7
        right = rng.random() < (split if unsure else sure)
        verdict = "PASS" if passed == right else "FAIL"
        votes = ["PASS", "FAIL", verdict] if unsure else [verdict]
        key = f"r{i}"
        rows.append(
            {
                "id": key,
                "output": "x",
                "category": "c",
                "judges": {"j": {"verdict": verdict, "votes": votes}},
            }
        )
        truth[key] = passed
    return rows, truth


def main(repetitions: int) -> None:
    for name, (sure, split) in SCENARIOS.items():
        rng = random.Random(7)
        rows, truth = population(rng, sure, split)
        rate = sum(truth.values()) / len(truth)
        results = {}
        for strategy in ("random", "uncertain"):
            covered, widths = 0, []
            for seed in range(repetitions):
                plan = plan_labels(rows, 200, strategy=strategy, seed=seed)
                labels = {
                    k: {"label": "PASS" if truth[k] else "FAIL", "selection": plan.selection(k)}
                    for k in plan.chosen
                }
                found = ppi_rates(rows, labels)["global"].ppi
                assert found is not None
                covered += found.low <= rate <= found.high
                widths.append(found.high - found.low)
            results[strategy] = (covered / repetitions, sum(widths) / repetitions)
        base = results["random"][1]
        print(name)
        for strategy, (coverage, width) in results.items():
            print(
                f"  {strategy:<10} coverage {coverage:.3f}  width {width:.4f} = {width / base:.2f}x"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
