"""The one ``call_model`` contract, the reply it returns, and what calls cost.

Anything that answers a prompt is a model: a ``prompt -> str`` function, sync
or async, or one of the adapters :func:`tinyeval.models.resolve` builds from a
spec. Every caller in the package (the judges, generation, pairwise runs) goes
through :func:`ask`, so the rules are the same everywhere:

- ``sample`` (which independent sample of this prompt: votes, trials) and
  ``json_schema`` (a schema the reply should follow) are passed only to a
  callable that names them as parameters. A ``**kwargs`` catch-all does not
  receive them: a function that forwards its keywords to a client library is
  never handed arguments that library does not know.
- An awaitable result (an ``async def`` model) is awaited on one long-lived
  event loop that tinyeval keeps in a background thread, so async models work
  the same inside or outside a running loop, and a client bound to a loop
  keeps working from one call to the next.
- Anything but a string is an error, never coerced.

A reply may be a :class:`Reply`: a ``str`` that also carries token usage, the
model name the server reported, whether it came from the cache, and latency.

What calls cost. Prices are given by the user as US dollars per million input
and output tokens (``in=1.0,out=5.0``). There is deliberately no built-in
vendor price list: prices change often and a stale table would print a
confident wrong figure. Look the price up on the vendor's page.

The worked example: 300 cases with 1,500 tokens in and 200 out per call,
judged in both orders (pairwise with position swap), at $1 / $5 per million
tokens. 300 × 2 = 600 calls; 600 × 1,500 = 900k tokens in → $0.90;
600 × 200 = 120k tokens out → $0.60; $1.50 a run, $4.50 with three votes.

>>> print(estimate(300, 1500, 200, votes=3, orders=2, price=parse_price("in=1,out=5")))
300 cases × 3 votes × 2 orders = 1,800 judge calls: 2.7M tokens in, 360k out; about $4.50 \
a run at $1.00/$5.00 per million tokens.
"""

from __future__ import annotations

import _thread
import inspect
import json
import math
import sys
import threading
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from .errors import InputError, plural

if TYPE_CHECKING:  # asyncio is imported on the first awaitable: a sync run never pays for it
    import asyncio

__all__ = [
    "USAGE_KEYS",
    "CallModel",
    "ChatPrompt",
    "CostError",
    "Estimate",
    "Price",
    "Reply",
    "Usage",
    "accepted_keywords",
    "add_usage",
    "ask",
    "estimate",
    "format_tokens",
    "format_usd",
    "model_spec",
    "parse_price",
    "reported_model",
    "run_awaitable",
    "run_cost",
    "sum_usage",
    "tally_usage",
]

CallModel = Callable[..., Any]
"""Any model: ``call_model(prompt, **keywords)`` returns a ``str`` or an awaitable of one."""

_T = TypeVar("_T")


# === The reply ===


class Reply(str):
    """A model's reply: the text itself, plus what is known about the call.

    Attributes: ``usage`` (``{"input_tokens": int, "output_tokens": int}`` or
    None), ``model`` (the model name the server reported, or None),
    ``cached`` (True when served from a :class:`~tinyeval.cache.ResponseCache`)
    and ``latency_ms`` (wall time of the call, retries and waits included).

    >>> reply = Reply("PASS", usage={"input_tokens": 12, "output_tokens": 1})
    >>> reply == "PASS", reply.usage["output_tokens"], reply.cached
    (True, 1, False)
    """

    usage: dict[str, int] | None
    model: str | None
    cached: bool
    latency_ms: float | None

    def __new__(
        cls,
        text: str,
        *,
        usage: Mapping[str, int] | None = None,
        model: str | None = None,
        cached: bool = False,
        latency_ms: float | None = None,
    ) -> Reply:
        self = super().__new__(cls, text)
        self.usage = dict(usage) if usage is not None else None
        self.model = model
        self.cached = cached
        self.latency_ms = latency_ms
        return self

    def __repr__(self) -> str:
        return (
            f"Reply({str(self)!r}, usage={self.usage!r}, model={self.model!r}, "
            f"cached={self.cached!r})"
        )


class ChatPrompt(str):
    """A conversation sent to a chat model: the message list, with roles, kept whole.

    It is still a ``str`` (the contract is ``prompt -> str``): its text is the
    OpenAI-shaped message list as JSON, which is what a ``cmd:`` or ``py:``
    model receives, and what the cache keys on. Chat adapters send
    :attr:`messages` as they are (the Anthropic adapter sends
    :attr:`anthropic_messages` with :attr:`system` apart), with :attr:`tools`
    (OpenAI function definitions) when the case gives them.

    >>> prompt = ChatPrompt([{"role": "system", "content": "Be brief."},
    ...                      {"role": "user", "content": "Hours?"}])
    >>> str(prompt)
    '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hours?"}]'
    >>> prompt.system, prompt.messages[-1]["content"]
    ('Be brief.', 'Hours?')
    """

    messages: tuple[dict[str, Any], ...]
    anthropic_messages: tuple[dict[str, Any], ...]
    system: str | None
    tools: tuple[dict[str, Any], ...]

    def __new__(
        cls,
        messages: Iterable[Mapping[str, Any]],
        *,
        anthropic_messages: Iterable[Mapping[str, Any]] | None = None,
        tools: Iterable[Mapping[str, Any]] = (),
    ) -> ChatPrompt:
        listed = tuple(dict(message) for message in messages)
        self = super().__new__(cls, json.dumps(listed, ensure_ascii=False))
        self.messages = listed
        systems = [m.get("content") for m in listed if m.get("role") == "system"]
        self.system = "\n\n".join(str(text) for text in systems if text) or None
        if anthropic_messages is None:
            anthropic_messages = [m for m in listed if m.get("role") != "system"]
        self.anthropic_messages = tuple(dict(message) for message in anthropic_messages)
        self.tools = tuple(dict(tool) for tool in tools)
        return self

    @classmethod
    def of(cls, conversation: Any, *, tools: Iterable[Mapping[str, Any]] = ()) -> ChatPrompt:
        """The prompt for a :class:`~tinyeval.agents.conversation.Conversation`.

        >>> from tinyeval.agents.conversation import Conversation
        >>> c = Conversation.from_messages([{"role": "user", "content": "Hi"}])
        >>> ChatPrompt.of(c).messages
        ({'role': 'user', 'content': 'Hi'},)
        """
        return cls(
            conversation.to_messages("openai"),
            anthropic_messages=conversation.to_messages("anthropic"),
            tools=tools,
        )


# === Calling a model ===

_KEYWORDS = ("sample", "json_schema")
_KEYWORDS_SEEN: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()
_KEYWORDS_LOCK = threading.Lock()


def _signature_keywords(call_model: CallModel) -> frozenset[str]:
    try:
        parameters = inspect.signature(call_model).parameters
    except (TypeError, ValueError):  # builtins and C callables without a signature
        return frozenset()
    by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(
        name for name in _KEYWORDS if name in parameters and parameters[name].kind in by_name
    )


def accepted_keywords(call_model: CallModel) -> frozenset[str]:
    """Which of ``sample`` and ``json_schema`` ``call_model`` takes (checked once per callable).

    Only a parameter with that very name counts; a ``**kwargs`` catch-all does
    not, and a callable without an inspectable signature takes neither.

    >>> sorted(accepted_keywords(lambda prompt, *, sample=0, json_schema=None: prompt))
    ['json_schema', 'sample']
    >>> accepted_keywords(lambda prompt, **kwargs: prompt), accepted_keywords(len)
    (frozenset(), frozenset())
    """
    try:  # one dict lookup, atomic as it is: no lock (the writes below take one)
        known = _KEYWORDS_SEEN.get(call_model)
    except TypeError:  # unhashable or not weakly referenceable: just look
        return _signature_keywords(call_model)
    if known is None:
        known = _signature_keywords(call_model)
        try:
            with _KEYWORDS_LOCK:
                _KEYWORDS_SEEN[call_model] = known
        except TypeError:
            pass
    return known


class _Loop:
    """One event loop in a daemon thread, started on first use, shared by every call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, awaitable: Awaitable[_T]) -> _T:
        import asyncio

        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._get()
        if _running_loop() is loop:  # awaited from a coroutine on our own loop: cannot block it
            raise RuntimeError("a model awaited from inside tinyeval's own event loop")
        # A bare lock, released by the task's done-callback, hands the result back: half
        # the cost of run_coroutine_threadsafe's future, which each call paid twice over.
        finished = _thread.allocate_lock()
        finished.acquire()
        tasks: list[asyncio.Future[_T]] = []

        def start() -> None:
            if inspect.iscoroutine(awaitable):  # the usual: an async def's call, run as a task
                task = loop.create_task(awaitable)
            else:
                task = asyncio.ensure_future(_awaited(awaitable), loop=loop)
            tasks.append(task)
            task.add_done_callback(lambda _: finished.release())

        loop.call_soon_threadsafe(start)
        try:
            finished.acquire()
        except BaseException:  # interrupted while waiting: the call is not to go on
            loop.call_soon_threadsafe(lambda: [task.cancel() for task in tasks])
            raise
        return tasks[0].result()

    def _get(self) -> asyncio.AbstractEventLoop:
        import asyncio

        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="tinyeval-asyncio", daemon=True
                )
                thread.start()
                self._loop = loop
            return self._loop


def _running_loop() -> asyncio.AbstractEventLoop | None:
    asyncio = sys.modules.get("asyncio")  # a loop can run only once asyncio is imported
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _awaited(awaitable: Awaitable[_T]) -> _T:
    return await awaitable


_LOOP = _Loop()


def run_awaitable(awaitable: Awaitable[_T]) -> _T:
    """Wait for ``awaitable`` on tinyeval's long-lived event loop and return its result.

    It works the same whether or not the calling thread runs an event loop.

    >>> async def reply():
    ...     return "PASS"
    >>> run_awaitable(reply())
    'PASS'
    """
    return _LOOP.run(awaitable)


def ask(
    call_model: CallModel,
    prompt: str,
    *,
    sample: int = 0,
    json_schema: Mapping[str, Any] | None = None,
) -> str:
    """One reply from any model callable, by the rules in the module docstring.

    ``sample`` and ``json_schema`` are passed only when it names them, an
    awaitable is awaited, and anything but a string raises ``TypeError``.
    Whatever the model raises is raised.

    >>> ask(lambda prompt: prompt.upper(), "pass")
    'PASS'
    >>> ask(lambda prompt, *, sample=0: f"sample {sample}", "x", sample=2)
    'sample 2'
    >>> async def judge(prompt):
    ...     return "FAIL"
    >>> ask(judge, "x")
    'FAIL'
    """
    accepted = accepted_keywords(call_model)
    keywords: dict[str, Any] = {}
    if "sample" in accepted:
        keywords["sample"] = sample
    if json_schema is not None and "json_schema" in accepted:
        keywords["json_schema"] = json_schema
    reply = call_model(prompt, **keywords)
    if type(reply) is str:
        return reply
    if inspect.isawaitable(reply):
        reply = run_awaitable(reply)
    if not isinstance(reply, str):
        raise TypeError(f"call_model returned {type(reply).__name__}, expected str")
    return reply


def model_spec(call_model: Any) -> str | None:
    """A readable name for a model callable: its ``spec`` if it has one, else ``py:MODULE:NAME``.

    >>> model_spec(None) is None
    True
    >>> def my_judge(prompt): return "PASS"
    >>> model_spec(my_judge)
    'py:tinyeval.calls:my_judge'
    """
    if call_model is None:
        return None
    spec = getattr(call_model, "spec", None)
    if isinstance(spec, str):
        return spec
    module = getattr(call_model, "__module__", None) or "unknown"
    name = getattr(call_model, "__qualname__", None) or type(call_model).__qualname__
    return f"py:{module}:{name}"


# === Token usage ===

USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens", "cached_output_tokens")
"""The token counts a row's ``usage`` holds; ``cached_*`` were replayed from the cache, not paid."""


def add_usage(total: dict[str, int], usage: Any, *, cached: bool = False) -> None:
    """Add one call's token counts to ``total``; with ``cached`` they count as ``cached_*``.

    >>> total = {}
    >>> add_usage(total, {"input_tokens": 10, "output_tokens": 2})
    >>> add_usage(total, {"input_tokens": 10, "output_tokens": 2}, cached=True)
    >>> total
    {'input_tokens': 10, 'output_tokens': 2, 'cached_input_tokens': 10, 'cached_output_tokens': 2}
    """
    if usage is None or not isinstance(usage, Mapping):
        return
    for key in USAGE_KEYS:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value:
            name = f"cached_{key}" if cached and not key.startswith("cached_") else key
            total[name] = total.get(name, 0) + value


def sum_usage(replies: Iterable[str]) -> dict[str, int] | None:
    """Token counts over replies (``cached_*`` for cache replays); None when none reported any.

    >>> sum_usage([Reply("a", usage={"input_tokens": 3, "output_tokens": 1}), "plain"])
    {'input_tokens': 3, 'output_tokens': 1}
    >>> sum_usage(["plain"]) is None
    True
    """
    total: Counter[str] = Counter()
    seen = False
    for reply in replies:
        usage = getattr(reply, "usage", None)
        if isinstance(usage, Mapping):
            seen = True
            part: dict[str, int] = {}
            add_usage(part, usage, cached=getattr(reply, "cached", False) is True)
            total.update(part)
    return dict(total) if seen else None


def reported_model(replies: Iterable[str]) -> str | None:
    """The first model name a server reported among ``replies``, or None.

    >>> reported_model(["x", Reply("y", model="gpt-4o-mini-2024-07-18")])
    'gpt-4o-mini-2024-07-18'
    """
    for reply in replies:
        model = getattr(reply, "model", None)
        if isinstance(model, str) and model:
            return model
    return None


# === What calls cost ===

_PER_MILLION = 1_000_000


class CostError(InputError):
    """A price or a count that cannot be used for a cost figure.

    >>> parse_price("in=1.0")
    Traceback (most recent call last):
    ...
    tinyeval.calls.CostError: price 'in=1.0' has no 'out': expected in=USD,out=USD \
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
    """Read ``"in=1.0,out=5.0"`` (US dollars per million tokens) into a :class:`Price`.

    A leading ``$`` on a number is allowed. Raises :class:`CostError` for a
    missing or unknown part, a repeated part, or a value that is not a
    finite number >= 0.

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
        raise CostError(f"usage {dict(usage)!r}: {name} must be an integer >= 0, got {value!r}")
    return value


def run_cost(usages: Iterable[Mapping[str, Any] | None], price: Price) -> float:
    """US dollars for the calls whose usage is known (None entries are skipped).

    Use :func:`tally_usage` to see how many calls had no usage to count.

    >>> round(run_cost([{"input_tokens": 900_000, "output_tokens": 120_000}, None],
    ...                Price(1.0, 5.0)), 2)
    1.5
    """
    usage = tally_usage(usages)
    return _dollars_for(usage.input_tokens, usage.output_tokens, price)


def _dollars_for(input_tokens: int, output_tokens: int, price: Price) -> float:
    return (input_tokens * price.input + output_tokens * price.output) / _PER_MILLION


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
    """Judge calls, tokens and dollars for one run, before running it.

    ``tokens_in`` and ``tokens_out`` are per judge call; ``votes`` is samples
    per case; ``orders`` is 2 for a pairwise judge run in both orders.
    Calls = cases × votes × orders. Raises :class:`CostError` for a negative
    count or fewer than one vote or order.

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


def format_tokens(n: int) -> str:
    """A token count in short form: ``950``, ``1.5k``, ``360k``, ``2.7M``, ``1.2B``.

    Three significant digits at most.

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


def format_usd(amount: float) -> str:
    """Dollars with cents; below one dollar, at least two significant digits.

    >>> format_usd(4.5), format_usd(1234.5), format_usd(0.6), format_usd(0.075), format_usd(0.0012)
    ('$4.50', '$1,234.50', '$0.60', '$0.075', '$0.0012')
    """
    if amount == 0 or abs(amount) >= 1:
        return f"${amount:,.2f}"
    decimals = max(2, 1 - math.floor(math.log10(abs(amount))))
    return f"${amount:.{decimals}f}"
