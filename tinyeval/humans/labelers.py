"""People against people, and a few labels against many verdicts.

What the calibration of a judge needs from a labels file beyond one label per
case:

==========================  ===================================================
``human_agreement``         Cohen's kappa of every pair of labelers (with n and
                            an interval) and Krippendorff's alpha over all: the
                            ceiling a judge can be held to
``reference_labels``        the one human label per case the judge is compared
                            with (the rule is ``REFERENCE_RULE``)
``self_agreement``          each labeler against their own re-shown cases (drift)
``ppi_rates``               prediction-powered pass rates per category and overall
==========================  ===================================================

**Which human label the judge is compared with.** The adjudicated label when
there is one; otherwise the label of the only labeler of the case; otherwise
the label most labelers gave; a case whose labelers split evenly (a tie) has no
reference label and is left out, counted in ``ReferenceLabels.ties``. This is
the rule that does not let a judge pick the labeler it agrees with.

**Prediction-powered pass rates.** :func:`ppi_rates` joins the judge's
verdicts on every judged case with the human labels on the labelled ones
(see :func:`tinyeval.estimates.ppi.ppi_pass_rate`). The judge's prediction is 1 for
a PASS verdict and 0 otherwise (FAIL, unparsed or errored): PPI is valid for
any prediction, so counting an unparsed reply as FAIL costs precision, never
validity. The labelled cases must be a random sample of the judged cases;
labels that record a non-uniform ``selection`` (``label --strategy uncertain``)
are reweighted by their probabilities.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .. import _extra
from ..calibration import (
    CalibrationError,
    LabelRecord,
    calibrate_results,
    replay_labels,
)
from ..errors import is_number, plural
from ..records import primary_verdict, verdict_label, verdicts
from ..stats import (
    Rate,
    StatisticsError,
    UndefinedStatisticError,
    cohen_kappa,
    kappa_interval,
)
from .agreement import krippendorff_alpha

__all__ = [
    "REFERENCE_RULE",
    "CalibrationReport",
    "CategoryPPI",
    "HumanAgreement",
    "LabelSet",
    "PPIRates",
    "PairAgreement",
    "ReferenceLabels",
    "SelfAgreement",
    "calibration_report",
    "human_agreement",
    "jurors_against_labels",
    "labeler_of",
    "ppi_rates",
    "read_label_set",
    "read_labels_by_labeler",
    "reference_labels",
    "self_agreement",
]

REFERENCE_RULE = (
    "the adjudicated label if there is one, else the only labeler's, else the majority's; "
    "cases whose labelers split evenly are left out"
)
GLOBAL = "global"

_K = TypeVar("_K")  # a key of the weights: a case id, a stratum


def _norm(label: Any) -> Any:
    """A human label as compared: any-case pass/fail as PASS/FAIL, booleans too."""
    if isinstance(label, bool):
        return "PASS" if label else "FAIL"
    if isinstance(label, str):
        upper = label.strip().upper()
        return upper if upper in ("PASS", "FAIL") else label
    return label


# ---------------------------------------------------------------- a labels file, labeler by labeler


@dataclass(frozen=True)
class LabelSet:
    """A labels file read labeler by labeler (build it with :func:`read_label_set`).

    ``by_labeler`` holds each labeler's standing label per id (records
    without a ``labeler`` come under ``"unknown"``); ``adjudicated`` the
    adjudicated label per id; ``rechecks`` the recheck records;
    ``latest`` what :func:`read_labels` returns; ``replaced`` the ids where
    a labeler's later label replaced an earlier one of theirs (once per
    replaced label).

    >>> s = LabelSet({}, {"ana": {"a": LabelRecord({"id": "a", "label": "PASS"})}}, {}, (), ("a",))
    >>> s.labelers, s.to_dict()["replaced"]
    (('ana',), 1)
    """

    latest: dict[str | int, LabelRecord]
    by_labeler: dict[str, dict[str | int, LabelRecord]]
    adjudicated: dict[str | int, LabelRecord]
    rechecks: tuple[LabelRecord, ...]
    replaced: tuple[str | int, ...]

    @property
    def labelers(self) -> tuple[str, ...]:
        """The labelers, in the order of their first standing label."""
        return tuple(self.by_labeler)

    def disagreements(self) -> list[str | int]:
        """Ids that two or more labelers labelled differently, in file order.

        >>> ana = {"a": LabelRecord({"id": "a", "label": "PASS"})}
        >>> ben = {"a": LabelRecord({"id": "a", "label": "FAIL"})}
        >>> LabelSet({}, {"ana": ana, "ben": ben}, {}, (), ()).disagreements()
        ['a']
        """
        seen: dict[str | int, set[str]] = {}
        for labels in self.by_labeler.values():
            for key, record in labels.items():
                seen.setdefault(key, set()).add(str(record["label"]).upper())
        return [key for key, given in seen.items() if len(given) > 1]

    def to_dict(self) -> dict[str, Any]:
        """Counts: labels per labeler, adjudicated, rechecks, replaced."""
        return {
            "labelers": {name: len(labels) for name, labels in self.by_labeler.items()},
            "adjudicated": len(self.adjudicated),
            "rechecks": len(self.rechecks),
            "replaced": len(self.replaced),
            "replaced_ids": list(dict.fromkeys(self.replaced)),
        }


def labeler_of(record: Mapping[str, Any]) -> str:
    """The record's labeler as a name; ``"unknown"`` when it has none.

    >>> labeler_of({"labeler": "ana"}), labeler_of({})
    ('ana', 'unknown')
    """
    name = record.get("labeler")
    return str(name) if name not in (None, "") else "unknown"


def read_label_set(path: str | Path, *, fields: Mapping[str, str] | None = None) -> LabelSet:
    """Read a labels file keeping every labeler's standing label per id.

    >>> import tempfile, os
    >>> lines = ['{"id": "a", "label": "PASS", "labeler": "ana"}',
    ...          '{"id": "a", "label": "FAIL", "labeler": "ben"}',
    ...          '{"id": "a", "label": "FAIL", "labeler": "ana"}',
    ...          '{"id": "a", "label": "FAIL", "labeler": "cy", "adjudicated": true}']
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "labels.jsonl")
    ...     _ = open(path, "w").write("\\n".join(lines) + "\\n")
    ...     found = read_label_set(path)
    >>> {name: labels["a"]["label"] for name, labels in found.by_labeler.items()}
    {'ana': 'FAIL', 'ben': 'FAIL'}
    >>> found.replaced, list(found.adjudicated)
    (('a',), ['a'])

    Raises what :func:`read_labels` raises.
    """
    stacks, rechecks = replay_labels(path, fields)
    by_labeler: dict[str, dict[str | int, LabelRecord]] = {}
    adjudicated: dict[str | int, LabelRecord] = {}
    replaced: list[str | int] = []
    for key, stack in stacks.items():
        for record in stack:
            if record.get("adjudicated") is True:
                adjudicated[key] = record
                continue
            mine = by_labeler.setdefault(labeler_of(record), {})
            if key in mine:
                replaced.append(key)
            mine[key] = record
    latest = {key: stack[-1] for key, stack in stacks.items() if stack}
    return LabelSet(latest, by_labeler, adjudicated, tuple(rechecks), tuple(replaced))


def read_labels_by_labeler(
    path: str | Path, *, fields: Mapping[str, str] | None = None
) -> dict[str, dict[str | int, LabelRecord]]:
    """``{labeler: {id: record}}``: each labeler's standing label per id (no adjudications).

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "labels.jsonl")
    ...     _ = open(path, "w").write('{"id": "a", "label": "PASS", "labeler": "ana"}\\n')
    ...     read_labels_by_labeler(path)["ana"]["a"]["label"]
    'PASS'
    """
    return read_label_set(path, fields=fields).by_labeler


# ---------------------------------------------------------------- people against people


@dataclass(frozen=True)
class PairAgreement:
    """Cohen's kappa of two labelers on the ``n`` cases both labelled, with its interval.

    >>> print(PairAgreement("ana", "ben", 40, 0.65, (0.41, 0.84), None))
    ana vs ben: kappa 0.65 [0.41, 0.84] on 40 cases
    """

    labeler_a: str
    labeler_b: str
    n: int
    kappa: float | None
    interval: tuple[float, float] | None
    undefined: str | None  # why kappa, or its interval, is not given

    def to_dict(self) -> dict[str, Any]:
        """``{"labeler_a", "labeler_b", "n", "kappa", "low", "high", "undefined"}``."""
        low, high = self.interval if self.interval else (None, None)
        return {
            "labeler_a": self.labeler_a,
            "labeler_b": self.labeler_b,
            "n": self.n,
            "kappa": self.kappa,
            "low": low,
            "high": high,
            "undefined": self.undefined,
        }

    def __str__(self) -> str:
        head = f"{self.labeler_a} vs {self.labeler_b}: kappa "
        cases = plural(self.n, "case")
        if self.kappa is None:
            return f"{head}undefined on {cases} ({self.undefined})"
        if self.interval is None:
            return f"{head}{self.kappa:.2f} on {cases} (no interval: {self.undefined})"
        low, high = self.interval
        return f"{head}{self.kappa:.2f} [{low:.2f}, {high:.2f}] on {cases}"


@dataclass(frozen=True)
class HumanAgreement:
    """How far the labelers agree with each other (build it with :func:`human_agreement`).

    ``alpha`` is Krippendorff's alpha over every case with two or more labels
    (nominal for labels, ordinal for numeric grades), ``alpha_cases`` how
    many such cases there are.

    >>> h = HumanAgreement(("ana", "ben"), (), 0.5, None, 10, "nominal")
    >>> h.to_dict()["alpha"], h.to_text()[0]
    (0.5, 'human vs human (2 labelers; the ceiling a judge can be held to):')
    """

    labelers: tuple[str, ...]
    pairs: tuple[PairAgreement, ...]
    alpha: float | None
    alpha_undefined: str | None
    alpha_cases: int
    level: str

    def to_dict(self) -> dict[str, Any]:
        """The labelers, each pair's figures, and alpha with its case count."""
        return {
            "labelers": list(self.labelers),
            "pairs": [pair.to_dict() for pair in self.pairs],
            "alpha": self.alpha,
            "alpha_undefined": self.alpha_undefined,
            "alpha_cases": self.alpha_cases,
            "level": self.level,
        }

    def to_text(self) -> list[str]:
        """The lines ``tinyeval calibrate`` prints."""
        lines = [
            f"human vs human ({len(self.labelers)} labelers; the ceiling a judge can be held to):"
        ]
        lines.extend(f"  {pair}" for pair in self.pairs)
        if self.alpha is None:
            lines.append(f"  Krippendorff's alpha undefined ({self.alpha_undefined})")
        else:
            lines.append(
                f"  Krippendorff's alpha ({self.level}) {self.alpha:.2f} over "
                f"{plural(self.alpha_cases, 'case')} with two or more labels"
            )
        return lines


def _pair(name_a: str, name_b: str, a: Mapping[Any, Any], b: Mapping[Any, Any]) -> PairAgreement:
    shared = [key for key in a if key in b]
    xs, ys = [_norm(a[k]["label"]) for k in shared], [_norm(b[k]["label"]) for k in shared]
    if len(shared) < 2:
        return PairAgreement(name_a, name_b, len(shared), None, None, "fewer than 2 shared cases")
    try:
        found = kappa_interval(xs, ys)
        return PairAgreement(
            name_a, name_b, len(shared), found.estimate, (found.low, found.high), None
        )
    except UndefinedStatisticError as exc:
        reason = str(exc).split(": ", 1)[-1]
    try:
        return PairAgreement(name_a, name_b, len(shared), cohen_kappa(xs, ys), None, reason)
    except StatisticsError as exc:
        return PairAgreement(name_a, name_b, len(shared), None, None, str(exc).split(": ", 1)[-1])


def human_agreement(label_set: LabelSet, *, ids: Iterable[Any] | None = None) -> HumanAgreement:
    """Agreement among the labelers of ``label_set`` (restricted to ``ids`` when given).

    Kappa's interval is the large-sample one of
    :func:`tinyeval.stats.kappa_interval` (95%); where it is undefined
    (two labelers agreeing on every shared case) kappa is shown without one.

    >>> from tinyeval.calibration import LabelRecord
    >>> def labels(*given):
    ...     return {i: LabelRecord({"id": i, "label": g}) for i, g in enumerate(given)}
    >>> found = human_agreement(LabelSet({}, {"ana": labels("PASS", "FAIL", "PASS", "FAIL"),
    ...                                       "ben": labels("PASS", "FAIL", "FAIL", "FAIL")},
    ...                                  {}, (), ()))
    >>> print(found.pairs[0])  # p_o = 3/4, p_e = 1/2 · 1/4 + 1/2 · 3/4 = 1/2; se = 0.375
    ana vs ben: kappa 0.50 [-0.23, 1.00] on 4 cases

    Raises ``CalibrationError`` when the labels come from fewer than 2 labelers.
    """
    keep = set(ids) if ids is not None else None
    by = {
        name: {k: r for k, r in labels.items() if keep is None or k in keep}
        for name, labels in label_set.by_labeler.items()
    }
    if len(by) < 2:
        raise CalibrationError(
            f"human_agreement: needs labels from at least 2 labelers, got {len(by)}"
        )
    pairs = tuple(_pair(a, b, by[a], by[b]) for a, b in itertools.combinations(by, 2))
    cases: dict[Any, list[Any]] = {}
    for labels in by.values():
        for key, record in labels.items():
            cases.setdefault(key, []).append(_norm(record["label"]))
    units = [given for given in cases.values() if len(given) >= 2]
    numeric = bool(units) and all(is_number(v) for given in units for v in given)
    level = "ordinal" if numeric else "nominal"
    alpha: float | None = None
    alpha_undefined: str | None = None
    if not units:
        alpha_undefined = "no case has labels from two labelers"
    else:
        try:
            alpha = krippendorff_alpha(units, level=level)
        except StatisticsError as exc:
            alpha_undefined = str(exc).split(": ", 1)[-1]
    return HumanAgreement(tuple(by), pairs, alpha, alpha_undefined, len(units), level)


@dataclass(frozen=True)
class ReferenceLabels(Mapping[Any, LabelRecord]):
    """The human label each case's judge verdict is compared with (see ``REFERENCE_RULE``).

    A mapping id → label record, plus how each label was settled.

    >>> r = ReferenceLabels({"a": LabelRecord({"id": "a", "label": "PASS"})}, 0, 1, 0, ("b",))
    >>> list(r), r.to_dict()["ties"]
    (['a'], ['b'])
    """

    records: dict[Any, LabelRecord]
    adjudicated: int
    single: int
    majority: int
    ties: tuple[Any, ...]

    def __getitem__(self, key: Any) -> LabelRecord:
        return self.records[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def to_dict(self) -> dict[str, Any]:
        """How many labels each part of the rule settled, and the tied ids left out."""
        return {
            "rule": REFERENCE_RULE,
            "adjudicated": self.adjudicated,
            "single": self.single,
            "majority": self.majority,
            "ties": list(self.ties),
        }

    def describe(self) -> str:
        """The rule's outcome in one line.

        >>> print(ReferenceLabels({}, 1, 2, 3, ("x",)).describe())
        judge compared with: 1 adjudicated label, 3 majority labels, 2 single labels; 1 tie left \
out
        """
        return (
            f"judge compared with: {plural(self.adjudicated, 'adjudicated label')}, "
            f"{plural(self.majority, 'majority label')}, {plural(self.single, 'single label')}; "
            f"{plural(len(self.ties), 'tie')} left out"
        )


def reference_labels(label_set: LabelSet) -> ReferenceLabels:
    """One human label per case by ``REFERENCE_RULE``; the record kept is one giving that label.

    >>> from tinyeval.calibration import LabelRecord
    >>> def one(label):
    ...     return LabelRecord({"id": "a", "label": label})
    >>> s = LabelSet({}, {"ana": {"a": one("PASS")}, "ben": {"a": one("fail")},
    ...                   "cy": {"a": one("FAIL")}}, {}, (), ())
    >>> found = reference_labels(s)
    >>> found["a"]["label"], found.majority
    ('fail', 1)
    """
    records: dict[Any, LabelRecord] = {}
    adjudicated = single = majority = 0
    ties: list[Any] = []
    keys = list(label_set.adjudicated)
    for labels in label_set.by_labeler.values():
        keys.extend(labels)
    for key in dict.fromkeys(keys):
        if key in label_set.adjudicated:
            records[key] = label_set.adjudicated[key]
            adjudicated += 1
            continue
        given = [labels[key] for labels in label_set.by_labeler.values() if key in labels]
        if len(given) == 1:
            records[key] = given[0]
            single += 1
            continue
        counts = Counter(_norm(record["label"]) for record in given)
        (top, most), *rest = counts.most_common()
        if rest and rest[0][1] == most:
            ties.append(key)
            continue
        records[key] = next(r for r in given if _norm(r["label"]) == top)
        majority += 1
    return ReferenceLabels(records, adjudicated, single, majority, tuple(ties))


@dataclass(frozen=True)
class SelfAgreement:
    """One labeler's re-shown cases against their standing labels: their own consistency.

    >>> print(SelfAgreement("ana", Rate.of(9, 10), None))
    ana against themself: 9/10 = 90.0% [59.6%, 98.2%] agree
    """

    labeler: str
    agreement: Rate
    kappa: float | None

    def to_dict(self) -> dict[str, Any]:
        """``{"labeler", "agreement", "kappa"}``."""
        return {
            "labeler": self.labeler,
            "agreement": self.agreement.to_dict(),
            "kappa": self.kappa,
        }

    def __str__(self) -> str:
        kappa = f" (kappa {self.kappa:.2f})" if self.kappa is not None else ""
        return f"{self.labeler} against themself: {self.agreement} agree{kappa}"


def self_agreement(label_set: LabelSet) -> tuple[SelfAgreement, ...]:
    """Each labeler's rechecks against their standing label of the same case.

    >>> from tinyeval.calibration import LabelRecord
    >>> ana = {k: LabelRecord({"id": k, "label": "PASS"}) for k in "ab"}
    >>> again = (LabelRecord({"id": "a", "label": "PASS", "labeler": "ana", "recheck": True}),
    ...          LabelRecord({"id": "b", "label": "FAIL", "labeler": "ana", "recheck": True}))
    >>> print(self_agreement(LabelSet({}, {"ana": ana}, {}, again, ()))[0].agreement)
    1/2 = 50.0% [9.5%, 90.5%]
    """
    pairs: dict[str, list[tuple[Any, Any]]] = {}
    for record in label_set.rechecks:
        name = labeler_of(record)
        mine = label_set.by_labeler.get(name, {})
        if record["id"] in mine:
            first = _norm(mine[record["id"]]["label"])
            pairs.setdefault(name, []).append((first, _norm(record["label"])))
    found = []
    for name, given in pairs.items():
        kappa: float | None = None
        if len(given) >= 2:
            try:
                kappa = cohen_kappa([a for a, _ in given], [b for _, b in given])
            except StatisticsError:
                kappa = None
        agreed = sum(a == b for a, b in given)
        found.append(SelfAgreement(name, Rate.of(agreed, len(given)), kappa))
    return tuple(found)


# ---------------------------------------------------------------- prediction-powered rates


@dataclass(frozen=True)
class CategoryPPI:
    """One category's (or ``"global"``) judge rate, labels-only rate and PPI rate.

    ``ppi`` is None when it cannot be computed, and ``reason`` says why.
    ``labels_rate`` is the labels' own Wilson rate (unweighted).

    >>> c = CategoryPPI("c", Rate.of(7, 10), None, None, "needs at least 2 human labels, got 0")
    >>> print(c)
    c: judge 7/10 = 70.0% [39.7%, 89.2%]; no labels; PPI: needs at least 2 human labels, got 0
    """

    category: str
    judge_rate: Rate
    labels_rate: Rate | None
    ppi: Any  # a tinyeval.estimates.ppi.PPIRate, or None
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        """``{"category", "judge_rate", "labels_rate", "ppi", "reason"}``."""
        return {
            "category": self.category,
            "judge_rate": self.judge_rate.to_dict(),
            "labels_rate": None if self.labels_rate is None else self.labels_rate.to_dict(),
            "ppi": None if self.ppi is None else self.ppi.to_dict(),
            "reason": self.reason,
        }

    def __str__(self) -> str:
        labels = f"labels {self.labels_rate}" if self.labels_rate else "no labels"
        if self.ppi is None:
            found = f"PPI: {self.reason}"
        else:
            p = self.ppi
            name = ("PPI++" if p.tuned else "PPI") + (" weighted" if p.weighted else "")
            found = (
                f"{name} {p.value:.1%} [{p.low:.1%}, {p.high:.1%}] "
                f"(worth {p.effective_labels:.0f} labels; λ = {p.lambda_:.2f})"
            )
        return f"{self.category}: judge {self.judge_rate}; {labels}; {found}"


@dataclass(frozen=True)
class PPIRates(Mapping[str, CategoryPPI]):
    """Prediction-powered pass rates per category and ``"global"`` (from :func:`ppi_rates`).

    A mapping category → :class:`CategoryPPI`; ``design`` says how the labels
    were drawn (``"uniform"``, ``"assumed uniform"`` or ``"weighted"``) and
    ``warnings`` what the estimate assumes.

    >>> r = PPIRates({}, "assumed uniform", ("the estimate assumes a random sample",), "j", 0.95)
    >>> len(r), r.to_dict()["warnings"]
    (0, ['the estimate assumes a random sample'])
    """

    rates: dict[str, CategoryPPI]
    design: str
    warnings: tuple[str, ...]
    judge: str | None
    confidence: float

    def __getitem__(self, key: str) -> CategoryPPI:
        return self.rates[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.rates)

    def __len__(self) -> int:
        return len(self.rates)

    def to_dict(self) -> dict[str, Any]:
        """``{"judge", "confidence", "design", "warnings", "rates": {category: …}}``."""
        return {
            "judge": self.judge,
            "confidence": self.confidence,
            "design": self.design,
            "warnings": list(self.warnings),
            "rates": {name: item.to_dict() for name, item in self.rates.items()},
        }

    def to_text(self) -> list[str]:
        """The lines ``tinyeval calibrate --estimate ppi`` prints."""
        lines = [
            f"prediction-powered pass rates ({self.confidence:.0%}; judge {self.judge or '?'}; "
            f"labels {self.design}):"
        ]
        lines.extend(f"  {item}" for item in self.rates.values())
        lines.extend(f"  warning: {warning}" for warning in self.warnings)
        return lines


def _human_pass(record: Mapping[str, Any], key: Any) -> bool:
    label = _norm(record.get("label"))
    if label not in ("PASS", "FAIL"):
        where = ""
        source, line = getattr(record, "source", None), getattr(record, "line", None)
        if source and line:
            where = f" ({source}:{line})"
        raise CalibrationError(
            f"ppi_rates: id {key!r}{where} has the human label {record.get('label')!r}: "
            "a prediction-powered pass rate needs PASS/FAIL labels"
        )
    return label == "PASS"


def ppi_rates(
    rows: Iterable[Mapping[str, Any]],
    labels: Mapping[Any, Mapping[str, Any]],
    *,
    judge: str | None = None,
    confidence: float = 0.95,
    tuned: bool = True,
) -> PPIRates:
    """Prediction-powered pass rates per category and ``"global"`` from rows and human labels.

    The population is every row with a verdict of ``judge`` (default: each
    row's first judge); the judge predicts PASS (1) for a PASS verdict and
    FAIL (0) for anything else. ``labels`` (``read_labels`` or
    ``reference_labels``) are matched by id; labels of ids without a judged
    row are left out (said in ``warnings``). The labels' ``selection``
    records decide the estimator: none at all, uniform PPI with a warning
    that the estimate assumes a random sample; a ``random`` selection,
    uniform PPI; unequal probabilities, the inverse-probability-weighted
    estimator. A category where PPI is undefined gets a ``reason`` instead.

    Ten judged cases (7 PASS); three labelled, the judge wrong on one: plain
    PPI is 5/7 + (0 + 0 − 1)/3 = 0.381 (see ``ppi_pass_rate``).

    >>> rows = [{"id": i, "judges": {"j": {"verdict": v}}}
    ...         for i, v in enumerate(["PASS", "FAIL", "PASS"] + ["PASS"] * 5 + ["FAIL"] * 2)]
    >>> labels = {0: {"label": "PASS"}, 1: {"label": "FAIL"}, 2: {"label": "FAIL"}}
    >>> found = ppi_rates(rows, labels, tuned=False)
    >>> round(found["global"].ppi.value, 3), found.design
    (0.381, 'assumed uniform')

    Raises ``CalibrationError`` when no row has a verdict of the judge, the
    judge's verdicts are not PASS/FAIL, a human label is not PASS/FAIL, or
    the labels say they were not drawn at random (a ``"chosen"`` other than
    ``"at random"``, such as ``"by hand"``), record a selection for some
    labels only, or mix selection designs.
    """
    func = "ppi_rates"
    population: list[tuple[Any, str, float]] = []
    names: set[str] = set()
    for row in rows:
        names.update(verdicts(row))
        verdict = primary_verdict(row, judge)
        if verdict is None:
            continue
        said = verdict_label(verdict)
        if "verdict" not in verdict or (said is not None and _norm(said) not in ("PASS", "FAIL")):
            raise CalibrationError(
                f"{func}: the judge's verdict on id {row.get('id')!r} is {said!r}: a "
                "prediction-powered pass rate needs a PASS/FAIL judge"
            )
        category = str(row.get("category") or "default")
        population.append((row.get("id"), category, 1.0 if _norm(said) == "PASS" else 0.0))
    if not population:
        if judge is not None and names:
            raise CalibrationError(f"{func}: no result row has a verdict of the judge {judge!r}")
        raise CalibrationError(f"{func}: no result row has a verdict of the judge")
    judged = {key for key, _, _ in population}
    labelled = {key: labels[key] for key in judged if key in labels}
    design_of = _extra("estimator", "label_design", "prediction-powered rates")
    try:
        design, probabilities, warnings = design_of(labelled, len(population))
    except CalibrationError as exc:
        raise CalibrationError(f"{func}: {exc}") from None
    if design != "weighted":
        probabilities = dict.fromkeys(labelled, 1.0)
    outside = [key for key in labels if key not in judged]
    if outside:
        warnings.append(f"{plural(len(outside), 'label')} without a judged row left out")
    humans = {key: _human_pass(record, key) for key, record in labelled.items()}
    groups: dict[str, list[tuple[Any, str, float]]] = {}
    for item in population:
        groups.setdefault(item[1], []).append(item)
    ppi_pass_rate = _extra("estimator", "ppi_pass_rate", "prediction-powered rates")
    rates: dict[str, CategoryPPI] = {}
    for name, members in [*sorted(groups.items()), (GLOBAL, population)]:
        f_l = [f == 1.0 for key, _, f in members if key in humans]
        y = [humans[key] for key, _, _ in members if key in humans]
        f_u = [f == 1.0 for key, _, f in members if key not in humans]
        judge_rate = Rate.of(int(sum(f for _, _, f in members)), len(members), confidence)
        labels_rate = Rate.of(sum(y), len(y), confidence) if y else None
        weights = [probabilities[key] for key, _, _ in members if key in humans]
        try:
            found = ppi_pass_rate(
                f_l,
                y,
                f_u,
                confidence=confidence,
                tuned=tuned,
                selection_probabilities=weights if design == "weighted" else None,
            )
            reason = None
        except StatisticsError as exc:
            found, reason = None, str(exc).removeprefix("ppi_pass_rate: ")
        rates[name] = CategoryPPI(name, judge_rate, labels_rate, found, reason)
    return PPIRates(rates, design, tuple(warnings), judge or _first_name(names), confidence)


def _first_name(names: set[str]) -> str | None:
    return next(iter(sorted(names)), None) if len(names) == 1 else None


# ---------------------------------------------------------------- text


def jurors_against_labels(
    rows: Iterable[Mapping[str, Any]],
    labels: Mapping[Any, Mapping[str, Any]],
    *,
    judge: str | None = None,
) -> Any:
    """Each juror of a jury (and the jury) against the human labels, or None without a jury.

    The rows are a jury's run (``tinyeval run`` with several ``--judge-model``):
    each verdict keeps its jurors'. The result is a
    :class:`tinyeval.judges.jury.JuryAgreement`: per juror failure recall and false
    alarms, the jury's, and how much the jurors' errors overlap.

    >>> rows = [{"id": "a", "judges": {"j": {"verdict": "PASS", "jurors": {
    ...     "x": {"verdict": "PASS"}, "y": {"verdict": "FAIL"}, "z": {"verdict": "PASS"}}}}}]
    >>> found = jurors_against_labels(rows, {"a": {"label": "PASS"}})
    >>> [j.juror for j in found.jurors]
    ['x', 'y', 'z']
    """
    from ..judges.jury import juror_agreement

    columns: dict[str, list[Any]] = {}
    human: list[Any] = []
    for row in rows:
        verdict = primary_verdict(row, judge)
        record = labels.get(row.get("id"))
        jurors = verdict.get("jurors") if verdict is not None else None
        if not isinstance(jurors, Mapping) or record is None:
            continue
        label = record.get("label")
        human.append(label.upper() if isinstance(label, str) else label)
        for name, juror in jurors.items():
            columns.setdefault(str(name), []).append(juror.get("verdict"))
    if not columns or len(set(map(len, columns.values()))) != 1:
        return None
    return juror_agreement(columns, human)


@dataclass(frozen=True)
class CalibrationReport:
    """A judge calibrated against a labels file, with everything the labels say beside it.

    ``calibration`` is the judge against the reference labels; ``humans`` the
    labelers against each other (with two or more); ``drift`` each labeler
    against their own re-shown cases; ``ppi`` the prediction-powered rates
    (when asked for); ``jury`` each juror against the labels (for a jury's rows).
    Made by :func:`calibration_report`.
    """

    calibration: Any
    label_set: LabelSet
    reference: ReferenceLabels
    humans: HumanAgreement | None = None
    drift: tuple[SelfAgreement, ...] = ()
    ppi: PPIRates | None = None
    jury: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The report as one JSON object (what ``calibrate --json`` prints)."""
        return {
            **self.calibration.to_dict(),
            "labels_file": self.label_set.to_dict(),
            "reference": self.reference.to_dict(),
            "humans": self.humans.to_dict() if self.humans else None,
            "self_agreement": [item.to_dict() for item in self.drift],
            "ppi": self.ppi.to_dict() if self.ppi else None,
            "jury": self.jury.to_dict() if self.jury is not None else None,
        }

    def to_text(self) -> str:
        """The calibration's table and figures, then the labels' own figures."""
        cal, labels = self.calibration, self.reference
        disagreeing = len(cal.disagreements())
        lines = [cal.to_text(), "", f"disagreements: {disagreeing} of {cal.n} compared cases"]
        if self.label_set.replaced:
            lines.append(
                f"{len(self.label_set.replaced)} of the labels replaced an earlier "
                "label of the same labeler for the same case (the later one "
                "stands)"
            )
        if len(self.label_set.labelers) >= 2 or self.label_set.adjudicated or labels.ties:
            lines.append(labels.describe() + f" ({REFERENCE_RULE})")
        if self.humans is not None:
            lines += ["", *self.humans.to_text()]
        if self.drift:
            lines += ["", "labelers against their own re-shown cases (drift):"]
            lines += [f"  {item}" for item in self.drift]
        if self.ppi is not None:
            lines += ["", *self.ppi.to_text()]
        if self.jury is not None:
            lines += ["", "the jury's jurors against your labels:", str(self.jury)]
        return "\n".join(lines)


def calibration_report(
    rows: Sequence[Mapping[str, Any]],
    label_set: LabelSet,
    *,
    judge: str | None = None,
    only: Iterable[str] | None = None,
    ppi: bool = False,
) -> CalibrationReport:
    """Calibrate ``judge`` (default: the rows' first) against the reference labels of
    ``label_set``, and gather the labelers' agreement, their drift, the jury's jurors and,
    with ``ppi``, the prediction-powered pass rates. ``only`` restricts the cases compared.

    >>> from tinyeval.calibration import LabelRecord
    >>> rows = [{"id": "a", "judges": {"j": {"verdict": "PASS"}}},
    ...         {"id": "b", "judges": {"j": {"verdict": "PASS"}}}]
    >>> ana = {key: LabelRecord({"id": key, "label": label})
    ...        for key, label in (("a", "PASS"), ("b", "FAIL"))}
    >>> report = calibration_report(rows, LabelSet(ana, {"ana": ana}, {}, (), ()))
    >>> report.calibration.n, len(report.calibration.disagreements())
    (2, 1)
    """
    wanted = list(only) if only is not None else None
    reference = reference_labels(label_set)
    several = len(label_set.labelers) >= 2
    return CalibrationReport(
        calibration=calibrate_results(rows, reference, judge=judge, only=wanted),
        label_set=label_set,
        reference=reference,
        humans=human_agreement(label_set, ids=wanted) if several else None,
        drift=tuple(self_agreement(label_set)),
        ppi=ppi_rates(rows, reference, judge=judge) if ppi else None,
        jury=jurors_against_labels(rows, reference, judge=judge),
    )


# ---------------------------------------------------------------- where to label next

GATE_UNIFORM_SHARE = 0.2
"""The share of a ``gate`` budget spread over every open case, so no case has a tiny chance."""


def _thresholds(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], Any]:
    """The thresholds the run that wrote ``rows`` gated with, and its default threshold."""
    for row in rows:
        manifest = row.get("run")
        if isinstance(manifest, Mapping) and isinstance(manifest.get("gate"), Mapping):
            settings = manifest["gate"]
            return dict(settings.get("thresholds") or {}), settings.get("default_threshold")
    return {}, None


def gate_probabilities(
    rows: Sequence[Mapping[str, Any]],
    budget: int,
    labels: Mapping[Any, Mapping[str, Any]] | None = None,
) -> dict[str, float]:
    """Each case's chance of being labelled, spending ``budget`` where the gate needs it.

    People decide only the *open* cases (run, checked, passing their checks). They fall in
    strata: a category and the judge's PASS or FAIL there. A gated category's estimate has
    the variance Σ W²σ²/n over its strata (W the stratum's share of the category, σ people's
    spread in it), so the sum over the gated categories is least with n ∝ W·σ (Neyman; by
    judge verdict as in Lee et al. 2025, arXiv 2511.21140). σ comes from the ``labels`` had
    so far, else 0.5. A share ``GATE_UNIFORM_SHARE`` of the budget is spread over every open
    case; the chances sum to the budget, none above 1; the categories the run gated (every
    one when it gated none) get the rest.

    A category of 20 cases gets about as many of 24 labels as one of 100 (each gate counts):

    >>> rows = [{"id": f"{c}{i}", "category": c, "status": "pass", "checks": {},
    ...          "run": {"gate": {"default_threshold": 0.5}}}
    ...         for c, n in (("big", 100), ("small", 20)) for i in range(n)]
    >>> chances = gate_probabilities(rows, 24)
    >>> round(chances["big1"], 3), round(chances["small1"], 3), round(sum(chances.values()), 6)
    (0.136, 0.52, 24.0)
    """
    opened = _extra("estimator", "open_case", "label --strategy gate")
    thresholds, default = _thresholds(rows)
    strata: dict[tuple[str, bool], list[str]] = {}
    sizes: Counter[str] = Counter()
    for row in rows:
        category = str(row.get("category") or "default")
        sizes[category] += 1
        if opened(row):
            strata.setdefault((category, row.get("status") == "pass"), []).append(str(row["id"]))
    keys = [key for members in strata.values() for key in members]
    if not keys:
        raise CalibrationError("no case passes its checks: there is nothing for people to decide")
    gated = {c for c, _ in strata if c in thresholds or default is not None} or {
        c for c, _ in strata
    }
    known = {str(key): _norm(record.get("label")) for key, record in (labels or {}).items()}
    need: dict[tuple[str, bool], float] = {}
    for stratum, members in strata.items():
        said = [known[key] for key in members if known.get(key) in ("PASS", "FAIL")]
        share = (said.count("PASS") + 1) / (len(said) + 2) if len(said) >= 2 else 0.5
        spread = (share * (1 - share)) ** 0.5
        need[stratum] = len(members) / sizes[stratum[0]] * spread if stratum[0] in gated else 0.0
    total_need = sum(need.values())
    weights = {}
    for stratum, members in strata.items():
        focused = need[stratum] / total_need / len(members) if total_need else 0.0
        uniform = 1.0 / len(keys)
        share = GATE_UNIFORM_SHARE if total_need else 1.0
        for key in members:
            weights[key] = share * uniform + (1.0 - share) * focused
    return capped_probabilities(weights, float(min(budget, len(keys))))


def capped_probabilities(weights: Mapping[_K, float], budget: float) -> dict[_K, float]:
    """Probabilities proportional to ``weights`` summing to ``budget``, none above 1.

    >>> capped_probabilities({"a": 8.0, "b": 1.0, "c": 1.0}, 2.0)
    {'a': 1.0, 'b': 0.5, 'c': 0.5}
    """
    fixed: dict[_K, float] = {}
    while True:
        free = {key: w for key, w in weights.items() if key not in fixed}
        left = budget - len(fixed)
        total = sum(free.values())
        scaled = {key: left * w / total for key, w in free.items()} if total else {}
        over = [key for key, value in scaled.items() if value >= 1.0]
        if not over:
            return {**fixed, **scaled}
        fixed.update(dict.fromkeys(over, 1.0))
