"""The built-in judge measured on labelled sets written for it, in Spanish and English.

Each row of ``tests/data/builtin_judge_labelled.jsonl`` (214 answers) and
``tests/data/builtin_judge_heldout.jsonl`` (62 answers) is one answer, labelled PASS (good) or
FAIL (bad) by hand for one criterion; more than half were written to fool a lexical judge. The
first set was written before the judge was changed and then used to improve it; the second was
written afterwards and not used to change it. Failure recall is the share of bad answers the
judge FAILs; the false-alarm rate is the share of good answers it FAILs. To see the figures:
``python -m pytest tests/judges/test_builtin_measured.py -s``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyeval.judge import Judge
from tinyeval.judges.builtin import builtin_judge
from tinyeval.stats import wilson_interval

DATA = Path(__file__).parent.parent / "data"
SETS = {
    "labelled": DATA / "builtin_judge_labelled.jsonl",
    "held out": DATA / "builtin_judge_heldout.jsonl",
}
RECALL_FLOOR = 0.8
FALSE_ALARM_CEILING = 0.1
Row = dict[str, object]


def rows_of(path: Path) -> list[Row]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def flagged(row: Row) -> bool:
    """True when the built-in judge FAILs the row's answer."""
    context, question = row.get("context"), row.get("question")
    verdict = Judge(str(row["criterion"]))(
        builtin_judge,
        response=str(row["response"]),
        context=None if context is None else str(context),
        question=None if question is None else str(question),
    )
    return verdict.verdict == "FAIL"


def share(hits: int, n: int) -> str:
    low, high = wilson_interval(hits, n)
    return f"{hits}/{n} = {hits / n:.1%} [95% Wilson {low:.1%}, {high:.1%}]"


@pytest.mark.parametrize("name", list(SETS))
def test_each_set_is_as_described(name: str) -> None:
    rows = rows_of(SETS[name])
    assert sum(bool(row["adversarial"]) for row in rows) * 2 >= len(rows)
    assert {row["lang"] for row in rows} == {"es", "en"}
    assert {row["label"] for row in rows} == {"PASS", "FAIL"}
    assert len({row["id"] for row in rows}) == len(rows)
    assert {row["criterion"] for row in rows} == {
        "unsupported-claims", "answers-the-question", "refuses-when-ambiguous"
    }  # fmt: skip


def test_the_labelled_set_has_at_least_200_answers() -> None:
    assert len(rows_of(SETS["labelled"])) >= 200


@pytest.mark.parametrize("name", list(SETS))
def test_failure_recall_and_false_alarms(name: str) -> None:
    rows = rows_of(SETS[name])
    bad = [row for row in rows if row["label"] == "FAIL"]
    good = [row for row in rows if row["label"] == "PASS"]
    missed = [row["id"] for row in bad if not flagged(row)]
    alarms = [row["id"] for row in good if flagged(row)]
    caught = len(bad) - len(missed)
    print(f"\n{name} ({len(rows)} answers)")
    print(f"  failure recall:   {share(caught, len(bad))}")
    print(f"  false-alarm rate: {share(len(alarms), len(good))}")
    print(f"  missed: {missed}\n  false alarms: {alarms}")
    assert caught / len(bad) >= RECALL_FLOOR, missed
    assert len(alarms) / len(good) <= FALSE_ALARM_CEILING, alarms
