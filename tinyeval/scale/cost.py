"""What calls cost, in US dollars per million input and output tokens (``in=1.0,out=5.0``).

There is deliberately no built-in price list: prices change often and a stale
table would print a confident wrong figure.

>>> print(estimate(300, 1500, 200, votes=3, orders=2, price=parse_price("in=1,out=5")))
300 cases × 3 votes × 2 orders = 1,800 judge calls: 2.7M tokens in, 360k out; about $4.50 \
a run at $1.00/$5.00 per million tokens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ..errors import InputError, plural

__all__ = [
    "CostError",
    "Estimate",
    "Price",
    "Usage",
    "estimate",
    "format_tokens",
    "format_usd",
    "parse_price",
    "run_cost",
    "tally_usage",
]

_PER_MILLION = 1_000_000


class Usage(NamedTuple):
    """Token totals over many calls; ``unknown`` counts calls whose usage was not reported."""

    calls: int
    input_tokens: int
    output_tokens: int
    unknown: int


def tally_usage(usages: Iterable[Mapping[str, Any] | None]) -> Usage:
    """Add up ``{"input_tokens", "output_tokens"}`` dicts; None counts as unknown.

    >>> tally_usage([{"input_tokens": 1500, "output_tokens": 200}, None,
    ...              {"input_tokens": 1400, "output_tokens": 180}])
    Usage(calls=3, input_tokens=2900, output_tokens=380, unknown=1)
    """
    calls = input_tokens = output_tokens = unknown = 0
    for usage in usages:
        calls += 1
        if usage is None:
            unknown += 1
            continue
        input_tokens += _tokenplural(usage, "input_tokens")
        output_tokens += _tokenplural(usage, "output_tokens")
    return Usage(calls, input_tokens, output_tokens, unknown)


def _tokenplural(usage: Mapping[str, Any], name: str) -> int:
    value = usage.get(name, 0)  # absent: none of that kind was paid for (e.g. a cache replay)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"usage {dict(usage)!r}: {name} must be an integer >= 0, got {value!r}")
    return value


def format_tokens(n: int) -> str:
    """A token count in short form, three significant digits at most.

    >>> [format_tokens(n) for n in (950, 1_500, 360_000, 999_999, 2_700_000)]
    ['950', '1.5k', '360k', '1M', '2.7M']
    """
    if n < 1000:
        return str(n)
    for scale, suffix in ((1e3, "k"), (1e6, "M"), (1e9, "B"), (1e12, "T")):
        shown = float(f"{n / scale:.3g}")
        if shown < 1000 or suffix == "T":
            return f"{shown:g}{suffix}"
    raise AssertionError("unreachable")  # pragma: no cover


class CostError(InputError):
    """A price or a count that cannot be used for a cost figure.

    >>> parse_price("in=1.0")
    Traceback (most recent call last):
    ...
    tinyeval.scale.cost.CostError: price 'in=1.0' has no 'out': expected in=USD,out=USD \
(US dollars per million tokens), e.g. in=1.0,out=5.0
    """


class Price(NamedTuple):
    """US dollars per million input tokens (``input``) and output tokens (``output``).

    >>> str(Price(0.15, 0.6))
    '$0.15/$0.60 per million tokens'
    """

    input: float
    output: float

    def __str__(self) -> str:
        return f"{format_usd(self.input)}/{format_usd(self.output)} per million tokens"

    def to_dict(self) -> dict[str, float]:
        """``{"in": …, "out": …}``, the shape ``--json`` prints."""
        return {"in": self.input, "out": self.output}


_PRICE_FORMAT = "expected in=USD,out=USD (US dollars per million tokens), e.g. in=1.0,out=5.0"


def parse_price(text: str) -> Price:
    """Read ``"in=1.0,out=5.0"`` into a :class:`Price` (a leading ``$`` is allowed).

    Raises :class:`CostError` for a missing, unknown or repeated part, or a
    value that is not a finite number >= 0.

    >>> parse_price("in=1.0, out=$5")
    Price(input=1.0, output=5.0)
    """
    values: dict[str, float] = {}
    for part in text.split(","):
        name, sep, raw = part.partition("=")
        name, raw = name.strip().lower(), raw.strip().removeprefix("$").strip()
        if not sep or name not in ("in", "out"):
            raise CostError(f"price {text!r}: cannot read {part.strip()!r}: {_PRICE_FORMAT}")
        if name in values:
            raise CostError(f"price {text!r} gives {name!r} twice: {_PRICE_FORMAT}")
        values[name] = _dollars(raw, text, name)
    for name in ("in", "out"):
        if name not in values:
            raise CostError(f"price {text!r} has no {name!r}: {_PRICE_FORMAT}")
    return Price(values["in"], values["out"])


def _dollars(raw: str, text: str, name: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise CostError(
            f"price {text!r}: {name}={raw!r} is not a number: {_PRICE_FORMAT}"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise CostError(f"price {text!r}: {name} must be a finite number >= 0, got {raw!r}")
    return value


def run_cost(usages: Iterable[Mapping[str, Any] | None], price: Price) -> float:
    """US dollars for the calls whose usage is known (None entries are skipped).

    >>> round(run_cost([{"input_tokens": 900_000, "output_tokens": 120_000}, None],
    ...                Price(1.0, 5.0)), 2)
    1.5
    """
    usage = tally_usage(usages)
    return _dollars_for(usage.input_tokens, usage.output_tokens, price)


def _dollars_for(input_tokens: int, output_tokens: int, price: Price) -> float:
    """Dollars; infinite for counts past what a float holds (a server's absurd usage)."""
    try:
        return (input_tokens * price.input + output_tokens * price.output) / _PER_MILLION
    except OverflowError:
        return math.inf


class Estimate(NamedTuple):
    """What a judged run will call and spend; ``usd`` is None when no price was given."""

    cases: int
    votes: int
    orders: int
    calls: int
    tokens_in: int
    tokens_out: int
    price: Price | None
    usd: float | None

    def __str__(self) -> str:
        calls = (
            f"{plural(self.cases, 'case')} × {plural(self.votes, 'vote')} × "
            f"{plural(self.orders, 'order')} = {plural(self.calls, 'judge call')}"
        )
        tokens = f"{format_tokens(self.tokens_in)} tokens in, {format_tokens(self.tokens_out)} out"
        if self.price is None or self.usd is None:
            return f"{calls}: {tokens}; no price given, so no dollar figure."
        return f"{calls}: {tokens}; about {format_usd(self.usd)} a run at {self.price}."

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object (totals for the whole run; price per million tokens)."""
        return {
            "cases": self.cases,
            "votes": self.votes,
            "orders": self.orders,
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "price": None if self.price is None else self.price.to_dict(),
            "usd": None if self.usd is None else round(self.usd, 6),
        }


def estimate(
    cases: int,
    tokens_in: int,
    tokens_out: int,
    *,
    votes: int = 1,
    orders: int = 1,
    price: Price | None = None,
) -> Estimate:
    """Judge calls (cases × votes × orders), tokens and dollars for one run, before running it.

    ``tokens_in``/``tokens_out`` are per call; ``orders`` is 2 for a pairwise
    judge run in both orders. Raises :class:`CostError` for a negative count
    or fewer than one vote or order.

    >>> e = estimate(300, 1500, 200, orders=2, price=Price(1.0, 5.0))
    >>> e.calls, e.tokens_in, e.tokens_out, round(e.usd, 2)
    (600, 900000, 120000, 1.5)
    """
    for name, value, least in (
        ("cases", cases, 0),
        ("tokens_in", tokens_in, 0),
        ("tokens_out", tokens_out, 0),
        ("votes", votes, 1),
        ("orders", orders, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise CostError(f"{name} must be an integer >= {least}, got {value!r}")
    calls = cases * votes * orders
    total_in, total_out = calls * tokens_in, calls * tokens_out
    usd = None if price is None else _dollars_for(total_in, total_out, price)
    return Estimate(cases, votes, orders, calls, total_in, total_out, price, usd)


def format_usd(amount: float) -> str:
    """Dollars with cents; below one dollar, at least two significant digits.

    >>> format_usd(4.5), format_usd(1234.5), format_usd(0.6), format_usd(0.075), format_usd(0.0012)
    ('$4.50', '$1,234.50', '$0.60', '$0.075', '$0.0012')
    """
    if amount == 0 or abs(amount) >= 1:
        return f"${amount:,.2f}"
    decimals = max(2, 1 - math.floor(math.log10(abs(amount))))
    return f"${amount:.{decimals}f}"


def usage_cost(usage: Mapping[str, int], price: Price) -> tuple[float, str]:
    """The dollars of a run's paid tokens at ``price``, and how the summary says them.

    >>> usage_cost({"input_tokens": 1500, "output_tokens": 200}, Price(1.0, 5.0))
    (0.0025, 'cost about $0.0025')
    """
    cost = run_cost([usage], price)
    if not math.isfinite(cost):
        return cost, "cost unknown (a reported token count is too large to be true)"
    return cost, f"cost about {format_usd(cost)}"
