"""The run's settings (:class:`RunSettings`) and the suite file that may set them."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from ._formats import _FORMATS, MAX_CONFIG_BYTES, _unreadable, read_text
from .errors import InputError, describe_json, did_you_mean, is_number
from .gating import parse_threshold, refuse_unknown_categories

SUITE_FILE = "tinyeval.toml"
_PYPROJECT = "pyproject.toml"
_SECRET = re.compile(r"(^|_)(api_?key|key|secret|password|token)$", re.IGNORECASE)

# The groups of `tinyeval run --help`, in this order: the core's first, then each extra's.
READING, GATE, JUDGE, RUNNING = "reading the cases", "the gate", "the judge", "running"
ESTIMATES = "trials, early stopping and corrected rates (tinyeval/estimates/)"
SCALE = "batches, executors and the spend cap (tinyeval/scale/)"
JUDGES, RAG = "juries and other judges (tinyeval/judges/)", "retrieval (tinyeval/rag/)"
CI, MORE = "CI reports (tinyeval/ci/)", "more options of the core"
GROUPS = (READING, GATE, JUDGE, RUNNING, ESTIMATES, SCALE, JUDGES, RAG, CI, MORE)
_JUDGED, _GENERATED = ("criterion", "rubric"), ("generate_model",)
_PASS = ("pass", "block")
_STYLES = ("verdict-first", "evidence-first", "structured")  # as tinyeval.judge.STYLES
_DAY, _GIB, _TOKENS = 86_400, 2**30, 1_000_000  # upper bounds of settings (seconds, bytes)


def _shown(value: float) -> str:
    try:
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"
    except ValueError:  # beyond the interpreter's digit limit
        return f"a number of more than {sys.get_int_max_str_digits():,} digits"


def _beyond(meta: Mapping[str, Any], value: float) -> str | None:
    low, high = meta.get("least"), meta.get("most")
    if low is not None and value < low:
        return f"must be {low} or more, got {_shown(value)}"
    if high is not None and value > high:
        return f"must be at most {high:,}, got {_shown(value)}"
    if meta.get("odd") and value % 2 == 0:
        return f"expected an odd number (1, 3, 5…) so a majority exists, got {value}"
    return None


def _texts(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [str(part) for item in value.items() for part in item]
    items = [value] if isinstance(value, str) else value if isinstance(value, list | tuple) else []
    return [item for item in items if isinstance(item, str)]


def _setting(group: str | None, help: str, default: Any = None, **more: Any) -> Any:
    """More: argparse keywords, bounds, ``needs`` (settings it needs), ``suite`` (its key)."""
    metadata = {"group": group, "help": help, **more}
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=metadata)
    return field(default=default, metadata=metadata)


_reading, _gating, _judging, _running, _estimates, _scale, _juries, _rag, _ci, _more = (
    partial(_setting, group) for group in GROUPS
)


@dataclass
class RunSettings:
    """Every setting of a run, its values spelled as on the command line.

    >>> RunSettings(cases="cases.jsonl").concurrency
    4
    """

    cases: str
    out: str = _setting(
        None, "a result row per case", "tinyeval-results.jsonl", metavar="FILE", suite="reports.out"
    )
    fields: Mapping[str, str] = _reading(
        "a key = a dotted path in your records, e.g. input=request.q",
        {},
        flag="--field",
        metavar="KEY=PATH",
        suite="fields",
    )
    format: str | None = _reading("when the name does not tell", choices=_FORMATS, suite="format")
    sample: int | None = _reading("run a seeded sample of N cases", least=1)
    seed: int | str = _reading("seed of --sample", "0")
    only: str | Sequence[str] | None = _reading(
        "run only these ids (a,b,c), or those of a file", metavar="IDS|FILE"
    )
    thresholds: Mapping[str, Any] = _gating(
        "a category's least pass rate, e.g. tone=0.9 or =95%%",
        {},
        flag="--threshold",
        metavar="CATEGORY=RATE",
        suite="thresholds",
    )
    default_threshold: Any = _gating(  # noqa: RUF009
        "of categories without one", metavar="RATE", rate=True, suite="default_threshold"
    )
    inconclusive: str | None = _gating(
        "a rate whose 95%% interval straddles it", choices=_PASS, suite="gate.inconclusive"
    )
    allow_unchecked: bool | None = _gating(
        "unchecked cases do not block their category", suite="gate.allow_unchecked"
    )
    margin: Any = field(default=None, metadata={"suite": "margin", "rate": True})  # compare's
    strict_categories: bool | None = _gating(
        "refuse a category no threshold names (when no default)", suite="strict_categories"
    )
    criterion: Sequence[str] = _judging(
        "text, a built-in name, or graded:TEXT", (), metavar="TEXT|NAME"
    )
    rubric: Sequence[str] = _judging("a criterion from a file: text, or JSON", (), metavar="FILE")
    judges: Sequence[Any] = ()  # a suite's judge entries (JudgeSpec)
    judge_model: str | Sequence[str] | None = _judging(
        "builtin (the default), openai:M, anthropic:M, cmd:CMD, py:MOD:FUNC; 3, 5… times: a jury",
        metavar="SPEC",
        many=True,
        needs=_JUDGED,
    )
    votes: int = _judging(
        "ask the judge N times: the majority", 1, least=1, most=101, odd=True, needs=_JUDGED
    )
    temperature: float = _judging("the models' temperature", 0.0, metavar="T", least=0, most=2)
    judge_max_tokens: int | None = _judging("longest judge reply", 256, least=1, most=_TOKENS)
    base_url: str | None = _judging("an OpenAI-compatible server's URL", metavar="URL")
    timeout: float = _running("timeout of one model call", 60.0, least=0, most=_DAY)
    case_timeout: float | None = _running(
        "a case running longer is an error row", least=0, most=_DAY
    )
    concurrency: int = _running("cases at once", 4, least=1, most=1024, suite="concurrency")
    cache: str = _running("the response cache", ".tinyeval/cache.sqlite3", metavar="PATH")
    no_cache: bool = _running("neither read nor write the cache", False)
    resume: bool = _running("keep the rows in --out, run the cases without one", False)
    shard: tuple[int, int] | None = _running("run shard I of N only", metavar="I/N")
    trials: int = _estimates(
        "run each case K times", 1, metavar="K", least=1, most=1000, needs=_GENERATED
    )
    trials_gate: str = _estimates(
        "a case passes when all trials pass or any", "all", choices=("all", "any")
    )
    stop_when_decided: bool = _estimates(
        "stop each category once a confidence sequence decides its gate", False
    )
    labels: str | None = _estimates("labels: gate on what people say", suite="labels", gate=True)
    min_kappa: float | None = _estimates(
        "least kappa to trust", metavar="K", rate=True, suite="min_kappa", gate=True
    )
    calibration: str | None = _estimates(
        "a saved calibration: the gate's corrected rates", needs=_JUDGED
    )
    batch: bool = _scale("send the model calls through the provider's batch API", False)
    batch_poll: float = _scale("first wait between polls of a batch", 30.0, least=0, most=3600)
    batch_max_wait: float = _scale(
        "give up on a pending batch after SECONDS", 90000.0, least=0, most=30 * 86400
    )
    executor: str | None = _scale(
        "run the cases on a Dask cluster", metavar="dask:local|dask://HOST:PORT"
    )
    max_cost: float | None = _scale(
        "stop before the cost passes USD", metavar="USD", least=0, needs=("price",)
    )
    max_cost_unknown: str = _scale(
        "a reply without usage stops a capped run, or not", "stop", choices=("stop", "allow")
    )
    price: Any = _scale("USD per million tokens in and out", metavar="in=X,out=Y")  # noqa: RUF009
    dawid_skene: bool = _juries("a jury's jurors' errors from its verdicts alone", False)
    review_out: str | None = _juries("rows whose votes split", needs=_JUDGED)
    k: str = _rag("cutoffs of the retrieval table", "1,3,5,10")
    retrieval_threshold: Sequence[str] = _rag(
        "a least value, e.g. recall@5=0.8", (), metavar="METRIC@K=VALUE"
    )
    junit: str | None = _ci("also write JUnit XML", suite="reports.junit")
    markdown: str | None = _ci("also write the gate table as Markdown", suite="reports.markdown")
    html: str | None = _ci("also write an HTML page", suite="reports.html")
    id_from_line: bool = _more("an id-less case is line-N", False, suite="id_from_line")
    max_line_bytes: int | None = _more("longest line read (default: 64 MiB)", least=1, most=_GIB)
    rejudge: str | None = _more("re-check and re-judge a run's outputs", metavar="RESULTS")
    judge_style: str = _more(
        "the judge's answer format", "verdict-first", choices=_STYLES, needs=_JUDGED
    )
    judge_all: bool = _more("judge cases failing their checks too", False, needs=_JUDGED)
    judge_category: Sequence[str] | None = _more(
        "judge only this category", metavar="CATEGORY", many=True, needs=_JUDGED
    )
    show_failures: int = _more("failed cases shown per category", 5, least=0, most=1000)
    max_response_bytes: int | None = _more(
        "largest model reply read (default: 8 MiB)", least=1, most=_GIB
    )
    refresh: bool = _more("call the models again, overwriting the cache", False)
    pass_env: Sequence[str] = _more(
        "an environment variable cmd: models also see", (), metavar="NAME"
    )
    generate_model: str | None = _more("generate missing outputs", metavar="SPEC")
    prompt_template: str | None = _more(
        "a file with {input}, the generate prompt", needs=_GENERATED
    )
    max_tokens: int | None = _more(
        "longest generated output", least=1, most=_TOKENS, needs=_GENERATED
    )
    regenerate: bool = _more("generate logged outputs too", False, needs=_GENERATED)
    max_errors: int | None = _more("stop (exit 3) after more errored cases", least=0)
    fail_fast: int = _more("stop (exit 3) after N errors before any call succeeded", 10, least=0)
    suite: Any = None  # the Suite these settings came from
    suite_overridden: Sequence[str] = ()  # its keys the caller gave again

    def refuse_out_of_range(self) -> None:
        """Refuse a number out of bounds, a NUL character, and settings that cannot go together.

        >>> RunSettings(cases="c", concurrency=10**8).refuse_out_of_range()
        Traceback (most recent call last):
        ...
        tinyeval.errors.InputError: concurrency: must be at most 1,024, got 100,000,000
        """
        for f in fields(self):
            value = getattr(self, f.name)
            if any("\x00" in text for text in _texts(value)):
                raise InputError("a NUL character (\\x00) in the value", field=f.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if isinstance(value, float) and not math.isfinite(value):
                raise InputError(f"expected a finite number, got {value}", field=f.name)
            if said := _beyond(f.metadata, value):
                raise InputError(said, field=f.name)
        if any(not re.fullmatch(r"[A-Za-z_]\w*", str(name), re.ASCII) for name in self.pass_env):
            raise InputError("expected names of variables: letters, digits, _", field="pass_env")
        if self.dawid_skene and len(self.jurors) < 3:
            raise InputError("needs a jury: 3, 5… judge models", field="dawid_skene")
        if self.rejudge and self.generate_model:
            reason = "checks and judges recorded outputs; it takes no generate model"
            raise InputError(f"{reason} (generate_model)", field="rejudge")

    @property
    def jurors(self) -> list[str]:
        """The judge model specs: one, or three, five… for a jury."""
        given = self.judge_model
        return [given] if isinstance(given, str) else list(given or [])

    def unused(self) -> list[tuple[str, tuple[str, ...]]]:
        """The settings given that have no effect, each with those that would give one.

        >>> RunSettings(cases="c", votes=3, max_cost=5.0, price="in=1,out=2").unused()
        [('votes', ('criterion', 'rubric'))]
        """
        judged = bool(self.criterion or self.rubric or self.judges)
        present = {"criterion": judged, "rubric": judged, "price": bool(self.price)}
        present["generate_model"] = bool(self.generate_model)
        return [
            (f.name, f.metadata["needs"])
            for f in fields(self)
            if "needs" in f.metadata
            and getattr(self, f.name) != f.default
            and not any(present[name] for name in f.metadata["needs"])
        ]

    def gate_options(self, *, recorded: bool = False) -> dict[str, Any]:
        """The keywords of :func:`tinyeval.gating.gate` (``recorded``: and the people's estimate's).

        >>> RunSettings(cases="c", thresholds={"tone": "0.9"}).gate_options()["thresholds"]
        {'tone': '0.9'}
        """
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.metadata.get("group") == GATE or (recorded and "gate" in f.metadata)
        }


_FIELDS = {f.name: f for f in fields(RunSettings)}


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of a suite: a criterion or a rubric file, and its categories (none: all).

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
        return not self.categories or category in self.categories

    def judge(self) -> Any:
        """The judge this entry describes.

        >>> JudgeSpec(criterion="Is polite.", name="polite", votes=3).judge().votes
        3
        """
        from .judge import load_rubric, make_judge

        options: dict[str, Any] = {"votes": self.votes, "style": self.style, "name": self.name}
        if self.rubric is not None:
            return load_rubric(self.rubric).judge(**options)
        return make_judge(str(self.criterion), **options)


@dataclass(frozen=True)
class Suite:
    """A suite file read, its paths joined to its directory, its ``settings`` attributes too.

    >>> Suite(settings={"thresholds": {"tone": 0.85}}).thresholds, Suite().inconclusive
    ({'tone': 0.85}, None)
    """

    path: str | None = None
    cases: tuple[str, ...] = ()
    judges: tuple[JudgeSpec, ...] = ()
    holdout: float | None = None
    salt: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    expect: Mapping[str, Any] = field(default_factory=dict)  # the [expect] table
    where: Any = field(default=None, compare=False, repr=False)  # where it was read, for lines

    def __getattr__(self, name: str) -> Any:
        if name not in _FIELDS:
            raise AttributeError(f"'Suite' object has no attribute {name!r}")
        return self.settings.get(
            name, {} if str(_FIELDS[name].type).startswith("Mapping") else None
        )

    def to_dict(self) -> dict[str, Any]:
        """The suite as JSON, paths relative to its directory: what :attr:`fingerprint` hashes.

        >>> Suite(cases=("cases.jsonl",)).to_dict()["cases"]
        ['cases.jsonl']
        """
        base = os.path.dirname(self.path) if self.path else "."

        def rel(value: str) -> str:
            try:
                return Path(os.path.relpath(value, base)).as_posix()
            except ValueError:  # another drive, on Windows
                return Path(value).as_posix()

        found = {**self.settings, "cases": [rel(p) for p in self.cases]}
        found.update(holdout=self.holdout, salt=self.salt, expect=dict(self.expect))
        found["judges"] = [dict(asdict(j), rubric=j.rubric and rel(j.rubric)) for j in self.judges]
        for name in self.settings:
            path = name in ("labels", "prompt_template")
            if path or _FIELDS[name].metadata.get("suite", "").startswith("reports."):
                found[name] = rel(found[name])
        return json.loads(json.dumps(found))

    def refuse_typos(self, categories: Iterable[str]) -> None:
        """Refuse a threshold naming no case's category but close to one, at its file:line."""
        for name in self.thresholds:
            try:
                refuse_unknown_categories("threshold", [name], categories, only_typos=True)
            except InputError as exc:
                where = self.where and self.where / "thresholds" / name
                raise (where.error(exc.reason) if where else exc) from None

    @property
    def fingerprint(self) -> str:
        """16 hex characters of the SHA-256 of :meth:`to_dict`: record it with the results.

        >>> len(Suite(settings={"thresholds": {"tone": 0.85}}).fingerprint)
        16
        """
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def with_suite(options: Mapping[str, Any], suite: Suite) -> tuple[dict[str, Any], list[str]]:
    """``options`` with ``suite``'s values where left at the default, and the keys they override.

    >>> suite = Suite(cases=("cases.jsonl",), settings={"thresholds": {"tone": 0.9}, "out": "s"})
    >>> options, overridden = with_suite({"thresholds": {"tone": "0.8"}, "out": "mine"}, suite)
    >>> options["cases"], options["thresholds"], options["out"], overridden
    ('cases.jsonl', {'tone': '0.8'}, 'mine', ['thresholds.tone', 'out'])
    """
    if len(suite.cases) > 1 and options.get("cases") is None:
        raise InputError(
            f"one cases file per run (got {len(suite.cases)})", path=suite.path, field="cases"
        )
    found = {name: value for name, value in suite.settings.items() if value is not None}
    found["thresholds"] = {k: str(v) for k, v in suite.thresholds.items()}
    if "default_threshold" in found:
        found["default_threshold"] = str(found["default_threshold"])
    if not (suite.judges or options.get("criterion") or options.get("rubric")):
        for name in ("judge_model", "judge_max_tokens"):  # with nothing to judge: no setting
            found.pop(name, None)
    merged, overridden = dict(options), []
    cases = suite.cases[0] if suite.cases else None
    if merged.get("cases") is None:
        merged["cases"] = cases
    elif cases and os.path.abspath(merged["cases"]) != os.path.abspath(cases):
        overridden.append("cases")
    if merged["cases"] is None:
        raise InputError("the suite names no cases file", path=suite.path, field="cases")
    for name in ("fields", "thresholds"):
        given = merged.get(name) or {}
        mine = found.pop(name, {})
        overridden += [f"{name}.{key}" for key in given if key in mine]
        merged[name] = {**mine, **given}
    if suite.judges and not (merged.get("criterion") or merged.get("rubric")):
        merged["judges"] = suite.judges
    for name, value in found.items():
        default = _FIELDS[name].default
        if merged.get(name, default) == default:
            merged[name] = value
        elif merged[name] != value:
            overridden.append(name)
    return merged, overridden


def find_suite(start: str | os.PathLike[str] = ".") -> Path | None:
    """The suite file of ``start`` or its nearest parent up to a repository's root, owned by you.

    >>> import tempfile
    >>> top = Path(tempfile.mkdtemp())
    >>> _ = (top / "tinyeval.toml").write_text('cases = "c.jsonl"\\n')
    >>> find_suite(top) == top / "tinyeval.toml"
    True
    """
    here = Path(start).absolute()
    for folder in (here, *here.parents):
        try:
            owned = not hasattr(os, "getuid") or folder.stat().st_uid == os.getuid()
        except OSError:
            owned = False
        if not owned:
            if folder == here and os.path.lexists(folder / SUITE_FILE):
                said = "is in a directory owned by another user: not read; name it with --config"
                raise InputError(said, path=os.fspath(folder / SUITE_FILE))
            return None
        found = _suite_in(folder)
        if found is not None:
            try:
                return found.relative_to(Path.cwd())
            except ValueError:  # outside the working directory: shown absolute
                return found
        if (folder / ".git").exists():
            return None
    return None


def _suite_in(folder: Path) -> Path | None:
    for name in (SUITE_FILE, _PYPROJECT):
        candidate = folder / name
        if not os.path.lexists(candidate):
            continue
        if not candidate.is_file():
            said = "cannot be read as a suite file (a dangling symlink, a loop or a directory)"
            raise InputError(said, path=os.fspath(candidate))
        if name == SUITE_FILE:
            return candidate
        tool = _read_toml(candidate)[1].get("tool")
        if isinstance(tool, dict) and "tinyeval" in tool:
            return candidate
    return None


def _read_toml(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    import tomllib  # imported only to read a suite file

    shown = os.fspath(path)
    text = read_text(path, what="the file", max_bytes=MAX_CONFIG_BYTES, error=InputError)
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r" \(at line (\d+), column \d+\)$", str(exc))
        reason, line = (str(exc)[: where.start()], int(where[1])) if where else (str(exc), None)
        raise InputError(f"not valid TOML: {reason}", path=shown, line=line) from None
    except (ValueError, RecursionError) as exc:  # too deep, an integer too long
        raise InputError(_unreadable(exc, "TOML"), path=shown) from None


def load_suite(
    path: str | os.PathLike[str] | None = None, *, start: str | os.PathLike[str] = "."
) -> Suite:
    """Read and check a suite file (or the one in a directory, or found from ``start``).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "tinyeval.toml").write_text('cases = "c.jsonl"\\n[gate]\\npass = 1\\n')
    >>> load_suite(folder)
    Traceback (most recent call last):
    tinyeval.errors.InputError: ...tinyeval.toml:3: gate.pass: unknown key; expected one of ...
    """
    if path is None or Path(path).is_dir():
        found = find_suite(start) if path is None else _suite_in(Path(path))
        if found is None:
            place = "this directory" if path else f"{Path(start).absolute()} or above it"
            said = f"no {SUITE_FILE}, and no [tool.tinyeval] table in a {_PYPROJECT}, in {place}"
            raise InputError(said, path=None if path is None else os.fspath(path))
        path = found
    shown = os.fspath(path)
    text, data = _read_toml(path)
    prefix: tuple[str, ...] = ()
    if Path(path).name == _PYPROJECT:
        tool = data.get("tool")
        if not isinstance(tool, dict) or "tinyeval" not in tool:
            raise InputError("no [tool.tinyeval] table in this file", path=shown)
        data, prefix = tool["tinyeval"], ("tool", "tinyeval")
        if not isinstance(data, dict):
            raise _Where(prefix, shown, text).expected("a table", data)
    return _build(data, _Where((), shown, text, prefix))


def _line_of(text: str, path: Sequence[str | int]) -> int | None:
    """The line of a key path (or its nearest enclosing key): the shortest head holding it."""
    heads = text.split("\n")
    depth = _depth(text, path)
    low, high = 0, len(heads)  # a head without (the part found of) the path, and one with it
    while depth and high - low > 1:
        middle = (low + high) // 2
        near = [*range(middle, low, -1)[:64], *range(middle + 1, high)[:64]]
        found = next(
            ((n, d) for n in near if (d := _depth("\n".join(heads[:n]), path)) is not None), None
        )
        if found is None:  # no head between parses: the value starts after low, if all were tried
            return low + 1 if len(near) == high - low - 1 else None
        low, high = (found[0], high) if found[1] < depth else (low, found[0])
    return low + 1 if depth else None


def _depth(text: str, path: Sequence[str | int]) -> int | None:
    """How many keys of ``path`` a TOML text holds (None: it does not parse)."""
    import tomllib

    try:
        data: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    depth = 0
    for key in path:
        if isinstance(data, list):
            data = dict(enumerate(data))
        if not isinstance(data, dict) or key not in data:
            break
        data, depth = data[key], depth + 1
    return depth


@dataclass(frozen=True)
class _Where:
    """A value's key path, its file and text (and the suite table's path in it)."""

    path: tuple[str | int, ...]
    file: str
    text: str
    prefix: tuple[str, ...] = ()

    def __truediv__(self, key: str | int) -> _Where:
        return replace(self, path=(*self.path, key))

    @property
    def name(self) -> str:
        text = ""
        for part in self.path:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text

    def error(self, reason: str) -> InputError:
        line = _line_of(self.text, (*self.prefix, *self.path))
        return InputError(reason, path=self.file, line=line, field=self.name or None)

    def expected(self, what: str, value: Any) -> InputError:
        return self.error(f"expected {what}, got {describe_json(value)}")


def _text(value: Any, where: _Where) -> str:
    if not isinstance(value, str) or not value.strip():
        raise where.expected("a non-empty string", value)
    if "\x00" in value:
        raise where.error("a NUL character (\\x00) in the value")
    return value


def _path(value: Any, where: _Where) -> str:
    return os.path.join(os.path.dirname(where.file), _text(value, where))  # relative to it


def _rate(value: Any, where: _Where) -> float:
    try:
        return parse_threshold(value)  # a boolean is no rate
    except InputError:
        raise where.expected('a rate from 0 to 1, or a percentage such as "85%"', value) from None


def _number(value: Any, where: _Where, *, positive: bool = False) -> float:
    if not (is_number(value) and math.isfinite(value)) or value < 0 or (positive and value == 0):
        raise where.expected("a number > 0" if positive else "a number >= 0", value)
    return float(value)


def _value(value: Any, where: _Where, name: str, *, positive: bool = False) -> Any:
    meta, kind = _FIELDS[name].metadata, str(_FIELDS[name].type)
    if name == "fields":
        from .dataset import MAPPED_TO_META, RECOGNISED_KEYS  # less a conversation's messages

        keys = [key for key in RECOGNISED_KEYS if key != "messages"]
        table = _table(value, where, [*keys, *MAPPED_TO_META])
        return {key: _text(text, where / key) for key, text in table.items()}
    if name == "thresholds":
        if not isinstance(value, dict):
            raise where.expected("a table of category = rate", value)
        return {key: _rate(rate, where / key) for key, rate in value.items()}
    if meta.get("rate"):
        return _rate(value, where)
    if "choices" in meta and value not in meta["choices"]:
        raise where.expected(f"one of {', '.join(meta['choices'])}", value)
    if kind.startswith("bool") and not isinstance(value, bool):
        raise where.expected("true or false", value)
    if kind.startswith("int"):
        least = meta.get("least", 1)
        if not is_number(value) or not isinstance(value, int) or value < least:
            raise where.expected(f"a whole number >= {least}", value)
    elif kind.startswith("float"):
        value = _number(value, where, positive=positive)
    elif "choices" not in meta and not kind.startswith("bool"):
        return _path(value, where)
    if said := _beyond(meta, value):
        raise where.error(said)
    return value


def _list(value: Any, where: _Where, what: str, read: Callable[..., Any]) -> tuple[Any, ...]:
    if not isinstance(value, list) or not value:
        raise where.expected(what, value)
    return tuple(read(item, where / i) for i, item in enumerate(value))


def _table(value: Any, where: _Where, keys: Sequence[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.expected("a table", value)
    for key in value:
        if _SECRET.search(key) and key != "max_tokens":
            raise (where / key).error(
                "a suite file is checked in: never put an API key or secret in it; "
                "the model adapters read keys from the environment (e.g. OPENAI_API_KEY)"
            )
        if key not in keys:
            hint = did_you_mean(key, keys)
            more = f"did you mean {hint!r}?" if hint else f"expected one of {', '.join(keys)}"
            raise (where / key).error(f"unknown key; {more}")
    return value


# the checks of the keys of a [[judges]] entry, in the order they run
_JUDGE: dict[str, Any] = {
    "criterion": _text,
    "rubric": _path,
    "name": _text,
    "style": partial(_value, name="judge_style"),
    "votes": partial(_value, name="votes"),
    "model": _text,
    "categories": partial(_list, what="a non-empty list of category names", read=_text),
}
# the keys of a [models.*] table, by the setting each gives
_MODELS = {
    "judge": {"spec": "judge_model", "max_tokens": "judge_max_tokens"},
    "generate": {"spec": "generate_model", "max_tokens": "max_tokens", "prompt_template": ""},
}
_SHARED = ("temperature", "timeout", "base_url")  # one value for both models, as in a run


def _judge_entry(item: Any, where: _Where) -> JudgeSpec:
    table = _table(item, where, list(_JUDGE))
    if ("criterion" in table) == ("rubric" in table):
        said = "a judge needs exactly one of 'criterion' (text or a built-in name) or 'rubric'"
        raise where.error(f"{said} (a file)")
    return JudgeSpec(
        **{key: check(table[key], where / key) for key, check in _JUDGE.items() if key in table}
    )


def _model(value: Any, where: _Where, keys: Mapping[str, str], settings: dict[str, Any]) -> None:
    names = {key: name or key for key, name in {**keys, **dict.fromkeys(_SHARED, "")}.items()}
    table = _table(value, where, list(names))
    if "spec" not in table:
        raise where.error("no 'spec' key: name the model, e.g. spec = 'builtin' or 'openai:MODEL'")
    for key, given in table.items():
        name, at = names[key], where / key
        if key in ("spec", "base_url"):
            found = _text(given, at)
        else:
            found = _value(given, at, name, positive=name == "timeout")
        if name in _SHARED and settings.get(name, found) != found:
            said = f"the judge and generate models differ in {name}; one value is used for both"
            raise at.error(said)
        settings[name] = found


def _build(data: dict[str, Any], where: _Where) -> Suite:
    keys = {f.metadata["suite"]: f.name for f in fields(RunSettings) if "suite" in f.metadata}
    tables: dict[str, list[str]] = {}
    for key in keys:
        top, _, inner = key.partition(".")
        tables.setdefault(top, []).extend([inner] if inner else [])
    data = _table(data, where, ["cases", *tables, "expect", "judges", "models", "price", "holdout"])
    if "cases" not in data:
        raise where.error(f"no 'cases' key: name the cases file, e.g. cases = {'cases.jsonl'!r}")
    cases, at = data["cases"], where / "cases"
    found: dict[str, Any] = {"path": where.file, "where": where}
    many = "a file name or a non-empty list of them"
    found["cases"] = (
        _list(cases, at, many, _path) if isinstance(cases, list) else (_path(cases, at),)
    )
    settings: dict[str, Any] = {}
    for key, name in keys.items():
        top, _, inner = key.partition(".")
        if top in data and inner:
            _table(data[top], where / top, tables[top])
        if top in data and (not inner or inner in data[top]):
            at = where / top / inner if inner else where / top
            settings[name] = _value(data[top][inner] if inner else data[top], at, name)
    found["expect"] = _expect(data.get("expect", {}), where / "expect")
    if "judges" in data:
        at = where / "judges"
        written = "an array of tables, written [[judges]]"
        found["judges"] = _list(data["judges"], at, written, _judge_entry)
        names = [j.name or j.criterion or j.rubric for j in found["judges"]]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise (at / i).error(f"a second judge named {name!r}; give judges distinct names")
    if "models" in data:
        at = where / "models"
        for which, table in _table(data["models"], at, tuple(_MODELS)).items():
            _model(table, at / which, _MODELS[which], settings)
    if "price" in data:
        at = where / "price"
        price = _table(data["price"], at, ("in", "out"))
        for name in ("in", "out"):
            if name not in price:
                raise at.error(f"no {name!r} key: give in and out, dollars per million tokens")
            _number(price[name], at / name)
        settings["price"] = f"in={price['in']},out={price['out']}"
    if "holdout" in data:
        at = where / "holdout"
        holdout = _table(data["holdout"], at, ("fraction", "salt"))
        if "fraction" not in holdout:
            raise at.error("no 'fraction' key: the share of cases held out, e.g. fraction = 0.2")
        fraction = _number(holdout["fraction"], at / "fraction")
        if not 0.0 < fraction < 1.0:
            raise (at / "fraction").expected("a fraction between 0 and 1, such as 0.2", fraction)
        found["holdout"] = fraction
        if "salt" in holdout:
            found["salt"] = _text(holdout["salt"], at / "salt")
    return Suite(**found, settings=settings)


def _expect(value: Any, where: _Where) -> dict[str, Any]:
    """The ``[expect]`` table, declared as the keys of the cases' expect blocks."""
    from .checks import declare_expect

    table = _table(value, where, list(value) if isinstance(value, dict) else [])
    for key, spec in table.items():
        if isinstance(spec, dict):
            _table(spec, where / key, ("check", "path"))
    try:
        declare_expect(table)
    except InputError as exc:
        raise (where / str(exc.field)).error(exc.reason) from None
    return table
