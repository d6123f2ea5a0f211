"""The dry run: every prompt a run would send, rendered and counted, calling no model."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import checks as checks_mod
from .. import runner
from ..dataset import Case
from ..errors import plural
from ..models import model_spec
from ..runner import Observer

CHARS_PER_TOKEN = 4


@dataclass
class DryRun:
    """What a run would send, by kind, without calling a model.

    >>> from tinyeval.judge import Judge
    >>> plan = dry_run([Case(id="a", input="Hours?", output="9 to 5.")],
    ...                judges=[Judge("answers-the-question", votes=3)], judge_model="builtin")
    >>> plan.calls["judge"], plan.first_prompt["judge"].count("<<<QUESTION>>>")
    (3, 1)
    """

    cases: int = 0
    calls: dict[str, int] = field(default_factory=lambda: {"generate": 0, "judge": 0})
    tokens_in: dict[str, int] = field(default_factory=lambda: {"generate": 0, "judge": 0})
    cached: dict[str, int] = field(default_factory=lambda: {"generate": 0, "judge": 0})
    estimated: int = 0
    offline: int = 0  # calls to the built-in offline judge: no cost
    first_prompt: dict[str, str] = field(default_factory=dict)

    def billable_tokens(self) -> int:
        free = sum(self.cached.values()) + self.offline
        share = max(0.0, 1 - free / max(sum(self.calls.values()), 1))
        return round(sum(self.tokens_in.values()) * share)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "chars_per_token": CHARS_PER_TOKEN}

    def to_text(self) -> str:
        lines = [f"dry run: {plural(self.cases, 'case')}, no model called"]
        for kind in ("generate", "judge"):
            if self.calls[kind]:
                lines.append(
                    f"  {kind}: {plural(self.calls[kind], 'call')}, about "
                    f"{self.tokens_in[kind]:,} tokens in (~{CHARS_PER_TOKEN} characters a token); "
                    f"the cache answers {self.cached[kind]:,}"
                )
        if self.offline:
            lines.append(
                f"  of the judge calls, {self.offline:,} go to the built-in offline judge (no cost)"
            )
        if self.estimated:
            lines.append(
                f"  {plural(self.estimated, 'call')} counted without a rendered prompt (outputs "
                "to generate first): their tokens are not in the figure"
            )
        for kind, prompt in self.first_prompt.items():
            lines += ["", f"first {kind} prompt:", prompt]
        return "\n".join(lines)


def dry_run(cases: Iterable[Case], *, observers: Sequence[Observer] = (), **options: Any) -> DryRun:
    """Render and count every prompt :func:`tinyeval.runner.run` with these options would send.

    >>> dry_run([Case(id="a", input="Hi?")], generate_model="cmd:cat").calls["generate"]
    1
    """
    known = set(runner.evaluate_case.__kwdefaults__ or ()) - {"dataset_fingerprint", "run"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"dry_run() got an unexpected keyword argument {unknown[0]!r}")
    checks, judge_model = options.get("checks", ()), options.get("judge_model")
    generate_model, judge_all = options.get("generate_model"), options.get("judge_all", False)
    judge_list = runner.check_judges(options.get("judges", ()), judge_model)
    judge_spec = judge_model if isinstance(judge_model, str) else model_spec(judge_model)
    where = runner.categories_judged(options.get("judge_categories"))
    for observer in observers:
        cases = observer.cases(cases)
    plan = DryRun()
    for case in cases:
        trial = getattr(case, "trial", 0)
        plan.cases += not trial  # a case counts once, however many trials it has
        output = case.output
        if output is None or (options.get("regenerate") and generate_model is not None):
            prompt = runner.generation_prompt(case, options.get("prompt_template"))
            _count(plan, "generate", prompt, _peek(generate_model, prompt, trial))
            output = None
        for judge in judge_list:
            skipped = not runner.judges_category(judge, case.category, where)
            if skipped or runner.missing_needs(judge, case):
                continue
            votes = getattr(judge, "votes", 1)
            if judge_spec == "builtin":
                plan.offline += votes
            render = getattr(judge, "render", None)
            if output is None or render is None:
                plan.calls["judge"] += votes
                plan.estimated += votes
                continue
            every = [*case.expect_checks(), *checks]
            results = checks_mod.run_checks_detailed(output, every, case=case)
            if not judge_all and not all(r.passed for r in results.values()):
                continue
            prompt = render(output, **runner.judge_inputs(judge, case, output))
            for sample in range(votes):
                _count(plan, "judge", prompt, _peek(judge_model, prompt, sample))
    return plan


def _peek(model: Any, prompt: str, sample: int) -> Any:
    peek = getattr(model, "peek", None)
    return peek(prompt, sample=sample) if callable(peek) else None


def _count(plan: DryRun, kind: str, prompt: str, stored: Any) -> None:
    plan.calls[kind] += 1
    usage = getattr(stored, "usage", None) or {}
    plan.tokens_in[kind] += int(usage.get("input_tokens") or -(-len(prompt) // CHARS_PER_TOKEN))
    plan.cached[kind] += stored is not None
    plan.first_prompt.setdefault(kind, prompt)
