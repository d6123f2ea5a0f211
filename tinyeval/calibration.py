"""Judge against people (``calibrate``), and the labels file (``read_labels``)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from . import _extra, records, stats
from ._formats import _unreadable, read_text
from .checks import CheckSpecError, get_path
from .dataset import parse_field_mapping
from .errors import InputError, is_number, plural, shorten, utc_stamp
from .stats import Rate

KAPPA_FLOOR = 0.6  # below it the judge's figure is its own opinion (Landis and Koch)
MIN_LABELS = 50  # fewer labelled cases are too few to trust
CATEGORY_MIN_LABELS = 20  # a category's own figures need this many parsed labels, both classes
CALIBRATION_FORMAT = "tinyeval-calibration"
CALIBRATION_VERSION = 1
UNPARSED_TOLERANCE = 0.05  # more unparsed replies than this share is a warning of its own
DISTRUST = "do not rely on the judge's figure yet"
UNPARSED = "unparsed"
Label = str | int | float


class CalibrationError(InputError):
    """Input that cannot be calibrated."""


class LabelError(InputError):
    """A labels file that cannot be read, or a labelling session set up wrongly."""


def _rate(successes: int, n: int) -> Rate | None:
    return Rate.of(successes, n) if n else None


def _as_label(value: Any, side: str, index: int) -> Label | None:
    if value is None and side == "judge":
        return None
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    if isinstance(value, str):
        upper = value.strip().upper()
        return upper if upper in ("PASS", "FAIL") else value
    if isinstance(value, int | float) and math.isfinite(value):
        return value
    raise CalibrationError(
        f"calibrate: {side} label at position {index} must be 'PASS'/'FAIL', a boolean, "
        f"a finite number or another string{', or None (unparsed)' if side == 'judge' else ''}; "
        f"got {value!r}"
    )


def _ordered(labels: Iterable[Label]) -> tuple[Label, ...]:
    """PASS, FAIL, numbers in order, then other strings."""
    unique = set(labels)
    first = tuple(label for label in ("PASS", "FAIL") if label in unique)
    numbers = sorted(label for label in unique if is_number(label))
    words = sorted(str(label) for label in unique if isinstance(label, str) and label not in first)
    return (*first, *numbers, *words)


_NOT_IN_DICT = {"per_category", "judge_labels", "human_labels", "categories", "ids", "correctable"}


def _plain(value: Any) -> Any:
    if isinstance(value, Rate):
        return value.to_dict()
    return list(value) if isinstance(value, tuple) else value


def _span(interval: tuple[float, float] | None, digits: int) -> str:
    return f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]" if interval else ""


@dataclass(frozen=True)
class Calibration:
    """Judge against human on the same cases (``calibrate``)."""

    kind: str  # "pass/fail" or "multiclass"
    labels: tuple[Label, ...]
    n: int
    parsed: int
    unparsed: int
    agreement: Rate | None
    agreement_with_unparsed: Rate
    majority_label: Label | None
    majority_share: Rate | None
    confusion: dict[Label, dict[Label | None, int]]  # human → judge (None: unparsed) → count
    kappa: float | None
    kappa_undefined: str | None
    spearman: float | None
    spearman_undefined: str | None
    warnings: tuple[str, ...] = ()
    verdict: str = ""
    human_failures: int | None = None  # this and the six below: PASS/FAIL labels only
    judge_caught: int | None = None
    failure_recall: Rate | None = None
    human_passes: int | None = None
    false_alarms: int | None = None
    false_alarm_rate: Rate | None = None
    sensitivity: Rate | None = None
    specificity: Rate | None = None  # the failure recall, by its other name
    correctable: bool = False  # enough labels of both kinds for a correction's own figures
    trusted: bool = False  # no warnings
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

    def disagreements(self) -> list[Any]:
        """Ids (or positions) where the judge differs from the human, unparsed included.

        >>> calibrate(["PASS", None, "FAIL"], ["PASS", "PASS", "PASS"]).disagreements()
        [1, 2]
        """
        return [pair["id"] for pair in self._pairs() if pair["judge"] != pair["human"]]

    def _pairs(self) -> list[dict[str, Any]]:
        keys = self.ids if self.ids is not None else range(self.n)
        categories = self.categories or (None,) * self.n
        return [
            {"id": key, "category": category, "judge": judge, "human": human}
            for key, category, judge, human in zip(
                keys, categories, self.judge_labels, self.human_labels, strict=True
            )
        ]

    def correctable_categories(self) -> list[str]:
        """Categories a correction gives their own figures."""
        return [name for name, sub in sorted(self.per_category.items()) if sub.correctable]

    def to_dict(self, *, categories: bool = True) -> dict[str, Any]:
        """The ``calibrate --json`` object.

        >>> d = calibrate(["PASS", "FAIL"], ["PASS", "PASS"]).to_dict()
        >>> d["false_alarms"], d["confusion"]["PASS"]
        (1, {'PASS': 1, 'FAIL': 1, 'unparsed': 0})
        """
        result = {
            item.name: _plain(getattr(self, item.name))
            for item in fields(self)
            if item.name not in _NOT_IN_DICT
        }
        result.update(
            confusion={
                str(human): {str(judge or UNPARSED): count for judge, count in row.items()}
                for human, row in self.confusion.items()
            },
            disagreements=self.disagreements(),
        )
        if categories:
            result["per_category"] = {
                name: {**sub.to_dict(categories=False), "correctable": sub.correctable}
                for name, sub in sorted(self.per_category.items())
            }
        return result

    def to_text(self) -> str:
        """The text ``tinyeval calibrate`` prints.

        >>> calibrate(["PASS", "FAIL"], ["PASS", "FAIL"]).to_text().splitlines()[0]
        'judge vs human on 2 labelled cases'
        """
        lines = [f"judge vs human on {plural(self.n, 'labelled case')}"]
        if self.judge_model or self.rubric_fingerprint:
            rubric = shorten(self.rubric_fingerprint or "?", 20)
            lines[0] += f" (judge {self.judge_model or '?'}, rubric {rubric})"
        lines.append("")
        columns = [*(f"judge {label}" for label in self.labels), UNPARSED]
        first = max(len(f"human {label}") for label in self.labels)
        widths = [max(len(column), 5) for column in columns]
        for head, cells in [("", columns)] + [
            (f"human {human}", [self.confusion[human][judge] for judge in (*self.labels, None)])
            for human in self.labels
        ]:
            row = "".join(f"  {cell:>{width}}" for cell, width in zip(cells, widths, strict=True))
            lines.append(f"{head:<{first}}{row}")
        lines.append("")

        def figure(name: str, value: Any, note: str = "") -> None:
            lines.append(f"{name:<18} {value}{'   ' + note if note else ''}")

        none = "n/a (no parsed judge reply)"
        figure("agreement", self.agreement or none)
        if self.majority_share is not None:
            always = "(the agreement of a judge that always says so)"
            figure(f"always {self.majority_label}", self.majority_share, always)
        for name, rate, missing, note in (
            ("failure recall", self.failure_recall, "FAIL", "(your FAILs the judge also failed)"),
            ("false alarms", self.false_alarm_rate, "PASS", "(judge FAIL where you said PASS)"),
        ):
            if self.kind == "pass/fail":
                unlabelled = f"n/a (you labelled no case {missing})"
                figure(name, rate or (unlabelled if self.parsed else none), note)
        if self.kappa is None:
            figure("kappa", f"undefined ({self.kappa_undefined})")
        else:
            no_interval = f"(no interval: {self.kappa_interval_undefined})"
            note = "(95%, large-sample)" if self.kappa_interval else no_interval
            figure("kappa", f"{self.kappa:.3f}{_span(self.kappa_interval, 3)}", note)
        if self.spearman is not None:
            figure("spearman", f"{self.spearman:.3f}{_span(self.spearman_interval, 3)}")
        elif self.spearman_undefined != "the labels are not numbers":
            figure("spearman", f"undefined ({self.spearman_undefined})")
        replies = plural(self.n, "judge reply", "judge replies")
        counted = f"(agreement counting them as disagreement: {self.agreement_with_unparsed})"
        figure("unparsed", f"{self.unparsed} of {replies}", counted)
        if self.without_verdict:
            not_compared = "(the judge did not run or errored; not compared)"
            figure("no verdict", plural(len(self.without_verdict), "labelled row"), not_compared)
        if self.unmatched_results or self.unmatched_labels:
            figure(
                "unmatched",
                f"{plural(len(self.unmatched_results), 'result row')} without a label, "
                f"{plural(len(self.unmatched_labels), 'label')} without a result row",
            )
        if self.per_category and len(self.per_category) > 1:
            lines += ["", "per category (agreement; failure recall)"]
            for name, sub in sorted(self.per_category.items()):
                recall = f"; recall {sub.failure_recall}" if sub.failure_recall is not None else ""
                own = sub.correctable or self.kind != "pass/fail"
                mark = "" if own else "  (a correction uses the overall figures: see the rule)"
                lines.append(f"  {name}: {sub.agreement or 'n/a'}{recall}{mark}")
        lines.append("")
        if self.warnings:
            lines.append(f"verdict: {DISTRUST}:")
            lines.extend(f"  - {warning}" for warning in self.warnings)
        else:
            lines.append(f"verdict: {self.verdict}")
        return "\n".join(lines)

    def save(self, path: str | Path) -> None:
        """Write it with every pair, atomically, for ``load_calibration``."""
        document = {
            "format": CALIBRATION_FORMAT,
            "version": CALIBRATION_VERSION,
            "created_at": utc_stamp(),
            "judge_model": self.judge_model,
            "rubric_fingerprint": self.rubric_fingerprint,
            "correction": _extra("estimator", "correction_summary", "Calibration.save")(self),
            "summary": self.to_dict(),
            "pairs": self._pairs(),
        }
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        records.write_text_atomically(path, text)


def _statistic(compute: Any, interval: Any, judge: list[Label], human: list[Label]) -> Any:
    """``(value, why undefined, (low, high), why no interval)``."""
    undefined = "the statistic itself is undefined"
    if len(judge) < 2:
        return None, f"needs at least 2 parsed pairs, got {len(judge)}", None, undefined
    try:
        value = compute(judge, human)
    except stats.UndefinedStatisticError as exc:
        return None, str(exc), None, undefined
    try:
        found = interval(judge, human)
    except stats.StatisticsError as exc:
        why = str(exc).split(": ", 1)[-1].removeprefix("the interval is undefined because ")
        return value, None, None, why
    return value, None, (found.low, found.high), None


_CATCHING = "a judge that catches failures from one that does not"
_ONE_LABEL = (  # the side that gave one label, who, the other side, what kappa cannot tell
    (0, "the judge gave one verdict only", "your labels", "your passes from your failures"),
    (1, "you gave one label only", "the judge's verdicts", _CATCHING),
)


def _one_label(judge: Sequence[Label | None], human: Sequence[Label]) -> str | None:
    """Why kappa is 0 when one side gave one label only."""
    pairs = [(j, h) for j, h in zip(judge, human, strict=True) if j is not None]
    for side, who, other, meaning in _ONE_LABEL:
        if len({pair[side] for pair in pairs}) == 1:
            cases = f"{shorten(str(pairs[0][side]), 20)} on all {plural(len(pairs), 'parsed case')}"
            return f"{who} ({cases}), so kappa is 0 whatever {other} say: it cannot tell {meaning}"
    return None


def _warnings(cal: Calibration) -> list[str]:
    found: list[str] = []
    if not cal.parsed:
        return [
            f"the judge gave no parsed verdict on the {plural(cal.n, 'labelled case')}: "
            "nothing to calibrate"
        ]
    judged = {label for label in cal.judge_labels if label is not None}
    if cal.parsed and judged.isdisjoint(cal.human_labels):
        found.append(
            f"the judge and the human never use the same label ({sorted(map(str, judged))} vs "
            f"{sorted(map(str, set(cal.human_labels)))}): agreement means nothing here"
        )
    if cal.kappa is not None and cal.kappa < KAPPA_FLOOR:
        one_label = _one_label(cal.judge_labels, cal.human_labels)
        one = f" ({one_label})" if one_label else ""
        found.append(
            f"kappa {cal.kappa:.2f} is below {KAPPA_FLOOR}: the figure is the judge's opinion, "
            f"not your criterion{one}"
        )
    elif cal.kappa is not None and cal.kappa_interval and cal.kappa_interval[0] < KAPPA_FLOOR:
        found.append(
            f"kappa {cal.kappa:.2f}{_span(cal.kappa_interval, 2)} is not evidence of kappa >= "
            f"{KAPPA_FLOOR}: its interval reaches down to {cal.kappa_interval[0]:.2f}, so these "
            "labels cannot yet tell the judge's opinion from your criterion; label more cases"
        )
    elif cal.kappa is None:
        found.append(
            f"kappa is undefined ({cal.kappa_undefined}): agreement cannot be told apart from "
            "chance, so the figure is the judge's opinion, not your criterion"
        )
    if cal.n < MIN_LABELS:
        found.append(
            f"only {plural(cal.n, 'labelled case')}: too few to trust; label at least {MIN_LABELS}"
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
            f"{cal.unparsed} of {plural(cal.n, 'judge reply', 'judge replies')} did not parse: "
            "they are left out of agreement, failure recall and kappa, and counted as "
            "disagreements in agreement_with_unparsed; fix the judge's answer format before "
            "trusting it"
        )
    return found


def _verdict(cal: Calibration, warnings: Sequence[str]) -> str:
    if not warnings:
        recall = f"; it caught {cal.failure_recall} of your failures" if cal.failure_recall else ""
        return (
            "the judge agrees with your labels beyond chance "
            f"(kappa {cal.kappa:.2f}{_span(cal.kappa_interval, 2)} "
            f"on {plural(cal.parsed, 'case')}{recall}): its figure can stand for your criterion"
        )
    first, more = warnings[0], len(warnings) - 1
    if more:
        first += f" (and {plural(more, 'more problem')} listed in the calibration's warnings)"
    return f"{DISTRUST}: {first}"


def _judged(cal: Calibration, **context: Any) -> Calibration:
    """``cal`` with ``context``'s fields set, then its warnings (``expired`` first) and verdict."""
    draft = replace(cal, **context)
    warnings = (*draft.expired, *_warnings(draft))
    verdict = _verdict(draft, warnings)
    return replace(draft, warnings=warnings, verdict=verdict, trusted=not warnings)


def calibrate(
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    categories: Sequence[str] | None = None,
    ids: Sequence[Any] | None = None,
) -> Calibration:
    """Compare judge labels (None: unparsed) with human ones.

    >>> cal = calibrate(["PASS"] * 10, ["PASS"] * 9 + ["FAIL"])
    >>> str(cal.agreement), str(cal.failure_recall), cal.kappa
    ('9/10 = 90.0% [59.6%, 98.2%]', '0/1 = 0.0% [0.0%, 79.3%]', 0.0)
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
    humans: list[Label] = [_as_label(value, "human", i) for i, value in enumerate(human_list)]  # type: ignore[misc]  # a human None is refused
    grouped = None if categories is None else tuple(str(c) for c in categories)
    keys = None if ids is None else tuple(ids)
    parsed_judge = [j for j in judged if j is not None]
    parsed_human = [h for j, h in zip(judged, humans, strict=True) if j is not None]
    labels = _ordered([*parsed_judge, *humans])
    binary = set(labels) <= {"PASS", "FAIL"}
    labels = ("PASS", "FAIL") if binary else labels
    parsed = len(parsed_judge)
    cells = Counter(zip(humans, judged, strict=True))
    confusion = {h: {j: cells[h, j] for j in (*labels, None)} for h in labels}
    agreed = sum(cells[label, label] for label in labels)
    counts = Counter(parsed_human)
    top = max(counts.values(), default=0)
    majority_label = next((label for label in labels if counts.get(label) == top), None)
    kappa, kappa_undefined, kappa_low_high, kappa_interval_undefined = _statistic(
        stats.cohen_kappa, stats.kappa_interval, parsed_judge, parsed_human
    )
    rho, rho_undefined, rho_low_high = None, "the labels are not numbers", None
    if all(is_number(label) for label in (*parsed_judge, *parsed_human)):
        rho, rho_undefined, rho_low_high, _ = _statistic(
            stats.spearman, stats.spearman_interval, parsed_judge, parsed_human
        )
    if kappa is not None:
        kappa_interval_undefined = _one_label(judged, humans) or kappa_interval_undefined
    binary_figures: dict[str, Any] = {}
    if binary:
        fails, passes = confusion["FAIL"], confusion["PASS"]
        failures, passing = fails["PASS"] + fails["FAIL"], passes["PASS"] + passes["FAIL"]
        recall = _rate(fails["FAIL"], failures)
        binary_figures = {
            "human_failures": failures,
            "judge_caught": fails["FAIL"],
            "failure_recall": recall,
            "human_passes": passing,
            "false_alarms": passes["FAIL"],
            "false_alarm_rate": _rate(passes["FAIL"], passing),
            "sensitivity": _rate(passes["PASS"], passing),
            "specificity": recall,
            "correctable": bool(parsed >= CATEGORY_MIN_LABELS and failures and passing),
        }
    subs: dict[str, Calibration] = {}
    for name in dict.fromkeys(grouped or ()):
        keep = [i for i, category in enumerate(grouped or ()) if category == name]
        subs[name] = calibrate(
            [judged[i] for i in keep],
            [humans[i] for i in keep],
            ids=None if keys is None else [keys[i] for i in keep],
        )
    draft = Calibration(
        kind="pass/fail" if binary else "multiclass",
        labels=labels,
        n=len(judged),
        parsed=parsed,
        unparsed=len(judged) - parsed,
        agreement=_rate(agreed, parsed),
        agreement_with_unparsed=Rate.of(agreed, len(judged)),
        majority_label=majority_label if parsed else None,
        majority_share=_rate(top, parsed),
        confusion=confusion,
        kappa=kappa,
        kappa_undefined=kappa_undefined,
        spearman=rho,
        spearman_undefined=rho_undefined,
        per_category=subs,
        judge_labels=tuple(judged),
        human_labels=tuple(humans),
        categories=grouped,
        ids=keys,
        kappa_interval=kappa_low_high,
        kappa_interval_undefined=kappa_interval_undefined,
        spearman_interval=rho_low_high,
        **binary_figures,
    )
    return _judged(draft)


def _check_human_kind(
    cal: Calibration, labels: Mapping[Any, Mapping[str, Any]], *, pairwise: bool
) -> None:
    """Refuse a human label the judge could never give."""
    parsed = [label for label in cal.judge_labels if label is not None]
    allowed: tuple[str, ...] | None
    if pairwise:
        kind, allowed, expected = "is pairwise", ("A", "B", "TIE"), "A, B or TIE"
    elif parsed and all(is_number(label) for label in parsed):
        kind, allowed, expected = "gives grades (numbers)", None, "a number"
    elif all(label in ("PASS", "FAIL") for label in parsed):
        kind, allowed = "gives PASS/FAIL verdicts", ("PASS", "FAIL")
        expected = "PASS or FAIL (other labels are for a graded or multiple-choice judge)"
    else:
        return  # choices of the user's own: any label may be one of them
    for key, human in zip(cal.ids or (), cal.human_labels, strict=True):
        if is_number(human) if allowed is None else human in allowed:
            continue
        record = labels[key]
        source, line = getattr(record, "source", None), getattr(record, "line", None)
        where = f" ({source}:{line})" if source and line else ""
        raise CalibrationError(
            f"calibrate: id {key!r}{where} has the human label {record.get('label')!r}, but "
            f"the judge {kind}: expected {expected}"
        )


def calibrate_results(
    rows: Iterable[Mapping[str, Any]],
    labels: Mapping[Any, Mapping[str, Any]],
    *,
    judge: str | None = None,
    only: Iterable[Any] | None = None,
) -> Calibration:
    """Calibrate result rows' judge against labels by id.

    >>> rows = [{"id": "a", "judges": {"j": {"verdict": "PASS", "rubric_fingerprint": "r2"}}},
    ...         {"id": "b", "judges": {"j": {"verdict": "FAIL", "rubric_fingerprint": "r2"}}}]
    >>> labels = {"a": {"label": "PASS", "rubric_fingerprint": "r1"}, "c": {"label": "FAIL"}}
    >>> cal = calibrate_results(rows, labels)
    >>> cal.n, cal.unmatched_results, cal.unmatched_labels, cal.expired[0][:20]
    (1, ('b',), ('c',), 'CALIBRATION EXPIRED:')
    """
    by_id: dict[Any, Mapping[str, Any]] = {}
    names: set[str] = set()
    for number, row in enumerate(rows, start=1):
        key = row.get("id")
        if key in by_id:
            raise CalibrationError(f"calibrate: result row {number} repeats the id {key!r}")
        by_id[key] = row
        names.update(records.verdicts(row))
    if judge and judge not in names:
        have = (
            f"the judges {', '.join(repr(n) for n in sorted(names))}"
            if names
            else "no named judges (leave the judge name out to calibrate each row's judge)"
        )
        raise CalibrationError(f"calibrate: unknown judge {judge!r}; the rows have {have}")
    keep = set(only) if only is not None else None
    by_id = {key: row for key, row in by_id.items() if keep is None or key in keep}
    labels = {key: value for key, value in labels.items() if keep is None or key in keep}

    ids, judged, humans, categories = [], [], [], []
    pairwise = False
    without_verdict: list[Any] = []
    mismatches: dict[str, list[tuple[Any, Any]]] = {"rubric": [], "judge model": [], "output": []}
    rubrics, models = set(), set()
    for key in sorted(set(by_id) & set(labels), key=lambda k: (isinstance(k, str), k)):
        row, record = by_id[key], labels[key]
        verdict = records.primary_verdict(row, judge)
        if verdict is None or records.verdict_errored(verdict):
            without_verdict.append(key)
            continue
        rubric, model, _ = records.provenance(row, judge)
        rubrics.add(rubric)
        models.add(model)
        output = records.output_fingerprint(row.get("output"))
        for what, old, new in (
            ("rubric", record.get("rubric_fingerprint"), rubric),
            ("judge model", record.get("judge_model"), model),
            ("output", record.get("output_fingerprint"), output),
        ):
            if old is not None and new is not None and old != new:
                mismatches[what].append((old, new))
        ids.append(key)
        pairwise = pairwise or "verdict" not in verdict
        graded = "score" in verdict and is_number(record.get("label"))  # a score, against numbers
        judged.append(verdict["score"] if graded else records.verdict_label(verdict))
        humans.append(record.get("label"))
        categories.append(str(row.get("category") or "default"))

    if not ids:
        raise CalibrationError(
            "calibrate: no labelled result row has a judge verdict to compare "
            f"({plural(len(by_id), 'row')}, {plural(len(labels), 'label')}, "
            f"{plural(len(set(by_id) & set(labels)), 'id')} in common, "
            f"{len(without_verdict)} of them without a verdict)"
        )
    cal = calibrate(judged, humans, categories=categories, ids=ids)
    _check_human_kind(cal, labels, pairwise=pairwise)
    expired: list[str] = []
    for what, pairs in ((what, pairs) for what, pairs in mismatches.items() if pairs):
        were = "was" if len(pairs) == 1 else "were"
        head = f"CALIBRATION EXPIRED: {len(pairs)} of {plural(len(ids), 'label')} {were}"
        then, now = (", ".join(sorted({shorten(str(p[i]), 20) for p in pairs})) for i in (0, 1))
        expired.append(
            f"{head} given to a different output than these results hold: the human label "
            "may not apply; re-label them"
            if what == "output"
            else f"{head} compared against {what} {then} but these results use "
            f"{now}: re-label or judge with the labelled {what}"
        )
    for what, values in (("rubrics", rubrics - {None}), ("judge models", models - {None})):
        if len(values) > 1:
            expired.append(f"these results mix {len(values)} {what}: calibrate each one separately")
    return _judged(
        cal,
        judge_model=next(iter(models)) if len(models) == 1 else None,
        rubric_fingerprint=next(iter(rubrics)) if len(rubrics) == 1 else None,
        expired=tuple(expired),
        unmatched_results=tuple(key for key in by_id if key not in labels),
        unmatched_labels=tuple(key for key in labels if key not in by_id),
        without_verdict=tuple(without_verdict),
    )


def disagreement_rows(
    calibration: Calibration,
    rows: Iterable[Mapping[str, Any]],
    labels: Mapping[Any, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Each compared row where judge and human differ, with its label record as ``human``.

    >>> rows = [{"id": "a", "judges": {"j": {"verdict": "PASS"}}},
    ...         {"id": "b", "judges": {"j": {"verdict": "FAIL"}}}]
    >>> labels = {"a": {"label": "FAIL"}, "b": {"label": "FAIL"}}
    >>> [row["id"] for row in disagreement_rows(calibrate_results(rows, labels), rows, labels)]
    ['a']
    """
    wanted = set(calibration.disagreements())
    return [
        {**row, "human": dict(labels[row["id"]])}
        for row in rows
        if row.get("id") in wanted and row.get("id") in labels
    ]


def load_calibration(path: str | Path) -> Calibration:
    """Load a file ``Calibration.save`` wrote, every figure recomputed from its pairs."""
    text = read_text(path, what="the calibration", error=CalibrationError)
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:  # its syntax, too deep, an integer too long
        line = getattr(exc, "lineno", None)
        raise CalibrationError(_unreadable(exc), path=str(path), line=line) from None
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
    column = {
        key: [pair.get(key) for pair in pairs] for key in ("judge", "human", "category", "id")
    }
    categories = None if None in column["category"] else column["category"]
    try:
        return _judged(
            calibrate(column["judge"], column["human"], categories=categories, ids=column["id"]),
            judge_model=document.get("judge_model"),
            rubric_fingerprint=document.get("rubric_fingerprint"),
        )
    except CalibrationError as exc:
        raise CalibrationError(f"{path}: {exc}") from None


class LabelRecord(dict[str, Any]):
    """A label record (a dict) that knows its ``source`` file and ``line``.

    >>> record = LabelRecord({"id": "a", "label": "PASS"}, source="labels.jsonl", line=3)
    >>> record["label"], f"{record.source}:{record.line}"
    ('PASS', 'labels.jsonl:3')
    """

    def __init__(
        self, record: Mapping[str, Any], *, source: str | None = None, line: int | None = None
    ) -> None:
        super().__init__(record)
        self.source = source
        self.line = line


def _id_of(record: Mapping[str, Any], where: str) -> str | int:
    value = record.get("id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise LabelError(f"{where}: field 'id' must be a string or an integer, got {value!r}")
    return value


def _check_label(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float) or value != value:
        raise LabelError(
            f'{where}: field \'label\' must be "PASS", "FAIL", another string or a number, '
            f"got {value!r}"
        )


def parse_label_fields(items: Iterable[str]) -> dict[str, str]:
    """Parse ``KEY=PATH`` items (keys id, label, labeler, at) into a labels field mapping.

    >>> parse_label_fields(["label=annotations.human", "id=trace.span_id"])
    {'label': 'annotations.human', 'id': 'trace.span_id'}
    """
    try:
        return parse_field_mapping(items, ("id", "label", "labeler", "at"), ())
    except InputError as exc:
        raise LabelError(exc.reason, field="field") from None


def _mapped(record: dict[str, Any], fields: Mapping[str, str], where: str) -> dict[str, Any]:
    """``record`` with each mapped key read at its path (kept when the path is absent)."""
    if not fields:
        return record
    out = dict(record)
    for key, path in fields.items():
        try:
            out[key] = get_path(record, path)
        except LookupError:
            continue
        except CheckSpecError as exc:
            raise LabelError(f"{where}: {key}={path}: {exc.reason}") from None
    return out


def replay_labels(
    path: str | Path, fields: Mapping[str, str] | None
) -> tuple[dict[str | int, list[LabelRecord]], list[LabelRecord]]:
    """Each id's standing records in order (``"undo": true`` withdraws one), and rechecks."""
    stacks: dict[str | int, list[LabelRecord]] = {}
    rechecks: list[LabelRecord] = []
    for number, raw in records.iter_json_lines(path, error=LabelError):
        where = f"{path}:{number}"
        record = _mapped(raw, fields or {}, where)
        key = _id_of(record, where)
        recheck = record.get("recheck") is True
        if record.get("undo") is True:
            pile = rechecks if recheck else stacks.get(key, [])
            found = [i for i, r in enumerate(pile) if r["id"] == key]
            if not found:
                raise LabelError(
                    f"{where}: undo of a recheck of id {key!r}, which has none"
                    if recheck
                    else f"{where}: undo for id {key!r}, which has no label standing"
                )
            del pile[found[-1]]
            continue
        if "label" not in record:
            raise LabelError(f"{where}: expected a field 'label' (or \"undo\": true)")
        _check_label(record["label"], where)
        kept = LabelRecord(record, source=str(path), line=number)
        (rechecks if recheck else stacks.setdefault(key, [])).append(kept)
    return stacks, rechecks


def read_labels(
    path: str | Path, *, fields: Mapping[str, str] | None = None
) -> dict[str | int, LabelRecord]:
    """Read a labels file into ``{id: LabelRecord}``: the last label standing wins.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "labels.jsonl")
    >>> _ = path.write_text('{"id": "a", "label": "PASS"}\\n{"id": "a", "label": "FAIL"}\\n')
    >>> read_labels(path)["a"]["label"]
    'FAIL'
    """
    stacks, _ = replay_labels(path, fields)
    return {key: stack[-1] for key, stack in stacks.items() if stack}
