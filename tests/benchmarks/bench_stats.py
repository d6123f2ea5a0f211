"""Time cohen_kappa, spearman and mcnemar on a million pairs.

Run from the project root:

    python tests/benchmarks/bench_stats.py

The data are seeded, so every run times the same inputs; the figure printed
is the best of three runs, in seconds. When SciPy is installed, each spearman
line is followed by ``scipy.stats.spearmanr`` on the same lists, timed in the
same run (the two calls alternate), and the ratio of the two.
"""

from __future__ import annotations

import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tinyeval.stats import cohen_kappa, mcnemar, spearman

PAIRS = 1_000_000
REPEATS = 3


def best_of(repeats: int, func: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """The fastest of ``repeats`` calls, in seconds, and the value returned."""
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = func(*args)
        best = min(best, time.perf_counter() - start)
    return best, value


def _two_index_sorts(x: list[Any], y: list[Any]) -> None:
    """What every pure-Python ranking must do at the least: order each list's indices."""
    sorted(range(len(x)), key=x.__getitem__)
    sorted(range(len(y)), key=y.__getitem__)


def spearman_against_scipy(label: str, x: list[Any], y: list[Any]) -> None:
    """Time spearman and, if SciPy is installed, ``scipy.stats.spearmanr`` on the same lists.

    The two alternate call by call, so a change in the machine's load between
    them moves both figures rather than their ratio; each is the best of its runs.
    """
    try:
        from scipy.stats import spearmanr
    except ImportError:
        spearmanr = None
    ours = theirs = float("inf")
    value = reference = float("nan")
    for _ in range(REPEATS):
        seconds, value = best_of(1, spearman, x, y)
        ours = min(ours, seconds)
        if spearmanr is not None:
            seconds, result = best_of(1, spearmanr, x, y)
            theirs, reference = min(theirs, seconds), result.statistic
    print(f"{label:<38}{ours:6.3f} s  (rho = {value:.4f})")
    if spearmanr is None:
        print("  (scipy not installed: no reference timing)")
        return
    floor, _ = best_of(REPEATS, _two_index_sorts, x, y)
    print(
        f"  scipy.stats.spearmanr:              {theirs:6.3f} s  (rho = {reference:.4f}, "
        f"difference {abs(value - reference):.1e}); tinyeval/scipy = {ours / theirs:.2f}"
    )
    print(
        f"  the pure-Python floor, two sorts:   {floor:6.3f} s  (floor/scipy = "
        f"{floor / theirs:.2f}: any standard-library ranking sorts both lists)"
    )


def judge_and_human(rng: random.Random, labels: list[str]) -> tuple[list[str], list[str]]:
    """A judge that copies the human 70% of the time and guesses otherwise."""
    human = [rng.choice(labels) for _ in range(PAIRS)]
    judge = [h if rng.random() < 0.7 else rng.choice(labels) for h in human]
    return judge, human


def main() -> None:
    rng = random.Random(20240601)
    print(
        f"Python {platform.python_version()} on {platform.machine()}, {PAIRS:,} pairs, "
        f"best of {REPEATS}"
    )

    judge, human = judge_and_human(rng, ["PASS", "FAIL"])
    seconds, value = best_of(REPEATS, cohen_kappa, judge, human)
    print(f"cohen_kappa, PASS/FAIL labels:        {seconds:6.3f} s  (kappa = {value:.4f})")

    judge, human = judge_and_human(rng, ["A", "B", "tie"])
    seconds, value = best_of(REPEATS, cohen_kappa, judge, human)
    print(f"cohen_kappa, A/B/tie labels:          {seconds:6.3f} s  (kappa = {value:.4f})")

    x = [rng.random() for _ in range(PAIRS)]
    y = [v + rng.gauss(0.0, 0.3) for v in x]
    spearman_against_scipy("spearman, continuous scores:", x, y)

    grades = [rng.randint(1, 5) for _ in range(PAIRS)]
    other = [min(5, max(1, g + rng.choice((-1, 0, 0, 1)))) for g in grades]
    spearman_against_scipy("spearman, 1-5 grades (heavy ties):", grades, other)

    seconds, value = best_of(REPEATS, mcnemar, 500_500, 499_500)
    print(f"mcnemar, 1,000,000 changed cases:     {seconds:6.3f} s  (p = {value:.4f})")
    seconds, value = best_of(REPEATS, mcnemar, 25_100, 24_850)
    print(f"mcnemar, 49,950 changed (exact sums): {seconds:6.3f} s  (p = {value:.4f})")


if __name__ == "__main__":
    main()
