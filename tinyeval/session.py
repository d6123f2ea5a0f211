"""A whole evaluation from its :class:`RunSettings`, as ``tinyeval run`` does it, never printing."""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from . import _EXTRAS, _extra
from ._formats import MAX_CONFIG_BYTES, read_text
from .errors import IncompleteError, InputError, listed, plural, shorten
from .gating import gate, gate_settings, refuse_unknown_categories
from .models import MAX_RESPONSE_BYTES, resolve
from .records import Row, RowsWrittenWhole, iter_json_lines, read_rows, run_manifest
from .report import Failures, RunSummary, summarize
from .runner import PreparedCases, check_judges, prepare_cases
from .runner import run as run_cases
from .suite import JudgeSpec, RunSettings

_MODEL_SETTINGS = ("base_url", "timeout", "temperature", "max_response_bytes", "pass_env")


class Session(contextlib.AbstractContextManager["Session"]):
    """The models, judges and cache of a run, opened from its checked :class:`RunSettings`.

    >>> session = Session(RunSettings(cases="c.jsonl", criterion=["answers-the-question"], votes=3))
    >>> session.judge_spec, session.judges[0].votes
    ('builtin', 3)
    """

    def __init__(self, settings: RunSettings) -> None:
        self.settings = s = settings
        s.refuse_out_of_range()
        read = [s.cases, s.rejudge, s.calibration, s.prompt_template, *s.rubric]
        read += [*(spec.rubric for spec in s.judges), getattr(s.suite, "path", None)]
        read += [s.only] if isinstance(s.only, str) else []  # else a list of ids
        outputs = ("out", "review_out", "junit", "markdown", "html")
        refuse_overwriting(read, {name: getattr(s, name) for name in outputs})
        if (s.labels or s.calibration) and os.path.exists(s.out) and not os.path.isfile(s.out):
            said = "the labels and the calibration read the rows back: it must be a file"
            raise InputError(said, field="out")
        self.jurors = jurors = s.jurors
        spec = "jury:" + ",".join(jurors) if len(jurors) > 1 else jurors[0] if jurors else None
        self.judge_spec: str = spec or "builtin"
        self.judges, self.judge_categories = self._judges()
        price = s.price
        self.price = _extra("cost", "price", "a price")(price) if isinstance(price, str) else price
        for text in s.retrieval_threshold:  # refused before any case runs
            _extra("reader", "retrieval_threshold", "a retrieval threshold")(text)
        self.retrieved: list[Any] = []  # the retrieval queries of the cases with retrieval data
        self.without_retrieval: Counter[str] = Counter()  # the others, by category
        self.template: str | None = None
        if s.prompt_template is not None:
            self.template = read_text(
                s.prompt_template, what="the template", max_bytes=MAX_CONFIG_BYTES, error=InputError
            )
            if "{input}" not in self.template:
                raise InputError("the template has no {input} placeholder", path=s.prompt_template)
        self.cache: Any = None
        self.judge_model: Any = None
        self.generate_model: Any = None
        self.batches: Any = None  # the batch models, with --batch
        self.stop = threading.Event()
        self.in_flight = 0
        self.calibration = None
        rejudged = read_rows(s.rejudge) if s.rejudge else []  # read before the cache opens
        self.outputs = {row["id"]: row.get("output") for row in rejudged} if s.rejudge else None
        try:
            if s.calibration:
                from .calibration import load_calibration

                self.calibration = load_calibration(s.calibration)
            if self.judges and len(jurors) > 1:  # each juror's model is opened by the jury
                jury = _extra("wrapper", "jury", "a jury of judge models")
                self.judges, self.judge_model = jury.open(self)
            elif self.judges:
                self.judge_model = self.model(self.judge_spec, max_tokens=s.judge_max_tokens)
            if s.generate_model:
                self.generate_model = self.model(s.generate_model, max_tokens=s.max_tokens)
            if s.batch:  # the judge and generate models become batch models on the same cache
                self.batches = _extra("wrapper", "batch", "batch")(self)
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def _judges(self) -> tuple[list[Any], Any]:
        s = self.settings
        specs, given = s.judges, bool(s.criterion or s.rubric)
        if given:
            votes, style = s.votes, s.judge_style
            specs = [JudgeSpec(criterion=text, votes=votes, style=style) for text in s.criterion]
            specs += [JudgeSpec(rubric=path, votes=votes, style=style) for path in s.rubric]
        for spec in specs:
            if spec.model is not None and spec.model != self.judge_spec:
                name, model = spec.name or spec.criterion, spec.model
                said = f"the judge {name!r} names its own model {model!r}: one judge model per run"
                raise InputError(f"{said} (set it under [models.judge])", field="judges")
        judges = [spec.judge() for spec in specs]
        per_judge = {j.name: list(spec.categories) for spec, j in zip(specs, judges, strict=True)}
        judges = check_judges(judges, self.judge_spec) if judges else []
        if given or not specs:
            return judges, s.judge_category
        return judges, per_judge if any(per_judge.values()) else None

    def model(self, spec: str, *, max_tokens: int | None) -> Any:
        """The model ``spec`` names, opened with the run's settings, on the run's cache."""
        s = self.settings
        options = {name: getattr(s, name) for name in _MODEL_SETTINGS}
        options.update(no_cache=s.no_cache, refresh=s.refresh, cache_path=s.cache)
        model, self.cache = open_model(spec, max_tokens=max_tokens, cache=self.cache, **options)
        return model

    def prepare(self) -> PreparedCases:
        """Read, validate and select the run's cases (a run calling no model: as it runs)."""
        s = self.settings
        same = ("fields", "id_from_line", "format", "seed", "shard", "max_line_bytes")
        one_pass = self.generate_model is None and not (self.judges or s.resume)
        ready = prepare_cases(
            s.cases,
            **{name: getattr(s, name) for name in same},
            sample_size=s.sample,
            only=case_ids(s.only, s.fields.get("id", "id")),
            outputs=self.outputs,
            shuffle=s.stop_when_decided,
            one_pass=one_pass and RowsWrittenWhole.can_write(s.out),
            note=self._note_retrieval,
        )
        if ready.read:
            self._refuse(ready)
        return ready

    def _note_retrieval(self, case: Any) -> None:
        if "retrieved" in case.meta:  # refused as it is read
            self.retrieved += _extra("reader", "retrieval", "retrieval data")([case])
        else:
            self.without_retrieval[case.category] += 1

    def _refuse(self, ready: PreparedCases) -> None:
        s = self.settings
        if ready.unknown_only:  # a mistyped id would leave its case out unseen
            said = listed([repr(shorten(i, 60)) for i in ready.unknown_only], 5)
            ids = "ids" if len(ready.unknown_only) > 1 else "id"
            raise InputError(f"no case has the {ids} {said}", field="only")
        if ready.in_shard == 0:
            where = f" in shard {s.shard[0]}/{s.shard[1]}" if s.shard else ""
            raise InputError(f"no case to run{where}", path=s.cases)
        refuse_unknown_categories("judge_category", s.judge_category or [], ready.categories)
        if s.suite is not None:  # a typo in the suite file is said at its line
            s.suite.refuse_typos(ready.categories)
        refuse_unknown_categories("threshold", s.thresholds, ready.categories, only_typos=True)
        gate({name: {} for name in ready.categories}, **s.gate_options())  # strict: before a run
        if ready.without_output and not s.generate_model:
            first = ready.first_without_output
            assert first is not None
            where = f"{first.source}:{first.line}" if first.line else repr(first.id)
            said = f"{plural(ready.without_output, 'case')} without an output (the first at "
            said += f"{where}) and no generate model to generate them"
            raise InputError(said, field="generate_model")

    def dry_run(self, ready: PreparedCases) -> Any:
        """Every prompt the run would send, rendered and counted; no model is called."""
        deferred = not ready.read
        observers = self.observers(ready, only=("trials",))
        dry_run_cases = _extra("cost", "dry_run", "a dry run")
        plan = dry_run_cases(ready.cases, observers=[*observers.values()], **self._calls())
        if deferred:  # the dry run has read the whole stream: the counts are whole
            self._refuse(ready)
        return plan

    def observers(self, ready: PreparedCases, only: Sequence[str] | None = None) -> dict[str, Any]:
        """The run's observers: one per setting of ``_EXTRAS["observer"]`` given.

        >>> Session(RunSettings(cases="c.jsonl")).observers(PreparedCases((), "ab12"))
        {}
        """
        return {
            name: _extra("observer", name, name)(self.settings, ready)
            for name in _EXTRAS["observer"]
            if (only is None or name in only)
            and getattr(self.settings, name, None) != getattr(RunSettings, name, None)
        }

    def run(
        self,
        ready: PreparedCases,
        *,
        on_row: Callable[[Row], None] | None = None,
        executor: Executor | None = None,
    ) -> RunSummary:
        """Run the prepared cases into rows in ``settings.out``, and summarize them."""
        s = self.settings
        batch_lines = self.batches.run(ready) if self.batches is not None else []
        observers = self.observers(ready)
        failures = Failures(s.show_failures)
        one_pass = not ready.read  # the rows wait for the fingerprint, known at the end
        with contextlib.ExitStack() as stack:
            whole: RowsWrittenWhole | None = None

            def noted(row: Row) -> None:
                failures.note(row)
                if whole is not None:
                    whole.write(row)
                if on_row is not None:
                    on_row(row)

            if executor is None:
                executor = stack.enter_context(open_executor(s.executor, s.concurrency))
            try:
                if one_pass:
                    whole = RowsWrittenWhole(s.out)
                    stack.callback(whole.discard)  # a file only once finished
                same = ("resume", "shard", "concurrency", "max_errors", "case_timeout")
                result = run_cases(
                    ready.cases,
                    **self._calls(),
                    **{name: getattr(s, name) for name in same},
                    out=None if one_pass else s.out,
                    fail_fast=s.fail_fast or None,
                    keep_rows=False,
                    on_row=noted,
                    dataset_fingerprint=ready.fingerprint or None,
                    manifest=None if one_pass else self._manifest(ready, observers),
                    stop=self.stop,
                    progress=lambda count: setattr(self, "in_flight", count),
                    observers=list(observers.values()),
                    executor=executor,
                )
                if whole is not None and ready.read:  # the whole file read: rows written
                    self._refuse(ready)
                    whole.finish(ready.fingerprint, self._manifest(ready, observers))
                    result.dataset_fingerprint = ready.fingerprint
                # stopped before the end of the file: nothing is written (nothing was spent,
                # and reading the rest for the fingerprint would make a stop slow)
            except OSError as exc:  # a full disk, a file gone: the run cannot complete
                where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
                kept = f"the rows written before it are kept in {s.out} (a resumed run continues"
                kept = "none is kept" if one_pass else f"{kept} there)"
                said = f"writing the results failed: {where}{exc.strerror or exc}; {kept}"
                raise IncompleteError(said) from None
        shown: dict[str, Any] = {"failures": failures.rows(), "batch_lines": batch_lines}
        return summarize(self, ready, result, observers=observers, **shown)

    def _calls(self) -> dict[str, Any]:  # in a run and in a dry run
        s = self.settings
        calls = {name: getattr(self, name) for name in ("judges", "judge_model", "generate_model")}
        calls.update(regenerate=s.regenerate, judge_all=s.judge_all, prompt_template=self.template)
        return {**calls, "judge_categories": self.judge_categories}

    def _manifest(self, ready: PreparedCases, observers: Mapping[str, Any]) -> dict[str, Any]:
        s = self.settings
        return run_manifest(
            cases=ready.selected,
            shard=s.shard,
            shard_cases=ready.in_shard if s.shard else None,
            sample={"size": s.sample, "seed": s.seed} if s.sample else None,
            only=ready.selected if (s.only is not None or s.rejudge) else None,
            judges={j.name: j.rubric_fingerprint for j in self.judges},
            judge_model=self.judge_spec if self.judges else None,
            gate=gate_settings(**s.gate_options(recorded=True)),
            suite=s.suite.fingerprint if s.suite is not None else None,
            cases_file=s.cases,
            observers={
                n: found for n, o in observers.items() if (found := o.manifest()) is not None
            },
        )


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file.

    >>> same_file("rows.jsonl", "./rows.jsonl")
    True
    """
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_overwriting(inputs: Iterable[str | None], outputs: Mapping[str, str | None]) -> None:
    """Refuse an output (by setting) that is an input or another output.

    >>> refuse_overwriting(["cases.jsonl"], {"out": "./cases.jsonl"})
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: out: ./cases.jsonl is the input file cases.jsonl; write elsewhere
    """
    given = [(name, path) for name, path in outputs.items() if path]
    for i, (name, path) in enumerate(given):
        if os.path.isdir(path):
            raise InputError(f"{path} is a directory; expected the path of a file", field=name)
        for source in inputs:
            if source and source != "-" and same_file(source, path):
                raise InputError(f"{path} is the input file {source}; write elsewhere", field=name)
        for other, other_path in given[i + 1 :]:
            if same_file(path, other_path):
                raise InputError(f"{path} is the same file as another output ({other})", field=name)


def parse_shard(text: str) -> tuple[int, int]:
    """A shard given as ``I/N`` (shard I of N, 1-based).

    >>> parse_shard("2/4")
    (2, 4)
    """
    left, sep, right = text.partition("/")
    try:
        index, count = int(left), int(right)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise InputError(f"expected I/N with 1 <= I <= N, got {text!r}", field="shard")
    return index, count


def open_model(
    spec: str,
    *,
    max_response_bytes: int | None = None,
    cache_path: str | None = None,
    no_cache: bool = False,
    refresh: bool = False,
    cache: Any = None,
    **options: Any,
) -> tuple[Any, Any]:
    """The model a spec names and the response cache answering it (None: uncached).

    >>> model, cache = open_model("builtin")
    >>> cache is None, callable(model)
    (True, True)
    """
    model = resolve(spec, max_response_bytes=max_response_bytes or MAX_RESPONSE_BYTES, **options)
    if no_cache or spec == "builtin" or (cache is None and cache_path is None):
        return model, cache
    from .cache import ResponseCache, cached

    cache = cache if cache is not None else ResponseCache(str(cache_path))
    return cached(model, cache, refresh=refresh), cache


def open_executor(
    spec: str | None, concurrency: int = 4
) -> contextlib.AbstractContextManager[Executor | None]:
    """The executor a spec names (None: the runner's threads).

    >>> with open_executor(None) as executor:
    ...     print(executor)
    None
    """
    if spec is None:
        return contextlib.nullcontext()
    scheme = spec.partition(":")[0]
    if scheme not in _EXTRAS["executor"]:
        known = " or ".join(f"{name}:…" for name in _EXTRAS["executor"]) or "no executor"
        raise InputError(f"expected {known}, got {spec!r}", field="executor")
    return _extra("executor", scheme, f"the executor {spec}")(spec, concurrency)


def case_ids(given: str | Sequence[str] | None, key: str = "id") -> list[str] | None:
    """Case ids: a list, ids separated by commas, or a file of them.

    >>> case_ids("a, b,c"), case_ids(None)
    (['a', 'b', 'c'], None)
    """
    if given is None or not isinstance(given, str):
        return None if given is None else [str(x) for x in given]
    if not Path(given).exists():
        return [part.strip() for part in given.split(",") if part.strip()]
    lines = read_text(given, what="the list of ids").splitlines()
    if any(line.lstrip().startswith("{") for line in lines):
        return [str(record.get(key)) for _, record in iter_json_lines(given)]
    return [line.strip() for line in lines if line.strip()]
