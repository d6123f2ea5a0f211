"""Graded scores (0–1, 1–5) summarised so that a mean cannot hide anything.

A mean of 0.85 can be forty good answers, or thirty-eight perfect ones and two
catastrophes. So a graded summary always carries, beside its mean and
interval, the quantiles, the histogram and the **bottom 10% by id**, and it
warns when a 1–5 scale has collapsed onto two values (it is a PASS/FAIL
criterion in disguise, and should be written as one).

Scores come as ``(id, score)`` pairs or a mapping id → score; ids are strings
or whole numbers and must be unique; scores are finite numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

from ..errors import InputError, describe_json, is_number, plural
from ..estimates.ppi import mean_interval
from ..stats import UndefinedStatisticError, format_rate

__all__ = [
    "TWO_VALUES_WARNING",
    "GradedSummary",
    "GradedVerdict",
    "GradedVerdicts",
    "HistogramBin",
    "Quantiles",
    "ScoredCase",
    "graded_pass_fail",
    "graded_summary",
]

CaseId: TypeAlias = str | int
"""A case id: a string or a whole number."""

Scores: TypeAlias = Mapping[CaseId, float] | Iterable[tuple[CaseId, float]]
"""Graded scores: ``(id, score)`` pairs or a mapping id → score."""

TWO_VALUES_WARNING = "more than 80% of scores fall on two values"
"""The start of the warning given when a scale behaves like PASS/FAIL."""

QUANTILE_METHOD = "linear interpolation between order statistics at (n - 1)p (type 7)"
_MEAN_METHOD = "Student t interval (n - 1 degrees of freedom)"
_DISTINCT_LIMIT = 11  # up to this many distinct values, the histogram counts each one
_BAR = 20  # the longest histogram bar, in characters
_LISTED = 20  # the text lists this many of the bottom cases; to_dict lists them all


class ScoredCase(NamedTuple):
    """One case's id and score.

    >>> ScoredCase("c-07", 1.0).score
    1.0
    """

    id: CaseId
    score: float


class Quantiles(NamedTuple):
    """Min, 10th percentile, median, 90th percentile and max (type 7 interpolation).

    >>> Quantiles(1.0, 1.4, 3.0, 4.6, 5.0).median
    3.0
    """

    min: float
    p10: float
    median: float
    p90: float
    max: float


@dataclass(frozen=True)
class HistogramBin:
    """A count of scores: one value (``low == high``) or the bin ``[low, high)``.

    The last bin of a binned histogram is closed: ``[low, high]``.

    >>> HistogramBin(4.0, 4.0, 7).label, HistogramBin(0.0, 0.1, 2).label
    ('4', '[0, 0.1)')
    """

    low: float
    high: float
    count: int
    closed: bool = False

    @property
    def label(self) -> str:
        """``'4'`` for a value, ``'[0.8, 0.9)'`` for a bin."""
        if self.low == self.high:
            return f"{self.low:g}"
        return f"[{self.low:g}, {self.high:g}{']' if self.closed else ')'}"


def _scores(scores: Scores) -> list[ScoredCase]:
    pairs: Iterable[Any] = scores.items() if isinstance(scores, Mapping) else scores
    if isinstance(pairs, str | bytes) or not isinstance(pairs, Iterable):
        raise InputError(
            f"expected (id, score) pairs or an object id -> score, got {describe_json(scores)}"
        )
    found: list[ScoredCase] = []
    seen: set[str] = set()
    for position, pair in enumerate(pairs, 1):
        if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise InputError(f"item {position}: expected an (id, score) pair, got {pair!r}")
        case_id, score = pair
        if not (isinstance(case_id, str) and case_id) and not (
            isinstance(case_id, int) and not isinstance(case_id, bool)
        ):
            raise InputError(
                f"item {position}: an id must be a non-empty string or a whole number, "
                f"got {describe_json(case_id)}",
                field="id",
            )
        if str(case_id) in seen:
            raise InputError(f"item {position}: the id {case_id!r} appears twice", field="id")
        seen.add(str(case_id))
        if not is_number(score) or not math.isfinite(score):
            raise InputError(
                f"item {position} ({case_id!r}): a score must be a finite number, "
                f"got {describe_json(score)}",
                field="score",
            )
        found.append(ScoredCase(case_id, float(score)))
    return found


def _check_on_scale(cases: Iterable[ScoredCase], bounds: tuple[float, float] | None) -> None:
    """Refuse a score outside ``bounds`` (no bounds: any score)."""
    if bounds is None:
        return
    for case in cases:
        if not bounds[0] <= case.score <= bounds[1]:
            raise InputError(
                f"{case.id!r}: score {case.score:g} is outside the scale "
                f"{bounds[0]:g}-{bounds[1]:g}",
                field="score",
            )


def _scale(scale: tuple[float, float] | None) -> tuple[float, float] | None:
    if scale is None:
        return None
    if (
        not isinstance(scale, Sequence)
        or len(scale) != 2
        or not all(is_number(bound) and math.isfinite(bound) for bound in scale)
        or not scale[0] < scale[1]
    ):
        raise InputError(f"a scale is (lowest, highest) with lowest < highest, got {scale!r}")
    return float(scale[0]), float(scale[1])


def _quantile(ordered: Sequence[float], p: float) -> float:
    """Type 7 (Hyndman and Fan 1996): interpolate between order statistics at (n − 1)p."""
    position = (len(ordered) - 1) * p
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    fraction = position - below
    return ordered[below] + (ordered[above] - ordered[below]) * fraction


def _histogram(
    values: Sequence[float], scale: tuple[float, float] | None, bins: int
) -> tuple[HistogramBin, ...]:
    counts = Counter(values)
    whole = all(value.is_integer() for value in values)
    if (
        scale is not None
        and whole
        and all(b.is_integer() for b in scale)
        and scale[1] - scale[0] <= 20
    ):
        return tuple(
            HistogramBin(float(v), float(v), counts.get(float(v), 0))
            for v in range(int(scale[0]), int(scale[1]) + 1)
        )
    if len(counts) <= _DISTINCT_LIMIT:
        return tuple(HistogramBin(v, v, counts[v]) for v in sorted(counts))
    if scale is not None:
        low, high = scale
    elif min(values) >= 0.0 and max(values) <= 1.0:
        low, high = 0.0, 1.0
    else:
        low, high = min(values), max(values)
    width = (high - low) / bins
    tally = [0] * bins
    for value in values:
        index = min(int((value - low) / width), bins - 1)
        tally[index] += 1
    edges = [low + width * i for i in range(bins)] + [high]
    return tuple(
        HistogramBin(round(edges[i], 12), round(edges[i + 1], 12), tally[i], closed=i == bins - 1)
        for i in range(bins)
    )


@dataclass(frozen=True)
class GradedSummary:
    """What a set of graded scores says; build it with :func:`graded_summary`.

    ``low``/``high`` are the mean's Student t interval (clipped to the scale
    when one is given; None for a single score). ``bottom`` lists every case
    scoring at or below ``cut``, the score of the ⌈n/10⌉-th lowest case, so
    ties at the cut are all listed; lowest first.
    """

    n: int
    mean: float
    low: float | None
    high: float | None
    quantiles: Quantiles
    histogram: tuple[HistogramBin, ...]
    cut: float
    bottom: tuple[ScoredCase, ...]
    warnings: tuple[str, ...]
    scale: tuple[float, float] | None
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-ready dict (stable keys).

        >>> d = graded_summary([("a", 5), ("b", 4), ("c", 1)]).to_dict()
        >>> d["n"], d["bottom"], d["histogram"][0]
        (3, [{'id': 'c', 'score': 1.0}], {'label': '1', 'low': 1.0, 'high': 1.0, 'count': 1})
        """
        return {
            "n": self.n,
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "interval": _MEAN_METHOD + (", clipped to the scale" if self.scale else ""),
            "quantiles": dict(self.quantiles._asdict()),
            "quantile_method": QUANTILE_METHOD,
            "histogram": [
                {"label": b.label, "low": b.low, "high": b.high, "count": b.count}
                for b in self.histogram
            ],
            "scale": list(self.scale) if self.scale else None,
            "cut": self.cut,
            "bottom": [{"id": case.id, "score": case.score} for case in self.bottom],
            "warnings": list(self.warnings),
        }

    def to_text(self) -> str:
        """An ASCII histogram with the mean, interval and quantiles beside it, then the bottom 10%.

        The bottom list shows its first 20 cases (lowest first) and says how
        many more tie at the cut; :meth:`to_dict` lists them all.

        >>> summary = graded_summary([("a", 5), ("b", 5), ("c", 4), ("d", 1)], scale=(1, 5))
        >>> print(summary.to_text())
        graded scores: 4 cases, 1-5 scale
          1  ##########            1    mean    3.75 [1.00, 5.00] (95% t)
          2                        0    min     1
          3                        0    p10     1.9
          4  ##########            1    median  4.5
          5  ####################  2    p90     5
                                        max     5
        bottom 10% (score <= 1): d 1
        """
        top = max(b.count for b in self.histogram)
        labels = [b.label for b in self.histogram]
        label_width = max(len(label) for label in labels)
        count_width = max(len(str(b.count)) for b in self.histogram)
        left = []
        for label, b in zip(labels, self.histogram, strict=True):
            bar = "#" * (max(1, round(_BAR * b.count / top)) if b.count else 0)
            left.append(
                f"  {label.rjust(label_width)}  {bar.ljust(_BAR)}  {b.count:>{count_width}}"
            )
        if self.low is None or self.high is None:
            mean = f"{self.mean:.3g} (one score: no interval)"
        else:
            mean = (
                f"{_short(self.mean)} [{_short(self.low)}, {_short(self.high)}] "
                f"({self.confidence:.0%} t)"
            )
        q = self.quantiles
        right = [
            f"mean    {mean}",
            f"min     {q.min:.3g}",
            f"p10     {q.p10:.3g}",
            f"median  {q.median:.3g}",
            f"p90     {q.p90:.3g}",
            f"max     {q.max:.3g}",
        ]
        width = max(len(line) for line in left)
        rows = max(len(left), len(right))
        left += [""] * (rows - len(left))
        right += [""] * (rows - len(right))
        scale = f", {self.scale[0]:g}-{self.scale[1]:g} scale" if self.scale else ""
        lines = [f"graded scores: {plural(self.n, 'case')}{scale}"]
        lines += [f"{a.ljust(width)}    {b}".rstrip() for a, b in zip(left, right, strict=True)]
        listed = ", ".join(f"{case.id} {case.score:g}" for case in self.bottom[:_LISTED])
        if len(self.bottom) > _LISTED:
            listed += f" (and {len(self.bottom) - _LISTED} more at {self.cut:g})"
        lines.append(f"bottom 10% (score <= {self.cut:g}): {listed}")
        lines += [f"warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)


def _short(value: float) -> str:
    return f"{value:.2f}"


def graded_summary(
    scores: Scores,
    *,
    scale: tuple[float, float] | None = None,
    bins: int = 10,
    confidence: float = 0.95,
) -> GradedSummary:
    """Summarise graded scores: mean with interval, quantiles, histogram, bottom 10%, warnings.

    The histogram counts each distinct value (every whole value of ``scale``
    when the scale and the scores are whole numbers, zeros included; else
    each distinct value when there are at most 11), or ``bins`` equal bins
    over the scale (over [0, 1] for scores within it, else min to max).
    Quantiles interpolate linearly between order statistics at (n − 1)p
    (type 7, as ``numpy.quantile`` and ``statistics.quantiles(...,
    method="inclusive")``).

    >>> s = graded_summary({"q1": 0.9, "q2": 1.0, "q3": 0.2, "q4": 0.95, "q5": 0.9})
    >>> s.n, round(s.mean, 2), s.quantiles.median, [case.id for case in s.bottom]
    (5, 0.79, 0.9, ['q3'])
    >>> graded_summary([("a", 4), ("b", 5), ("c", 5), ("d", 4), ("e", 4)]).warnings[0]
    'more than 80% of scores fall on two values (4 and 5: 5 of 5): the scale acts as PASS/FAIL; \
a binary criterion with an explicit threshold says the same thing more plainly'

    Raises ``UndefinedStatisticError`` for no scores and ``InputError`` for a
    duplicate or malformed id, a score that is not a finite number, a score
    outside ``scale``, or ``bins`` below 1.
    """
    cases = _scores(scores)
    if not cases:
        raise UndefinedStatisticError("graded_summary: no scores to summarise")
    bounds = _scale(scale)
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise InputError(f"bins must be a whole number of at least 1, got {bins!r}", field="bins")
    _check_on_scale(cases, bounds)
    values = [case.score for case in cases]
    n = len(values)
    ordered = sorted(values)
    mean = math.fsum(values) / n
    low: float | None = None
    high: float | None = None
    warnings = []
    if n >= 2:
        low, high = mean_interval(values, confidence)
        if bounds is not None:
            low, high = max(bounds[0], low), min(bounds[1], high)
    else:
        warnings.append("one score: the mean has no interval")
    quantiles = Quantiles(*(_quantile(ordered, p) for p in (0.0, 0.1, 0.5, 0.9, 1.0)))
    cut = ordered[max(1, math.ceil(n / 10)) - 1]
    bottom = tuple(
        sorted((case for case in cases if case.score <= cut), key=lambda case: case.score)
    )
    common = Counter(values).most_common(2)
    on_two = sum(count for _, count in common)
    if n >= 2 and on_two > 0.8 * n:
        which = " and ".join(f"{value:g}" for value in sorted(value for value, _ in common))
        warnings.append(
            f"{TWO_VALUES_WARNING} ({which}: {on_two} of {n}): the scale acts as PASS/FAIL; "
            "a binary criterion with an explicit threshold says the same thing more plainly"
        )
    return GradedSummary(
        n,
        mean,
        low,
        high,
        quantiles,
        _histogram(values, bounds, bins),
        cut,
        bottom,
        tuple(warnings),
        bounds,
        confidence,
    )


class GradedVerdict(NamedTuple):
    """One case turned into PASS/FAIL: its id, score and verdict.

    >>> GradedVerdict("c-1", 4.0, "PASS").verdict
    'PASS'
    """

    id: CaseId
    score: float
    verdict: str


@dataclass(frozen=True)
class GradedVerdicts:
    """Graded scores turned into PASS/FAIL at ``threshold`` (a score ``>= threshold`` passes)."""

    threshold: float
    verdicts: tuple[GradedVerdict, ...]

    @property
    def passed(self) -> int:
        """How many cases passed."""
        return sum(1 for v in self.verdicts if v.verdict == "PASS")

    @property
    def n(self) -> int:
        """How many cases were scored."""
        return len(self.verdicts)

    def verdict_of(self, case_id: CaseId) -> str:
        """``"PASS"`` or ``"FAIL"`` for one id; ``InputError`` for an id not scored."""
        for v in self.verdicts:
            if v.id == case_id or str(v.id) == str(case_id):
                return v.verdict
        raise InputError(f"no score for the id {case_id!r}", field="id")

    def to_dict(self) -> dict[str, Any]:
        """``{"threshold", "passed", "n", "text", "verdicts": {id: "PASS"|"FAIL"}}``.

        >>> graded_pass_fail([("a", 4), ("b", 2)], 4).to_dict()["verdicts"]
        {'a': 'PASS', 'b': 'FAIL'}
        """
        return {
            "threshold": self.threshold,
            "passed": self.passed,
            "n": self.n,
            "text": format_rate(self.passed, self.n),
            "verdicts": {str(v.id): v.verdict for v in self.verdicts},
        }

    def to_text(self) -> str:
        """``'score >= 4: 1/2 = 50.0% [9.5%, 90.5%] pass'``.

        >>> print(graded_pass_fail([("a", 4), ("b", 2)], 4).to_text())
        score >= 4: 1/2 = 50.0% [9.5%, 90.5%] pass
        """
        return f"score >= {self.threshold:g}: {format_rate(self.passed, self.n)} pass"


def graded_pass_fail(
    scores: Scores, threshold: float, *, scale: tuple[float, float] | None = None
) -> GradedVerdicts:
    """PASS for every score at or above ``threshold``, FAIL below: the one door to a gate.

    The threshold is always explicit; there is no default, because "4 or
    better on a 1–5 scale" is a decision about the product, not a statistic.

    >>> result = graded_pass_fail({"a": 0.9, "b": 0.6, "c": 0.75}, 0.75, scale=(0, 1))
    >>> [v.verdict for v in result.verdicts], result.passed
    (['PASS', 'FAIL', 'PASS'], 2)

    Raises ``InputError`` for a threshold that is not a finite number, one
    outside ``scale``, a score outside ``scale`` or malformed scores, and
    ``UndefinedStatisticError`` for no scores.
    """
    if not is_number(threshold) or not math.isfinite(threshold):
        raise InputError(
            f"a threshold must be a finite number, got {describe_json(threshold)}",
            field="threshold",
        )
    bounds = _scale(scale)
    if bounds is not None and not bounds[0] <= threshold <= bounds[1]:
        raise InputError(
            f"the threshold {threshold:g} is outside the scale {bounds[0]:g}-{bounds[1]:g}",
            field="threshold",
        )
    cases = _scores(scores)
    if not cases:
        raise UndefinedStatisticError("graded_pass_fail: no scores to turn into verdicts")
    _check_on_scale(cases, bounds)
    verdicts = tuple(
        GradedVerdict(case.id, case.score, "PASS" if case.score >= threshold else "FAIL")
        for case in cases
    )
    return GradedVerdicts(float(threshold), verdicts)
