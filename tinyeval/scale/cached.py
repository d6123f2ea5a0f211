"""Cache-first re-runs: a case the models' caches answer whole runs in the calling thread,
so a fully cached re-run costs no thread hops. The runner reaches this through
``_EXTRAS["wrapper"]["cache_first"]``; without it every such case goes to a worker."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .. import cache
from ..dataset import Case
from ..records import Row
from ..runner import evaluate_case

__all__ = ["from_cache"]


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

    def answering(model: Any) -> Any:  # the model answering from its cache alone, or None
        return model.cache_only() if isinstance(model, cache.CachedModel) else None

    judging = answering(task["judge_model"]) if judges else None
    if judges and (
        judging is None
        or not all(vars(type(judge)).get("calls_only_the_given_model", False) for judge in judges)
    ):
        return None
    generate, regenerate = task["generate_model"], task["regenerate"]
    generating = answering(generate)
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
        except cache._CacheMiss:
            for view in views:
                view.forget()
            missed += 1
            return None
        for view in views:
            view.settle()
        answered += 1
        return row

    return first_from_cache
