"""Estimates beyond a plain pass rate: corrected and prediction-powered rates, a mean's interval.

Like :mod:`tinyeval.stats`, which it builds on, this module needs only the
standard library and ``stats.py`` (copy the two files together to use it on
its own).

A judge's rates with its known errors taken out

=========================  ===================================================
``corrected_pass_rate``    What is the pass rate, given the judge's measured
                           sensitivity and specificity? (Rogan–Gladen, with
                           the uncertainty of all three in the interval)
``CorrectedRate``          Its result: the corrected rate and its interval.
=========================  ===================================================

Prediction-powered rates (judge verdicts on every case, human labels on some)

=========================  ===================================================
Function                   Answers
=========================  ===================================================
``ppi_pass_rate``          What is the pass rate, from a few labels plus the
                           judge, with an interval valid whatever the judge's
                           errors? (PPI and PPI++; weighted for active labeling)
``PPIRate``                Its result: value, interval, effective labels, λ.
=========================  ===================================================

Means of per-case values (recall, a graded score)

=========================  ===================================================
``mean_interval``          Where can the true mean be? (Student t interval)
=========================  ===================================================

>>> low, high = mean_interval([0.5, 1.0, 0.75])
>>> f"{low:.3f} {high:.3f}"
'0.129 1.371'
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..stats import Interval, Rate, StatisticsError, UndefinedStatisticError, _number, _z

__all__ = ["CorrectedRate", "PPIRate", "corrected_pass_rate", "mean_interval", "ppi_pass_rate"]

# ---------------------------------------------------------------- the corrected pass rate


@dataclass(frozen=True)
class CorrectedRate:
    """An observed pass rate corrected for the judge's errors, with its interval.

    >>> c = corrected_pass_rate(70, 100, 0.9, 0.8)
    >>> round(c.rate, 4), c.clipped
    (0.7143, False)
    """

    rate: float
    low: float
    high: float
    observed: Rate
    sensitivity: float
    specificity: float
    clipped: bool
    method: str
    draws: int
    undefined_draws: int
    warnings: tuple[str, ...] = ()
    scope: str | None = None  # set by a calibration: "overall" or the category whose rates it used
    category: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"rate", "low", "high", "method", "observed", "sensitivity", "specificity",
        "clipped", "draws", "undefined_draws", "warnings", "scope", "category"}``.

        >>> corrected_pass_rate(70, 100, 0.9, 0.8).to_dict()["method"]  # doctest: +ELLIPSIS
        'Rogan-Gladen correction; 95% interval from a seeded parametric bootstrap (2000 draws, ...'
        """
        return {
            "rate": self.rate,
            "low": self.low,
            "high": self.high,
            "method": self.method,
            "observed": self.observed.to_dict(),
            "sensitivity": self.sensitivity,
            "specificity": self.specificity,
            "clipped": self.clipped,
            "draws": self.draws,
            "undefined_draws": self.undefined_draws,
            "warnings": list(self.warnings),
            "scope": self.scope,
            "category": self.category,
        }


def _proportion(value: Any, name: str) -> tuple[float, tuple[int, int] | None]:
    """A proportion given as a float, or as ``(successes, trials)`` to carry its uncertainty."""
    func = "corrected_pass_rate"
    if isinstance(value, tuple | list):
        if len(value) != 2 or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise StatisticsError(
                f"{func}: {name} as counts must be (successes, trials), got {value!r}"
            )
        successes, trials = value
        if not 0 <= successes <= trials or trials == 0:
            raise StatisticsError(
                f"{func}: {name} needs 0 <= successes <= trials and trials > 0, got {value!r}"
            )
        return successes / trials, (successes, trials)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise StatisticsError(f"{func}: {name} must be a proportion in [0, 1], got {value!r}")
    return float(value), None


def _rogan_gladen(observed: float, sensitivity: float, specificity: float) -> float | None:
    """(p_obs + spec − 1) / (sens + spec − 1); None when the denominator is not positive."""
    youden = sensitivity + specificity - 1.0
    if youden <= 1e-12:
        return None
    return (observed + specificity - 1.0) / youden


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (NumPy's default)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def _jeffreys(rng: random.Random, successes: int, trials: int) -> float:
    return rng.betavariate(successes + 0.5, trials - successes + 0.5)


def corrected_pass_rate(
    observed_pass: int,
    n: int,
    sensitivity: float | tuple[int, int],
    specificity: float | tuple[int, int],
    *,
    confidence: float = 0.95,
    draws: int = 2000,
    seed: int = 0,
) -> CorrectedRate:
    """Correct a judge's observed pass rate for its known errors (Rogan and Gladen 1978).

    "Positive" is PASS: ``sensitivity`` = P(judge PASS | human PASS) and
    ``specificity`` = P(judge FAIL | human FAIL), each a proportion or, to
    carry the calibration's own uncertainty into the interval,
    ``(successes, trials)`` counts. The estimate is
    ``(p_obs + spec − 1) / (sens + spec − 1)``, clipped to [0, 1].

    The interval comes from a seeded parametric bootstrap: ``draws`` times,
    p_obs, and the sensitivity and specificity given as counts, are drawn from
    their Jeffreys posteriors Beta(k + ½, n − k + ½) with
    ``random.Random(seed)``, corrected and clipped; the interval is the
    central ``confidence`` share of those corrected rates. A draw with
    sens + spec ≤ 1 has no correction; such draws are counted in
    ``undefined_draws``, and when they exceed 1 − ``confidence`` of all draws
    the interval is [0, 1] (the data cannot rule out a useless judge).

    70 of 100 pass; the judge passes 90% of real passes and fails 80% of real
    failures: (0.70 + 0.80 − 1) / (0.90 + 0.80 − 1) = 0.50 / 0.70 = 0.714.

    >>> c = corrected_pass_rate(70, 100, (90, 100), (40, 50))
    >>> round(c.rate, 3), c.low < c.rate < c.high
    (0.714, True)

    >>> corrected_pass_rate(50, 100, 0.5, 0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tinyeval.stats.UndefinedStatisticError: corrected_pass_rate: undefined when ...

    Raises ``UndefinedStatisticError`` when sens + spec ≤ 1 and
    ``StatisticsError`` for counts or proportions out of range.
    """
    func = "corrected_pass_rate"
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise StatisticsError(f"{func}: n must be a whole number above 0, got {n!r}")
    if (
        isinstance(observed_pass, bool)
        or not isinstance(observed_pass, int)
        or not 0 <= observed_pass <= n
    ):
        raise StatisticsError(
            f"{func}: observed_pass must be a whole number in 0..{n}, got {observed_pass!r}"
        )
    if not 0.0 < confidence < 1.0:
        raise StatisticsError(f"{func}: confidence must be between 0 and 1, got {confidence!r}")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 100:
        raise StatisticsError(
            f"{func}: draws must be a whole number of at least 100, got {draws!r}"
        )
    sens, sens_counts = _proportion(sensitivity, "sensitivity")
    spec, spec_counts = _proportion(specificity, "specificity")
    raw = _rogan_gladen(observed_pass / n, sens, spec)
    if raw is None:
        raise UndefinedStatisticError(
            f"{func}: undefined when sensitivity + specificity <= 1 (got {sens:.3f} + "
            f"{spec:.3f}): the judge tells PASS from FAIL no better than chance"
        )

    rng = random.Random(seed)
    corrected: list[float] = []
    for _ in range(draws):
        p = _jeffreys(rng, observed_pass, n)
        se = _jeffreys(rng, *sens_counts) if sens_counts else sens
        sp = _jeffreys(rng, *spec_counts) if spec_counts else spec
        value = _rogan_gladen(p, se, sp)
        if value is not None:
            corrected.append(_clip(value))
    undefined = draws - len(corrected)
    alpha = 1.0 - confidence
    warnings: list[str] = []
    if undefined > alpha * draws:
        low, high = 0.0, 1.0
        warnings.append(
            f"{undefined} of {draws} bootstrap draws had sensitivity + specificity <= 1: the "
            "labels cannot rule out a judge no better than chance, so the interval is [0, 1]"
        )
    else:
        corrected.sort()
        low, high = _percentile(corrected, alpha / 2), _percentile(corrected, 1 - alpha / 2)
        if undefined:
            warnings.append(
                f"{undefined} of {draws} bootstrap draws had no correction and were left out"
            )
    if raw != _clip(raw):
        warnings.append(
            f"the corrected rate {raw:.1%} fell outside [0, 1] and was clipped: the observed rate "
            "and the calibration disagree"
        )

    def described(name: str, value: float, counts: tuple[int, int] | None) -> str:
        return (
            f"{name} {counts[0]}/{counts[1]}" if counts else f"{name} {value:.3f} (taken as exact)"
        )

    method = (
        f"Rogan-Gladen correction; {confidence:.0%} interval from a seeded parametric bootstrap "
        f"({draws} draws, seed {seed}) over Jeffreys Beta posteriors of the observed pass rate "
        f"{observed_pass}/{n}, {described('sensitivity', sens, sens_counts)} and "
        f"{described('specificity', spec, spec_counts)}"
    )
    return CorrectedRate(
        rate=_clip(raw),
        low=low,
        high=high,
        observed=Rate.of(observed_pass, n),
        sensitivity=sens,
        specificity=spec,
        clipped=raw != _clip(raw),
        method=method,
        draws=draws,
        undefined_draws=undefined,
        warnings=tuple(warnings),
    )


# ---------------------------------------------------------------- prediction-powered rates


@dataclass(frozen=True)
class PPIRate:
    """A prediction-powered pass rate with its interval, from ``ppi_pass_rate``.

    ``value``, ``low`` and ``high`` are clipped to [0, 1] (``float()`` gives
    ``value``); ``standard_error`` is the unclipped estimator's. ``effective_labels`` is how many human
    labels alone, with the same per-label variance, would give an interval of
    the same width. ``lambda_`` is the weight on the judge (1 for plain PPI).

    >>> r = PPIRate(0.7, 0.6, 0.8, 0.95, 0.051, 80.6, 40, 400, True, 0.8, False)
    >>> print(r)
    PPI++ pass rate 70.0% [60.0%, 80.0%] from 40 human labels + 400 judge verdicts (worth 81 labels; λ = 0.80)
    >>> r.to_dict()["effective_labels"]
    80.6
    """  # noqa: E501

    value: float
    low: float
    high: float
    confidence: float
    standard_error: float
    effective_labels: float
    n_labelled: int
    n_unlabelled: int
    tuned: bool
    lambda_: float
    weighted: bool

    @property
    def estimator(self) -> str:
        """``"ppi++"`` or ``"ppi"``, with ``" weighted"`` for a non-uniform selection."""
        return ("ppi++" if self.tuned else "ppi") + (" weighted" if self.weighted else "")

    def to_dict(self) -> dict[str, float | int | bool | str]:
        """The fields under stable JSON keys (``lambda`` without the underscore)."""
        return {
            "estimator": self.estimator,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "standard_error": self.standard_error,
            "effective_labels": self.effective_labels,
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "tuned": self.tuned,
            "lambda": self.lambda_,
            "weighted": self.weighted,
        }

    def __float__(self) -> float:
        return self.value

    def __str__(self) -> str:
        name = ("PPI++" if self.tuned else "PPI") + (" (weighted)" if self.weighted else "")
        return (
            f"{name} pass rate {self.value:.1%} [{self.low:.1%}, {self.high:.1%}] from "
            f"{self.n_labelled} human labels + {self.n_unlabelled} judge verdicts "
            f"(worth {self.effective_labels:.0f} labels; λ = {self.lambda_:.2f})"
        )


def _verdicts(values: Iterable[str | bool], name: str, func: str) -> list[float]:
    """PASS/True as 1.0 and FAIL/False as 0.0; anything else is refused."""
    out = []
    for index, value in enumerate(values):
        if isinstance(value, bool):
            out.append(1.0 if value else 0.0)
        elif value in ("PASS", "FAIL"):
            out.append(1.0 if value == "PASS" else 0.0)
        else:
            raise StatisticsError(
                f"{func}: {name}[{index}] must be 'PASS', 'FAIL' or a bool, got {value!r}"
            )
    return out


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def _covariance(xs: list[float], ys: list[float]) -> float:
    """The population (divide-by-n) covariance; ``_covariance(xs, xs)`` is the variance."""
    mx, my = _mean(xs), _mean(ys)
    return math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / len(xs)


def _probabilities(values: Iterable[float], n: int, func: str) -> list[float]:
    out = list(values)
    if len(out) != n:
        raise StatisticsError(
            f"{func}: selection_probabilities must give one probability per labelled case "
            f"({n}), got {len(out)}"
        )
    for index, value in enumerate(out):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value <= 1:
            raise StatisticsError(
                f"{func}: selection_probabilities[{index}] must be above 0 and at most 1, "
                f"got {value!r}"
            )
    return [float(value) for value in out]


def ppi_pass_rate(
    judge_labelled: Iterable[str | bool],
    human_labelled: Iterable[str | bool],
    judge_unlabelled: Iterable[str | bool],
    *,
    confidence: float = 0.95,
    tuned: bool = True,
    selection_probabilities: Iterable[float] | None = None,
) -> PPIRate:
    """Return the prediction-powered pass rate from judge verdicts and a few human labels.

    ``judge_labelled`` and ``human_labelled`` pair up case by case on the
    human-labelled cases; ``judge_unlabelled`` holds the judge's verdict on
    every other case. Verdicts are ``"PASS"``/``"FAIL"`` or booleans. With
    f the judge (1 = PASS), Y the human, n labels and N other cases:

    * ``tuned=False``, plain PPI (Angelopoulos, Bates, Fannjiang, Jordan &
      Zrnic, *Science* 2023): θ̂ = mean_N(f) + mean_n(Y − f), the judge's
      rate plus the mean human-minus-judge correction, with the normal
      interval θ̂ ± z·sqrt(σ²_f/N + σ²_{Y−f}/n).
    * ``tuned=True``, PPI++ (Angelopoulos, Duchi & Zrnic 2023): θ̂ =
      λ·mean_N(f) + mean_n(Y − λf) with λ = cov_n(Y, f) / ((1 + n/N)·
      var_{n+N}(f)) clipped to [0, 1] (0 when the judge never varies), and
      θ̂ ± z·sqrt(λ²σ²_f/N + σ²_{Y−λf}/n). λ = 0 is the labels-only mean.

    What is guaranteed, and only asymptotically (n, N → ∞ with n/N fixed):
    each interval covers the true rate with probability → ``confidence``
    whatever the judge's errors are, provided the labelled cases are a
    uniform random sample of all cases; the tuned λ converges to the
    variance-minimising weight in [0, 1], so the tuned interval's width
    converges to at most that of the labels-only normal interval (λ = 0) and
    of plain PPI (λ = 1). In a finite sample the estimated λ is off by
    O(1/√n), so the tuned width may exceed the labels-only width by a little
    (relatively O(1/n)); it is not a per-sample bound. With 50 to 100
    labels, simulated 95% intervals covered 92–95% of the time (PPI++ the
    lower end, its λ being estimated from the same labels). The conventions
    (variances dividing by n, λ's pooled variance dividing by n + N − 1)
    are those of the ``ppi_py`` package, whose results this function
    reproduces. ``value``, ``low`` and ``high`` are clipped to [0, 1]: the
    estimator itself can step outside, and clipping never uncovers a rate.

    ``effective_labels`` = σ²_Y / se², with σ²_Y = p(1 − p) at the labels'
    pass rate: the labels a labels-only normal interval would need for the
    same width (0 when every label is the same verdict, which leaves the
    labels alone no interval to compare with).

    **Non-uniform selection** (active inference, Zrnic & Candès 2024): when
    the labelled cases were chosen with unequal probabilities, say mostly
    the ones the judge was least sure of, pass each labelled case's
    probability of having been chosen as ``selection_probabilities``. The
    estimate is then inverse-probability weighted over all M = n + N cases,
    θ̂ = mean_M(λf) + (1/M)·Σ_labelled (Y − λf)/π, with interval θ̂ ±
    z·sd_M(Z)/√M over the per-case terms Z, and λ (tuned) the in-sample
    minimiser of that variance, clipped to [0, 1]. It is valid (same
    asymptotics) when every case was sent to a human independently with
    its recorded probability π > 0, fixed by a known design before its label
    was seen (it may depend on the judge, never on the human label); a
    fixed budget drawn without replacement is close to that. Small π give
    huge weights and a skewed sum that the normal interval undercovers: in a
    simulation of 1,000 cases with π = 0.05 for the judge's PASSes and 0.25
    for its FAILs (about 110 labels) the 95% interval covered 90% of the
    time, with 0.15 and 0.35 (about 210 labels) 93%. Mix the design with a
    uniform share so that no π is tiny.

    Two labelled cases where judge and human agree, one where the judge
    passed a failure, and 7 more judge verdicts (5 PASS): plain PPI is
    mean_N(f) + mean_n(Y − f) = 5/7 + (0 + 0 − 1)/3 = 0.381.

    >>> r = ppi_pass_rate(["PASS", "FAIL", "PASS"], ["PASS", "FAIL", "FAIL"],
    ...                   ["PASS"] * 5 + ["FAIL"] * 2, tuned=False)
    >>> round(r.value, 3), r.low <= r.value <= r.high, r.lambda_
    (0.381, True, 1.0)

    Raises ``StatisticsError`` when the labelled sequences differ in length,
    hold fewer than 2 labels, there is no unlabelled case (uniform
    selection), a verdict is not PASS/FAIL/bool, a selection probability is
    not in (0, 1] or ``confidence`` not in (0, 1); and
    ``UndefinedStatisticError`` when the estimated standard error is 0 (for
    example humans and judge agreeing on one verdict throughout), where a
    normal interval would have zero width.
    """
    func = "ppi_pass_rate"
    confidence = _number(confidence, "confidence", func)
    f_l = _verdicts(judge_labelled, "judge_labelled", func)
    y = _verdicts(human_labelled, "human_labelled", func)
    f_u = _verdicts(judge_unlabelled, "judge_unlabelled", func)
    n, big_n = len(f_l), len(f_u)
    if len(y) != n:
        raise StatisticsError(
            f"{func}: judge_labelled and human_labelled must pair up case by case, "
            f"got {n} and {len(y)} verdicts"
        )
    if n < 2:
        raise StatisticsError(f"{func}: needs at least 2 human labels, got {n}")
    if selection_probabilities is None:
        if big_n == 0:
            raise StatisticsError(
                f"{func}: needs at least 1 judge verdict on an unlabelled case "
                "(with every case labelled, use wilson_interval on the labels)"
            )
        lam = 1.0
        if tuned:
            pooled = _covariance(f_l + f_u, f_l + f_u) * (n + big_n) / (n + big_n - 1)
            lam = 0.0 if pooled == 0 else _covariance(y, f_l) / ((1 + n / big_n) * pooled)
            lam = min(1.0, max(0.0, lam))
        residual = [h - lam * f for h, f in zip(y, f_l, strict=True)]
        value = lam * _mean(f_u) + _mean(residual)
        variance = lam * lam * _covariance(f_u, f_u) / big_n + _covariance(residual, residual) / n
        label_rate = _mean(y)
    else:
        pis = _probabilities(selection_probabilities, n, func)
        # per-case term Z = λ·a + b over all M cases: a = f(1 − ξ/π), b = Y·ξ/π
        a = [f * (1.0 - 1.0 / pi) for f, pi in zip(f_l, pis, strict=True)] + f_u
        b = [h / pi for h, pi in zip(y, pis, strict=True)] + [0.0] * big_n
        lam = 1.0
        if tuned:
            spread = _covariance(a, a)
            lam = 0.0 if spread == 0 else min(1.0, max(0.0, -_covariance(a, b) / spread))
        z_terms = [lam * ai + bi for ai, bi in zip(a, b, strict=True)]
        value = _mean(z_terms)
        variance = _covariance(z_terms, z_terms) / len(z_terms)
        label_rate = math.fsum(h / pi for h, pi in zip(y, pis, strict=True)) / math.fsum(
            1.0 / pi for pi in pis
        )
    if variance <= 0.0:
        raise UndefinedStatisticError(
            f"{func}: the interval is undefined because the estimated standard error is 0 "
            "(judge and humans leave no variation to measure); label more cases or use "
            "wilson_interval on the labels"
        )
    se = math.sqrt(variance)
    half = _z((1.0 + confidence) / 2.0) * se
    return PPIRate(
        value=_clip(value),
        low=_clip(value - half),
        high=_clip(value + half),
        confidence=confidence,
        standard_error=se,
        effective_labels=label_rate * (1.0 - label_rate) / variance,
        n_labelled=n,
        n_unlabelled=big_n,
        tuned=tuned,
        lambda_=lam,
        weighted=selection_probabilities is not None,
    )


# ---------------------------------------------------------------- means


def _t_two_sided_mass(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` degrees of freedom (A&S 26.7.3, exact series)."""
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    if df % 2:
        if df == 1:
            return 2.0 * theta / math.pi
        term, total = 1.0, 1.0
        for j in range(3, df - 1, 2):  # 1 + 2/3 cos² + 2·4/(3·5) cos⁴ + … up to cos^(df−3)
            term *= (j - 1) / j * cos2
            total += term
        return 2.0 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    term, total = 1.0, 1.0
    for j in range(2, df - 1, 2):  # 1 + 1/2 cos² + 1·3/(2·4) cos⁴ + … up to cos^(df−2)
        term *= (j - 1) / j * cos2
        total += term
    return math.sin(theta) * total


def _t_quantile(probability: float, df: int) -> float:
    """The upper quantile of Student's t for ``probability`` in (0.5, 1).

    Bisection on the exact series up to 200 degrees of freedom; above that the
    Cornish-Fisher expansion in 1/df (A&S 26.7.5), whose relative error there is
    below 1e-7 for confidence levels up to 99.9%.
    """
    z = _z(probability)
    if df > 200:
        z2 = z * z
        return (
            z
            + (z2 + 1.0) * z / (4.0 * df)
            + ((5.0 * z2 + 16.0) * z2 + 3.0) * z / (96.0 * df * df)
            + (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / (384.0 * df**3)
        )
    mass = 2.0 * probability - 1.0
    low, high = 0.0, max(2.0 * z, 1.0)
    while _t_two_sided_mass(high, df) < mass:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if _t_two_sided_mass(middle, df) < mass:
            low = middle
        else:
            high = middle
    return high


def mean_interval(values: Iterable[float], confidence: float = 0.95) -> Interval:
    """Return the Student t interval ``(low, high)`` for the mean of ``values``.

    ``mean ± t(1 − α/2, n − 1) · s / √n`` with ``s`` the sample standard
    deviation; not clipped (callers that know the values' range clip it).

    >>> [round(bound, 3) for bound in mean_interval([0.5, 1.0, 0.0, 1.0, 0.5])]
    [0.081, 1.119]
    >>> mean_interval([1.0, 1.0, 1.0])
    Interval(low=1.0, high=1.0)

    Raises ``UndefinedStatisticError`` for fewer than 2 values and
    ``StatisticsError`` for a value that is not a finite number.
    """
    func = "mean_interval"
    confidence = _number(confidence, "confidence", func)
    data = list(values)
    for value in data:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise StatisticsError(f"{func}: values must be numbers, got {value!r}")
        if not math.isfinite(value):
            raise StatisticsError(f"{func}: values must be finite, got {value!r}")
    n = len(data)
    if n < 2:
        raise UndefinedStatisticError(
            f"{func}: the interval is undefined for fewer than 2 values, got {n}"
        )
    mean = math.fsum(data) / n
    variance = math.fsum((value - mean) ** 2 for value in data) / (n - 1)
    half = _t_quantile((1.0 + confidence) / 2.0, n - 1) * math.sqrt(variance / n)
    return Interval(mean - half, mean + half)
