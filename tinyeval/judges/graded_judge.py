"""The graded judge: a strictly parsed score on a scale, which gates only through ``pass_at``.

:func:`tinyeval.judge.make_judge` builds it for ``graded:<criterion>`` through the
``"criterion"`` door (:func:`graded_judge`); :mod:`tinyeval.judges.graded` summarises scores.

>>> parse_score("4")
(4.0, '')
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

from ..errors import is_number, shorten
from ..judge import (
    BaseVerdict,
    Judge,
    JudgeError,
    ask_judge,
    default_name,
    describe_error,
    first_line,
    header,
    rubric_fingerprint,
)
from ..models import usage_and_model
from .steps import StepsJudge, resolve_steps

__all__ = [
    "GRADED_TEMPLATE",
    "GradedJudge",
    "ScoreVerdict",
    "graded_judge",
    "graded_scores",
    "parse_score",
]

CallModel = Callable[..., Any]


# === Graded scores =================================================================

GRADED_TEMPLATE = header("scoring", "score", "scores") + (
    "\nAnswer in exactly this format. First line: {scale_rule}, and nothing else on that "
    "line. Second line: one sentence explaining the score. Write nothing else."
)
"""The graded prompt; ``{scale_rule}`` says which numbers the first line may hold."""

_INTEGER = re.compile(r"^[0-9]{1,3}$")
_UNIT = re.compile(r"^(?:0(?:\.[0-9]{1,4})?|1(?:\.0{1,4})?)$")


def _check_scale(scale: Any) -> tuple[int, int]:
    ok = (
        isinstance(scale, tuple | list)
        and len(scale) == 2
        and all(isinstance(end, int) and not isinstance(end, bool) for end in scale)
        and 0 <= scale[0] < scale[1] <= 100
    )
    if not ok:
        raise JudgeError(
            f"scale must be (LOW, HIGH), whole numbers 0 <= LOW < HIGH <= 100, such as (1, 5) "
            f"or (0, 1), got {scale!r}",
            field="scale",
        )
    return int(scale[0]), int(scale[1])


def parse_score(text: str, scale: tuple[int, int] = (1, 5)) -> tuple[float | None, str]:
    """Read a graded reply strictly: ``(score or None, reason)``.

    The first non-blank line, stripped, must be the score alone: on the (0, 1)
    scale a decimal such as ``0``, ``0.75`` or ``1.0`` (at most 4 decimals); on
    any other scale a whole number in range, in ASCII digits. ``4.0``, ``4/5``,
    ``Score: 4``, ``**4**`` and out-of-range numbers are unparsed (None).

    >>> parse_score("4\\nClear and complete.")
    (4.0, 'Clear and complete.')
    >>> parse_score("0.75", (0, 1))
    (0.75, '')
    >>> parse_score("Score: 4")
    (None, "unparsed: the first line must be a whole number from 1 to 5 alone, got 'Score: 4'")
    """
    low, high = _check_scale(scale)
    unit = (low, high) == (0, 1)
    rule = "a decimal from 0 to 1" if unit else f"a whole number from {low} to {high}"
    if not isinstance(text, str):
        return None, f"unparsed: expected a text reply, got {type(text).__name__}"
    first, rest = first_line(text)
    pattern = _UNIT if unit else _INTEGER
    if first.isascii() and pattern.match(first):
        value = float(first)
        if low <= value <= high:
            return value, rest
    return None, f"unparsed: the first line must be {rule} alone, got {shorten(repr(first))}"


@dataclass(frozen=True)
class ScoreVerdict(BaseVerdict):
    """What a :class:`GradedJudge` returns.

    ``score`` on ``scale`` (None when the reply did not parse or the call
    failed). ``verdict`` is PASS (score >= ``pass_at``) or FAIL only when the
    judge has a ``pass_at`` threshold; without one it is None with ``failure``
    ``"ungated"``, so a graded judge alone never makes a case pass.

    >>> ScoreVerdict(None, "", "ungated", score=4.0, scale=(1, 5)).to_dict()["score"]
    4.0
    """

    failure: str | None
    score: float | None = None
    scale: tuple[int, int] = (1, 5)
    pass_at: float | None = None
    raw: tuple[str, ...] = ()
    _: KW_ONLY
    name: str = "graded"
    style: str = "graded"

    def to_dict(self) -> dict[str, Any]:
        """The row form: a judge's keys plus ``score``, ``scale`` and ``pass_at``."""
        data = super().to_dict()
        data.update(score=self.score, scale=list(self.scale), pass_at=self.pass_at)
        return data


class GradedJudge:
    """A graded score on ``scale`` ((1, 5), or (0, 1) for decimals), read strictly.

    One call per response with :data:`GRADED_TEMPLATE`; :func:`parse_score`
    reads the first line. The verdict dict carries ``score``. A graded score
    gates only through an explicit ``pass_at`` (PASS when score >= pass_at);
    without it the verdict is None with failure ``"ungated"``: the case cannot
    pass on this judge, and the run's tallies count the verdict among those
    without a label. Summarise the scores with
    :func:`graded_scores` and :func:`tinyeval.judges.graded.graded_summary` (histogram,
    quantiles, bottom 10% by id). ``steps`` are G-Eval steps, as for
    :class:`~tinyeval.judges.steps.StepsJudge`.

    >>> judge = GradedJudge("The answer is complete.", pass_at=4)
    >>> verdict = judge(lambda prompt: "3\\nIt misses the limit.", response="Fee: ARS 150.")
    >>> verdict.score, verdict.verdict
    (3.0, 'FAIL')
    >>> GradedJudge("The answer is complete.")(lambda p: "5", response="x").failure
    'ungated'
    """

    calls_only_the_given_model = True  # no model but the one given (see scale/cached.py)

    def __init__(
        self,
        criterion: str,
        *,
        scale: tuple[int, int] = (1, 5),
        pass_at: float | None = None,
        steps: Sequence[str] | None = None,
        name: str | None = None,
    ) -> None:
        self.scale = _check_scale(scale)
        low, high = self.scale
        if pass_at is not None and (not is_number(pass_at) or not low <= pass_at <= high):
            raise JudgeError(
                f"pass_at must be a number on the scale {low}-{high}, got {pass_at!r}",
                field="pass_at",
            )
        self.pass_at = None if pass_at is None else float(pass_at)
        unit = self.scale == (0, 1)
        rule = (
            "your score as a decimal from 0 to 1 (such as 0.75)"
            if unit
            else f"your score as one whole number from {low} (worst) to {high} (best)"
        )
        self.template = GRADED_TEMPLATE.replace("{scale_rule}", rule)
        # a Judge checks the criterion, the steps and the template, and renders the prompt
        self._renderer = (
            Judge(criterion, template=self.template)
            if steps is None
            else StepsJudge(criterion, template=self.template, steps=steps)
        )
        self.criterion = criterion
        self.criterion_text = self._renderer.criterion_text
        self.steps = getattr(self._renderer, "steps", [])
        self.votes = 1
        self.style = "graded"
        self.name = name if name is not None else f"graded-{default_name(criterion)}"
        self.needs = self._renderer.needs
        self.rubric_fingerprint = rubric_fingerprint(
            self.template, self.criterion_text, self.steps, f"graded:{low}-{high}"
        )

    def __repr__(self) -> str:
        return f"GradedJudge({self.criterion!r}, scale={self.scale}, pass_at={self.pass_at})"

    def render(
        self,
        response: str,
        *,
        context: str | Sequence[str] | None = None,
        question: str | None = None,
    ) -> str:
        """The prompt the model receives.

        >>> "whole number from 1 (worst) to 5 (best)" in GradedJudge("Is clear.").render("x")
        True
        """
        return self._renderer.render(response, context=context, question=question)

    def __call__(
        self,
        call_model: CallModel,
        *,
        response: str,
        context: str | Sequence[str] | None = None,
        question: str | None = None,
    ) -> ScoreVerdict:
        """Score ``response`` and return a :class:`ScoreVerdict`."""
        prompt = self.render(response, context=context, question=question)
        common: dict[str, Any] = {
            "scale": self.scale,
            "pass_at": self.pass_at,
            "name": self.name,
            "criterion": self.criterion,
            "rubric_fingerprint": self.rubric_fingerprint,
        }
        try:
            reply = ask_judge(call_model, prompt)
        except Exception as exc:  # recorded, never raised
            message = describe_error(exc)
            return ScoreVerdict(
                None, f"call_model failed: {message}", "error", error=message, **common
            )
        score, reason = parse_score(reply, self.scale)
        raw = (reply,)
        extra = {"raw": raw, **usage_and_model(raw), **common}
        if score is None:
            return ScoreVerdict(None, reason, "unparsed", **extra)
        if self.pass_at is None:
            return ScoreVerdict(None, reason, "ungated", score=score, **extra)
        verdict = "PASS" if score >= self.pass_at else "FAIL"
        return ScoreVerdict(verdict, reason, None, score=score, **extra)


def graded_scores(rows: Iterable[Mapping[str, Any]], judge_name: str) -> list[tuple[str, float]]:
    """``(id, score)`` of every row where ``judge_name`` gave a score, for
    :func:`tinyeval.judges.graded.graded_summary`; rows without one are left out.

    >>> rows = [{"id": "a", "judges": {"g": {"score": 4.0}}},
    ...         {"id": "b", "judges": {"g": {"score": None}}}, {"id": "c", "judges": {}}]
    >>> graded_scores(rows, "g")
    [('a', 4.0)]
    """
    found: list[tuple[str, float]] = []
    for row in rows:
        verdict = (row.get("judges") or {}).get(judge_name)
        score = verdict.get("score") if isinstance(verdict, Mapping) else None
        if is_number(score) and isinstance(score, int | float):
            found.append((str(row.get("id")), float(score)))
    return found


def graded_judge(
    criterion: str,
    *,
    votes: int = 1,
    steps: Sequence[str] | str | None = None,
    name: str | None = None,
    pass_at: float | None = None,
    scale: tuple[int, int] | None = None,
    steps_path: str | os.PathLike[str] | None = None,
    steps_model: CallModel | None = None,
    **_: Any,
) -> GradedJudge:
    """The ``"criterion"`` door's ``"graded:"`` entry: a :class:`GradedJudge` of the text after
    the colon (``scale`` (1, 5) unless given); ``steps`` as for a steps judge.

    >>> graded_judge("graded:Is clear.", pass_at=4).scale
    (1, 5)
    """
    text = criterion[len("graded:") :].strip()
    if not text:
        raise JudgeError("graded: needs the criterion after the colon, as graded:Is clear.")
    if votes != 1:
        raise JudgeError("a graded judge takes one vote", field="votes")
    found, name = resolve_steps(
        text, steps, name=name, steps_path=steps_path, steps_model=steps_model
    )
    return GradedJudge(text, scale=scale or (1, 5), pass_at=pass_at, steps=found, name=name)
