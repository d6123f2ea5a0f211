"""Exact statistics for pass rates, suite sizes, paired runs and agreement; works copied alone.

Bad input raises ``StatisticsError``; a value undefined for the data ``UndefinedStatisticError``."""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
import operator
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from fractions import Fraction
from statistics import NormalDist
from typing import Any, NamedTuple

_STANDARD_NORMAL = NormalDist()
_z = _STANDARD_NORMAL.inv_cdf
_MOST_CASES = 10**9
# Beyond this many discordant cases (math.comb: ~40 ms at 50 000) Loader's saddle point.
_EXACT_COMB_LIMIT = 50_000
_FIXED_POINT_BITS = 128
_OPEN, _UNIT = "between 0 and 1 (exclusive)", "a number in [0, 1]"
_AT_MOST_1, _AT_LEAST_1 = "above 0 and at most 1", "a number of at least 1"
_PLANNED = "at least 0.5 and below 1 (a test that misses more changes than it finds is no plan)"
_RANGES = {  # what a number must be: its least and greatest value ("at least 1" is finite)
    _OPEN: (math.ulp(0.0), math.nextafter(1.0, 0.0)),
    _UNIT: (0.0, 1.0),
    _AT_MOST_1: (math.ulp(0.0), 1.0),
    _AT_LEAST_1: (1.0, 1e300),
    _PLANNED: (0.5, math.nextafter(1.0, 0.0)),
}

try:
    from .errors import TinyevalError as _ErrorRoot
except ImportError:  # this file copied on its own

    class _ErrorRoot(Exception):  # type: ignore[no-redef]
        pass


class StatisticsError(_ErrorRoot, ValueError):
    """Input that cannot produce the statistic (wrong type, out of range, mismatched lengths)."""


class UndefinedStatisticError(StatisticsError):
    """Valid input for which the statistic has no value (it would be NaN)."""


class Interval(NamedTuple):
    low: float
    high: float


class Rate(NamedTuple):
    """``successes`` of ``n`` with its Wilson interval.

    >>> rate = Rate.of(17, 20)
    >>> str(rate), float(rate), rate.to_dict()["low"] == rate.low
    ('17/20 = 85.0% [64.0%, 94.8%]', 0.85, True)
    """

    successes: int
    n: int
    low: float
    high: float

    @classmethod
    def of(cls, successes: int, n: int, confidence: float = 0.95) -> Rate:
        low, high = wilson_interval(successes, n, confidence)
        return cls(successes, n, low, high)

    @property
    def value(self) -> float:
        return self.successes / self.n

    def __float__(self) -> float:
        return self.value

    def __str__(self) -> str:
        return format_rate(self.successes, self.n)

    def to_dict(self) -> dict[str, Any]:
        counts = {"successes": self.successes, "n": self.n, "rate": self.value}
        return {**counts, "low": self.low, "high": self.high, "text": str(self)}


def _count(value: Any, name: str, func: str, least: int = 0) -> int:
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise StatisticsError(f"{func}: {name} must be a whole number, got {value!r}")
    number = operator.index(value)
    if number < 0:
        raise StatisticsError(f"{func}: {name} must not be negative, got {number}")
    if number < least:
        raise StatisticsError(f"{func}: {name} must be at least {least}, got {number}")
    return number


def _number(value: Any, name: str, func: str, wanted: str = _OPEN) -> float:
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    number = float(value) if real else math.nan
    low, high = _RANGES[wanted]
    if not low <= number <= high:  # refuses NaN too
        kind = "" if real or wanted.startswith("a ") else "a number "
        raise StatisticsError(f"{func}: {name} must be {kind}{wanted}, got {value!r}")
    return number


def _paired(x: Iterable[Any], y: Iterable[Any], func: str) -> tuple[list[Any], list[Any]]:
    xs, ys = list(x), list(y)
    if len(xs) != len(ys):
        raise StatisticsError(
            f"{func}: both inputs must have the same length, got {len(xs)} and {len(ys)}"
        )
    if len(xs) < 2:
        raise StatisticsError(f"{func}: needs at least 2 pairs, got {len(xs)}")
    return xs, ys


def _bisect(rises: Any, low: float, high: float) -> float:
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        low, high = (low, middle) if rises(middle) else (middle, high)
    return high


def wilson_interval(
    successes: int, n: int, confidence: float = 0.95, *, design_effect: float = 1.0
) -> Interval:
    """The Wilson (1927) interval for ``successes`` of ``n``, over n / ``design_effect`` if given.

    >>> [round(bound, 3) for bound in wilson_interval(27, 30, design_effect=2.2)]
    [0.646, 0.978]
    """
    func = "wilson_interval"
    successes, n = _count(successes, "successes", func), _count(n, "n", func)
    confidence = _number(confidence, "confidence", func)
    if successes > n:
        raise StatisticsError(f"{func}: successes must be between 0 and n = {n}, got {successes}")
    if n == 0:
        raise UndefinedStatisticError(f"{func}: the interval is undefined for n = 0 (no cases)")
    effect = _number(design_effect, "design_effect", func, _AT_LEAST_1)
    low, high = _wilson_bounds(successes / n, n / effect, _z((1.0 + confidence) / 2.0) ** 2)
    return Interval(max(0.0, low), min(1.0, high))


def _wilson_bounds(rate: float, n: float, z2: float) -> tuple[float, float]:
    spread = math.sqrt(z2) * math.sqrt(z2 + 4.0 * rate * (1.0 - rate) * n)
    centre, denominator = 2.0 * rate * n + z2, 2.0 * (n + z2)
    low = 0.0 if rate == 0.0 else (centre - spread) / denominator
    high = 1.0 if rate == 1.0 else (centre + spread) / denominator
    return low, high


def cases_to_decide(
    successes: int, n: int, threshold: float, confidence: float = 0.95
) -> int | None:
    """The least suite size at which this rate decides ``threshold`` (None: no size can).

    >>> cases_to_decide(13, 13, 0.80)  # at a rate of 1 the lower bound is N / (N + z²)
    16
    """
    func = "cases_to_decide"
    low, high = wilson_interval(successes, n, confidence)
    threshold = _number(threshold, "threshold", func, _UNIT)
    if low >= threshold or high < threshold:
        return n
    rate = successes / n
    if rate == threshold:
        return None
    z2 = _z((1.0 + confidence) / 2.0) ** 2

    def decided(size: int) -> bool:
        low, high = _wilson_bounds(rate, size, z2)
        return low >= threshold if rate > threshold else high < threshold

    if not decided(_MOST_CASES):
        return None
    return n + bisect.bisect_left(range(n, _MOST_CASES + 1), True, key=decided)


def format_rate(successes: int, n: int, confidence: float = 0.95) -> str:
    """A rate with its denominator and Wilson interval (``0/0`` prints as ``n/a``).

    >>> format_rate(17, 20)
    '17/20 = 85.0% [64.0%, 94.8%]'
    """
    try:
        low, high = wilson_interval(successes, n, confidence)
    except UndefinedStatisticError:  # only 0 of 0
        return "0/0 = n/a"
    return f"{successes}/{n} = {successes / n:.1%} [{low:.1%}, {high:.1%}]"


def _check_plan(baseline: Any, target: Any, alpha: Any, func: str) -> tuple[float, float, float]:
    baseline, target = _number(baseline, "baseline", func), _number(target, "target", func)
    alpha = _number(alpha, "alpha", func)
    if baseline == target:
        raise StatisticsError(
            f"{func}: baseline and target must differ (there is no change to detect), "
            f"got {baseline!r} for both"
        )
    return baseline, target, alpha


def _judge(sensitivity: Any, specificity: Any, func: str) -> Callable[[float], float]:
    """The pass rate the judge reports for a true ``rate`` (no rates: a perfect judge)."""
    if sensitivity is None and specificity is None:
        sensitivity = specificity = 1.0
    if sensitivity is None or specificity is None:
        missing = "sensitivity" if sensitivity is None else "specificity"
        raise StatisticsError(
            f"{func}: give both sensitivity and specificity for an imperfect judge, "
            f"{missing} is missing"
        )
    se = _number(sensitivity, "sensitivity", func, _AT_MOST_1)  # a judge may be perfect
    sp = _number(specificity, "specificity", func, _AT_MOST_1)
    if se + sp <= 1.0:
        raise StatisticsError(
            f"{func}: a judge with sensitivity + specificity <= 1 (got {se!r} + {sp!r}) "
            "tells PASS from FAIL no better than chance; no number of cases detects a change"
        )
    return lambda rate: se * rate + (1.0 - sp) * (1.0 - rate)


def _spreads(p1: float, p2: float) -> tuple[float, float]:
    """The z-test's standard deviations under the null and the alternative (Fleiss 1981)."""
    mean = (p1 + p2) / 2.0
    return math.sqrt(2.0 * mean * (1.0 - mean)), math.sqrt(p1 * (1.0 - p1) + p2 * (1.0 - p2))


def _ceil(value: float) -> int:
    """``math.ceil``, but a hair above a whole number is that number."""
    nearest = round(value)
    return nearest if math.isclose(value, nearest, rel_tol=1e-12, abs_tol=0.0) else math.ceil(value)


def sample_size(
    baseline: float,
    target: float,
    *,
    alpha: float = 0.05,
    power: float = 0.80,
    continuity: bool = False,
    sensitivity: float | None = None,
    specificity: float | None = None,
) -> int:
    """Cases per run to detect ``baseline`` → ``target`` (Fleiss 1981), through a judge if given.

    >>> sample_size(0.90, 0.85), sample_size(0.90, 0.85, sensitivity=0.95, specificity=0.80)
    (686, 1373)
    """
    func = "sample_size"
    baseline, target, alpha = _check_plan(baseline, target, alpha, func)
    goal = _number(power, "power", func, _PLANNED)
    seen = _judge(sensitivity, specificity, func)
    baseline, target = seen(baseline), seen(target)
    difference = abs(baseline - target)
    null, alternative = _spreads(baseline, target)
    n = ((_z(1.0 - alpha / 2.0) * null + _z(goal) * alternative) / difference) ** 2
    if continuity:  # Fleiss, Tytun and Ury (1980)
        n = n / 4.0 * (1.0 + math.sqrt(1.0 + 4.0 / (n * difference))) ** 2
    return max(1, _ceil(n))


def _power(baseline: float, target: float, n: float, alpha: float, continuity: bool) -> float:
    difference = abs(baseline - target)
    if continuity:  # the inverse of Fleiss, Tytun and Ury's correction, 0 when n <= 1/d
        n = max(0.0, n - 1.0 / difference) ** 2 / n
    null, alternative = _spreads(baseline, target)
    z = (difference * math.sqrt(n) - _z(1.0 - alpha / 2.0) * null) / alternative
    return _STANDARD_NORMAL.cdf(z)


def power(
    baseline: float,
    target: float,
    n: int,
    *,
    alpha: float = 0.05,
    continuity: bool = False,
    sensitivity: float | None = None,
    specificity: float | None = None,
) -> float:
    """The chance that ``n`` cases per run detect a change (``sample_size`` solved for power).

    >>> round(power(0.90, 0.85, 686), 4), round(power(0.90, 0.85, 685), 4)
    (0.8002, 0.7997)
    """
    func = "power"
    baseline, target, alpha = _check_plan(baseline, target, alpha, func)
    n = _count(n, "n", func, least=1)
    seen = _judge(sensitivity, specificity, func)
    return _power(seen(baseline), seen(target), n, alpha, continuity)


def detectable_difference(
    baseline: float,
    n: int,
    *,
    alpha: float = 0.05,
    power: float = 0.80,
    continuity: bool = False,
    sensitivity: float | None = None,
    specificity: float | None = None,
) -> float:
    """The smallest true drop below ``baseline`` that ``n`` cases per run detect.

    >>> round(detectable_difference(0.90, 40), 3)
    0.26
    """
    func = "detectable_difference"
    baseline, alpha = _number(baseline, "baseline", func), _number(alpha, "alpha", func)
    goal = _number(power, "power", func, _PLANNED)
    n = _count(n, "n", func, least=1)
    seen = _judge(sensitivity, specificity, func)

    def reaches_goal(drop: float) -> bool:
        return _power(seen(baseline), seen(baseline - drop), n, alpha, continuity) >= goal

    high = baseline * (1.0 - 1e-12)  # the target must stay above 0
    if not reaches_goal(high):
        raise UndefinedStatisticError(
            f"{func}: with {n} cases per run even a drop from {baseline:.1%} to 0% "
            f"is detected with less than {goal:.0%} power"
        )
    return _bisect(reaches_goal, 0.0, high)  # power rises with the drop above one half


def _stirling_error(n: int) -> float:
    """log(n!) − log(sqrt(2πn)·(n/e)ⁿ)."""
    if n <= 15:
        return math.lgamma(n + 1) - (n + 0.5) * math.log(n) + n - 0.5 * math.log(2 * math.pi)
    inverse_square = 1.0 / (n * n)
    series = 1 / 1680 - inverse_square / 1188
    series = 1 / 1260 - inverse_square * series
    series = 1 / 360 - inverse_square * series
    return (1 / 12 - inverse_square * series) / n


def _deviance_term(x: int, mean: float) -> float:
    """x·log(x/mean) + mean − x, without cancellation near mean."""
    if abs(x - mean) < 0.1 * (x + mean):
        ratio = (x - mean) / (x + mean)
        total = (x - mean) * ratio
        power_term = 2.0 * x * ratio
        odd = 1
        while True:
            power_term *= ratio * ratio
            odd += 2
            updated = total + power_term / odd
            if updated == total:
                return total
            total = updated
    return x * math.log(x / mean) + mean - x


def _log_fair_coin_probability(trials: int, k: int) -> float:
    """log P(X = k), X ~ Binomial(trials, 1/2), 0 < k < trials (Loader 2000)."""
    half = trials / 2.0
    return (
        _stirling_error(trials)
        - _stirling_error(k)
        - _stirling_error(trials - k)
        - _deviance_term(k, half)
        - _deviance_term(trials - k, half)
        + 0.5 * math.log(trials / (2.0 * math.pi * k * (trials - k)))
    )


def _two_sided_fair_coin_tail(trials: int, k: int) -> float:
    """``2·P(X ≤ k)`` for ``X ~ Binomial(trials, 1/2)``, ``k < trials / 2``, in fixed point."""
    one = 1 << _FIXED_POINT_BITS
    term = total = one
    for i in range(k, 0, -1):
        term = term * i // (trials - i + 1)
        total += term
        rest = i - 1
        if term == 0 or (term * rest) << 64 < total * (trials - 2 * rest + 1):
            break
    if trials <= _EXACT_COMB_LIMIT:  # one correctly rounded int / int division
        return math.comb(trials, k) * total / (1 << (trials - 1 + _FIXED_POINT_BITS))
    if k == 0:
        return math.ldexp(1.0, 1 - trials)  # 2·(1/2)^m, 0.0 once it underflows
    return 2.0 * math.exp(_log_fair_coin_probability(trials, k)) * (total / one)


def mcnemar(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value: ``b`` cases went pass → fail, ``c`` back.

    >>> round(mcnemar(12, 3), 4)
    0.0352
    """
    b, c = _count(b, "b", "mcnemar"), _count(c, "c", "mcnemar")
    trials, smaller = b + c, min(b, c)
    if 2 * smaller >= trials:  # b == c, including 0 == 0
        return 1.0
    return min(1.0, _two_sided_fair_coin_tail(trials, smaller))


def _tango_score(fixed: int, broke: int, n: int, delta: float) -> float:
    b = -fixed - broke + (2 * n - fixed + broke) * delta
    c = -broke * delta * (1.0 - delta)
    p_broke = (math.sqrt(max(0.0, b * b - 8.0 * n * c)) - b) / (4.0 * n)
    variance = n * (2.0 * p_broke + delta * (1.0 - delta))
    gap = fixed - broke - n * delta
    return gap / math.sqrt(variance) if variance > 0.0 else math.copysign(math.inf, gap)


def paired_difference_interval(
    both_pass: int,
    fixed: int,
    broke: int,
    both_fail: int,
    *,
    confidence: float = 0.95,
    method: str = "newcombe",
) -> Interval:
    """An interval for Δ = (fixed − broke) / n: Newcombe's hybrid score (1998) or ``"tango"``.

    >>> [round(bound, 4) for bound in paired_difference_interval(20, 12, 2, 16)]
    [0.0562, 0.3292]
    """
    func = "paired_difference_interval"
    names = ("both_pass", "fixed", "broke", "both_fail")
    a, b, c, d = map(_count, (both_pass, fixed, broke, both_fail), names, [func] * 4)
    confidence = _number(confidence, "confidence", func)
    n = a + b + c + d
    if n == 0:
        raise UndefinedStatisticError(f"{func}: the interval is undefined for n = 0 (no pairs)")
    z = _z((1.0 + confidence) / 2.0)
    delta = (b - c) / n
    if method == "tango":  # where the score (falling as Δ grows) crosses ±z
        low = _bisect(lambda x: _tango_score(b, c, n, x) < z, -1.0, delta)
        return Interval(low, _bisect(lambda x: _tango_score(b, c, n, x) < -z, delta, 1.0))
    if method != "newcombe":
        raise StatisticsError(f"{func}: method must be 'newcombe' or 'tango', got {method!r}")
    after, before = a + b, a + c
    (l1, u1), (l2, u2) = (wilson_interval(k, n, confidence) for k in (after, before))
    p1, p2 = after / n, before / n
    margins = after * (n - after) * before * (n - before)
    excess: float = a * d - b * c  # Newcombe's phi: a positive excess loses n/2, stops at 0
    excess = max(0.0, excess - n / 2.0) if excess > 0 else excess
    phi = excess / math.sqrt(margins) if margins else 0.0
    down = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    up = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return Interval(max(-1.0, delta - down), min(1.0, delta + up))


def holm(p_values: Iterable[float]) -> list[float]:
    """Holm's (1979) step-down adjustment of p-values, in their order.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    ps = [_number(p, "each p-value", "holm", _UNIT) for p in p_values]
    adjusted, running = [0.0] * len(ps), 0.0
    for rank, index in enumerate(sorted(range(len(ps)), key=ps.__getitem__)):
        running = max(running, min(1.0, (len(ps) - rank) * ps[index]))
        adjusted[index] = running
    return adjusted


def paired_sample_size(
    difference: float, discordance: float, *, alpha: float = 0.05, power: float = 0.80
) -> int:
    """Paired cases for McNemar's test to detect ``difference`` (Connor 1987).

    >>> paired_sample_size(0.05, 0.10), paired_sample_size(-0.05, 0.10)
    (312, 312)
    """
    func = "paired_sample_size"
    psi = _number(discordance, "discordance", func, _AT_MOST_1)
    number = difference if isinstance(difference, numbers.Real) else math.nan
    delta = abs(float(number))
    if isinstance(difference, bool) or not 0.0 < delta <= psi:
        raise StatisticsError(
            f"{func}: the difference must be a number above 0 and at most the discordance "
            f"{psi!r} in size (only cases that change can move the rate), got {difference!r}"
        )
    alpha, goal = _number(alpha, "alpha", func), _number(power, "power", func, _PLANNED)
    root = _z(1.0 - alpha / 2.0) * math.sqrt(psi) + _z(goal) * math.sqrt(psi - delta * delta)
    return max(1, _ceil((root / delta) ** 2))


def design_effect(cluster_size: float, icc: float) -> float:
    """The variance inflation of clusters: 1 + (m − 1)·icc (Kish 1965).

    >>> design_effect(5, 0.3)
    2.2
    """
    size = _number(cluster_size, "cluster_size", "design_effect", _AT_LEAST_1)
    return 1.0 + (size - 1.0) * _number(icc, "icc", "design_effect", _UNIT)


def cohen_kappa(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    """Cohen's kappa of two raters on the same items.

    >>> round(cohen_kappa(["PASS", "PASS", "FAIL"], ["PASS", "FAIL", "FAIL"]), 4)
    0.4
    """
    func = "cohen_kappa"
    xs, ys = _paired(a, b, func)
    n = len(xs)
    agreed = sum(map(operator.eq, xs, ys))
    counts_x, counts_y = Counter(xs), Counter(ys)
    chance = sum(count * counts_y[label] for label, count in counts_x.items())  # n²·p_e
    if chance == n * n:
        raise UndefinedStatisticError(
            f"{func}: undefined when both raters use one and the same label "
            "(expected agreement is 1)"
        )
    return (agreed * n - chance) / (n * n - chance)


def _doubled_ranks(values: list[Any]) -> tuple[list[int], int]:
    """Twice each value's average rank, and ((n³ − n) − Σ(t³ − t)) / 3 over ties of size t."""
    n = len(values)
    try:
        counts = Counter(values)
    except TypeError:  # unhashable: rank their places in the order
        order = sorted(range(n), key=values.__getitem__)
        places = [0] * n
        for before, index in itertools.pairwise(order):
            places[index] = places[before] + (values[index] != values[before])
        return _doubled_ranks(places)
    doubled: dict[Any, int] = {}
    first = ties = 0
    for value in sorted(counts):
        size = counts[value]
        doubled[value], first, ties = 2 * first + size + 1, first + size, ties + size**3 - size
    return list(map(doubled.__getitem__, values)), (n * n * n - n - ties) // 3


def spearman(x: Iterable[Any], y: Iterable[Any]) -> float:
    """Spearman's rank correlation, ties at their average rank.

    >>> round(spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 4)
    0.8208
    """
    func = "spearman"
    xs, ys = _paired(x, y, func)
    n = len(xs)
    for values, name in ((xs, "x"), (ys, "y")):
        if any(map(operator.ne, values, values)):  # NaN has no place in an order
            raise StatisticsError(f"{func}: {name} contains NaN, which cannot be ranked")
    (rx, sxx), (ry, syy) = _doubled_ranks(xs), _doubled_ranks(ys)
    if sxx == 0 or syy == 0:
        which = "x" if sxx == 0 else "y"
        raise UndefinedStatisticError(f"{func}: undefined because {which} is constant")
    sxy = sum(map(operator.mul, rx, ry)) - n * (n + 1) * (n + 1)
    return math.copysign(math.sqrt(sxy * sxy / (sxx * syy)), sxy)


class AgreementInterval(NamedTuple):
    """An agreement statistic with its confidence interval.

    >>> print(AgreementInterval("cohen_kappa", 0.65, 0.41, 0.84, 40, 0.95, "FCE 1969"))
    kappa = 0.65 [0.41, 0.84] (n = 40)
    """

    statistic: str
    estimate: float
    low: float
    high: float
    n: int
    confidence: float
    method: str

    def to_dict(self) -> dict[str, str | float | int]:
        return self._asdict()

    def __str__(self) -> str:
        name = "kappa" if self.statistic == "cohen_kappa" else "rho"
        return f"{name} = {self.estimate:.2f} [{self.low:.2f}, {self.high:.2f}] (n = {self.n})"


def kappa_interval(
    a: Iterable[Hashable], b: Iterable[Hashable], *, confidence: float = 0.95
) -> AgreementInterval:
    """Cohen's kappa with its large-sample interval (Fleiss, Cohen & Everitt 1969).

    >>> judge = ["PASS"] * 8 + ["FAIL"] * 4 + ["PASS", "FAIL"] * 4
    >>> human = ["PASS"] * 8 + ["FAIL"] * 4 + ["FAIL", "PASS"] * 4
    >>> print(kappa_interval(judge, human))
    kappa = 0.17 [-0.27, 0.60] (n = 20)
    """
    func = "kappa_interval"
    confidence = _number(confidence, "confidence", func)
    xs, ys = _paired(a, b, func)
    kappa_float = cohen_kappa(xs, ys)
    n = len(xs)
    cells = Counter(zip(xs, ys, strict=True))  # exact: every p is a count over n
    row = {label: Fraction(count, n) for label, count in Counter(xs).items()}
    col = {label: Fraction(count, n) for label, count in Counter(ys).items()}
    chance = sum((row[label] * col.get(label, 0) for label in row), Fraction(0))
    agreed = Fraction(sum(count for (i, j), count in cells.items() if i == j), n)
    kappa = (agreed - chance) / (1 - chance)
    spread = sum(
        Fraction(count, n) * (1 - (row[i] + col[i]) * (1 - kappa)) ** 2
        if i == j
        else Fraction(count, n) * (1 - kappa) ** 2 * (col.get(i, 0) + row.get(j, 0)) ** 2
        for (i, j), count in cells.items()
    )
    variance = (spread - (kappa - chance * (1 - kappa)) ** 2) / (n * (1 - chance) ** 2)
    if variance <= 0:
        one = [rater for rater, used in (("first", row), ("second", col)) if len(used) == 1]
        why = f"the {one[0]} rater gave one label only" if one else f"the raters agree on all {n}"
        raise UndefinedStatisticError(
            f"{func}: the interval is undefined because {why}"
            f"{' (kappa is 0 whatever the other says)' if one else ' cases'}"
            " (the large-sample variance is 0)"
        )
    half = _z((1.0 + confidence) / 2.0) * math.sqrt(variance)
    low, high = max(-1.0, kappa_float - half), min(1.0, kappa_float + half)
    method = "large-sample variance of Fleiss, Cohen & Everitt (1969)"
    return AgreementInterval("cohen_kappa", kappa_float, low, high, n, confidence, method)


def spearman_interval(
    x: Iterable[object], y: Iterable[object], *, confidence: float = 0.95
) -> AgreementInterval:
    """Spearman's rho with a Fisher-z interval (Bonett & Wright 2000).

    >>> print(spearman_interval([1, 2, 3, 4, 5, 6, 7, 8], [2, 1, 4, 3, 6, 5, 8, 7]))
    rho = 0.90 [0.43, 0.99] (n = 8)
    """
    func = "spearman_interval"
    confidence = _number(confidence, "confidence", func)
    xs, ys = _paired(x, y, func)
    n = len(xs)
    if n < 4:
        raise StatisticsError(f"{func}: needs at least 4 pairs, got {n}")
    rho = spearman(xs, ys)
    if abs(rho) >= 1.0:
        raise UndefinedStatisticError(
            f"{func}: the interval is undefined when rho is {rho:+.0f} (the ranks agree exactly)"
        )
    se = math.sqrt((1.0 + rho * rho / 2.0) / (n - 3))
    centre, half = math.atanh(rho), _z((1.0 + confidence) / 2.0) * se
    low, high = math.tanh(centre - half), math.tanh(centre + half)
    method = "Fisher z with the Bonett & Wright (2000) standard error"
    return AgreementInterval("spearman", rho, low, high, n, confidence, method)
