"""Before a run: the cases it is to see, and what it would send.

=========================  ==================================================
``prepare_cases(path)``    read, validate and select a run's cases, counted
``dry_run(cases, ...)``    every prompt a run would send, rendered and counted
=========================  ==================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import checks as checks_mod
from .dataset import Case
from .errors import plural
from .models import CallModel, model_spec
from .runner import (
    _conversation_parts,
    _generation_prompt,
    _judge_categories,
    _judges_category,
    _missing_needs,
    _shown,
    check_judges,
    shard_index,
)
from .scale.cost import Price, format_usd, run_cost  # FIXME-DOOR

__all__ = [
    "CHARS_PER_TOKEN",
    "READ_ONCE_BYTES",
    "DryRun",
    "PreparedCases",
    "dry_run",
    "prepare_cases",
]


# === A dry run ===

CHARS_PER_TOKEN = 4
"""The dry run's token estimate: about four characters of English text per token (OpenAI's
rule of thumb); a cached reply's reported usage is exact and used instead when there is one."""


@dataclass
class DryRun:
    """What a run would send, counted and rendered without calling any model.

    ``calls`` and ``tokens_in`` count by kind (``"generate"``, ``"judge"``);
    ``cached`` how many of those calls the response cache already answers;
    ``estimated`` the calls whose prompt could not be rendered yet (a judge of
    an output still to be generated, or a judge without one fixed prompt);
    ``first_prompt`` the first rendered prompt of each kind.

    >>> from tinyeval.dataset import Case
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

    def cost(self, price: Price) -> float:
        """US dollars for the input tokens of the calls neither the cache nor the offline judge
        would answer (a floor: output tokens are not known before the replies)."""
        total = sum(self.tokens_in.values())
        free = sum(self.cached.values()) + self.offline
        share = max(0.0, 1 - free / max(sum(self.calls.values()), 1))
        return run_cost([{"input_tokens": round(total * share), "output_tokens": 0}], price)

    def to_dict(self) -> dict[str, Any]:
        """The counts as JSON (prompts included)."""
        return {
            "cases": self.cases,
            "calls": dict(self.calls),
            "tokens_in": dict(self.tokens_in),
            "cached": dict(self.cached),
            "estimated": self.estimated,
            "offline": self.offline,
            "chars_per_token": CHARS_PER_TOKEN,
            "first_prompt": dict(self.first_prompt),
        }

    def to_text(self, price: Price | None = None) -> str:
        """What the run would call and cost, and the first prompt of each kind."""
        lines = [f"dry run: {plural(self.cases, 'case')}, no model called"]
        for kind in ("generate", "judge"):
            if self.calls[kind]:
                lines.append(
                    f"  {kind}: {plural(self.calls[kind], 'call')}, about "
                    f"{self.tokens_in[kind]:,} tokens in (~{CHARS_PER_TOKEN} characters a token); "
                    f"the cache answers {self.cached[kind]:,}"
                )
        if self.offline:
            lines.append(f"  of the judge calls, {self.offline:,} go to the built-in offline "
                         "judge (no cost)")  # fmt: skip
        if self.estimated:
            lines.append(f"  {plural(self.estimated, 'call')} counted without a rendered prompt "
                         "(judges of outputs still to be generated, or judges without one "
                         "fixed prompt): their tokens are not in the figure")  # fmt: skip
        if price is not None:
            dollars = format_usd(self.cost(price))
            lines.append(f"  cost of the input tokens not in the cache: about {dollars} at "
                         f"{price} (output tokens come on top)")  # fmt: skip
        for kind, prompt in self.first_prompt.items():
            lines += ["", f"first {kind} prompt:", prompt]
        return "\n".join(lines)


def dry_run(
    cases: Iterable[Case],
    *,
    checks: Sequence[Any] = (),
    judges: Any = (),
    judge_model: CallModel | str | None = None,
    generate_model: CallModel | str | None = None,
    prompt_template: str | None = None,
    regenerate: bool = False,
    trials: int = 1,
    judge_all: bool = False,
    judge_categories: Iterable[str] | Mapping[str, Iterable[str]] | None = None,
) -> DryRun:
    """Render every prompt a :func:`run` with these arguments would send, and count them,
    without calling any model. Code checks run (they are free) to tell which cases the
    judge would see.
    """
    judge_list = check_judges(judges, judge_model)
    judge_spec = judge_model if isinstance(judge_model, str) else model_spec(judge_model)
    where = _judge_categories(judge_categories)
    plan = DryRun()
    for case in cases:
        plan.cases += 1
        output = case.output
        if output is None or (regenerate and generate_model is not None):
            prompt = _generation_prompt(case, prompt_template)
            for trial in range(trials):
                _count(plan, "generate", prompt, _peek(generate_model, prompt, trial))
            output = None
        for judge in judge_list:
            if not _judges_category(judge, case.category, where) or _missing_needs(judge, case):
                continue
            votes = getattr(judge, "votes", 1) * (trials if output is None else 1)
            if judge_spec == "builtin":
                plan.offline += votes
            render = getattr(judge, "render", None)
            if output is None or render is None:
                plan.calls["judge"] += votes
                plan.estimated += votes
                continue
            results = checks_mod.run_checks_detailed(
                output, [*case.expect_checks(), *checks], case=case
            )
            if not judge_all and not all(r.passed for r in results.values()):
                continue
            prompt = render(output, **_shown(judge, case, _conversation_parts(case, output)))
            for sample in range(getattr(judge, "votes", 1)):
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


# === Which cases a run sees ===


@dataclass
class PreparedCases:
    """The cases a run is to evaluate, validated, with what the reading pass learnt.

    ``cases`` can be iterated more than once (a list, or a fresh stream over
    the file each time). ``in_file`` counts the cases read, ``selected`` those
    the run is to see across all its shards (after sample, id restriction and
    outputs to re-judge), ``in_shard`` those of this shard. ``without_output``
    counts selected cases with no output (they need a generate model).
    ``queries`` holds the retrieval data (``retrieved`` and ``relevant``) of
    the selected cases that have any, for :func:`tinyeval.retrieval_report`.
    """

    cases: Iterable[Case]
    fingerprint: str
    in_file: int = 0
    selected: int = 0
    in_shard: int = 0
    categories: set[str] = field(default_factory=set)
    without_output: int = 0
    first_without_output: Case | None = None
    unknown_only: tuple[str, ...] = ()
    queries: list[Any] = field(default_factory=list)  # retrieval data, for the retrieval table
    without_retrieval: dict[str, int] = field(default_factory=dict)  # per category
    read: bool = True  # False until a one-pass stream has been read to its end


class _Reread:
    """Iterating gives a fresh, validated stream over the file (its ids checked already)."""

    def __init__(self, path: str, read: Mapping[str, Any], keep: Callable[[Case], Case | None]):
        self.path, self.read, self.keep = path, read, keep

    def __iter__(self) -> Iterator[Case]:
        from .dataset import iter_cases

        for case in iter_cases(self.path, **self.read, unique_ids=False):
            kept = self.keep(case)
            if kept is not None:
                yield kept


class _OnePass:
    """A stream over the file that validates each case, checks its id, counts it and adds it
    to the fingerprint as it goes: the reading pass and the run's in one. Once it has been
    read to the end (``ready.read``), iterating it again reads the file afresh."""

    def __init__(
        self,
        ready: PreparedCases,
        noted: Iterator[tuple[Case, Case | None]],
        done: Callable[[], None],
        again: Iterable[Case],
    ) -> None:
        self.ready, self.noted, self.done, self.again = ready, noted, done, again

    def __iter__(self) -> Iterator[Case]:
        if self.ready.read:
            yield from self.again
            return
        for _, kept in self.noted:
            if kept is not None:
                yield kept
        self.ready.read = True
        self.done()


READ_ONCE_BYTES = 2**20
"""A regular file up to this size (1 MiB) is read once, its validated cases kept in memory
for the run; a larger one is read twice (to validate and fingerprint, then to run), so that
memory does not grow with the file."""


class _Kept:
    """The cases read by the validating pass, kept for the run (iterable again and again; not a
    sequence, so a run given them counts them as it would a stream)."""

    def __init__(self, cases: list[Case]) -> None:
        self._cases = cases

    def __iter__(self) -> Iterator[Case]:
        return iter(self._cases)


def prepare_cases(
    path: str,
    *,
    fields: Mapping[str, str] | None = None,
    id_from_line: bool = False,
    format: str | None = None,
    sample_size: int | None = None,
    seed: int | str = 0,
    only: Iterable[str] | None = None,
    outputs: Mapping[str, str | None] | None = None,
    shard: tuple[int, int] | None = None,
    shuffle: bool = False,
    max_line_bytes: int | None = None,
    one_pass: bool = False,
) -> PreparedCases:
    """Read and validate every case of ``path`` before anything runs, and select the run's.

    ``sample_size`` takes a seeded random sample; ``only`` keeps the cases with
    those ids (``unknown_only`` lists the ids no case has); ``outputs`` (id →
    output, as recorded in an earlier run's rows) keeps only those cases and
    gives them that output, so they are checked and judged again without
    being generated; ``shard=(I, N)`` counts the cases of shard I (the run
    itself selects them); ``shuffle`` puts the cases in a random order fixed by
    ``seed`` (for stopping early on a fair sample). A regular file larger than
    :data:`READ_ONCE_BYTES` is streamed twice (once to validate and
    fingerprint, once to run) so memory stays flat; a smaller one is read
    once, and so is standard input, a pipe or any other non-seekable source
    (into memory). The dataset
    fingerprint is that of the cases as the file has them.

    ``one_pass=True`` (for a run that calls no model, so that nothing is spent
    before a bad case is found) reads such a larger file once, as the run
    goes: ``cases`` validates each case as it is taken, and the counts and the
    fingerprint are whole only once it has been read to the end (``read``
    turns True).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    ...     _ = f.write('{"id": "a", "output": "x"}\\n{"id": "b"}\\n{"id": "c", "output": "z"}\\n')
    >>> ready = prepare_cases(f.name, only=["a", "b", "q"])
    >>> [c.id for c in ready.cases], ready.selected, ready.without_output, ready.unknown_only
    (['a', 'b'], 2, 1, ('q',))
    >>> os.remove(f.name)
    """
    import os
    import stat

    from . import dataset

    read: dict[str, Any] = {"fields": fields, "id_from_line": id_from_line, "format": format}
    if max_line_bytes is not None:
        read["max_line_bytes"] = max_line_bytes
    wanted = set(only) if only is not None else None
    if outputs is not None:
        wanted = set(outputs) if wanted is None else wanted & set(outputs)
    seen_ids: set[str] = set()

    def keep(case: Case) -> Case | None:
        if wanted is not None and case.id not in wanted:
            return None
        if outputs is not None:
            from dataclasses import replace

            return replace(case, output=outputs[case.id])
        return case

    ready = PreparedCases(cases=(), fingerprint="")

    def noted(cases: Iterable[Case]) -> Iterator[tuple[Case, Case | None]]:
        """Each case counted, with what the run keeps of it (None: not selected)."""
        for case in cases:
            ready.in_file += 1
            if only is not None and case.id in wanted_ids:
                seen_ids.add(case.id)
            kept = keep(case)
            if kept is not None:
                _note(ready, kept, shard)
            yield case, kept

    wanted_ids = set(only) if only is not None else set()

    def finished(fingerprint: str) -> None:  # once every case has been read
        if ready.in_file == 0:
            raise dataset.DatasetError("no cases in the file", path=path)
        ready.fingerprint = fingerprint
        if only is not None:
            ready.unknown_only = tuple(sorted(wanted_ids - seen_ids))

    def keeping(cases: Iterable[Case], into: list[Case] | None) -> Iterator[Case]:
        """Every case, counted; the selected ones also put ``into`` the list (if one)."""
        for case, chosen in noted(cases):
            if into is not None and chosen is not None:
                into.append(chosen)
            yield case

    streamable = path != "-" and sample_size is None and not shuffle
    size = None
    if streamable:
        try:
            found = os.stat(path)
        except OSError:
            pass  # let the reader name the problem
        else:
            streamable, size = stat.S_ISREG(found.st_mode), found.st_size
    if streamable:
        # a small file is read once, its cases kept (memory bounded by READ_ONCE_BYTES); a
        # larger one is streamed again for the run, so memory stays flat however long it is
        kept: list[Case] | None = [] if size is not None and size <= READ_ONCE_BYTES else None
        if kept is None and one_pass and size is not None:
            ready.read = False
            digests = dataset.Fingerprinting()
            stream = noted(digests.adding(dataset.iter_cases(path, **read)))
            again = _Reread(path, read, keep)
            ready.cases = _OnePass(ready, stream, lambda: finished(digests.value()), again)
            return ready

        finished(dataset.dataset_fingerprint(keeping(dataset.iter_cases(path, **read), kept)))
        ready.cases = _Kept(kept) if kept is not None else _Reread(path, read, keep)
        return ready
    loaded: list[Case] = dataset.load(path, **read)
    if sample_size is not None:
        loaded = dataset.sample(loaded, sample_size, seed=seed)
    elif shuffle:
        loaded = dataset.sample(loaded, len(loaded), seed=seed)
    selected: list[Case] = []
    finished(dataset.dataset_fingerprint(keeping(loaded, selected)))
    ready.cases = selected
    return ready


def _note(ready: PreparedCases, case: Case, shard: tuple[int, int] | None) -> None:
    ready.selected += 1
    if shard is None or shard_index(case.id, shard[1]) == shard[0]:
        ready.in_shard += 1
        meta = case.meta
        if (type(meta) is dict or isinstance(meta, Mapping)) and "retrieved" in meta:
            from .rag.retrieval import queries_from_cases

            ready.queries.extend(queries_from_cases([case]))
        else:
            ready.without_retrieval[case.category] = (
                ready.without_retrieval.get(case.category, 0) + 1
            )
        ready.categories.add(case.category)
        if case.output is None:
            ready.without_output += 1
            if ready.first_without_output is None:
                ready.first_without_output = case
