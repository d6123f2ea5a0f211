"""Repeated trials: each case run K times, with the case, not the trial, as the unit.

Sampling the system under test several times per case answers questions a
single run cannot: does it pass *every* time (what a user relying on it
needs), does it pass *at least once* (what a retry loop can reach), and which
cases are flaky. But the K trials of one case are not K independent cases:
they share the input, and usually most of the outcome. A Wilson interval over
all K×n trials treats them as independent and is too narrow.

=====================  ======================================================
``pass_at_k``          chance that at least one of k trials passes (Chen et
                       al. 2021), estimated without bias from n trials
``pass_all_k``         chance that all k trials pass ("pass^k")
``summarize_trials``   per-case outcomes in; the mean pass rate, pass^k and
                       pass@k over cases, each with a case-level interval,
                       the naive K×n Wilson interval beside them, and the
                       flaky cases
=====================  ======================================================

The case-level interval
-----------------------

Every figure is a mean over cases of one number per case (its pass rate
``c/n``, or its ``pass_all_k`` or ``pass_at_k``), each case weighing the same
whatever its number of trials. The interval is the Wilson score interval
evaluated at an *effective sample size*, the design-effect approach of survey
statistics (Kish 1965; Korn and Graubard 1998 do the same with the
Clopper-Pearson interval)::

    n_eff = x̄(1 − x̄) / v,    v = Σ (x_i − x̄)² / N²

where ``v`` is the cluster-robust variance of the mean of the N per-case
values ``x_i`` (the cases are the clusters). Because every ``x_i`` lies in
[0, 1], ``n_eff`` is never below N, and it is capped at the number of
independent draws the trials could hold (all trials for the pass rate,
``Σ ⌊n_i/k⌋`` for pass^k and pass@k). So the interval always lies between
two familiar ones:

* when every case always passes or always fails, ``n_eff = N`` and the
  interval is exactly the Wilson interval over *cases*;
* when the cases are alike and only the trials vary, ``n_eff`` approaches
  the cap and the interval the naive Wilson interval over all trials.

When the data cannot show the between-case variance (a single case, or a
mean of exactly 0 or 1), each case counts as one observation (``n_eff = N``);
when every case has the same fractional value the cap applies.

Why not a case bootstrap: it is random (seed-dependent), collapses to a
single point whenever every case has the same value (20 of 20 cases passing
every trial would give [100%, 100%]), and percentile intervals undercover
with the few dozen cases a category often has. The design-effect Wilson
interval is exact arithmetic, deterministic, stays inside [0, 1], and reduces
to the per-case Wilson interval at the deterministic extreme.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, make_dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, NamedTuple

from ..errors import InputError, plural
from ..stats import Rate, StatisticsError, UndefinedStatisticError

__all__ = [
    "CaseLevelEstimate",
    "CaseTrials",
    "TrialSummary",
    "Trials",
    "pass_all_k",
    "pass_at_k",
    "summarize_trials",
    "trial_outcomes",
]

_FLAKY_SHOWN = 10  # the text form lists this many flaky ids, then says how many more


# ---------------------------------------------------------------- validation


def _whole(value: Any, name: str, func: str) -> int:
    """``value`` as an int; bools and floats are refused, not coerced."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise StatisticsError(f"{func}: {name} must be a whole number, got {value!r}")
    return int(value)


def _check_nck(n: Any, c: Any, k: Any, func: str) -> tuple[int, int, int]:
    n, c, k = _whole(n, "n", func), _whole(c, "c", func), _whole(k, "k", func)
    if n < 1:
        raise StatisticsError(f"{func}: n (the number of trials) must be at least 1, got {n}")
    if not 0 <= c <= n:
        raise StatisticsError(f"{func}: c (the passes) must be between 0 and n = {n}, got {c}")
    if not 1 <= k <= n:
        raise StatisticsError(f"{func}: k must be between 1 and n = {n}, got {k}")
    return n, c, k


def _confidence(value: Any, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise StatisticsError(
            f"{func}: confidence must be a number strictly between 0 and 1, got {value!r}"
        )
    return float(value)


# ---------------------------------------------------------------- per case


def pass_at_k(n: int, c: int, k: int) -> float:
    """Return the chance that at least one of ``k`` trials passes, from ``c`` passes in ``n``.

    The unbiased estimator of Chen et al. (2021, "Evaluating large language
    models trained on code", eq. 1): ``1 − C(n−c, k) / C(n, k)``, the chance
    that ``k`` trials drawn without replacement from the ``n`` include a pass.
    It is computed as the product ``1 − Π_{i=n−c+1}^{n} (1 − k/i)`` (summed in
    logarithms), so no huge binomial coefficient is ever formed.

    >>> pass_at_k(5, 2, 1)  # with k = 1 it is the pass rate c/n
    0.4
    >>> round(pass_at_k(5, 2, 2), 4)  # 1 − C(3,2)/C(5,2) = 1 − 3/10
    0.7
    >>> pass_at_k(10, 8, 3)  # fewer than k failures: every draw of 3 holds a pass
    1.0

    Raises ``StatisticsError`` unless ``n ≥ 1``, ``0 ≤ c ≤ n`` and
    ``1 ≤ k ≤ n`` are whole numbers.
    """
    n, c, k = _check_nck(n, c, k, "pass_at_k")
    if n - c < k:
        return 1.0
    # each factor 1 − k/i lies in (0, 1) here, because i > n − c ≥ k
    log_none_passes = math.fsum(math.log1p(-k / i) for i in range(n - c + 1, n + 1))
    return -math.expm1(log_none_passes)


def pass_all_k(n: int, c: int, k: int) -> float:
    """Return the chance that all ``k`` trials pass ("pass^k"), from ``c`` passes in ``n``.

    ``C(c, k) / C(n, k)``: the chance that ``k`` trials drawn without
    replacement from the ``n`` are all passes, an unbiased estimate of
    ``p^k`` for a case that passes each trial with chance ``p``. Computed as
    the product ``Π_{i=0}^{k−1} (c − i)/(n − i)``.

    >>> pass_all_k(5, 5, 5), pass_all_k(5, 4, 5)
    (1.0, 0.0)
    >>> round(pass_all_k(5, 4, 2), 4)  # C(4,2)/C(5,2) = 6/10
    0.6

    Raises ``StatisticsError`` for the same input as ``pass_at_k``.
    """
    n, c, k = _check_nck(n, c, k, "pass_all_k")
    if c < k:
        return 0.0
    failures = n - c
    # (c − i)/(n − i) = 1 − failures/(n − i), with n − i > failures here
    return math.exp(math.fsum(math.log1p(-failures / (n - i)) for i in range(k)))


# ---------------------------------------------------------------- the summary


class CaseTrials(NamedTuple):
    """One case's trials: ``passes`` of ``trials``.

    >>> case = CaseTrials("refund-12", 3, 5)
    >>> case.rate, case.flaky
    (0.6, True)
    """

    case_id: str
    passes: int
    trials: int

    @property
    def rate(self) -> float:
        """``passes / trials``."""
        return self.passes / self.trials

    @property
    def flaky(self) -> bool:
        """True when the trials disagree: some passed and some failed."""
        return 0 < self.passes < self.trials


class CaseLevelEstimate(NamedTuple):
    """A mean over cases with its case-level interval and effective sample size.

    ``effective_n`` is the number of independent observations the interval
    is worth (see the module docstring): from the number of cases up to the
    number of independent draws the trials hold.

    >>> estimate = CaseLevelEstimate(0.85, 0.77, 0.91, 103.2)
    >>> str(estimate)
    '85.0% [77.0%, 91.0%] (n_eff 103.2)'
    """

    value: float
    low: float
    high: float
    effective_n: float

    def __str__(self) -> str:
        return f"{self.value:.1%} [{self.low:.1%}, {self.high:.1%}] (n_eff {self.effective_n:.1f})"

    def to_dict(self) -> dict[str, Any]:
        """``{"value", "low", "high", "effective_n", "text"}``.

        >>> CaseLevelEstimate(0.5, 0.2, 0.8, 10.0).to_dict()["effective_n"]
        10.0
        """
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "effective_n": self.effective_n,
            "text": str(self),
        }


@dataclass(frozen=True)
class TrialSummary:
    """Repeated trials summed up over cases; build it with :func:`summarize_trials`.

    ``pass_rate`` is the mean over cases of each case's pass rate (pass@1),
    ``pass_all_k`` and ``pass_at_k`` the means of the per-case estimators,
    each a :class:`CaseLevelEstimate`. ``naive`` is the Wilson interval over
    all trials as if they were independent cases, kept so a report can show
    how much the honest interval widens. ``flaky`` lists, sorted, the ids of
    the cases whose trials disagree; ``cases`` the per-case counts in input
    order.

    >>> summary = summarize_trials({"a": [True, True], "b": [True, False], "c": [False, False]})
    >>> summary.flaky, round(summary.pass_rate.value, 4), summary.naive.n
    (('b',), 0.5, 6)
    """

    k: int
    confidence: float
    cases: tuple[CaseTrials, ...]
    pass_rate: CaseLevelEstimate
    naive: Rate
    pass_all_k: CaseLevelEstimate
    pass_at_k: CaseLevelEstimate
    flaky: tuple[str, ...]

    @property
    def n_cases(self) -> int:
        """The number of cases."""
        return len(self.cases)

    @property
    def n_trials(self) -> int:
        """The number of trials, over all cases."""
        return sum(case.trials for case in self.cases)

    @property
    def n_passes(self) -> int:
        """The number of passing trials, over all cases."""
        return sum(case.passes for case in self.cases)

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-ready dict with stable keys.

        >>> d = summarize_trials({"a": [True, False], "b": [True, True]}).to_dict()
        >>> sorted(d)  # doctest: +NORMALIZE_WHITESPACE
        ['cases', 'confidence', 'flaky', 'k', 'n_cases', 'n_passes', 'n_trials', 'naive',
         'pass_all_k', 'pass_at_k', 'pass_rate']
        >>> d["cases"]["a"]
        {'passes': 1, 'trials': 2}
        """
        return {
            "k": self.k,
            "confidence": self.confidence,
            "n_cases": self.n_cases,
            "n_trials": self.n_trials,
            "n_passes": self.n_passes,
            "pass_rate": self.pass_rate.to_dict(),
            "naive": self.naive.to_dict(),
            "pass_all_k": self.pass_all_k.to_dict(),
            "pass_at_k": self.pass_at_k.to_dict(),
            "flaky": list(self.flaky),
            "cases": {
                case.case_id: {"passes": case.passes, "trials": case.trials} for case in self.cases
            },
        }

    def __str__(self) -> str:
        trials = {case.trials for case in self.cases}
        per_case = (
            f"{plural(trials.pop(), 'trial')} each" if len(trials) == 1 else "trials per case vary"
        )
        k = self.k
        labels = (
            "pass@1 (mean pass rate)",
            f"pass^{k} (all {k} pass)",
            f"pass@{k} (any of {k} passes)",
        )
        width = max(map(len, labels)) + 1
        lines = [
            f"{plural(self.n_cases, 'case')}, {per_case} ({plural(self.n_trials, 'trial')}); "
            f"{self.confidence:.0%} intervals with the case as the unit",
            f"{labels[0]:<{width}}{self.pass_rate}",
            f"  naive, trials as independent: {self.naive}",
            f"{labels[1]:<{width}}{self.pass_all_k}",
            f"{labels[2]:<{width}}{self.pass_at_k}",
        ]
        if self.flaky:
            shown = ", ".join(self.flaky[:_FLAKY_SHOWN])
            more = len(self.flaky) - _FLAKY_SHOWN
            lines.append(
                f"flaky: {plural(len(self.flaky), 'case')}: {shown}"
                + (f" and {more} more" if more > 0 else "")
            )
        else:
            lines.append("flaky: none")
        return "\n".join(lines)


def _wilson(mean: float, n: float, z: float) -> tuple[float, float]:
    """The Wilson score interval for a proportion ``mean`` worth ``n`` observations (n real)."""
    z2_n = z * z / n
    centre = (mean + z2_n / 2.0) / (1.0 + z2_n)
    spread = z / (1.0 + z2_n) * math.sqrt(mean * (1.0 - mean) / n + z2_n / (4.0 * n))
    low = 0.0 if mean == 0.0 else max(0.0, centre - spread)
    high = 1.0 if mean == 1.0 else min(1.0, centre + spread)
    return low, high


def _case_level(values: Sequence[float], cap: float, z: float) -> CaseLevelEstimate:
    """Mean of per-case values with the design-effect Wilson interval (module docstring)."""
    n = len(values)
    mean = math.fsum(values) / n
    if n == 1 or mean in (0.0, 1.0):
        effective = float(n)
    else:
        squares = math.fsum((value - mean) ** 2 for value in values)
        if squares == 0.0:
            effective = float(cap)
        else:
            # x̄(1 − x̄)/v with v = Σ(x − x̄)²/N²; at least N since each x is in [0, 1]
            effective = min(float(cap), max(float(n), mean * (1.0 - mean) * n * n / squares))
    low, high = _wilson(mean, effective, z)
    return CaseLevelEstimate(mean, low, high, effective)


def summarize_trials(
    outcomes: Mapping[str, Sequence[bool]],
    *,
    k: int | None = None,
    confidence: float = 0.95,
) -> TrialSummary:
    """Sum up repeated trials per case: the figures of :class:`TrialSummary`.

    ``outcomes`` maps each case id to its trials' outcomes (``True`` = pass),
    in any number per case. ``k`` is the k of pass^k and pass@k; by default
    the smallest number of trials any case has, and no case may have fewer.

    >>> summary = summarize_trials({
    ...     "steady": [True] * 5, "broken": [False] * 5, "flaky": [True, False, True, True, False],
    ... })
    >>> summary.k, summary.flaky
    (5, ('flaky',))
    >>> round(summary.pass_rate.value, 4), round(summary.pass_all_k.value, 4)
    (0.5333, 0.3333)
    >>> print(summary)
    3 cases, 5 trials each (15 trials); 95% intervals with the case as the unit
    pass@1 (mean pass rate)  53.3% [17.7%, 85.8%] (n_eff 4.4)
      naive, trials as independent: 8/15 = 53.3% [30.1%, 75.2%]
    pass^5 (all 5 pass)      33.3% [6.1%, 79.2%] (n_eff 3.0)
    pass@5 (any of 5 passes) 66.7% [20.8%, 93.9%] (n_eff 3.0)
    flaky: 1 case: flaky

    Raises ``UndefinedStatisticError`` when there are no cases, and
    ``StatisticsError`` when a case has no trials, an outcome is not a
    boolean, ``k`` exceeds a case's trials, or ``confidence`` is not
    strictly between 0 and 1.
    """
    func = "summarize_trials"
    confidence = _confidence(confidence, func)
    if not outcomes:
        raise UndefinedStatisticError(f"{func}: needs at least one case, got none")
    cases = []
    for case_id, trials in outcomes.items():
        results = list(trials)
        if not results:
            raise StatisticsError(f"{func}: case {case_id!r} has no trials")
        for index, result in enumerate(results):
            if not isinstance(result, bool):
                raise StatisticsError(
                    f"{func}: case {case_id!r}, trial {index}: an outcome must be True or "
                    f"False, got {result!r}"
                )
        cases.append(CaseTrials(case_id, sum(results), len(results)))
    fewest = min(case.trials for case in cases)
    if k is None:
        k = fewest
    k = _whole(k, "k", func)
    if k < 1:
        raise StatisticsError(f"{func}: k must be at least 1, got {k}")
    if k > fewest:
        short = next(case for case in cases if case.trials < k)
        raise StatisticsError(
            f"{func}: k = {k} is more than the {plural(short.trials, 'trial')} "
            f"of case {short.case_id!r}"
        )
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    total = sum(case.trials for case in cases)
    draws = sum(case.trials // k for case in cases)
    rates = [case.rate for case in cases]
    all_k = [pass_all_k(case.trials, case.passes, k) for case in cases]
    at_k = [pass_at_k(case.trials, case.passes, k) for case in cases]
    return TrialSummary(
        k=k,
        confidence=confidence,
        cases=tuple(cases),
        pass_rate=_case_level(rates, total, z),
        naive=Rate.of(sum(case.passes for case in cases), total, confidence),
        pass_all_k=_case_level(all_k, draws, z),
        pass_at_k=_case_level(at_k, draws, z),
        flaky=tuple(sorted(case.case_id for case in cases if case.flaky)),
    )


def trial_outcomes(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, list[bool]]]:
    """For repeated trials: per category, each case's trial outcomes in trial order (pass = True).

    >>> rows = [{"id": "a", "category": "c", "trial": 1, "status": "fail"},
    ...         {"id": "a", "category": "c", "trial": 0, "status": "pass"}]
    >>> trial_outcomes(rows)
    {'c': {'a': [True, False]}}
    """
    found: dict[str, dict[str, list[tuple[int, bool]]]] = {}
    for row in rows:
        category = str(row.get("category") or "default")
        trial = row.get("trial") or 0
        found.setdefault(category, {}).setdefault(str(row["id"]), []).append(
            (int(trial), row.get("status") == "pass")
        )
    return {
        category: {key: [ok for _, ok in sorted(items)] for key, items in sorted(cases.items())}
        for category, cases in sorted(found.items())
    }


_TRIAL_CLASSES: dict[type, type] = {}


def _trial_class(case_class: type) -> type:
    """The case class with a ``trial`` index (the run keys rows by id and trial), named in this
    module so that a process pool can pickle its cases."""
    if case_class in _TRIAL_CLASSES:
        return _TRIAL_CLASSES[case_class]
    name = f"{case_class.__name__}Trial"
    made = _TRIAL_CLASSES[case_class] = make_dataclass(
        name, [("trial", int, 0)], bases=(case_class,), frozen=True
    )
    made.__module__ = __name__
    globals()[name] = made
    return made


class Trials:
    """A run observer (:class:`tinyeval.runner.Observer`) running each case ``k`` times
    (distinct sample indexes, so a cache keeps them apart: one row per trial, with its
    ``trial``), summed up with the case as the unit; the gate counts a case as passed when
    ``all`` (or ``any``) of its trials pass.

    >>> from tinyeval.dataset import Case
    >>> [(c.id, c.trial) for c in Trials(2).cases([Case(id="a")])]
    [('a', 0), ('a', 1)]
    """

    name = "trials"

    def __init__(self, k: int, gate: str = "all", out: str | None = None) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputError(f"trials must be a whole number >= 1, got {k!r}", field="trials")
        if gate not in ("all", "any"):
            raise InputError(f"must be all or any, got {gate!r}", field="trials_gate")
        self.k, self.gate, self.out = k, gate, out
        self._rows: list[dict[str, Any]] = []
        self._figures: tuple[dict[str, Any], list[str], dict[str, Any]] | None = None

    def cases(self, cases: Iterable[Any]) -> Iterator[Any]:
        """Each case ``k`` times, each with its ``trial`` index."""
        for case in cases:
            values = {f.name: getattr(case, f.name) for f in fields(case)}
            trial_class = _trial_class(type(case))
            for trial in range(self.k):
                yield trial_class(**values, trial=trial)

    def skip(self, case: Any) -> bool:
        """No case is skipped."""
        return False

    def row(self, row: Mapping[str, Any], result: Any) -> None:
        """Keep the row's outcome."""
        self._rows.append({key: row.get(key) for key in ("id", "category", "trial", "status")})
        self._figures = None

    def manifest(self) -> dict[str, Any]:
        """The number of trials and the rule: a resumed run must take the same, and a reader
        of the rows joins each case's trials by them."""
        return {"k": self.k, "gate": self.gate}

    def figures(self) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        """Case-level tallies for the gate, the text per category and the JSON: from the
        results file (resumed rows included) when there is one, else from the rows seen."""
        if self._figures is None:
            from ..records import case_rows, read_rows, tally

            rows: Iterable[Mapping[str, Any]] = self._rows
            if self.out is not None and Path(self.out).is_file():
                rows = read_rows(self.out)
            lines: list[str] = []
            data: dict[str, Any] = {"k": self.k, "gate": self.gate, "categories": {}}
            kept = ("errors", "unparsed", "unchecked", "unchecked_ids")
            tallies = {  # per case, its trials joined as a reader of the results file joins them
                name: {"passed": t.passed, "total": t.total}
                | {key: getattr(t, key) for key in kept if getattr(t, key)}
                for name, t in tally(case_rows(list(rows), self.gate)).items()
            }
            for category, outcomes in trial_outcomes(rows).items():
                data["categories"][category] = (summary := summarize_trials(outcomes)).to_dict()
                lines += [f"trials of {category}:", str(summary), ""]
            self._figures = tallies, lines, data
        return self._figures

    def tallies(self) -> dict[str, Any]:
        """Per category, ``{"passed", "total"}`` counting cases, for the gate."""
        return self.figures()[0]

    def summary(self) -> list[str]:
        """The trial figures of each category."""
        return self.figures()[1]

    def to_dict(self) -> dict[str, Any]:
        """``{"k", "gate", "categories"}``."""
        return self.figures()[2]


def make(settings: Any, ready: Any) -> Trials:
    """The trials observer of a run's settings (``trials``, ``trials_gate``, ``out``)."""
    if settings.trials > 1 and settings.generate_model is None:
        raise InputError(
            "repeated trials sample the system under test: they need a generate model",
            field="trials",
        )
    out = settings.out if isinstance(settings.out, str) else None
    return Trials(settings.trials, getattr(settings, "trials_gate", "all"), out)
