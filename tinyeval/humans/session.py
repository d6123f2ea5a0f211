"""A blind, resumable labelling session in the terminal.

The session shows one result row at a time (its input, context and output,
wrapped to the terminal and paged) and never the judge's verdict, reason,
check results or status, so the human label stays independent of the judge.

Keys (one key press on a terminal; one key per line when stdin is a pipe)::

    p  PASS          f  FAIL          (or the grade/choice keys you set)
    s  skip          u  undo (step back one case; a label given there is withdrawn)
    q  quit          Enter/space  next page of a long case

Each label is appended to the labels file and flushed the moment it is given,
so running the same session again resumes it; undo appends a tombstone. The
labels file and its reader live in :mod:`tinyeval.calibration`. Besides plain
labelling a session can follow a budget (:func:`plan_labels`, which records each
case's chance of being offered), re-show a labeler's own cases to measure drift, or adjudicate the
cases where labelers disagree.
"""

from __future__ import annotations

import getpass
import json
import os
import random
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._formats import read_text
from ..calibration import (
    Label,
    LabelError,
    _check_label,
    _id_of,
)
from ..errors import key_values, plural, utc_stamp
from ..records import output_fingerprint, primary_verdict, provenance
from ..report import terminal_text
from ..stats import Rate
from .labelers import LabelSet, capped_probabilities, labeler_of, read_label_set

__all__ = [
    "STRATEGIES",
    "LabelPlan",
    "LabelSummary",
    "default_labeler",
    "judge_uncertainty",
    "label_session",
    "parse_choices",
    "parse_grades",
    "plan_labels",
    "rows_to_offer",
]


Row = Mapping[str, Any]

PASS_FAIL: dict[str, Label] = {"p": "PASS", "f": "FAIL"}
SKIP, UNDO, QUIT, NEXT_PAGE = "s", "u", "q", ""
_COMMAND_WORDS = {"skip": SKIP, "undo": UNDO, "quit": QUIT}
_RESERVED = {SKIP, UNDO, QUIT, NEXT_PAGE, " "}


# ---------------------------------------------------------------- keys and records


def default_labeler(environ: Mapping[str, str] | None = None) -> str:
    """Who is labelling when no name is given: ``$USER``, then the login name, then "anonymous".

    >>> default_labeler({"USER": "ana"})
    'ana'
    >>> isinstance(default_labeler({}), str)
    True
    """
    env = os.environ if environ is None else environ
    for variable in ("USER", "USERNAME"):
        name = env.get(variable, "").strip()
        if name:
            return name
    try:
        name = getpass.getuser().strip()
    except (OSError, KeyError, ImportError):  # no login name: a container, a bare CI runner
        name = ""
    return name or "anonymous"


def parse_grades(text: str) -> dict[str, Label]:
    """Keys for a graded criterion given as ``LOW-HIGH`` (whole numbers).

    >>> parse_grades("1-5")
    {'1': 1, '2': 2, '3': 3, '4': 4, '5': 5}

    Raises ``LabelError`` for anything but two whole numbers with LOW < HIGH.
    """
    low_text, sep, high_text = text.strip().partition("-")
    try:
        low, high = int(low_text), int(high_text)
    except ValueError:
        low = high = 0
    if not sep or low >= high:
        raise LabelError(
            f"expected LOW-HIGH with LOW < HIGH, e.g. 1-5; got {text!r}", field="grades"
        )
    return {str(grade): grade for grade in range(low, high + 1)}


def parse_choices(text: str) -> dict[str, Label]:
    """Keys for any other set of labels, given as ``KEY=LABEL,KEY=LABEL``.

    >>> parse_choices("a=A,b=B,t=TIE")
    {'a': 'A', 'b': 'B', 't': 'TIE'}

    Raises ``LabelError`` when an item is not ``KEY=LABEL``, a key repeats, or a
    key is one the session needs itself (s, u, q).
    """
    given = key_values(text.split(","), "KEY=LABEL", field="choices", error=LabelError)
    choices: dict[str, Label] = {**given}
    _check_choices(choices)
    return choices


def _check_choices(choices: Mapping[str, Label]) -> None:
    for key, label in choices.items():
        if key.lower() in _RESERVED or key.lower() in _COMMAND_WORDS:
            raise LabelError(f"key {key!r} is reserved for the session (s skip, u undo, q quit)")
        _check_label(label, f"choice {key!r}")
    lowered = [key.lower() for key in choices]
    if len(set(lowered)) != len(lowered):
        raise LabelError(f"each choice needs its own key, got {sorted(choices)}")


def _key_table(choices: Mapping[str, Label]) -> dict[str, Label]:
    """Every accepted spelling of each choice: its key, and the label itself."""
    table: dict[str, Label] = {}
    for key, label in choices.items():
        table[key.lower()] = label
        table[str(label).lower()] = label
    return table


def _label_record(row: Row, label: Label, labeler: str, judge: str | None) -> dict[str, Any]:
    rubric, model, _ = provenance(row, judge)
    record: dict[str, Any] = {
        "id": row["id"],
        "label": label,
        "labeler": labeler,
        "at": utc_stamp(),
        "rubric_fingerprint": rubric,
        "judge_model": model,
        "output_fingerprint": output_fingerprint(row.get("output")),
    }
    if judge:
        record["judge"] = judge
    return record


class _LabelFile:
    """The labels file, re-opened for each record appended to the path as it is now: when
    the file was replaced or deleted since the last append (an editor's save, a checkout),
    the records of this session it lacks are written to it again, and that is said."""

    def __init__(self, path: Path, write: Callable[[str], Any]) -> None:
        self.path, self.write = path, write
        self.lines: list[str] = []  # what this session appended
        with open(path, "a", encoding="utf-8"):
            pass  # a path that cannot be written fails now, before the first case is shown
        self.seen = self._state()

    def _state(self) -> tuple[int, int, int, int] | None:
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns

    def _lost(self) -> list[str]:
        """This session's lines the file no longer holds (none when nobody touched it)."""
        state = self._state()
        if state == self.seen or not self.lines:
            return []
        if state is None:
            return list(self.lines)
        kept = set(read_text(self.path, what="the labels file").splitlines(keepends=True))
        return [line for line in self.lines if line not in kept]

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one JSON line and push it to disk before the next key is read."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        lost = self._lost()
        if lost:
            self.write(
                f"{self.path} was replaced or deleted during the session: "
                f"{plural(len(lost), 'record')} of this session written to it again"
            )
        with open(self.path, "a", encoding="utf-8") as stream:
            stream.write("".join(lost) + line)
            stream.flush()
            os.fsync(stream.fileno())
            written = os.fstat(stream.fileno())  # the file written, even if replaced since
        self.lines.append(line)
        self.seen = written.st_dev, written.st_ino, written.st_size, written.st_mtime_ns


# ---------------------------------------------------------------- display


def _as_text(value: Any) -> str:
    """A value as the labeller reads it; a chat (messages with a role) as its transcript.

    >>> print(_as_text([{"role": "user", "content": "pasale 1.500"},
    ...                 {"role": "assistant", "content": [{"type": "text", "text": "¿A quién?"}]}]))
    user: pasale 1.500
    assistant: ¿A quién?
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, list)
        and value
        and all(isinstance(m, Mapping) and "role" in m for m in value)
    ):
        return "\n".join(f"{m['role']}: {_content(m)}" for m in value)
    return json.dumps(value, ensure_ascii=False, indent=2)


def _content(message: Mapping[str, Any]) -> str:
    """A message's text (its text parts joined), and the tools it calls (OpenAI's tool_calls,
    Anthropic's tool_use parts).

    >>> _content({"role": "assistant", "content": None,
    ...           "tool_calls": [{"function": {"name": "transferir", "arguments": "{}"}}]})
    '[calls transferir]'
    """
    content = message.get("content")
    calls = (
        list(message.get("tool_calls") or []) if isinstance(message.get("tool_calls"), list) else []
    )
    if isinstance(content, list):
        parts = [part for part in content if isinstance(part, Mapping)]
        calls += [part for part in parts if part.get("type") == "tool_use"]
        content = " ".join(str(part["text"]) for part in parts if "text" in part)
    names = []
    for call in calls:
        inner = call.get("function", call) if isinstance(call, Mapping) else None
        names.append(str(inner.get("name")) if isinstance(inner, Mapping) else "?")
    called = f" [calls {', '.join(names)}]" if names else ""
    return ((content if isinstance(content, str) else _as_text(content)) + called).strip()


def _wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    """Wrap each line of ``text`` to ``width``, keeping the text's own line breaks."""
    lines: list[str] = []
    for line in text.splitlines() or [""]:
        wrapped = textwrap.wrap(
            line,
            width=max(20, width - len(indent)),
            replace_whitespace=False,
            drop_whitespace=True,
            break_on_hyphens=False,
        )
        lines.extend(indent + part for part in wrapped or [""])
    return lines


def _case_lines(row: Row, position: int, total: int, width: int) -> list[str]:
    """What the labeller sees of one row: never its judge, checks or status."""
    facts = [f"case {position} of {total}", f"id: {row.get('id')}"]
    if row.get("category") not in (None, "", "default"):
        facts.append(f"category: {row['category']}")
    if row.get("origin"):
        facts.append(f"origin: {row['origin']}")
    lines = ["", "-" * min(width, 72), " | ".join(facts)]
    outputs = row.get("outputs")  # a pairwise row: the two responses compared
    if isinstance(outputs, Mapping):
        parts = [("OUTPUT A", outputs.get("a")), ("OUTPUT B", outputs.get("b"))]
    else:
        parts = [("OUTPUT", row.get("output"))]
    chat = row.get("messages") or row.get("input")
    for title, value in [("INPUT", chat), ("CONTEXT", row.get("context")), *parts]:
        text = terminal_text(_as_text(value))  # the data's control characters made visible
        if title.startswith("OUTPUT") or text:
            lines.append(title)
            lines.extend(_wrap(text or "(empty)", width))
    return lines


def _help_line(choices: Mapping[str, Label]) -> str:
    if all(isinstance(label, int) and str(label) == key for key, label in choices.items()):
        grades = sorted(int(label) for label in choices.values())
        given = f"{grades[0]}..{grades[-1]} grade"
    else:
        given = ", ".join(f"{key} {label}" for key, label in choices.items())
    return f"keys: {given}, s skip, u undo, q quit"


# ---------------------------------------------------------------- keys


def _line_keys(stream: IO[str]) -> Iterator[str]:
    for line in stream:
        yield line.strip()


def _terminal_keys(stream: IO[str]) -> Iterator[str]:
    """Single key presses from a terminal (cbreak mode, restored on exit).

    Enter gives ``""`` and Ctrl-D ends the input. Falls back to whole lines
    where the ``termios`` module does not exist (Windows).
    """
    try:
        import termios
        import tty
    except ImportError:  # pragma: no cover - Windows
        yield from _line_keys(stream)
        return
    fd = stream.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)  # keep keys typed ahead
        while True:
            char = os.read(fd, 1).decode("utf-8", errors="replace")
            if char in ("", "\x04"):
                return
            if char == "\x1b":  # an arrow or function key: one press, several bytes
                char += _pending_bytes(fd)
            yield NEXT_PAGE if char in ("\r", "\n") else char
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _pending_bytes(fd: int) -> str:
    """What the terminal has already sent after an escape byte (the rest of one key press)."""
    import select

    pending = b""
    while len(pending) < 16 and select.select([fd], [], [], 0.02)[0]:
        byte = os.read(fd, 1)
        if not byte:
            break
        pending += byte
    return pending.decode("utf-8", errors="replace")


def _stdin_keys(single_keys: bool) -> Iterator[str]:
    stdin = sys.stdin
    if single_keys and stdin.isatty():
        return _terminal_keys(stdin)
    return _line_keys(stdin)


# ---------------------------------------------------------------- choosing what to label

STRATEGIES = ("random", "uncertain")
UNIFORM_SHARE = 0.5
"""The share of an ``uncertain`` budget spread uniformly, so no case has a tiny probability."""


def judge_uncertainty(row: Row, judge: str | None = None) -> str | None:
    """Why the judge is unsure of ``row``, in words, or None when it is sure.

    Unsure: no parsed verdict (unparsed or errored reply), votes that split,
    a vote whose quote was not found in the response, or a pairwise verdict
    whose two orders disagree.

    >>> judge_uncertainty({"judges": {"j": {"verdict": "PASS", "votes": ["PASS", "FAIL"]}}})
    'the votes split'
    >>> judge_uncertainty({"judges": {"j": {"verdict": "FAIL", "votes": ["FAIL"]}}}) is None
    True
    """
    verdict = primary_verdict(row, judge)
    if verdict is None:
        return "no judge verdict"
    if "verdict" not in verdict:  # pairwise
        if verdict.get("consistent") is False:
            return "the two pairwise orders disagree"
        return "the pairwise reply did not parse" if verdict.get("winner") is None else None
    failures = verdict.get("vote_failures") or []
    if verdict.get("failure") == "unverified_quote" or "unverified_quote" in failures:
        return "a quote was not found in the response"
    if verdict.get("verdict") is None:
        return "the reply did not parse"
    votes = [vote for vote in verdict.get("votes") or [] if vote is not None]
    if verdict.get("unanimous") is False or len(set(votes)) > 1:
        return "the votes split"
    return None


@dataclass(frozen=True)
class LabelPlan:
    """Which cases a budgeted session offers, and each one's probability of being offered.

    ``probabilities`` covers every case of the population (the ``population``
    cases that could be shown); ``chosen`` lists the ids offered, in order.

    >>> plan = LabelPlan("random", 2, 4, ("b", "d"), {k: 0.5 for k in "abcd"})
    >>> plan.selection("b")
    {'strategy': 'random', 'probability': 0.5, 'budget': 2, 'population': 4}
    """

    strategy: str
    budget: int
    population: int
    chosen: tuple[str | int, ...]
    probabilities: dict[str | int, float]

    def selection(self, key: str | int) -> dict[str, Any]:
        """The ``selection`` record a label of ``key`` carries."""
        return {
            "strategy": self.strategy,
            "probability": self.probabilities[key],
            "budget": self.budget,
            "population": self.population,
        }

    def to_dict(self) -> dict[str, Any]:
        """``{"strategy", "budget", "population", "chosen"}`` (the count offered)."""
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "population": self.population,
            "chosen": len(self.chosen),
        }


def rows_to_offer(rows: Sequence[Row], *, all_rows: bool = False) -> tuple[list[Row], str | None]:
    """The rows a labeling session offers, and a note when not all of them: when some rows were
    judged, only those (the ones a calibration compares), unless ``all_rows``.

    >>> offered, note = rows_to_offer([{"id": "a", "judges": {"j": {}}}, {"id": "b", "judges": {}}])
    >>> [row["id"] for row in offered], note
    (['a'], '1 of 2 rows were judged; labelling those')
    """
    judged = [row for row in rows if row.get("judges")]
    if all_rows or not judged or len(judged) == len(rows):
        return list(rows), None
    return judged, f"{len(judged)} of {len(rows)} rows were judged; labelling those"


def plan_labels(
    rows: Iterable[Row],
    budget: int,
    *,
    strategy: str = "random",
    seed: int = 0,
    judge: str | None = None,
) -> LabelPlan:
    """Choose about ``budget`` of ``rows`` to label, recording each case's probability.

    ``random``: a uniform sample of exactly ``budget`` cases (probability
    budget/M for each of the M cases). ``uncertain``: each case is offered
    independently with probability π, where a share ``UNIFORM_SHARE`` (half)
    of the budget is spread over all cases and the rest over the cases the
    judge is unsure of (:func:`judge_uncertainty`), none above 1; the π sum
    to the budget, so about that many cases are offered, and every case
    keeps π ≥ 0.5·budget/M. It pays off only when the judge's errors sit in
    the cases it is unsure of (its sure verdicts nearly always right): in
    ``tests/benchmarks/bench_uncertain.py`` it narrows the PPI interval by
    about 10% there, and widens it by about 45% when the errors are spread
    evenly. The share is half because a smaller one (more labels on the
    unsure cases) gave huge weights to the few sure cases labelled and wider
    intervals even where the errors were concentrated. The draw depends on
    ``seed`` and the rows only (never on a label), so resuming offers the
    same cases.

    >>> rows = [{"id": i, "output": "x", "judges": {"j": {"verdict": "PASS",
    ...          "votes": ["PASS", "FAIL" if i < 2 else "PASS"]}}} for i in range(10)]
    >>> plan = plan_labels(rows, 4, strategy="uncertain")
    >>> round(plan.probabilities[0], 2), round(plan.probabilities[5], 2)  # 0.2 + 0.5·4/2 > 1
    (1.0, 0.25)
    >>> round(sum(plan.probabilities.values()), 9)
    4.0

    Rows without an output (nothing to label) are never offered. Raises
    ``LabelError`` for an unknown strategy, a budget below 1, or no row.
    """
    rows = [row for row in rows if row.get("output") is not None or row.get("outputs")]
    if strategy not in STRATEGIES:
        raise LabelError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise LabelError(f"the budget must be a whole number of at least 1, got {budget!r}")
    ordered = sorted(rows, key=lambda row: (isinstance(row["id"], str), row["id"]))
    if not ordered:
        raise LabelError("there is no case to choose from")
    size = len(ordered)
    take = min(budget, size)
    rng = random.Random(seed)
    keys = [row["id"] for row in ordered]
    if strategy == "random":
        chosen = rng.sample(keys, take)
        return LabelPlan(strategy, budget, size, tuple(chosen), dict.fromkeys(keys, take / size))
    unsure = {row["id"] for row in ordered if judge_uncertainty(row, judge) is not None}
    share = UNIFORM_SHARE if unsure else 1.0
    weights = {
        key: share / size + ((1.0 - share) / len(unsure) if key in unsure else 0.0) for key in keys
    }
    probabilities = capped_probabilities(weights, float(take))
    chosen = [key for key in keys if rng.random() < probabilities[key]]
    rng.shuffle(chosen)
    return LabelPlan(strategy, budget, size, tuple(chosen), probabilities)


# ---------------------------------------------------------------- the session


@dataclass(frozen=True)
class LabelSummary:
    """What one labelling session did.

    >>> LabelSummary(total=3, already_labelled=1, labelled=1, skipped=0, undone=0,
    ...              remaining=1, stopped="quit").to_dict()["remaining"]
    1
    """

    total: int
    already_labelled: int
    labelled: int
    skipped: int
    undone: int
    remaining: int
    stopped: str  # "done" (end of the list) | "quit" | "end of input"
    not_shown: int = 0
    out: str = ""
    mode: str = "label"  # "label", "plan", "recheck" or "adjudicate"
    self_agreement: Rate | None = None

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-ready dict (the ``label --json`` object)."""
        return {
            "mode": self.mode,
            "self_agreement": None
            if self.self_agreement is None
            else self.self_agreement.to_dict(),
            "total": self.total,
            "already_labelled": self.already_labelled,
            "labelled": self.labelled,
            "skipped": self.skipped,
            "undone": self.undone,
            "remaining": self.remaining,
            "stopped": self.stopped,
            "not_shown": self.not_shown,
            "out": self.out,
        }


def _session_order(rows: Sequence[Row], seed: int) -> list[Row]:
    """Rows sorted by id, then shuffled by ``seed``: the same order however the file was written."""
    ordered = sorted(rows, key=lambda row: (isinstance(row["id"], str), row["id"]))
    random.Random(seed).shuffle(ordered)
    return ordered


def label_session(
    rows: Iterable[Row],
    out_path: str | Path,
    *,
    labeler: str | None = None,
    keys: Iterable[str] | None = None,
    seed: int = 0,
    write: Callable[[str], Any] = print,
    break_every: int = 25,
    choices: Mapping[str, Label] | None = None,
    judge: str | None = None,
    width: int | None = None,
    page_lines: int | None = None,
    plan: LabelPlan | None = None,
    recheck: float | None = None,
    adjudicate: bool = False,
    fields: Mapping[str, str] | None = None,
) -> LabelSummary:
    """Label result rows by hand, blind to the judge, appending each label to ``out_path``.

    Cases come in a shuffled order fixed by ``seed``; ids that already have a
    label in ``out_path`` are skipped, so running the same session again
    resumes it. Rows without an output are not shown (they are counted in
    ``not_shown``). ``keys`` scripts the session (one key per item; ``None``
    reads the terminal, or one key per line from a piped stdin). ``choices``
    maps keys to labels (default ``p`` → PASS, ``f`` → FAIL; see
    ``parse_grades`` and ``parse_choices``). ``judge`` names the judge in the
    rows' ``judges`` whose rubric fingerprint and model the labels record.
    Every ``break_every`` labels (0: never) a break is suggested. Without a
    ``labeler``, the labels record :func:`default_labeler` (``$USER``, the
    login name, or "anonymous"). A key that means nothing in the session
    shows the line of keys again.

    Three other kinds of session (at most one at a time): with ``plan``
    (:func:`plan_labels`) only the planned cases are offered, in the plan's
    order, and each label records its ``selection``; with ``recheck`` (a
    fraction in (0, 1]) that share of the cases this labeler already
    labelled is shown again, recorded with ``"recheck": true``, and the
    summary's ``self_agreement`` is how often their two labels agree (drift,
    also said through ``write`` at the end);
    with ``adjudicate`` the cases where labelers disagree are shown with
    every labeler's label, and the label given is recorded with
    ``"adjudicated": true``. ``fields`` reads ``out_path`` through a field
    mapping (see :func:`tinyeval.calibration.read_labels`).

    >>> import tempfile, os
    >>> from tinyeval.calibration import read_labels
    >>> rows = [{"id": "a", "input": "2+2?", "output": "4",
    ...          "judge": {"verdict": "PASS", "reason": "SECRET"}},
    ...         {"id": "b", "input": "capital of France?", "output": "Lyon"}]
    >>> shown = []
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = os.path.join(tmp, "labels.jsonl")
    ...     summary = label_session(rows, out, labeler="ana", keys=["p", "f"], write=shown.append)
    ...     sorted((key, r["label"]) for key, r in read_labels(out).items())
    [('a', 'PASS'), ('b', 'FAIL')]
    >>> summary.labelled, summary.stopped
    (2, 'done')
    >>> any("SECRET" in text for text in shown)
    False

    Raises ``LabelError`` for rows without ids, repeated ids, a blank
    ``labeler`` given explicitly, or bad ``choices``; ``OSError`` when ``out_path`` cannot be
    written.
    """
    if labeler is None:
        labeler = default_labeler()
    if not labeler.strip():
        raise LabelError("the name is blank: give a name", field="labeler")
    if break_every < 0:
        raise LabelError(f"break_every must be 0 (never) or more, got {break_every}")
    choices = dict(choices) if choices is not None else dict(PASS_FAIL)
    if not choices:
        raise LabelError("choices must offer at least one label")
    _check_choices(choices)
    rows = list(rows)
    _check_unique_ids(rows)
    if sum((plan is not None, recheck is not None, adjudicate)) > 1:
        raise LabelError("a session either follows a plan, rechecks or adjudicates: pick one")
    if recheck is not None and not 0.0 < recheck <= 1.0:
        raise LabelError(f"the recheck fraction must be above 0 and at most 1, got {recheck!r}")

    out_path = Path(out_path)
    existing = (
        read_label_set(out_path, fields=fields)
        if out_path.exists()
        else LabelSet({}, {}, {}, (), ())
    )
    shown = [row for row in rows if row.get("output") is not None or row.get("outputs")]
    mode = (
        "plan" if plan else "recheck" if recheck is not None else "adjudicate" if adjudicate else ""
    )
    offer, done = _offer(shown, existing, labeler, seed, plan, recheck, adjudicate)
    todo = [row for row in offer if row["id"] not in done]
    hidden = len(rows) - len(shown)
    if mode:
        shown = offer

    interactive = keys is None and sys.stdin.isatty()
    if width is None:
        width = shutil.get_terminal_size().columns
    if page_lines is None:
        page_lines = max(5, shutil.get_terminal_size().lines - 3) if interactive else 0
    single_keys = all(len(key) == 1 for key in choices)
    key_source = iter(keys) if keys is not None else _stdin_keys(single_keys)

    doing = {"recheck": "Re-showing", "adjudicate": "Adjudicating"}.get(mode, "Labelling")
    if plan is not None:
        write(
            f"The {plan.strategy} plan offers {plural(len(plan.chosen), 'case')} of "
            f"{plan.population} (budget {plan.budget})."
        )
    write(
        f"{doing} {plural(len(shown), 'case')} into {out_path}: {len(shown) - len(todo)} "
        f"already {'done' if mode in ('recheck', 'adjudicate') else 'labelled'}, "
        f"{len(todo)} to go (order: seed {seed})."
    )
    if hidden:
        has = "has" if hidden == 1 else "have"
        write(
            f"{plural(hidden, 'row')} {has} no output and {'is' if hidden == 1 else 'are'} "
            "not shown."
        )
    write("The judge's verdict is hidden on purpose: decide by your own criterion.")
    write(_help_line(choices))
    session = _Session(
        todo=todo,
        total=len(shown),
        keys=key_source,
        write=write,
        choices=choices,
        labeler=labeler,
        judge=judge,
        width=width,
        page_lines=page_lines,
        break_every=break_every,
        extra=_record_extra(plan, recheck is not None, adjudicate),
        notes=_adjudication_notes(existing) if adjudicate else {},
    )
    try:
        stopped = session.run(_LabelFile(out_path, write))
    finally:
        close = getattr(key_source, "close", None)
        if close is not None:
            close()  # leaves the terminal's key-at-a-time mode now, not at garbage collection
    remaining = len(todo) - len(session.labelled)
    if not shown and mode == "adjudicate":
        write("Nothing to adjudicate: no case has labels that disagree.")
    elif not shown and mode == "recheck":
        write(f"Nothing to re-show: {labeler} has labelled none of these cases yet.")
    elif remaining == 0 and len(shown) == 1:
        write(f"Done: the 1 case is labelled in {out_path}.")
    elif remaining == 0:
        write(f"Done: all {len(shown)} cases are labelled in {out_path}.")
    else:
        reason = f"Stopped ({stopped})" if stopped != "done" else "End of the list"
        write(
            f"{reason}: {len(session.labelled)} labelled in this session, {remaining} to go; "
            "run the same command to resume."
        )
    agreement = _self_agreement(out_path, labeler, fields) if recheck is not None else None
    if recheck is not None:
        write(
            f"your re-shown labels agree with your first ones: {agreement}"
            if agreement is not None
            else "no re-shown case yet: nothing to compare"
        )
    return LabelSummary(
        total=len(shown),
        already_labelled=len(shown) - len(todo),
        labelled=len(session.labelled),
        skipped=session.skipped,
        undone=session.undone,
        remaining=remaining,
        stopped=stopped,
        not_shown=hidden,
        out=str(out_path),
        mode=mode or "label",
        self_agreement=agreement,
    )


def _offer(
    shown: Sequence[Row],
    existing: LabelSet,
    labeler: str,
    seed: int,
    plan: LabelPlan | None,
    recheck: float | None,
    adjudicate: bool,
) -> tuple[list[Row], set[str | int]]:
    """The rows a session offers, in order, and the ids among them already done."""
    by_id = {row["id"]: row for row in shown}
    mine = existing.by_labeler.get(labeler, {})
    if plan is not None:
        return [by_id[key] for key in plan.chosen if key in by_id], set(mine)
    if adjudicate:
        wanted = set(existing.disagreements())
        return (
            [row for row in _session_order(shown, seed) if row["id"] in wanted],
            set(existing.adjudicated),
        )
    if recheck is not None:
        rechecked = {r["id"] for r in existing.rechecks if labeler_of(r) == labeler}
        labelled = [row for row in _session_order(shown, seed) if row["id"] in mine]
        want = max(1, round(recheck * len(labelled))) if labelled else 0
        again = [row for row in labelled if row["id"] in rechecked]
        fresh = [row for row in labelled if row["id"] not in rechecked]
        random.Random(seed + 1).shuffle(fresh)
        offer = again[:want] + fresh[: max(0, want - len(again))]
        return offer, rechecked
    return _session_order(shown, seed), set(mine)


def _record_extra(
    plan: LabelPlan | None, recheck: bool, adjudicate: bool
) -> Callable[[Row], dict[str, Any]]:
    """The keys a session adds to each label record it writes."""

    def extra(row: Row) -> dict[str, Any]:
        if plan is not None:
            return {"selection": plan.selection(row["id"])}
        if recheck:
            return {"recheck": True}
        return {"adjudicated": True} if adjudicate else {}

    return extra


def _adjudication_notes(existing: LabelSet) -> dict[str | int, str]:
    """What each labeler said, per disputed id (shown to the adjudicator)."""
    notes: dict[str | int, str] = {}
    for key in existing.disagreements():
        given = [
            f"{name} {labels[key]['label']}"
            for name, labels in existing.by_labeler.items()
            if key in labels
        ]
        notes[key] = "labels given: " + ", ".join(given)
    return notes


def _self_agreement(path: Path, labeler: str, fields: Mapping[str, str] | None) -> Rate | None:
    """How often ``labeler``'s rechecks agree with their standing labels (None: no recheck)."""
    found = read_label_set(path, fields=fields)
    mine = found.by_labeler.get(labeler, {})
    pairs = [
        (str(r["label"]).upper(), str(mine[r["id"]]["label"]).upper())
        for r in found.rechecks
        if labeler_of(r) == labeler and r["id"] in mine
    ]
    if not pairs:
        return None
    return Rate.of(sum(a == b for a, b in pairs), len(pairs))


def _check_unique_ids(rows: Sequence[Row]) -> None:
    seen: set[str | int] = set()
    for number, row in enumerate(rows, start=1):
        case_id = _id_of(row, f"row {number}")
        if case_id in seen:
            raise LabelError(f"row {number}: id {case_id!r} appears more than once")
        seen.add(case_id)


class _Session:
    """The state of one labelling session: where it is, what it wrote, what undo can reach."""

    def __init__(
        self,
        *,
        todo: list[Row],
        total: int,
        keys: Iterator[str],
        write: Callable[[str], Any],
        choices: Mapping[str, Label],
        labeler: str,
        judge: str | None,
        width: int,
        page_lines: int,
        break_every: int,
        extra: Callable[[Row], dict[str, Any]] = lambda row: {},
        notes: Mapping[str | int, str] | None = None,
    ) -> None:
        self.extra, self.notes = extra, dict(notes or {})
        self.todo, self.total, self.keys, self.write = todo, total, keys, write
        self.table = _key_table(choices)
        self.help_line = _help_line(choices)
        self.prompt = f"your label? ({self.help_line.removeprefix('keys: ')})"
        self.labeler, self.judge = labeler, judge
        self.width, self.page_lines, self.break_every = width, page_lines, break_every
        self.history: list[tuple[int, bool]] = []  # (position in todo, labelled?)
        self.labelled: set[str | int] = set()
        self.written = self.undone = self.skipped = 0
        self.index = 0

    def next_key(self) -> str | None:
        """The next key, lower-cased; Enter and space are ``NEXT_PAGE``; None at the end."""
        for key in self.keys:
            key = key.strip().lower()
            return _COMMAND_WORDS.get(key, key)
        return None

    def is_action(self, key: str | None) -> bool:
        return key is None or key in (SKIP, UNDO, QUIT) or key in self.table

    def present(self, row: Row) -> str | None:
        """Show a case, page by page; return an action key pressed at a page break, if any."""
        position = self.total - len(self.todo) + self.index + 1
        lines = _case_lines(row, position, self.total, self.width)
        criterion = provenance(row, self.judge).criterion
        if criterion:
            lines[2:2] = _wrap(f"criterion: {_as_text(criterion)}", self.width, indent="")
        if row["id"] in self.notes:
            lines.append(self.notes[row["id"]])
        while self.page_lines and len(lines) > self.page_lines:
            self.write("\n".join(lines[: self.page_lines]))
            lines = lines[self.page_lines :]
            self.write(
                f"-- more ({plural(len(lines), 'line')}): Enter for the next page, or label now --"
            )
            key = self.next_key()
            while not self.is_action(key) and key != NEXT_PAGE:
                self.write(f"unknown key {key!r}; Enter next page, {self.help_line}")
                key = self.next_key()
            if self.is_action(key):
                return key
        self.write("\n".join(lines))
        return NEXT_PAGE

    def run(self, stream: _LabelFile) -> str:
        """Go through the cases until they run out, ``q``, or the keys end; say which."""
        show = True
        while self.index < len(self.todo):
            key = self.present(self.todo[self.index]) if show else NEXT_PAGE
            if key == NEXT_PAGE:
                self.write(self.prompt)
                key = self.next_key()
            show = True
            if key is None:
                return "end of input"
            if key == QUIT:
                return "quit"
            if key == SKIP:
                self.skip()
            elif key == UNDO:
                show = self.undo(stream)
            elif key in self.table:
                self.give(stream, self.table[key])
            else:
                if key != NEXT_PAGE:
                    self.write(f"unknown key {key!r}; {self.help_line}")
                show = False
        return "done"

    def skip(self) -> None:
        self.history.append((self.index, False))
        self.skipped += 1
        self.index += 1

    def undo(self, stream: _LabelFile) -> bool:
        """Step back one case, withdrawing its label if it got one; False if nothing to undo."""
        if not self.history:
            self.write("nothing to undo in this session")
            return False
        self.index, was_labelled = self.history.pop()
        back = self.todo[self.index]["id"]
        if was_labelled:
            tombstone = {"id": back, "undo": True, "labeler": self.labeler, "at": utc_stamp()}
            if self.extra(self.todo[self.index]).get("recheck"):
                tombstone["recheck"] = True
            stream.append(tombstone)
            self.labelled.discard(back)
            self.undone += 1
            self.write(f"withdrew the label of {back!r}; showing it again")
        else:
            self.skipped -= 1
            self.write(f"back to {back!r}")
        return True

    def give(self, stream: _LabelFile, label: Label) -> None:
        row = self.todo[self.index]
        stream.append({**_label_record(row, label, self.labeler, self.judge), **self.extra(row)})
        self.write(f"-> {label}")
        self.history.append((self.index, True))
        self.labelled.add(row["id"])
        self.written += 1
        self.index += 1
        if (
            self.break_every
            and self.written % self.break_every == 0
            and self.index < len(self.todo)
        ):
            self.write(
                f"You have given {plural(self.written, 'label')} in this session. Labels drift "
                "late in a "
                "long session: consider a break (q quits; running the same command resumes here)."
            )
