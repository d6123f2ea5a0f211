"""The result row's owner: old files stay readable, one row per id, completeness, merge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tinyeval
from tinyeval import calibration, gating, report
from tinyeval.ci.github import junit_xml
from tinyeval.ci.html import html_report
from tinyeval.errors import IncompleteError
from tinyeval.humans.session import label_session
from tinyeval.records import (
    ResultsFileError,
    completeness,
    merge_rows,
    primary_verdict,
    provenance,
    read_rows,
    tally,
    verdicts,
)

ROOT = Path(__file__).resolve().parent.parent
OLD_RESULTS = ROOT / "tests" / "data" / "results-written-by-0.1.0.jsonl"


def test_a_results_file_written_before_the_row_had_an_owner_is_read_by_every_reader(
    tmp_path: Path,
) -> None:
    """The fixture was written by tinyeval 0.1.0 (rows with "judge" and no "run")."""
    rows = read_rows(OLD_RESULTS)
    assert len(rows) == 62 and all("judge" in row and "run" not in row for row in rows)
    judged = [row for row in rows if row["judge"] is not None]
    assert len(judged) == 18
    # the readers find the verdict under the old key, with its provenance
    for row in judged:
        assert primary_verdict(row) == row["judge"] == next(iter(verdicts(row).values()))
        assert provenance(row).judge_model == "builtin"
    counts = tally(rows)
    assert list(counts) == sorted(counts)
    assert counts["amount_extraction"].passed == 17
    assert counts["support_answers"].judged == 18
    # gate: no manifest, so completeness is unknown, never "incomplete"
    gated = gating.gate_rows(rows, {"amount_extraction": 1.0})
    assert gated.complete and not gated.passed
    # calibrate against the bundled labels, label a session, report, compare
    labels = tinyeval.read_labels(ROOT / "examples" / "labels.jsonl")
    cal = calibration.calibrate_results(rows, labels)
    assert cal.n == 18
    summary = label_session(
        judged, tmp_path / "labels.jsonl", labeler="t", keys=iter("q"), write=lambda text: None
    )
    assert (summary.total, summary.labelled, summary.stopped) == (18, 0, "quit")
    assert "amount_extraction" in report.summary_text(gated)
    assert "<html" in html_report(rows, gated)
    assert "<testsuites" in junit_xml(rows, gated)
    assert tinyeval.compare_runs(rows, rows).overall.pairs == 62


def test_a_second_row_for_an_id_is_refused_naming_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    checked = {"status": "pass", "checks": {"contains:x": True}}
    lines = [{"id": "a", **checked}, {"id": "b", **checked}, {"id": "a", "status": "fail"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ResultsFileError, match=r"rows.jsonl:3: the case 'a' has a second row"):
        read_rows(path)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "a", "status": "pass", "checks": []}, "checks: expected an object"),
        ({"id": "a", "status": "pass", "judges": "x"}, "judges: expected an object"),
        ({"id": "a", "status": "maybe"}, "not a result row"),
    ],
)
def test_rows_of_the_wrong_shape_are_refused(tmp_path: Path, row: dict, message: str) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ResultsFileError, match=message):
        read_rows(path)


def manifest(cases: int, shard: str | None = None) -> dict:
    return {"cases": cases, "shard": shard, "gate": {}}


def test_completeness_counts_cases_and_shards() -> None:
    rows = [{"id": str(i), "run": manifest(30)} for i in range(20)]
    found = completeness(rows)
    assert (found.complete, found.seen, found.expected) == (False, 20, 30)
    assert str(found) == "incomplete: 20 of 30 cases"
    named = completeness(rows, expected_ids=[str(i) for i in range(30)])
    assert named.missing_ids == tuple(sorted(str(i) for i in range(20, 30)))
    assert completeness([{"id": "a"}]).expected is None  # an old row: nothing to compare with


def test_merge_refuses_missing_duplicated_and_foreign_shards() -> None:
    one = [{"id": "a", "dataset_fingerprint": "f", "run": manifest(3, "1/3")}]
    two = [{"id": "b", "dataset_fingerprint": "f", "run": manifest(3, "2/3")}]
    three = [{"id": "c", "dataset_fingerprint": "f", "run": manifest(3, "3/3")}]
    assert len(merge_rows([("1", one), ("2", two), ("3", three)])) == 3
    with pytest.raises(IncompleteError, match="missing 1 shard: 3/3"):
        merge_rows([("1", one), ("2", two)])
    partial = merge_rows([("1", one), ("2", two)], allow_partial=True)
    assert not completeness(partial).complete
    again = [{"id": "z", "dataset_fingerprint": "f", "run": manifest(3, "1/3")}]
    with pytest.raises(ResultsFileError, match="shard 1/3 is in both 1 and 1b"):
        merge_rows([("1", one), ("1b", again)])
    with pytest.raises(ResultsFileError, match="case 'a' is in both"):
        merge_rows([("1", one), ("1c", one)])
    other = [{"id": "d", "dataset_fingerprint": "g", "run": manifest(3, "3/3")}]
    with pytest.raises(ResultsFileError, match="differ in dataset"):
        merge_rows([("1", one), ("2", two), ("3", other)])


def test_a_named_judge_that_did_not_judge_has_no_verdict() -> None:
    assert primary_verdict({"judges": {"a": {"verdict": "PASS"}}}, "b") is None
