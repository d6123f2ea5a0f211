"""The suite file: what a suite is, checked in once instead of repeated on every command line.

A suite lives in ``tinyeval.toml``, or in the ``[tool.tinyeval]`` table of
``pyproject.toml``. :func:`find_suite` looks for one in a directory and then in
each parent up to the filesystem root; in one directory ``tinyeval.toml`` wins,
and a ``pyproject.toml`` without the table is passed over. :func:`load_suite`
reads and validates it into a frozen :class:`Suite`. Paths in the file are
relative to the file's own directory, so the suite means the same thing from
wherever it is run.

The keys (every one optional except ``cases``):

==========================  =====================================================
``cases``                   the cases file, or a list of them
``format``                  ``jsonl``, ``json``, ``csv`` or ``yaml``, when the name does not tell
``id_from_line``            name cases without an id ``line-N``
``concurrency``             cases evaluated at once (a whole number >= 1)
``default_threshold``       the threshold of a category without one of its own
``[fields]``                recognised key = dotted path in your records
``[thresholds]``            category = rate (``1.0``, ``0.85`` or ``"85%"``)
``[gate]``                  ``on`` (``rate``/``lower``), ``inconclusive`` (``pass``/``block``),
                            ``allow_unchecked`` (true/false)
``[[judges]]``              one table per judge: ``criterion`` (text or a built-in
                            name) or ``rubric`` (a file), ``name``, ``style``,
                            ``votes``, ``model``, ``categories``
``[models.judge]``          ``spec``, ``temperature``, ``max_tokens``, ``timeout``, ``base_url``
``[models.generate]``       the same, plus ``prompt_template`` (a file with ``{input}``)
``[price]``                 ``in`` and ``out``: US dollars per million tokens
``[holdout]``               ``fraction`` (between 0 and 1) and ``salt``
``[reports]``               ``out`` (result rows), ``junit``, ``markdown``, ``html``
==========================  =====================================================

Every problem is an :class:`~tinyeval.errors.InputError` naming the file, the line and the key,
as the cases loader does: an unknown key says which one was meant, a wrong type
says what was expected. API keys never belong in a checked-in file: a key named
like one is refused.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, "tinyeval.toml"), "w") as f:
...     _ = f.write('cases = "cases.jsonl"\\n[thresholds]\\namount_extraction = "100%"\\n')
>>> suite = load_suite(start=folder)
>>> suite.thresholds, os.path.basename(suite.cases[0])
({'amount_extraction': 1.0}, 'cases.jsonl')
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from .errors import InputError, describe_json, did_you_mean

__all__ = [
    "SUITE_FILE",
    "JudgeSpec",
    "ModelSettings",
    "Suite",
    "find_suite",
    "judges_of",
    "load_suite",
    "starter_text",
]

SUITE_FILE = "tinyeval.toml"
_PYPROJECT = "pyproject.toml"
_FORMATS = ("jsonl", "json", "csv", "yaml")
_STYLES = ("verdict-first", "evidence-first")
_SECRET = re.compile(r"(^|_)(api_?key|key|secret|password|token)$", re.IGNORECASE)
_V = TypeVar("_V")


# === The suite's parts ===


@dataclass(frozen=True)
class ModelSettings:
    """One model and how it is called: a spec such as ``builtin`` or ``openai:MODEL``.

    Never a key: API keys are read from the environment by the model adapters.

    >>> ModelSettings("openai:gpt-4o-mini", temperature=0.0).to_dict()["temperature"]
    0.0
    """

    spec: str
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    base_url: str | None = None
    prompt_template: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict (every key, None when unset).

        >>> sorted(ModelSettings("builtin").to_dict())
        ['base_url', 'max_tokens', 'prompt_template', 'spec', 'temperature', 'timeout']
        """
        return {
            "spec": self.spec,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "base_url": self.base_url,
            "prompt_template": self.prompt_template,
        }


@dataclass(frozen=True)
class JudgeSpec:
    """One judge as the suite describes it: a criterion (or a rubric file) and how to ask.

    ``categories`` empty means every category; ``model`` None means the suite's
    judge model.

    >>> spec = JudgeSpec(criterion="unsupported-claims", categories=("support_answers",))
    >>> spec.applies_to("support_answers"), spec.applies_to("tone")
    (True, False)
    """

    criterion: str | None = None
    rubric: str | None = None
    name: str | None = None
    style: str = "verdict-first"
    votes: int = 1
    model: str | None = None
    categories: tuple[str, ...] = ()

    def applies_to(self, category: str) -> bool:
        """Whether this judge looks at cases of ``category``."""
        return not self.categories or category in self.categories

    def judge(self) -> Any:
        """The judge this entry describes (a rubric file is read now; its name gives way to
        the entry's).

        >>> JudgeSpec(criterion="Is polite.", name="polite", votes=3).judge().votes
        3
        """
        if self.rubric is not None:
            from .judge import load_rubric

            rubric = load_rubric(self.rubric)
            if self.name is not None:
                rubric = replace(rubric, name=self.name)
            return rubric.judge(votes=self.votes, style=self.style)
        from .rag.judges import make_judge

        return make_judge(str(self.criterion), votes=self.votes, style=self.style, name=self.name)

    def to_dict(self) -> dict[str, Any]:
        """The judge as a JSON-ready dict.

        >>> JudgeSpec(criterion="tone is polite").to_dict()["votes"]
        1
        """
        return {
            "criterion": self.criterion,
            "rubric": self.rubric,
            "name": self.name,
            "style": self.style,
            "votes": self.votes,
            "model": self.model,
            "categories": list(self.categories),
        }


@dataclass(frozen=True)
class Suite:
    """What a suite is: its cases, how they are read, judged and gated, and where reports go.

    Paths (``cases``, rubric and template files, report paths) are stored
    joined to the suite file's directory, so they can be opened as they are;
    :meth:`to_dict` gives them back relative to that directory, as written.
    ``overridden`` names the settings :meth:`with_overrides` changed.

    >>> suite = Suite(cases=("cases.jsonl",), thresholds={"tone": 0.85})
    >>> suite.thresholds["tone"], suite.gate_on, suite.judges
    (0.85, 'rate', ())
    """

    path: str | None = None
    cases: tuple[str, ...] = ()
    fields: Mapping[str, str] = field(default_factory=dict)
    format: str | None = None
    id_from_line: bool = False
    thresholds: Mapping[str, float] = field(default_factory=dict)
    default_threshold: float | None = None
    gate_on: str = "rate"
    inconclusive: str | None = None
    allow_unchecked: bool = False
    judges: tuple[JudgeSpec, ...] = ()
    judge_model: ModelSettings | None = None
    generate_model: ModelSettings | None = None
    price: str | None = None
    holdout: float | None = None
    salt: str | None = None
    concurrency: int | None = None
    out: str | None = None
    junit: str | None = None
    markdown: str | None = None
    html: str | None = None
    overridden: tuple[str, ...] = ()

    @property
    def directory(self) -> str:
        """The directory the suite's paths are relative to (the suite file's own).

        >>> Suite(path=os.path.join("examples", "tinyeval.toml")).directory == "examples"
        True
        """
        return os.path.dirname(self.path) if self.path else "."

    @property
    def judge_categories(self) -> tuple[str, ...] | None:
        """The categories some judge looks at, or None when a judge looks at every one.

        >>> Suite(judges=(JudgeSpec(criterion="x", categories=("b", "a")),)).judge_categories
        ('a', 'b')
        """
        if not self.judges or any(not j.categories for j in self.judges):
            return None
        return tuple(sorted({c for j in self.judges for c in j.categories}))

    def to_dict(self) -> dict[str, Any]:
        """The suite's settings as a JSON-ready dict, paths relative to the suite's directory.

        This is the canonical content :attr:`fingerprint` is computed from:
        comments, layout and the file's location do not change it.

        >>> Suite(cases=("cases.jsonl",)).to_dict()["cases"]
        ['cases.jsonl']
        """

        def rel(value: str | None) -> str | None:
            return None if value is None else _relative(value, self.directory)

        def model(settings: ModelSettings | None) -> dict[str, Any] | None:
            if settings is None:
                return None
            return dict(settings.to_dict(), prompt_template=rel(settings.prompt_template))

        return {
            "cases": [rel(p) for p in self.cases],
            "fields": dict(self.fields),
            "format": self.format,
            "id_from_line": self.id_from_line,
            "thresholds": dict(self.thresholds),
            "default_threshold": self.default_threshold,
            "gate": {
                "on": self.gate_on,
                "inconclusive": self.inconclusive,
                "allow_unchecked": self.allow_unchecked,
            },
            "judges": [dict(j.to_dict(), rubric=rel(j.rubric)) for j in self.judges],
            "models": {"judge": model(self.judge_model), "generate": model(self.generate_model)},
            "price": self.price,
            "holdout": {"fraction": self.holdout, "salt": self.salt},
            "concurrency": self.concurrency,
            "reports": {
                "out": rel(self.out),
                "junit": rel(self.junit),
                "markdown": rel(self.markdown),
                "html": rel(self.html),
            },
        }

    @property
    def fingerprint(self) -> str:
        """16 hex characters of the SHA-256 of :meth:`to_dict`: record it with the results.

        >>> a = Suite(thresholds={"tone": 0.85})
        >>> a.fingerprint == Suite(thresholds={"tone": 0.85}).fingerprint, len(a.fingerprint)
        (True, 16)
        >>> a.fingerprint == Suite(thresholds={"tone": 0.9}).fingerprint
        False
        """
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def with_overrides(self, **options: Any) -> Suite:
        """A copy with the given settings replaced: command-line flags win over the file.

        An option given as None is taken as not given. ``thresholds`` is merged
        category by category; ``judges`` (a list of :class:`JudgeSpec` or of
        criterion strings) replaces the suite's judges. ``judge_model`` and
        ``generate_model`` take a spec string and keep the file's settings for
        it; ``temperature``, ``timeout`` and ``base_url`` apply to both models,
        ``judge_max_tokens`` to the judge and ``max_tokens`` and
        ``prompt_template`` to generation. Paths given here are used as they
        are (relative to the working directory, not to the suite file).
        :attr:`overridden` then lists, sorted, the settings whose value changed.

        >>> suite = Suite(thresholds={"amount": 1.0, "tone": 0.85}, concurrency=4)
        >>> changed = suite.with_overrides(thresholds={"tone": "90%"}, concurrency=None)
        >>> changed.thresholds, changed.concurrency, changed.overridden
        ({'amount': 1.0, 'tone': 0.9}, 4, ('thresholds.tone',))
        >>> suite.with_overrides(gate_on="lowest")
        Traceback (most recent call last):
        ...
        tinyeval.errors.InputError: gate_on: expected one of rate, lower, got string "lowest"
        """
        given = {name: value for name, value in options.items() if value is not None}
        known = {*_SIMPLE_OVERRIDES, *_MODEL_OVERRIDES, "thresholds", "judges", "fields", "cases"}
        for name in given:
            if name not in known:
                hint = did_you_mean(name, known)
                raise InputError(
                    f"not a suite setting{f'; did you mean {hint!r}?' if hint else ''}", field=name
                )
        changes: dict[str, Any] = {}
        changed: list[str] = []
        for name, check in _SIMPLE_OVERRIDES.items():
            if name in given:
                value = check(given[name], _Where(name))
                if value != getattr(self, name):
                    changes[name] = value
                    changed.append(name)
        if "cases" in given:
            value = given["cases"]
            paths = (value,) if isinstance(value, str | os.PathLike) else tuple(value)
            cases = tuple(_string(os.fspath(p), _Where("cases")) for p in paths)
            if cases != self.cases:
                changes["cases"] = cases
                changed.append("cases")
        if "fields" in given:
            changes["fields"] = _merged(self.fields, given["fields"], "fields", _string, changed)
        if "thresholds" in given:
            limits = _merged(self.thresholds, given["thresholds"], "thresholds", _rate, changed)
            changes["thresholds"] = limits
        if "judges" in given:
            judges = tuple(
                j if isinstance(j, JudgeSpec) else JudgeSpec(criterion=_string(j, _Where("judges")))
                for j in given["judges"]
            )
            if judges != self.judges:
                changes["judges"] = judges
                changed.append("judges")
        for which in ("judge_model", "generate_model"):
            settings = _override_model(getattr(self, which), which, given)
            if settings != getattr(self, which):
                changes[which] = settings
                changed.append(which)
        overridden = tuple(sorted({*self.overridden, *changed}))
        return replace(self, **changes, overridden=overridden)


# === Finding and loading ===


def judges_of(
    specs: Sequence[JudgeSpec], *, judge_model: str = "builtin"
) -> tuple[list[Any], dict[str, list[str]] | None]:
    """The judges of a suite's entries, and the categories each looks at (None: every judge
    looks at all). An entry naming a model other than the run's is refused: a run asks its
    judges through one model.

    >>> judges, where = judges_of([JudgeSpec(criterion="Is polite.", name="polite",
    ...                                      categories=("tone",))])
    >>> [j.name for j in judges], where
    (['polite'], {'polite': ['tone']})
    """
    judges: list[Any] = []
    categories: dict[str, list[str]] = {}
    for spec in specs:
        if spec.model is not None and spec.model != judge_model:
            raise InputError(
                f"the judge {spec.name or spec.criterion!r} names its own model {spec.model!r}: "
                "one judge model per run (set it under [models.judge])",
                field="judges",
            )
        judge = spec.judge()
        judges.append(judge)
        if spec.categories:
            categories[judge.name] = list(spec.categories)
    if not categories:
        return judges, None
    return judges, {judge.name: categories.get(judge.name, []) for judge in judges}


def find_suite(start: str | os.PathLike[str] = ".") -> Path | None:
    """The suite file for ``start``: in that directory or the nearest parent that has one.

    ``tinyeval.toml`` wins over ``pyproject.toml`` in the same directory; a
    ``pyproject.toml`` without a ``[tool.tinyeval]`` table is passed over (one
    that is not valid TOML too: it is not ours to judge). Returns None when no
    directory up to the filesystem root has one.

    >>> import tempfile
    >>> top = Path(tempfile.mkdtemp())
    >>> _ = (top / "pyproject.toml").write_text('[tool.tinyeval]\\ncases = "c.jsonl"\\n')
    >>> (top / "deep" / "er").mkdir(parents=True)
    >>> find_suite(top / "deep" / "er") == top / "pyproject.toml"
    True
    """
    here = Path(start).absolute()
    for folder in (here, *here.parents):
        found = _suite_in(folder)
        if found is not None:
            return _shown(found)
    return None


def _suite_in(folder: Path) -> Path | None:
    """The suite file of one directory, or None."""
    candidate = folder / SUITE_FILE
    if candidate.is_file():
        return candidate
    project = folder / _PYPROJECT
    if project.is_file() and _has_tool_table(project):
        return project
    return None


def _shown(path: Path) -> Path:
    """A path relative to the working directory when it lies inside it, else absolute."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _has_tool_table(path: Path) -> bool:
    import tomllib  # imported only to read a suite file: a run without one never pays

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and "tinyeval" in tool


def load_suite(
    path: str | os.PathLike[str] | None = None, *, start: str | os.PathLike[str] = "."
) -> Suite:
    """Read and validate a suite file: ``path``, or the one :func:`find_suite` finds from ``start``.

    ``path`` may be a directory: its own suite file is read. A
    ``pyproject.toml`` given explicitly must have a ``[tool.tinyeval]``
    table. Raises :class:`InputError` naming the file, line and key of the
    first problem.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "tinyeval.toml").write_text('cases = "c.jsonl"\\n[gate]\\nonn = "lower"\\n')
    >>> load_suite(folder / "tinyeval.toml")
    Traceback (most recent call last):
    ...
    tinyeval.errors.InputError: ...tinyeval.toml:3: gate.onn: unknown key; did you mean 'on'?
    """
    if path is None:
        found = find_suite(start)
        if found is None:
            raise InputError(
                f"no {SUITE_FILE}, and no [tool.tinyeval] table in a {_PYPROJECT}, "
                f"in {Path(start).absolute()} or any directory above it"
            )
        path = found
    elif Path(path).is_dir():
        found = _suite_in(Path(path))
        if found is None:
            raise InputError(
                f"no {SUITE_FILE}, and no [tool.tinyeval] table in a {_PYPROJECT}, in this "
                "directory",
                path=os.fspath(path),
            )
        path = found
    import tomllib

    shown = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=shown) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", path=shown) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=shown) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = re.search(r"\(at line (\d+), column (\d+)\)$", message)
        reason = message[: where.start()].strip() if where else message
        line = int(where.group(1)) if where else None
        raise InputError(f"not valid TOML: {reason}", path=shown, line=line) from None
    prefix: tuple[str, ...] = ()
    if Path(path).name == _PYPROJECT:
        tool = data.get("tool")
        if not isinstance(tool, dict) or "tinyeval" not in tool:
            raise InputError("no [tool.tinyeval] table in this file", path=shown)
        data, prefix = tool["tinyeval"], ("tool", "tinyeval")
        if not isinstance(data, dict):
            raise InputError(
                f"expected a table, got {describe_json(data)}",
                path=shown,
                line=_Lines(text).line(prefix),
                field="tool.tinyeval",
            )
    return _build(data, _Where((), shown, _Lines(text), prefix))


# === Line numbers ===

_BARE_OR_QUOTED = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*"
_HEADER = re.compile(rf"^\s*(\[\[|\[)\s*({_DOTTED})\s*\]\]?")
_KEY = re.compile(rf"^\s*({_DOTTED})\s*=(.*)$")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')


def _key_parts(text: str) -> tuple[str, ...]:
    parts = re.findall(_BARE_OR_QUOTED, text)
    return tuple(p[1:-1] if p[:1] in "\"'" else p for p in parts)


class _Lines:
    """Where each key of a TOML text is, found by scanning its lines (tomllib keeps no positions).

    Paths are tuples of keys, with an index after an array of tables:
    ``("judges", 1, "votes")``. Handles tables, dotted keys, arrays of tables,
    multi-line arrays and multi-line strings; a key inside an inline table is
    placed on the line of the key that holds the table.

    >>> lines = _Lines('a = 1\\n[[j]]\\nx = 1\\n[[j]]\\nx = [\\n  "y = 2",\\n]\\n[t]\\nb.c = 3\\n')
    >>> lines.line(("j", 1, "x")), lines.line(("t", "b", "c")), lines.line(("t", "zz"))
    (5, 9, 8)
    """

    def __init__(self, text: str) -> None:
        self.where: dict[tuple[str | int, ...], int] = {}
        arrays: dict[tuple[str | int, ...], int] = {}
        table: tuple[str | int, ...] = ()
        depth = 0  # open brackets and braces of a value continuing on later lines
        closing = ""  # the quotes that close a multi-line string, while inside one
        for number, line in enumerate(text.splitlines(), start=1):
            if closing:
                if closing in line:
                    closing = ""
                continue
            if depth:
                depth = max(depth + _balance(line), 0)
                continue
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            header = _HEADER.match(line)
            if header:
                array = header.group(1) == "[["
                path = self._resolve(_key_parts(header.group(2)), arrays, array=array)
                if array:
                    arrays[path] = arrays.get(path, -1) + 1
                    self.where.setdefault(path, number)
                    path = (*path, arrays[path])
                table = path
                self.where.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key is None:
                continue
            parts = _key_parts(key.group(1))
            for size in range(1, len(parts) + 1):
                self.where.setdefault((*table, *parts[:size]), number)
            value = _STRINGS.sub('""', key.group(2).split("#", 1)[0]) if key.group(2) else ""
            for quotes in ('"""', "'''"):
                if key.group(2).count(quotes) % 2 == 1:
                    closing = quotes
            if not closing:
                depth = max(_balance(value), 0)

    @staticmethod
    def _resolve(
        parts: tuple[str, ...], arrays: Mapping[tuple[str | int, ...], int], *, array: bool
    ) -> tuple[str | int, ...]:
        """A header's path, with the current index after each array of tables it passes."""
        path: tuple[str | int, ...] = ()
        for number, part in enumerate(parts, start=1):
            path = (*path, part)
            if path in arrays and not (array and number == len(parts)):
                path = (*path, arrays[path])
        return path

    def line(self, path: Sequence[str | int]) -> int | None:
        """The line of ``path``, or of its nearest enclosing key or table that has one."""
        key = tuple(path)
        while key:
            if key in self.where:
                return self.where[key]
            key = key[:-1]
        return None


def _balance(text: str) -> int:
    text = _STRINGS.sub('""', text.split("#", 1)[0])
    return text.count("[") + text.count("{") - text.count("]") - text.count("}")


# === Validation ===


class _Where:
    """Where a value is: its key path, and the file and line scanner to name it with."""

    def __init__(
        self,
        path: tuple[str | int, ...] | str,
        file: str | None = None,
        lines: _Lines | None = None,
        prefix: tuple[str, ...] = (),
    ) -> None:
        self.path: tuple[str | int, ...] = (path,) if isinstance(path, str) else path
        self.file, self.lines, self.prefix = file, lines, prefix

    def __truediv__(self, key: str | int) -> _Where:
        return _Where((*self.path, key), self.file, self.lines, self.prefix)

    @property
    def name(self) -> str:
        text = ""
        for part in self.path:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text

    def error(self, reason: str) -> InputError:
        line = self.lines.line((*self.prefix, *self.path)) if self.lines else None
        return InputError(reason, path=self.file, line=line, field=self.name or None)

    def expected(self, what: str, value: Any) -> InputError:
        return self.error(f"expected {what}, got {describe_json(value)}")


def _merged(
    current: Mapping[str, _V],
    given: Any,
    table: str,
    check: Callable[[Any, _Where], _V],
    changed: list[str],
) -> dict[str, _V]:
    """``current`` with each key of ``given`` checked and set; each key that changes is noted."""
    merged = dict(current)
    for key, value in dict(given).items():
        value = check(value, _Where(f"{table}.{key}"))
        if merged.get(key) != value:
            merged[key] = value
            changed.append(f"{table}.{key}")
    return merged


def _string(value: Any, where: _Where) -> str:
    if not isinstance(value, str) or not value.strip():
        raise where.expected("a non-empty string", value)
    return value


def _boolean(value: Any, where: _Where) -> bool:
    if not isinstance(value, bool):
        raise where.expected("true or false", value)
    return value


def _whole(value: Any, where: _Where, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise where.expected(f"a whole number >= {minimum}", value)
    return value


def _number(value: Any, where: _Where, *, positive: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        raise where.expected("a number > 0" if positive else "a number >= 0", value)
    return float(value)


def _rate(value: Any, where: _Where) -> float:
    """A threshold: a number from 0 to 1, or a percentage string such as ``"85%"``."""
    rate: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        rate = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            rate = None
    if rate is None or not 0.0 <= rate <= 1.0:  # also refuses NaN
        raise where.expected('a rate from 0 to 1, or a percentage such as "85%"', value)
    return rate


def _choice(*choices: str) -> Any:
    def check(value: Any, where: _Where) -> str:
        if value not in choices:
            raise where.expected(f"one of {', '.join(choices)}", value)
        return str(value)

    return check


def _fraction(value: Any, where: _Where) -> float:
    number = _number(value, where)
    if not 0.0 < number < 1.0:
        raise where.expected("a fraction between 0 and 1, such as 0.2", value)
    return number


def _price_text(value: Any, where: _Where) -> str:
    """A price as ``in=X,out=Y``, from that text or from the ``[price]`` table's numbers."""
    if isinstance(value, Mapping):
        return f"in={value['in']},out={value['out']}"
    text = _string(value, where)
    parts = dict(part.strip().partition("=")[::2] for part in text.split(","))
    if sorted(parts) != ["in", "out"]:
        raise where.expected('a price such as "in=0.15,out=0.60"', value)
    for name, raw in parts.items():
        try:
            _number(float(raw.strip().removeprefix("$")), where / name)
        except ValueError:
            raise where.expected('a price such as "in=0.15,out=0.60"', value) from None
    return text


def _table(value: Any, where: _Where, keys: Iterable[str]) -> dict[str, Any]:
    """A TOML table whose keys must all be among ``keys`` (a did-you-mean otherwise)."""
    if not isinstance(value, dict):
        raise where.expected("a table", value)
    allowed = list(keys)
    for key in value:
        if _SECRET.search(key) and key != "max_tokens":
            raise (where / key).error(
                "a suite file is checked in: never put an API key or secret in it; "
                "the model adapters read keys from the environment (e.g. OPENAI_API_KEY)"
            )
        if key not in allowed:
            hint = did_you_mean(key, allowed)
            raise (where / key).error(
                f"unknown key; did you mean {hint!r}?" if hint else
                f"unknown key; expected one of {', '.join(allowed)}"
            )  # fmt: skip
    return value


_TOP = (
    "cases", "format", "id_from_line", "concurrency", "default_threshold", "fields",
    "thresholds", "gate", "judges", "models", "price", "holdout", "reports",
)  # fmt: skip
_JUDGE = ("criterion", "rubric", "name", "style", "votes", "model", "categories")
_MODEL = ("spec", "temperature", "max_tokens", "timeout", "base_url")
_REPORTS = ("out", "junit", "markdown", "html")


def _build(data: dict[str, Any], where: _Where) -> Suite:
    data = _table(data, where, _TOP)
    base = os.path.dirname(where.file or "")

    def path(value: Any, at: _Where) -> str:
        return os.path.join(base, _string(value, at)) if base else _string(value, at)

    if "cases" not in data:
        raise where.error(f"no 'cases' key: name the cases file, e.g. cases = {'cases.jsonl'!r}")
    raw_cases = data["cases"]
    if isinstance(raw_cases, list):
        if not raw_cases:
            raise (where / "cases").expected("a file name or a non-empty list of them", raw_cases)
        cases = tuple(path(p, where / "cases" / i) for i, p in enumerate(raw_cases))
    else:
        cases = (path(raw_cases, where / "cases"),)
    options: dict[str, Any] = {"path": where.file, "cases": cases}
    if "format" in data:
        options["format"] = _choice(*_FORMATS)(data["format"], where / "format")
    if "id_from_line" in data:
        options["id_from_line"] = _boolean(data["id_from_line"], where / "id_from_line")
    if "concurrency" in data:
        options["concurrency"] = _whole(data["concurrency"], where / "concurrency")
    if "default_threshold" in data:
        options["default_threshold"] = _rate(data["default_threshold"], where / "default_threshold")
    if "fields" in data:
        at = where / "fields"
        table = _table(data["fields"], at, ("id", "input", "output", "context", "category",
                                            "expect", "origin", "tool_calls", "label"))  # fmt: skip
        options["fields"] = {key: _string(value, at / key) for key, value in table.items()}
    if "thresholds" in data:
        at = where / "thresholds"
        if not isinstance(data["thresholds"], dict):
            raise at.expected("a table of category = rate", data["thresholds"])
        options["thresholds"] = {k: _rate(v, at / k) for k, v in data["thresholds"].items()}
    if "gate" in data:
        at = where / "gate"
        gate = _table(data["gate"], at, ("on", "inconclusive", "allow_unchecked"))
        if "on" in gate:
            options["gate_on"] = _choice("rate", "lower")(gate["on"], at / "on")
        if "inconclusive" in gate:
            options["inconclusive"] = _choice("pass", "block")(
                gate["inconclusive"], at / "inconclusive"
            )
        if "allow_unchecked" in gate:
            options["allow_unchecked"] = _boolean(gate["allow_unchecked"], at / "allow_unchecked")
    if "judges" in data:
        at = where / "judges"
        if not isinstance(data["judges"], list):
            raise at.expected("an array of tables, written [[judges]]", data["judges"])
        options["judges"] = tuple(
            _judge(item, at / i, path) for i, item in enumerate(data["judges"])
        )
        names = [j.name or j.criterion or j.rubric for j in options["judges"]]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise (at / i).error(f"a second judge named {name!r}; give judges distinct names")
    if "models" in data:
        at = where / "models"
        models = _table(data["models"], at, ("judge", "generate"))
        if "judge" in models:
            options["judge_model"] = _model(models["judge"], at / "judge", _MODEL, path)
        if "generate" in models:
            keys = (*_MODEL, "prompt_template")
            options["generate_model"] = _model(models["generate"], at / "generate", keys, path)
    if "price" in data:
        at = where / "price"
        price = _table(data["price"], at, ("in", "out"))
        for name in ("in", "out"):
            if name not in price:
                raise at.error(f"no {name!r} key: give in and out, dollars per million tokens")
            _number(price[name], at / name)
        options["price"] = _price_text(price, at)
    if "holdout" in data:
        at = where / "holdout"
        holdout = _table(data["holdout"], at, ("fraction", "salt"))
        if "fraction" not in holdout:
            raise at.error("no 'fraction' key: the share of cases held out, e.g. fraction = 0.2")
        options["holdout"] = _fraction(holdout["fraction"], at / "fraction")
        if "salt" in holdout:
            options["salt"] = _string(holdout["salt"], at / "salt")
    if "reports" in data:
        at = where / "reports"
        for key, value in _table(data["reports"], at, _REPORTS).items():
            options[key] = path(value, at / key)
    return Suite(**options)


def _judge(item: Any, where: _Where, path: Any) -> JudgeSpec:
    table = _table(item, where, _JUDGE)
    if ("criterion" in table) == ("rubric" in table):
        raise where.error(
            "a judge needs exactly one of 'criterion' (text or a built-in name) or "
            "'rubric' (a file)"
        )
    options: dict[str, Any] = {}
    if "criterion" in table:
        options["criterion"] = _string(table["criterion"], where / "criterion")
    if "rubric" in table:
        options["rubric"] = path(table["rubric"], where / "rubric")
    for key in ("name", "model"):
        if key in table:
            options[key] = _string(table[key], where / key)
    if "style" in table:
        options["style"] = _choice(*_STYLES)(table["style"], where / "style")
    if "votes" in table:
        votes = _whole(table["votes"], where / "votes")
        if votes % 2 == 0:
            raise (where / "votes").expected("an odd number (1, 3, 5…) so a majority exists", votes)
        options["votes"] = votes
    if "categories" in table:
        at = where / "categories"
        if not isinstance(table["categories"], list) or not table["categories"]:
            raise at.expected("a non-empty list of category names", table["categories"])
        options["categories"] = tuple(_string(c, at / i) for i, c in enumerate(table["categories"]))
    return JudgeSpec(**options)


def _model(item: Any, where: _Where, keys: Sequence[str], path: Any) -> ModelSettings:
    table = _table(item, where, keys)
    if "spec" not in table:
        raise where.error("no 'spec' key: name the model, e.g. spec = 'builtin' or 'openai:MODEL'")
    options: dict[str, Any] = {"spec": _string(table["spec"], where / "spec")}
    if "temperature" in table:
        options["temperature"] = _number(table["temperature"], where / "temperature")
    if "max_tokens" in table:
        options["max_tokens"] = _whole(table["max_tokens"], where / "max_tokens")
    if "timeout" in table:
        options["timeout"] = _number(table["timeout"], where / "timeout", positive=True)
    if "base_url" in table:
        options["base_url"] = _string(table["base_url"], where / "base_url")
    if "prompt_template" in table:
        options["prompt_template"] = path(table["prompt_template"], where / "prompt_template")
    return ModelSettings(**options)


_SIMPLE_OVERRIDES: dict[str, Any] = {
    "format": _choice(*_FORMATS),
    "id_from_line": _boolean,
    "default_threshold": _rate,
    "gate_on": _choice("rate", "lower"),
    "inconclusive": _choice("pass", "block"),
    "allow_unchecked": _boolean,
    "price": _price_text,
    "holdout": _fraction,
    "salt": _string,
    "concurrency": _whole,
    "out": _string,
    "junit": _string,
    "markdown": _string,
    "html": _string,
}
_MODEL_OVERRIDES = (
    "judge_model", "generate_model", "temperature", "timeout", "base_url",
    "judge_max_tokens", "max_tokens", "prompt_template",
)  # fmt: skip


def _override_model(
    settings: ModelSettings | None, which: str, given: Mapping[str, Any]
) -> ModelSettings | None:
    """``settings`` with the model options of ``given`` that concern ``which`` applied."""
    if which in given:
        spec = _string(given[which], _Where(which))
        settings = replace(settings, spec=spec) if settings else ModelSettings(spec)
    if settings is None:
        return None
    changes: dict[str, Any] = {}
    if "temperature" in given:
        changes["temperature"] = _number(given["temperature"], _Where("temperature"))
    if "timeout" in given:
        changes["timeout"] = _number(given["timeout"], _Where("timeout"), positive=True)
    if "base_url" in given:
        changes["base_url"] = _string(given["base_url"], _Where("base_url"))
    tokens = "judge_max_tokens" if which == "judge_model" else "max_tokens"
    if tokens in given:
        changes["max_tokens"] = _whole(given[tokens], _Where(tokens))
    if which == "generate_model" and "prompt_template" in given:
        changes["prompt_template"] = _string(given["prompt_template"], _Where("prompt_template"))
    return replace(settings, **changes)


def _relative(path: str, base: str) -> str:
    try:
        return Path(os.path.relpath(path, base or ".")).as_posix()
    except ValueError:  # another drive, on Windows
        return Path(path).as_posix()


# === The starter file ===

_STARTER = """\
# tinyeval suite: what `tinyeval run` (and `pytest --tinyeval`) evaluates, checked in.
# Paths are relative to this file. Command-line flags override what is set here.
# Reference: every key is optional except `cases`.

# The cases: one JSON object per line (or .json, .csv, .yaml); a list for several files.
cases = "cases.jsonl"

# The threshold of every category without one of its own (0 to 1, or "85%").
default_threshold = 0.8

# Your logs' field names, mapped onto tinyeval's (dotted paths allowed).
# [fields]
# input = "request.messages.0.content"
# output = "response.text"

# One threshold per category: a category under its threshold fails the gate,
# whatever the global rate.
[thresholds]
# amount_extraction = 1.0
# tone = "85%"

[gate]
# a rate at or above its threshold whose 95% interval reaches below it is inconclusive:
inconclusive = "pass"     # "pass" lets it through, marked; "block" demands the margin
allow_unchecked = false   # true: cases nothing checked stop blocking (still not passed)

# A judge for what code cannot check: one criterion, PASS/FAIL. Repeat [[judges]]
# for more. `criterion` is text or a built-in name (unsupported-claims,
# answers-the-question, refuses-when-ambiguous); `rubric` is a file instead.
# [[judges]]
# criterion = "unsupported-claims"
# categories = ["support_answers"]
# votes = 1                 # odd: 1, 3, 5
# style = "verdict-first"   # or "evidence-first"

# The judge's model: "builtin" needs no key and no network. API keys are read
# from the environment (e.g. OPENAI_API_KEY), never from this file.
[models.judge]
spec = "builtin"
# temperature = 0.0
# max_tokens = 512
# timeout = 60
# base_url = "http://127.0.0.1:8080/v1"

# A model to generate outputs for cases that have none.
# [models.generate]
# spec = "openai:gpt-4o-mini"
# prompt_template = "prompt.txt"   # a text file with {input}

# US dollars per million tokens, to report what a run cost.
# [price]
# in = 0.15
# out = 0.60

# The share of cases kept aside to check the suite is not tuned to its own cases.
# [holdout]
# fraction = 0.2
# salt = "tinyeval-holdout"

[reports]
out = "tinyeval-results.jsonl"
# junit = "tinyeval-junit.xml"
# markdown = "tinyeval-summary.md"
# html = "tinyeval-report.html"
"""


def starter_text() -> str:
    """A commented starter ``tinyeval.toml``, for ``tinyeval init``: it loads as it is.

    >>> text = starter_text()
    >>> text.startswith("# tinyeval suite"), 'cases = "cases.jsonl"' in text
    (True, True)
    """
    return _STARTER
