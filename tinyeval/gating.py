"""The gate: a verdict per category, never an average across them.

A category blocks when its pass rate is below its threshold (or, with
``on="lower"``, when the lower end of its Wilson interval is). Categories are
judged one by one because an average hides exactly what a gate is for: 99% on
tone cannot pay for 85% on amounts. The global rate is computed and shown,
but it never gates.

Every case is in its category's denominator: errored cases and cases whose
judge reply did not parse count as not passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .stats import wilson_interval

__all__ = [
    "CategoryVerdict",
    "ComparisonReport",
    "GateError",
    "GateReport",
    "HoldoutComparison",
    "PairedComparison",
    "compare_holdout",
    "compare_runs",
    "gate",
    "parse_threshold",
]


class GateError(InputError):
    """A threshold that is not a rate, or a gate asked of nothing."""


def parse_threshold(text: str | float) -> float:
    """Read a threshold given as a fraction (``0.95``) or a percentage (``"95%"``).

    >>> parse_threshold("0.95"), parse_threshold("95%"), parse_threshold(1)
    (0.95, 0.95, 1.0)
    >>> parse_threshold("1.5")
    Traceback (most recent call last):
    ...
    tinyeval.gating.GateError: a threshold is a rate between 0 and 1 (or 0% to 100%), got '1.5'
    """
    raw = text
    try:
        if isinstance(text, str) and text.strip().endswith("%"):
            value = float(text.strip()[:-1]) / 100
        else:
            value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise GateError(f"a threshold is a rate between 0 and 1 (or 0% to 100%), got {raw!r}")
    return value


@dataclass(frozen=True)
class CategoryVerdict:
    """One category's figures and whether it blocks.

    ``rate``, ``low`` and ``high`` are None when the category has no cases.
    """

    category: str
    passed: int
    total: int
    errors: int
    unparsed: int
    rate: float | None
    low: float | None
    high: float | None
    threshold: float | None
    blocking: bool
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a JSON-ready dict.

        >>> v = CategoryVerdict("tone", 9, 10, 0, 0, 0.9, 0.6, 0.98, 0.8, False)
        >>> v.to_dict()["blocking"]
        False
        """
        return {
            "passed": self.passed,
            "total": self.total,
            "errors": self.errors,
            "unparsed": self.unparsed,
            "rate": self.rate,
            "low": self.low,
            "high": self.high,
            "threshold": self.threshold,
            "blocking": self.blocking,
            "note": self.note,
        }


@dataclass(frozen=True)
class GateReport:
    """Per-category verdicts, the global line (shown, never gating) and the outcome."""

    categories: tuple[CategoryVerdict, ...]
    overall: CategoryVerdict
    on: str
    confidence: float

    @property
    def passed(self) -> bool:
        """True when no category blocks."""
        return not self.blocking

    @property
    def blocking(self) -> list[CategoryVerdict]:
        """The categories that block, in order."""
        return [c for c in self.categories if c.blocking]

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (the ``gate`` part of ``run --json``).

        >>> report = gate({"tone": {"passed": 9, "total": 10}}, {"tone": 0.8})
        >>> report.to_dict()["passed"], report.to_dict()["blocking"]
        (True, [])
        """
        return {
            "passed": self.passed,
            "on": self.on,
            "confidence": self.confidence,
            "blocking": [c.category for c in self.blocking],
            "categories": {c.category: c.to_dict() for c in self.categories},
            "overall": self.overall.to_dict(),
        }


def _count(tally: Any, key: str) -> int:
    if isinstance(tally, Mapping):
        return int(tally.get(key, 0) or 0)
    return int(getattr(tally, key, 0) or 0)


def _verdict(
    name: str, tally: Any, threshold: float | None, *, on: str, confidence: float
) -> CategoryVerdict:
    passed, total = _count(tally, "passed"), _count(tally, "total")
    errors, unparsed = _count(tally, "errors"), _count(tally, "unparsed")
    if total == 0:
        return CategoryVerdict(
            name,
            0,
            0,
            0,
            0,
            None,
            None,
            None,
            threshold,
            blocking=threshold is not None,
            note="no cases in this category",
        )
    low, high = wilson_interval(passed, total, confidence)
    rate = passed / total
    measured = low if on == "lower" else rate
    blocking = threshold is not None and measured < threshold
    return CategoryVerdict(
        name, passed, total, errors, unparsed, rate, low, high, threshold, blocking
    )


def gate(
    tallies: Mapping[str, Any],
    thresholds: Mapping[str, float | str] | None = None,
    *,
    default_threshold: float | str | None = None,
    on: str = "rate",
    confidence: float = 0.95,
) -> GateReport:
    """Judge each category against its threshold; the global rate is reported, never gated.

    ``tallies`` maps a category to its counts (``passed`` and ``total``, plus
    optional ``errors`` and ``unparsed``) — a mapping or any object with those
    attributes, such as :class:`~tinyeval.runner.CategoryTally`. A category
    without a threshold of its own uses ``default_threshold``; with neither, it
    is reported but does not gate. A threshold named for a category with no
    cases blocks (a category that vanished from the data must not pass
    silently). ``on="lower"`` gates on the lower end of the Wilson interval
    instead of the observed rate.

    >>> report = gate(
    ...     {"amount_extraction": {"passed": 17, "total": 20},
    ...      "tone": {"passed": 45, "total": 45}},
    ...     {"amount_extraction": 1.0}, default_threshold=0.8)
    >>> report.passed, [c.category for c in report.blocking]
    (False, ['amount_extraction'])
    >>> round(report.overall.rate, 3)  # 62/65: shown, but it does not gate
    0.954
    """
    if on not in ("rate", "lower"):
        raise GateError(f'gate "on" must be "rate" or "lower", got {on!r}')
    limits = {name: parse_threshold(value) for name, value in (thresholds or {}).items()}
    default = parse_threshold(default_threshold) if default_threshold is not None else None
    names = list(tallies) + [name for name in limits if name not in tallies]
    verdicts = tuple(
        _verdict(
            name, tallies.get(name, {}), limits.get(name, default), on=on, confidence=confidence
        )
        for name in names
    )
    total = {
        key: sum(_count(tally, key) for tally in tallies.values())
        for key in ("passed", "total", "errors", "unparsed")
    }
    overall = _verdict("global", total, None, on=on, confidence=confidence)
    return GateReport(verdicts, overall, on, confidence)


# --------------------------------------------------------------------------- paired comparison


@dataclass(frozen=True)
class PairedComparison:
    """Two runs over the same cases, in one category (or ``"global"``).

    ``pass_to_fail`` and ``fail_to_pass`` are the discordant pairs; ``p_value``
    is McNemar's exact two-sided test on them. Only cases present in both runs
    count.
    """

    category: str
    n: int
    before_passed: int
    after_passed: int
    pass_to_fail: int
    fail_to_pass: int
    p_value: float

    @property
    def regressed(self) -> bool:
        """More cases broke than were fixed (significance aside)."""
        return self.pass_to_fail > self.fail_to_pass

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict.

        >>> before = [{"id": "a", "category": "x", "status": "pass"}]
        >>> after = [{"id": "a", "category": "x", "status": "fail"}]
        >>> compare_runs(before, after).overall.to_dict()["pass_to_fail"]
        1
        """
        return {
            "n": self.n,
            "before_passed": self.before_passed,
            "after_passed": self.after_passed,
            "pass_to_fail": self.pass_to_fail,
            "fail_to_pass": self.fail_to_pass,
            "p_value": self.p_value,
        }


@dataclass(frozen=True)
class ComparisonReport:
    """Per-category paired comparisons, the global one, and the ids that did not pair."""

    categories: tuple[PairedComparison, ...]
    overall: PairedComparison
    only_before: tuple[str, ...]
    only_after: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "categories": {c.category: c.to_dict() for c in self.categories},
            "overall": self.overall.to_dict(),
            "only_before": list(self.only_before),
            "only_after": list(self.only_after),
        }


def _paired(category: str, pairs: list[tuple[bool, bool]]) -> PairedComparison:
    from .stats import mcnemar

    b = sum(1 for before, after in pairs if before and not after)
    c = sum(1 for before, after in pairs if after and not before)
    return PairedComparison(
        category,
        len(pairs),
        sum(1 for before, _ in pairs if before),
        sum(1 for _, after in pairs if after),
        b,
        c,
        mcnemar(b, c),
    )


def compare_runs(before: Any, after: Any) -> ComparisonReport:
    """Compare two runs' result rows case by case (paired by id), per category.

    A case passes when its row's ``status`` is ``"pass"``; errors and failures
    both count as not passed. The category is taken from the later run. Paired
    analysis uses the cases' own history: the same case passing before and
    failing after is evidence about the change that two independent rates
    cannot give.

    >>> before = [{"id": str(i), "category": "amounts", "status": "pass"} for i in range(20)]
    >>> after = [dict(r, status="fail") if int(r["id"]) < 12 else r for r in before]
    >>> report = compare_runs(before, after)
    >>> c = report.categories[0]
    >>> (c.pass_to_fail, c.fail_to_pass, round(c.p_value, 5))
    (12, 0, 0.00049)
    """
    first = {row["id"]: row for row in before}
    second = {row["id"]: row for row in after}
    shared = [case_id for case_id in second if case_id in first]
    by_category: dict[str, list[tuple[bool, bool]]] = {}
    for case_id in shared:
        pair = (first[case_id].get("status") == "pass", second[case_id].get("status") == "pass")
        by_category.setdefault(str(second[case_id].get("category", "default")), []).append(pair)
    if not shared:
        raise GateError("the two runs have no case id in common; nothing to compare")
    every = [pair for pairs in by_category.values() for pair in pairs]
    return ComparisonReport(
        tuple(_paired(name, pairs) for name, pairs in by_category.items()),
        _paired("global", every),
        tuple(case_id for case_id in first if case_id not in second),
        tuple(case_id for case_id in second if case_id not in first),
    )


# --------------------------------------------------------------------------- holdout


@dataclass(frozen=True)
class HoldoutComparison:
    """One category's pass rate on the development cases and on the held-out ones.

    ``suspicious`` is True when the development rate lies above the upper end
    of the holdout's Wilson interval: the holdout does not support the figure
    the tuned-on cases give, the mark of a rubric or prompt fitted to them.
    """

    category: str
    dev_passed: int
    dev_total: int
    holdout_passed: int
    holdout_total: int
    holdout_high: float | None
    suspicious: bool

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict."""
        return {
            "dev_passed": self.dev_passed,
            "dev_total": self.dev_total,
            "holdout_passed": self.holdout_passed,
            "holdout_total": self.holdout_total,
            "holdout_high": self.holdout_high,
            "suspicious": self.suspicious,
        }


def compare_holdout(
    dev_rows: Any, holdout_rows: Any, *, confidence: float = 0.95
) -> list[HoldoutComparison]:
    """Compare pass rates on development and holdout rows, per category and overall.

    Rows pass when their ``status`` is ``"pass"``. The last entry is
    ``"global"``. A category missing from either side is reported with 0 cases
    there and is never suspicious (there is nothing to compare).

    >>> dev = [{"id": str(i), "category": "tone", "status": "pass"} for i in range(40)]
    >>> hold = [{"id": f"h{i}", "category": "tone", "status": "pass" if i < 6 else "fail"}
    ...         for i in range(10)]
    >>> c = compare_holdout(dev, hold)[0]
    >>> (c.dev_passed, c.dev_total, c.holdout_passed, c.holdout_total, c.suspicious)
    (40, 40, 6, 10, True)
    """
    counts: dict[str, list[int]] = {}
    for side, rows in ((0, dev_rows), (2, holdout_rows)):
        for row in rows:
            slot = counts.setdefault(str(row.get("category", "default")), [0, 0, 0, 0])
            slot[side] += row.get("status") == "pass"
            slot[side + 1] += 1
    everything = [sum(slot[i] for slot in counts.values()) for i in range(4)]
    lines = []
    for name, (dp, dn, hp, hn) in [*counts.items(), ("global", everything)]:
        high = wilson_interval(hp, hn, confidence)[1] if hn else None
        suspicious = bool(dn and high is not None and dp / dn > high)
        lines.append(HoldoutComparison(name, dp, dn, hp, hn, high, suspicious))
    return lines
