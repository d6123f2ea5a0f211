"""Retrieval measured apart from generation: per-query metrics and a per-category report.

If recall@5 is 0.62, no prompt fixes the other 38%: the documents the answer
needed never reached the model. These figures say so before any judge runs.

Per query, :func:`hit_at_k`, :func:`recall_at_k`, :func:`precision_at_k`,
:func:`reciprocal_rank` and :func:`ndcg_at_k` each return a float in [0, 1]. Over many
queries, :func:`retrieval_report` gives each per category and overall, with intervals;
``RetrievalReport.check`` evaluates thresholds such as ``recall@5>=0.8``.

Conventions, the same in every function:

- ``retrieved`` is the ranked list, best first: ids (strings or whole numbers)
  or mappings holding the id under ``"id"`` (``ids_of`` reads another field).
  Ids are compared as text, so ``7`` and ``"7"`` are the same document.
- ``relevant`` is an iterable of ids (each with gain 1) or a mapping id → gain
  (a non-negative number; a gain of 0 means judged not relevant). The relevant
  set is the ids with a positive gain. An empty relevant set makes every
  metric undefined: ``UndefinedStatisticError``, never a silent 0 or 1.
- A document retrieved twice counts once, at its first rank; the repeat still
  takes up its position (a wasted slot), so later documents keep their ranks.
- ``k`` is a whole number of at least 1 (else ``InputError``). A list shorter
  than ``k`` is scored as it is: the missing positions are misses, so
  precision@k still divides by ``k`` (as ``trec_eval``'s ``P_k`` does).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

from ..errors import InputError, describe_json, did_you_mean, is_number, plural
from ..estimates.ppi import mean_interval
from ..stats import Rate, UndefinedStatisticError, format_rate

__all__ = [
    "DEFAULT_KS",
    "CategoryRetrieval",
    "MeanValue",
    "RetrievalGate",
    "RetrievalQuery",
    "RetrievalReport",
    "RetrievalThreshold",
    "RetrievalVerdict",
    "hit_at_k",
    "ids_of",
    "ndcg_at_k",
    "parse_retrieval_threshold",
    "precision_at_k",
    "queries_from_cases",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_report",
]

DocId: TypeAlias = str | int
"""A document id as it may appear in a case: a string or a whole number."""

Relevance: TypeAlias = Mapping[DocId, float] | Iterable[DocId]
"""Relevant ids (gain 1 each), or a mapping id → gain."""

DEFAULT_KS = (1, 3, 5, 10)
"""The cutoffs a report uses unless told otherwise."""

METRICS = ("hit", "recall", "precision", "ndcg", "mrr")
_METRIC_NAMES = {"hit": "hit rate", "recall": "recall", "precision": "precision", "ndcg": "nDCG"}
_ALIASES = {"hit_rate": "hit", "hitrate": "hit", "hits": "hit", "p": "precision", "r": "recall"}

_MEAN_METHOD = "Student t interval (n - 1 degrees of freedom), clipped to [0, 1]"
_HIT_METHOD = "Wilson score interval"


# ---------------------------------------------------------------- input


def _doc_id(value: Any, where: str) -> str:
    """One id as text; booleans, floats, empty strings and containers are refused."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InputError(
        f"{where}: a document id must be a non-empty string or a whole number, "
        f"got {describe_json(value)}",
        field="retrieved" if where.startswith("retrieved") else "relevant",
    )


def _not_a_list(value: Any, name: str) -> InputError | None:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        return InputError(
            f"expected a list of document ids, got {describe_json(value)}", field=name
        )
    return None


def ids_of(retrieved: Iterable[DocId | Mapping[str, Any]], id_field: str = "id") -> list[str]:
    """The ids of a ranked list, in order, as text: ids stay, mappings give ``item[id_field]``.

    >>> ids_of(["kb-1", 7])
    ['kb-1', '7']
    >>> ids_of([{"doc_id": "kb-3", "text": "Refunds take 5 days."}, "kb-9"], id_field="doc_id")
    ['kb-3', 'kb-9']
    >>> ids_of([{"id": "kb-3"}, {"doc": "kb-4"}])
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: retrieved: item 2 has no "id" key (its keys: doc)

    Raises ``InputError`` (``field`` ``"retrieved"``) for a string or a
    non-list, an item without the id field, or an id that is not a non-empty
    string or a whole number.
    """
    problem = _not_a_list(retrieved, "retrieved")
    if problem:
        raise problem
    ids = []
    for position, item in enumerate(retrieved, 1):
        if isinstance(item, Mapping):
            if id_field not in item:
                keys = ", ".join(str(key) for key in item) or "none"
                hint = did_you_mean(id_field, [str(key) for key in item])
                hint_text = f"; did you mean {hint!r}?" if hint else ""
                raise InputError(
                    f'item {position} has no "{id_field}" key (its keys: {keys}){hint_text}',
                    field="retrieved",
                )
            item = item[id_field]
        ids.append(_doc_id(item, f"retrieved item {position}"))
    return ids


def _ranking(retrieved: Iterable[DocId | Mapping[str, Any]]) -> list[str]:
    return ids_of(retrieved)


def _finite(number: float) -> bool:
    """True for a number a float holds, finite (an integer of 400 digits is not).

    >>> _finite(3), _finite(float("inf")), _finite(10**400)
    (True, False, False)
    """
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _gains(relevant: Relevance) -> dict[str, float]:
    """Relevant ids (positive gains only) mapped to their gain; zero gains are dropped."""
    gains: dict[str, float] = {}
    if isinstance(relevant, Mapping):
        for key, gain in relevant.items():
            doc = _doc_id(key, "relevant")
            if not is_number(gain) or not _finite(gain) or gain < 0:
                raise InputError(
                    f"the gain of {doc!r} must be a non-negative number, got {describe_json(gain)}",
                    field="relevant",
                )
            if gain > 0:
                gains[doc] = float(gain)
        return gains
    problem = _not_a_list(relevant, "relevant")
    if problem:
        raise InputError(
            "expected a list of document ids or an object id -> gain, "
            f"got {describe_json(relevant)}",
            field="relevant",
        )
    for position, item in enumerate(relevant, 1):
        gains[_doc_id(item, f"relevant item {position}")] = 1.0
    return gains


def _relevant(relevant: Relevance, func: str) -> dict[str, float]:
    gains = _gains(relevant)
    if not gains:
        raise UndefinedStatisticError(
            f"{func}: undefined for a query with no relevant documents (nothing to find)"
        )
    return gains


def _cutoff(k: Any, func: str) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"{func}: k must be a whole number of at least 1, got {k!r}", field="k")
    return k


def _hits(ranking: Sequence[str], gains: Mapping[str, float], k: int) -> int:
    """Distinct relevant ids among the first ``k`` positions."""
    return len({doc for doc in ranking[:k] if doc in gains})


def _checked_hits(
    retrieved: Iterable[DocId | Mapping[str, Any]], relevant: Relevance, k: int, func: str
) -> tuple[int, int, int]:
    """``(hits among the first k, k, relevant documents)``, each input checked for ``func``."""
    k = _cutoff(k, func)
    gains = _relevant(relevant, func)
    return _hits(_ranking(retrieved), gains, k), k, len(gains)


# ---------------------------------------------------------------- per query


def hit_at_k(retrieved: Iterable[DocId | Mapping[str, Any]], relevant: Relevance, k: int) -> float:
    """1.0 when at least one relevant document is among the first ``k``, else 0.0.

    >>> hit_at_k(["a", "b", "c"], {"c"}, 3), hit_at_k(["a", "b", "c"], {"c"}, 2)
    (1.0, 0.0)

    Raises ``UndefinedStatisticError`` for an empty relevant set and
    ``InputError`` for ``k`` below 1 or a malformed list.
    """
    hits, _, _ = _checked_hits(retrieved, relevant, k, "hit_at_k")
    return 1.0 if hits else 0.0


def recall_at_k(
    retrieved: Iterable[DocId | Mapping[str, Any]], relevant: Relevance, k: int
) -> float:
    """The share of the relevant documents found among the first ``k``.

    >>> recall_at_k(["a", "x", "b", "y"], ["a", "b", "c", "d"], 3)
    0.5

    Raises ``UndefinedStatisticError`` for an empty relevant set and
    ``InputError`` for ``k`` below 1 or a malformed list.
    """
    hits, _, total = _checked_hits(retrieved, relevant, k, "recall_at_k")
    return hits / total


def precision_at_k(
    retrieved: Iterable[DocId | Mapping[str, Any]], relevant: Relevance, k: int
) -> float:
    """The share of the first ``k`` positions that hold a (first-seen) relevant document.

    Always divided by ``k``, even when fewer than ``k`` documents were retrieved.

    >>> precision_at_k(["a", "x", "b"], ["a", "b"], 2), precision_at_k(["a"], ["a"], 4)
    (0.5, 0.25)

    Raises ``UndefinedStatisticError`` for an empty relevant set and
    ``InputError`` for ``k`` below 1 or a malformed list.
    """
    hits, cutoff, _ = _checked_hits(retrieved, relevant, k, "precision_at_k")
    return hits / cutoff


def reciprocal_rank(retrieved: Iterable[DocId | Mapping[str, Any]], relevant: Relevance) -> float:
    """1 / the rank of the first relevant document in the whole list; 0.0 when there is none.

    >>> reciprocal_rank(["x", "y", "a"], ["a"]), reciprocal_rank(["x"], ["a"])
    (0.3333333333333333, 0.0)

    Raises ``UndefinedStatisticError`` for an empty relevant set and
    ``InputError`` for a malformed list.
    """
    gains = _relevant(relevant, "reciprocal_rank")
    return _reciprocal_rank(_ranking(retrieved), gains)


def ndcg_at_k(
    retrieved: Iterable[DocId | Mapping[str, Any]], relevance: Relevance, k: int
) -> float:
    """Normalised discounted cumulative gain of the first ``k`` positions.

    ``DCG@k = Σ gain(doc at rank r) / log2(r + 1)`` over ranks 1..k (a repeat
    gains nothing), divided by the ideal DCG@k: the same sum over the gains
    sorted from high to low (Järvelin and Kekäläinen 2002, with linear gains,
    as ``ranx``'s ``ndcg`` and ``trec_eval``'s ``ndcg_cut``).

    >>> ndcg_at_k(["a", "b"], {"a": 1}, 2), ndcg_at_k(["b", "a"], ["a"], 2) == 1 / math.log2(3)
    (1.0, True)
    >>> round(ndcg_at_k(["b", "a", "c"], {"a": 2, "b": 1, "c": 0}, 3), 4)
    0.8597

    Raises ``UndefinedStatisticError`` when no gain is positive and
    ``InputError`` for ``k`` below 1, a negative gain or a malformed list.
    """
    func = "ndcg_at_k"
    k = _cutoff(k, func)
    gains = _relevant(relevance, func)
    return _ndcg(_ranking(retrieved), gains, k)


def _ndcg(ranking: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    seen: set[str] = set()
    dcg = 0.0
    for rank, doc in enumerate(ranking[:k], 1):
        if doc in gains and doc not in seen:
            dcg += gains[doc] / math.log2(rank + 1)
        seen.add(doc)
    ideal = sorted(gains.values(), reverse=True)[:k]
    best = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal, 1))
    return dcg / best


def _reciprocal_rank(ranking: Sequence[str], gains: Mapping[str, float]) -> float:
    for rank, doc in enumerate(ranking, 1):
        if doc in gains:
            return 1.0 / rank
    return 0.0


# ---------------------------------------------------------------- figures


class MeanValue(NamedTuple):
    """The mean of ``n`` per-query values in [0, 1], with its t interval (None for one query).

    >>> m = MeanValue.of([1.0, 0.5, 0.0, 1.0])
    >>> str(m)
    '0.625 [0.000, 1.000] (n = 4)'
    >>> str(MeanValue.of([0.5]))
    '0.500 (n = 1, no interval)'
    """

    value: float
    n: int
    low: float | None
    high: float | None

    @classmethod
    def of(cls, values: Sequence[float], confidence: float = 0.95) -> MeanValue:
        """The mean of ``values`` with its Student t interval, clipped to [0, 1]."""
        n = len(values)
        if n == 0:
            raise UndefinedStatisticError("MeanValue: a mean of no values is undefined")
        value = math.fsum(values) / n
        if n < 2:
            return cls(value, n, None, None)
        low, high = mean_interval(values, confidence)
        return cls(value, n, max(0.0, low), min(1.0, high))

    def __str__(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.value:.3f} (n = {self.n}, no interval)"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}] (n = {self.n})"

    @property
    def cell(self) -> str:
        """The value and interval to two decimals, without ``n``: ``'0.62 [0.23, 1.00]'``."""
        if self.low is None or self.high is None:
            return f"{self.value:.2f} [n/a]"
        return f"{self.value:.2f} [{self.low:.2f}, {self.high:.2f}]"

    def to_dict(self) -> dict[str, Any]:
        """``{"mean", "n", "low", "high", "text"}``.

        >>> MeanValue.of([1.0, 1.0]).to_dict()["low"]
        1.0
        """
        return {
            "mean": self.value,
            "n": self.n,
            "low": self.low,
            "high": self.high,
            "text": str(self),
        }


Figure: TypeAlias = Rate | MeanValue


@dataclass(frozen=True)
class CategoryRetrieval:
    """One category's retrieval figures (or the overall line, category ``"global"``).

    ``queries`` counts the cases that had both ``retrieved`` and a non-empty
    ``relevant``; ``without_data`` those missing either, and
    ``without_relevant`` those whose relevant set was empty: neither is in any
    figure. The mappings are keyed by k; they are empty when ``queries`` is 0.
    """

    category: str
    queries: int
    without_data: int
    without_relevant: int
    hit: Mapping[int, Rate]
    recall: Mapping[int, MeanValue]
    precision: Mapping[int, MeanValue]
    ndcg: Mapping[int, MeanValue]
    mrr: MeanValue | None

    @property
    def cases(self) -> int:
        """Every case seen for this category, with retrieval data or not."""
        return self.queries + self.without_data + self.without_relevant

    def figure(self, metric: str, k: int | None = None) -> Figure | None:
        """The figure for ``metric`` (hit, recall, precision, ndcg or mrr) at ``k``.

        None when the category has no queries. Raises ``InputError`` for an
        unknown metric or a ``k`` the report was not built with.
        """
        if metric == "mrr":
            return self.mrr
        if metric not in _METRIC_NAMES:
            raise InputError(f"unknown retrieval metric {metric!r}; known: {', '.join(METRICS)}")
        table: Mapping[int, Figure] = getattr(self, metric)
        if self.queries == 0:
            return None
        if k is None or k not in table:
            known = ", ".join(str(key) for key in table)
            raise InputError(f"{metric}@{k} was not computed (the report has k = {known})")
        return table[k]

    def to_dict(self) -> dict[str, Any]:
        """This category's ``retrieval`` object: counts, then ``"hit@1"``… ``"mrr"`` figures.

        >>> report = retrieval_report([("faq", ["a", "b"], ["b"])], ks=[1])
        >>> sorted(report.categories[0].to_dict()["metrics"])
        ['hit@1', 'mrr', 'ndcg@1', 'precision@1', 'recall@1']
        """
        metrics: dict[str, Any] = {}
        for metric in ("hit", "recall", "precision", "ndcg"):
            for k, figure in getattr(self, metric).items():
                metrics[f"{metric}@{k}"] = figure.to_dict()
        if self.mrr is not None:
            metrics["mrr"] = self.mrr.to_dict()
        return {
            "cases": self.cases,
            "queries": self.queries,
            "without_data": self.without_data,
            "without_relevant": self.without_relevant,
            "metrics": metrics,
        }


class RetrievalQuery(NamedTuple):
    """One query's retrieval data: its category, ranked ids and relevant gains (None if absent).

    >>> RetrievalQuery("billing", ("kb-1", "kb-2"), {"kb-2": 1.0}).relevant
    {'kb-2': 1.0}
    """

    category: str
    retrieved: Sequence[DocId | Mapping[str, Any]] | None
    relevant: Relevance | None


def _figures(
    name: str,
    rows: list[tuple[list[str], dict[str, float]]],
    without_data: int,
    without_relevant: int,
    ks: tuple[int, ...],
    confidence: float,
) -> CategoryRetrieval:
    hit: dict[int, Rate] = {}
    recall: dict[int, MeanValue] = {}
    precision: dict[int, MeanValue] = {}
    ndcg: dict[int, MeanValue] = {}
    mrr = None
    if rows:
        for k in ks:
            hits = [_hits(ranking, gains, k) for ranking, gains in rows]
            hit[k] = Rate.of(sum(1 for count in hits if count), len(rows), confidence)
            recall[k] = MeanValue.of(
                [count / len(gains) for count, (_, gains) in zip(hits, rows, strict=True)],
                confidence,
            )
            precision[k] = MeanValue.of([count / k for count in hits], confidence)
            ndcg[k] = MeanValue.of(
                [_ndcg(ranking, gains, k) for ranking, gains in rows], confidence
            )
        mrr = MeanValue.of(
            [_reciprocal_rank(ranking, gains) for ranking, gains in rows], confidence
        )
    return CategoryRetrieval(
        name, len(rows), without_data, without_relevant, hit, recall, precision, ndcg, mrr
    )


def _ks(ks: Iterable[int]) -> tuple[int, ...]:
    if isinstance(ks, str | bytes) or not isinstance(ks, Iterable):
        raise InputError(f"ks must be a list of whole numbers, got {ks!r}", field="k")
    values = sorted({_cutoff(k, "retrieval_report") for k in ks})
    if not values:
        raise InputError("at least one k is needed", field="k")
    return tuple(values)


def retrieval_report(
    queries: Iterable[tuple[str, Any, Any]],
    ks: Iterable[int] = DEFAULT_KS,
    *,
    confidence: float = 0.95,
) -> RetrievalReport:
    """Per category and overall: hit rate@k, mean recall@k, precision@k, nDCG@k and MRR.

    ``queries`` holds ``(category, retrieved, relevant)`` triples (such as
    :class:`RetrievalQuery`, or what :func:`queries_from_cases` returns).
    A triple whose ``retrieved`` or ``relevant`` is None is counted as a case
    without retrieval data and an empty relevant set as a case without
    relevant documents; neither enters any figure. An empty ``retrieved``
    list is a retrieval that found nothing: it is counted, and scores 0.
    Hit rates carry a Wilson
    interval; the means a Student t interval (n − 1 degrees of freedom,
    clipped to [0, 1]; none for a single query, and zero width when every
    query has the same value).

    >>> report = retrieval_report([
    ...     ("billing", ["kb-1", "kb-2"], ["kb-2"]),
    ...     ("billing", ["kb-3", "kb-1"], ["kb-3"]),
    ...     ("billing", None, None),
    ... ], ks=[1, 2])
    >>> billing = report.categories[0]
    >>> billing.queries, billing.without_data, str(billing.hit[1])
    (2, 1, '1/2 = 50.0% [9.5%, 90.5%]')
    >>> billing.mrr.value
    0.75

    Raises ``InputError`` for a bad k or a malformed list (the message names
    the query's position).
    """
    cutoffs = _ks(ks)
    order: list[str] = []
    rows: dict[str, list[tuple[list[str], dict[str, float]]]] = {}
    missing: dict[str, int] = {}
    empty: dict[str, int] = {}
    for position, (category, retrieved, relevant) in enumerate(queries, 1):
        name = str(category)
        if name not in rows:
            order.append(name)
            rows[name], missing[name], empty[name] = [], 0, 0
        if retrieved is None or relevant is None:
            missing[name] += 1
            continue
        try:
            ranking, gains = _ranking(retrieved), _gains(relevant)
        except InputError as exc:
            raise InputError(f"query {position}: {exc.reason}", field=exc.field) from None
        if gains:
            rows[name].append((ranking, gains))
        else:
            empty[name] += 1
    categories = tuple(
        _figures(name, rows[name], missing[name], empty[name], cutoffs, confidence)
        for name in order
    )
    overall = _figures(
        "global",
        [row for name in order for row in rows[name]],
        sum(missing.values()),
        sum(empty.values()),
        cutoffs,
        confidence,
    )
    return RetrievalReport(categories, overall, cutoffs, confidence)


def _field_value(case: Any, name: str) -> Any:
    """``case.<name>`` when the case type knows the key, else ``case.meta[name]``."""
    value = getattr(case, name, None) if name.isidentifier() else None
    if value is None:
        meta = getattr(case, "meta", None)
        if isinstance(meta, Mapping):
            value = meta.get(name)
    return value


def _item_ids(retrieved: Any, id_field: str | None) -> list[str]:
    if id_field is not None:
        return ids_of(retrieved, id_field)
    problem = _not_a_list(retrieved, "retrieved")
    if problem:
        raise problem
    items = list(retrieved)
    for name in ("id", "doc_id"):
        if all(not isinstance(item, Mapping) or name in item for item in items):
            return ids_of(items, name)
    return ids_of(items)  # raises, naming the first item without an id


def queries_from_cases(
    cases: Iterable[Any],
    *,
    retrieved_field: str = "retrieved",
    relevant_field: str = "relevant",
    id_field: str | None = None,
) -> list[RetrievalQuery]:
    """One :class:`RetrievalQuery` per case, read from ``case.meta`` (or a case attribute).

    Items of ``retrieved`` that are objects give their id from ``id_field``;
    by default from ``"id"``, or ``"doc_id"`` when every object has that
    instead. A case without either key gives None there (no retrieval data);
    the ids come back as text.

    >>> from types import SimpleNamespace as Case
    >>> cases = [Case(category="faq", meta={"retrieved": [{"doc_id": "kb-2", "text": "…"}],
    ...                                     "relevant": ["kb-2"]}),
    ...          Case(category="faq", meta={})]
    >>> [tuple(q) for q in queries_from_cases(cases)]
    [('faq', ('kb-2',), {'kb-2': 1.0}), ('faq', None, None)]

    Raises ``InputError`` with the case's ``path`` and ``line`` (its
    ``source`` and ``line`` attributes) and the field for malformed data.
    """
    found = []
    for case in cases:
        retrieved = _field_value(case, retrieved_field)
        relevant = _field_value(case, relevant_field)
        try:
            ranking = None if retrieved is None else tuple(_item_ids(retrieved, id_field))
            gains = None if relevant is None else _gains(relevant)
        except InputError as exc:
            field = retrieved_field if exc.field == "retrieved" else relevant_field
            raise InputError(
                exc.reason,
                path=getattr(case, "source", None),
                line=getattr(case, "line", None),
                field=field,
            ) from None
        found.append(RetrievalQuery(str(getattr(case, "category", "default")), ranking, gains))
    return found


# ---------------------------------------------------------------- thresholds


class RetrievalThreshold(NamedTuple):
    """A minimum for one retrieval figure: ``recall@5>=0.8`` is ``("recall", 5, 0.8)``.

    >>> str(RetrievalThreshold("recall", 5, 0.8)), RetrievalThreshold("mrr", None, 0.5).name
    ('recall@5>=0.8', 'mrr')
    """

    metric: str
    k: int | None
    value: float

    @property
    def name(self) -> str:
        """The figure's name: ``recall@5``, ``mrr``."""
        return self.metric if self.k is None else f"{self.metric}@{self.k}"

    def __str__(self) -> str:
        return f"{self.name}>={self.value:g}"


_THRESHOLD = re.compile(
    r"^\s*(?P<metric>[A-Za-z_]+)\s*(?:@\s*(?P<k>[^\s<>=!]*))?\s*(?P<op>[<>=!]*)\s*(?P<value>.*?)\s*$"
)


def parse_retrieval_threshold(text: str) -> RetrievalThreshold:
    """Read ``METRIC@K>=VALUE`` (or ``=``): ``recall@5>=0.8``, ``hit@1=90%``, ``mrr>=0.5``.

    Metrics: ``hit`` (also ``hit_rate``), ``recall``, ``precision``, ``ndcg``
    and ``mrr`` (which has no k). The value is a fraction or a percentage.

    >>> parse_retrieval_threshold("recall@5=0.8")
    RetrievalThreshold(metric='recall', k=5, value=0.8)
    >>> parse_retrieval_threshold(" hit_rate@1 >= 90% ")
    RetrievalThreshold(metric='hit', k=1, value=0.9)
    >>> parse_retrieval_threshold("recal@5>=0.8")
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: retrieval threshold 'recal@5>=0.8': unknown metric 'recal'; \
did you mean 'recall'? (known: hit, recall, precision, ndcg, mrr)

    Raises ``InputError`` for anything else, saying what was expected.
    """
    if not isinstance(text, str):
        raise InputError(f"a retrieval threshold must be text like 'recall@5>=0.8', got {text!r}")

    def problem(reason: str) -> InputError:
        return InputError(f"retrieval threshold {text!r}: {reason}")

    match = _THRESHOLD.match(text)
    if not match or not match["op"]:
        raise problem("expected METRIC@K>=VALUE, such as 'recall@5>=0.8' or 'mrr>=0.5'")
    raw_metric = match["metric"].lower()
    metric = _ALIASES.get(raw_metric, raw_metric)
    if metric not in METRICS:
        hint = did_you_mean(raw_metric, METRICS)
        hint_text = f"did you mean {hint!r}? " if hint else ""
        raise problem(f"unknown metric {raw_metric!r}; {hint_text}(known: {', '.join(METRICS)})")
    k: int | None = None
    if metric == "mrr":
        if match["k"] is not None:
            raise problem("mrr takes no @k: it uses the first relevant document at any rank")
    else:
        if match["k"] is None:
            raise problem(f"{metric} needs a cutoff, such as '{metric}@5>=0.8'")
        if not match["k"].isdigit() or int(match["k"]) < 1:
            raise problem(f"k must be a whole number of at least 1, got {match['k']!r}")
        k = int(match["k"])
    if match["op"] not in (">=", "="):
        raise problem(f"a threshold is a minimum: use '>=' (or '='), not {match['op']!r}")
    raw = match["value"]
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also false for NaN
        raise problem(f"the value must be between 0 and 1 (or 0% and 100%), got {raw!r}")
    return RetrievalThreshold(metric, k, value)


@dataclass(frozen=True)
class RetrievalVerdict:
    """One threshold on one category: the figure, what was compared, and whether it blocks."""

    category: str
    threshold: RetrievalThreshold
    queries: int
    value: float | None
    low: float | None
    high: float | None
    measured: float | None
    blocking: bool
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a JSON-ready dict.

        >>> t = RetrievalThreshold("recall", 5, 0.8)
        >>> RetrievalVerdict("faq", t, 10, 0.7, 0.5, 0.9, 0.7, True).to_dict()["threshold"]
        'recall@5>=0.8'
        """
        return {
            "category": self.category,
            "threshold": str(self.threshold),
            "metric": self.threshold.name,
            "minimum": self.threshold.value,
            "queries": self.queries,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "measured": self.measured,
            "blocking": self.blocking,
            "note": self.note,
        }


@dataclass(frozen=True)
class RetrievalGate:
    """Every (category, threshold) verdict; a category blocks when any of its verdicts does."""

    verdicts: tuple[RetrievalVerdict, ...]
    on: str

    @property
    def blocking(self) -> tuple[str, ...]:
        """The categories that block, in report order, each once."""
        return tuple(dict.fromkeys(v.category for v in self.verdicts if v.blocking))

    @property
    def passed(self) -> bool:
        """True when no category blocks."""
        return not self.blocking

    def to_dict(self) -> dict[str, Any]:
        """``{"passed", "on", "blocking", "verdicts"}``.

        >>> report = retrieval_report([("faq", ["a"], ["a"])], ks=[1])
        >>> report.check(["hit@1>=0.5"]).to_dict()["blocking"]
        []
        """
        return {
            "passed": self.passed,
            "on": self.on,
            "blocking": list(self.blocking),
            "verdicts": [v.to_dict() for v in self.verdicts],
        }

    def to_text(self) -> str:
        """One line per verdict: ``faq  recall@5>=0.8  0.700 [0.500, 0.900]  BLOCKS``.

        >>> report = retrieval_report([("faq", ["a"], ["a"]), ("faq", ["b"], ["a"])], ks=[1])
        >>> print(report.check(["hit@1>=0.8"]).to_text())
        retrieval thresholds (on the observed value)
          faq  hit@1>=0.8  1/2 = 50.0% [9.5%, 90.5%]  BLOCKS
        """
        basis = "the lower bound of the interval" if self.on == "lower" else "the observed value"
        lines = [f"retrieval thresholds (on {basis})"]
        rows: list[tuple[str, ...]] = []
        for v in self.verdicts:
            if v.value is None:
                shown = v.note or "n/a"
            elif v.threshold.metric == "hit":
                hits = round(v.value * v.queries)
                shown = format_rate(hits, v.queries)
            elif v.low is None or v.high is None:
                shown = f"{v.value:.3f} [n/a]"
            else:
                shown = f"{v.value:.3f} [{v.low:.3f}, {v.high:.3f}]"
            if v.note and v.value is not None:
                shown = f"{shown} ({v.note})"
            rows.append((v.category, str(v.threshold), shown, "BLOCKS" if v.blocking else "ok"))
        lines.extend(_aligned(rows, indent="  "))
        return "\n".join(lines)


def _aligned(rows: list[tuple[str, ...]], indent: str = "") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [
        (
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def _queries_cell(figures: CategoryRetrieval) -> str:
    """``'16'``, or ``'16 of 17'`` when some of the category's cases had no retrieval data."""
    if figures.queries == figures.cases:
        return str(figures.queries)
    return f"{figures.queries} of {figures.cases}"


def _threshold(value: str | RetrievalThreshold) -> RetrievalThreshold:
    if isinstance(value, RetrievalThreshold):
        return value
    return parse_retrieval_threshold(value)


@dataclass(frozen=True)
class RetrievalReport:
    """Retrieval figures per category and overall; build it with :func:`retrieval_report`."""

    categories: tuple[CategoryRetrieval, ...]
    overall: CategoryRetrieval
    ks: tuple[int, ...]
    confidence: float

    def category(self, name: str) -> CategoryRetrieval:
        """The figures of one category; ``InputError`` when there is no such category."""
        for figures in self.categories:
            if figures.category == name:
                return figures
        known = ", ".join(c.category for c in self.categories) or "none"
        raise InputError(f"no category {name!r} in the retrieval report (categories: {known})")

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON: the intervals' methods, then one ``retrieval`` object per category.

        >>> d = retrieval_report([("faq", ["a", "b"], ["b"])], ks=[1, 5]).to_dict()
        >>> d["ks"], d["categories"]["faq"]["metrics"]["recall@5"]["mean"], d["intervals"]["mean"]
        ([1, 5], 1.0, 'Student t interval (n - 1 degrees of freedom), clipped to [0, 1]')
        """
        return {
            "ks": list(self.ks),
            "confidence": self.confidence,
            "intervals": {"hit": _HIT_METHOD, "mean": _MEAN_METHOD},
            "categories": {c.category: c.to_dict() for c in self.categories},
            "overall": self.overall.to_dict(),
        }

    def to_text(self) -> str:
        """An aligned table, one row per category and k, with the count of cases that had data.

        >>> report = retrieval_report(
        ...     [("faq", ["a", "b"], ["b"]), ("faq", ["b"], ["b"]), ("faq", None, None)], ks=[1])
        >>> print(report.to_text())  # doctest: +NORMALIZE_WHITESPACE
        retrieval: 2 of 3 cases had retrieval data (1 without retrieved/relevant)
        means with a 95% Student t interval (n - 1 df, clipped to [0, 1]); hit rate with Wilson
        category  queries  k  hit rate                   recall             precision          nDCG
          MRR
        faq       2 of 3   1  1/2 = 50.0% [9.5%, 90.5%]  0.50 [0.00, 1.00]  0.50 [0.00, 1.00]
          0.50 [0.00, 1.00]  0.75 [0.00, 1.00]
        """
        overall = self.overall
        parts = []
        if overall.without_data:
            parts.append(f"{overall.without_data} without retrieved/relevant")
        if overall.without_relevant:
            parts.append(f"{overall.without_relevant} with an empty relevant list")
        extra = f" ({'; '.join(parts)})" if parts else ""
        lines = [
            f"retrieval: {overall.queries} of {plural(overall.cases, 'case')} had retrieval "
            f"data{extra}",
            f"means with a {self.confidence:.0%} Student t interval (n - 1 df, clipped to [0, 1]);"
            " hit rate with Wilson",
        ]
        header = ("category", "queries", "k", "hit rate", "recall", "precision", "nDCG", "MRR")
        rows: list[tuple[str, ...]] = [header]
        shown = list(self.categories)
        if len(shown) > 1:
            shown.append(overall)
        for figures in shown:
            if figures.queries == 0:
                rows.append(
                    (figures.category, _queries_cell(figures), "-", "no retrieval data") + ("",) * 4
                )
                continue
            for index, k in enumerate(self.ks):
                first = index == 0
                rows.append(
                    (
                        figures.category if first else "",
                        _queries_cell(figures) if first else "",
                        str(k),
                        str(figures.hit[k]),
                        figures.recall[k].cell,
                        figures.precision[k].cell,
                        figures.ndcg[k].cell,
                        figures.mrr.cell if first and figures.mrr is not None else "",
                    )
                )
        lines.extend(_aligned(rows))
        return "\n".join(lines)

    def check(
        self,
        thresholds: Iterable[str | RetrievalThreshold]
        | Mapping[str, Iterable[str | RetrievalThreshold]],
        *,
        on: str = "rate",
    ) -> RetrievalGate:
        """Evaluate minimums per category; a category blocks when a figure is below one.

        ``on="rate"`` (the default) compares the observed value (the hit rate,
        the mean); ``on="lower"`` the lower end of its interval, as
        :func:`tinyeval.gate` does with pass rates. A list of thresholds
        applies to every category; a mapping ``category → thresholds`` to the
        named categories only. A category with no queries blocks under any
        threshold (retrieval data that vanished must not pass), and so does a
        mean over a single query under ``on="lower"`` (it has no interval).
        The overall line is never gated.

        >>> report = retrieval_report(
        ...     [("faq", ["a", "b"], ["a"]), ("faq", ["x", "y"], ["a"]),
        ...      ("billing", ["c"], ["c"])], ks=[1, 5])
        >>> report.check(["recall@5>=0.8"]).blocking
        ('faq',)
        >>> report.check({"billing": ["mrr>=0.9"]}, on="lower").passed
        False

        Raises ``InputError`` for an unknown ``on``, a threshold that does not
        parse, or a k the report was not built with.
        """
        if on not in ("rate", "lower"):
            raise InputError(f'"on" must be "rate" or "lower", got {on!r}')
        if isinstance(thresholds, Mapping):
            plan = [(name, [_threshold(t) for t in items]) for name, items in thresholds.items()]
        else:
            parsed = [_threshold(t) for t in thresholds]
            plan = [(c.category, parsed) for c in self.categories]
        for _, items in plan:
            for t in items:
                if t.k is not None and t.k not in self.ks:
                    known = ", ".join(map(str, self.ks))
                    raise InputError(
                        f"retrieval threshold {str(t)!r}: the report has no k = {t.k} "
                        f"(it was built with k = {known}); add {t.k} to the cutoffs"
                    )
        verdicts = []
        for name, items in plan:
            present = [c for c in self.categories if c.category == name]
            figures = present[0] if present else None
            for t in items:
                verdicts.append(_verdict(name, figures, t, on))
        return RetrievalGate(tuple(verdicts), on)


def _verdict(
    name: str, figures: CategoryRetrieval | None, threshold: RetrievalThreshold, on: str
) -> RetrievalVerdict:
    if figures is None or figures.queries == 0:
        note = "no such category" if figures is None else "no queries with retrieval data"
        return RetrievalVerdict(name, threshold, 0, None, None, None, None, True, note)
    figure = figures.figure(threshold.metric, threshold.k)
    assert figure is not None  # the category has queries
    value = figure.value
    low, high = figure.low, figure.high
    measured = low if on == "lower" else value
    if measured is None:
        return RetrievalVerdict(
            name,
            threshold,
            figures.queries,
            value,
            low,
            high,
            None,
            True,
            "one query: no interval to gate on",
        )
    blocking = measured < threshold.value
    return RetrievalVerdict(
        name, threshold, figures.queries, value, low, high, measured, blocking, None
    )
