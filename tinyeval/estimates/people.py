"""What people would say: the rate a judged category is gated on (``run --labels``).

The estimand of a judged category is the share of its cases that pass their
checks *and* that people would pass on the judge's criterion. A case that
errored, that nothing checked or that fails a check is not passed whatever
anyone says of it; the others (the *open* cases, a share ``w`` of the
category) are the ones people decide. On them the judge's prediction is the
row's status (PASS for a passed case, FAIL otherwise: a FAIL, an unparsed
reply), and a person's label is the truth.

* With at least 2 labels on open cases: PPI++ (Angelopoulos, Duchi & Zrnic
  2023) on the open cases, the labels inverse-probability weighted when they
  record a non-uniform ``selection`` (``label --strategy``), times ``w``.
  The variance adds ``θ²·w(1 − w)/N`` for the share itself.
* Otherwise, with a saved calibration: the Rogan–Gladen correction of the
  judge's rate on the open cases, times ``w``.
* Otherwise the judge's own rate, which the gate marks "judge not calibrated".

A judge is *not trusted* when the labels cannot rule out that it is no better
than chance (the interval of sensitivity + specificity, by Newcombe's
method over the two Wilson intervals, reaches down to 1) or, with
``min_kappa``, when Cohen's kappa of its verdicts and the labels is below it.
The global line is stratified over the categories (never gating).

>>> rows = [{"id": i, "category": "c", "status": "pass" if i % 10 else "fail",
...          "checks": {}, "judges": {"j": {"verdict": "PASS" if i % 10 else "FAIL"}},
...          "label": ("FAIL" if i % 4 == 1 else "PASS") if i < 40 else None}
...         for i in range(200)]
>>> found = people_rates(rows)
>>> print(found["c"])
people ≈ 75.0% [61.6%, 88.4%] (PPI++, 40 labels)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..calibration import (
    Calibration,
    CalibrationError,
    LabelError,
    load_calibration,
    read_labels,
)
from ..errors import InputError, plural
from ..records import verdicts
from ..stats import (
    StatisticsError,
    UndefinedStatisticError,
    _wilson_bounds,
    _z,
    cohen_kappa,
    kappa_interval,
    wilson_interval,
)
from .corrected import corrected_rate_for
from .ppi import ppi_pass_rate

__all__ = ["PeopleEstimate", "label_design", "open_case", "people_rates"]

NO_CAP = 10**9


@dataclass(frozen=True)
class PeopleEstimate:
    """One category's estimate of what people would say, and how far to trust the judge.

    ``method`` is ``"ppi"``, ``"rogan-gladen"`` or ``"judge"`` (too few labels: the judge's
    own rate decides, ``how`` says why); ``projection`` ``(a, b, cap)`` gives the estimator's
    variance with n labels as ``a + b/n`` (at most ``cap`` labels can be had).

    >>> e = PeopleEstimate("ppi", 0.319, 0.23, 0.408, 100, "PPI++, 100 labels",
    ...                    projection=(0.0001, 0.2, 5000))
    >>> str(e), e.more_labels(0.35)
    ('people ≈ 31.9% [23.0%, 40.8%] (PPI++, 100 labels)', 1232)
    """

    method: str
    value: float
    low: float
    high: float
    labels: int
    how: str
    distrust: str | None = None
    warnings: tuple[str, ...] = ()
    projection: tuple[float, float, int] = (0.0, 0.0, 0)
    confidence: float = 0.95

    def more_labels(self, threshold: float) -> int | None:
        """About how many more labels would put the interval on one side of ``threshold``
        (None: no number of labels this suite can have would)."""
        a, b, cap = self.projection
        room = (abs(self.value - threshold) / _z((1.0 + self.confidence) / 2.0)) ** 2 - a
        if b <= 0 or room <= 0 or b / room > cap:
            return None
        return max(1, math.ceil(b / room) - self.labels)

    def to_dict(self) -> dict[str, Any]:
        """``{"method", "value", "low", "high", "labels", "how", "distrust", "warnings"}``."""
        return {
            "method": self.method,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "labels": self.labels,
            "how": self.how,
            "distrust": self.distrust,
            "warnings": list(self.warnings),
        }

    def __str__(self) -> str:
        if self.method == "judge":
            return f"judge not calibrated: {self.how}"
        return f"people ≈ {self.value:.1%} [{self.low:.1%}, {self.high:.1%}] ({self.how})"


# ---------------------------------------------------------------- the labels


def _pass_fail(value: Any) -> str | None:
    if isinstance(value, str) and value.strip().upper() in ("PASS", "FAIL"):
        return value.strip().upper()
    return None


def label_design(
    labelled: Mapping[Any, Mapping[str, Any]], population: int | None = None
) -> tuple[str, dict[Any, float], list[str]]:
    """How the labels were drawn: ``(design, probabilities, warnings)``; refuses a bad one.

    ``"assumed uniform"`` when no label records a ``selection``, ``"uniform"`` for a random
    one with equal probabilities, else ``"weighted"`` with each label's probability.

    >>> label_design({"a": {"selection": {"strategy": "gate", "probability": 0.5}},
    ...               "b": {"selection": {"strategy": "gate", "probability": 0.25}}})[:2]
    ('weighted', {'a': 0.5, 'b': 0.25})
    """
    by_hand = [key for key, r in labelled.items() if r.get("chosen") not in (None, "at random")]
    if by_hand:
        chosen = labelled[by_hand[0]].get("chosen")
        raise CalibrationError(
            f"{len(by_hand)} of {plural(len(labelled), 'label')} are marked as chosen "
            f"{chosen!r} (the first is id {by_hand[0]!r}), not at random: a prediction-powered "
            "rate needs labels drawn at random from the judged cases"
        )
    selections = {key: r.get("selection") for key, r in labelled.items()}
    recorded = [key for key, value in selections.items() if value is not None]
    if not recorded:
        assumed = "the labels record no selection: the estimate assumes a random sample"
        return "assumed uniform", {}, [f"{assumed} (each case equally likely to be labelled)"]
    if len(recorded) < len(labelled):
        raise CalibrationError(
            f"{len(recorded)} of {plural(len(labelled), 'label')} record how they were chosen "
            "and the others do not: one random design must cover every label"
        )
    designs, probabilities = set(), {}
    for key, value in selections.items():
        chance = value.get("probability") if isinstance(value, Mapping) else None
        if isinstance(chance, bool) or not isinstance(chance, int | float) or not 0 < chance <= 1:
            chance = None
        if chance is None or not isinstance(value, Mapping):
            raise CalibrationError(
                f"the selection of id {key!r} must be an object with a probability above 0 "
                f"and at most 1, got {value!r}"
            )
        designs.add((value.get("strategy"), value.get("budget"), value.get("population")))
        probabilities[key] = float(chance)
    if len(designs) > 1:
        raise CalibrationError(
            f"the labels come from {len(designs)} selection designs (strategy, budget, "
            "population differ): estimate each one's labels separately"
        )
    strategy, _, drawn_from = next(iter(designs))
    warnings = []
    if population is not None and drawn_from is not None and drawn_from != population:
        warnings.append(
            f"the labels were drawn from {plural(drawn_from, 'case')} but these results have "
            f"{population} judged: the recorded probabilities may not apply"
        )
    if strategy == "random" and len(set(probabilities.values())) == 1:
        return "uniform", {}, warnings
    return "weighted", probabilities, warnings


def _labels(rows: list[Mapping[str, Any]], path: str | None) -> dict[str, Mapping[str, Any]]:
    """Each id's label record: the case's own ``label``, replaced by the labels file's."""
    found: dict[str, Mapping[str, Any]] = {
        str(row.get("id")): {"label": row["label"]}
        for row in rows
        if _pass_fail(row.get("label")) is not None
    }
    if path is not None:
        found.update((str(key), record) for key, record in read_labels(path).items())
    return found


def open_case(row: Mapping[str, Any]) -> bool:
    """Whether people decide the case: it ran, something checked it and its checks passed.

    >>> open_case({"status": "fail", "checks": {"json": True}}), open_case({"status": "error"})
    (True, False)
    """
    checks = row.get("checks")
    passed = all(checks.values()) if isinstance(checks, Mapping) else True
    return row.get("status") not in ("error", "unchecked") and passed


# ---------------------------------------------------------------- trust


def _sum_interval(parts: list[tuple[float, float]], z: float) -> tuple[float, float, float]:
    """sensitivity + specificity with its interval (Newcombe's MOVER over Wilson bounds)."""
    bounds = [_wilson_bounds(rate, n, z * z) for rate, n in parts]
    total = sum(rate for rate, _ in parts)
    below = math.sqrt(
        sum((rate - low) ** 2 for (rate, _), (low, _) in zip(parts, bounds, strict=True))
    )
    above = math.sqrt(
        sum((high - rate) ** 2 for (rate, _), (_, high) in zip(parts, bounds, strict=True))
    )
    return total, total - below, total + above


def _weighted_share(pairs: list[tuple[float, float, float]], truth: float) -> tuple[float, float]:
    """P(judge = truth | person = truth) over weighted pairs, and its effective count (Kish)."""
    given = [(f, w) for f, y, w in pairs if y == truth]
    if not given:
        return math.nan, 0.0
    weight = math.fsum(w for _, w in given)
    agreed = math.fsum(w for f, w in given if f == truth)
    return agreed / weight, weight * weight / math.fsum(w * w for _, w in given)


def _signed(value: float) -> str:
    return f"{value:.2f}".replace("-", "−")


def _kappa_distrust(judge: list[str], people: list[str], least: float) -> str | None:
    try:
        found = kappa_interval(judge, people)
        kappa, said = found.estimate, f" [{_signed(found.low)}, {_signed(found.high)}]"
    except UndefinedStatisticError:
        try:
            kappa, said = cohen_kappa(judge, people), ""
        except StatisticsError as exc:
            return f"kappa is undefined ({str(exc).partition(': ')[2]}), so not ≥ {least:g}"
    if kappa >= least:
        return None
    return f"kappa {_signed(kappa)}{said} < {least:g}"


def _distrust(
    pairs: list[tuple[float, float, float]], min_kappa: float | None, confidence: float
) -> str | None:
    """Why the judge cannot be trusted on these (judge, person, weight) pairs, or None."""
    sensitivity, n_pass = _weighted_share(pairs, 1.0)
    specificity, n_fail = _weighted_share(pairs, 0.0)
    reasons = []
    if n_pass and n_fail:
        z = _z((1.0 + confidence) / 2.0)
        total, low, high = _sum_interval([(sensitivity, n_pass), (specificity, n_fail)], z)
        if low <= 1.0:
            reasons.append(
                f"sensitivity + specificity {total:.2f} [{low:.2f}, {high:.2f}] reaches 1: "
                "no better than chance"
            )
    if min_kappa is not None:
        words = [["FAIL", "PASS"][int(f)] for f, _, _ in pairs]
        reason = _kappa_distrust(words, [["FAIL", "PASS"][int(y)] for _, y, _ in pairs], min_kappa)
        reasons += [reason] if reason else []
    return "; ".join(reasons) or None


# ---------------------------------------------------------------- one category


@dataclass
class _Category:
    """A category's rows split: ``opened`` (id, judge 0/1) of the ``total`` cases."""

    total: int = 0
    passed: int = 0
    opened: list[tuple[str, float]] = field(default_factory=list)

    @property
    def share(self) -> float:
        return len(self.opened) / self.total


def _scaled(
    part: _Category, theta: float, variance: float, ab: tuple[float, float], confidence: float
) -> tuple[float, float, float, float, tuple[float, float]]:
    """θ on the open cases to the category: value, low, high, variance, projection."""
    w, total = part.share, part.total
    extra = theta * theta * w * (1.0 - w) / total
    value, spread = w * theta, w * w * variance + extra
    half = _z((1.0 + confidence) / 2.0) * math.sqrt(spread)
    low, high = max(0.0, value - half), min(1.0, value + half)
    return value, low, high, spread, (w * w * ab[0] + extra, w * w * ab[1])


def _population_variance(xs: list[float]) -> float:
    mean = math.fsum(xs) / len(xs)
    return math.fsum((x - mean) ** 2 for x in xs) / len(xs)


def _by_ppi(
    part: _Category,
    labels: Mapping[str, float],
    chances: Mapping[str, float] | None,
    confidence: float,
) -> tuple[PeopleEstimate, float] | None:
    f_l = [f for key, f in part.opened if key in labels]
    y = [labels[key] for key, f in part.opened if key in labels]
    f_u = [f for key, f in part.opened if key not in labels]
    n = len(y)
    if n < 2:
        return None
    weighted = " weighted" if chances else ""
    try:
        if not f_u:
            raise UndefinedStatisticError("every open case is labelled")
        found = ppi_pass_rate(
            [f == 1.0 for f in f_l],
            [v == 1.0 for v in y],
            [f == 1.0 for f in f_u],
            confidence=confidence,
            selection_probabilities=[chances[k] for k, _ in part.opened if k in labels]
            if chances
            else None,
        )
    except UndefinedStatisticError:  # labels alone: every open case labelled, or no variation
        k = round(math.fsum(y))
        low, high = wilson_interval(k, n, confidence)
        w = part.share
        how = "every case labelled" if not f_u else "labels alone: the judge adds no variation"
        how = f"{how}, {plural(n, 'label')}"
        estimate = PeopleEstimate(
            "ppi", w * k / n, w * low, w * high, n, how, confidence=confidence
        )
        return estimate, (w * w * (k / n) * (1 - k / n) / n)
    theta, lam = found.value, found.lambda_
    if chances:
        ab = (0.0, found.standard_error**2 * n)
    else:
        residual = [h - lam * f for h, f in zip(y, f_l, strict=True)]
        ab = (lam * lam * _population_variance(f_u) / len(f_u), _population_variance(residual))
    value, low, high, spread, projection = _scaled(
        part, theta, found.standard_error**2, ab, confidence
    )
    how = f"PPI++{weighted}, {plural(n, 'label')}"
    estimate = PeopleEstimate(
        "ppi",
        value,
        low,
        high,
        n,
        how,
        projection=(*projection, len(part.opened)),
        confidence=confidence,
    )
    return estimate, spread


def _by_correction(
    part: _Category, calibration: Calibration, category: str, confidence: float
) -> tuple[PeopleEstimate, float]:
    k = round(math.fsum(f for _, f in part.opened))
    found = corrected_rate_for(calibration, k, len(part.opened), category=category)
    source = calibration.per_category[category] if found.scope == category else calibration
    assert source.sensitivity is not None and source.specificity is not None  # checked above
    sens, spec = found.sensitivity, found.specificity
    n1, n0, youden = source.sensitivity.n, source.specificity.n, sens + spec - 1.0
    theta, p = found.rate, k / len(part.opened)
    by_labels = (theta**2 * sens * (1 - sens) / n1 + (1 - theta) ** 2 * spec * (1 - spec) / n0) / (
        youden**2
    )
    by_cases = p * (1 - p) / len(part.opened) / youden**2
    w = part.share
    _, _, _, spread, projection = _scaled(
        part, theta, by_cases + by_labels, (by_cases, by_labels * (n1 + n0)), confidence
    )
    z = _z((1.0 + confidence) / 2.0)
    pairs = [(sens, float(n1)), (spec, float(n0))]
    total, low, high = _sum_interval(pairs, z)
    distrust = None
    if low <= 1.0:
        distrust = (
            f"sensitivity + specificity {total:.2f} [{low:.2f}, {high:.2f}] reaches 1 in the "
            "calibration: no better than chance"
        )
    estimate = PeopleEstimate(
        "rogan-gladen",
        w * theta,
        w * found.low,
        w * found.high,
        n1 + n0,
        f"Rogan–Gladen, calibration of {plural(n1 + n0, 'label')}",
        distrust=distrust,
        warnings=found.warnings,
        projection=(*projection, NO_CAP),
        confidence=confidence,
    )
    return estimate, spread


# ---------------------------------------------------------------- every category


def _split(rows: list[Mapping[str, Any]]) -> tuple[dict[str, _Category], set[str]]:
    """The categories' cases, and the names of those a judge decides."""
    found: dict[str, _Category] = {}
    judged: set[str] = set()
    for row in rows:
        name = str(row.get("category") or "default")
        part = found.setdefault(name, _Category())
        passed = row.get("status") == "pass"
        part.total += 1
        part.passed += passed
        if open_case(row):
            part.opened.append((str(row.get("id")), 1.0 if passed else 0.0))
        if verdicts(row):
            judged.add(name)
    return found, judged


def _human(record: Mapping[str, Any], key: str) -> float:
    said = _pass_fail(record.get("label"))
    if said is None:
        source, line = getattr(record, "source", None), getattr(record, "line", None)
        where = f"{source}:{line}: " if source and line else ""
        raise LabelError(
            f"{where}the label of id {key!r} is {record.get('label')!r}: what people would "
            'say of a judged case is "PASS" or "FAIL"'
        )
    return 1.0 if said == "PASS" else 0.0


def _global(
    parts: Mapping[str, _Category], found: Mapping[str, tuple[PeopleEstimate, float]], z: float
) -> PeopleEstimate:
    """The stratified estimate over every category (its own rate where people do not decide)."""
    total = sum(part.total for part in parts.values())
    value = variance = 0.0
    for name, part in parts.items():
        share = part.total / total
        if name in found and found[name][0].method != "judge":
            theta, spread = found[name][0].value, found[name][1]
        else:
            theta = part.passed / part.total
            spread = theta * (1 - theta) / part.total
        value += share * theta
        variance += share * share * spread
    labels = sum(item.labels for item, _ in found.values() if item.method == "ppi")
    half = z * math.sqrt(variance)
    how = f"stratified over the categories, {plural(labels, 'label')}"
    return PeopleEstimate("ppi", value, max(0.0, value - half), min(1.0, value + half), labels, how)


def people_rates(
    rows: Iterable[Mapping[str, Any]],
    *,
    labels: str | None = None,
    calibration: Calibration | str | None = None,
    min_kappa: float | str | None = None,
    confidence: float = 0.95,
) -> dict[str, PeopleEstimate]:
    """Each judged category's :class:`PeopleEstimate` (and ``"global"``) from result rows,
    their own ``label`` and the ``labels`` file (which wins), else a saved ``calibration``.

    >>> rows = [{"id": "a", "category": "c", "status": "pass", "judges": {"j": {}}}]
    >>> print(people_rates(rows)["c"])
    judge not calibrated: no label on its cases and no calibration

    Raises ``InputError`` for a label other than PASS/FAIL on a case people decide, labels
    not drawn at random, or a ``min_kappa`` outside [-1, 1].
    """
    rows = list(rows)
    least = None
    if min_kappa is not None:
        least = float(min_kappa)
        if not -1.0 <= least <= 1.0:
            raise InputError(f"kappa is between -1 and 1, got {min_kappa!r}", field="min_kappa")
    if isinstance(calibration, str):
        calibration = load_calibration(calibration)
    parts, judged = _split(rows)
    records = _labels(rows, labels)
    opened = {key: f for name in judged for key, f in parts[name].opened}
    labelled = {key: record for key, record in records.items() if key in opened}
    design, chances, warnings = label_design(labelled)
    human = {key: _human(record, key) for key, record in labelled.items()}
    found: dict[str, tuple[PeopleEstimate, float]] = {}
    for name in sorted(judged):
        part = parts[name]
        mine = {key: human[key] for key, _ in part.opened if key in human}
        weights = {key: chances[key] for key in mine} if design == "weighted" else None
        assumed = tuple(warnings) if design == "assumed uniform" else ()
        by_labels = _by_ppi(part, mine, weights, confidence) if part.opened else None
        if by_labels is not None:
            found[name] = _trusted(by_labels, part, mine, weights, least, assumed, confidence)
        elif calibration is not None and part.opened:
            found[name] = _by_calibration(part, calibration, name, least, confidence)
        else:
            few = f"{plural(len(mine), 'label')} on its cases, too few (2 needed)"
            why = few if mine else "no label on its cases and no calibration"
            why = why if part.opened else "no case passes its checks"
            found[name] = (_judge(part, why, confidence), 0.0)
    estimates = {name: item for name, (item, _) in found.items()}
    if any(item.method != "judge" for item in estimates.values()):
        estimates["global"] = _global(parts, found, _z((1.0 + confidence) / 2.0))
    return estimates


def _judge(part: _Category, why: str, confidence: float) -> PeopleEstimate:
    low, high = wilson_interval(part.passed, part.total, confidence)
    return PeopleEstimate("judge", part.passed / part.total, low, high, 0, why)


def _trusted(
    found: tuple[PeopleEstimate, float],
    part: _Category,
    labels: Mapping[str, float],
    weights: Mapping[str, float] | None,
    least: float | None,
    assumed: tuple[str, ...],
    confidence: float,
) -> tuple[PeopleEstimate, float]:
    """The PPI estimate with why its judge is not trusted (if it is not) and its warnings."""
    chance = weights or {}
    pairs = [(f, labels[k], 1.0 / chance.get(k, 1.0)) for k, f in part.opened if k in labels]
    distrust = _distrust(pairs, least, confidence)
    return replace(found[0], distrust=distrust, warnings=assumed), found[1]


def _by_calibration(
    part: _Category, calibration: Calibration, name: str, least: float | None, confidence: float
) -> tuple[PeopleEstimate, float]:
    """Rogan–Gladen with the calibration's counts, or why it cannot be had."""
    try:
        estimate, spread = _by_correction(part, calibration, name, confidence)
    except UndefinedStatisticError:  # no better than chance: anything up to the open share
        useless = "sensitivity + specificity ≤ 1 in the calibration: no better than chance"
        w, how = part.share, "Rogan–Gladen undefined: anywhere up to the open share"
        estimate, spread = PeopleEstimate("rogan-gladen", w, 0.0, w, 0, how, useless), w * w / 4
    except CalibrationError as exc:
        return _judge(part, f"the calibration cannot correct it: {exc}", confidence), 0.0
    if least is not None and calibration.kappa is not None and calibration.kappa < least:
        said = f"kappa {_signed(calibration.kappa)} in the calibration < {least:g}"
        estimate = replace(estimate, distrust="; ".join(filter(None, [estimate.distrust, said])))
    return estimate, spread
