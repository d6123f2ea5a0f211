"""The run summary's sections of graded judges and of a jury."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..records import read_rows, verdicts
from ..report import Section
from ..runner import PreparedCases


def graded_section(session: Any, ready: PreparedCases, result: Any) -> Section:
    """Each graded judge's scores: the histogram beside the mean, and the bottom 10% by id."""
    from .graded import graded_summary
    from .graded_judge import GradedJudge, graded_scores

    graded = [judge for judge in session.judges if isinstance(judge, GradedJudge)]
    rows = read_rows(session.settings.out) if graded else []
    lines = []
    for judge in graded:
        scores = graded_scores(rows, judge.name)
        if scores:
            lines += [f"graded scores of {judge.name}:",
                      graded_summary(scores, scale=judge.scale).to_text(), ""]  # fmt: skip
    return Section(lines, {})


def jury_section(session: Any, ready: PreparedCases, result: Any) -> Section:
    """A jury of one family's warning, and with ``dawid_skene`` the jurors' error rates
    estimated from their verdicts alone."""
    from .jury import dawid_skene, shared_family

    lines: list[str] = []
    info: dict[str, Any] = {}
    family = shared_family(session.jurors)
    if family:
        lines.append(f"warning: every juror is of the {family} family: jurors of one family "
                     "share blind spots, so the jury adds less than it seems")  # fmt: skip
        info["jury_warning"] = f"shared family {family}"
    if not session.settings.dawid_skene:
        return Section(lines, info)
    by_case: dict[str, dict[str, Any]] = {}
    for row in read_rows(session.settings.out):
        for name, verdict in verdicts(row).items():
            jurors = verdict.get("jurors")
            if isinstance(jurors, Mapping):
                by_case[f"{row['id']}/{name}"] = {
                    str(spec): juror.get("verdict") for spec, juror in jurors.items()
                }
    estimate = dawid_skene(by_case) if by_case else None
    if estimate is not None:
        info["dawid_skene"] = estimate.to_dict()
        lines += ["estimated without labels (Dawid-Skene):", str(estimate)]
    return Section(lines, info)
