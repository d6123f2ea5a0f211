"""The gate: a verdict per category, never an average across them (the global rate is
shown, never gates). Errored and unparsed cases count as not passed; comparisons of runs.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from statistics import NormalDist
from typing import Any

from . import _extra, stats
from .errors import InputError, did_you_mean, is_number, plural
from .records import Completeness, case_rows, completeness, tally
from .stats import Rate, cases_to_decide, format_rate, mcnemar, wilson_interval


def parse_threshold(
    value: str | float,
    *,
    field: str | None = None,
    what: str = "a threshold",
    low: float = 0.0,
    high: float = 1.0,
) -> float:
    """The package's one rate parser: ``0.95`` or ``"95%"``, from ``low`` to ``high`` inclusive.

    >>> parse_threshold("1.5", field="alpha", what="alpha", high=0.5)
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: alpha: alpha is a rate between 0 and 0.5 (or 0% to 50%), got '1.5'
    """
    rate = math.nan  # a boolean or anything else that is not a number is refused
    if is_number(value):
        rate = float(value)
    elif isinstance(value, str):
        text = value.strip()
        with contextlib.suppress(ValueError):
            rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    if not low <= rate <= high:  # also refuses NaN
        raise InputError(
            f"{what} is a rate between {low:g} and {high:g} (or {low:.0%} to {high:.0%}), "
            f"got {value!r}",
            field=field,
        )
    return rate


OUTCOMES = ("pass", "block", "inconclusive", "judge not trusted", "ungated")
INCONCLUSIVE_POLICIES = ("pass", "block")


def _measured(figure: str, empty: int | None = None) -> Any:
    return property(lambda self: getattr(self.measured, figure) if self.measured else empty)


@dataclass(frozen=True)
class CategoryVerdict:
    """One category's figures, outcome (one of ``OUTCOMES``) and whether it blocks.

    >>> v = gate({"tone": {"passed": 12, "total": 13}}, {"tone": 0.8}).categories[0]
    >>> v.outcome, v.more_cases_needed, v.blocking
    ('inconclusive', 28, False)
    """

    category: str
    measured: Rate | None
    errors: int
    unparsed: int
    unchecked: int
    threshold: float | None
    outcome: str
    blocking: bool
    note: str | None = None
    more_cases_needed: int | None = None
    unchecked_ids: tuple[str, ...] = ()
    design_effect: float = 1.0  # of the cases' clusters, which widen the interval
    decided_on: str = "checks"  # no judge; "judge": its own rate; "people": their estimated one
    estimate: Any = None

    @property
    def basis(self) -> str:
        """Which rate decides, in words ("" for checks alone): people's, or the judge's own."""
        return "" if self.decided_on == "checks" else str(self.estimate or "judge not calibrated")

    passed = _measured("successes", 0)
    total = _measured("n", 0)
    rate = _measured("value")
    low = _measured("low")
    high = _measured("high")

    def to_dict(self) -> dict[str, Any]:
        found = {key: getattr(self, key) for key in _VERDICT_KEYS}
        estimate = self.estimate and self.estimate.to_dict()
        if self.decided_on == "judge" and self.estimate is None:  # the judge's own rate
            figures = {"value": self.rate, "low": self.low, "high": self.high, "labels": 0}
            estimate = {"method": "judge", **figures, "how": "judge not calibrated"}
        return {**found, "unchecked_ids": list(self.unchecked_ids), "estimate": estimate}


_VERDICT_KEYS: tuple[str, ...] = ("passed", "total", "errors", "unparsed", "unchecked", "rate")
_VERDICT_KEYS += ("low", "high", "threshold", "outcome", "blocking", "more_cases_needed", "note")
_VERDICT_KEYS += ("design_effect", "decided_on")


@dataclass(frozen=True)
class GateReport:
    """Per-category verdicts and the global line (shown, never gating)."""

    categories: tuple[CategoryVerdict, ...]
    overall: CategoryVerdict
    inconclusive: str
    confidence: float
    completeness: Completeness | None = None
    allow_unchecked: bool = False
    remembered: tuple[str, ...] = ()  # gate_rows: settings taken from the run, and given again
    overridden: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return self.completeness is None or self.completeness.complete

    @property
    def passed(self) -> bool:
        return self.complete and not self.blocking

    @property
    def outcome(self) -> str:
        """``"pass"``, ``"block"`` or ``"incomplete"``: the decision the exit code carries."""
        if not self.complete:
            return "incomplete"
        return "block" if self.blocking else "pass"

    @property
    def blocking(self) -> list[CategoryVerdict]:
        return [c for c in self.categories if c.blocking]

    @property
    def undecided(self) -> list[CategoryVerdict]:
        """The categories whose interval straddles their threshold, or not trusting the judge."""
        return [c for c in self.categories if c.outcome in ("inconclusive", "judge not trusted")]

    def to_dict(self) -> dict[str, Any]:
        said = {} if self.complete else {"outcome": "incomplete"}
        seen = {
            c.category: {**c.to_dict(), "outcome_on_rows_seen": c.outcome} for c in self.categories
        }
        return {
            "passed": self.passed,
            "outcome": self.outcome,
            "inconclusive": self.inconclusive,
            "allow_unchecked": self.allow_unchecked,
            "confidence": self.confidence,
            "blocking": [c.category for c in self.blocking],
            "inconclusive_categories": [c.category for c in self.undecided],
            "categories": {name: {**item, **said} for name, item in seen.items()},
            "overall": self.overall.to_dict(),
            "completeness": None if self.completeness is None else self.completeness.to_dict(),
        }


def _field(tally: Any, key: str) -> Any:
    return tally.get(key) if isinstance(tally, Mapping) else getattr(tally, key, None)


_TALLIED = ("passed", "total", "errors", "unparsed", "unchecked", "judged")


def gate(
    tallies: Mapping[str, Any],
    thresholds: Mapping[str, float | str] | None = None,
    *,
    default_threshold: float | str | None = None,
    inconclusive: str | None = None,
    allow_unchecked: bool | None = False,
    confidence: float = 0.95,
    completeness: Completeness | None = None,
    people: Mapping[str, Any] | None = None,
    strict_categories: bool | None = False,
    design_effects: Mapping[str | None, float] | None = None,
) -> GateReport:
    """Judge each category's counts against its threshold, else ``default_threshold``; a judged
    category with an estimate in ``people`` (:func:`from_rows`) is decided on it.

    >>> report = gate(
    ...     {"amount_extraction": {"passed": 17, "total": 20},
    ...      "tone": {"passed": 45, "total": 45}},
    ...     {"amount_extraction": 1.0}, default_threshold=0.8)
    >>> report.passed, [c.category for c in report.blocking], round(report.overall.rate, 3)
    (False, ['amount_extraction'], 0.954)
    """
    policy = inconclusive or "pass"
    if policy not in INCONCLUSIVE_POLICIES:
        raise InputError(
            f"inconclusive must be one of {', '.join(INCONCLUSIVE_POLICIES)}, got {policy!r}"
        )
    parsed = gate_settings(thresholds, default_threshold=default_threshold)
    limits, default = parsed["thresholds"], parsed["default_threshold"]
    allow_unchecked = bool(allow_unchecked)  # None in a run's settings: not allowed
    people, effects = people or {}, design_effects or {}

    def verdict(
        name: str, tally: Any, threshold: float | None, estimate: Any, effect: float
    ) -> CategoryVerdict:
        passed, total, errors, unparsed, unchecked, judged = (
            int(_field(tally, key) or 0) for key in _TALLIED
        )
        bounds = wilson_interval(passed, total, confidence, design_effect=effect) if total else None
        measured = Rate(passed, total, *bounds) if bounds else None  # clusters widen it (effect)
        by_people = estimate is not None and estimate.method != "judge"
        figure = estimate if by_people else measured
        note, more = None, None
        if figure is None or threshold is None:
            outcome = "ungated" if threshold is None else "block"
            note = None if measured else "no cases in this category"
        elif unchecked and not allow_unchecked:
            outcome = "block"
            note = f"{plural(unchecked, 'case')} had nothing to check them"
        elif figure.value < threshold:
            outcome = "block"  # below is never given the benefit of doubt
        elif by_people and estimate.distrust:
            outcome, note = "judge not trusted", estimate.distrust
        elif figure.low >= threshold or (threshold == figure.value == 1.0 and not by_people):
            # decided; a threshold of 100% is a rule over the cases (every one must pass), met by
            # a rate of 100% seen (not estimated): no interval over a finite suite could clear it
            outcome = "pass"
        elif by_people:
            outcome, more = "inconclusive", estimate.more_labels(threshold)
        else:
            outcome = "inconclusive"
            needed = cases_to_decide(passed, total, threshold, confidence)
            more = None if needed is None else math.ceil(needed * effect) - total
        return CategoryVerdict(
            name,
            measured,
            errors,
            unparsed,
            unchecked,
            threshold=threshold,
            outcome=outcome,
            blocking=outcome == "block" or (outcome in OUTCOMES[2:4] and policy == "block"),
            note=note,
            more_cases_needed=more,
            unchecked_ids=tuple(map(str, _field(tally, "unchecked_ids") or ())) if measured else (),
            design_effect=effect,
            decided_on=("people" if by_people else "judge") if judged else "checks",
            estimate=estimate,
        )

    verdicts = []
    for name in sorted({*tallies, *limits}):
        threshold, estimate = limits.get(name, default), people.get(name)
        found = verdict(name, tallies.get(name, {}), threshold, estimate, effects.get(name, 1))
        if threshold is None and limits:
            close = did_you_mean(name, list(limits))
            hint = f"; did you mean {close!r}?" if close else ""
            found = replace(found, note=f"ungated: no threshold names it{hint}")
            if strict_categories:
                raise InputError(
                    f"the category {name!r} has no threshold ({found.note}); give it one, or a "
                    "default threshold",
                    field="strict_categories",
                )
        verdicts.append(found)
    summed = {key: sum(int(_field(t, key) or 0) for t in tallies.values()) for key in _TALLIED}
    overall = verdict("global", summed, None, people.get("global"), effects.get(None, 1.0))
    return GateReport(tuple(verdicts), overall, policy, confidence, completeness, allow_unchecked)


def from_rows(rows: Sequence[Mapping[str, Any]], **settings: Any) -> dict[str, Any]:
    """What :func:`gate` takes from a run's rows (a case once) beyond their counts: what people
    would say of each judged category (None without ``labels``, ``calibration`` or a case's own
    label; ``min_kappa``, ``confidence``), and the design effects of the cases' clusters.

    >>> rows = [{"id": str(i), "cluster": i // 2, "status": "pass"} for i in range(4)]
    >>> from_rows(rows + [{"id": "4", "cluster": 2, "status": "fail"}], labels=None)
    {'people': None, 'design_effects': {None: 1.44, 'default': 1.44}}
    """
    people = None
    given = settings.get("labels") or settings.get("calibration")
    if given or any(row.get("label") is not None for row in rows):
        people = _extra("estimator", "people", "--labels and --calibration")(rows, **settings)
    return {"people": people, "design_effects": _design_effects(rows)}


def gate_settings(
    thresholds: Mapping[str, float | str] | None = None,
    *,
    default_threshold: float | str | None = None,
    **others: Any,
) -> dict[str, Any]:
    """The gate settings a run records in its rows (``run.gate``), thresholds as numbers.

    >>> gate_settings({"tone": "90%"}, default_threshold=0.5)["thresholds"]
    {'tone': 0.9}
    """
    limits = {name: parse_threshold(value) for name, value in (thresholds or {}).items()}
    default = None if default_threshold is None else parse_threshold(default_threshold)
    return {"thresholds": limits, "default_threshold": default, **others}


_RECORDED: tuple[str, ...] = ("default_threshold", "inconclusive", "allow_unchecked")
_RECORDED += ("strict_categories", "labels", "min_kappa")  # as a run records them


def gate_rows(
    rows: Sequence[Mapping[str, Any]],
    thresholds: Mapping[str, float | str] | None = None,
    *,
    expected_ids: Iterable[str] | None = None,
    confidence: float = 0.95,
    calibration: Any = None,
    **settings: Any,
) -> GateReport:
    """Gate result rows as the run that wrote them did (``settings`` not given: its ``run``).

    >>> manifest = {"cases": 2, "gate": {"thresholds": {"c": 1.0}}}
    >>> rows = [{"id": "a", "category": "c", "status": "pass", "run": manifest}]
    >>> done = gate_rows(rows)
    >>> done.outcome, done.remembered, str(done.completeness)
    ('incomplete', ('thresholds',), 'incomplete: 1 of 2 cases')
    """
    manifests = (row.get("run") for row in rows)
    run = next((m["gate"] for m in manifests if isinstance(m, Mapping) and "gate" in m), None)
    run = run if isinstance(run, Mapping) else {}
    if unknown := sorted(set(settings) - set(_RECORDED)):
        raise TypeError(f"gate_rows() got an unexpected keyword argument {unknown[0]!r}")
    given: dict[str, Any] = {"thresholds": dict(thresholds) if thresholds else None}
    given.update((key, settings.get(key)) for key in _RECORDED)
    given["strict_categories"] = given["strict_categories"] or None
    ran = {key: run.get(key) for key in given if run.get(key) not in (None, {})}
    remembered = tuple(key for key in ran if given[key] is None)
    overridden = tuple(key for key in ran if given[key] not in (None, ran[key]))
    used = {**ran, **{key: value for key, value in given.items() if value is not None}}
    wanted = {key: used.pop(key, None) for key in ("labels", "min_kappa")}
    joined = case_rows(rows)  # a case once, its trials joined as the run joined them
    report = gate(
        tally(joined),
        **used,
        confidence=confidence,
        completeness=completeness(rows, expected_ids=expected_ids),
        **from_rows(joined, **wanted, calibration=calibration, confidence=confidence),
    )
    return replace(report, remembered=remembered, overridden=overridden)


FAIL_ON = {"worse": ("worse",), "not-noninferior": ("worse", "inconclusive")}
_COUNTS = ("both_pass", "fixed", "broke", "both_fail")
_Rows = Sequence[Mapping[str, Any]]
_Pair = tuple[float, float, Any]  # a case's pass value before, after, and its cluster


class _Comparison:
    def to_dict(self: Any) -> dict[str, Any]:
        """The comparison as a JSON-ready dict (every field but the category)."""
        return {key: value for key, value in asdict(self).items() if key != "category"}


@dataclass(frozen=True)
class PairedComparison(_Comparison):
    """One category of two runs paired by case: the counts, Δ = after − before, p, a decision."""

    category: str
    pairs: int
    both_pass: float
    fixed: float
    broke: float
    both_fail: float
    delta: float
    low: float
    high: float
    p: float
    p_adjusted: float
    margin: float | None = None
    decision: str = "no detectable change"
    more_cases: int | None = None
    design_effect: float = 1.0
    decided_on: str = "checks"  # "judge": the rates are of the judge's verdicts (and checks)

    def to_text(self, width: int, adjusted: bool) -> str:
        before, after = (f"{round(self.both_pass + x, 1):g}" for x in (self.broke, self.fixed))
        before = f"judge {before}" if self.decided_on == "judge" else before
        counts = ", ".join(f"{round(getattr(self, k), 1):g} {k.replace('_', ' ')}" for k in _COUNTS)
        points = [f"{100 * x:+.1f}".replace("-", "−") for x in (self.delta, self.low, self.high)]
        figure = f"{points[0]} points [{points[1]}, {points[2]}], p = {self.p:.2g}"
        figure += f" (adjusted {self.p_adjusted:.2g})" if adjusted else ""
        if self.design_effect > 1.2:
            figure += f", design effect {self.design_effect:.1f} (clusters)"
        more = f"inconclusive — about {self.more_cases} more cases" if self.more_cases else None
        margin = f"not worse by more than {round(100 * (self.margin or 0), 1):g} points"
        said = {"noninferior": margin, "inconclusive": more}.get(self.decision) or self.decision
        return (
            f"{self.category:<{width}}  {before}/{self.pairs} → {after}/{self.pairs} pass: "
            f"{counts}\n{'':<{width}}  {figure}: {said}"
        )


@dataclass(frozen=True)
class ComparisonReport:
    """Per-category and all-case paired comparisons, unpaired ids, and warnings."""

    categories: tuple[PairedComparison, ...]
    overall: PairedComparison
    only_before: tuple[str, ...]
    only_after: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    trials: bool = False

    def failing(self, fail_on: str) -> list[str]:
        return [c.category for c in self.categories if c.decision in FAIL_ON[fail_on]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "categories": {c.category: c.to_dict() for c in self.categories},
            "overall": self.overall.to_dict(),
            "unit": "case pass fraction over its trials" if self.trials else "case",
            "only_before": list(self.only_before),
            "only_after": list(self.only_after),
            "warnings": list(self.warnings),
        }

    def to_text(self, *, before: str = "before", after: str = "after") -> str:
        rows = [*self.categories, self.overall]
        width = max(len(c.category) for c in rows)
        adjusted = any(c.p != c.p_adjusted for c in self.categories)  # Holm moved one
        lines = [c.to_text(width, adjusted and c is not self.overall) for c in rows]
        if self.overall.decided_on == "judge":
            lines.append("judge: rates of the judge's verdicts; people's estimate is not compared")
        if self.trials:
            lines.append("each case counts its pass fraction over its trials")
        if self.only_before or self.only_after:
            lines.append(
                f"not paired: {len(self.only_before)} cases only in {before}, "
                f"{len(self.only_after)} only in {after}"
            )
        return "\n".join(lines)


def _category(row: Mapping[str, Any]) -> str:
    return str(row.get("category", "default"))


def _clustered_variance(values: Sequence[float], groups: Sequence[Any]) -> float:
    """The cluster-robust (CR1) variance of the mean: G/(G − 1)·Σ_g e_g² / n²."""
    mean, sums = math.fsum(values) / len(values), dict[Any, float]()
    for value, group in zip(values, groups, strict=True):
        sums[group] = sums.get(group, 0.0) + value - mean
    size = len(sums)
    return size / max(1, size - 1) * math.fsum(e * e for e in sums.values()) / len(values) ** 2


def _design_effect(values: Sequence[float], clusters: Sequence[Any]) -> float:
    """How much the clusters inflate the variance of the mean (all in one: the case count)."""
    if len(values) > 1 and len(set(clusters)) == 1:
        return float(len(values))
    naive = _clustered_variance(values, range(len(values)))
    return max(1.0, _clustered_variance(values, clusters) / naive) if naive else 1.0


def _cluster(row: Mapping[str, Any]) -> tuple[str, str]:
    cluster = row.get("cluster")
    return ("case", str(row.get("id"))) if cluster is None else ("cluster", str(cluster))


def _design_effects(rows: _Rows) -> dict[str | None, float]:
    if all(row.get("cluster") is None for row in rows):
        return {}
    groups: dict[str | None, list[Mapping[str, Any]]] = {None: list(rows)}
    for row in rows:
        groups.setdefault(_category(row), []).append(row)
    passed = {
        name: [float(r.get("status") == "pass") for r in found] for name, found in groups.items()
    }
    return {
        name: _design_effect(passed[name], list(map(_cluster, groups[name]))) for name in groups
    }


def _paired(
    category: str, pairs: list[_Pair], method: str, fractions: bool, judged: bool
) -> PairedComparison:
    n = len(pairs)
    both = math.fsum(x * y for x, y, _ in pairs)
    fixed, broke = (math.fsum(pair[i] for pair in pairs) - both for i in (1, 0))
    fail = n - both - fixed - broke
    both, fixed, broke, fail = (x if fractions else round(x) for x in (both, fixed, broke, fail))
    counts = (both, fixed, broke, fail)
    delta, changes = (fixed - broke) / n, [y - x for x, y, _ in pairs]
    clusters = [cluster for *_, cluster in pairs]
    effect = _design_effect(changes, clusters) if len(set(clusters)) < n else 1.0
    spread = math.sqrt(_clustered_variance(changes, clusters)) if fractions or effect > 1 else 0
    over_cases = fractions and n >= 30 and spread > 0  # enough cases for a normal interval
    if over_cases or effect > 1.0:  # a normal test over cases (cluster-robust)
        p = 2 * NormalDist().cdf(-abs(delta) / spread)
    else:  # McNemar's exact test (over trials: of the rounded counts)
        p = mcnemar(round(broke), round(fixed))
    if over_cases:
        half = NormalDist().inv_cdf(0.975) * spread
        low, high = delta - half, delta + half
    else:  # the pass/fail interval, widened by the clusters' design effect
        low, high = stats.paired_difference_interval(*map(round, counts), method=method)
        root = math.sqrt(effect)
        low, high = delta - root * (delta - low), delta + root * (high - delta)
    figures = (max(-1.0, low), min(1.0, high), p, p)
    basis = "judge" if judged else "checks"
    return PairedComparison(
        category, n, *counts, delta, *figures, design_effect=effect, decided_on=basis
    )


def _decided(c: PairedComparison, alpha: float, margin: float | None, p: float) -> PairedComparison:
    decision, more = "no detectable change", None
    if margin is None:
        decision = ("better" if c.delta > 0 else "worse") if p < alpha else decision
    elif c.low > -margin or c.high < -margin:
        decision = "noninferior" if c.low > -margin else "worse"
    else:
        decision = "inconclusive"
        distance = min(1.0, abs(c.delta + margin))  # Connor's cases to tell Δ from −margin
        if distance > 0:
            discordance = min(1.0, max((c.fixed + c.broke) / c.pairs, distance))
            needed = stats.paired_sample_size(distance, discordance, alpha=alpha) * c.design_effect
            more = max(1, math.ceil(needed) - c.pairs)
    return replace(c, p_adjusted=p, margin=margin, decision=decision, more_cases=more)


def _case_values(rows: _Rows, fractions: bool) -> dict[str, tuple[float, Mapping[str, Any]]]:
    found: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows if fractions else case_rows(rows):
        found.setdefault(str(row["id"]), []).append(row)
    passing = {key: sum(r.get("status") == "pass" for r in group) for key, group in found.items()}
    return {key: (passing[key] / len(group), group[0]) for key, group in found.items()}


def compare_runs(
    before: Iterable[Mapping[str, Any]],
    after: Iterable[Mapping[str, Any]],
    *,
    alpha: float = 0.05,
    margin: float | None = None,
    interval: str = "newcombe",
    adjust: str = "holm",
) -> ComparisonReport:
    """Compare two runs' rows paired by case, per category and over all cases.

    >>> old = [{"id": str(i), "category": "x", "status": "pass"} for i in range(10)]
    >>> new = [dict(r, status="fail") if int(r["id"]) < 6 else r for r in old]
    >>> print(compare_runs(old, new).to_text())  # doctest: +NORMALIZE_WHITESPACE
    x          10/10 → 4/10 pass: 4 both pass, 0 fixed, 6 broke, 0 both fail
               −60.0 points [−83.2, −20.1], p = 0.031: worse
    all cases  10/10 → 4/10 pass: 4 both pass, 0 fixed, 6 broke, 0 both fail
               −60.0 points [−83.2, −20.1], p = 0.031: worse
    """
    old, new = list(before), list(after)
    fractions = all(any("trial" in row for row in rows) for rows in (old, new))
    first, second = _case_values(old, fractions), _case_values(new, fractions)
    by_category: dict[str, list[_Pair]] = {}
    for case_id, (value, row) in second.items():
        if case_id in first:
            known = row if row.get("cluster") is not None else first[case_id][1]
            pair = (first[case_id][0], value, _cluster(known))
            by_category.setdefault(_category(row), []).append(pair)
    if not by_category:
        raise InputError("the runs have no case id in common; nothing to compare")
    judged = {_category(row) for _, row in (*first.values(), *second.values()) if row.get("judges")}
    paired = [
        _paired(name, pairs, interval, fractions, name in judged)
        for name, pairs in sorted(by_category.items())
    ]
    ps = [c.p for c in paired]
    adjusted = stats.holm(ps) if adjust == "holm" else ps
    everything = [pair for pairs in by_category.values() for pair in pairs]
    overall = _paired("all cases", everything, interval, fractions, bool(judged))
    return ComparisonReport(
        tuple(_decided(c, alpha, margin, p) for c, p in zip(paired, adjusted, strict=True)),
        _decided(overall, alpha, margin, overall.p),
        tuple(case_id for case_id in first if case_id not in second),
        tuple(case_id for case_id in second if case_id not in first),
        _warnings(first, second),
        fractions,
    )


def _warnings(first: Mapping[str, Any], second: Mapping[str, Any]) -> tuple[str, ...]:
    changed = [key for key in second if key in first and _case(first[key]) != _case(second[key])]
    said = []
    if changed:
        cases = f"{plural(len(changed), 'paired case')} changed input, context or checks"
        said.append(f"{cases} (e.g. {changed[0]!r})")
    for key, what in (("rubric_fingerprint", "rubrics"), ("judge_model", "judge models")):
        old, new = (
            sorted({str(row.get(key)) for _, row in side.values()}) for side in (first, second)
        )
        if old != new:
            said.append(f"the runs used different {what} ({', '.join(old)} → {', '.join(new)})")
    return tuple(f"{warning}: a difference may come from that" for warning in said)


def _case(value: tuple[float, Mapping[str, Any]]) -> tuple[Any, ...]:
    row = value[1]
    return row.get("input"), row.get("context"), sorted(row.get("checks") or {})


def rank_runs(
    runs: Sequence[tuple[str, _Rows]], *, alpha: float = 0.05, adjust: str = "holm"
) -> list[PairedComparison]:
    """Runs by pass rate over the cases they share, each against the best (first).

    >>> a = [{"id": str(i), "status": "pass"} for i in range(30)]
    >>> b = [dict(r, status="fail") if int(r["id"]) < 15 else r for r in a]
    >>> [(c.category, c.decision) for c in rank_runs([("b", b), ("a", a), ("c", a)])]
    [('a', 'no detectable change'), ('c', 'no detectable change'), ('b', 'worse')]
    """
    shared = set.intersection(*({str(row["id"]) for row in rows} for _, rows in runs))
    kept = [(name, [r for r in rows if str(r["id"]) in shared]) for name, rows in runs]
    first = kept[0][1]
    kept.sort(key=lambda run: -compare_runs(first, run[1]).overall.delta)
    versus = [compare_runs(kept[0][1], rows, adjust="none").overall for _, rows in kept]
    ps = [c.p for c in versus[1:]]
    adjusted = [1.0, *(stats.holm(ps) if adjust == "holm" else ps)]
    return [
        replace(_decided(c, alpha, None, p), category=name)
        for (name, _), c, p in zip(kept, versus, adjusted, strict=True)
    ]


@dataclass(frozen=True)
class HoldoutComparison(_Comparison):
    """One category's dev and holdout rates; ``suspicious``: dev above the holdout's interval."""

    category: str
    dev_passed: int
    dev_total: int
    holdout_passed: int
    holdout_total: int
    holdout_high: float | None
    suspicious: bool


def compare_holdout(
    rows: _Rows, held_out: float, *, salt: str = "tinyeval-holdout", confidence: float = 0.95
) -> list[HoldoutComparison]:
    """The pass rates of the development cases of ``rows`` against the held-out ones' (split
    by id as ``tinyeval split`` splits cases), per category and ``"global"`` (last).

    >>> found = compare_holdout([{"id": f"c{i}", "status": "pass"} for i in range(40)], 0.25)
    >>> [(c.category, c.dev_total + c.holdout_total, c.suspicious) for c in found]
    [('default', 40, False), ('global', 40, False)]
    """
    from .dataset import in_holdout

    counts: dict[str, list[int]] = {}
    for row in case_rows(rows):
        side = 2 * in_holdout(str(row["id"]), held_out, salt=salt)
        slot = counts.setdefault(_category(row), [0, 0, 0, 0])
        slot[side] += row.get("status") == "pass"
        slot[side + 1] += 1
    everything = [sum(slot[i] for slot in counts.values()) for i in range(4)]
    lines = []
    for name, (dp, dn, hp, hn) in [*counts.items(), ("global", everything)]:
        high = wilson_interval(hp, hn, confidence)[1] if hn else None
        suspicious = bool(dn and high is not None and dp / dn > high)
        lines.append(HoldoutComparison(name, dp, dn, hp, hn, high, suspicious))
    return lines


def holdout_text(
    lines: Sequence[HoldoutComparison], *, held_out: float, salt: str = "tinyeval-holdout"
) -> str:
    out = [f"\ndevelopment vs holdout ({held_out:g} held out, salt {salt!r}):"]
    width = max(len(c.category) for c in lines)
    dev = [format_rate(c.dev_passed, c.dev_total) for c in lines]
    mark = "  ← above what the holdout supports: tuned to the development cases?"
    for c, rate in zip(lines, dev, strict=True):
        holdout = format_rate(c.holdout_passed, c.holdout_total)
        line = f"  {c.category:<{width}}  dev {rate:<{max(map(len, dev))}}   holdout {holdout}"
        out.append(line + (mark if c.suspicious else ""))
    return "\n".join(out)


def refuse_unknown_categories(
    field: str, names: Iterable[str], known: Iterable[str], *, only_typos: bool = False
) -> None:
    """Refuse category names no case has (with ``only_typos``: apparent misspellings).

    >>> refuse_unknown_categories("threshold", ["amount"], {"tone", "amounts"})
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: threshold: no case has the category 'amount'; did you mean ...
    """
    listed = sorted(known)
    for name in names:
        close = did_you_mean(name, listed)
        if name not in listed and (close or not only_typos):
            hint = (
                f"did you mean {close!r}?" if close else f"the categories are {', '.join(listed)}"
            )
            raise InputError(f"no case has the category {name!r}; {hint}", field=field)
