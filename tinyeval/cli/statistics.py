"""``tinyeval stats``: each statistic in one sentence (``--json``: its figures), by ``stats``."""

from __future__ import annotations

import argparse
import inspect
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import stats
from ..errors import InputError
from ..gating import parse_threshold
from ._common import EXIT_OK, UsageError, print_json

Z_TEST = "two-proportion z-test (runs on different cases)"
MCNEMAR = "McNemar's test (runs over the same cases)"
Clusters = tuple[float, float] | None  # (mean cluster size, intra-cluster correlation)

_OPTIONS = {
    "--baseline": "today's pass rate: 0.90 or 90%%",
    "--target": "the pass rate to detect: 0.85 or 85%%",
    "--alpha": "two-sided significance level (default: 0.05)",
    "--continuity": "apply Fleiss' continuity correction (a more conservative plan)",
    "--sensitivity": "the judge's sensitivity, P(judge PASS | truly PASS): for an imperfect judge",
    "--specificity": "the judge's specificity, P(judge FAIL | truly FAIL): with --sensitivity",
    "--calibration": "take the judge's sensitivity and specificity from a saved calibration "
    "(tinyeval calibrate --save)",
    "--paired": "plan for McNemar's test on runs over the same cases (Connor 1987)",
    "--discordance": "with --paired: the share of cases expected to change outcome",
    "--cluster-size": "cases share documents, conversations or users in clusters of M on average",
    "--icc": "with --cluster-size: the intra-cluster correlation of outcomes",
    "--n": "cases per run",
    "--power": "chance of detecting the change (default: 0.80)",
    "--confidence": "confidence level (default: 0.95)",
    "--json": "print one JSON object",
}
_SWITCHES = {"--continuity", "--paired", "--json"}
_REQUIRED = {"--baseline", "--target", "--n"}
_METAVARS = {"--calibration": "CAL.json", "--cluster-size": "M"}
_PLAN = "--alpha --continuity --sensitivity --specificity --calibration"
_COUNTS = {
    "K": "cases that passed",
    "N": "cases in total",
    "B": "cases that went from pass to fail",
    "C": "cases that went from fail to pass",
}
_RATES = ("baseline", "target", "alpha", "power", "confidence", "discordance", "icc")


def add_stats(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="intervals, sample sizes, power and paired tests, in sentences for a pull request",
        description="Answer the statistical questions behind an eval in one sentence each: "
        "how sure a pass rate is, how many cases a suite needs, what it can detect, and "
        "whether two runs over the same cases really differ.",
    )
    which = p.add_subparsers(dest="statistic", metavar="STATISTIC", required=True)
    for name, (about, say, spec) in _COMMANDS.items():
        each = which.add_parser(name, help=about)
        counts = {}
        for item in spec.replace("PLAN", _PLAN).split():
            dest, colon, metavar = item.partition(":")
            if colon:  # a count, as ``successes:K``
                counts[dest] = metavar
                each.add_argument(dest, metavar=metavar, help=_COUNTS[metavar])
            elif dest in _SWITCHES:
                each.add_argument(dest, action="store_true", help=_OPTIONS[dest])
            else:
                default = _OPTIONS[dest].partition("(default: ")[2].rstrip(")") or None
                each.add_argument(
                    dest,
                    help=_OPTIONS[dest],
                    default=default,
                    required=dest in _REQUIRED,
                    metavar=_METAVARS.get(dest),
                )
        each.set_defaults(handler=_cmd_stats, say=say, counts=counts)


def _whole(text: str, what: str) -> int:
    return _typed(int, text, what, "a whole number")


def _rate(text: str, what: str) -> float:
    return _typed(parse_threshold, text, what, "a proportion such as 0.9 or 90%")


def _typed(convert: Any, text: str, what: str, expected: str) -> Any:
    try:
        return convert(text)
    except (ValueError, InputError):
        raise UsageError(f"{what} must be {expected}, got {text!r}") from None


def _cmd_stats(args: argparse.Namespace) -> int:
    values: dict[str, Any] = {d: _whole(getattr(args, d), m) for d, m in args.counts.items()}
    for name in _RATES:
        if getattr(args, name, None) is not None:
            values[name] = _rate(getattr(args, name), f"--{name}")
    if hasattr(args, "continuity"):
        values.update(_judge_options(args), continuity=args.continuity)
    if hasattr(args, "n") and "n" not in args.counts:
        values["n"] = _whole(args.n, "--n")
    paired, size = getattr(args, "paired", False) or None, getattr(args, "cluster_size", None)
    given = {**values, "paired": paired, "cluster_size": size}
    _both(given, "paired", "discordance", "a paired plan needs both --paired and --discordance")
    _both(given, "cluster_size", "icc", "clusters need both --cluster-size and --icc")
    if size is not None:
        values["clusters"] = (_typed(float, size, "--cluster-size", "a number"), values.pop("icc"))
    said = args.say(**values)
    if args.json:
        print_json(said.to_dict())
    else:
        print(said)
    return EXIT_OK


def _both(given: dict[str, Any], first: str, second: str, reason: str) -> None:
    """Refuse one of two settings that go together without the other."""
    if (given.get(first) is None) != (given.get(second) is None):
        raise InputError(reason, field=first if given.get(first) is None else second)


def _judge_options(args: argparse.Namespace) -> dict[str, Any]:
    rates = {
        name: None if getattr(args, name) is None else _rate(getattr(args, name), f"--{name}")
        for name in ("sensitivity", "specificity")
    }
    source = None
    if args.calibration is not None:
        if rates != {"sensitivity": None, "specificity": None}:
            raise InputError(
                "give a calibration or the judge's two rates, not both", field="calibration"
            )
        rates["sensitivity"], rates["specificity"] = judge_rates_from_calibration(args.calibration)
        source = args.calibration
    elif rates["sensitivity"] is not None or rates["specificity"] is not None:
        _both(rates, "sensitivity", "specificity", _IMPERFECT)
        source = "options"
    return {**rates, "judge_source": source}


_IMPERFECT = "an imperfect judge needs both its sensitivity and its specificity"


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
    fields: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {**self.fields, "sentence": self.text}


def wilson_sentence(
    successes: int, n: int, confidence: float = 0.95, *, clusters: Clusters = None
) -> Sentence:
    """``successes`` of ``n`` with its Wilson interval.

    >>> print(wilson_sentence(27, 30))
    27/30 = 90.0%; 95% Wilson interval 74.4%–96.5%.
    """
    effect, fields = _clusters(clusters)
    low, high = stats.wilson_interval(successes, n, confidence, design_effect=effect)
    text = f"{successes}/{n} = {successes / n:.1%}; {_percent(confidence)} Wilson interval "
    text += f"{low:.1%}–{high:.1%}"
    if fields:
        text += f" {_clustered(fields)}: as sure as {n / effect:.1f} independent cases"
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
    """The cases that detect ``baseline`` → ``target``, per run or paired (with ``discordance``).

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
        needed, fields = _plan(
            "sample-size", None, stats.paired_sample_size, difference, discordance, **paired
        )
        fields.update(test=MCNEMAR, baseline=baseline, target=target)
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
    effect, clustered = _clusters(clusters)
    if clustered:
        inflated = math.ceil(needed * effect)
        text += f"; {_clustered(clustered)} that is {inflated} cases"
        fields.update(clustered, n_without_clusters=needed)
        needed = inflated
    return Sentence(f"{text}. Test: {fields['test']}.", {**fields, "n": needed})


def power_sentence(
    baseline: float, target: float, n: int, *, judge_source: str | None = None, **plan: Any
) -> Sentence:
    """The chance that ``n`` cases per run detect a change, and the cases 80% power needs."""
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
            f" {_capital(_shrink(fields))}: a perfect judge would detect it with {perfect:.1%} "
            f"power, and 80% power costs {needed - perfect_n} cases more than its {perfect_n}."
        )
        fields.update(power_perfect_judge=perfect, n_for_80_percent_perfect_judge=perfect_n)
    return Sentence(f"{text} Test: {fields['test']}.", fields)


def detectable_sentence(
    baseline: float, n: int, *, judge_source: str | None = None, **plan: Any
) -> Sentence:
    """The smallest drop below ``baseline`` that ``n`` cases per run detect."""
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
        text += f" {_capital(_shrink(fields))}"
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
    fields = {"statistic": "mcnemar", "b": b, "c": c, "p_value": p, "alpha": alpha}
    return Sentence(text, {**fields, "significant": significant})


def _percent(p: float) -> str:
    return f"{p * 100:.10g}%"


def _change(baseline: float, target: float) -> str:
    direction = "drop" if target < baseline else "rise"
    return f"a {direction} from {_percent(baseline)} to {_percent(target)}"


def _correction(fields: dict[str, Any]) -> str:
    return " (with Fleiss' continuity correction)" if fields.get("continuity") else ""


def _shrink(fields: dict[str, Any]) -> str:
    se, sp = fields["sensitivity"], fields["specificity"]
    return (
        f"the judge (sensitivity {se * 100:.4g}%, specificity {sp * 100:.4g}%) shrinks every "
        f"true difference by (sensitivity + specificity − 1) = {se + sp - 1:.3g}"
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _perfect(plan: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in plan.items() if key not in ("sensitivity", "specificity")}


def _clusters(clusters: Clusters) -> tuple[float, dict[str, Any]]:
    if clusters is None:
        return 1.0, {}
    effect = stats.design_effect(*clusters)
    return effect, {"cluster_size": clusters[0], "icc": clusters[1], "design_effect": effect}


def _clustered(fields: dict[str, Any]) -> str:
    return (
        f"in clusters of {fields['cluster_size']:g} cases with ICC {fields['icc']:g} "
        f"(design effect {fields['design_effect']:.3g})"
    )


def _plan(statistic: str, source: str | None, func: Any, *args: Any, **plan: Any) -> Any:
    """``func(*args, **plan)`` (None when undefined), and its settings with defaults as fields."""
    bound = inspect.signature(func).bind(*args, **plan)
    bound.apply_defaults()
    fields: dict[str, Any] = {"statistic": statistic, "test": Z_TEST}
    fields.update((key, value) for key, value in bound.arguments.items() if value is not None)
    if "sensitivity" in fields:
        fields["judge_source"] = source
    try:
        return func(*args, **plan), fields
    except stats.UndefinedStatisticError:
        return None, fields  # said in words


_SIZE, _DETECT = stats.sample_size, stats.detectable_difference


_CLUSTERS = "--cluster-size --icc --json"
_COMMANDS = {
    "wilson": (
        "the Wilson interval for K passes out of N cases",
        wilson_sentence,
        f"successes:K n:N --confidence {_CLUSTERS}",
    ),
    "sample-size": (
        "cases per run needed to detect a change (--paired: over the same cases)",
        sample_size_sentence,
        f"--baseline --target PLAN --power --paired --discordance {_CLUSTERS}",
    ),
    "power": (
        "the chance that N cases per run detect a change",
        power_sentence,
        "--baseline --target PLAN --n --json",
    ),
    "detectable": (
        "the smallest drop N cases per run can detect",
        detectable_sentence,
        "--baseline PLAN --n --power --json",
    ),
    "mcnemar": (
        "exact McNemar test for two runs over the same cases",
        mcnemar_sentence,
        "b:B c:C --alpha --json",
    ),
}  # each subcommand: its help, its sentence, its arguments (``dest:METAVAR`` for a count)
