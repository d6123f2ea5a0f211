"""Stopping early: a gate decided as soon as the data settle it, with the error rate kept.

A confidence *sequence* is a sequence of intervals, one after each case, that
all contain the true pass rate at once with probability at least the chosen
confidence. That is what makes it safe to look after every case and stop the
moment the interval clears the gate's threshold: the guarantee holds at every
time, including a time chosen by looking at the data.

=========================  ==================================================
``ConfidenceSequence``     updated one outcome at a time (``update``), with
                           ``low``, ``high`` and ``n`` valid at every step
``gate_decision``          ``"pass"``, ``"block"`` or ``"undecided"``
``sequential_gate``        outcomes in order; stops at the first decision and
                           says how many cases it took
=========================  ==================================================

Why not re-check a Wilson interval after every case
---------------------------------------------------

A 95% Wilson interval is a statement about one look at a number of cases
fixed in advance: over repeated suites, 5% of those intervals miss the true
rate. Checking it after every case and stopping the first time it clears the
threshold gives the data a fresh chance to miss at every look. The misses at
different sizes are not the same event, so the chance that *at least one* of
them happens grows with the number of looks: by the law of the iterated
logarithm a running mean wanders outside ``±z·sqrt(p(1−p)/t)`` infinitely
often, so with unlimited looks the chance tends to 1, and with a few hundred
looks it is already several times the nominal 5% (the tests and
``tests/benchmarks/bench_sequential.py`` measure it). A gate that stops on
the first Wilson interval to clear its threshold decides wrongly far more
often than its stated confidence.

The method
----------

Robbins' (1970) uniform-mixture confidence sequence for a Bernoulli mean
(H. Robbins, "Statistical methods related to the law of the iterated
logarithm", *Annals of Mathematical Statistics* 41(5), 1397–1409; the method
of mixtures, as reviewed by Howard, Ramdas, McAuliffe and Sekhon 2021,
*Annals of Statistics* 49(2), 1055–1080). After ``t`` cases with ``s``
passes and ``f = t − s`` failures, the likelihood ratio of a rate ``q``
against a candidate rate ``m``, averaged over a uniform prior on ``q``, is::

    M_t(m) = ∫₀¹ qˢ(1−q)ᶠ dq / (mˢ(1−m)ᶠ) = 1 / ((t+1)·C(t, s)·mˢ(1−m)ᶠ)

For the true rate ``m``, ``M_t(m)`` is a non-negative martingale starting at
1, so by Ville's inequality ``P(M_t(m) ≥ 1/α for some t) ≤ α``. The
confidence sequence is every ``m`` not yet rejected::

    C_t = { m : (t+1)·C(t, s)·mˢ(1−m)ᶠ > α },    α = 1 − confidence

an interval around ``s/t`` (the condition is log-concave in ``m``).
Whether a given rate is in it takes three ``lgamma`` and two logarithms,
so ``contains`` and ``gate_decision`` test the threshold itself, exactly,
in constant time per case. The ends ``low`` and ``high`` are found on
demand by Newton's method from the rejected side, so they are themselves
rejected values: the interval shown is never narrower than the exact one,
and wider by a few units in the last place at most.

Each ``C_t`` is the interval for the data so far; it is not intersected
with the earlier ones. Intersecting would keep the guarantee, but it needs
both ends after every case; a gate that stops at its first decision loses
nothing without it.

The uniform prior spends no assumption on where the rate is; the price is
an interval wider than a fixed-size Wilson interval at any single size (at
90 of 100, [77.2%, 97.1%] against Wilson's [82.6%, 94.5%]), paid once for
unlimited looks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, NamedTuple

from ..errors import InputError, plural
from ..stats import StatisticsError

__all__ = [
    "ConfidenceSequence",
    "Decision",
    "EarlyDecision",
    "SequentialDecision",
    "StopWhenDecided",
    "gate_decision",
    "sequential_gate",
]

Decision = Literal["pass", "block", "undecided"]

_MAX_STEPS = 200
_NUDGES = 64
_TOLERANCE = 1e-12  # a relative Newton step this small leaves an error of about its square


def _confidence(value: Any, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise StatisticsError(
            f"{func}: confidence must be a number strictly between 0 and 1, got {value!r}"
        )
    return float(value)


def _threshold(value: Any, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise StatisticsError(f"{func}: threshold must be a rate between 0 and 1, got {value!r}")
    return float(value)


def _outcome(value: Any, func: str) -> bool:
    if not isinstance(value, bool):
        raise StatisticsError(f"{func}: an outcome must be True or False, got {value!r}")
    return value


def _boundary(
    excess: Callable[[float], float],
    slope: Callable[[float], float],
    outside: float,
    inside: float,
) -> float:
    """The point where ``excess`` crosses 0 between ``outside`` and ``inside``, on the outside.

    ``excess`` is convex and monotone on the bracket, non-negative at
    ``outside`` and negative at ``inside``. Newton's method started outside
    then stays outside and approaches the root monotonically (the tangent of
    a convex function lies below it), so every iterate is a rejected value.
    It stops when a step is below ``_TOLERANCE`` of the value (the error left
    is then about the square of that) or when rounding carries a step past
    the root, and then returns the nearest rejected float outwards; a step
    that would leave the bracket is replaced by bisection.
    """
    value = excess(outside)
    for _ in range(_MAX_STEPS):
        candidate = outside - value / slope(outside)
        if value == 0.0 or candidate == outside:  # on the root, to the last place
            break
        newton = min(outside, inside) < candidate < max(outside, inside)
        if not newton:
            candidate = (outside + inside) / 2.0
        if candidate in (outside, inside):
            break
        candidate_value = excess(candidate)
        if candidate_value >= 0.0:
            converged = abs(candidate - outside) <= _TOLERANCE * abs(candidate)
            outside, value = candidate, candidate_value
            if converged:
                break
        elif newton:
            # past the root: only rounding does that, right next to it; the first
            # rejected value a few units in the last place outwards is the end
            for _ in range(_NUDGES):
                candidate = math.nextafter(candidate, outside)
                if candidate == outside or excess(candidate) >= 0.0:
                    return candidate
            break
        else:
            inside = candidate
    return outside


def _robbins_bounds(
    passes: int, n: int, log_level: float, start: tuple[float, float] | None = None
) -> tuple[float, float]:
    """The ends of ``{m : (n+1)·C(n, s)·mˢ(1−m)ᶠ > α}``, with ``log_level = log(1/α)``.

    ``start`` is a guess of the two ends (the previous step's), used as
    Newton's first point when it is a rejected value.
    """
    failures = n - passes
    # log of the mixture's numerator, ∫ qˢ(1−q)ᶠ dq = B(s+1, f+1) = 1/((n+1)·C(n, s))
    log_beta = math.lgamma(passes + 1) + math.lgamma(failures + 1) - math.lgamma(n + 2)

    def excess(m: float) -> float:  # log M_n(m) − log(1/α): rejected when ≥ 0
        return log_beta - passes * math.log(m) - failures * math.log1p(-m) - log_level

    def slope(m: float) -> float:
        return failures / (1.0 - m) - passes / m

    mean = passes / n  # M_n(mean) ≤ 1 < 1/α: the observed rate is never rejected
    low, high = 0.0, 1.0
    guess_low, guess_high = start if start is not None else (mean / 2.0, (1.0 + mean) / 2.0)
    if passes:
        outside = guess_low if 0.0 < guess_low < mean else mean / 2.0
        while excess(outside) < 0.0:  # excess grows without bound as m → 0
            outside /= 2.0
        low = _boundary(excess, slope, outside, mean)
    if failures:
        outside = guess_high if mean < guess_high < 1.0 else (1.0 + mean) / 2.0
        while excess(outside) < 0.0:  # and as m → 1
            outside = (1.0 + outside) / 2.0
        high = _boundary(excess, slope, outside, mean)
    return low, high


class ConfidenceSequence:
    """An anytime-valid confidence sequence for a pass rate, updated one outcome at a time.

    Robbins' uniform-mixture sequence (see the module docstring): with
    probability at least ``confidence`` the true rate lies between ``low``
    and ``high`` after every update at once, so they may be read, and acted
    on, after every case.

    >>> cs = ConfidenceSequence()
    >>> cs.low, cs.high, cs.n
    (0.0, 1.0, 0)
    >>> for passed in [True] * 30:
    ...     cs.update(passed)
    >>> cs.n, cs.passes, round(cs.low, 4), cs.high
    (30, 30, 0.8071, 1.0)
    >>> print(cs)
    30/30 passed; rate in [80.7%, 100.0%] at 95% confidence, valid at every look

    Raises ``StatisticsError`` when ``confidence`` is not strictly between 0
    and 1.
    """

    def __init__(self, confidence: float = 0.95) -> None:
        self._confidence = _confidence(confidence, "ConfidenceSequence")
        self._log_level = -math.log1p(-self._confidence)  # log(1/α)
        self._n = 0
        self._passes = 0
        self._log_beta = 0.0  # log B(s+1, f+1): the mixture's numerator
        self._bounds: tuple[float, float] | None = (0.0, 1.0)  # None: not yet computed
        self._last_bounds = (0.0, 1.0)  # the latest computed, Newton's starting guess

    @property
    def confidence(self) -> float:
        """The chance that every interval of the sequence holds the true rate."""
        return self._confidence

    @property
    def n(self) -> int:
        """Outcomes seen so far."""
        return self._n

    @property
    def passes(self) -> int:
        """Passing outcomes seen so far."""
        return self._passes

    @property
    def rate(self) -> float | None:
        """``passes / n``, or None before the first outcome."""
        return self._passes / self._n if self._n else None

    def _ends(self) -> tuple[float, float]:
        if self._bounds is None:
            self._bounds = _robbins_bounds(
                self._passes, self._n, self._log_level, self._last_bounds
            )
            self._last_bounds = self._bounds
        return self._bounds

    @property
    def low(self) -> float:
        """The lower end of the current interval (0 before any outcome)."""
        return self._ends()[0]

    @property
    def high(self) -> float:
        """The upper end of the current interval (1 before any outcome)."""
        return self._ends()[1]

    def update(self, passed: bool) -> None:
        """Add one outcome (``True`` = pass); the interval is that of all outcomes so far.

        >>> cs = ConfidenceSequence()
        >>> cs.update(False)
        >>> cs.n, cs.low, round(cs.high, 4)
        (1, 0.0, 0.975)

        Raises ``StatisticsError`` when ``passed`` is not a boolean.
        """
        self._passes += _outcome(passed, "ConfidenceSequence.update")
        self._n += 1
        failures = self._n - self._passes
        self._log_beta = (
            math.lgamma(self._passes + 1) + math.lgamma(failures + 1) - math.lgamma(self._n + 2)
        )
        self._bounds = None

    def extend(self, outcomes: Iterable[bool]) -> None:
        """Add several outcomes in order, as ``update`` one after another.

        >>> cs = ConfidenceSequence(0.9)
        >>> cs.extend([True, True, False])
        >>> cs.n, cs.passes
        (3, 2)
        """
        for passed in outcomes:
            self.update(passed)

    def contains(self, rate: float) -> bool:
        """True when ``rate`` is in the current interval: not yet rejected.

        Exact: ``(n+1)·C(n, s)·rateˢ(1−rate)ᶠ > α``, in constant time.

        >>> cs = ConfidenceSequence()
        >>> cs.extend([True] * 30)
        >>> cs.contains(0.9), cs.contains(0.8), cs.contains(1.0)
        (True, False, True)
        """
        if not 0.0 <= rate <= 1.0:  # also false for NaN
            return False
        failures = self._n - self._passes
        if rate == 0.0:
            return self._passes == 0
        if rate == 1.0:
            return failures == 0
        log_mixture = self._log_beta - self._passes * math.log(rate) - failures * math.log1p(-rate)
        return log_mixture < self._log_level

    def to_dict(self) -> dict[str, Any]:
        """``{"n", "passes", "rate", "low", "high", "confidence", "method"}``.

        >>> ConfidenceSequence().to_dict()["method"]
        'robbins-uniform-mixture'
        """
        low, high = self._ends()
        return {
            "n": self._n,
            "passes": self._passes,
            "rate": self.rate,
            "low": low,
            "high": high,
            "confidence": self._confidence,
            "method": "robbins-uniform-mixture",
        }

    def __str__(self) -> str:
        low, high = self._ends()
        return (
            f"{self._passes}/{self._n} passed; rate in [{low:.1%}, {high:.1%}] "
            f"at {self._confidence:.0%} confidence, valid at every look"
        )

    def __repr__(self) -> str:
        return (
            f"ConfidenceSequence(confidence={self._confidence!r}, n={self._n}, "
            f"passes={self._passes})"
        )


def gate_decision(cs: ConfidenceSequence, threshold: float) -> Decision:
    """Return ``"pass"``, ``"block"`` or ``"undecided"`` for a gate at ``threshold``.

    ``"pass"`` once every rate in the interval is at or above the threshold,
    ``"block"`` once every rate in it is below, ``"undecided"`` otherwise. A
    gate passes when the rate is at least its threshold, so a threshold of 0
    passes at once and a threshold of 1 can only block (at the first
    failure). The threshold itself is tested, exactly (``cs.contains``), so
    the decision never depends on how precisely ``low`` and ``high`` were
    found. The chance of ever deciding wrongly is at most
    ``1 − cs.confidence``, however often it is asked.

    >>> cs = ConfidenceSequence()
    >>> gate_decision(cs, 0.8)
    'undecided'
    >>> cs.extend([True] * 30)
    >>> gate_decision(cs, 0.8), gate_decision(cs, 0.9)
    ('pass', 'undecided')
    >>> cs = ConfidenceSequence()
    >>> cs.extend([False, True] * 5)
    >>> gate_decision(cs, 0.9)
    'block'

    Raises ``StatisticsError`` when ``threshold`` is not between 0 and 1.
    """
    threshold = _threshold(threshold, "gate_decision")
    if threshold == 0.0:
        return "pass"
    rate = cs.rate
    if rate is None or cs.contains(threshold):
        return "undecided"
    # the interval is an interval around the observed rate: a rejected
    # threshold lies wholly on one side of it
    return "pass" if threshold <= rate else "block"


class SequentialDecision(NamedTuple):
    """What :func:`sequential_gate` found: the decision and the cases it took.

    >>> d = SequentialDecision("pass", 29, 29, 200, 0.8, 0.8016, 1.0, 0.95)
    >>> d.saved
    171
    >>> print(d)
    pass after 29 of 200 cases (29 passed, rate in [80.2%, 100.0%]); 171 cases saved
    """

    decision: Decision
    cases_used: int
    passes: int
    cases_total: int
    threshold: float
    low: float
    high: float
    confidence: float

    @property
    def saved(self) -> int:
        """Cases not needed: ``cases_total − cases_used``."""
        return self.cases_total - self.cases_used

    def to_dict(self) -> dict[str, Any]:
        """The decision as a JSON-ready dict (the fields, and ``saved``).

        >>> SequentialDecision("block", 9, 3, 50, 0.9, 0.1, 0.8, 0.95).to_dict()["saved"]
        41
        """
        return {
            "decision": self.decision,
            "cases_used": self.cases_used,
            "passes": self.passes,
            "cases_total": self.cases_total,
            "saved": self.saved,
            "threshold": self.threshold,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
        }

    def __str__(self) -> str:
        return (
            f"{self.decision} after {self.cases_used} of {plural(self.cases_total, 'case')} "
            f"({self.passes} passed, rate in [{self.low:.1%}, {self.high:.1%}]); "
            f"{plural(self.saved, 'case')} saved"
        )


def sequential_gate(
    outcomes: Iterable[bool], threshold: float, *, confidence: float = 0.95
) -> SequentialDecision:
    """Feed ``outcomes`` in order and stop at the first decided gate outcome.

    The order should be random (seeded) and fixed before the run: an early
    stop then leaves an unbiased sample. ``cases_total`` counts every outcome
    given, used or not; when the gate is still undecided after all of them
    the decision is ``"undecided"`` and nothing is saved.

    >>> outcomes = [True] * 200
    >>> print(sequential_gate(outcomes, 0.8))
    pass after 29 of 200 cases (29 passed, rate in [80.2%, 100.0%]); 171 cases saved
    >>> sequential_gate([True, False] * 100, 0.5).decision
    'undecided'

    Raises ``StatisticsError`` for an outcome that is not a boolean, and for
    a ``threshold`` or ``confidence`` that ``gate_decision`` or
    ``ConfidenceSequence`` refuses.
    """
    threshold = _threshold(threshold, "sequential_gate")
    cs = ConfidenceSequence(confidence)
    outcomes = [_outcome(passed, "sequential_gate") for passed in outcomes]
    decision: Decision = gate_decision(cs, threshold)
    for passed in outcomes:
        if decision != "undecided":
            break
        cs.update(passed)
        decision = gate_decision(cs, threshold)
    return SequentialDecision(
        decision, cs.n, cs.passes, len(outcomes), threshold, cs.low, cs.high, cs.confidence
    )


class EarlyDecision(NamedTuple):
    """A category decided before all its cases ran: the outcome, after how many cases, and
    the confidence sequence's interval then."""

    category: str
    outcome: str
    cases: int
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        """``{"outcome", "cases", "low", "high"}``."""
        return {"outcome": self.outcome, "cases": self.cases, "low": self.low, "high": self.high}


class StopWhenDecided:
    """A run observer (:class:`tinyeval.runner.Observer`) that stops running a category's
    cases once an anytime-valid confidence sequence of its pass rate lies wholly on one side
    of its threshold (``thresholds``: category -> rate). Give the cases in a random order, or
    the early stop is not a fair sample.

    The sequence follows the pass rate of the rows, which for a judged category is the judge's.
    Where the gate decides on people's estimate instead (``people``: labels or a calibration
    were given; ``labelled``: the categories whose cases carry their own label; or a judged row
    carries one), the category is never stopped early: all its cases run, and the summary says so.

    >>> from tinyeval.dataset import Case
    >>> from tinyeval.runner import RunResult
    >>> watch = StopWhenDecided({"c": 0.5})
    >>> for i in range(12):
    ...     _ = watch.row({"category": "c", "status": "pass"}, RunResult())
    >>> watch.decisions["c"].outcome, watch.skip(Case(id="x", category="c"))
    ('pass', True)
    """

    name = "stop_when_decided"

    def __init__(
        self,
        thresholds: Mapping[str, float],
        in_shard: int | None = None,
        *,
        people: bool = False,
        labelled: Iterable[str] = (),
    ) -> None:
        self.thresholds = {str(c): float(t) for c, t in thresholds.items()}
        self.sequences = {category: ConfidenceSequence() for category in self.thresholds}
        self.decisions: dict[str, EarlyDecision] = {}
        self.in_shard = in_shard  # the cases the run was to see, for what stopping saved
        self.people, self.labelled = people, set(labelled)
        self.on_people: set[str] = set()  # judged categories the gate decides on people
        self._result: Any = None

    def cases(self, cases: Iterable[Any]) -> Iterable[Any]:
        """The cases as given (their order is the caller's: shuffle them)."""
        return cases

    def skip(self, case: Any) -> bool:
        """A decided category's remaining cases would change nothing."""
        return bool(self.decisions) and case.category in self.decisions

    def row(self, row: Mapping[str, Any], result: Any) -> None:
        """Update the row's category's sequence; note the category once it is decided."""
        self._result = result
        category = str(row["category"])
        sequence = self.sequences.get(category)
        if sequence is None or category in self.decisions:
            return
        skipped = row.get("judge_skipped") not in (None, "category not judged")
        if (row.get("judges") or skipped) and (
            self.people or category in self.labelled or row.get("label") is not None
        ):
            self.on_people.add(category)  # the judge's rate is not the one its gate decides on
            del self.sequences[category]
            return
        sequence.update(row["status"] == "pass")
        decision = gate_decision(sequence, self.thresholds[category])
        if decision != "undecided":
            self.decisions[category] = EarlyDecision(
                category, decision, sequence.n, sequence.low, sequence.high
            )

    def manifest(self) -> dict[str, Any]:
        """The thresholds, and that the run makes fewer rows than cases by design."""
        return {"thresholds": dict(sorted(self.thresholds.items())), "skips_cases": True}

    def summary(self) -> list[str]:
        """Per decided category, the outcome and the cases needed; the cases not run."""
        result = self._result
        if result is None:
            return []
        lines = ["stopped when decided (anytime-valid 95% confidence sequence, Robbins 1970):"]
        for category, decision in sorted(self.decisions.items()):
            ran = result.categories[category].total if category in result.categories else 0
            lines.append(
                f"  {category}: {decision.outcome} after {decision.cases} cases "
                f"[{decision.low:.1%}, {decision.high:.1%}]; {ran} ran"
            )
        if self.on_people:
            names = ", ".join(sorted(self.on_people))
            said = "the gate decides on people's estimate, not on the judge's rate"
            lines.append(f"  {names}: not stopped: {said}; every case ran")
        skipped = (self.in_shard or result.total) - result.total
        tokens = sum(result.usage.get(k, 0) for k in ("input_tokens", "output_tokens"))
        per_case = tokens / result.total if result.total else 0
        saved = f", about {round(per_case * skipped):,} tokens" if tokens else ""
        lines.append(
            f"  {plural(skipped, 'case')} not run{saved}; a later full run (with the cache) "
            "pays only for those"
        )
        return [*lines, ""]

    def to_dict(self) -> dict[str, Any]:
        """Per decided category, its :meth:`EarlyDecision.to_dict`."""
        return {category: d.to_dict() for category, d in self.decisions.items()}


def make(settings: Any, ready: Any) -> StopWhenDecided:
    """The observer of ``stop_when_decided``: each gated category's threshold."""
    from ..gating import gate_settings

    found = gate_settings(**settings.gate_options(recorded=True))
    default = found["default_threshold"]
    limits = {c: found["thresholds"].get(c, default) for c in ready.categories}
    thresholds = {c: float(t) for c, t in limits.items() if t is not None}
    if not thresholds:
        raise InputError(
            "needs thresholds: it stops a category once its gate is decided",
            field="stop_when_decided",
        )
    labelled = {case.category for case in ready.cases if case.label is not None}
    people = bool(settings.labels or settings.calibration)
    return StopWhenDecided(thresholds, ready.in_shard, people=people, labelled=labelled)
