"""Development against holdout: whether the rate on the cases a team tuned on is above what the
cases it never looked at support (``tinyeval gate RESULTS --holdout FRACTION``).

The rows are split by id exactly as ``tinyeval split`` splits cases (a stable hash of the id and
the salt), so a results file of the whole suite needs no second run. A category is marked when its
development rate lies above the upper end of the holdout's Wilson interval: the rate the team sees
is higher than the unseen cases make plausible, the sign of rubrics or prompts tuned to the
development cases. The gate itself does not change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..dataset import in_holdout
from ..records import case_rows
from ..stats import format_rate, wilson_interval

SALT = "tinyeval-holdout"


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
        return {key: value for key, value in asdict(self).items() if key != "category"}


@dataclass(frozen=True)
class HoldoutReport:
    """Per category and ``"global"`` (last), development against holdout; how they were split."""

    categories: tuple[HoldoutComparison, ...]
    held_out: float
    salt: str = SALT

    def to_dict(self) -> dict[str, Any]:
        """Per category, its :meth:`HoldoutComparison.to_dict`."""
        return {c.category: c.to_dict() for c in self.categories}

    def to_text(self) -> str:
        """A line per category, marked when tuned to the development cases, it seems."""
        out = [f"\ndevelopment vs holdout ({self.held_out:g} held out, salt {self.salt!r}):"]
        width = max(len(c.category) for c in self.categories)
        dev = [format_rate(c.dev_passed, c.dev_total) for c in self.categories]
        mark = "  ← above what the holdout supports: tuned to the development cases?"
        for c, rate in zip(self.categories, dev, strict=True):
            holdout = format_rate(c.holdout_passed, c.holdout_total)
            line = f"  {c.category:<{width}}  dev {rate:<{max(map(len, dev))}}   holdout {holdout}"
            out.append(line + (mark if c.suspicious else ""))
        return "\n".join(out)


def compare_holdout(
    rows: Sequence[Mapping[str, Any]],
    held_out: float,
    *,
    salt: str = SALT,
    confidence: float = 0.95,
) -> HoldoutReport:
    """The pass rates of the development cases of ``rows`` against the held-out ones' (split
    by id as ``tinyeval split`` splits cases), per category and ``"global"`` (last).

    >>> found = compare_holdout([{"id": f"c{i}", "status": "pass"} for i in range(40)], 0.25)
    >>> [(c.category, c.dev_total + c.holdout_total, c.suspicious) for c in found.categories]
    [('default', 40, False), ('global', 40, False)]
    """
    counts: dict[str, list[int]] = {}
    for row in case_rows(rows):
        side = 2 * in_holdout(str(row["id"]), held_out, salt=salt)
        slot = counts.setdefault(str(row.get("category", "default")), [0, 0, 0, 0])
        slot[side] += row.get("status") == "pass"
        slot[side + 1] += 1
    everything = [sum(slot[i] for slot in counts.values()) for i in range(4)]
    lines = []
    for name, (dp, dn, hp, hn) in [*counts.items(), ("global", everything)]:
        high = wilson_interval(hp, hn, confidence)[1] if hn else None
        suspicious = bool(dn and high is not None and dp / dn > high)
        lines.append(HoldoutComparison(name, dp, dn, hp, hn, high, suspicious))
    return HoldoutReport(tuple(lines), held_out, salt)
