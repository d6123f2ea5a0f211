"""``tinyeval stats``: intervals, sample sizes, power and McNemar as sentences for a PR."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ._common import (
    EXIT_OK,
    UsageError,
    print_json,
    proportion,
)

# (name, function adding the sub-command's parser); collected by tinyeval.cli
COMMANDS: list[tuple[str, Callable[[Any], None]]] = []


def _add_stats(sub: Any) -> None:
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
    w.add_argument("--confidence", default="0.95", help="confidence level (default: 0.95)")
    w.set_defaults(handler=_cmd_stats_wilson)

    s = which.add_parser("sample-size", help="cases per run needed to detect a drop")
    _add_stats_rates(s, target=True)
    s.add_argument("--power", default="0.80", help="chance of detecting the drop (default: 0.80)")
    s.set_defaults(handler=_cmd_stats_sample_size)

    pw = which.add_parser("power", help="the chance that N cases per run detect a drop")
    _add_stats_rates(pw, target=True)
    pw.add_argument("--n", required=True, help="cases per run")
    pw.set_defaults(handler=_cmd_stats_power)

    d = which.add_parser("detectable", help="the smallest drop N cases per run can detect")
    _add_stats_rates(d, target=False)
    d.add_argument("--n", required=True, help="cases per run")
    d.add_argument("--power", default="0.80", help="chance of detecting the drop (default: 0.80)")
    d.set_defaults(handler=_cmd_stats_detectable)

    m = which.add_parser("mcnemar", help="exact McNemar test for two runs over the same cases")
    m.add_argument("b", metavar="B", help="cases that went from pass to fail")
    m.add_argument("c", metavar="C", help="cases that went from fail to pass")
    m.add_argument("--alpha", default="0.05", help="significance level (default: 0.05)")
    m.set_defaults(handler=_cmd_stats_mcnemar)

    for each in (w, s, pw, d, m):
        each.add_argument("--json", action="store_true", help="print one JSON object")


def _add_stats_rates(p: argparse.ArgumentParser, *, target: bool) -> None:
    p.add_argument("--baseline", required=True, help="today's pass rate: 0.90 or 90%%")
    if target:
        p.add_argument("--target", required=True, help="the pass rate to detect: 0.85 or 85%%")
    p.add_argument("--alpha", default="0.05", help="two-sided significance level (default: 0.05)")
    p.add_argument(
        "--continuity",
        action="store_true",
        help="apply Fleiss' continuity correction (a more conservative plan)",
    )
    p.add_argument(
        "--sensitivity",
        help="the judge's sensitivity, P(judge PASS | truly PASS): plan for an imperfect judge",
    )
    p.add_argument(
        "--specificity",
        help="the judge's specificity, P(judge FAIL | truly FAIL); give it with --sensitivity",
    )
    p.add_argument(
        "--calibration",
        metavar="CAL.json",
        help="take the judge's sensitivity and specificity from a saved calibration "
        "(tinyeval calibrate --save)",
    )


def _stats_whole(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{what} must be a whole number, got {text!r}") from None


def _stats_rate(text: str, what: str) -> float:
    """A proportion typed as 0.9 or 90%."""
    try:
        return proportion(text)
    except ValueError:
        raise UsageError(f"{what} must be a proportion such as 0.9 or 90%, got {text!r}") from None


def _stats_percent(p: float) -> str:
    """A rate the user typed, as they would say it: 0.9 → '90%', 0.875 → '87.5%'."""
    return f"{p * 100:.10g}%"


def _stats_alpha(alpha: float) -> str:
    return f"α = {alpha:g}"


def _stats_print(as_json: bool, sentence: str, fields: dict[str, Any]) -> int:
    if as_json:
        print_json({**fields, "sentence": sentence})
    else:
        print(sentence)
    return EXIT_OK


def _cmd_stats_wilson(args: argparse.Namespace) -> int:
    from ..stats import wilson_interval

    k, n = _stats_whole(args.successes, "K"), _stats_whole(args.n, "N")
    confidence = _stats_rate(args.confidence, "--confidence")
    low, high = wilson_interval(k, n, confidence)
    sentence = (
        f"{k}/{n} = {k / n:.1%}; {_stats_percent(confidence)} Wilson interval {low:.1%}–{high:.1%}."
    )
    fields = {
        "statistic": "wilson",
        "successes": k,
        "n": n,
        "rate": k / n,
        "confidence": confidence,
        "low": low,
        "high": high,
    }
    return _stats_print(args.json, sentence, fields)


def _stats_plan(args: argparse.Namespace) -> dict[str, Any]:
    plan: dict[str, Any] = {
        "baseline": _stats_rate(args.baseline, "--baseline"),
        "alpha": _stats_rate(args.alpha, "--alpha"),
        "continuity": args.continuity,
    }
    if hasattr(args, "target"):
        plan["target"] = _stats_rate(args.target, "--target")
    plan.update(_stats_judge(args))
    return plan


def _stats_judge(args: argparse.Namespace) -> dict[str, Any]:
    """The judge's sensitivity and specificity from the options, or none (a perfect judge)."""
    given = args.sensitivity is not None or args.specificity is not None
    if args.calibration and given:
        raise UsageError("give --calibration or --sensitivity/--specificity, not both")
    if args.calibration:
        from ..calibration import load_calibration

        cal = load_calibration(args.calibration)
        if cal.sensitivity is None or cal.specificity is None:
            missing = "PASS" if cal.sensitivity is None else "FAIL"
            raise UsageError(
                f"{args.calibration}: the calibration has no parsed case labelled {missing}, so "
                "the judge's sensitivity and specificity are not both known"
            )
        return {
            "sensitivity": cal.sensitivity.value,
            "specificity": cal.specificity.value,
            "judge_source": args.calibration,
        }
    if not given:
        return {}
    if args.sensitivity is None or args.specificity is None:
        missing = "--sensitivity" if args.sensitivity is None else "--specificity"
        raise UsageError(
            f"an imperfect judge needs both --sensitivity and --specificity: give {missing}"
        )
    return {
        "sensitivity": _stats_rate(args.sensitivity, "--sensitivity"),
        "specificity": _stats_rate(args.specificity, "--specificity"),
        "judge_source": "options",
    }


def _stats_judged(plan: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the planning functions for the plan's judge."""
    return {key: plan[key] for key in ("sensitivity", "specificity") if key in plan}


def _stats_shrink(plan: dict[str, Any]) -> str:
    """The clause saying how the judge shrinks every true difference."""
    se, sp = plan["sensitivity"], plan["specificity"]
    return (
        f"the judge (sensitivity {se * 100:.4g}%, specificity {sp * 100:.4g}%) "
        f"shrinks every true difference by (sensitivity + specificity − 1) = {se + sp - 1:.3g}"
    )


def _stats_change(baseline: float, target: float) -> str:
    direction = "drop" if target < baseline else "rise"
    return f"a {direction} from {_stats_percent(baseline)} to {_stats_percent(target)}"


def _stats_correction(continuity: bool) -> str:
    return " (with Fleiss' continuity correction)" if continuity else ""


def _cmd_stats_sample_size(args: argparse.Namespace) -> int:
    from ..stats import sample_size

    plan = _stats_plan(args)
    goal = _stats_rate(args.power, "--power")
    settings = {"alpha": plan["alpha"], "power": goal, "continuity": plan["continuity"]}
    needed = sample_size(plan["baseline"], plan["target"], **settings, **_stats_judged(plan))
    sentence = (
        f"To detect {_stats_change(plan['baseline'], plan['target'])} with "
        f"{_stats_percent(goal)} power at {_stats_alpha(plan['alpha'])} you need "
        f"{needed} cases per run{_stats_correction(plan['continuity'])}."
    )
    fields = {"statistic": "sample-size", **plan, "power": goal, "n": needed}
    if "sensitivity" in plan:
        perfect = sample_size(plan["baseline"], plan["target"], **settings)
        sentence = sentence.removesuffix(".") + (
            f": {_stats_shrink(plan)}, which costs {needed - perfect} cases more than the "
            f"{perfect} a perfect judge would need."
        )
        fields["n_perfect_judge"] = perfect
    return _stats_print(args.json, sentence, fields)


def _cmd_stats_power(args: argparse.Namespace) -> int:
    from ..stats import power, sample_size

    plan = _stats_plan(args)
    n = _stats_whole(args.n, "--n")
    settings = {"alpha": plan["alpha"], "continuity": plan["continuity"]}
    judged = _stats_judged(plan)
    chance = power(plan["baseline"], plan["target"], n, **settings, **judged)
    needed = sample_size(plan["baseline"], plan["target"], **settings, **judged)
    sentence = (
        f"With {n} cases per run, {_stats_change(plan['baseline'], plan['target'])} "
        f"is detected with {chance:.1%} power at {_stats_alpha(plan['alpha'])}"
        f"{_stats_correction(plan['continuity'])}; 80% power needs {needed} cases per run."
    )
    fields = {"statistic": "power", **plan, "n": n, "power": chance, "n_for_80_percent": needed}
    if judged:
        perfect = power(plan["baseline"], plan["target"], n, **settings)
        perfect_n = sample_size(plan["baseline"], plan["target"], **settings)
        sentence = sentence.removesuffix(".") + (
            f". {_stats_shrink(plan)[0].upper()}{_stats_shrink(plan)[1:]}: a perfect judge "
            f"would detect it with {perfect:.1%} power, and 80% power costs "
            f"{needed - perfect_n} cases more than its {perfect_n}."
        )
        fields["power_perfect_judge"] = perfect
        fields["n_for_80_percent_perfect_judge"] = perfect_n
    return _stats_print(args.json, sentence, fields)


def _cmd_stats_detectable(args: argparse.Namespace) -> int:
    from ..stats import UndefinedStatisticError, detectable_difference, sample_size

    plan = _stats_plan(args)
    n = _stats_whole(args.n, "--n")
    goal = _stats_rate(args.power, "--power")
    baseline = plan["baseline"]
    opening = (
        f"With {n} cases per run and a {_stats_percent(baseline)} baseline, the "
        f"smallest drop you can detect with {_stats_percent(goal)} power at "
        f"{_stats_alpha(plan['alpha'])}{_stats_correction(plan['continuity'])}"
    )
    judged = _stats_judged(plan)

    def smallest(**judge: float) -> float | None:
        try:
            return detectable_difference(
                baseline, n, alpha=plan["alpha"], power=goal, continuity=plan["continuity"],
                **judge,
            )  # fmt: skip
        except UndefinedStatisticError:
            return None  # too few cases: said in words rather than as an error

    drop = smallest(**judged)
    if drop is None:
        sentence = f"{opening} does not exist: not even a drop to 0% is detected reliably."
    else:
        sentence = f"{opening} is to {baseline - drop:.1%} ({drop * 100:.1f} points)."
    perfect: float | None = None
    fields_extra: dict[str, Any] = {}
    if judged:
        perfect = smallest()
        shrink = _stats_shrink(plan)
        sentence += f" {shrink[0].upper()}{shrink[1:]}"
        if perfect is None:
            sentence += "; not even a perfect judge would detect a drop reliably here."
        else:
            through = sample_size(
                baseline, baseline - perfect, alpha=plan["alpha"], power=goal,
                continuity=plan["continuity"], **judged,
            )  # fmt: skip
            sentence += (
                f"; a perfect judge would detect a drop of {perfect * 100:.1f} points, which "
                f"through this judge takes {through} cases per run ({through - n} more)."
            )
            fields_extra = {"n_for_perfect_judge_drop": through}
    fields = {
        "statistic": "detectable",
        **plan,
        "n": n,
        "power": goal,
        "drop": drop,
        "target": None if drop is None else baseline - drop,
    }
    if judged:
        fields["drop_perfect_judge"] = perfect
        fields.update(fields_extra)
    return _stats_print(args.json, sentence, fields)


def _cmd_stats_mcnemar(args: argparse.Namespace) -> int:
    from ..stats import mcnemar

    b, c = _stats_whole(args.b, "B"), _stats_whole(args.c, "C")
    alpha = _stats_rate(args.alpha, "--alpha")
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"--alpha must be between 0 and 1 (exclusive), got {args.alpha!r}")
    p = mcnemar(b, c)
    shown = f"p = {p:.3f}" if p >= 0.001 else "p < 0.001"
    chance = f"{p:.1%}" if p >= 0.001 else "under 0.1%"
    significant = p < alpha
    if b + c == 0:
        sentence = (
            "No case changed outcome between the two runs (exact McNemar p = 1.000), "
            "so there is no evidence of a difference."
        )
    else:
        verdict = (
            f"so the second run is {'worse' if b > c else 'better'}"
            if significant
            else "so this is no evidence of a difference"
        )
        sentence = (
            f"{b} cases went from pass to fail and {c} from fail to pass "
            f"(exact McNemar {shown}): a split at least this lopsided happens by chance "
            f"in {chance} of comparisons between equally good runs, {verdict} at "
            f"{_stats_alpha(alpha)}."
        )
    fields = {
        "statistic": "mcnemar",
        "b": b,
        "c": c,
        "p_value": p,
        "alpha": alpha,
        "significant": significant,
    }
    return _stats_print(args.json, sentence, fields)


COMMANDS.append(("stats", _add_stats))
