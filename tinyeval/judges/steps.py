"""G-Eval steps: the judge that shows them, and steps written once by a model, checked
strictly, frozen in a rubric file. :func:`tinyeval.judge.make_judge` reaches
:func:`steps_judge` through the ``"criterion"`` door's ``"steps"`` entry.

>>> steps, _ = parse_steps("1. Read the context.\\n2. Find each figure in it.")
>>> steps
('Read the context.', 'Find each figure in it.')
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import plural, shorten
from ..judge import (
    CRITERIA,
    Judge,
    JudgeError,
    Rubric,
    default_name,
    describe_error,
    fill,
    load_rubric,
    refuse_markers,
    rubric_fingerprint,
)
from ..models import ask

__all__ = [
    "MAX_STEPS",
    "STEPS_TEMPLATE",
    "StepsJudge",
    "parse_steps",
    "steps_judge",
    "write_steps",
]

CallModel = Callable[..., Any]


# === The judge with evaluation steps ===============================================


def check_steps(steps: Sequence[str]) -> list[str]:
    """``steps`` as a list, refused unless each is a non-empty string without a marker."""
    if isinstance(steps, str) or not all(isinstance(step, str) and step.strip() for step in steps):
        raise JudgeError("steps must be a list of non-empty strings (one string per step)")
    for step in steps:
        refuse_markers(step, "a step")
    return list(steps)


def render_steps(steps: Sequence[str]) -> str:
    """The steps as the prompt shows them: a numbered list under one line, or ``""``."""
    if not steps:
        return ""
    numbered = "\n".join(f"{i}. {step.strip()}" for i, step in enumerate(steps, 1))
    return f"Follow these evaluation steps:\n{numbered}\n"


class StepsJudge(Judge):
    """A :class:`~tinyeval.judge.Judge` that shows evaluation ``steps`` (G-Eval style) as a
    numbered list in its prompt's ``{steps}``; its fingerprint covers them.

    >>> judge = StepsJudge("Is polite.", steps=["Read it.", "Look for rudeness."])
    >>> "2. Look for rudeness." in judge.render("Thanks!"), judge.steps
    (True, ['Read it.', 'Look for rudeness.'])
    """

    def __init__(self, criterion: str, *, steps: Sequence[str], **options: Any) -> None:
        super().__init__(criterion, **options)
        self.steps = check_steps(steps)
        self.rubric_fingerprint = rubric_fingerprint(
            self.template, self.criterion_text, self.steps, self.style
        )

    def trusted_values(self) -> dict[str, str]:
        return {**super().trusted_values(), "steps": render_steps(self.steps)}


def resolve_steps(
    criterion: str,
    steps: Sequence[str] | str | None,
    *,
    name: str | None,
    steps_path: str | os.PathLike[str] | None,
    steps_model: CallModel | None,
) -> tuple[list[str] | None, str | None]:
    """``(steps, name)``: a list as given, or for ``"auto"`` the steps :func:`write_steps`
    froze in ``steps_path`` (the name defaults to the file's)."""
    if steps != "auto":
        if isinstance(steps, str):
            raise JudgeError(
                f'steps must be a list of strings or "auto", got {steps!r}', field="steps"
            )
        return (None if steps is None else list(steps)), name
    if steps_path is None or steps_model is None:
        raise JudgeError(
            'steps="auto" needs steps_path (the rubric file to freeze them in) and '
            "steps_model (the model that writes them)",
            field="steps",
        )
    rubric = write_steps(criterion, steps_model, path=steps_path, name=name)
    return list(rubric.steps or ()), name or rubric.name


def steps_judge(
    criterion: str,
    *,
    steps: Sequence[str] | str | None,
    name: str | None = None,
    pass_at: None = None,
    scale: None = None,
    steps_path: str | os.PathLike[str] | None = None,
    steps_model: CallModel | None = None,
    **options: Any,
) -> StepsJudge:
    """The ``"criterion"`` door's ``"steps"`` entry: a :class:`StepsJudge` for a criterion
    given with ``steps`` (a list, or ``"auto"``); ``options`` go to the judge (``pass_at`` and
    ``scale`` are refused before, by :func:`~tinyeval.judge.make_judge`).

    >>> steps_judge("Is polite.", steps=["Read it."], votes=3).votes
    3
    """
    found, name = resolve_steps(
        criterion, steps, name=name, steps_path=steps_path, steps_model=steps_model
    )
    return StepsJudge(criterion, steps=found or [], name=name, **options)


# === G-Eval steps, written once and frozen =========================================

STEPS_TEMPLATE = """\
You are writing the evaluation steps a grader will follow to decide one property of a \
response.

PROPERTY: {criterion}

Write 2 to 8 short, concrete steps that a grader follows in order to decide whether a \
response has this property, ending with the step that decides PASS or FAIL. Each step \
checks something that can be seen in the response, the question or the context. Answer \
with the numbered steps only, one per line, in exactly this form:
1. <first step>
2. <second step>
Write nothing else: no heading, no blank lines, no text after the last step."""
"""The prompt :func:`write_steps` sends, once per criterion."""

_STEP = re.compile(r"^(\d{1,2})\.[ \t]+(\S.*)$")
MAX_STEPS = 10


def parse_steps(text: str) -> tuple[tuple[str, ...] | None, str]:
    """Read numbered evaluation steps strictly: ``(steps or None, reason)``.

    Every non-blank line must be ``N. step`` with N counting 1, 2, 3... in
    order; 1 to :data:`MAX_STEPS` steps. Anything else is unusable (None).

    >>> parse_steps("1. Find each figure.\\n2. Look for it in the context.")
    (('Find each figure.', 'Look for it in the context.'), '2 steps')
    >>> parse_steps("Steps:\\n1. Read it.")
    (None, "line 1 is not 'N. step': 'Steps:'")
    """
    if not isinstance(text, str):
        return None, f"expected a text reply, got {type(text).__name__}"
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        return None, "the reply is empty"
    steps: list[str] = []
    for number, line in lines:
        match = _STEP.match(line)
        if not match:
            return None, f"line {number} is not 'N. step': {shorten(repr(line))}"
        if int(match.group(1)) != len(steps) + 1:
            return None, f"line {number} is step {match.group(1)}, expected {len(steps) + 1}"
        steps.append(match.group(2).strip())
    if len(steps) > MAX_STEPS:
        return None, f"{len(steps)} steps, at most {MAX_STEPS} are usable"
    return tuple(steps), plural(len(steps), "step")


def write_steps(
    criterion: str,
    call_model: CallModel,
    *,
    path: str | os.PathLike[str],
    name: str | None = None,
    overwrite: bool = False,
) -> Rubric:
    """G-Eval steps for ``criterion``, asked of ``call_model`` once and frozen in ``path``.

    When ``path`` exists it is read back (:func:`tinyeval.judge.load_rubric`)
    and the model is not called: re-running never re-generates the steps, so
    every run judges with the same rubric, and its fingerprint (which covers
    the steps) is the one in every row. ``overwrite=True`` asks again. A file
    holding another criterion is refused. Otherwise the model gets
    :data:`STEPS_TEMPLATE`; its reply is read by :func:`parse_steps`, and an
    unusable reply raises :class:`~tinyeval.judge.JudgeError` (nothing is
    written). The file is a rubric JSON object ``{"criterion", "name",
    "steps"}``, written atomically; ``path`` must end in ``.json``.

    >>> import tempfile, os
    >>> where = os.path.join(tempfile.mkdtemp(), "polite.json")
    >>> rubric = write_steps("Is polite.", lambda p: "1. Read it.\\n2. Look for rudeness.",
    ...                      path=where)
    >>> rubric.steps, StepsJudge("Is polite.", steps=rubric.steps).steps
    (('Read it.', 'Look for rudeness.'), ['Read it.', 'Look for rudeness.'])
    >>> write_steps("Is polite.", lambda p: "never asked", path=where).steps
    ('Read it.', 'Look for rudeness.')
    """
    where = Path(path)
    if where.suffix != ".json":
        raise JudgeError("a steps file must end in .json (a rubric JSON file)", path=str(where))
    criterion_text = CRITERIA.get(criterion, criterion)
    if where.exists() and not overwrite:
        rubric = load_rubric(where)
        if rubric.criterion != criterion:
            raise JudgeError(
                f"the file holds steps for another criterion ({shorten(repr(rubric.criterion))}); "
                "use another path, or overwrite=True to write new steps",
                path=str(where),
                field="criterion",
            )
        if not rubric.steps:
            raise JudgeError("the file has no steps", path=str(where), field="steps")
        return rubric
    Judge(criterion)  # refuses an empty criterion or one holding a block marker
    prompt = fill(STEPS_TEMPLATE, {"criterion": criterion_text})
    try:
        reply = ask(call_model, prompt)
    except Exception as exc:
        raise JudgeError(f"the model could not write the steps: {describe_error(exc)}") from exc
    steps, why = parse_steps(reply)
    if steps is None:
        raise JudgeError(
            f"the model's steps could not be used: {why}; the reply was "
            f"{shorten(repr(reply), 120)}; nothing was written",
            path=str(where),
        )
    check_steps(steps)  # refuses a step holding a block marker
    spec = {"criterion": criterion, "name": name or default_name(criterion), "steps": list(steps)}
    where.parent.mkdir(parents=True, exist_ok=True)
    partial = where.with_name(f".{where.name}.partial")
    partial.write_text(json.dumps(spec, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, where)
    return load_rubric(where)
