"""``tinyeval stats``: intervals, sample sizes, power and McNemar, each said in one sentence
for a pull request (or as JSON: the figures behind the sentence)."""

from __future__ import annotations

import argparse
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import stats
from ..errors import InputError
from ..gating import parse_threshold
from ._common import EXIT_OK, UsageError, print_json

Judge = tuple[float, float] | None  # a judge's (sensitivity, specificity); None is perfect


def add_stats(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="intervals, sample sizes, power and paired tests, in sentences for a pull request",
        description="Answer the statistical questions behind an eval in one sentence each: "
        "how sure a pass rate is, how many cases a suite needs, what it can detect, and "
        "whether two runs over the same cases really differ.",
    )
    which = p.add_subparsers(dest="statistic", metavar="STATISTIC")
    which.required = True

    w = which.add_parser("wilson", help="the Wilson interval for K passes out of N cases")
    w.add_argument("successes", metavar="K", help="cases that passed")
    w.add_argument("n", metavar="N", help="cases in total")
    _add_options(w, "--confidence")
    w.set_defaults(say=wilson_sentence, counts={"successes": "K", "n": "N"})

    s = which.add_parser("sample-size", help="cases per run needed to detect a drop")
    _add_options(s, "--baseline", "--target", *_PLAN, "--power")
    s.set_defaults(say=sample_size_sentence)

    pw = which.add_parser("power", help="the chance that N cases per run detect a drop")
    _add_options(pw, "--baseline", "--target", *_PLAN, "--n")
    pw.set_defaults(say=power_sentence)

    d = which.add_parser("detectable", help="the smallest drop N cases per run can detect")
    _add_options(d, "--baseline", *_PLAN, "--n", "--power")
    d.set_defaults(say=detectable_sentence)

    m = which.add_parser("mcnemar", help="exact McNemar test for two runs over the same cases")
    m.add_argument("b", metavar="B", help="cases that went from pass to fail")
    m.add_argument("c", metavar="C", help="cases that went from fail to pass")
    _add_options(m, "--alpha significance level (default: 0.05)")
    m.set_defaults(say=mcnemar_sentence, counts={"b": "B", "c": "C"})

    for each in (w, s, pw, d, m):
        _add_options(each, "--json")
        each.set_defaults(handler=_cmd_stats)


_OPTIONS: dict[str, dict[str, Any]] = {
    "--baseline": {"required": True, "help": "today's pass rate: 0.90 or 90%%"},
    "--target": {"required": True, "help": "the pass rate to detect: 0.85 or 85%%"},
    "--alpha": {"default": "0.05", "help": "two-sided significance level (default: 0.05)"},
    "--continuity": {
        "action": "store_true",
        "help": "apply Fleiss' continuity correction (a more conservative plan)",
    },
    "--sensitivity": {
        "help": "the judge's sensitivity, P(judge PASS | truly PASS): plan for an imperfect judge"
    },
    "--specificity": {
        "help": "the judge's specificity, P(judge FAIL | truly FAIL); give it with --sensitivity"
    },
    "--calibration": {
        "metavar": "CAL.json",
        "help": "take the judge's sensitivity and specificity from a saved calibration "
        "(tinyeval calibrate --save)",
    },
    "--n": {"required": True, "help": "cases per run"},
    "--power": {"default": "0.80", "help": "chance of detecting the drop (default: 0.80)"},
    "--confidence": {"default": "0.95", "help": "confidence level (default: 0.95)"},
    "--json": {"action": "store_true", "help": "print one JSON object"},
}
"""Each option of ``tinyeval stats``, declared once."""
_PLAN = ("--alpha", "--continuity", "--sensitivity", "--specificity", "--calibration")


def _add_options(p: argparse.ArgumentParser, *options: str) -> None:
    """Add options from ``_OPTIONS``; text after a flag's space replaces its help."""
    for option in options:
        flag, _, about = option.partition(" ")
        p.add_argument(flag, **{**_OPTIONS[flag], **({"help": about} if about else {})})


def _stats_whole(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{what} must be a whole number, got {text!r}") from None


def _stats_rate(text: str, what: str) -> float:
    try:
        return parse_threshold(text)
    except InputError:
        raise UsageError(f"{what} must be a proportion such as 0.9 or 90%, got {text!r}") from None


def _cmd_stats(args: argparse.Namespace) -> int:
    """Each subcommand's options as typed, checked, into its sentence function ``args.say``."""
    counts = getattr(args, "counts", {})
    values: dict[str, Any] = {d: _stats_whole(getattr(args, d), w) for d, w in counts.items()}
    for name in ("baseline", "alpha", "target", "power", "confidence"):
        if hasattr(args, name):
            values[name] = _stats_rate(getattr(args, name), f"--{name}")
    if hasattr(args, "continuity"):
        values.update(_judge_options(args), continuity=args.continuity)
    if hasattr(args, "n") and "n" not in counts:
        values["n"] = _stats_whole(args.n, "--n")
    said = args.say(**values)
    if args.json:
        print_json(said.to_dict())
    else:
        print(said)
    return EXIT_OK


def _judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """The judge's sensitivity, specificity and where they came from (None when perfect)."""
    se, sp = (
        None if getattr(args, name) is None else _stats_rate(getattr(args, name), f"--{name}")
        for name in ("sensitivity", "specificity")
    )
    if args.calibration is not None and (se is not None or sp is not None):
        raise InputError(
            "give a calibration or the judge's two rates, not both", field="calibration"
        )
    source = None
    if args.calibration is not None:
        se, sp = judge_rates_from_calibration(args.calibration)
        source = args.calibration
    elif (se is None) != (sp is None):
        raise InputError(
            "an imperfect judge needs both its sensitivity and its specificity",
            field="sensitivity" if se is None else "specificity",
        )
    elif se is not None:
        source = "options"
    return {"sensitivity": se, "specificity": sp, "judge_source": source}


# ---------------------------------------------------------------- the sentences


def judge_rates_from_calibration(path: str | Path) -> tuple[float, float]:
    """The judge's sensitivity and specificity from a saved calibration."""
    from ..calibration import load_calibration

    calibration = load_calibration(path)
    sensitivity, specificity = calibration.sensitivity, calibration.specificity
    if sensitivity is None or specificity is None:
        missing = "PASS" if sensitivity is None else "FAIL"
        raise InputError(
            f"the calibration has no parsed case labelled {missing}, so the judge's "
            "sensitivity and specificity are not both known",
            path=str(path),
        )
    return sensitivity.value, specificity.value


@dataclass(frozen=True)
class Sentence:
    """A statistic said in one sentence (``str()``), with the figures behind it (``fields``)."""

    text: str
    fields: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """The fields, and the text under ``"sentence"`` (``tinyeval stats … --json``)."""
        return {**self.fields, "sentence": self.text}


def wilson_sentence(successes: int, n: int, confidence: float = 0.95) -> Sentence:
    """``successes`` of ``n`` with its Wilson interval.

    >>> print(wilson_sentence(27, 30))
    27/30 = 90.0%; 95% Wilson interval 74.4%–96.5%.
    """
    low, high = stats.wilson_interval(successes, n, confidence)
    rate = successes / n
    interval = f"{_percent(confidence)} Wilson interval {low:.1%}–{high:.1%}"
    text = f"{successes}/{n} = {rate:.1%}; {interval}."
    fields = {
        "statistic": "wilson",
        "successes": successes,
        "n": n,
        "rate": rate,
        "confidence": confidence,
        "low": low,
        "high": high,
    }
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
    """The cases per run that detect ``baseline`` → ``target``, and what the judge costs."""
    judge = _judge(sensitivity, specificity)
    plan: dict[str, Any] = {"alpha": alpha, "power": power, "continuity": continuity}
    needed = stats.sample_size(
        baseline, target, **plan, sensitivity=sensitivity, specificity=specificity
    )
    text = (
        f"To detect {_change(baseline, target)} with {_percent(power)} power at "
        f"α = {alpha:g} you need {needed} cases per run{_correction(continuity)}."
    )
    fields = _plan("sample-size", baseline, target, alpha, continuity, judge, judge_source)
    fields.update(power=power, n=needed)
    if judge is not None:
        perfect = stats.sample_size(baseline, target, **plan)
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
    """The chance that ``n`` cases per run detect a change, and the cases 80% power needs."""
    judge = _judge(sensitivity, specificity)
    plan: dict[str, Any] = {"alpha": alpha, "continuity": continuity}
    rates: dict[str, Any] = {"sensitivity": sensitivity, "specificity": specificity}
    chance = stats.power(baseline, target, n, **plan, **rates)
    needed = stats.sample_size(baseline, target, **plan, **rates)
    text = (
        f"With {n} cases per run, {_change(baseline, target)} is detected with {chance:.1%} "
        f"power at α = {alpha:g}{_correction(continuity)}; 80% power needs {needed} cases "
        "per run."
    )
    fields = _plan("power", baseline, target, alpha, continuity, judge, judge_source)
    fields.update(n=n, power=chance, n_for_80_percent=needed)
    if judge is not None:
        perfect = stats.power(baseline, target, n, **plan)
        perfect_n = stats.sample_size(baseline, target, **plan)
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
    """The smallest drop below ``baseline`` that ``n`` cases per run detect (or None)."""
    judge = _judge(sensitivity, specificity)
    plan: dict[str, Any] = {"alpha": alpha, "power": power, "continuity": continuity}

    def smallest(se: float | None, sp: float | None) -> float | None:
        try:
            return stats.detectable_difference(baseline, n, **plan, sensitivity=se, specificity=sp)
        except stats.UndefinedStatisticError:
            return None  # too few cases: said in words rather than as an error

    drop = smallest(sensitivity, specificity)
    opening = (
        f"With {n} cases per run and a {_percent(baseline)} baseline, the smallest drop you "
        f"can detect with {_percent(power)} power at α = {alpha:g}{_correction(continuity)}"
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
            through = stats.sample_size(
                baseline, baseline - perfect, **plan, sensitivity=judge[0], specificity=judge[1]
            )
            text += (
                f"; a perfect judge would detect a drop of {perfect * 100:.1f} points, which "
                f"through this judge takes {through} cases per run ({through - n} more)."
            )
            fields["n_for_perfect_judge_drop"] = through
        fields["drop_perfect_judge"] = perfect
    return Sentence(text, fields)


def mcnemar_sentence(b: int, c: int, alpha: float = 0.05) -> Sentence:
    """The exact McNemar test of two runs (``b`` pass → fail, ``c`` fail → pass)."""
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
            f"in {chance} of comparisons between equally good runs, {verdict} at α = {alpha:g}."
        )
    fields = {
        "statistic": "mcnemar",
        "b": b,
        "c": c,
        "p_value": p,
        "alpha": alpha,
        "significant": significant,
    }
    return Sentence(text, fields)


def _percent(p: float) -> str:
    """A rate as a person types it: 0.9 → '90%', 0.875 → '87.5%'."""
    return f"{p * 100:.10g}%"


def _change(baseline: float, target: float) -> str:
    direction = "drop" if target < baseline else "rise"
    return f"a {direction} from {_percent(baseline)} to {_percent(target)}"


def _correction(continuity: bool) -> str:
    return " (with Fleiss' continuity correction)" if continuity else ""


def _judge(sensitivity: float | None, specificity: float | None) -> Judge:
    return None if sensitivity is None or specificity is None else (sensitivity, specificity)


def _shrink(judge: tuple[float, float]) -> str:
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
    judge: Judge,
    judge_source: str | None,
) -> dict[str, Any]:
    """The fields every planning sentence starts with: its settings, and the judge if any."""
    plan: dict[str, Any] = {
        "statistic": statistic,
        "baseline": baseline,
        "alpha": alpha,
        "continuity": continuity,
    }
    if target is not None:
        plan["target"] = target
    if judge is not None:
        plan.update(sensitivity=judge[0], specificity=judge[1], judge_source=judge_source)
    return plan
