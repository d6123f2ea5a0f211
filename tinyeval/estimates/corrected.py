"""A judge's pass rate corrected with a saved calibration (``run --calibration``): the
calibrated judge's sensitivity and specificity, through
:func:`tinyeval.estimates.ppi.corrected_pass_rate`; people.py gates on it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..calibration import CATEGORY_MIN_LABELS, Calibration, CalibrationError
from ..errors import shorten
from .ppi import CorrectedRate, corrected_pass_rate

__all__ = ["corrected_rate_for", "correction_summary"]


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
                f"CALIBRATION EXPIRED: it was made with {what} {shorten(str(then), 20)}, "
                f"this run uses {shorten(str(now), 20)}"
            )
    if not calibration.trusted:
        warnings.append(f"the calibration itself is not trusted: {calibration.verdict}")
    return replace(result, warnings=tuple(warnings), scope=scope, category=category)


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
