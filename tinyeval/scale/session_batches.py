"""A session's models sent through the providers' batch APIs (``--batch``).

:class:`Batches` turns a session's judge and generate models into batch models on its
response cache; :meth:`Batches.run` records the calls a run would make and sends them as
batches until none is left, so the run itself then reads every reply from the cache.
"""

from __future__ import annotations

from typing import Any

from ..errors import IncompleteError, InputError
from ..runner import PreparedCases

_PENDING = "resume the run later (it polls the same batch, never submits it twice)"


class Batches:
    """The batch models of ``session`` (whose models it replaces)."""

    def __init__(self, session: Any) -> None:
        from ..cache import ResponseCache
        from .batch import BatchJob, BatchModel

        s = session.settings
        if s.no_cache:
            raise InputError("batches keep the batch id and its replies in the response cache: "
                             "it cannot be turned off", field="batch")  # fmt: skip
        if session.cache is None:
            session.cache = ResponseCache(s.cache)
        self.session = session
        self.models: list[Any] = []

        def batched(spec: str | None, model: Any, max_tokens: int | None) -> Any:
            if (
                model is None
                or spec is None
                or spec.partition(":")[0] not in ("openai", "anthropic")
            ):
                return model  # builtin, cmd: and py: models are called as usual
            job = BatchJob(spec, session.cache, base_url=s.base_url, timeout=s.timeout,
                           temperature=s.temperature, max_tokens=max_tokens,
                           poll_interval=s.batch_poll, max_wait=s.batch_max_wait,
                           max_response_bytes=s.max_response_bytes, sleep=self._wait)  # fmt: skip
            self.models.append(BatchModel(job))
            return self.models[-1]

        session.judge_model = batched(session.judge_spec, session.judge_model,
                                      s.judge_max_tokens)  # fmt: skip
        session.generate_model = batched(s.generate_model, session.generate_model, s.max_tokens)
        if not self.models:
            raise InputError("neither the judge nor the generate model is an openai: or "
                             "anthropic: model, and only those have batch APIs",
                             field="batch")  # fmt: skip

    def _wait(self, seconds: float) -> None:
        """Wait between polls of a pending batch, unless asked to stop (then stop at once)."""
        if self.session.stop.wait(seconds):
            raise IncompleteError("INCOMPLETE: stopped on request while a batch is pending at the "
                                  f"provider: {_PENDING}")  # fmt: skip

    def run(self, ready: PreparedCases) -> list[str]:
        """Record the calls the run would make, send them as batches, until none is left;
        a line per batch sent."""
        from ..runner import run
        from .batch import BatchError

        session, s = self.session, self.session.settings
        lines = []
        for _ in range(4):  # generation, then the judges of what was generated
            run(ready.cases, judges=session.judges, judge_model=session.judge_model,
                generate_model=session.generate_model, prompt_template=session.template,
                regenerate=s.regenerate, judge_all=s.judge_all,
                judge_categories=session.judge_categories, concurrency=s.concurrency,
                fail_fast=None, keep_rows=False,
                observers=list(session.observers(ready, only=("trials",)).values()))  # fmt: skip
            waiting = [(m, m.take_deferred()) for m in self.models]
            if not any(requests for _, requests in waiting):
                break
            for model, requests in waiting:
                if not requests:
                    continue
                try:
                    outcome = model.job.run(requests)
                except BatchError as exc:
                    raise IncompleteError(f"INCOMPLETE: {exc}; {_PENDING}") from None
                model.absorb(outcome)
                lines.append(f"batch: {outcome}")
                if not outcome.complete:
                    raise IncompleteError(
                        f"INCOMPLETE: {outcome}; the batch is still pending at the provider after "
                        f"{s.batch_max_wait:g} s of waiting (batch_max_wait): {_PENDING}"
                    )
        return lines
