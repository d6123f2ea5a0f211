"""Coverage and width of four ways to estimate a pass rate from a judge plus a few labels.

Run from the project root:

    python tests/benchmarks/bench_ppi.py [REPETITIONS]

Each repetition draws a suite of cases with a known true pass rate, a judge
with known sensitivity and specificity, and a uniform random subset that a
human labels. On the same data it computes

* PPI (``ppi_pass_rate(..., tuned=False)``),
* PPI++ (``ppi_pass_rate(...)``),
* the labels-only Wilson interval (the baseline the widths are divided by),
* the Rogan–Gladen corrected rate (``corrected_pass_rate``), with sensitivity
  and specificity measured on the labelled cases and given as counts,

and prints, per scenario, how often each 95% interval covered the true rate
and its mean width as a ratio to the Wilson width measured in the same run.
With R repetitions a coverage share has a binomial standard error of about
sqrt(0.95·0.05/R): 0.007 for the default R = 1000. The data are seeded.
"""

from __future__ import annotations

import math
import platform
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tinyeval.estimates.ppi import corrected_pass_rate, ppi_pass_rate
from tinyeval.stats import StatisticsError, wilson_interval

# (name, true pass rate, sensitivity, specificity, cases, labels)
SCENARIOS = [
    ("good judge, 100 of 2000 labelled", 0.80, 0.95, 0.90, 2000, 100),
    ("good judge, 300 of 2000 labelled", 0.80, 0.95, 0.90, 2000, 300),
    ("weak judge, 100 of 2000 labelled", 0.70, 0.80, 0.60, 2000, 100),
    ("lenient judge, 50 of 1000 labelled", 0.60, 0.98, 0.50, 1000, 50),
]
METHODS = ("PPI", "PPI++", "Wilson (labels only)", "Rogan-Gladen")
CONFIDENCE = 0.95


def one_suite(
    rng: random.Random, rate: float, sens: float, spec: float, cases: int, labels: int
) -> tuple[list[bool], list[bool], list[bool]]:
    """Judge verdicts on the labelled cases, their human labels, and the other verdicts."""
    truth = [rng.random() < rate for _ in range(cases)]
    judge = [(rng.random() < sens) if t else (rng.random() >= spec) for t in truth]
    chosen = set(rng.sample(range(cases), labels))
    judge_l = [judge[i] for i in range(cases) if i in chosen]
    human_l = [truth[i] for i in range(cases) if i in chosen]
    judge_u = [judge[i] for i in range(cases) if i not in chosen]
    return judge_l, human_l, judge_u


def intervals(
    judge_l: list[bool], human_l: list[bool], judge_u: list[bool], seed: int
) -> dict[str, tuple[float, float] | None]:
    """Each method's interval, or None where it is undefined for this draw."""
    out: dict[str, tuple[float, float] | None] = {}
    for name, tuned in (("PPI", False), ("PPI++", True)):
        try:
            r = ppi_pass_rate(judge_l, human_l, judge_u, confidence=CONFIDENCE, tuned=tuned)
            out[name] = (r.low, r.high)
        except StatisticsError:
            out[name] = None
    out["Wilson (labels only)"] = tuple(wilson_interval(sum(human_l), len(human_l), CONFIDENCE))
    passes = sum(human_l)
    fails = len(human_l) - passes
    true_pass = sum(j and h for j, h in zip(judge_l, human_l, strict=True))
    true_fail = sum(not j and not h for j, h in zip(judge_l, human_l, strict=True))
    try:
        c = corrected_pass_rate(
            sum(judge_l) + sum(judge_u),
            len(judge_l) + len(judge_u),
            (true_pass, passes),
            (true_fail, fails),
            confidence=CONFIDENCE,
            draws=1000,
            seed=seed,
        )
        out["Rogan-Gladen"] = (c.low, c.high)
    except StatisticsError:
        out["Rogan-Gladen"] = None
    return out


def main(repetitions: int) -> None:
    print(
        f"Python {platform.python_version()}, {repetitions} repetitions per scenario, "
        f"{CONFIDENCE:.0%} intervals; width as a ratio to the labels-only Wilson width"
    )
    rng = random.Random(20231109)
    for name, rate, sens, spec, cases, labels in SCENARIOS:
        started = time.perf_counter()
        covered = dict.fromkeys(METHODS, 0)
        width = dict.fromkeys(METHODS, 0.0)
        defined = dict.fromkeys(METHODS, 0)
        for repetition in range(repetitions):
            found = intervals(*one_suite(rng, rate, sens, spec, cases, labels), seed=repetition)
            for method, interval in found.items():
                if interval is None:
                    continue
                low, high = interval
                defined[method] += 1
                covered[method] += low <= rate <= high
                width[method] += high - low
        baseline = width["Wilson (labels only)"] / defined["Wilson (labels only)"]
        print(
            f"\n{name}: true rate {rate:.0%}, sensitivity {sens:.2f}, specificity {spec:.2f} "
            f"({time.perf_counter() - started:.1f} s)"
        )
        print(
            f"  {'method':<22} {'coverage':>9} {'mean width':>11} {'vs Wilson':>10} {'defined':>8}"
        )
        for method in METHODS:
            if defined[method] == 0:
                print(f"  {method:<22} {'—':>9}")
                continue
            mean_width = width[method] / defined[method]
            print(
                f"  {method:<22} {covered[method] / defined[method]:>9.3f} {mean_width:>11.4f} "
                f"{mean_width / baseline:>10.2f} {defined[method]:>8}"
            )
    print(f"\ncoverage standard error ≈ {math.sqrt(0.95 * 0.05 / repetitions):.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
