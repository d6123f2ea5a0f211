"""The labels file: reading, writing and checking label records, and the keys a session offers.

The labels file is append-only JSON Lines. Each label is written and flushed
the moment it is given, so nothing is lost when a session stops::

    {"id": "refund-12", "label": "FAIL", "labeler": "ana", "at": "2026-01-05T10:31:02.118Z",
     "rubric_fingerprint": "…", "judge_model": "…", "output_fingerprint": "…"}

Undo never edits the file: it appends a tombstone ``{"id": …, "undo": true,
…}`` that withdraws the most recent standing label of that id. ``read_labels``
replays the file in order (the last label standing for an id wins), so a
crash in the middle of an undo cannot corrupt earlier labels, and the file
keeps an audit trail of every change of mind.

**Several labelers.** Each record names its ``labeler``; a case counts as done
for the labeler who labelled it, so a second labeler sees every case again,
blind to the first one's labels too. :func:`read_label_set` keeps every
labeler's standing label per id (a later label by the same labeler for the
same id replaces the earlier one, and the replacements are counted). Three
kinds of record have a marker of their own:

* ``"adjudicated": true``: the label an adjudicator settled on where labelers
  disagreed; it is not one labeler's opinion, so it takes no part in
  agreement between labelers.
* ``"recheck": true``: a case re-shown to the labeler who labelled it, to
  measure their own consistency (drift); it never replaces their label.
* ``"selection": {"strategy", "probability", "budget", "population"}``: how the
  case came to be offered (a budgeted session, see
  :func:`tinyeval.humans.session.plan_labels`), which prediction-powered estimates need
  to stay unbiased. A record saying ``"chosen": "by hand"`` marks labels
  picked by a person, which no estimate may treat as a random sample.

**Fields.** Labels kept in other logs can be read through a field mapping
(``fields={"label": "annotations.human", "id": "trace.span_id"}``): each key
is read at its dotted path (see :func:`tinyeval.checks.get_path`), falling back
to the record's own key when the path is absent, so tinyeval's own records
appended to such a file still read.

**Keys.** :func:`parse_grades` and :func:`parse_choices` turn a short text into
the keys a session offers (``p`` PASS and ``f`` FAIL by default); the session
itself (:mod:`tinyeval.humans.session`) keeps ``s``, ``u`` and ``q``.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .checks import CheckSpecError, get_path
from .errors import InputError, did_you_mean, utc_stamp
from .records import iter_json_lines, output_fingerprint, provenance

__all__ = [
    "LABEL_FIELDS",
    "LabelError",
    "LabelRecord",
    "LabelSet",
    "default_labeler",
    "labeler_of",
    "parse_choices",
    "parse_grades",
    "parse_label_fields",
    "read_label_set",
    "read_labels",
    "read_labels_by_labeler",
]

Label = str | int | float
Row = Mapping[str, Any]

PASS_FAIL: dict[str, Label] = {"p": "PASS", "f": "FAIL"}
SKIP, UNDO, QUIT, NEXT_PAGE = "s", "u", "q", ""
_COMMAND_WORDS = {"skip": SKIP, "undo": UNDO, "quit": QUIT}
_RESERVED = {SKIP, UNDO, QUIT, NEXT_PAGE, " "}


class LabelError(InputError):
    """A labels or results file that cannot be read, or a session set up wrongly.

    >>> try:
    ...     parse_grades("5-1")
    ... except LabelError as exc:
    ...     print(exc)
    grades: expected LOW-HIGH with LOW < HIGH, e.g. 1-5; got '5-1'
    """


# ---------------------------------------------------------------- files


class LabelRecord(dict[str, Any]):
    """One label record as read from a labels file: a plain dict that knows where it was read.

    The attributes ``source`` (the file) and ``line`` let an error name the
    line to fix; they are not keys, so the record is written out unchanged.

    >>> record = LabelRecord({"id": "a", "label": "PASS"}, source="labels.jsonl", line=3)
    >>> record["label"], f"{record.source}:{record.line}", json.dumps(record)
    ('PASS', 'labels.jsonl:3', '{"id": "a", "label": "PASS"}')
    """

    source: str | None
    line: int | None

    def __init__(
        self,
        record: Mapping[str, Any],
        *,
        source: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(record)
        self.source = source
        self.line = line


def _id_of(record: Mapping[str, Any], where: str) -> str | int:
    value = record.get("id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise LabelError(f"{where}: field 'id' must be a string or an integer, got {value!r}")
    return value


def _check_label(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float) or value != value:
        raise LabelError(
            f'{where}: field \'label\' must be "PASS", "FAIL", another string or a number, '
            f"got {value!r}"
        )


LABEL_FIELDS = ("id", "label", "labeler", "at")
"""The keys a labels field mapping may give a path for."""


def parse_label_fields(items: Iterable[str]) -> dict[str, str]:
    """Parse ``KEY=PATH`` items into a field mapping for the labels readers.

    >>> parse_label_fields(["label=annotations.human", "id=trace.span_id"])
    {'label': 'annotations.human', 'id': 'trace.span_id'}

    Raises ``LabelError`` for an item that is not ``KEY=PATH`` or a key other
    than those in ``LABEL_FIELDS`` (naming the one it looks like).
    """
    mapping: dict[str, str] = {}
    for item in items:
        key, sep, path = (part.strip() for part in item.partition("="))
        if not sep or not key or not path:
            raise LabelError(f"expected KEY=PATH, got {item!r}", field="field")
        if key not in LABEL_FIELDS:
            close = did_you_mean(key, LABEL_FIELDS)
            hint = (
                f"; did you mean {close!r}?" if close else f"; expected {', '.join(LABEL_FIELDS)}"
            )
            raise LabelError(f"unknown key {key!r}{hint}", field="field")
        mapping[key] = path
    return mapping


def _mapped(record: dict[str, Any], fields: Mapping[str, str], where: str) -> dict[str, Any]:
    """``record`` with each mapped key read at its path (the record's own key when absent)."""
    if not fields:
        return record
    out = dict(record)
    for key, path in fields.items():
        try:
            out[key] = get_path(record, path)
        except LookupError:
            continue
        except CheckSpecError as exc:
            raise LabelError(f"{where}: {key}={path}: {exc.reason}") from None
    return out


def _replay(
    path: str | Path, fields: Mapping[str, str] | None
) -> tuple[dict[str | int, list[LabelRecord]], list[LabelRecord]]:
    """Replay a labels file: each id's standing records in order, and the recheck records."""
    stacks: dict[str | int, list[LabelRecord]] = {}
    rechecks: list[LabelRecord] = []
    for number, raw in iter_json_lines(path, error=LabelError):
        where = f"{path}:{number}"
        record = _mapped(raw, fields or {}, where)
        key = _id_of(record, where)
        recheck = record.get("recheck") is True
        if record.get("undo") is True:
            if recheck:
                found = [i for i, r in enumerate(rechecks) if r["id"] == key]
                if not found:
                    raise LabelError(f"{where}: undo of a recheck of id {key!r}, which has none")
                del rechecks[found[-1]]
                continue
            stack = stacks.get(key)
            if not stack:
                raise LabelError(f"{where}: undo for id {key!r}, which has no label standing")
            stack.pop()
            continue
        if "label" not in record:
            raise LabelError(f"{where}: expected a field 'label' (or \"undo\": true)")
        _check_label(record["label"], where)
        kept = LabelRecord(record, source=str(path), line=number)
        (rechecks if recheck else stacks.setdefault(key, [])).append(kept)
    return stacks, rechecks


def read_labels(
    path: str | Path, *, fields: Mapping[str, str] | None = None
) -> dict[str | int, LabelRecord]:
    """Read a labels file into ``{id: label record}``: the last label standing wins.

    Lines are replayed in order; an undo line ``{"id": …, "undo": true}``
    withdraws the most recent standing label of its id. Recheck records
    (``"recheck": true``) never stand as labels. ``fields`` reads labels kept
    under other keys (see the module docstring and :func:`parse_label_fields`).

    >>> import tempfile, os
    >>> lines = ['{"id": "a", "label": "PASS"}', '{"id": "b", "label": "FAIL"}',
    ...          '{"id": "a", "label": "FAIL"}', '{"id": "a", "undo": true}',
    ...          '{"id": "b", "undo": true}']
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "labels.jsonl")
    ...     _ = open(path, "w").write("\\n".join(lines) + "\\n")
    ...     {key: record["label"] for key, record in read_labels(path).items()}
    {'a': 'PASS'}

    Each record is a :class:`LabelRecord` (a dict) whose ``source`` and
    ``line`` say where it stands, so later errors can name the line.

    Raises ``LabelError`` naming file:line for a line that is not a JSON
    object, lacks an ``id`` or a valid ``label``, or undoes an id that has no
    label standing; ``OSError`` when the file cannot be read.
    """
    stacks, _ = _replay(path, fields)
    return {key: stack[-1] for key, stack in stacks.items() if stack}


@dataclass(frozen=True)
class LabelSet:
    """A labels file read labeler by labeler (build it with :func:`read_label_set`).

    ``by_labeler`` holds each labeler's standing label per id (records
    without a ``labeler`` come under ``"unknown"``); ``adjudicated`` the
    adjudicated label per id; ``rechecks`` the recheck records;
    ``latest`` what :func:`read_labels` returns; ``replaced`` the ids where
    a labeler's later label replaced an earlier one of theirs (once per
    replaced label).

    >>> s = LabelSet({}, {"ana": {"a": LabelRecord({"id": "a", "label": "PASS"})}}, {}, (), ("a",))
    >>> s.labelers, s.to_dict()["replaced"]
    (('ana',), 1)
    """

    latest: dict[str | int, LabelRecord]
    by_labeler: dict[str, dict[str | int, LabelRecord]]
    adjudicated: dict[str | int, LabelRecord]
    rechecks: tuple[LabelRecord, ...]
    replaced: tuple[str | int, ...]

    @property
    def labelers(self) -> tuple[str, ...]:
        """The labelers, in the order of their first standing label."""
        return tuple(self.by_labeler)

    def disagreements(self) -> list[str | int]:
        """Ids that two or more labelers labelled differently, in file order.

        >>> ana = {"a": LabelRecord({"id": "a", "label": "PASS"})}
        >>> ben = {"a": LabelRecord({"id": "a", "label": "FAIL"})}
        >>> LabelSet({}, {"ana": ana, "ben": ben}, {}, (), ()).disagreements()
        ['a']
        """
        seen: dict[str | int, set[str]] = {}
        for labels in self.by_labeler.values():
            for key, record in labels.items():
                seen.setdefault(key, set()).add(str(record["label"]).upper())
        return [key for key, given in seen.items() if len(given) > 1]

    def to_dict(self) -> dict[str, Any]:
        """Counts: labels per labeler, adjudicated, rechecks, replaced."""
        return {
            "labelers": {name: len(labels) for name, labels in self.by_labeler.items()},
            "adjudicated": len(self.adjudicated),
            "rechecks": len(self.rechecks),
            "replaced": len(self.replaced),
            "replaced_ids": list(dict.fromkeys(self.replaced)),
        }


def labeler_of(record: Mapping[str, Any]) -> str:
    """The record's labeler as a name; ``"unknown"`` when it has none.

    >>> labeler_of({"labeler": "ana"}), labeler_of({})
    ('ana', 'unknown')
    """
    name = record.get("labeler")
    return str(name) if name not in (None, "") else "unknown"


def read_label_set(path: str | Path, *, fields: Mapping[str, str] | None = None) -> LabelSet:
    """Read a labels file keeping every labeler's standing label per id.

    >>> import tempfile, os
    >>> lines = ['{"id": "a", "label": "PASS", "labeler": "ana"}',
    ...          '{"id": "a", "label": "FAIL", "labeler": "ben"}',
    ...          '{"id": "a", "label": "FAIL", "labeler": "ana"}',
    ...          '{"id": "a", "label": "FAIL", "labeler": "cy", "adjudicated": true}']
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "labels.jsonl")
    ...     _ = open(path, "w").write("\\n".join(lines) + "\\n")
    ...     found = read_label_set(path)
    >>> {name: labels["a"]["label"] for name, labels in found.by_labeler.items()}
    {'ana': 'FAIL', 'ben': 'FAIL'}
    >>> found.replaced, list(found.adjudicated)
    (('a',), ['a'])

    Raises what :func:`read_labels` raises.
    """
    stacks, rechecks = _replay(path, fields)
    by_labeler: dict[str, dict[str | int, LabelRecord]] = {}
    adjudicated: dict[str | int, LabelRecord] = {}
    replaced: list[str | int] = []
    for key, stack in stacks.items():
        for record in stack:
            if record.get("adjudicated") is True:
                adjudicated[key] = record
                continue
            mine = by_labeler.setdefault(labeler_of(record), {})
            if key in mine:
                replaced.append(key)
            mine[key] = record
    latest = {key: stack[-1] for key, stack in stacks.items() if stack}
    return LabelSet(latest, by_labeler, adjudicated, tuple(rechecks), tuple(replaced))


def read_labels_by_labeler(
    path: str | Path, *, fields: Mapping[str, str] | None = None
) -> dict[str, dict[str | int, LabelRecord]]:
    """``{labeler: {id: record}}``: each labeler's standing label per id (no adjudications).

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "labels.jsonl")
    ...     _ = open(path, "w").write('{"id": "a", "label": "PASS", "labeler": "ana"}\\n')
    ...     read_labels_by_labeler(path)["ana"]["a"]["label"]
    'PASS'
    """
    return read_label_set(path, fields=fields).by_labeler


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


# ---------------------------------------------------------------- choices


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
    choices: dict[str, Label] = {}
    for item in text.split(","):
        key, sep, label = (part.strip() for part in item.partition("="))
        if not sep or not key or not label:
            raise LabelError(
                f"expected KEY=LABEL,KEY=LABEL; got {item!r} in {text!r}", field="choices"
            )
        choices[key] = label
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


def _append(stream: IO[str], record: Mapping[str, Any]) -> None:
    """Append one JSON line and push it to disk before the next key is read."""
    stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    stream.flush()
    os.fsync(stream.fileno())
