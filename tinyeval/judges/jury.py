"""A jury: several judges (jurors) on one criterion, their verdicts, errors and agreement.

One judge model has its own blind spots; a jury of different models
averages some of them away, but only when the jurors err on *different*
cases. So alongside the jury's verdict this module measures how each juror
errs and how much their errors overlap.

Verdicts are ``"PASS"``, ``"FAIL"`` (any case, or ``True``/``False``) or
``None`` for a reply that did not parse. Sensitivity is P(juror PASS | truly
PASS) and specificity P(juror FAIL | truly FAIL), as in
:mod:`tinyeval.calibration`: failure recall is the specificity and the false
alarm rate is one minus the sensitivity.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import InputError, plural
from ..stats import Rate, StatisticsError, UndefinedStatisticError, cohen_kappa

__all__ = [
    "CORRELATED_ERRORS",
    "DawidSkene",
    "JurorCalibration",
    "JurorEstimate",
    "JurorPair",
    "Jury",
    "JuryAgreement",
    "JuryVerdict",
    "dawid_skene",
    "juror_agreement",
    "jury_verdict",
    "shared_family",
]

Verdict = str | bool | None

CORRELATED_ERRORS = 0.5
"""Above this phi coefficient two jurors' errors overlap so much that the second adds little."""
_EPSILON = 1e-10  # the floor of a Dawid-Skene count, so no estimated rate is exactly 0 or 1


def _verdict(value: Any, where: str) -> str | None:
    """``"PASS"``, ``"FAIL"`` or None from a verdict as given."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    if isinstance(value, str) and value.strip().upper() in ("PASS", "FAIL"):
        return value.strip().upper()
    raise InputError(f"{where}: a verdict is 'PASS', 'FAIL', a boolean or None, got {value!r}")


# ---------------------------------------------------------------- one case


class JuryVerdict(NamedTuple):
    """The panel's verdict on one case; build it with :func:`jury_verdict`.

    >>> v = JuryVerdict("PASS", 2, 1, 0)
    >>> v.jurors, v.unanimous, v.needs_review
    (3, False, True)
    >>> print(v)
    PASS (2 PASS, 1 FAIL, 0 unparsed of 3 jurors)
    """

    verdict: str | None
    passes: int
    fails: int
    unparsed: int

    @property
    def jurors(self) -> int:
        """The size of the panel."""
        return self.passes + self.fails + self.unparsed

    @property
    def unanimous(self) -> bool:
        """True when every juror's verdict parsed and all agree."""
        return self.unparsed == 0 and (self.passes == 0 or self.fails == 0)

    @property
    def needs_review(self) -> bool:
        """True when the panel is split or a verdict did not parse: a case for a human."""
        return not self.unanimous

    def to_dict(self) -> dict[str, Any]:
        """``{"verdict", "passes", "fails", "unparsed", "jurors", "unanimous", "needs_review"}``.

        >>> JuryVerdict(None, 1, 1, 1).to_dict()["needs_review"]
        True
        """
        return {
            "verdict": self.verdict,
            "passes": self.passes,
            "fails": self.fails,
            "unparsed": self.unparsed,
            "jurors": self.jurors,
            "unanimous": self.unanimous,
            "needs_review": self.needs_review,
        }

    def __str__(self) -> str:
        return (
            f"{self.verdict or 'no verdict'} ({self.passes} PASS, {self.fails} FAIL, "
            f"{self.unparsed} unparsed of {plural(self.jurors, 'juror')})"
        )


def jury_verdict(verdicts: Sequence[Verdict]) -> JuryVerdict:
    """Return the majority verdict of an odd panel of jurors on one case.

    The verdict needs a strict majority of the whole panel, not of the
    verdicts that parsed: PASS needs more than half of all jurors to say
    PASS, and likewise FAIL. So an unparsed reply can never tip the balance,
    and ties are impossible. When unparsed replies leave the parsed verdicts
    even, or leave no side with a majority of the panel (1 PASS, 1 FAIL,
    1 unparsed; or 1 PASS, 2 unparsed), there is no verdict (None): the case
    counts as unparsed, as a single judge's unparsed reply does, and goes to
    review. This is the rule :class:`tinyeval.Judge` applies to its votes.

    >>> jury_verdict(["PASS", "FAIL", "PASS"]).verdict
    'PASS'
    >>> jury_verdict(["PASS", None, "PASS"]).verdict
    'PASS'
    >>> print(jury_verdict(["PASS", None, "FAIL"]))
    no verdict (1 PASS, 1 FAIL, 1 unparsed of 3 jurors)

    Raises ``InputError`` for an even or empty panel and for a verdict that
    is not PASS, FAIL, a boolean or None.
    """
    labels = [_verdict(value, f"jury_verdict: juror {i}") for i, value in enumerate(verdicts)]
    if len(labels) % 2 == 0:
        raise InputError(
            f"jury_verdict: a jury needs an odd number of jurors (1, 3, 5...), got {len(labels)}"
        )
    passes, fails = labels.count("PASS"), labels.count("FAIL")
    verdict = None
    if 2 * passes > len(labels):
        verdict = "PASS"
    elif 2 * fails > len(labels):
        verdict = "FAIL"
    return JuryVerdict(verdict, passes, fails, len(labels) - passes - fails)


# ---------------------------------------------------------------- with or without labels


class JurorCalibration(NamedTuple):
    """One juror (or the jury's majority) against human labels.

    Rates are over the cases with a human label and a parsed verdict; they
    are None where the labels hold no case of that kind (or no labels were
    given). ``unparsed`` counts the juror's unparsed verdicts over all cases.

    >>> c = JurorCalibration("a", 10, 1, Rate.of(8, 10), Rate.of(1, 9))
    >>> print(c)
    a: failure recall 8/10 = 80.0% [49.0%, 94.3%]; false alarms 1/9 = 11.1% [2.0%, 43.5%]; 1 of 10
    unparsed
    """

    juror: str
    n: int
    unparsed: int
    failure_recall: Rate | None
    false_alarm_rate: Rate | None

    def to_dict(self) -> dict[str, Any]:
        """``{"juror", "n", "unparsed", "failure_recall", "false_alarm_rate"}``; rates as dicts.

        >>> JurorCalibration("a", 3, 0, None, Rate.of(0, 3)).to_dict()["false_alarm_rate"]["n"]
        3
        """
        return {
            "juror": self.juror,
            "n": self.n,
            "unparsed": self.unparsed,
            "failure_recall": _rate_dict(self.failure_recall),
            "false_alarm_rate": _rate_dict(self.false_alarm_rate),
        }

    def __str__(self) -> str:
        recall = self.failure_recall if self.failure_recall is not None else "n/a"
        alarms = self.false_alarm_rate if self.false_alarm_rate is not None else "n/a"
        return (
            f"{self.juror}: failure recall {recall}; false alarms {alarms}; "
            f"{self.unparsed} of {self.n} unparsed"
        )


class JurorPair(NamedTuple):
    """Two jurors compared: agreement, and with labels how their errors overlap.

    ``n`` counts the cases both jurors' verdicts parsed, ``agreed`` those
    where they agree; ``kappa`` is Cohen's kappa over them (None when
    undefined: fewer than two cases, or both jurors always give one and the
    same verdict). With labels, ``errors_n`` counts the cases that also have
    a human label, ``errors_a``/``errors_b`` each juror's errors there,
    ``both_wrong`` the cases both got wrong, and ``error_phi`` the phi
    coefficient (Pearson correlation) of the two error indicators: near 0
    the jurors err independently and the pair helps; near 1 they fail on the
    same cases and the second adds little. None when a juror makes no error
    or only errors there.

    >>> pair = JurorPair("a", "b", 20, 17, 0.7, 20, 3, 3, 2, 0.6078)
    >>> print(pair)
    a ~ b: agree 17/20 = 85.0% [64.0%, 94.8%], kappa 0.70; errors 3 and 3 of 20,
    2 shared, phi 0.61
    """

    a: str
    b: str
    n: int
    agreed: int
    kappa: float | None
    errors_n: int | None = None
    errors_a: int | None = None
    errors_b: int | None = None
    both_wrong: int | None = None
    error_phi: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The pair as a JSON-ready dict (every field).

        >>> sorted(JurorPair("a", "b", 2, 2, None).to_dict())  # doctest: +NORMALIZE_WHITESPACE
        ['a', 'agreed', 'b', 'both_wrong', 'error_phi', 'errors_a', 'errors_b', 'errors_n',
         'kappa', 'n']
        """
        return dict(self._asdict())

    def __str__(self) -> str:
        agree = Rate.of(self.agreed, self.n) if self.n else "0/0 = n/a"
        kappa = "n/a" if self.kappa is None else f"{self.kappa:.2f}"
        text = f"{self.a} ~ {self.b}: agree {agree}, kappa {kappa}"
        if self.errors_n is not None:
            phi = "n/a" if self.error_phi is None else f"{self.error_phi:.2f}"
            text += (
                f"; errors {self.errors_a} and {self.errors_b} of {self.errors_n}, "
                f"{self.both_wrong} shared, phi {phi}"
            )
        return text


@dataclass(frozen=True)
class JuryAgreement:
    """Jurors compared with each other and, when labels are given, with the human.

    ``jurors`` holds one :class:`JurorCalibration` per juror and ``jury`` the
    majority's (None without labels or with an even panel); ``pairs`` one
    :class:`JurorPair` per pair of jurors. ``unanimous`` counts the cases on
    which every juror parsed and agreed, of ``n``. ``warnings`` names pairs
    whose errors overlap beyond ``CORRELATED_ERRORS``.

    >>> report = juror_agreement({"a": ["PASS", "FAIL"], "b": ["PASS", "PASS"]})
    >>> report.n, report.unanimous, report.pairs[0].agreed
    (2, 1, 1)
    """

    n: int
    labelled: int | None
    unanimous: int
    jurors: tuple[JurorCalibration, ...]
    jury: JurorCalibration | None
    pairs: tuple[JurorPair, ...]
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict with stable keys.

        >>> sorted(juror_agreement({"a": ["PASS"], "b": ["FAIL"]}).to_dict())
        ['jurors', 'jury', 'labelled', 'n', 'pairs', 'unanimous', 'warnings']
        """
        return {
            "n": self.n,
            "labelled": self.labelled,
            "unanimous": self.unanimous,
            "jurors": [juror.to_dict() for juror in self.jurors],
            "jury": self.jury.to_dict() if self.jury is not None else None,
            "pairs": [pair.to_dict() for pair in self.pairs],
            "warnings": list(self.warnings),
        }

    def __str__(self) -> str:
        lines = [
            f"{plural(len(self.jurors), 'juror')} on {plural(self.n, 'case')}; "
            f"unanimous on {self.unanimous}"
            + (f"; {self.labelled} with a human label" if self.labelled is not None else "")
        ]
        if self.labelled is not None:
            lines.extend(f"  {juror}" for juror in self.jurors)
            if self.jury is not None:
                lines.append(f"  {self.jury}")
        lines.extend(f"  {pair}" for pair in self.pairs)
        lines.extend(f"warning: {warning}" for warning in self.warnings)
        return "\n".join(lines)


def _rate_dict(rate: Rate | None) -> dict[str, Any] | None:
    return rate.to_dict() if rate is not None else None


def _rate(successes: int, n: int) -> Rate | None:
    return Rate.of(successes, n) if n else None


def _phi(both: int, only_a: int, only_b: int, neither: int) -> float | None:
    """The phi coefficient of a 2×2 table, or None when a margin is empty."""
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    if margins == 0:
        return None
    cross = both * neither - only_a * only_b
    # φ² as one exact ratio of integers, then a correctly rounded square root
    return math.copysign(math.sqrt(cross * cross / margins), cross)


def _calibrate(
    juror: str, labels: Sequence[str | None], human: Sequence[str | None]
) -> JurorCalibration:
    pairs = [(j, h) for j, h in zip(labels, human, strict=True) if j is not None and h is not None]
    human_fails = [j for j, h in pairs if h == "FAIL"]
    human_passes = [j for j, h in pairs if h == "PASS"]
    return JurorCalibration(
        juror=juror,
        n=len(labels),
        unparsed=sum(label is None for label in labels),
        failure_recall=_rate(human_fails.count("FAIL"), len(human_fails)),
        false_alarm_rate=_rate(human_passes.count("FAIL"), len(human_passes)),
    )


def _pair(
    a: str,
    b: str,
    labels_a: Sequence[str | None],
    labels_b: Sequence[str | None],
    human: Sequence[str | None] | None,
) -> JurorPair:
    both = [
        (x, y) for x, y in zip(labels_a, labels_b, strict=True) if x is not None and y is not None
    ]
    try:
        kappa: float | None = cohen_kappa([x for x, _ in both], [y for _, y in both])
    except StatisticsError:  # fewer than two pairs, or undefined
        kappa = None
    agreed = sum(x == y for x, y in both)
    if human is None:
        return JurorPair(a, b, len(both), agreed, kappa)
    table = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for x, y, h in zip(labels_a, labels_b, human, strict=True):
        if x is not None and y is not None and h is not None:
            table[(x != h, y != h)] += 1
    both_wrong, only_a = table[(True, True)], table[(True, False)]
    only_b, neither = table[(False, True)], table[(False, False)]
    return JurorPair(
        a,
        b,
        len(both),
        agreed,
        kappa,
        errors_n=sum(table.values()),
        errors_a=both_wrong + only_a,
        errors_b=both_wrong + only_b,
        both_wrong=both_wrong,
        error_phi=_phi(both_wrong, only_a, only_b, neither),
    )


def juror_agreement(
    labels_by_juror: Mapping[str, Sequence[Verdict]],
    human: Sequence[Verdict] | None = None,
) -> JuryAgreement:
    """Compare jurors on the same cases, with each other and with human labels if given.

    ``labels_by_juror`` maps each juror's name to its verdicts, one per case
    in the same order for every juror (None for a reply that did not parse).
    ``human`` holds the human labels in that order (None for a case without
    one). Failure recall, false alarms and the error correlation use the
    cases with a human label and parsed verdicts; the jury's row uses the
    majority verdict of :func:`jury_verdict` (odd panels only).

    >>> human = ["FAIL", "FAIL", "FAIL", "FAIL", "PASS", "PASS", "PASS", "PASS"]
    >>> report = juror_agreement({
    ...     "a": ["FAIL", "FAIL", "FAIL", "PASS", "PASS", "PASS", "PASS", "FAIL"],
    ...     "b": ["FAIL", "FAIL", "PASS", "PASS", "PASS", "PASS", "PASS", "PASS"],
    ...     "c": ["FAIL", "FAIL", "FAIL", "FAIL", "PASS", "PASS", "FAIL", "PASS"],
    ... }, human)
    >>> [juror.failure_recall.successes for juror in report.jurors]
    [3, 2, 4]
    >>> report.jury.failure_recall.successes, report.jury.false_alarm_rate.successes
    (3, 0)
    >>> round(report.pairs[0].error_phi, 4)  # a and b share one error (case 3) of two each
    0.3333

    Raises ``InputError`` when there are no jurors, the jurors' lists (or the
    human labels) differ in length, or a label is not PASS/FAIL/None.
    """
    func = "juror_agreement"
    if not labels_by_juror:
        raise InputError(f"{func}: needs at least one juror, got none")
    names = list(labels_by_juror)
    labels = {
        name: [_verdict(v, f"{func}: juror {name!r}, case {i}") for i, v in enumerate(values)]
        for name, values in labels_by_juror.items()
    }
    n = len(labels[names[0]])
    for name in names:
        if len(labels[name]) != n:
            raise InputError(
                f"{func}: every juror needs one verdict per case; {names[0]!r} has {n}, "
                f"{name!r} has {len(labels[name])}"
            )
    truth: list[str | None] | None = None
    if human is not None:
        truth = [_verdict(v, f"{func}: human label, case {i}") for i, v in enumerate(human)]
        if len(truth) != n:
            raise InputError(
                f"{func}: the human labels must be one per case: {n} cases, {len(truth)} labels"
            )
    columns = list(zip(*(labels[name] for name in names), strict=True))
    unanimous = sum(None not in column and len(set(column)) == 1 for column in columns)
    jurors: tuple[JurorCalibration, ...] = ()
    jury = None
    if truth is not None:
        jurors = tuple(_calibrate(name, labels[name], truth) for name in names)
        if len(names) % 2 == 1:
            majority = [jury_verdict(column).verdict for column in columns]
            jury = _calibrate("jury", majority, truth)
    else:
        jurors = tuple(
            JurorCalibration(name, n, sum(v is None for v in labels[name]), None, None)
            for name in names
        )
    pairs = tuple(
        _pair(a, b, labels[a], labels[b], truth)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    )
    warnings = tuple(
        f"jurors {pair.a} and {pair.b} fail on the same cases (error phi {pair.error_phi:.2f} "
        f"over {plural(pair.errors_n or 0, 'case')}): together they add little over one"
        for pair in pairs
        if pair.error_phi is not None and pair.error_phi > CORRELATED_ERRORS
    )
    return JuryAgreement(
        n=n,
        labelled=None if truth is None else sum(h is not None for h in truth),
        unanimous=unanimous,
        jurors=jurors,
        jury=jury,
        pairs=pairs,
        warnings=warnings,
    )


# ---------------------------------------------------------------- without labels


class JurorEstimate(NamedTuple):
    """One juror's estimated error rates under the Dawid–Skene model.

    >>> e = JurorEstimate("a", 0.9, 0.8, 120)
    >>> round(e.failure_recall, 2), round(e.false_alarm_rate, 2)
    (0.8, 0.1)
    """

    juror: str
    sensitivity: float
    specificity: float
    verdicts: int

    @property
    def failure_recall(self) -> float:
        """P(juror FAIL | truly FAIL): the specificity."""
        return self.specificity

    @property
    def false_alarm_rate(self) -> float:
        """P(juror FAIL | truly PASS): one minus the sensitivity."""
        return 1.0 - self.sensitivity

    def to_dict(self) -> dict[str, Any]:
        """``{"juror", "sensitivity", "specificity", "verdicts"}``.

        >>> JurorEstimate("a", 0.9, 0.8, 120).to_dict()["verdicts"]
        120
        """
        return dict(self._asdict())


@dataclass(frozen=True)
class DawidSkene:
    """The Dawid–Skene estimate; build it with :func:`dawid_skene`.

    ``prevalence`` is the estimated share of truly passing cases (the pass
    rate the jury's criterion would give), ``jurors`` each juror's estimated
    sensitivity and specificity, ``posteriors`` each fitted case's estimated
    chance of truly passing. ``unjudged`` lists cases with no parsed
    verdict, left out of the fit. These are model estimates, not
    measurements: see :func:`dawid_skene` for the assumptions.
    """

    prevalence: float
    jurors: tuple[JurorEstimate, ...]
    posteriors: dict[str, float]
    unjudged: tuple[str, ...]
    iterations: int
    converged: bool
    log_likelihood: float
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The estimate as a JSON-ready dict with stable keys.

        >>> votes = {"x": {"a": "PASS", "b": "PASS", "c": "FAIL"}, "y": {"a": "FAIL", "b": "FAIL"},
        ...          "z": {"a": "PASS", "b": "PASS", "c": "PASS"}}
        >>> sorted(dawid_skene(votes).to_dict())  # doctest: +NORMALIZE_WHITESPACE
        ['converged', 'iterations', 'jurors', 'log_likelihood', 'model', 'posteriors',
         'prevalence', 'unjudged', 'warnings']
        """
        return {
            "model": "dawid-skene",
            "prevalence": self.prevalence,
            "jurors": [juror.to_dict() for juror in self.jurors],
            "posteriors": dict(self.posteriors),
            "unjudged": list(self.unjudged),
            "iterations": self.iterations,
            "converged": self.converged,
            "log_likelihood": self.log_likelihood,
            "warnings": list(self.warnings),
        }

    def __str__(self) -> str:
        state = (
            f"converged after {plural(self.iterations, 'iteration')}"
            if self.converged
            else f"NOT converged after {plural(self.iterations, 'iteration')}"
        )
        width = max(len("juror"), *(len(juror.juror) for juror in self.jurors))
        lines = [
            "Dawid-Skene estimate without labels (a model: jurors independent given the "
            "true verdict, each better than chance)",
            f"{plural(len(self.posteriors), 'case')}, {plural(len(self.jurors), 'juror')}; "
            f"estimated pass rate {self.prevalence:.1%}; {state}",
            f"{'juror':<{width}}  verdicts  sensitivity  specificity = failure recall"
            "  false alarms",
        ]
        for juror in self.jurors:
            lines.append(
                f"{juror.juror:<{width}}  {juror.verdicts:>8}  {juror.sensitivity:>11.1%}  "
                f"{juror.specificity:>28.1%}  {juror.false_alarm_rate:>12.1%}"
            )
        if self.unjudged:
            lines.append(f"left out: {plural(len(self.unjudged), 'case')} with no parsed verdict")
        lines.extend(f"warning: {warning}" for warning in self.warnings)
        return "\n".join(lines)


def _sigmoid(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _log_add(a: float, b: float) -> float:
    """log(exp(a) + exp(b)) without overflow."""
    high, low = (a, b) if a >= b else (b, a)
    return high + math.log1p(math.exp(low - high))


def dawid_skene(
    verdicts_by_case: Mapping[str, Mapping[str, Verdict]],
    *,
    max_iter: int = 1000,
    tol: float = 1e-9,
    seed: int = 0,
) -> DawidSkene:
    """Estimate each juror's sensitivity and specificity, and the pass rate, without labels.

    The binary model of Dawid and Skene (1979, "Maximum likelihood
    estimation of observer error-rates using the EM algorithm", *Applied
    Statistics* 28(1), 20–28): each case is truly PASS with chance
    ``prevalence``; a juror says PASS to a truly passing case with chance
    ``sensitivity`` and FAIL to a truly failing one with chance
    ``specificity``. The EM algorithm alternates between each case's chance
    of truly passing (E-step) and the rates that best explain the verdicts
    given those chances (M-step), increasing the likelihood at every step,
    until no estimate moves by more than ``tol`` or ``max_iter`` rounds
    have run.

    Assumptions, which the data cannot check:

    * **conditional independence**: given a case's true verdict, the jurors
      err independently. Jurors that share blind spots (one model family,
      one prompt) break it, and the estimates then flatter them: shared
      errors look like agreement with the truth.
    * **better than chance**: every juror's sensitivity + specificity
      exceeds 1. The likelihood cannot tell the solution from its mirror
      image (every label swapped); starting from the majority vote picks
      the side where the majority is mostly right. A juror estimated at or
      below chance is named in ``warnings``.
    * one sensitivity and specificity per juror for all cases, and at least
      three jurors (with two the model is not identified).

    ``verdicts_by_case`` maps each case id to ``{juror: verdict}``; a juror
    missing from a case, or a None verdict, is simply not counted, and a
    case with no parsed verdict is left out (listed in ``unjudged``). The EM
    starts from the majority vote of each case's parsed verdicts, ties drawn
    with ``random.Random(seed)``. Counts are floored at 1e-10 so that no
    rate is estimated as exactly 0 or 1 (as crowd-kit does).

    >>> import random
    >>> rng = random.Random(7)
    >>> truth = {f"case{i}": rng.random() < 0.7 for i in range(1000)}
    >>> rates = {"a": (0.95, 0.80), "b": (0.85, 0.90), "c": (0.90, 0.70),
    ...          "d": (0.80, 0.85), "e": (0.90, 0.90)}  # (sensitivity, specificity)
    >>> votes = {
    ...     case: {juror: (rng.random() < sens) if passed else (rng.random() > spec)
    ...            for juror, (sens, spec) in rates.items()}
    ...     for case, passed in truth.items()
    ... }
    >>> estimate = dawid_skene(votes)
    >>> for juror in estimate.jurors:
    ...     print(juror.juror, round(juror.sensitivity, 2), round(juror.specificity, 2))
    a 0.96 0.84
    b 0.86 0.92
    c 0.91 0.73
    d 0.8 0.82
    e 0.88 0.89
    >>> round(estimate.prevalence, 2), estimate.converged
    (0.72, True)

    Raises ``UndefinedStatisticError`` when fewer than three jurors or no
    case have a parsed verdict, ``InputError`` for an unknown verdict, and
    ``StatisticsError`` for a ``max_iter`` below 1 or a ``tol`` that is not
    a positive number.
    """
    func = "dawid_skene"
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise StatisticsError(f"{func}: max_iter must be a whole number >= 1, got {max_iter!r}")
    if isinstance(tol, bool) or not isinstance(tol, int | float) or not tol > 0:
        raise StatisticsError(f"{func}: tol must be a positive number, got {tol!r}")
    cases: list[str] = []
    unjudged: list[str] = []
    votes: list[list[tuple[int, bool]]] = []  # per case: (juror index, said PASS)
    juror_index: dict[str, int] = {}
    for case_id, panel in verdicts_by_case.items():
        parsed = []
        for juror, value in panel.items():
            label = _verdict(value, f"{func}: case {case_id!r}, juror {juror!r}")
            if label is not None:
                parsed.append((juror_index.setdefault(juror, len(juror_index)), label == "PASS"))
        if parsed:
            cases.append(case_id)
            votes.append(parsed)
        else:
            unjudged.append(case_id)
    if len(juror_index) < 3:
        raise UndefinedStatisticError(
            f"{func}: the model needs at least three jurors with a parsed verdict "
            f"(with fewer it is not identified), got {len(juror_index)}"
        )
    names = list(juror_index)
    jurors = len(names)
    rng = random.Random(seed)
    posterior = []  # P(truly PASS) per case, starting from the majority vote
    for parsed in votes:
        said_pass = sum(passed for _, passed in parsed)
        said_fail = len(parsed) - said_pass
        if said_pass == said_fail:
            posterior.append(float(rng.random() < 0.5))
        else:
            posterior.append(float(said_pass > said_fail))

    def m_step(post: list[float]) -> tuple[float, list[float], list[float]]:
        # expected counts: [juror] -> PASS said to truly passing, FAIL said to it, and so on
        pass_pass = [0.0] * jurors
        fail_pass = [0.0] * jurors
        pass_fail = [0.0] * jurors
        fail_fail = [0.0] * jurors
        for chance, parsed in zip(post, votes, strict=True):
            for j, said_pass in parsed:
                if said_pass:
                    pass_pass[j] += chance
                    pass_fail[j] += 1.0 - chance
                else:
                    fail_pass[j] += chance
                    fail_fail[j] += 1.0 - chance
        sensitivity, specificity = [], []
        for j in range(jurors):
            pp, fp = max(pass_pass[j], _EPSILON), max(fail_pass[j], _EPSILON)
            pf, ff = max(pass_fail[j], _EPSILON), max(fail_fail[j], _EPSILON)
            sensitivity.append(pp / (pp + fp))
            specificity.append(ff / (pf + ff))
        prevalence = min(max(math.fsum(post) / len(post), _EPSILON), 1.0 - _EPSILON)
        return prevalence, sensitivity, specificity

    def e_step(
        prevalence: float, sensitivity: list[float], specificity: list[float]
    ) -> tuple[list[float], float]:
        said = [
            (math.log(sensitivity[j]), math.log1p(-specificity[j])) for j in range(jurors)
        ]  # log P(PASS said | truly PASS), log P(PASS said | truly FAIL)
        unsaid = [
            (math.log1p(-sensitivity[j]), math.log(specificity[j])) for j in range(jurors)
        ]  # log P(FAIL said | truly PASS), log P(FAIL said | truly FAIL)
        log_pass, log_fail = math.log(prevalence), math.log1p(-prevalence)
        post, total = [], []
        for parsed in votes:
            lp, lf = log_pass, log_fail
            for j, said_pass in parsed:
                if_pass, if_fail = said[j] if said_pass else unsaid[j]
                lp += if_pass
                lf += if_fail
            post.append(_sigmoid(lp - lf))
            total.append(_log_add(lp, lf))
        return post, math.fsum(total)

    prevalence, sensitivity, specificity = m_step(posterior)
    converged = False
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        posterior, _ = e_step(prevalence, sensitivity, specificity)
        new = m_step(posterior)
        moved = max(
            abs(new[0] - prevalence),
            *(abs(a - b) for a, b in zip(new[1], sensitivity, strict=True)),
            *(abs(a - b) for a, b in zip(new[2], specificity, strict=True)),
        )
        prevalence, sensitivity, specificity = new
        if moved <= tol:
            converged = True
            break
    posterior, log_likelihood = e_step(prevalence, sensitivity, specificity)
    counts = [0] * jurors
    for parsed in votes:
        for j, _ in parsed:
            counts[j] += 1
    estimates = tuple(
        JurorEstimate(names[j], sensitivity[j], specificity[j], counts[j]) for j in range(jurors)
    )
    warnings = [
        f"juror {e.juror} is estimated no better than chance (sensitivity {e.sensitivity:.1%} "
        f"+ specificity {e.specificity:.1%} <= 100%): the model's assumptions may not hold"
        for e in estimates
        if e.sensitivity + e.specificity <= 1.0
    ]
    if not converged:
        warnings.append(
            f"the estimate did not converge in {plural(max_iter, 'iteration')} "
            f"(tolerance {tol:g}); the figures are the last iteration's"
        )
    return DawidSkene(
        prevalence=prevalence,
        jurors=estimates,
        posteriors=dict(zip(cases, posterior, strict=True)),
        unjudged=tuple(unjudged),
        iterations=iterations,
        converged=converged,
        log_likelihood=log_likelihood,
        warnings=tuple(warnings),
    )


# ---------------------------------------------------------------- who the jurors are

_FAMILY = re.compile(r"[a-z]+")


def shared_family(models: Iterable[str]) -> str | None:
    """The model family every juror comes from, or None when they differ (or fewer than two).

    A family is the first word of letters in the model's name, after any
    ``vendor:`` prefix and organisation path, lower-cased: ``gpt`` for
    ``openai:gpt-4o-mini``, ``llama`` for ``openai:meta-llama/Llama-3.1-8B``.
    Jurors of one family tend to share blind spots, which breaks the
    independence a jury relies on. Specs without a model name (``cmd:``,
    ``py:``, ``builtin``) are compared whole.

    >>> shared_family(["openai:gpt-4o-mini", "openai:gpt-4.1"])
    'gpt'
    >>> shared_family(["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku"]) is None
    True
    """
    families = set()
    count = 0
    for spec in models:
        count += 1
        vendor, _, name = spec.partition(":")
        if vendor in ("cmd", "py") or not name:
            families.add(spec)
            continue
        match = _FAMILY.search(name.rsplit("/", 1)[-1].lower())
        families.add(match.group(0) if match else name.lower())
    return families.pop() if count >= 2 and len(families) == 1 else None


# ---------------------------------------------------------------- a jury the runner runs


class Panel:
    """The judge model a jury's run reports (``jury:SPEC,SPEC,…``); each juror calls its own."""

    temperature = None

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def __call__(self, prompt: str) -> str:
        raise RuntimeError("a jury's jurors call their own models")


class Jury:
    """One criterion asked of several judge models: a judge the runner runs like any other.

    ``judge`` is the one-criterion judge (a :class:`tinyeval.Judge` or any
    judge object), ``models`` maps each juror's spec to its model. Each juror's
    verdict is kept in the verdict's ``jurors``; the verdict is the majority
    of the panel (:func:`jury_verdict`: an odd panel, a strict majority of all
    jurors, so an unparsed juror never tips it), and a split panel is not
    ``unanimous``, so it goes to review like split votes. The verdict is an
    error only when every juror's call failed; one failed juror counts as
    unparsed.

    >>> from tinyeval.judge import Judge
    >>> jury = Jury(Judge("Is polite."), {"a": lambda p: "PASS", "b": lambda p: "FAIL",
    ...                                   "c": lambda p: "PASS"})
    >>> found = jury(None, response="Thanks!").to_dict()
    >>> found["verdict"], found["unanimous"], sorted(found["jurors"])
    ('PASS', False, ['a', 'b', 'c'])
    """

    def __init__(self, judge: Any, models: Mapping[str, Any]) -> None:
        _refuse_even(len(models))
        self.judge = judge
        self.models = dict(models)
        self.name = judge.name
        self.criterion = judge.criterion
        self.criterion_text = getattr(judge, "criterion_text", judge.criterion)
        self.rubric_fingerprint = judge.rubric_fingerprint
        self.needs = getattr(judge, "needs", ())
        self.votes = getattr(judge, "votes", 1)
        self.takes_conversation = getattr(judge, "takes_conversation", False)
        self.spec = "jury:" + ",".join(self.models)

    def __repr__(self) -> str:
        return f"Jury({self.judge!r}, {list(self.models)!r})"

    @classmethod
    def open(cls, session: Any) -> tuple[list[Jury], Panel]:
        """A session's judges as juries (each juror's model opened once, on the session's cache)
        and the judge model the run reports."""
        _refuse_even(len(session.jurors))  # before a model, or the cache, is opened
        max_tokens = session.settings.judge_max_tokens
        models = {spec: session.model(spec, max_tokens=max_tokens) for spec in session.jurors}
        return [cls(judge, models) for judge in session.judges], Panel(session.judge_spec)

    def __call__(self, call_model: Any = None, **asked: Any) -> JuryRun:
        """Ask every juror (``call_model`` is not used: each juror has its own model)."""
        found = {spec: self.judge(model, **asked) for spec, model in self.models.items()}
        return JuryRun(self, found)


def _refuse_even(jurors: int) -> None:
    if jurors % 2 == 0:
        said = f"a jury needs an odd number of judge models (1, 3, 5...), got {jurors}"
        raise InputError(said, field="judge_model")


class JuryRun:
    """What a :class:`Jury` returns for one response: each juror's verdict and the majority."""

    def __init__(self, jury: Jury, verdicts: Mapping[str, Any]) -> None:
        self.jury = jury
        self.verdicts = dict(verdicts)
        data = {spec: v.to_dict() for spec, v in self.verdicts.items()}
        self.data = data
        self.panel = jury_verdict([d.get("verdict") for d in data.values()])
        errors = [d.get("error") for d in data.values() if d.get("error")]
        self.error = errors[0] if errors and len(errors) == len(data) else None
        self.verdict = self.panel.verdict

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a result row stores it, with ``jurors`` (spec → verdict)."""
        usage: dict[str, int] = {}
        for d in self.data.values():
            for key, value in (d.get("usage") or {}).items():
                usage[key] = usage.get(key, 0) + int(value)
        verdict = self.panel.verdict
        failure = None if verdict else ("error" if self.error else "unparsed")
        return {
            "name": self.jury.name,
            "criterion": self.jury.criterion,
            "style": "jury",
            "verdict": verdict,
            "parsed": verdict is not None,
            "failure": failure,
            "reason": str(self.panel),
            "quote": None,
            "votes": [d.get("verdict") for d in self.data.values()],
            "vote_failures": [d.get("failure") for d in self.data.values()],
            "unanimous": self.panel.unanimous,
            "raw": [],
            "error": self.error,
            "model": self.jury.spec,
            "usage": usage or None,
            "rubric_fingerprint": self.jury.rubric_fingerprint,
            "jurors": self.data,
        }
