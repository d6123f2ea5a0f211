"""Agreement between raters, with intervals, and agreement among several raters.

A judge is only as good as the agreement it reaches with people, and people
do not agree perfectly with each other either: their agreement is the ceiling
a judge can be held to. This module puts an interval on the two-rater
statistics of :mod:`tinyeval.stats` and adds the several-rater ones.

=========================  ===================================================
Function                   Answers
=========================  ===================================================
``fleiss_kappa``           Do m raters per case agree beyond chance?
``krippendorff_alpha``     The same with missing ratings and other scales.
``pairwise_kappas``        Cohen's kappa for every pair of raters, with n.
=========================  ===================================================

Ratings of several raters come one case at a time: a sequence with one
position per rater (``None`` for a missing rating) or a mapping rater →
label. Bad input raises ``stats.StatisticsError``; a value that does not
exist for the data raises ``stats.UndefinedStatisticError``.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import NamedTuple

from ..stats import (
    StatisticsError,
    UndefinedStatisticError,
    cohen_kappa,
)

__all__ = [
    "PairKappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "pairwise_kappas",
]

#: One case's ratings: a rating per rater position, or rater → rating; None is missing.
CaseRatings = Sequence[Hashable | None] | Mapping[Hashable, Hashable | None]
_Delta = Callable[[Hashable, Hashable], float]


# ---------------------------------------------------------------- several raters


def _cases(ratings: Iterable[CaseRatings], func: str) -> list[list[Hashable]]:
    """Each case's present ratings (``None`` and absent raters dropped)."""
    out = []
    for index, case in enumerate(ratings):
        if isinstance(case, str | bytes) or not isinstance(case, Sequence | Mapping):
            raise StatisticsError(
                f"{func}: case {index} must be a sequence of ratings or a mapping "
                f"rater -> rating, got {case!r}"
            )
        values = case.values() if isinstance(case, Mapping) else case
        out.append([value for value in values if value is not None])
    if not out:
        raise StatisticsError(f"{func}: needs at least 1 case, got none")
    return out


def fleiss_kappa(ratings: Iterable[CaseRatings]) -> float:
    """Return Fleiss' kappa: agreement beyond chance of m raters on every case (Fleiss 1971).

    Each case must carry the same number m ≥ 2 of ratings; the raters need
    not be the same people from case to case. With n_ij the number of
    ratings of case i in category j, P̄ the mean over cases of (Σ_j n_ij² −
    m) / (m(m − 1)) and P̄_e = Σ_j p_j² over the category shares,
    κ = (P̄ − P̄_e) / (1 − P̄_e), computed in exact fractions.

    >>> fleiss_kappa([["PASS", "PASS", "PASS"], ["PASS", "PASS", "FAIL"],
    ...               ["FAIL", "FAIL", "FAIL"], ["FAIL", "PASS", "FAIL"]])
    0.3333333333333333

    Raises ``StatisticsError`` for no cases, a missing rating, or cases with
    different numbers of ratings or fewer than 2, and
    ``UndefinedStatisticError`` when every rating is the same label.
    """
    func = "fleiss_kappa"
    raw = list(ratings)
    cases = _cases(raw, func)
    m = len(cases[0])
    for index, (case, present) in enumerate(zip(raw, cases, strict=True)):
        given = len(case)
        if len(present) != given:
            raise StatisticsError(
                f"{func}: case {index} has a missing rating; Fleiss' kappa needs every "
                "rating (krippendorff_alpha allows missing ones)"
            )
        if given != m or given < 2:
            raise StatisticsError(
                f"{func}: every case needs the same number (at least 2) of ratings; "
                f"case 0 has {m}, case {index} has {given}"
            )
    totals: Counter[Hashable] = Counter()
    squares = 0
    for case in cases:
        counts = Counter(case)
        totals.update(counts)
        squares += sum(count * count for count in counts.values())
    big_n = len(cases)
    observed = Fraction(squares - big_n * m, big_n * m * (m - 1))
    chance = Fraction(sum(t * t for t in totals.values()), (big_n * m) ** 2)
    if chance == 1:
        raise UndefinedStatisticError(
            f"{func}: undefined when every rating is the same label (expected agreement is 1)"
        )
    return float((observed - chance) / (1 - chance))


_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def krippendorff_alpha(ratings: Iterable[CaseRatings], *, level: str = "nominal") -> float:
    """Return Krippendorff's alpha for any number of raters, missing ratings allowed.

    α = 1 − D_o / D_e from the coincidence matrix (Krippendorff 2011,
    "Computing Krippendorff's alpha-reliability"): every ordered pair of
    ratings within a case counts 1/(m_u − 1), m_u the ratings of that case;
    cases with a single rating are dropped. ``level`` picks the distance:
    ``"nominal"`` (different or not), ``"ordinal"`` (ranks, by the counts
    between two values), ``"interval"`` ((c − k)²) or ``"ratio"``
    (((c − k)/(c + k))², non-negative numbers).

    >>> krippendorff_alpha([["PASS", "PASS"], ["FAIL", "FAIL"], ["PASS", None],
    ...                     {"ann": "FAIL", "bob": "PASS"}, ["PASS", "PASS"]])
    0.5333333333333333

    Raises ``StatisticsError`` for an unknown ``level``, non-numeric ratings
    on an interval or ratio scale, negative ones on a ratio scale, or no case
    with two ratings; ``UndefinedStatisticError`` when all ratings are equal.
    """
    func = "krippendorff_alpha"
    if level not in _LEVELS:
        raise StatisticsError(f"{func}: level must be one of {', '.join(_LEVELS)}, got {level!r}")
    units = [case for case in _cases(ratings, func) if len(case) >= 2]
    if not units:
        raise StatisticsError(f"{func}: needs at least one case with 2 ratings, got none")
    if level in ("interval", "ratio"):
        for value in itertools.chain.from_iterable(units):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise StatisticsError(f"{func}: {level} ratings must be numbers, got {value!r}")
            if level == "ratio" and float(value) < 0:
                raise StatisticsError(f"{func}: ratio ratings must not be negative, got {value!r}")
    coincidence: defaultdict[tuple[Hashable, Hashable], Fraction] = defaultdict(Fraction)
    for unit in units:
        counts = Counter(unit)
        weight = Fraction(1, len(unit) - 1)
        for c, nc in counts.items():
            for k, nk in counts.items():
                coincidence[c, k] += weight * nc * (nk - (c == k))
    marginal: defaultdict[Hashable, Fraction] = defaultdict(Fraction)
    for (c, _k), o in coincidence.items():
        marginal[c] += o
    total = sum(marginal.values())
    delta = _distance(level, marginal)
    observed = math.fsum(float(o) * delta(c, k) for (c, k), o in coincidence.items())
    expected = math.fsum(
        float(marginal[c] * marginal[k]) * delta(c, k) for c in marginal for k in marginal
    )
    if expected == 0:
        raise UndefinedStatisticError(
            f"{func}: undefined when all ratings are the same (expected disagreement is 0)"
        )
    return 1.0 - (float(total) - 1.0) * observed / expected


def _distance(level: str, marginal: Mapping[Hashable, Fraction]) -> _Delta:
    """The squared distance δ²(c, k) of Krippendorff's metric for ``level``."""
    if level == "nominal":
        return lambda c, k: 0.0 if c == k else 1.0
    if level == "interval":
        return lambda c, k: (float(c) - float(k)) ** 2  # type: ignore[arg-type]
    if level == "ratio":
        return lambda c, k: (
            0.0 if c == k else ((float(c) - float(k)) / (float(c) + float(k))) ** 2  # type: ignore[arg-type]
        )
    try:
        ordered = sorted(marginal)  # type: ignore[type-var]
    except TypeError:
        raise StatisticsError(
            "krippendorff_alpha: ordinal ratings must be mutually comparable"
        ) from None
    # cumulative[i] = Σ of the marginals of the values ranked before the i-th
    position = {value: index for index, value in enumerate(ordered)}
    cumulative = [0.0, *itertools.accumulate(float(marginal[v]) for v in ordered)]

    def ordinal(c: Hashable, k: Hashable) -> float:
        low, high = sorted((position[c], position[k]))
        between = cumulative[high + 1] - cumulative[low]
        return (between - (float(marginal[c]) + float(marginal[k])) / 2.0) ** 2

    return ordinal


class PairKappa(NamedTuple):
    """Cohen's kappa of one pair of raters on the ``n`` cases both rated.

    ``kappa`` is ``None`` when it is undefined there (fewer than 2 shared
    cases, or both raters used one and the same label).

    >>> print(PairKappa("ann", "bob", 12, 0.5))
    ann vs bob: kappa = 0.50 (n = 12)
    """

    rater_a: Hashable
    rater_b: Hashable
    n: int
    kappa: float | None

    def to_dict(self) -> dict[str, str | int | float | None]:
        """``{"rater_a", "rater_b", "n", "kappa"}``, raters as strings."""
        return {
            "rater_a": str(self.rater_a),
            "rater_b": str(self.rater_b),
            "n": self.n,
            "kappa": self.kappa,
        }

    def __str__(self) -> str:
        shown = "undefined" if self.kappa is None else f"{self.kappa:.2f}"
        return f"{self.rater_a} vs {self.rater_b}: kappa = {shown} (n = {self.n})"


def pairwise_kappas(
    labels_by_rater: Mapping[
        Hashable, Sequence[Hashable | None] | Mapping[Hashable, Hashable | None]
    ],
) -> tuple[PairKappa, ...]:
    """Return Cohen's kappa for every pair of raters, on the cases both of them rated.

    Each rater's labels are a sequence in case order (``None`` where that
    rater did not label the case; all sequences the same length) or a
    mapping case id → label. Pairs come in the order the raters are given.

    >>> for pair in pairwise_kappas({"ann": ["PASS", "FAIL", "PASS", "FAIL"],
    ...                              "bob": ["PASS", "FAIL", "FAIL", None],
    ...                              "cy": {0: "PASS", 1: "FAIL", 3: "FAIL"}}):
    ...     print(pair)
    ann vs bob: kappa = 0.40 (n = 3)
    ann vs cy: kappa = 1.00 (n = 3)
    bob vs cy: kappa = 1.00 (n = 2)

    Raises ``StatisticsError`` for fewer than 2 raters, a rater's labels given
    as a string or other non-sequence, or sequences of different lengths.
    """
    func = "pairwise_kappas"
    if len(labels_by_rater) < 2:
        raise StatisticsError(f"{func}: needs at least 2 raters, got {len(labels_by_rater)}")
    by_case: dict[Hashable, dict[Hashable, Hashable]] = {}
    lengths = set()
    for rater, labels in labels_by_rater.items():
        if isinstance(labels, Mapping):
            items: Iterable[tuple[Hashable, Hashable | None]] = labels.items()
        elif isinstance(labels, Sequence) and not isinstance(labels, str | bytes):
            lengths.add(len(labels))
            items = enumerate(labels)
        else:
            raise StatisticsError(
                f"{func}: labels of rater {rater!r} must be a sequence or a mapping "
                f"case -> label, got {labels!r}"
            )
        by_case[rater] = {case: label for case, label in items if label is not None}
    if len(lengths) > 1:
        raise StatisticsError(
            f"{func}: label sequences must all have one entry per case, got lengths "
            f"{sorted(lengths)}"
        )
    pairs = []
    for rater_a, rater_b in itertools.combinations(by_case, 2):
        first, second = by_case[rater_a], by_case[rater_b]
        shared = [case for case in first if case in second]
        kappa: float | None = None
        if len(shared) >= 2:
            try:
                kappa = cohen_kappa([first[c] for c in shared], [second[c] for c in shared])
            except UndefinedStatisticError:
                kappa = None
        pairs.append(PairKappa(rater_a, rater_b, len(shared), kappa))
    return tuple(pairs)
