"""Spending: the spend cap (a run observer that stops taking cases once what was spent, plus
what the cases in flight will likely cost, would pass a number of US dollars), and what a
dry run would cost."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..models import USAGE_KEYS, add_usage
from ..records import Row
from ..runner import Observer, RunResult
from .cost import Price, format_usd, parse_price, run_cost

__all__ = ["SpendCap", "make", "plan_cost", "plan_cost_line"]


class SpendCap(Observer):
    """Stops the run (incomplete; a resumed run continues) once the spend would reach
    ``max_cost`` dollars at ``price``.

    >>> cap = SpendCap(1.0, Price(1.0, 1.0))
    >>> result = RunResult(usage={"input_tokens": 2_000_000, "output_tokens": 0})
    >>> cap.row({}, result)
    'the spend cap of $1.00 was reached: $2.00 spent, about $0.00 more in flight'
    """

    name = "max_cost"

    def __init__(self, max_cost: float, price: Price | None, *, unknown: str = "stop") -> None:
        if price is None or isinstance(max_cost, bool) or not max_cost > 0:
            raise InputError(
                "max_cost needs a price and a positive number of dollars", field="max_cost"
            )
        if unknown not in ("stop", "allow"):
            raise InputError(f"expected stop or allow, got {unknown!r}", field="max_cost_unknown")
        self.max_cost, self.price, self.unknown = float(max_cost), price, unknown

    def row(self, row: Row, result: RunResult) -> str | None:
        """Why the run must stop: a model call whose spend cannot be measured (unless
        ``unknown`` is ``allow``), or the spent plus the in-flight cases' likely cost reaching
        the cap."""
        unmetered = _unmetered(row)
        if unmetered and self.unknown == "stop":
            return (
                f"the spend cannot be measured ({unmetered}), so the spend cap of "
                f"{format_usd(self.max_cost)} cannot be kept; --max-cost-unknown allow (suite "
                "key max_cost_unknown) goes on without a meter"
            )
        usage = {key: result.usage.get(key, 0) for key in ("input_tokens", "output_tokens")}
        spent = run_cost([usage], self.price)
        done = max(result.total - result.resumed, 1)  # resumed rows are not this run's
        projected = spent + spent / done * result.in_flight
        if projected < self.max_cost:
            return None
        return (
            f"the spend cap of {format_usd(self.max_cost)} was reached: {format_usd(spent)} "
            f"spent, about {format_usd(projected - spent)} more in flight"
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"max_cost", "price"}``."""
        return {"max_cost": self.max_cost, "price": str(self.price)}


_MOST_TOKENS = 10**12  # a count past it is no meter reading (and would overflow a float)


def _unmetered(row: Row) -> str | None:
    """What in ``row`` was called without a usable token count, or None.

    >>> _unmetered({"id": "a", "generate_model": "openai:m", "judges": {}, "usage": None})
    'openai:m reported no token usage for case a'
    """
    judged: dict[str, int] = {}
    for data in (row.get("judges") or {}).values():
        usage = data.get("usage") if isinstance(data, dict) else None
        if row.get("judge_model") in (None, "builtin") or data.get("error"):
            continue
        if not (isinstance(usage, dict) and _in_bounds(usage) and any(usage.values())):
            return f"{row.get('judge_model')} reported no token usage for case {row.get('id')}"
        add_usage(judged, usage)
    total = row.get("usage") or {}
    if not _in_bounds(total):
        return f"a token count of case {row.get('id')} is too large to be true"
    if row.get("generate_model") and not row.get("error"):
        kinds = ("input_tokens", "cached_input_tokens")
        if sum(total.get(k, 0) for k in kinds) <= sum(judged.get(k, 0) for k in kinds):
            return f"{row['generate_model']} reported no token usage for case {row.get('id')}"
    return None


def _in_bounds(usage: Any) -> bool:
    """Token counts a meter can use: integers from 0 to a trillion."""
    return isinstance(usage, dict) and all(
        isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= _MOST_TOKENS
        for n in (usage.get(key, 0) for key in USAGE_KEYS)
    )


def make(settings: Any, ready: Any) -> SpendCap:
    """The observer of ``max_cost`` (with ``price``, a :class:`Price` or its text)."""
    price = settings.price
    return SpendCap(
        settings.max_cost,
        parse_price(price) if isinstance(price, str) else price,
        unknown=settings.max_cost_unknown,
    )


def plan_cost(plan: Any, price: Price) -> float:
    """US dollars for a dry run's (:class:`tinyeval.scale.plan.DryRun`) billable input tokens.

    >>> from tinyeval.scale.plan import DryRun
    >>> plan_cost(DryRun(calls={"generate": 1, "judge": 0}, tokens_in={"generate": 10**6,
    ...                  "judge": 0}), Price(2.0, 8.0))
    2.0
    """
    return run_cost([{"input_tokens": plan.billable_tokens(), "output_tokens": 0}], price)


def plan_cost_line(plan: Any, price: Price) -> str:
    """The dry run's cost, as a line of its text."""
    return (
        f"  cost of the input tokens not in the cache: about {format_usd(plan_cost(plan, price))}"
        f" at {price} (output tokens come on top)"
    )
