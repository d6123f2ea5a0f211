"""The gate: a verdict per category, never an average across them (the global rate is
shown, never gates). Errored and unparsed cases count as not passed; comparisons of runs.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any

from .errors import InputError, did_you_mean, is_number, plural
from .records import Completeness, case_rows, completeness, tally
from .stats import Rate, cases_to_decide, format_rate, mcnemar, wilson_interval

__all__ = [
    "INCONCLUSIVE_POLICIES",
    "OUTCOMES",
    "CategoryVerdict",
    "ComparisonReport",
    "GateReport",
    "HoldoutComparison",
    "PairedComparison",
    "RowsGate",
    "compare_holdout",
    "compare_holdout_rows",
    "compare_runs",
    "gate",
    "gate_rows",
    "gate_settings",
    "holdout_text",
    "parse_threshold",
]


def parse_threshold(
    value: str | float,
    *,
    field: str | None = None,
    what: str = "a threshold",
    low: float = 0.0,
    high: float = 1.0,
) -> float:
    """The package's one rate parser: ``0.95`` or ``"95%"``, from ``low`` to ``high`` inclusive.

    >>> parse_threshold("0.95"), parse_threshold(" 95% "), parse_threshold(1)
    (0.95, 0.95, 1.0)
    >>> parse_threshold("1.5", field="alpha", what="alpha", high=0.5)
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: alpha: alpha is a rate between 0 and 0.5 (or 0% to 50%), got '1.5'
    """
    rate = math.nan  # a boolean or anything else that is not a number is refused
    if is_number(value):
        rate = float(value)
    elif isinstance(value, str):
        text = value.strip()
        with contextlib.suppress(ValueError):
            rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    if not low <= rate <= high:  # also refuses NaN
        raise InputError(
            f"{what} is a rate between {low:g} and {high:g} (or {low:.0%} to {high:.0%}), "
            f"got {value!r}",
            field=field,
        )
    return rate


OUTCOMES = ("pass", "block", "inconclusive", "ungated")
INCONCLUSIVE_POLICIES = ("pass", "block")


@dataclass(frozen=True)
class CategoryVerdict:
    """One category's figures and outcome (one of ``OUTCOMES``); whether it blocks.

    >>> v = gate({"tone": {"passed": 12, "total": 13}}, {"tone": 0.8}).categories[0]
    >>> v.outcome, v.more_cases_needed, v.blocking
    ('inconclusive', 28, False)
    """

    category: str
    measured: Rate | None
    errors: int
    unparsed: int
    unchecked: int
    threshold: float | None
    outcome: str
    blocking: bool
    note: str | None = None
    more_cases_needed: int | None = None
    unchecked_ids: tuple[str, ...] = ()

    @property
    def passed(self) -> int:
        """Cases that passed."""
        return self.measured.successes if self.measured else 0

    @property
    def total(self) -> int:
        """Every case of the category, whatever became of it."""
        return self.measured.n if self.measured else 0

    @property
    def rate(self) -> float | None:
        """The observed pass rate, None without cases."""
        return self.measured.value if self.measured else None

    @property
    def low(self) -> float | None:
        """The lower end of the rate's interval."""
        return self.measured.low if self.measured else None

    @property
    def high(self) -> float | None:
        """The upper end of the rate's interval."""
        return self.measured.high if self.measured else None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a JSON-ready dict."""
        found = {key: getattr(self, key) for key in _VERDICT_KEYS}
        return {**found, "unchecked_ids": list(self.unchecked_ids)}


_VERDICT_KEYS: tuple[str, ...] = ("passed", "total", "errors", "unparsed", "unchecked", "rate")
_VERDICT_KEYS += ("low", "high", "threshold", "outcome", "blocking", "more_cases_needed", "note")


@dataclass(frozen=True)
class GateReport:
    """Per-category verdicts and the global line (shown, never gating); incomplete never passes."""

    categories: tuple[CategoryVerdict, ...]
    overall: CategoryVerdict
    inconclusive: str
    confidence: float
    completeness: Completeness | None = None
    allow_unchecked: bool = False

    @property
    def complete(self) -> bool:
        """False when the rows are known to miss cases or shards."""
        return self.completeness is None or self.completeness.complete

    @property
    def passed(self) -> bool:
        """True when the results are complete and no category blocks."""
        return self.complete and not self.blocking

    @property
    def outcome(self) -> str:
        """``"pass"``, ``"block"`` or ``"incomplete"``: the decision the exit code carries."""
        if not self.complete:
            return "incomplete"
        return "block" if self.blocking else "pass"

    @property
    def blocking(self) -> list[CategoryVerdict]:
        """The categories that block, in order."""
        return [c for c in self.categories if c.blocking]

    @property
    def undecided(self) -> list[CategoryVerdict]:
        """The categories whose interval straddles their threshold."""
        return [c for c in self.categories if c.outcome == "inconclusive"]

    def to_dict(self) -> dict[str, Any]:
        """The ``gate`` part of ``run --json`` (outcomes ``"incomplete"`` when the results are)."""
        categories = {}
        for c in self.categories:
            item = c.to_dict()
            item["outcome_on_rows_seen"] = c.outcome
            if not self.complete:
                item["outcome"] = "incomplete"
            categories[c.category] = item
        return {
            "passed": self.passed,
            "outcome": self.outcome,
            "inconclusive": self.inconclusive,
            "allow_unchecked": self.allow_unchecked,
            "confidence": self.confidence,
            "blocking": [c.category for c in self.blocking],
            "inconclusive_categories": [c.category for c in self.undecided],
            "categories": categories,
            "overall": self.overall.to_dict(),
            "completeness": None if self.completeness is None else self.completeness.to_dict(),
        }


def _field(tally: Any, key: str) -> int:
    value = tally.get(key, 0) if isinstance(tally, Mapping) else getattr(tally, key, 0)
    return int(value or 0)


def _ids(tally: Any) -> tuple[str, ...]:
    value = tally.get("unchecked_ids") if isinstance(tally, Mapping) else None
    value = value if value is not None else getattr(tally, "unchecked_ids", ())
    return tuple(str(item) for item in value or ())


def _verdict(
    name: str,
    tally: Any,
    threshold: float | None,
    *,
    inconclusive: str,
    allow_unchecked: bool,
    confidence: float,
) -> CategoryVerdict:
    passed, total = _field(tally, "passed"), _field(tally, "total")
    counts = (_field(tally, "errors"), _field(tally, "unparsed"), _field(tally, "unchecked"))
    unchecked = counts[2]
    measured = Rate.of(passed, total, confidence) if total else None
    note, more = None, None
    if measured is None or threshold is None:
        outcome = "ungated" if threshold is None else "block"
        note = None if measured else "no cases in this category"
    elif unchecked and not allow_unchecked:
        outcome = "block"
        note = f"{plural(unchecked, 'case')} had nothing to check them"
    elif measured.value < threshold:
        outcome = "block"  # below is never given the benefit of doubt
    elif measured.low >= threshold or threshold == measured.value == 1.0:
        # decided; a threshold of 100% is a rule over the cases (every one must pass), met by
        # a rate of 100%: no interval over a finite suite could ever clear it
        outcome = "pass"
    else:
        outcome = "inconclusive"
        needed = cases_to_decide(passed, total, threshold, confidence)
        more = None if needed is None else needed - total
    return CategoryVerdict(
        name,
        measured,
        *counts,
        threshold=threshold,
        outcome=outcome,
        blocking=outcome == "block" or (outcome == "inconclusive" and inconclusive == "block"),
        note=note,
        more_cases_needed=more,
        unchecked_ids=_ids(tally) if measured else (),
    )


def gate(
    tallies: Mapping[str, Any],
    thresholds: Mapping[str, float | str] | None = None,
    *,
    default_threshold: float | str | None = None,
    inconclusive: str | None = None,
    allow_unchecked: bool | None = False,
    confidence: float = 0.95,
    completeness: Completeness | None = None,
    strict_categories: bool | None = False,
) -> GateReport:
    """Judge each category's counts against its threshold, else ``default_threshold``.

    >>> report = gate(
    ...     {"amount_extraction": {"passed": 17, "total": 20},
    ...      "tone": {"passed": 45, "total": 45}},
    ...     {"amount_extraction": 1.0}, default_threshold=0.8)
    >>> report.passed, [c.category for c in report.blocking], round(report.overall.rate, 3)
    (False, ['amount_extraction'], 0.954)
    """
    policy = inconclusive or "pass"
    if policy not in INCONCLUSIVE_POLICIES:
        raise InputError(
            f"inconclusive must be one of {', '.join(INCONCLUSIVE_POLICIES)}, got {policy!r}"
        )
    limits = {name: parse_threshold(value) for name, value in (thresholds or {}).items()}
    default = parse_threshold(default_threshold) if default_threshold is not None else None
    names = sorted({*tallies, *limits})
    allow_unchecked = bool(allow_unchecked)  # None in a run's settings: not allowed
    verdict = partial(
        _verdict, inconclusive=policy, allow_unchecked=allow_unchecked, confidence=confidence
    )
    verdicts = tuple(
        verdict(name, tallies.get(name, {}), limits.get(name, default)) for name in names
    )
    ungated = [_ungated(v, list(limits)) for v in verdicts if limits and v.threshold is None]
    if strict_categories and ungated:
        raise InputError(
            f"the category {ungated[0].category!r} has no threshold ({ungated[0].note}); give "
            "it one, or a default threshold",
            field="strict_categories",
        )
    said = {v.category: v for v in ungated}
    verdicts = tuple(said.get(v.category, v) for v in verdicts)
    total = {
        key: sum(_field(tally, key) for tally in tallies.values())
        for key in ("passed", "total", "errors", "unparsed", "unchecked")
    }
    return GateReport(
        verdicts,
        verdict("global", total, None),
        policy,
        confidence,
        completeness,
        bool(allow_unchecked),
    )


def _ungated(verdict: CategoryVerdict, thresholds: list[str]) -> CategoryVerdict:
    """A category no threshold names, when thresholds are given without a default: said."""
    close = did_you_mean(verdict.category, thresholds)
    hint = f"; did you mean {close!r}?" if close else ""
    return replace(verdict, note=f"ungated: no threshold names it{hint}")


def gate_settings(
    thresholds: Mapping[str, float | str] | None = None,
    *,
    default_threshold: float | str | None = None,
    inconclusive: str | None = None,
    allow_unchecked: bool = False,
    strict_categories: bool | None = False,
) -> dict[str, Any]:
    """The gate settings a run records in its rows (``run.gate``), with thresholds as numbers.

    >>> gate_settings({"tone": "90%"}, default_threshold=0.5)["thresholds"]
    {'tone': 0.9}
    """
    return {
        "thresholds": {name: parse_threshold(value) for name, value in (thresholds or {}).items()},
        "default_threshold": (
            None if default_threshold is None else parse_threshold(default_threshold)
        ),
        "inconclusive": inconclusive,
        "allow_unchecked": allow_unchecked,
        "strict_categories": strict_categories,
    }


@dataclass(frozen=True)
class RowsGate:
    """:func:`gate_rows`' answer: the report, settings ``remembered`` and ``overridden``."""

    report: GateReport
    remembered: tuple[str, ...]
    overridden: tuple[str, ...]


def gate_rows(
    rows: Sequence[Mapping[str, Any]],
    thresholds: Mapping[str, float | str] | None = None,
    *,
    default_threshold: float | str | None = None,
    inconclusive: str | None = None,
    allow_unchecked: bool | None = None,
    expected_ids: Iterable[str] | None = None,
    confidence: float = 0.95,
    strict_categories: bool | None = False,
) -> RowsGate:
    """Gate result rows as the run that wrote them did (settings not given: its ``run``).

    >>> manifest = {"cases": 2, "gate": {"thresholds": {"c": 1.0}}}
    >>> rows = [{"id": "a", "category": "c", "status": "pass", "run": manifest}]
    >>> done = gate_rows(rows)
    >>> done.report.outcome, done.remembered, str(done.report.completeness)
    ('incomplete', ('thresholds',), 'incomplete: 1 of 2 cases')
    """
    manifests = (row.get("run") for row in rows)
    run = next((m["gate"] for m in manifests if isinstance(m, Mapping) and "gate" in m), None)
    run = run if isinstance(run, Mapping) else {}
    given: dict[str, Any] = {
        "thresholds": dict(thresholds) if thresholds else None,
        "default_threshold": default_threshold,
        "inconclusive": inconclusive,
        "allow_unchecked": allow_unchecked,
        "strict_categories": strict_categories or None,
    }
    ran = {key: run.get(key) for key in given if run.get(key) not in (None, {})}
    remembered = tuple(key for key in ran if given[key] is None)
    overridden = tuple(key for key in ran if given[key] not in (None, ran[key]))
    used = {**ran, **{key: value for key, value in given.items() if value is not None}}
    report = gate(
        tally(case_rows(rows)),  # a case once, its trials joined as the run joined them
        **used,
        confidence=confidence,
        completeness=completeness(rows, expected_ids=expected_ids),
    )
    return RowsGate(report, remembered, overridden)


# --------------------------------------------------------------------------- paired comparison


@dataclass(frozen=True)
class PairedComparison:
    """Two runs over the same cases in one category: discordant pairs, McNemar's p."""

    category: str
    n: int
    before_passed: int
    after_passed: int
    pass_to_fail: int
    fail_to_pass: int
    p_value: float

    @property
    def regressed(self) -> bool:
        """More cases broke than were fixed (significance aside)."""
        return self.pass_to_fail > self.fail_to_pass

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict (every field but the category)."""
        return _but_category(self)


@dataclass(frozen=True)
class ComparisonReport:
    """Per-category and global paired comparisons, unpaired ids, and warnings."""

    categories: tuple[PairedComparison, ...]
    overall: PairedComparison
    only_before: tuple[str, ...]
    only_after: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def regressions(self, alpha: float = 0.05) -> list[str]:
        """Categories that got significantly worse at ``alpha``."""
        return [c.category for c in self.categories if c.regressed and c.p_value < alpha]

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "categories": {c.category: c.to_dict() for c in self.categories},
            "overall": self.overall.to_dict(),
            "only_before": list(self.only_before),
            "only_after": list(self.only_after),
            "warnings": list(self.warnings),
        }

    def to_text(self, alpha: float = 0.05, *, before: str = "before", after: str = "after") -> str:
        """One aligned line per category: both rates, what broke and what was fixed, the test.

        >>> old = [{"id": str(i), "category": "x", "status": "pass"} for i in range(10)]
        >>> new = [dict(r, status="fail") if int(r["id"]) < 6 else r for r in old]
        >>> print(compare_runs(old, new).to_text())  # doctest: +NORMALIZE_WHITESPACE
        x       10/10 = 100.0% [72.2%, 100.0%] → 4/10 = 40.0% [16.8%, 68.7%]   6 broke, 0 fixed
                McNemar exact p = 0.0312: significantly worse at α = 0.05
        global  10/10 = 100.0% [72.2%, 100.0%] → 4/10 = 40.0% [16.8%, 68.7%]   6 broke, 0 fixed
                McNemar exact p = 0.0312: significantly worse at α = 0.05
        """
        rows = [*self.categories, self.overall]
        width = max(len(c.category) for c in rows)
        olds, first = _rate_column((c.before_passed, c.n) for c in rows)
        news, second = _rate_column((c.after_passed, c.n) for c in rows)
        lines = []
        for c, a, b in zip(rows, olds, news, strict=True):
            if c.p_value >= alpha:
                word = "no significant difference"
            else:
                word = "significantly worse" if c.regressed else "significantly better"
            lines.append(
                f"{c.category:<{width}}  {a:<{first}} → {b:<{second}}   "
                f"{c.pass_to_fail} broke, {c.fail_to_pass} fixed\n{'':<{width}}  "
                f"McNemar exact p = {c.p_value:.3g}: {word} at α = {alpha:g}"
            )
        if self.only_before or self.only_after:
            lines.append(
                f"not paired: {len(self.only_before)} cases only in {before}, "
                f"{len(self.only_after)} only in {after}"
            )
        return "\n".join(lines)


def _but_category(comparison: Any) -> dict[str, Any]:
    return {key: value for key, value in asdict(comparison).items() if key != "category"}


def _rate_column(counts: Iterable[tuple[int, int]]) -> tuple[list[str], int]:
    """Each ``(passed, total)`` as a rate ("0 cases" for none), and the column's width."""
    cells = [format_rate(passed, total) if total else "0 cases" for passed, total in counts]
    return cells, max(map(len, cells))


def _category(row: Mapping[str, Any]) -> str:
    return str(row.get("category", "default"))


def _paired(category: str, pairs: list[tuple[bool, bool]]) -> PairedComparison:
    b = sum(1 for before, after in pairs if before and not after)
    c = sum(1 for before, after in pairs if after and not before)
    return PairedComparison(
        category,
        len(pairs),
        sum(1 for before, _ in pairs if before),
        sum(1 for _, after in pairs if after),
        b,
        c,
        mcnemar(b, c),
    )


def compare_runs(
    before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]]
) -> ComparisonReport:
    """Compare two runs' rows case by case (paired by id), per category (the later run's).

    >>> before = [{"id": str(i), "category": "amounts", "status": "pass"} for i in range(20)]
    >>> after = [dict(r, status="fail") if int(r["id"]) < 12 else r for r in before]
    >>> c = compare_runs(before, after).categories[0]
    >>> (c.pass_to_fail, c.fail_to_pass, round(c.p_value, 5))
    (12, 0, 0.00049)
    """
    first = {row["id"]: row for row in case_rows(list(before))}
    second = {row["id"]: row for row in case_rows(list(after))}
    shared = [case_id for case_id in second if case_id in first]
    by_category: dict[str, list[tuple[bool, bool]]] = {}
    for case_id in shared:
        pair = (first[case_id].get("status") == "pass", second[case_id].get("status") == "pass")
        by_category.setdefault(_category(second[case_id]), []).append(pair)
    if not shared:
        raise InputError("the two runs have no case id in common; nothing to compare")
    every = [pair for pairs in by_category.values() for pair in pairs]
    warnings = []
    for key, what in (
        ("dataset_fingerprint", "datasets"),
        ("rubric_fingerprint", "rubrics"),
        ("judge_model", "judge models"),
    ):
        old = {str(r.get(key)) for r in first.values()}
        new = {str(r.get(key)) for r in second.values()}
        if old != new:
            warnings.append(
                f"the runs used different {what} ({', '.join(sorted(old))} → "
                f"{', '.join(sorted(new))}): a difference may come from that"
            )
    return ComparisonReport(
        tuple(_paired(name, pairs) for name, pairs in sorted(by_category.items())),
        _paired("global", every),
        tuple(case_id for case_id in first if case_id not in second),
        tuple(case_id for case_id in second if case_id not in first),
        tuple(warnings),
    )


# --------------------------------------------------------------------------- holdout


@dataclass(frozen=True)
class HoldoutComparison:
    """One category's dev and holdout rates; ``suspicious``: dev above the holdout's interval."""

    category: str
    dev_passed: int
    dev_total: int
    holdout_passed: int
    holdout_total: int
    holdout_high: float | None
    suspicious: bool

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict (every field but the category)."""
        return _but_category(self)


def compare_holdout(
    dev_rows: Iterable[Mapping[str, Any]],
    holdout_rows: Iterable[Mapping[str, Any]],
    *,
    confidence: float = 0.95,
) -> list[HoldoutComparison]:
    """Development against holdout pass rates, per category and ``"global"`` (last).

    >>> dev = [{"id": str(i), "category": "tone", "status": "pass"} for i in range(40)]
    >>> hold = [{"id": f"h{i}", "category": "tone", "status": "pass" if i < 6 else "fail"}
    ...         for i in range(10)]
    >>> c = compare_holdout(dev, hold)[0]
    >>> (c.dev_passed, c.holdout_passed, c.holdout_total, c.suspicious)
    (40, 6, 10, True)
    """
    counts: dict[str, list[int]] = {}
    for side, rows in ((0, dev_rows), (2, holdout_rows)):
        for row in rows:
            slot = counts.setdefault(_category(row), [0, 0, 0, 0])
            slot[side] += row.get("status") == "pass"
            slot[side + 1] += 1
    everything = [sum(slot[i] for slot in counts.values()) for i in range(4)]
    lines = []
    for name, (dp, dn, hp, hn) in [*counts.items(), ("global", everything)]:
        high = wilson_interval(hp, hn, confidence)[1] if hn else None
        suspicious = bool(dn and high is not None and dp / dn > high)
        lines.append(HoldoutComparison(name, dp, dn, hp, hn, high, suspicious))
    return lines


def compare_holdout_rows(
    rows: Sequence[Mapping[str, Any]], held_out: float, *, salt: str = "tinyeval-holdout"
) -> list[HoldoutComparison]:
    """Split ``rows`` by the holdout hash of their ids and :func:`compare_holdout` them."""
    from .dataset import in_holdout

    rows = case_rows(rows)
    held = [in_holdout(str(r["id"]), held_out, salt=salt) for r in rows]
    dev = [r for r, h in zip(rows, held, strict=True) if not h]
    return compare_holdout(dev, [r for r, h in zip(rows, held, strict=True) if h])


def holdout_text(
    lines: Sequence[HoldoutComparison], *, held_out: float, salt: str = "tinyeval-holdout"
) -> str:
    """The development-vs-holdout comparison as aligned lines, the suspicious ones marked."""
    out = [f"\ndevelopment vs holdout ({held_out:g} held out, salt {salt!r}):"]
    width = max(len(c.category) for c in lines)
    dev, dev_width = _rate_column((c.dev_passed, c.dev_total) for c in lines)
    held, _ = _rate_column((c.holdout_passed, c.holdout_total) for c in lines)
    mark = "  ← above what the holdout supports: tuned to the development cases?"
    for c, dev_rate, holdout in zip(lines, dev, held, strict=True):
        line = f"  {c.category:<{width}}  dev {dev_rate:<{dev_width}}   holdout {holdout}"
        out.append(line + (mark if c.suspicious else ""))
    return "\n".join(out)


def refuse_unknown_categories(
    field: str, names: Iterable[str], known: Iterable[str], *, only_typos: bool = False
) -> None:
    """Refuse category names no case has (with ``only_typos``: apparent misspellings).

    >>> refuse_unknown_categories("threshold", ["tone"], {"tone", "amounts"})
    >>> refuse_unknown_categories("threshold", ["amount"], {"tone", "amounts"})
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: threshold: no case has the category 'amount'; did you mean ...
    """
    listed = sorted(known)
    for name in names:
        if name in listed:
            continue
        close = did_you_mean(name, listed)
        if close or not only_typos:
            hint = (
                f"did you mean {close!r}?" if close else f"the categories are {', '.join(listed)}"
            )
            raise InputError(f"no case has the category {name!r}; {hint}", field=field)
