"""``tinyeval stats``: each statistic in one sentence (``--json``: its figures), by ``stats``."""

from __future__ import annotations

import argparse
import inspect
import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import stats
from ..errors import InputError
from ..gating import parse_threshold
from ._common import EXIT_OK, UsageError, print_json

Clusters = tuple[float, float] | None  # (mean cluster size, intra-cluster correlation)

_OPTIONS = {
    "baseline": "today's pass rate: 0.90 or 90%%",
    "target": "the pass rate to detect: 0.85 or 85%%",
    "alpha": "two-sided significance level",
    "continuity": "apply Fleiss' continuity correction (a more conservative plan)",
    "sensitivity": "the judge's sensitivity, P(judge PASS | truly PASS): for an imperfect judge",
    "specificity": "the judge's specificity, P(judge FAIL | truly FAIL): with --sensitivity",
    "calibration": "take the judge's sensitivity and specificity from a saved calibration "
    "(tinyeval calibrate --save)",
    "paired": "plan for McNemar's test on runs over the same cases (Connor 1987)",
    "discordance": "with --paired: the share of cases expected to change outcome",
    "cluster_size": "cases share documents, conversations or users in clusters of M on average",
    "icc": "with --cluster-size: the intra-cluster correlation of outcomes",
    "n": "cases per run",
    "power": "chance of detecting the change",
    "confidence": "confidence level",
}
_COUNTS = {  # a sentence of counts alone takes them as positional arguments
    "successes": ("K", "cases that passed"),
    "n": ("N", "cases in total"),
    "b": ("B", "cases that went from pass to fail"),
    "c": ("C", "cases that went from fail to pass"),
}
_SPELLED = {  # a sentence's parameter given as other options, and their kinds
    "judge_source": {"calibration": "path"},
    "discordance": {"paired": "bool", "discordance": "float"},
    "clusters": {"cluster_size": "number", "icc": "float"},
}
_METAVARS = {"calibration": "CAL.json", "cluster_size": "M"}
_TOGETHER = {  # a setting that needs another: that other, and why
    "discordance": ("paired", "a paired plan needs both --paired and --discordance"),
    "icc": ("cluster_size", "clusters need both --cluster-size and --icc"),
    "specificity": ("sensitivity", "an imperfect judge needs both its sensitivity and specificity"),
}
_Z_TEST = "two-proportion z-test (runs on different cases)"
_MCNEMAR = "McNemar's test (runs over the same cases)"
_SIZE, _DETECT, _PAIRED = stats.sample_size, stats.detectable_difference, stats.paired_sample_size
_KINDS = {"int": (int, "a whole number"), "number": (float, "a number")}  # else a rate


def add_stats(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="intervals, sample sizes, power and paired tests, in sentences for a pull request",
        description="Answer the statistical questions behind an eval in one sentence each: "
        "how sure a pass rate is, how many cases a suite needs, what it can detect, and "
        "whether two runs over the same cases really differ.",
    )
    which = p.add_subparsers(dest="statistic", metavar="STATISTIC", required=True)
    for say, plan in _COMMANDS.items():
        name = say.__name__.removesuffix("_sentence").replace("_", "-")
        about = str(say.__doc__).partition("\n")[0].replace("%", "%%")
        each = which.add_parser(name, help=about)
        kinds = {}
        required = [p for p in _parameters(say, None) if p.default is p.empty]
        for parameter in _parameters(say, plan):
            if parameter in required and all(p.annotation == "int" for p in required):
                metavar, about = _COUNTS[parameter.name]
                each.add_argument(parameter.name, metavar=metavar, help=about)
                kinds[parameter.name] = ("int", metavar)
                continue
            spelled = _SPELLED.get(parameter.name, {parameter.name: parameter.annotation})
            for option, kind in spelled.items():
                flag, about = "--" + option.replace("_", "-"), _OPTIONS[option]
                kinds[option] = (kind, flag)
                if kind == "bool":
                    each.add_argument(flag, action="store_true", help=about)
                    continue
                if isinstance(parameter.default, float):
                    about += f" (default: {parameter.default:g})"
                needed = parameter.default is parameter.empty
                each.add_argument(flag, help=about, required=needed, metavar=_METAVARS.get(option))
        each.add_argument("--json", action="store_true", help="print one JSON object")
        each.set_defaults(handler=_cmd_stats, say=say, kinds=kinds)


def _parameters(say: Any, plan: Any) -> list[inspect.Parameter]:
    own = [p for p in inspect.signature(say).parameters.values() if p.kind != p.VAR_KEYWORD]
    settings = inspect.signature(plan).parameters.values() if plan else []
    return own + [p for p in settings if p.kind == p.KEYWORD_ONLY]


def _cmd_stats(args: argparse.Namespace) -> int:
    values = {
        name: _value(kind, getattr(args, name), what)
        for name, (kind, what) in args.kinds.items()
        if getattr(args, name) not in (None, False)
    }
    if "calibration" in args.kinds:  # where the judge's rates come from
        path = values.pop("calibration", None)
        values["judge_source"] = "options" if {"sensitivity", "specificity"} & set(values) else None
        if path is not None and values["judge_source"]:
            raise InputError(
                "give a calibration or the judge's two rates, not both", field="calibration"
            )
        if path is not None:
            values["sensitivity"], values["specificity"] = judge_rates_from_calibration(path)
            values["judge_source"] = str(path)
    for second, (first, reason) in _TOGETHER.items():
        if (first in values) != (second in values):
            raise InputError(reason, field=second if first in values else first)
    values.pop("paired", None)
    if "icc" in values:
        values["clusters"] = (values.pop("cluster_size"), values.pop("icc"))
    said = args.say(**values)
    if args.json:
        print_json(said.to_dict())
    else:
        print(said)
    return EXIT_OK


def _value(kind: str, text: Any, what: str) -> Any:
    if kind in ("bool", "path"):
        return text
    convert, expected = _KINDS.get(kind, (parse_threshold, "a proportion such as 0.9 or 90%"))
    try:
        return convert(text)
    except (ValueError, InputError):
        raise UsageError(f"{what} must be {expected}, got {text!r}") from None


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
    """A statistic in one sentence (``str()``), with the figures behind it."""

    text: str
    fields: dict[str, Any]

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {**self.fields, "sentence": self.text}


def wilson_sentence(
    successes: int, n: int, confidence: float = 0.95, *, clusters: Clusters = None
) -> Sentence:
    """The Wilson interval for K passes out of N cases.

    >>> print(wilson_sentence(27, 30))
    27/30 = 90.0%; 95% Wilson interval 74.4%–96.5%.
    """
    effect, fields, said = _clusters(clusters)
    low, high = stats.wilson_interval(successes, n, confidence, design_effect=effect)
    text = f"{successes}/{n} = {successes / n:.1%}; {_percent(confidence)} Wilson interval "
    text += f"{low:.1%}–{high:.1%}"
    if fields:
        text += f" {said}: as sure as {n / effect:.1f} independent cases"
    fields.update(statistic="wilson", successes=successes, n=n, rate=successes / n)
    return Sentence(text + ".", {**fields, "confidence": confidence, "low": low, "high": high})


def sample_size_sentence(
    baseline: float,
    target: float,
    *,
    discordance: float | None = None,
    clusters: Clusters = None,
    judge_source: str | None = None,
    **plan: Any,
) -> Sentence:
    """Cases per run needed to detect a change (--paired: over the same cases).

    >>> print(sample_size_sentence(0.9, 0.85))
    To detect a drop from 90% to 85% with 80% power at α = 0.05 you need 686 cases per run. \
Test: two-proportion z-test (runs on different cases).
    """
    if discordance is None:
        needed, fields = _plan("sample-size", judge_source, _SIZE, baseline, target, **plan)
        text = f"you need {needed} cases per run{_correction(fields)}"
    else:
        if any(value for key, value in plan.items() if key not in ("alpha", "power")):
            raise InputError(
                "the paired plan is for the verdicts as judged: give the discordance they "
                "show, without a judge's rates or the continuity correction",
                field="paired",
            )
        paired = {key: plan[key] for key in ("alpha", "power") if key in plan}
        difference = round(target - baseline, 12)
        needed, fields = _plan("sample-size", None, _PAIRED, difference, discordance, **paired)
        fields.update(test=_MCNEMAR, baseline=baseline, target=target)
        text = (
            f"you need {needed} paired cases when {_percent(discordance)} of cases change "
            "outcome (Connor 1987)"
        )
    text = (
        f"To detect {_change(baseline, target)} with {_percent(fields['power'])} power at "
        f"α = {fields['alpha']:g} {text}"
    )
    if "sensitivity" in fields:
        perfect = fields["n_perfect_judge"] = stats.sample_size(baseline, target, **_perfect(plan))
        text += (
            f": {_shrink(fields)}, which costs {needed - perfect} cases more than the "
            f"{perfect} a perfect judge would need"
        )
    effect, clustered, said = _clusters(clusters)
    if clustered:
        inflated = math.ceil(needed * effect)
        text += f"; {said} that is {inflated} cases"
        fields.update(clustered, n_without_clusters=needed)
        needed = inflated
    return Sentence(f"{text}. Test: {fields['test']}.", {**fields, "n": needed})


def power_sentence(
    baseline: float, target: float, n: int, *, judge_source: str | None = None, **plan: Any
) -> Sentence:
    """The chance that N cases per run detect a change, and the cases 80% power needs."""
    chance, fields = _plan("power", judge_source, stats.power, baseline, target, n, **plan)
    needed = stats.sample_size(baseline, target, **plan)
    text = (
        f"With {n} cases per run, {_change(baseline, target)} is detected with {chance:.1%} "
        f"power at α = {fields['alpha']:g}{_correction(fields)}; 80% power needs {needed} "
        "cases per run."
    )
    fields.update(power=chance, n_for_80_percent=needed)
    if "sensitivity" in fields:
        perfect = stats.power(baseline, target, n, **_perfect(plan))
        perfect_n = stats.sample_size(baseline, target, **_perfect(plan))
        text += (
            f" {_shrink(fields, 'The')}: a perfect judge would detect it with {perfect:.1%} "
            f"power, and 80% power costs {needed - perfect_n} cases more than its {perfect_n}."
        )
        fields.update(power_perfect_judge=perfect, n_for_80_percent_perfect_judge=perfect_n)
    return Sentence(f"{text} Test: {fields['test']}.", fields)


def detectable_sentence(
    baseline: float, n: int, *, judge_source: str | None = None, **plan: Any
) -> Sentence:
    """The smallest drop N cases per run can detect."""
    drop, fields = _plan("detectable", judge_source, _DETECT, baseline, n, **plan)
    text = (
        f"With {n} cases per run and a {_percent(baseline)} baseline, the smallest drop you can "
        f"detect with {_percent(fields['power'])} power at α = {fields['alpha']:g}"
        f"{_correction(fields)}"
    )
    if drop is None:
        text += " does not exist: not even a drop to 0% is detected reliably."
    else:
        text += f" is to {baseline - drop:.1%} ({drop * 100:.1f} points)."
    fields.update(drop=drop, target=None if drop is None else baseline - drop)
    if "sensitivity" in fields:
        perfect, _ = _plan("detectable", None, _DETECT, baseline, n, **_perfect(plan))
        fields["drop_perfect_judge"] = perfect
        text += f" {_shrink(fields, 'The')}"
        if perfect is None:
            text += "; not even a perfect judge would detect a drop reliably here."
        else:
            through = stats.sample_size(baseline, baseline - perfect, **plan)
            text += (
                f"; a perfect judge would detect a drop of {perfect * 100:.1f} points, which "
                f"through this judge takes {through} cases per run ({through - n} more)."
            )
            fields["n_for_perfect_judge_drop"] = through
    return Sentence(f"{text} Test: {fields['test']}.", fields)


def mcnemar_sentence(b: int, c: int, alpha: float = 0.05) -> Sentence:
    """The exact McNemar test for two runs over the same cases (B pass → fail, C back)."""
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
    fields = {"statistic": "mcnemar", "b": b, "c": c, "p_value": p, "alpha": alpha}
    return Sentence(text, {**fields, "significant": significant})


def _percent(p: float) -> str:
    return f"{p * 100:.10g}%"


def _change(baseline: float, target: float) -> str:
    direction = "drop" if target < baseline else "rise"
    return f"a {direction} from {_percent(baseline)} to {_percent(target)}"


def _correction(fields: dict[str, Any]) -> str:
    return " (with Fleiss' continuity correction)" if fields.get("continuity") else ""


def _shrink(fields: dict[str, Any], the: str = "the") -> str:
    se, sp = fields["sensitivity"], fields["specificity"]
    return (
        f"{the} judge (sensitivity {se * 100:.4g}%, specificity {sp * 100:.4g}%) shrinks every "
        f"true difference by (sensitivity + specificity − 1) = {se + sp - 1:.3g}"
    )


def _perfect(plan: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in plan.items() if key not in ("sensitivity", "specificity")}


def _clusters(clusters: Clusters) -> tuple[float, dict[str, Any], str]:
    if clusters is None:
        return 1.0, {}, ""
    (size, icc), effect = clusters, stats.design_effect(*clusters)
    said = f"in clusters of {size:g} cases with ICC {icc:g} (design effect {effect:.3g})"
    return effect, {"cluster_size": size, "icc": icc, "design_effect": effect}, said


def _plan(statistic: str, source: str | None, func: Any, *args: Any, **plan: Any) -> Any:
    """``func(*args, **plan)`` (None when undefined), and its settings with defaults as fields."""
    bound = inspect.signature(func).bind(*args, **plan)
    bound.apply_defaults()
    fields: dict[str, Any] = {"statistic": statistic, "test": _Z_TEST}
    fields.update((key, value) for key, value in bound.arguments.items() if value is not None)
    if "sensitivity" in fields:
        fields["judge_source"] = source
    try:
        return func(*args, **plan), fields
    except stats.UndefinedStatisticError:
        return None, fields  # said in words


_COMMANDS = {  # each sentence (its name and help) and the statistic whose settings it takes
    wilson_sentence: None,
    sample_size_sentence: stats.sample_size,
    power_sentence: stats.power,
    detectable_sentence: stats.detectable_difference,
    mcnemar_sentence: None,
}
