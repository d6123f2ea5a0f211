"""The run summary's sections of a retrieval-augmented run: the retrieval table and its gate,
and the warning when the judge is of the generating model's family."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..report import Section
from ..runner import PreparedCases


def retrieval_section(session: Any, ready: PreparedCases, result: Any) -> Section:
    """The retrieval table of the cases with retrieval data, and the retrieval gate.

    The cases without retrieval data count as queries that found nothing.
    """
    from .retrieval import parse_retrieval_threshold, retrieval_report

    s = session.settings
    thresholds = [parse_retrieval_threshold(text) for text in s.retrieval_threshold]
    queries: list[Any] = []
    if session.retrieved:
        missing = session.without_retrieval.items()
        queries = [*session.retrieved, *((c, None, None) for c, n in missing for _ in range(n))]
    if not any(query.retrieved is not None for query in queries):
        if thresholds:
            raise InputError("no case has retrieved and relevant data",
                             field="retrieval_threshold")  # fmt: skip
        return Section([], {})
    try:
        ks = {int(part) for part in s.k.split(",") if part.strip()}
    except ValueError:
        raise InputError(f"expected whole numbers separated by commas, got {s.k!r}",
                         field="k") from None  # fmt: skip
    ks |= {t.k for t in thresholds if t.k is not None}
    table = retrieval_report(sorted(queries, key=lambda query: str(query[0])), ks=sorted(ks))
    info: dict[str, Any] = {"retrieval": table.to_dict()}
    if not thresholds:
        return Section([table.to_text(), ""], info)
    on = "lower" if s.inconclusive == "block" else "rate"
    verdict = table.check(thresholds, on=on)
    info["retrieval_gate"] = verdict.to_dict()
    failed = None
    if not verdict.passed:
        failed = f"retrieval gate: FAILED — blocking: {', '.join(verdict.blocking)}"
    return Section([table.to_text(), verdict.to_text(), ""], info, failed)


def self_evaluation_section(session: Any, ready: PreparedCases, result: Any) -> Section:
    """A warning when the generating and the judge model are of one family."""
    from .judges import self_evaluation_warning

    warning = self_evaluation_warning(session.settings.generate_model, session.judge_spec)
    if not warning:
        return Section([], {})
    return Section([f"warning: {warning}"], {"self_evaluation_warning": warning})
