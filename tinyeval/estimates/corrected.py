"""A run's judge pass rates corrected with a saved calibration (``run --calibration``).

Each category's rate is corrected with the calibrated judge's sensitivity and
specificity (:func:`tinyeval.estimates.ppi.corrected_pass_rate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..calibration import CATEGORY_MIN_LABELS, Calibration, CalibrationError, _short
from ..stats import Rate, UndefinedStatisticError
from .ppi import CorrectedRate, corrected_pass_rate

__all__ = [
    "UncorrectedRate",
    "corrected_lines",
    "corrected_rate_for",
    "corrected_rates",
    "correction_summary",
]


def corrected_rate_for(
    calibration: Calibration,
    passes: int,
    n: int,
    *,
    category: str | None = None,
    judge_model: str | None = None,
    rubric_fingerprint: str | None = None,
    seed: int = 0,
    draws: int = 2000,
) -> CorrectedRate:
    """Correct ``passes`` of ``n`` with a calibration: the category's own sensitivity and
    specificity when it is correctable, else the overall ones (``scope`` says which); a
    calibration made with another judge model or rubric is flagged in ``warnings``.

    >>> from tinyeval.calibration import calibrate
    >>> cal = calibrate(["PASS"] * 45 + ["FAIL"] * 5 + ["FAIL"] * 40 + ["PASS"] * 10,
    ...                 ["PASS"] * 50 + ["FAIL"] * 50)
    >>> result = corrected_rate_for(cal, 70, 100)
    >>> round(result.rate, 3), result.scope  # (0.70 + 0.80 - 1) / (0.90 + 0.80 - 1)
    (0.714, 'overall')

    Raises ``CalibrationError`` when the calibration is not PASS/FAIL or lacks human
    PASS or FAIL labels, ``UndefinedStatisticError`` when sensitivity + specificity ≤ 1.
    """
    if calibration.kind != "pass/fail":
        raise CalibrationError(
            "corrected_rate_for: needs a PASS/FAIL calibration, got multiclass labels"
        )
    scope = "overall"
    source = calibration
    if category is not None and category in calibration.correctable_categories():
        scope, source = category, calibration.per_category[category]
    if source.sensitivity is None or source.specificity is None:
        missing = "PASS" if source.sensitivity is None else "FAIL"
        raise CalibrationError(
            f"corrected_rate_for: the calibration has no parsed case you labelled {missing}, so "
            f"the judge's {'sensitivity' if missing == 'PASS' else 'specificity'} is unknown"
        )
    result = corrected_pass_rate(
        passes,
        n,
        (source.sensitivity.successes, source.sensitivity.n),
        (source.specificity.successes, source.specificity.n),
        seed=seed,
        draws=draws,
    )
    warnings = list(result.warnings)
    for what, now, then in (
        ("judge model", judge_model, calibration.judge_model),
        ("rubric", rubric_fingerprint, calibration.rubric_fingerprint),
    ):
        if now is not None and then is not None and now != then:
            warnings.append(
                f"CALIBRATION EXPIRED: it was made with {what} {_short(then)}, this run uses "
                f"{_short(now)}"
            )
    if not calibration.trusted:
        warnings.append(f"the calibration itself is not trusted: {calibration.verdict}")
    return replace(result, warnings=tuple(warnings), scope=scope, category=category)


@dataclass(frozen=True)
class UncorrectedRate:
    """A judge pass rate that a calibration could not correct, and why (in words).

    >>> UncorrectedRate(Rate.of(5, 10), "the judge is no better than chance").to_dict()["error"]
    'the judge is no better than chance'
    """

    observed: Rate
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """``{"error", "passes", "n"}``."""
        return {"error": self.reason, "passes": self.observed.successes, "n": self.observed.n}


def corrected_rates(
    calibration: Calibration,
    tallies: Mapping[str, Any],
    *,
    judge: Any,
    judge_model: str | None = None,
) -> dict[str, CorrectedRate | UncorrectedRate]:
    """Each category's primary-judge pass rate (parsed verdicts only) corrected with the
    calibration, or an :class:`UncorrectedRate` saying why not; categories without a
    parsed verdict are left out.

    >>> from tinyeval.calibration import calibrate
    >>> from tinyeval.judge import Judge
    >>> from tinyeval.records import CategoryTally
    >>> cal = calibrate(["PASS"] * 45 + ["FAIL"] * 5 + ["FAIL"] * 40 + ["PASS"] * 10,
    ...                 ["PASS"] * 50 + ["FAIL"] * 50)
    >>> found = corrected_rates(cal, {"c": CategoryTally(primary_parsed=100, primary_passed=70)},
    ...                         judge=Judge("Is polite."))
    >>> round(found["c"].rate, 3)
    0.714
    """
    found: dict[str, CorrectedRate | UncorrectedRate] = {}
    for category, tally in tallies.items():
        if not tally.primary_parsed:
            continue
        try:
            found[category] = corrected_rate_for(
                calibration,
                tally.primary_passed,
                tally.primary_parsed,
                category=category,
                judge_model=judge_model,
                rubric_fingerprint=judge.rubric_fingerprint,
            )
        except (CalibrationError, UndefinedStatisticError) as exc:  # said in words, not raised
            found[category] = UncorrectedRate(
                Rate.of(tally.primary_passed, tally.primary_parsed), str(exc)
            )
    return found


def corrected_lines(
    corrected: Mapping[str, CorrectedRate | UncorrectedRate], *, source: str, judge: str
) -> list[str]:
    """The corrected rates as summary lines, with their warnings once each.

    >>> print(corrected_lines({"c": UncorrectedRate(Rate.of(5, 10), "no better than chance")},
    ...                       source="cal.json", judge="tone")[1])
      c: 5/10 = 50.0% [23.7%, 76.3%] observed; cannot correct: no better than chance
    """
    lines = [
        f"judge pass rates corrected with the calibration in {source} "
        f"(judge {judge}; parsed verdicts only):"
    ]
    warnings: list[str] = []
    for category, item in corrected.items():
        if isinstance(item, UncorrectedRate):
            lines.append(f"  {category}: {item.observed} observed; cannot correct: {item.reason}")
            continue
        lines.append(
            f"  {category}: {item.observed} observed → {item.rate:.1%} [{item.low:.1%}, "
            f"{item.high:.1%}] corrected ({item.scope} sensitivity/specificity)"
        )
        warnings.extend(w for w in item.warnings if w not in warnings)
    lines.extend(f"  warning: {w}" for w in warnings)
    return lines


def correction_summary(cal: Calibration) -> dict[str, Any]:
    """The ``"correction"`` block of a saved calibration: sensitivity and specificity,
    overall and per correctable category.

    >>> from tinyeval.calibration import calibrate
    >>> correction_summary(calibrate(["PASS", "FAIL"], ["PASS", "FAIL"]))["overall"]["n"]
    2
    """

    def pair(sub: Calibration) -> dict[str, Any]:
        return {
            "n": sub.parsed,
            "sensitivity": sub.sensitivity and sub.sensitivity.to_dict(),
            "specificity": sub.specificity and sub.specificity.to_dict(),
        }

    return {
        "rule": (
            f"a category gets its own figures with at least {CATEGORY_MIN_LABELS} parsed "
            "labels including both human PASS and human FAIL; otherwise the overall figures apply"
        ),
        "overall": pair(cal) if cal.kind == "pass/fail" else None,
        "per_category": {
            name: pair(cal.per_category[name]) for name in cal.correctable_categories()
        },
    }
