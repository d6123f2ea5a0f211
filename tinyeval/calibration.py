"""Calibrate the judge against human labels: does its figure stand for your criterion?

Raw agreement flatters a judge: on a set where 90% of cases pass, a judge that
says PASS to everything agrees 90% of the time and catches nothing. So the
headline figures here are the ones that cannot be gamed that way:

=====================  =========================================================
``failure_recall``     of the cases you labelled FAIL, how many the judge failed
``false_alarm_rate``   of the cases you labelled PASS, how many the judge failed
``kappa``              agreement beyond chance (Cohen), with its 95% interval
                       (``kappa_interval``); unless the interval's lower bound
                       reaches 0.6 the labels do not show that the figure is
                       your criterion rather than the judge's opinion
``agreement``          shown, with its Wilson interval and the share a judge
                       always giving the commonest label would reach
=====================  =========================================================

Unparsed judge replies (``None`` in the judge's column) are never dropped: they
are counted in ``unparsed``, shown in their own confusion-matrix column, and
``agreement_with_unparsed`` counts them as disagreements. The other figures
(agreement, recall, false alarms, kappa) are computed over the parsed pairs,
because an unparsed reply is neither a PASS nor a FAIL.

``corrected_pass_rate`` turns the calibration into a correction of an observed
pass rate (Rogan and Gladen 1978), with an interval that carries the
calibration's own uncertainty.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import json_problem, plural
from .estimates.ppi import CorrectedRate, corrected_pass_rate
from .humans.agreement import kappa_interval, spearman_interval
from .humans.labelers import (
    DISTRUST as _DISTRUST,
)
from .humans.labelers import (  # the label-joining helpers live there too
    UNPARSED,
    CalibrationError,
    CategoryPPI,
    HumanAgreement,
    Label,
    PPIRates,
    ReferenceLabels,
    _as_label,
    _check_human_kind,
    _expiry,
    _is_number,
    _ordered,
    _short,
    _unknown_judge,
    calibration_lines,
    human_agreement,
    ppi_rates,
    reference_labels,
    self_agreement,
)
from .records import (
    output_fingerprint,
    primary_verdict,
    provenance,
    verdict_errored,
    verdict_label,
    verdicts,
    write_text_atomically,
)
from .stats import Rate, StatisticsError, UndefinedStatisticError, cohen_kappa, spearman

UndefinedCorrectionError = UndefinedStatisticError  # the name before the correction moved to stats

__all__ = [
    "CATEGORY_MIN_LABELS",
    "KAPPA_FLOOR",
    "MIN_LABELS",
    "Calibration",
    "CalibrationError",
    "CategoryPPI",
    "CorrectedRate",
    "HumanAgreement",
    "PPIRates",
    "Rate",
    "ReferenceLabels",
    "UncorrectedRate",
    "UndefinedCorrectionError",
    "calibrate",
    "calibrate_results",
    "corrected_lines",
    "corrected_pass_rate",
    "corrected_rate_for",
    "corrected_rates",
    "disagreement_rows",
    "human_agreement",
    "load_calibration",
    "ppi_rates",
    "reference_labels",
    "self_agreement",
]


KAPPA_FLOOR = 0.6
"""Below this kappa the judge's figure is its own opinion (Landis and Koch: 'moderate')."""
MIN_LABELS = 50
"""Fewer labelled cases than this are too few to trust a calibration."""
CATEGORY_MIN_LABELS = 20
"""A category gets its own sensitivity/specificity with this many parsed labels and both classes."""
BOOTSTRAP_DRAWS = 2000
CALIBRATION_FORMAT = "tinyeval-calibration"
CALIBRATION_VERSION = 1
UNPARSED_TOLERANCE = 0.05
"""More unparsed judge replies than this share of the pairs is a warning of its own."""


_count = plural  # ``1 label``, ``2 labels``


def _rate(successes: int, n: int) -> Rate | None:
    return Rate.of(successes, n) if n else None


def _rate_dict(rate: Rate | None) -> dict[str, Any] | None:
    return rate.to_dict() if rate is not None else None


# ---------------------------------------------------------------- labels


def _key(label: Label | None) -> str:
    """A label as a JSON object key."""
    return UNPARSED if label is None else str(label)


# ---------------------------------------------------------------- the result


@dataclass(frozen=True)
class Calibration:
    """Judge against human on the same cases; build it with ``calibrate``.

    Figures over the parsed pairs: ``agreement``, ``kappa``, ``spearman``
    (numeric labels), the ``confusion`` matrix (human label → judge label →
    count, with an ``unparsed`` column) and, for PASS/FAIL labels,
    ``failure_recall`` (= ``specificity``), ``false_alarm_rate``,
    ``sensitivity``. ``kappa_interval`` is the ``(low, high)`` of kappa's 95%
    large-sample interval (:func:`tinyeval.humans.agreement.kappa_interval`; None
    when undefined, ``kappa_interval_undefined`` says why), and
    ``spearman_interval`` Spearman's for numeric labels. ``warnings`` says in
    words what makes the figure untrustworthy; ``verdict`` sums it up in one
    sentence.

    >>> cal = calibrate(["PASS", "FAIL", "PASS", None], ["PASS", "FAIL", "FAIL", "PASS"])
    >>> cal.n, cal.parsed, cal.unparsed, cal.judge_caught, cal.human_failures
    (4, 3, 1, 1, 2)
    >>> cal.confusion["FAIL"]
    {'PASS': 1, 'FAIL': 1, None: 0}
    """

    kind: str  # "pass/fail" or "multiclass"
    labels: tuple[Label, ...]
    n: int
    parsed: int
    unparsed: int
    agreement: Rate | None
    agreement_with_unparsed: Rate
    majority_label: Label | None
    majority_share: Rate | None
    confusion: dict[Label, dict[Label | None, int]]
    kappa: float | None
    kappa_undefined: str | None
    spearman: float | None
    spearman_undefined: str | None
    human_failures: int | None
    judge_caught: int | None
    failure_recall: Rate | None
    human_passes: int | None
    false_alarms: int | None
    false_alarm_rate: Rate | None
    sensitivity: Rate | None
    warnings: tuple[str, ...]
    verdict: str
    per_category: dict[str, Calibration] = field(default_factory=dict, repr=False)
    judge_labels: tuple[Label | None, ...] = field(default=(), repr=False)
    human_labels: tuple[Label, ...] = field(default=(), repr=False)
    categories: tuple[str, ...] | None = field(default=None, repr=False)
    ids: tuple[Any, ...] | None = field(default=None, repr=False)
    judge_model: str | None = None
    rubric_fingerprint: str | None = None
    expired: tuple[str, ...] = ()
    unmatched_results: tuple[Any, ...] = field(default=(), repr=False)
    unmatched_labels: tuple[Any, ...] = field(default=(), repr=False)
    without_verdict: tuple[Any, ...] = field(default=(), repr=False)
    kappa_interval: tuple[float, float] | None = None
    kappa_interval_undefined: str | None = None
    spearman_interval: tuple[float, float] | None = None

    @property
    def specificity(self) -> Rate | None:
        """P(judge FAIL | human FAIL): the same figure as ``failure_recall``."""
        return self.failure_recall

    @property
    def trusted(self) -> bool:
        """True when nothing in ``warnings`` speaks against the judge's figure."""
        return not self.warnings

    def disagreements(self) -> list[Any]:
        """Ids (or positions, without ids) where the judge differs from the human.

        Unparsed judge replies count as disagreements.

        >>> calibrate(["PASS", None, "FAIL"], ["PASS", "PASS", "PASS"]).disagreements()
        [1, 2]
        """
        keys = self.ids if self.ids is not None else range(self.n)
        return [
            key
            for key, judge, human in zip(keys, self.judge_labels, self.human_labels, strict=True)
            if judge != human
        ]

    def correctable_categories(self) -> list[str]:
        """Categories that get their own sensitivity and specificity in a correction.

        The rule: at least ``CATEGORY_MIN_LABELS`` (20) parsed pairs, with both
        human PASS and human FAIL labels among them.

        >>> cats = ["a"] * 20 + ["b"] * 20
        >>> cal = calibrate(["PASS"] * 40, ["PASS"] * 10 + ["FAIL"] * 10 + ["PASS"] * 20,
        ...                 categories=cats)
        >>> cal.correctable_categories()
        ['a']
        """
        return [
            name
            for name, sub in sorted(self.per_category.items())
            if sub.kind == "pass/fail"
            and sub.parsed >= CATEGORY_MIN_LABELS
            and sub.human_failures
            and sub.human_passes
        ]

    def to_dict(self, *, categories: bool = True) -> dict[str, Any]:
        """The calibration as a JSON-ready dict (the ``calibrate --json`` object).

        Rates are ``{"successes", "n", "rate", "low", "high", "text"}`` or null;
        confusion-matrix keys are labels as strings, with ``"unparsed"`` for
        judge replies that did not parse.

        >>> d = calibrate(["PASS", "FAIL"], ["PASS", "PASS"]).to_dict()
        >>> d["false_alarms"], d["confusion"]["PASS"]
        (1, {'PASS': 1, 'FAIL': 1, 'unparsed': 0})
        """
        result: dict[str, Any] = {
            "kind": self.kind,
            "labels": list(self.labels),
            "n": self.n,
            "parsed": self.parsed,
            "unparsed": self.unparsed,
            "agreement": _rate_dict(self.agreement),
            "agreement_with_unparsed": _rate_dict(self.agreement_with_unparsed),
            "majority_label": self.majority_label,
            "majority_share": _rate_dict(self.majority_share),
            "kappa": self.kappa,
            "kappa_undefined": self.kappa_undefined,
            "kappa_interval": list(self.kappa_interval) if self.kappa_interval else None,
            "kappa_interval_undefined": self.kappa_interval_undefined,
            "spearman": self.spearman,
            "spearman_undefined": self.spearman_undefined,
            "spearman_interval": list(self.spearman_interval) if self.spearman_interval else None,
            "human_failures": self.human_failures,
            "judge_caught": self.judge_caught,
            "failure_recall": _rate_dict(self.failure_recall),
            "human_passes": self.human_passes,
            "false_alarms": self.false_alarms,
            "false_alarm_rate": _rate_dict(self.false_alarm_rate),
            "sensitivity": _rate_dict(self.sensitivity),
            "specificity": _rate_dict(self.specificity),
            "confusion": {
                _key(human): {_key(judge): count for judge, count in row.items()}
                for human, row in self.confusion.items()
            },
            "warnings": list(self.warnings),
            "verdict": self.verdict,
            "trusted": self.trusted,
            "judge_model": self.judge_model,
            "rubric_fingerprint": self.rubric_fingerprint,
            "expired": list(self.expired),
            "unmatched_results": list(self.unmatched_results),
            "unmatched_labels": list(self.unmatched_labels),
            "without_verdict": list(self.without_verdict),
            "disagreements": self.disagreements(),
        }
        if categories:
            correctable = set(self.correctable_categories())
            result["per_category"] = {
                name: {**sub.to_dict(categories=False), "correctable": name in correctable}
                for name, sub in sorted(self.per_category.items())
            }
        return result

    def to_text(self) -> str:
        """The calibration as the plain text ``tinyeval calibrate`` prints.

        >>> print(calibrate(["PASS", "FAIL", "PASS"], ["PASS", "FAIL", "FAIL"]).to_text())
        ... # doctest: +ELLIPSIS
        judge vs human on 3 labelled cases
        <BLANKLINE>
                    judge PASS  judge FAIL  unparsed
        human PASS           1           0         0
        human FAIL           1           1         0
        <BLANKLINE>
        agreement          2/3 = 66.7% [20.8%, 93.9%]
        ...
        """
        return "\n".join(calibration_lines(self))

    def save(self, path: str | Path) -> None:
        """Write the calibration to a JSON file that ``load_calibration`` reads back.

        The file keeps every pair (id, category, judge label, human label), so
        loading recomputes every figure with the code that reads it, plus the
        summary (``to_dict``) and the sensitivity/specificity a correction
        uses, overall and for each category that qualifies (see
        ``correctable_categories``). The write is atomic.

        >>> import tempfile, os
        >>> cal = calibrate(["PASS", "FAIL", "FAIL"], ["PASS", "FAIL", "PASS"])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "cal.json")
        ...     cal.save(path)
        ...     load_calibration(path).false_alarms
        1
        """
        keys = self.ids if self.ids is not None else range(self.n)
        categories = self.categories or (None,) * self.n
        pairs = [
            {"id": key, "category": category, "judge": judge, "human": human}
            for key, category, judge, human in zip(
                keys, categories, self.judge_labels, self.human_labels, strict=True
            )
        ]
        document = {
            "format": CALIBRATION_FORMAT,
            "version": CALIBRATION_VERSION,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "judge_model": self.judge_model,
            "rubric_fingerprint": self.rubric_fingerprint,
            "correction": _correction_summary(self),
            "summary": self.to_dict(),
            "pairs": pairs,
        }
        write_text_atomically(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _correction_summary(cal: Calibration) -> dict[str, Any]:
    """Sensitivity/specificity for corrections, overall and per qualifying category."""

    def pair(sub: Calibration) -> dict[str, Any]:
        return {
            "n": sub.parsed,
            "sensitivity": _rate_dict(sub.sensitivity),
            "specificity": _rate_dict(sub.specificity),
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


# ---------------------------------------------------------------- computing it


def _kappa(judge: list[Label], human: list[Label]) -> tuple[float | None, str | None]:
    if len(judge) < 2:
        return None, f"needs at least 2 parsed pairs, got {len(judge)}"
    try:
        return cohen_kappa(judge, human), None
    except UndefinedStatisticError as exc:
        return None, str(exc)


def _spearman(judge: list[Label], human: list[Label]) -> tuple[float | None, str | None]:
    if not all(_is_number(label) for label in (*judge, *human)):
        return None, "the labels are not numbers"
    if len(judge) < 2:
        return None, f"needs at least 2 parsed pairs, got {len(judge)}"
    try:
        return spearman(judge, human), None
    except UndefinedStatisticError as exc:
        return None, str(exc)


def _interval(
    compute: Any, judge: list[Label], human: list[Label], defined: bool
) -> tuple[tuple[float, float] | None, str | None]:
    """``(low, high)`` of an agreement interval, or None and why."""
    if not defined:
        return None, "the statistic itself is undefined"
    try:
        found = compute(judge, human)
    except StatisticsError as exc:
        return None, str(exc).split(": ", 1)[-1].removeprefix("the interval is undefined because ")
    return (found.low, found.high), None


def _warnings(cal: Calibration) -> list[str]:
    """What, in words, stands against trusting the judge's figure."""
    found: list[str] = []
    if not cal.parsed:
        return [
            f"the judge gave no parsed verdict on the {_count(cal.n, 'labelled case')}: "
            "nothing to calibrate"
        ]
    judged = {label for label in cal.judge_labels if label is not None}
    if cal.parsed and judged.isdisjoint(cal.human_labels):
        found.append(
            f"the judge and the human never use the same label ({sorted(map(str, judged))} vs "
            f"{sorted(map(str, set(cal.human_labels)))}): agreement means nothing here"
        )
    if cal.kappa is not None and cal.kappa < KAPPA_FLOOR:
        found.append(
            f"kappa {cal.kappa:.2f} is below {KAPPA_FLOOR}: the figure is the judge's opinion, "
            "not your criterion"
        )
    elif cal.kappa is not None and cal.kappa_interval and cal.kappa_interval[0] < KAPPA_FLOOR:
        low, high = cal.kappa_interval
        found.append(
            f"kappa {cal.kappa:.2f} [{low:.2f}, {high:.2f}] is not evidence of kappa >= "
            f"{KAPPA_FLOOR}: its interval reaches down to {low:.2f}, so these labels cannot "
            "yet tell the judge's opinion from your criterion; label more cases"
        )
    elif cal.kappa is None:
        found.append(
            f"kappa is undefined ({cal.kappa_undefined}): agreement cannot be told apart from "
            "chance, so the figure is the judge's opinion, not your criterion"
        )
    if cal.n < MIN_LABELS:
        found.append(
            f"only {_count(cal.n, 'labelled case')}: too few to trust; label at least {MIN_LABELS}"
        )
    if cal.kind == "pass/fail" and cal.parsed and not cal.human_failures:
        found.append(
            "you labelled no case FAIL: there is no failure-recall figure, and the dataset is "
            "too easy to tell a judge that catches failures from one that passes everything"
        )
    if (
        cal.agreement is not None
        and cal.majority_share is not None
        and cal.agreement.successes <= cal.majority_share.successes
        and len(set(cal.human_labels)) > 1
    ):
        found.append(
            f"agreement {cal.agreement} is no better than a judge that always says "
            f"{cal.majority_label} would reach ({cal.majority_share}): look at failure recall "
            "and kappa, not agreement"
        )
    if cal.unparsed > UNPARSED_TOLERANCE * cal.n:
        found.append(
            f"{cal.unparsed} of {_count(cal.n, 'judge reply', 'judge replies')} did not parse: "
            "they are left out of agreement, failure recall and kappa, and counted as "
            "disagreements in agreement_with_unparsed; fix the judge's answer format before "
            "trusting it"
        )
    return found


def _verdict(cal: Calibration) -> str:
    """One sentence that stands on its own (it is shown where the warnings are not).

    >>> _verdict(calibrate(["PASS", "FAIL"] * 9, ["PASS", "FAIL"] * 9))
    "do not rely on the judge's figure yet: only 18 labelled cases: too few to trust; label at \
least 50"
    """
    if not cal.warnings:
        recall = f"; it caught {cal.failure_recall} of your failures" if cal.failure_recall else ""
        interval = (
            f" [{cal.kappa_interval[0]:.2f}, {cal.kappa_interval[1]:.2f}]"
            if cal.kappa_interval
            else ""
        )
        return (
            f"the judge agrees with your labels beyond chance (kappa {cal.kappa:.2f}{interval} "
            f"on {_count(cal.parsed, 'case')}{recall}): its figure can stand for your criterion"
        )
    first, more = cal.warnings[0], len(cal.warnings) - 1
    if more:
        first += f" (and {_count(more, 'more problem')} listed in the calibration's warnings)"
    return f"{_DISTRUST}: {first}"


def _build(
    judge: list[Label | None],
    human: list[Label],
    categories: tuple[str, ...] | None,
    ids: tuple[Any, ...] | None,
    per_category: bool,
) -> Calibration:
    parsed_judge = [j for j in judge if j is not None]
    parsed_human = [h for j, h in zip(judge, human, strict=True) if j is not None]
    labels = _ordered([*parsed_judge, *human])
    binary = set(labels) <= {"PASS", "FAIL"}
    if binary:
        labels = ("PASS", "FAIL")
    parsed = len(parsed_judge)
    agreed = sum(j == h for j, h in zip(parsed_judge, parsed_human, strict=True))

    confusion: dict[Label, dict[Label | None, int]] = {
        h: {**{j: 0 for j in labels}, None: 0} for h in labels
    }
    for j, h in zip(judge, human, strict=True):
        confusion[h][j] += 1

    majority_label, majority_share = None, None
    if parsed:
        counts = Counter(parsed_human)
        top = max(counts.values())
        majority_label = next(label for label in labels if counts.get(label) == top)
        majority_share = Rate.of(top, parsed)

    kappa, kappa_undefined = _kappa(parsed_judge, parsed_human)
    rho, rho_undefined = _spearman(parsed_judge, parsed_human)
    kappa_low_high, kappa_interval_undefined = _interval(
        kappa_interval, parsed_judge, parsed_human, kappa is not None
    )
    rho_low_high, _ = _interval(spearman_interval, parsed_judge, parsed_human, rho is not None)

    binary_figures: dict[str, Any] = dict.fromkeys(
        (
            "human_failures",
            "judge_caught",
            "failure_recall",
            "human_passes",
            "false_alarms",
            "false_alarm_rate",
            "sensitivity",
        )
    )
    if binary:
        fails = confusion["FAIL"]
        passes = confusion["PASS"]
        human_failures = fails["PASS"] + fails["FAIL"]
        human_passes = passes["PASS"] + passes["FAIL"]
        binary_figures = {
            "human_failures": human_failures,
            "judge_caught": fails["FAIL"],
            "failure_recall": _rate(fails["FAIL"], human_failures),
            "human_passes": human_passes,
            "false_alarms": passes["FAIL"],
            "false_alarm_rate": _rate(passes["FAIL"], human_passes),
            "sensitivity": _rate(passes["PASS"], human_passes),
        }

    subs: dict[str, Calibration] = {}
    if per_category and categories is not None:
        groups: dict[str, list[int]] = {}
        for index, category in enumerate(categories):
            groups.setdefault(category, []).append(index)
        for name, indexes in groups.items():
            subs[name] = _build(
                [judge[i] for i in indexes],
                [human[i] for i in indexes],
                None,
                None if ids is None else tuple(ids[i] for i in indexes),
                per_category=False,
            )

    draft = Calibration(
        kind="pass/fail" if binary else "multiclass",
        labels=labels,
        n=len(judge),
        parsed=parsed,
        unparsed=len(judge) - parsed,
        agreement=_rate(agreed, parsed),
        agreement_with_unparsed=Rate.of(agreed, len(judge)),
        majority_label=majority_label,
        majority_share=majority_share,
        confusion=confusion,
        kappa=kappa,
        kappa_undefined=kappa_undefined,
        spearman=rho,
        spearman_undefined=rho_undefined,
        warnings=(),
        verdict="",
        per_category=subs,
        judge_labels=tuple(judge),
        human_labels=tuple(human),
        categories=categories,
        ids=ids,
        kappa_interval=kappa_low_high,
        kappa_interval_undefined=kappa_interval_undefined,
        spearman_interval=rho_low_high,
        **binary_figures,
    )
    return _with_words(draft)


def _with_words(cal: Calibration, extra: Sequence[str] = ()) -> Calibration:
    cal = replace(cal, warnings=(*extra, *_warnings(cal)))
    return replace(cal, verdict=_verdict(cal))


def calibrate(
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    categories: Sequence[str] | None = None,
    ids: Sequence[Any] | None = None,
) -> Calibration:
    """Compare the judge's labels with human labels of the same cases.

    ``judge`` and ``human`` are equal-length sequences of ``"PASS"``/``"FAIL"``
    (any case), booleans (True = PASS), numbers (grades) or other strings
    (``"A"``/``"B"``/``"TIE"``); ``None`` in ``judge`` is an unparsed reply.
    ``categories`` (one per pair) adds a calibration per category;
    ``ids`` names the pairs (for ``disagreements`` and ``save``).

    The always-PASS judge on a set where 9 of 10 cases pass agrees 90% of the
    time, catches none of the failures, and has kappa 0:

    >>> cal = calibrate(["PASS"] * 10, ["PASS"] * 9 + ["FAIL"])
    >>> str(cal.agreement), str(cal.failure_recall), cal.kappa
    ('9/10 = 90.0% [59.6%, 98.2%]', '0/1 = 0.0% [0.0%, 79.3%]', 0.0)
    >>> for warning in cal.warnings:
    ...     print(warning)  # doctest: +ELLIPSIS
    kappa 0.00 is below 0.6: the figure is the judge's opinion, not your criterion
    only 10 labelled cases: too few to trust; label at least 50
    agreement 9/10 = 90.0% [59.6%, 98.2%] is no better than a judge that always says PASS ...

    Raises ``CalibrationError`` when the sequences differ in length or are
    empty, a human label is missing, or a label is not a string, boolean or
    finite number.
    """
    judge_list, human_list = list(judge), list(human)
    if len(judge_list) != len(human_list):
        raise CalibrationError(
            "calibrate: judge and human must have the same length, "
            f"got {len(judge_list)} and {len(human_list)}"
        )
    if not judge_list:
        raise CalibrationError("calibrate: needs at least one labelled case, got none")
    for name, extra in (("categories", categories), ("ids", ids)):
        if extra is not None and len(extra) != len(judge_list):
            raise CalibrationError(
                f"calibrate: {name} must have one entry per pair ({len(judge_list)}), "
                f"got {len(extra)}"
            )
    judged = [_as_label(value, "judge", i) for i, value in enumerate(judge_list)]
    humans = [_as_label(value, "human", i) for i, value in enumerate(human_list)]
    return _build(
        judged,
        humans,  # type: ignore[arg-type]  # human labels are never None (checked above)
        tuple(str(c) for c in categories) if categories is not None else None,
        tuple(ids) if ids is not None else None,
        per_category=True,
    )


# ---------------------------------------------------------------- results and labels files


def calibrate_results(
    rows: Iterable[Mapping[str, Any]],
    labels: Mapping[Any, Mapping[str, Any]],
    *,
    judge: str | None = None,
    only: Iterable[Any] | None = None,
) -> Calibration:
    """Calibrate the judge in result rows against a labels mapping (``read_labels``), by id.

    ``judge`` picks a judge by name from the rows' ``judges`` (default: the
    row's first judge). The judge's label is its ``verdict``, or a
    pairwise judge's ``winner`` (A, B or TIE; None, an unparsed or
    order-inconsistent answer, counts as unparsed). ``only`` restricts both sides to those ids
    (the disagreement set). Ids on one side only are reported in
    ``unmatched_results`` and ``unmatched_labels``; labelled rows where the
    judge gave no verdict at all (it did not run, or its call errored) in
    ``without_verdict``. Labels made against another rubric fingerprint,
    judge model or output raise a loud ``CALIBRATION EXPIRED`` warning.

    >>> rows = [{"id": "a", "judges": {"j": {"verdict": "PASS", "rubric_fingerprint": "r2"}}},
    ...         {"id": "b", "judges": {"j": {"verdict": "FAIL", "rubric_fingerprint": "r2"}}}]
    >>> labels = {"a": {"label": "PASS", "rubric_fingerprint": "r1"}, "c": {"label": "FAIL"}}
    >>> cal = calibrate_results(rows, labels)
    >>> cal.n, cal.unmatched_results, cal.unmatched_labels
    (1, ('b',), ('c',))
    >>> print(cal.expired[0])  # doctest: +ELLIPSIS
    CALIBRATION EXPIRED: 1 of 1 label was compared against rubric r1 but these results use r2: ...

    The human labels must be of the judge's kind, or the comparison means
    nothing (a "maybe" is neither PASS nor FAIL). The rule, from the judge's
    verdicts in the compared rows: a pairwise judge (``winner``) takes A, B or
    TIE; a judge whose parsed verdicts are all numbers is graded and takes
    numbers; a judge whose parsed verdicts are PASS/FAIL (or that has none
    parsed) takes PASS or FAIL, in any case; a judge with other verdicts
    (choices of your own) takes any label.

    >>> calibrate_results(rows, {"a": {"label": "maybe"}})
    Traceback (most recent call last):
    ...
    tinyeval.humans.labelers.CalibrationError: calibrate: id 'a' has the human label 'maybe', but \
the judge gives PASS/FAIL verdicts: expected PASS or FAIL (other labels are for a graded or \
multiple-choice judge)

    Raises ``CalibrationError`` when a human label is not of the judge's kind
    (naming the id, and the labels file and line for records from
    ``read_labels``), when ``judge`` names no judge of the rows (listing
    those they have), or when no labelled row has a judge verdict to compare.
    """
    keep = set(only) if only is not None else None
    by_id: dict[Any, Mapping[str, Any]] = {}
    seen: set[Any] = set()
    names: set[str] = set()
    for number, row in enumerate(rows, start=1):
        key = row.get("id")
        if key in seen:
            raise CalibrationError(f"calibrate: result row {number} repeats the id {key!r}")
        seen.add(key)
        names.update(verdicts(row))
        if keep is None or key in keep:
            by_id[key] = row
    if judge and judge not in names:
        raise CalibrationError(_unknown_judge(judge, names))
    labels = {key: value for key, value in labels.items() if keep is None or key in keep}

    ids, judged, humans, categories = [], [], [], []
    pairwise = False
    without_verdict: list[Any] = []
    mismatches: dict[str, list[tuple[Any, Any]]] = {"rubric": [], "judge model": [], "output": []}
    rubrics, models = set(), set()
    for key in sorted(set(by_id) & set(labels), key=lambda k: (isinstance(k, str), k)):
        row, record = by_id[key], labels[key]
        verdict = primary_verdict(row, judge)
        if verdict is None or verdict_errored(verdict):
            without_verdict.append(key)
            continue
        rubric, model, _ = provenance(row, judge)
        rubrics.add(rubric)
        models.add(model)
        for what, old, new in (
            ("rubric", record.get("rubric_fingerprint"), rubric),
            ("judge model", record.get("judge_model"), model),
            ("output", record.get("output_fingerprint"), output_fingerprint(row.get("output"))),
        ):
            if old is not None and new is not None and old != new:
                mismatches[what].append((old, new))
        ids.append(key)
        pairwise = pairwise or "verdict" not in verdict
        judged.append(verdict_label(verdict))
        humans.append(record.get("label"))
        categories.append(str(row.get("category") or "default"))

    unmatched_results = tuple(k for k in by_id if k not in labels)
    unmatched_labels = tuple(k for k in labels if k not in by_id)
    if not ids:
        raise CalibrationError(
            "calibrate: no labelled result row has a judge verdict to compare "
            f"({_count(len(by_id), 'row')}, {_count(len(labels), 'label')}, "
            f"{_count(len(set(by_id) & set(labels)), 'id')} in common, "
            f"{len(without_verdict)} of them without a verdict)"
        )
    _check_human_kind(ids, judged, humans, labels, pairwise=pairwise)
    cal = calibrate(judged, humans, categories=categories, ids=ids)
    extra = _expiry(mismatches, len(ids))
    for what, values in (("rubrics", rubrics - {None}), ("judge models", models - {None})):
        if len(values) > 1:
            extra.append(f"these results mix {len(values)} {what}: calibrate each one separately")
    return _with_words(
        replace(
            cal,
            judge_model=next(iter(models)) if len(models) == 1 else None,
            rubric_fingerprint=next(iter(rubrics)) if len(rubrics) == 1 else None,
            expired=tuple(extra),
            unmatched_results=unmatched_results,
            unmatched_labels=unmatched_labels,
            without_verdict=tuple(without_verdict),
        ),
        extra,
    )


def disagreement_rows(
    calibration: Calibration,
    rows: Iterable[Mapping[str, Any]],
    labels: Mapping[Any, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Every compared case where judge and human differ: the row plus ``human``, its label record.

    Write them out and re-run ``calibrate --only`` on them after each rubric change.

    >>> rows = [{"id": "a", "judges": {"j": {"verdict": "PASS"}}},
    ...         {"id": "b", "judges": {"j": {"verdict": "FAIL"}}}]
    >>> labels = {"a": {"label": "FAIL"}, "b": {"label": "FAIL"}}
    >>> [(row["id"], row["human"]["label"]) for row in
    ...  disagreement_rows(calibrate_results(rows, labels), rows, labels)]
    [('a', 'FAIL')]
    """
    wanted = set(calibration.disagreements())
    return [
        {**row, "human": dict(labels[row["id"]])}
        for row in rows
        if row.get("id") in wanted and row.get("id") in labels
    ]


# ---------------------------------------------------------------- loading a saved calibration


def load_calibration(path: str | Path) -> Calibration:
    """Load a calibration written by ``Calibration.save`` (``calibrate … --save``).

    Every figure is recomputed from the saved pairs; the judge model and rubric
    fingerprint it was made with come back too, so a run can tell whether the
    calibration still applies to it.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "cal.json")
    ...     calibrate(["PASS", "FAIL"], ["PASS", "FAIL"], ids=["a", "b"]).save(path)
    ...     load_calibration(path).ids
    ('a', 'b')

    Raises ``CalibrationError`` naming the file when it is not a tinyeval
    calibration of a version this code reads; ``OSError`` when it cannot be read.
    """
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CalibrationError(
            f"{path}:{exc.lineno}: not valid JSON: {json_problem(exc)}"
        ) from None
    if not isinstance(document, dict) or document.get("format") != CALIBRATION_FORMAT:
        raise CalibrationError(
            f'{path}: expected a JSON object with "format": "{CALIBRATION_FORMAT}" '
            "(written by Calibration.save)"
        )
    if document.get("version") != CALIBRATION_VERSION:
        raise CalibrationError(
            f"{path}: calibration version {document.get('version')!r} is not supported "
            f"(expected {CALIBRATION_VERSION})"
        )
    pairs = document.get("pairs")
    if not isinstance(pairs, list) or not pairs or not all(isinstance(p, dict) for p in pairs):
        raise CalibrationError(f'{path}: expected "pairs" to be a non-empty list of objects')
    try:
        cal = calibrate(
            [pair.get("judge") for pair in pairs],
            [pair.get("human") for pair in pairs],
            categories=(
                [pair.get("category") for pair in pairs]
                if all(pair.get("category") is not None for pair in pairs)
                else None
            ),
            ids=[pair.get("id") for pair in pairs],
        )
    except CalibrationError as exc:
        raise CalibrationError(f"{path}: {exc}") from None
    return replace(
        cal,
        judge_model=document.get("judge_model"),
        rubric_fingerprint=document.get("rubric_fingerprint"),
    )


# ---------------------------------------------------------------- the corrected pass rate


def corrected_rate_for(
    calibration: Calibration,
    passes: int,
    n: int,
    *,
    category: str | None = None,
    judge_model: str | None = None,
    rubric_fingerprint: str | None = None,
    seed: int = 0,
    draws: int = BOOTSTRAP_DRAWS,
) -> CorrectedRate:
    """Correct ``passes`` of ``n`` with a calibration, as an
    :class:`~tinyeval.estimates.ppi.CorrectedRate`.

    Uses the category's own sensitivity and specificity when ``category`` is
    one of ``calibration.correctable_categories()``, otherwise the overall
    ones (``scope`` says which). Given the run's ``judge_model`` and
    ``rubric_fingerprint``, a calibration made with others is flagged in
    ``warnings``.

    >>> cal = calibrate(["PASS"] * 45 + ["FAIL"] * 5 + ["FAIL"] * 40 + ["PASS"] * 10,
    ...                 ["PASS"] * 50 + ["FAIL"] * 50)
    >>> result = corrected_rate_for(cal, 70, 100)
    >>> round(result.rate, 3), result.scope  # (0.70 + 0.80 - 1) / (0.90 + 0.80 - 1)
    (0.714, 'overall')

    Raises ``CalibrationError`` when the calibration is not PASS/FAIL or lacks
    human PASS or FAIL labels, and ``UndefinedStatisticError`` when its
    sensitivity + specificity ≤ 1.
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
    """Each category's primary-judge pass rate (parsed verdicts only) corrected for the
    calibrated judge's error; categories without a parsed verdict are left out.

    >>> cal = calibrate(["PASS"] * 45 + ["FAIL"] * 5 + ["FAIL"] * 40 + ["PASS"] * 10,
    ...                 ["PASS"] * 50 + ["FAIL"] * 50)
    >>> from tinyeval.records import CategoryTally
    >>> from tinyeval.judge import Judge
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
                calibration, tally.primary_passed, tally.primary_parsed, category=category,
                judge_model=judge_model, rubric_fingerprint=judge.rubric_fingerprint,
            )  # fmt: skip
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
