"""``tinyeval stats``: intervals, sample sizes, power and McNemar as sentences for a PR."""

from __future__ import annotations

import argparse
from typing import Any

from .. import sentences
from ._common import EXIT_OK, UsageError, print_json, proportion


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
    w.add_argument("--confidence", default="0.95", help="confidence level (default: 0.95)")
    w.set_defaults(handler=_cmd_stats_wilson)

    s = which.add_parser("sample-size", help="cases per run needed to detect a drop")
    _add_stats_rates(s, target=True)
    s.add_argument("--power", default="0.80", help="chance of detecting the drop (default: 0.80)")
    s.set_defaults(handler=_cmd_stats_plan, say=sentences.sample_size_sentence)

    pw = which.add_parser("power", help="the chance that N cases per run detect a drop")
    _add_stats_rates(pw, target=True)
    pw.add_argument("--n", required=True, help="cases per run")
    pw.set_defaults(handler=_cmd_stats_plan, say=sentences.power_sentence)

    d = which.add_parser("detectable", help="the smallest drop N cases per run can detect")
    _add_stats_rates(d, target=False)
    d.add_argument("--n", required=True, help="cases per run")
    d.add_argument("--power", default="0.80", help="chance of detecting the drop (default: 0.80)")
    d.set_defaults(handler=_cmd_stats_plan, say=sentences.detectable_sentence)

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
    # fmt: off
    p.add_argument("--continuity", action="store_true",
                   help="apply Fleiss' continuity correction (a more conservative plan)")
    p.add_argument("--sensitivity", help="the judge's sensitivity, P(judge PASS | truly PASS): "
                   "plan for an imperfect judge")
    p.add_argument("--specificity", help="the judge's specificity, P(judge FAIL | truly FAIL); "
                   "give it with --sensitivity")
    p.add_argument("--calibration", metavar="CAL.json", help="take the judge's sensitivity and "
                   "specificity from a saved calibration (tinyeval calibrate --save)")
    # fmt: on


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


def _stats_plan(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of a planning sentence, from the options as typed."""
    rates = [name for name in ("baseline", "alpha", "target", "power") if hasattr(args, name)]
    plan: dict[str, Any] = {name: _stats_rate(getattr(args, name), f"--{name}") for name in rates}
    plan["continuity"] = args.continuity

    def rate(name: str) -> float | None:
        text = getattr(args, name)
        return None if text is None else _stats_rate(text, f"--{name}")

    judge = sentences.judge_rates(rate("sensitivity"), rate("specificity"), args.calibration)
    if judge is not None:
        plan.update(sensitivity=judge.sensitivity, specificity=judge.specificity,
                    judge_source=judge.source)  # fmt: skip
    if hasattr(args, "n"):
        plan["n"] = _stats_whole(args.n, "--n")
    return plan


def _stats_print(args: argparse.Namespace, said: sentences.Sentence) -> int:
    if args.json:
        print_json(said.to_dict())
    else:
        print(said)
    return EXIT_OK


def _cmd_stats_wilson(args: argparse.Namespace) -> int:
    k, n = _stats_whole(args.successes, "K"), _stats_whole(args.n, "N")
    confidence = _stats_rate(args.confidence, "--confidence")
    return _stats_print(args, sentences.wilson_sentence(k, n, confidence))


def _cmd_stats_plan(args: argparse.Namespace) -> int:
    """``sample-size``, ``power`` and ``detectable``: the sentence function is ``args.say``."""
    return _stats_print(args, args.say(**_stats_plan(args)))


def _cmd_stats_mcnemar(args: argparse.Namespace) -> int:
    b, c = _stats_whole(args.b, "B"), _stats_whole(args.c, "C")
    alpha = _stats_rate(args.alpha, "--alpha")
    return _stats_print(args, sentences.mcnemar_sentence(b, c, alpha))
