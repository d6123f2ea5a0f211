"""What the rows of a results file say they cost (``tinyeval cost --results``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..records import Row
from .cost import Price, format_tokens, format_usd, run_cost, tally_usage

__all__ = ["RowsCost", "cost_of_rows"]


@dataclass(frozen=True)
class RowsCost:
    """What the rows of a results file say they cost: the token usage they recorded and, with
    a price, the US dollars (None when no row recorded usage: unknown, never $0).

    >>> from tinyeval.scale.cost import Price
    >>> rows = [{"usage": {"input_tokens": 1500, "output_tokens": 200}}, {"usage": None}]
    >>> print(cost_of_rows(rows, Price(1.0, 5.0), source="r.jsonl"))  # doctest: +ELLIPSIS
    2 rows in r.jsonl, 1 with token usage: 1.5k tokens in, 200 out; about $0.0025 at $1.00/...
    """

    source: str
    rows: int
    rows_without_usage: int
    tokens_in: int
    tokens_out: int
    price: Price | None
    usd: float | None

    def to_dict(self) -> dict[str, Any]:
        """The figures as JSON (what ``cost --results --json`` prints)."""
        return {
            "results": self.source,
            "rows": self.rows,
            "rows_without_usage": self.rows_without_usage,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "price": None if self.price is None else self.price.to_dict(),
            "usd": None if self.usd is None else round(self.usd, 6),
        }

    def __str__(self) -> str:
        known = self.rows - self.rows_without_usage
        if not known:
            return (
                f"{self.rows:,} rows in {self.source}, none with token usage: the cost is "
                "unknown (the models called reported no usage, or no model was "
                "called)"
            )
        tokens = f"{format_tokens(self.tokens_in)} tokens in, {format_tokens(self.tokens_out)} out"
        line = f"{self.rows:,} rows in {self.source}, {known:,} with token usage: {tokens}"
        if self.usd is None:
            return f"{line}; no price given."
        return f"{line}; about {format_usd(self.usd)} at {self.price}."


def cost_of_rows(rows: Sequence[Row], price: Price | None, *, source: str) -> RowsCost:
    """Add up the token usage the rows recorded, and its cost at ``price``.

    >>> found = cost_of_rows([{"usage": {"input_tokens": 10, "output_tokens": 2}}], None,
    ...                      source="r.jsonl")
    >>> found.tokens_in, found.usd
    (10, None)
    """
    usages = [row.get("usage") if isinstance(row.get("usage"), dict) else None for row in rows]
    usage = tally_usage(usages)
    known = usage.calls - usage.unknown
    usd = None if price is None or not known else run_cost(usages, price)
    return RowsCost(
        source, usage.calls, usage.unknown, usage.input_tokens, usage.output_tokens, price, usd
    )
