"""Cache-first re-runs: a case the models' caches answer whole runs in the calling thread,
so a fully cached re-run costs no thread hops. The runner reaches this through
``_EXTRAS["wrapper"]["cache_first"]``; without it every such case goes to a worker."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from .. import cache
from ..dataset import Case
from ..models import Model, Reply
from ..records import Row
from ..runner import evaluate_case

__all__ = ["from_cache"]


class _CacheMiss(BaseException):
    """A call :class:`CacheOnly` cannot answer: a ``BaseException``, never a judge's failed call;
    :func:`from_cache` catches it and the case runs on a worker."""


class CacheOnly(Model):
    """A :class:`~tinyeval.cache.CachedModel` answering from its cache alone; its hits count
    once settled."""

    def __init__(self, model: cache.CachedModel) -> None:
        super().__init__(model.spec, temperature=model.temperature, settings=model.settings)
        self.supports_json_schema = model.supports_json_schema
        self.model = model
        self.hits = 0

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        where = self.model._where(sample, json_schema)
        try:
            stored = self.model.cache.get(self.spec, prompt, count=False, **where)
        except (sqlite3.Error, OSError):  # the real call says so, once
            stored = None
        if stored is None:
            raise _CacheMiss
        self.hits += 1
        return stored

    def settle(self) -> None:
        """Count the hits so far in the cache's statistics."""
        self.model.cache._add_hits(self.hits)
        self.hits = 0

    def forget(self) -> None:
        """Drop the hits so far (the calls will be made, and counted, again)."""
        self.hits = 0


def cache_only(model: Any) -> CacheOnly | None:
    """``model`` answering from its cache alone; None unless it is a cached, non-refreshing model.

    >>> cache_only(lambda prompt: "PASS") is None
    True
    """
    if isinstance(model, cache.CachedModel) and not model.refresh:
        return CacheOnly(model)
    return None


def from_cache(task: Mapping[str, Any]) -> Callable[[Case], Row | None] | None:
    """What evaluates a case in the calling thread when the models' caches answer its every
    call (None from it: a worker runs it), or None when that cannot be: a model without a
    cache, or a judge whose very class does not set ``calls_only_the_given_model = True``.
    Once the cache has missed clearly more often than it answered (a first run), it is not
    tried again.

    >>> from_cache({"judges": (), "generate_model": None, "regenerate": False}) is None
    True
    """
    judges = task["judges"]

    judging = cache_only(task["judge_model"]) if judges else None
    if judges and (
        judging is None
        or not all(vars(type(judge)).get("calls_only_the_given_model", False) for judge in judges)
    ):
        return None
    generate, regenerate = task["generate_model"], task["regenerate"]
    generating = cache_only(generate)
    views = [view for view in (judging, generating) if view is not None]
    if not views:  # nothing a cache could answer (or refreshing: every call is made again)
        return None
    attempt = dict(
        task, judge_model=judging or task["judge_model"], generate_model=generating or generate
    )
    answered = missed = 0

    def first_from_cache(case: Case) -> Row | None:
        nonlocal answered, missed
        generates = generate is not None and (regenerate or case.output is None)
        if missed > answered + 32 or (generates and generating is None):
            return None
        try:
            row = evaluate_case(case, **attempt)
        except _CacheMiss:
            for view in views:
                view.forget()
            missed += 1
            return None
        for view in views:
            view.settle()
        answered += 1
        return row

    return first_from_cache
