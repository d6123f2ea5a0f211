"""The statistics of an eval said in one sentence each, for a pull request.

Each function answers one question and returns a :class:`Sentence`: the text
to paste under a change, and the figures behind it for JSON
(``tinyeval stats`` prints one or the other).

==========================  ==================================================
Function                    Answers
==========================  ==================================================
``wilson_sentence``         How sure is a pass rate of k out of n?
``sample_size_sentence``    How many cases per run detect a given change?
``power_sentence``          How likely do n cases per run catch it?
``detectable_sentence``     What is the smallest drop n cases can catch?
``mcnemar_sentence``        Did two runs over the same cases really differ?
==========================  ==================================================

The three planning sentences take a judge's ``sensitivity`` and
``specificity`` (from :func:`judge_rates_from_calibration`, say) and then
also say what the judge's errors cost against a perfect judge.

>>> print(wilson_sentence(27, 30))
27/30 = 90.0%; 95% Wilson interval 74.4%–96.5%.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from . import stats
from .errors import InputError

__all__ = [
    "JudgeRates",
    "Sentence",
    "detectable_sentence",
    "judge_rates",
    "judge_rates_from_calibration",
    "mcnemar_sentence",
    "power_sentence",
    "sample_size_sentence",
    "wilson_sentence",
]


@dataclass(frozen=True)
class Sentence:
    """A statistic said in one sentence, with the figures behind it.

    ``text`` is the sentence and ``fields`` the figures (JSON values), among
    them ``statistic``, the question answered. ``str()`` gives the text;
    :meth:`to_dict` gives the fields with the text under ``"sentence"``.

    >>> said = Sentence("2 of 4 passed.", {"statistic": "count", "successes": 2})
    >>> str(said)
    '2 of 4 passed.'
    >>> said.to_dict()
    {'statistic': 'count', 'successes': 2, 'sentence': '2 of 4 passed.'}
    """

    text: str
    fields: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``"sentence"``, as one JSON object (``tinyeval stats … --json``).

        >>> sorted(wilson_sentence(1, 2).to_dict())
        ['confidence', 'high', 'low', 'n', 'rate', 'sentence', 'statistic', 'successes']
        """
        return {**self.fields, "sentence": self.text}


class JudgeRates(NamedTuple):
    """A judge's sensitivity and specificity, and where they were read (``source``).

    >>> rates = JudgeRates(0.95, 0.8, "cal.json")
    >>> str(rates)
    'sensitivity 95%, specificity 80% (from cal.json)'
    >>> rates.to_dict()
    {'sensitivity': 0.95, 'specificity': 0.8, 'source': 'cal.json'}
    """

    sensitivity: float
    specificity: float
    source: str

    def __str__(self) -> str:
        return (
            f"sensitivity {self.sensitivity * 100:.4g}%, "
            f"specificity {self.specificity * 100:.4g}% (from {self.source})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The two rates and their source as a JSON object."""
        return {"sensitivity": self.sensitivity, "specificity": self.specificity,
                "source": self.source}  # fmt: skip


def judge_rates(
    sensitivity: float | None = None,
    specificity: float | None = None,
    calibration: str | Path | None = None,
) -> JudgeRates | None:
    """The imperfect judge a plan is for: given as its two rates, or read from a saved
    calibration (:func:`judge_rates_from_calibration`); None for a perfect judge.

    >>> judge_rates(0.9, 0.8)
    JudgeRates(sensitivity=0.9, specificity=0.8, source='options')
    >>> judge_rates() is None
    True
    >>> judge_rates(0.9)
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: specificity: an imperfect judge needs both its sensitivity and ...
    """
    given = sensitivity is not None or specificity is not None
    if calibration is not None and given:
        raise InputError("give a calibration or the judge's two rates, not both",
                         field="calibration")  # fmt: skip
    if calibration is not None:
        return judge_rates_from_calibration(calibration)
    if not given:
        return None
    if sensitivity is None or specificity is None:
        raise InputError("an imperfect judge needs both its sensitivity and its specificity",
                         field="sensitivity" if sensitivity is None else "specificity")  # fmt: skip
    return JudgeRates(sensitivity, specificity, "options")


def judge_rates_from_calibration(path: str | Path) -> JudgeRates:
    """The judge's sensitivity and specificity from a saved calibration (``Calibration.save``).

    Raises :class:`~tinyeval.errors.InputError` (with ``path``) when the
    calibration has no parsed case a human labelled PASS, or none labelled
    FAIL, so that one of the two is unknown; and whatever
    :func:`~tinyeval.calibration.load_calibration` raises for the file.

    >>> import os, tempfile
    >>> from tinyeval.calibration import calibrate
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     saved = os.path.join(tmp, "cal.json")
    ...     judge, human = ["PASS", "PASS", "FAIL", "PASS"], ["PASS", "PASS", "FAIL", "FAIL"]
    ...     calibrate(judge, human).save(saved)
    ...     rates = judge_rates_from_calibration(saved)
    >>> rates.sensitivity, rates.specificity
    (1.0, 0.5)
    """
    from .calibration import load_calibration

    calibration = load_calibration(path)
    sensitivity, specificity = calibration.sensitivity, calibration.specificity
    if sensitivity is None or specificity is None:
        missing = "PASS" if sensitivity is None else "FAIL"
        raise InputError(
            f"the calibration has no parsed case labelled {missing}, so the judge's "
            "sensitivity and specificity are not both known",
            path=str(path),
        )
    return JudgeRates(sensitivity.value, specificity.value, str(path))


# === The sentences ===


def wilson_sentence(successes: int, n: int, confidence: float = 0.95) -> Sentence:
    """``successes`` of ``n`` with its Wilson interval, in one sentence.

    >>> print(wilson_sentence(13, 13))
    13/13 = 100.0%; 95% Wilson interval 77.2%–100.0%.
    >>> said = wilson_sentence(27, 30, confidence=0.9)
    >>> said.fields["rate"], str(said)
    (0.9, '27/30 = 90.0%; 90% Wilson interval 77.4%–95.9%.')

    Raises :class:`~tinyeval.stats.StatisticsError` for the input
    :func:`~tinyeval.stats.wilson_interval` refuses (and its subclass
    ``UndefinedStatisticError`` for ``n = 0``).
    """
    low, high = stats.wilson_interval(successes, n, confidence)
    rate = successes / n
    text = (
        f"{successes}/{n} = {rate:.1%}; {_percent(confidence)} Wilson interval "
        f"{low:.1%}–{high:.1%}."
    )
    fields = {"statistic": "wilson", "successes": successes, "n": n, "rate": rate,
              "confidence": confidence, "low": low, "high": high}  # fmt: skip
    return Sentence(text, fields)


def sample_size_sentence(
    baseline: float,
    target: float,
    *,
    alpha: float = 0.05,
    power: float = 0.80,
    continuity: bool = False,
    sensitivity: float | None = None,
    specificity: float | None = None,
    judge_source: str | None = None,
) -> Sentence:
    """The cases per run needed to detect a change from ``baseline`` to ``target``.

    The figure is :func:`~tinyeval.stats.sample_size`; with a judge's
    ``sensitivity`` and ``specificity`` (``judge_source`` says where they were
    read, and is kept in the fields) the sentence also says how many cases the
    judge's errors cost against a perfect judge.

    >>> print(sample_size_sentence(0.90, 0.85))
    To detect a drop from 90% to 85% with 80% power at α = 0.05 you need 686 cases per run.
    >>> said = sample_size_sentence(0.90, 0.85, sensitivity=0.95, specificity=0.80)
    >>> said.fields["n"], said.fields["n_perfect_judge"]
    (1373, 686)
    >>> print(said.text.split(": ")[1])
    the judge (sensitivity 95%, specificity 80%) shrinks every true difference by (sensitivity + specificity − 1) = 0.75, which costs 687 cases more than the 686 a perfect judge would need.

    Raises :class:`~tinyeval.stats.StatisticsError` for the input
    :func:`~tinyeval.stats.sample_size` refuses.
    """  # noqa: E501
    judge = _judge(sensitivity, specificity)
    needed = stats.sample_size(baseline, target, alpha=alpha, power=power, continuity=continuity,
                               sensitivity=sensitivity, specificity=specificity)  # fmt: skip
    text = (
        f"To detect {_change(baseline, target)} with {_percent(power)} power at "
        f"{_alpha(alpha)} you need {needed} cases per run{_correction(continuity)}."
    )
    fields = _plan("sample-size", baseline, target, alpha, continuity, judge, judge_source)
    fields.update(power=power, n=needed)
    if judge is not None:
        perfect = stats.sample_size(baseline, target, alpha=alpha, power=power,
                                    continuity=continuity)  # fmt: skip
        text = text.removesuffix(".") + (
            f": {_shrink(judge)}, which costs {needed - perfect} cases more "
            f"than the {perfect} a perfect judge would need."
        )
        fields["n_perfect_judge"] = perfect
    return Sentence(text, fields)


def power_sentence(
    baseline: float,
    target: float,
    n: int,
    *,
    alpha: float = 0.05,
    continuity: bool = False,
    sensitivity: float | None = None,
    specificity: float | None = None,
    judge_source: str | None = None,
) -> Sentence:
    """The chance that ``n`` cases per run detect a change, and the cases 80% power needs.

    The figures are :func:`~tinyeval.stats.power` and
    :func:`~tinyeval.stats.sample_size`; with a judge's ``sensitivity`` and
    ``specificity`` the sentence also gives a perfect judge's figures.

    >>> print(power_sentence(0.90, 0.85, 200))
    With 200 cases per run, a drop from 90% to 85% is detected with 32.7% power at α = 0.05; 80% power needs 686 cases per run.
    >>> judged = power_sentence(0.90, 0.85, 686, sensitivity=0.95, specificity=0.80)
    >>> round(judged.fields["power"], 3), judged.fields["n_for_80_percent"]
    (0.508, 1373)

    Raises :class:`~tinyeval.stats.StatisticsError` for the input
    :func:`~tinyeval.stats.power` refuses.
    """  # noqa: E501
    judge = _judge(sensitivity, specificity)
    chance = stats.power(baseline, target, n, alpha=alpha, continuity=continuity,
                         sensitivity=sensitivity, specificity=specificity)  # fmt: skip
    needed = stats.sample_size(baseline, target, alpha=alpha, continuity=continuity,
                               sensitivity=sensitivity, specificity=specificity)  # fmt: skip
    text = (
        f"With {n} cases per run, {_change(baseline, target)} is detected with {chance:.1%} "
        f"power at {_alpha(alpha)}{_correction(continuity)}; 80% power needs {needed} cases "
        "per run."
    )
    fields = _plan("power", baseline, target, alpha, continuity, judge, judge_source)
    fields.update(n=n, power=chance, n_for_80_percent=needed)
    if judge is not None:
        perfect = stats.power(baseline, target, n, alpha=alpha, continuity=continuity)
        perfect_n = stats.sample_size(baseline, target, alpha=alpha, continuity=continuity)
        text += (
            f" {_capital(_shrink(judge))}: a perfect judge would detect it with {perfect:.1%} "
            f"power, and 80% power costs {needed - perfect_n} cases more than its {perfect_n}."
        )
        fields.update(power_perfect_judge=perfect, n_for_80_percent_perfect_judge=perfect_n)
    return Sentence(text, fields)


def detectable_sentence(
    baseline: float,
    n: int,
    *,
    alpha: float = 0.05,
    power: float = 0.80,
    continuity: bool = False,
    sensitivity: float | None = None,
    specificity: float | None = None,
    judge_source: str | None = None,
) -> Sentence:
    """The smallest drop below ``baseline`` that ``n`` cases per run detect, in one sentence.

    The figure is :func:`~tinyeval.stats.detectable_difference`. Too few
    cases to detect even a drop to 0% is said in words (``drop`` and
    ``target`` are then None), not raised. With a judge's ``sensitivity``
    and ``specificity`` the sentence also gives the drop a perfect judge
    would detect, and the cases this judge needs to detect it too.

    >>> print(detectable_sentence(0.90, 40))
    With 40 cases per run and a 90% baseline, the smallest drop you can detect with 80% power at α = 0.05 is to 64.0% (26.0 points).
    >>> detectable_sentence(0.90, 2).fields["drop"] is None
    True
    >>> judged = detectable_sentence(0.90, 500, sensitivity=5 / 6, specificity=1.0)
    >>> print(judged.text.split(". ")[1])
    The judge (sensitivity 83.33%, specificity 100%) shrinks every true difference by (sensitivity + specificity − 1) = 0.833; a perfect judge would detect a drop of 5.9 points, which through this judge takes 1273 cases per run (773 more).

    Raises :class:`~tinyeval.stats.StatisticsError` for the input
    :func:`~tinyeval.stats.detectable_difference` refuses.
    """  # noqa: E501

    judge = _judge(sensitivity, specificity)

    def smallest(se: float | None, sp: float | None) -> float | None:
        try:
            return stats.detectable_difference(baseline, n, alpha=alpha, power=power,
                                               continuity=continuity, sensitivity=se,
                                               specificity=sp)  # fmt: skip
        except stats.UndefinedStatisticError:
            return None  # too few cases: said in words rather than as an error

    drop = smallest(sensitivity, specificity)
    opening = (
        f"With {n} cases per run and a {_percent(baseline)} baseline, the smallest drop you "
        f"can detect with {_percent(power)} power at {_alpha(alpha)}{_correction(continuity)}"
    )
    if drop is None:
        text = f"{opening} does not exist: not even a drop to 0% is detected reliably."
    else:
        text = f"{opening} is to {baseline - drop:.1%} ({drop * 100:.1f} points)."
    fields = _plan("detectable", baseline, None, alpha, continuity, judge, judge_source)
    fields.update(n=n, power=power, drop=drop, target=None if drop is None else baseline - drop)
    if judge is not None:
        perfect = smallest(None, None)
        text += f" {_capital(_shrink(judge))}"
        if perfect is None:
            text += "; not even a perfect judge would detect a drop reliably here."
        else:
            through = stats.sample_size(baseline, baseline - perfect, alpha=alpha, power=power,
                                        continuity=continuity, sensitivity=judge[0],
                                        specificity=judge[1])  # fmt: skip
            text += (
                f"; a perfect judge would detect a drop of {perfect * 100:.1f} points, which "
                f"through this judge takes {through} cases per run ({through - n} more)."
            )
            fields["n_for_perfect_judge_drop"] = through
        fields["drop_perfect_judge"] = perfect
    return Sentence(text, fields)


def mcnemar_sentence(b: int, c: int, alpha: float = 0.05) -> Sentence:
    """The exact McNemar test of two runs over the same cases, in one sentence.

    ``b`` cases went from pass to fail and ``c`` from fail to pass; the
    p-value is :func:`~tinyeval.stats.mcnemar`, and the difference is called
    significant when it is below ``alpha``.

    >>> print(mcnemar_sentence(12, 3))
    12 cases went from pass to fail and 3 from fail to pass (exact McNemar p = 0.035): a split at least this lopsided happens by chance in 3.5% of comparisons between equally good runs, so the second run is worse at α = 0.05.
    >>> mcnemar_sentence(0, 0).fields["p_value"]
    1.0

    Raises :class:`~tinyeval.errors.InputError` (field ``alpha``) when
    ``alpha`` is not strictly between 0 and 1, and
    :class:`~tinyeval.stats.StatisticsError` for counts
    :func:`~tinyeval.stats.mcnemar` refuses.
    """  # noqa: E501
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < alpha < 1.0:
        raise InputError(f"must be between 0 and 1 (exclusive), got {alpha!r}", field="alpha")
    p = stats.mcnemar(b, c)
    significant = p < alpha
    if b + c == 0:
        text = (
            "No case changed outcome between the two runs (exact McNemar p = 1.000), "
            "so there is no evidence of a difference."
        )
    else:
        shown = f"p = {p:.3f}" if p >= 0.001 else "p < 0.001"
        chance = f"{p:.1%}" if p >= 0.001 else "under 0.1%"
        verdict = (
            f"so the second run is {'worse' if b > c else 'better'}"
            if significant
            else "so this is no evidence of a difference"
        )
        text = (
            f"{b} cases went from pass to fail and {c} from fail to pass "
            f"(exact McNemar {shown}): a split at least this lopsided happens by chance "
            f"in {chance} of comparisons between equally good runs, {verdict} at "
            f"{_alpha(alpha)}."
        )
    fields = {"statistic": "mcnemar", "b": b, "c": c, "p_value": p, "alpha": alpha,
              "significant": significant}  # fmt: skip
    return Sentence(text, fields)


# === Wording ===


def _percent(p: float) -> str:
    """A rate as a person types it: 0.9 → '90%', 0.875 → '87.5%'."""
    return f"{p * 100:.10g}%"


def _alpha(alpha: float) -> str:
    return f"α = {alpha:g}"


def _change(baseline: float, target: float) -> str:
    direction = "drop" if target < baseline else "rise"
    return f"a {direction} from {_percent(baseline)} to {_percent(target)}"


def _correction(continuity: bool) -> str:
    return " (with Fleiss' continuity correction)" if continuity else ""


def _judge(sensitivity: float | None, specificity: float | None) -> tuple[float, float] | None:
    """The judge's two rates when both are given (the statistics refuse one alone)."""
    return None if sensitivity is None or specificity is None else (sensitivity, specificity)


def _shrink(judge: tuple[float, float]) -> str:
    """The clause saying how the judge shrinks every true difference."""
    se, sp = judge
    return (
        f"the judge (sensitivity {se * 100:.4g}%, specificity {sp * 100:.4g}%) shrinks every "
        f"true difference by (sensitivity + specificity − 1) = {se + sp - 1:.3g}"
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _plan(
    statistic: str,
    baseline: float,
    target: float | None,
    alpha: float,
    continuity: bool,
    judge: tuple[float, float] | None,
    judge_source: str | None,
) -> dict[str, Any]:
    """The fields every planning sentence starts with: its settings, and the judge if any."""
    plan: dict[str, Any] = {"statistic": statistic, "baseline": baseline, "alpha": alpha,
                            "continuity": continuity}  # fmt: skip
    if target is not None:
        plan["target"] = target
    if judge is not None:
        plan.update(sensitivity=judge[0], specificity=judge[1], judge_source=judge_source)
    return plan
