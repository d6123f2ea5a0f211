"""Judge-versus-human calibration: figures worked by hand, the traps, the files and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyeval.calibration import (
    Calibration,
    CalibrationError,
    calibrate,
    calibrate_results,
    disagreement_rows,
    load_calibration,
    read_labels,
)
from tinyeval.cli import main
from tinyeval.records import output_fingerprint
from tinyeval.stats import wilson_interval

P, F = "PASS", "FAIL"


def result_row(case_id: str, verdict: str | None, **extra: object) -> dict:
    row = {
        "id": case_id,
        "category": "default",
        "input": f"question {case_id}",
        "output": f"answer {case_id}",
        "context": None,
        "judge": {"verdict": verdict, "parsed": verdict is not None, "failure": None},
        "status": "pass" if verdict == P else "fail",
        "judge_model": "builtin",
        "rubric_fingerprint": "rubric-1",
    }
    row.update(extra)
    judge = row.pop("judge")  # the one judge's verdict (None: it did not run)
    row["judges"] = {} if judge is None else {"judge": judge}
    return row


def label_record(case_id: str, label: object, **extra: object) -> dict:
    return {"id": case_id, "label": label, "labeler": "ana", "at": "2026-01-01T00:00:00Z", **extra}


# ---------------------------------------------------------------- worked by hand


def test_confusion_matrix_worked_by_hand() -> None:
    # pairs (judge, human): (P,P)x5, (F,P)x1, (F,F)x2, (P,F)x1, (unparsed,F)x1
    judge = [P] * 5 + [F] + [F] * 2 + [P] + [None]
    human = [P] * 6 + [F] * 4
    cal = calibrate(judge, human)
    assert cal.kind == "pass/fail"
    assert cal.confusion == {P: {P: 5, F: 1, None: 0}, F: {P: 1, F: 2, None: 1}}
    assert (cal.n, cal.parsed, cal.unparsed) == (10, 9, 1)
    # agreement over parsed pairs: (5 + 2) / 9; counting the unparsed one as a disagreement: 7/10
    assert (cal.agreement.successes, cal.agreement.n) == (7, 9)
    assert (cal.agreement_with_unparsed.successes, cal.agreement_with_unparsed.n) == (7, 10)
    assert (cal.agreement.low, cal.agreement.high) == wilson_interval(7, 9)
    # human FAILs among parsed pairs: 3; the judge failed 2 of them
    assert (cal.human_failures, cal.judge_caught) == (3, 2)
    assert (cal.failure_recall.successes, cal.failure_recall.n) == (2, 3)
    # human PASSes: 6; the judge failed 1 of them (false alarm); sensitivity 5/6
    assert (cal.human_passes, cal.false_alarms) == (6, 1)
    assert (cal.false_alarm_rate.successes, cal.false_alarm_rate.n) == (1, 6)
    assert (cal.sensitivity.successes, cal.sensitivity.n) == (5, 6)
    assert cal.specificity == cal.failure_recall
    # kappa over the 9 parsed pairs: p_o = 7/9; judge 6 PASS/3 FAIL, human 6 PASS/3 FAIL,
    # p_e = (6·6 + 3·3)/81 = 5/9; kappa = (7/9 − 5/9)/(1 − 5/9) = 0.5
    assert cal.kappa == pytest.approx(0.5)
    assert any("kappa 0.50 is below 0.6" in w for w in cal.warnings)
    assert cal.disagreements() == [5, 8, 9]


def test_always_pass_judge_on_a_ninety_percent_pass_set() -> None:
    human = [P] * 90 + [F] * 10
    cal = calibrate([P] * 100, human)
    assert str(cal.agreement) == "90/100 = 90.0% [82.6%, 94.5%]"
    # kappa with a constant judge column is defined: p_e = 0.9·1 + 0.1·0 = 0.9, p_o = 0.9 → 0
    assert cal.kappa == 0.0 and cal.kappa_undefined is None
    assert (cal.judge_caught, cal.human_failures) == (0, 10)
    assert cal.failure_recall.value == 0.0
    assert cal.false_alarms == 0
    assert (cal.majority_label, cal.majority_share.successes) == (P, 90)
    text = " | ".join(cal.warnings)
    assert "the figure is the judge's opinion, not your criterion" in text
    assert "no better than a judge that always says PASS would reach" in text
    assert not cal.trusted
    assert cal.verdict.startswith("do not rely on the judge's figure")


def test_a_good_judge_on_enough_labels_is_trusted() -> None:
    # 60 cases: human 45 PASS / 15 FAIL; the judge errs on 2 PASSes and 1 FAIL.
    human = [P] * 45 + [F] * 15
    judge = [P] * 43 + [F] * 2 + [F] * 14 + [P]
    cal = calibrate(judge, human)
    # p_o = 57/60; judge 44 PASS/16 FAIL; p_e = (44·45 + 16·15)/3600 = 2220/3600
    # kappa = (3420 − 2220)/(3600 − 2220) = 1200/1380 = 0.8696
    assert cal.kappa == pytest.approx(1200 / 1380)
    assert cal.warnings == ()
    assert cal.trusted
    assert "14/15" in cal.verdict


def test_zero_human_failures() -> None:
    cal = calibrate([P] * 58 + [F] * 2, [P] * 60)
    assert cal.human_failures == 0
    assert cal.failure_recall is None and cal.specificity is None
    assert cal.to_dict()["failure_recall"] is None
    assert (cal.false_alarms, cal.false_alarm_rate.n) == (2, 60)
    assert any("you labelled no case FAIL" in w and "too easy" in w for w in cal.warnings)
    # kappa: human column constant, judge not → p_e = 58/60·1, p_o = 58/60 → 0, defined
    assert cal.kappa == 0.0


def test_undefined_kappa_is_said_in_words() -> None:
    cal = calibrate([P] * 60, [P] * 60)
    assert cal.kappa is None
    assert "same label" in cal.kappa_undefined
    assert any(w.startswith("kappa is undefined") for w in cal.warnings)
    assert cal.to_dict()["kappa"] is None


def test_few_labels_warns() -> None:
    cal = calibrate([P, F] * 10, [P, F] * 10)
    assert cal.kappa == 1.0
    assert cal.warnings == ("only 20 labelled cases: too few to trust; label at least 50",)


def test_booleans_and_lower_case_labels() -> None:
    cal = calibrate([True, False, "pass", None], ["PASS", "fail", False, True])
    assert cal.kind == "pass/fail"
    assert cal.confusion == {P: {P: 1, F: 0, None: 1}, F: {P: 1, F: 1, None: 0}}


def test_many_unparsed_replies_are_a_warning() -> None:
    human = [P] * 50 + [F] * 10
    judge = [P] * 46 + [None] * 4 + [F] * 10  # 4/60 = 6.7% unparsed > 5%
    cal = calibrate(judge, human)
    assert cal.unparsed == 4
    assert cal.confusion[P][None] == 4
    assert any("4 of 60 judge replies did not parse" in w for w in cal.warnings)
    assert cal.agreement.n == 56 and cal.agreement_with_unparsed.n == 60


def test_multiclass_pairwise_labels() -> None:
    judge = ["A", "A", "B", "TIE", "B", "A"]
    human = ["A", "B", "B", "TIE", "B", "TIE"]
    cal = calibrate(judge, human)
    assert cal.kind == "multiclass"
    assert cal.labels == ("A", "B", "TIE")
    assert (cal.agreement.successes, cal.agreement.n) == (4, 6)
    assert cal.confusion["B"] == {"A": 1, "B": 2, "TIE": 0, None: 0}
    assert cal.confusion["TIE"] == {"A": 1, "B": 0, "TIE": 1, None: 0}
    # judge A3 B2 TIE1, human A1 B3 TIE2: p_e = (3·1 + 2·3 + 1·2)/36 = 11/36, p_o = 24/36,
    # kappa = 13/25
    assert cal.kappa == pytest.approx(13 / 25)
    assert cal.failure_recall is None and cal.human_failures is None
    assert cal.spearman is None


def test_graded_labels_get_spearman() -> None:
    cal = calibrate([1, 2, 3, 4, 5], [1, 3, 2, 4, 5])
    # rank differences 0, 1, 1, 0, 0: rho = 1 − 6·2/(5·(25 − 1)) = 0.9
    assert cal.spearman == pytest.approx(0.9)
    # every grade once on each side: p_e = 5/25, p_o = 3/5, kappa = (0.6 − 0.2)/0.8 = 0.5
    assert cal.kappa == pytest.approx(0.5)
    assert cal.labels == (1, 2, 3, 4, 5)
    assert cal.to_dict()["confusion"]["3"]["2"] == 1


def test_disjoint_labels_are_called_out() -> None:
    cal = calibrate([P, F, P], [1, 2, 3])
    assert any("never use the same label" in w for w in cal.warnings)


@pytest.mark.parametrize(
    ("judge", "human", "message"),
    [
        ([P], [P, F], "same length"),
        ([], [], "at least one"),
        ([P], [None], "human label at position 0"),
        ([float("nan")], [P], "judge label at position 0"),
        ([{"x": 1}], [P], "judge label at position 0"),
    ],
)
def test_bad_input(judge: list, human: list, message: str) -> None:
    with pytest.raises(CalibrationError, match=message):
        calibrate(judge, human)


def test_to_dict_keys_are_stable_and_json_ready() -> None:
    cal = calibrate([P, F, None], [P, P, F], categories=["a", "a", "b"], ids=["x", "y", "z"])
    data = json.loads(json.dumps(cal.to_dict()))
    for key in (
        "n",
        "parsed",
        "unparsed",
        "agreement",
        "agreement_with_unparsed",
        "human_failures",
        "judge_caught",
        "failure_recall",
        "false_alarms",
        "false_alarm_rate",
        "sensitivity",
        "specificity",
        "kappa",
        "kappa_undefined",
        "confusion",
        "warnings",
        "verdict",
        "per_category",
        "disagreements",
        "expired",
        "unmatched_results",
        "unmatched_labels",
    ):
        assert key in data, key
    assert data["confusion"]["FAIL"] == {"PASS": 0, "FAIL": 0, "unparsed": 1}
    assert data["disagreements"] == ["y", "z"]
    assert set(data["per_category"]) == {"a", "b"}
    assert data["agreement"]["text"] == "1/2 = 50.0% [9.5%, 90.5%]"


# ---------------------------------------------------------------- result rows and labels


def test_join_by_id_reports_unmatched_ids_on_both_sides() -> None:
    rows = [result_row("a", P), result_row("b", F), result_row("c", P)]
    rows.append(result_row("d", None, judge=None))  # the judge did not run
    rows.append(result_row("e", None, judge={"verdict": None, "failure": "error"}))
    labels = {key: label_record(key, P) for key in ("b", "c", "d", "e", "zz")}
    cal = calibrate_results(rows, labels)
    assert cal.ids == ("b", "c")
    assert cal.unmatched_results == ("a",)
    assert cal.unmatched_labels == ("zz",)
    assert cal.without_verdict == ("d", "e")
    assert cal.false_alarms == 1
    text = cal.to_text()
    assert "1 result row without a label, 1 label without a result row" in text
    assert "2 labelled rows" in text


def test_join_with_nothing_in_common_raises() -> None:
    with pytest.raises(CalibrationError, match="0 ids in common"):
        calibrate_results([result_row("a", P)], {"b": label_record("b", P)})


def test_repeated_result_ids_raise() -> None:
    with pytest.raises(CalibrationError, match="repeats the id 'a'"):
        calibrate_results([result_row("a", P), result_row("a", F)], {"a": label_record("a", P)})


def test_named_judge_is_read_from_judges() -> None:
    row = result_row("a", P)
    row["judges"] = {"tone": {"verdict": F, "model": "m2-2024", "rubric_fingerprint": "t1"}}
    row["judge_model"] = "m2"  # the spec the run used; the verdict's model is what it reported
    cal = calibrate_results([row], {"a": label_record("a", F)}, judge="tone")
    assert cal.judge_caught == 1
    assert (cal.judge_model, cal.rubric_fingerprint) == ("m2", "t1")


def test_pairwise_winners_are_read() -> None:
    rows = [
        result_row("a", None, judge={"winner": "A", "error": None}),
        result_row("b", None, judge={"winner": None, "error": None}),  # orders disagreed
        result_row("c", None, judge={"winner": None, "error": "timeout"}),
        result_row("d", None, judge={"winner": "TIE", "error": None}),
    ]
    labels = {key: label_record(key, "A") for key in "abcd"}
    cal = calibrate_results(rows, labels)
    assert cal.kind == "multiclass"
    assert (cal.n, cal.unparsed, cal.without_verdict) == (3, 1, ("c",))
    assert cal.confusion["A"] == {"A": 1, "TIE": 1, None: 1}


def test_a_label_the_pass_fail_judge_cannot_give_is_an_error(tmp_path: Path) -> None:

    rows = [result_row("a", P), result_row("b", F), result_row("c", None)]
    path = write_jsonl(
        tmp_path / "labels.jsonl",
        [label_record("a", "pass"), label_record("b", "maybe"), label_record("c", F)],
    )
    with pytest.raises(CalibrationError) as info:
        calibrate_results(rows, read_labels(path))
    assert str(info.value) == (
        f"calibrate: id 'b' ({path}:2) has the human label 'maybe', but the judge gives "
        "PASS/FAIL verdicts: expected PASS or FAIL (other labels are for a graded or "
        "multiple-choice judge)"
    )
    # a grade for a PASS/FAIL judge is refused too; a plain dict record has no line to name
    with pytest.raises(CalibrationError, match=r"id 'a' has the human label 3, but"):
        calibrate_results(rows, {"a": label_record("a", 3)})


def test_grades_and_pairwise_labels_follow_their_judge() -> None:
    graded = [
        result_row("a", None, judge={"verdict": 4}),
        result_row("b", None, judge={"verdict": 2}),
    ]
    cal = calibrate_results(graded, {"a": label_record("a", 4), "b": label_record("b", 3)})
    assert cal.kind == "multiclass" and cal.labels == (2, 3, 4)
    with pytest.raises(
        CalibrationError, match="the judge gives grades \\(numbers\\): expected a number"
    ):
        calibrate_results(graded, {"a": label_record("a", "PASS")})
    pairwise = [result_row("a", None, judge={"winner": "A", "error": None})]
    with pytest.raises(CalibrationError, match="the judge is pairwise: expected A, B or TIE"):
        calibrate_results(pairwise, {"a": label_record("a", "maybe")})
    # verdicts of the user's own choices: any label may be one of them
    chosen = [result_row("a", None, judge={"verdict": "polite"})]
    assert calibrate_results(chosen, {"a": label_record("a", "rude")}).n == 1


def test_an_unknown_judge_name_lists_the_judges_there_are() -> None:
    row = result_row("a", P)
    row["judges"] = {"tone": {"verdict": F}, "grounded": {"verdict": P}}
    with pytest.raises(CalibrationError) as info:
        calibrate_results([row], {"a": label_record("a", F)}, judge="tono")
    assert str(info.value) == (
        "calibrate: unknown judge 'tono'; the rows have the judges 'grounded', 'tone'"
    )
    with pytest.raises(CalibrationError, match="the rows have the judges 'judge'"):
        calibrate_results([result_row("a", P)], {"a": label_record("a", F)}, judge="tone")


def test_the_verdict_stands_on_its_own() -> None:
    # 18 pairs, all agreeing: kappa 1, so the only problem is the count
    one = calibrate([P, F] * 9, [P, F] * 9)
    assert one.verdict == (
        "do not rely on the judge's figure yet: only 18 labelled cases: too few to trust; "
        "label at least 50"
    )
    # the always-PASS judge: kappa 0, too few labels, no better than always PASS
    three = calibrate([P] * 10, [P] * 9 + [F])
    assert three.verdict.startswith("do not rely on the judge's figure yet: kappa 0.00 is below")
    assert three.verdict.endswith("(and 2 more problems listed in the calibration's warnings)")
    for cal in (one, three):
        assert "below" not in cal.verdict.replace("is below 0.6", "")
        text = cal.to_text()
        assert "verdict: do not rely on the judge's figure yet:\n  - " in text
        assert all(f"  - {warning}" in text for warning in cal.warnings)
    single = calibrate([P], [P])
    assert "on 1 labelled case\n" in single.to_text() + "\n"
    assert "only 1 labelled case: too few to trust; label at least 50" in single.warnings


def test_calibration_expires_with_another_rubric_model_or_output() -> None:
    rows = [result_row(str(i), P) for i in range(4)]
    labels = {
        "0": label_record("0", P, rubric_fingerprint="rubric-1", judge_model="builtin"),
        "1": label_record("1", P, rubric_fingerprint="rubric-0", judge_model="builtin"),
        "2": label_record("2", P, judge_model="openai:gpt-x"),
        "3": label_record("3", P, output_fingerprint=output_fingerprint("another answer")),
    }
    cal = calibrate_results(rows, labels)
    assert len(cal.expired) == 3
    assert "1 of 4 labels was compared against rubric rubric-0" in cal.expired[0]
    assert "judge model openai:gpt-x but these results use builtin" in cal.expired[1]
    assert "different output" in cal.expired[2]
    assert all(w in cal.warnings for w in cal.expired)
    assert cal.to_dict()["expired"] == list(cal.expired)
    fresh = calibrate_results(rows, {"0": labels["0"]})
    assert fresh.expired == ()


def test_disagreement_rows_carry_the_row_and_the_human_label() -> None:
    rows = [result_row("a", P), result_row("b", F), result_row("c", None)]
    labels = {key: label_record(key, F) for key in ("a", "b", "c")}
    found = disagreement_rows(calibrate_results(rows, labels), rows, labels)
    assert [row["id"] for row in found] == ["a", "c"]  # the unparsed reply counts
    assert found[0]["judges"]["judge"]["verdict"] == P and found[0]["human"]["label"] == F
    assert found[0]["output"] == "answer a"


# ---------------------------------------------------------------- saving and loading


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    rows = [
        result_row(f"c{i}", P if i % 4 else F, category="x" if i < 30 else "y") for i in range(50)
    ]
    labels = {row["id"]: label_record(row["id"], P if i % 5 else F) for i, row in enumerate(rows)}
    cal = calibrate_results(rows, labels)
    path = tmp_path / "cal.json"
    cal.save(path)
    document = json.loads(path.read_text())
    assert document["format"] == "tinyeval-calibration" and document["version"] == 1
    assert document["correction"]["overall"]["sensitivity"]["n"] == cal.human_passes
    assert set(document["correction"]["per_category"]) == set(cal.correctable_categories())
    loaded = load_calibration(path)
    assert isinstance(loaded, Calibration)
    assert (loaded.judge_model, loaded.rubric_fingerprint) == ("builtin", "rubric-1")
    for key in ("agreement", "kappa", "failure_recall", "false_alarm_rate", "confusion"):
        assert loaded.to_dict()[key] == cal.to_dict()[key]
    assert loaded.correctable_categories() == cal.correctable_categories()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ('{"format": "other"}', "tinyeval-calibration"),
        ('{"format": "tinyeval-calibration", "version": 9}', "version 9"),
        ('{"format": "tinyeval-calibration", "version": 1, "pairs": []}', "non-empty list"),
        (
            '{"format": "tinyeval-calibration", "version": 1, "pairs": [{"judge": "PASS"}]}',
            "human label at position 0",
        ),
    ],
)
def test_load_refuses_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cal.json"
    path.write_text(text)
    with pytest.raises(CalibrationError, match=message) as info:
        load_calibration(path)
    assert str(path) in str(info.value)


# ---------------------------------------------------------------- the command line


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_cli_calibrate_text_disagreements_only_and_save(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [result_row(f"c{i:02d}", P if i % 5 else F) for i in range(60)]
    rows[3]["judges"]["judge"]["verdict"], rows[3]["status"] = F, "fail"  # a false alarm
    rows[10]["judges"]["judge"]["verdict"] = P  # a missed failure
    results = write_jsonl(tmp_path / "results.jsonl", rows)
    labels = write_jsonl(
        tmp_path / "labels.jsonl",
        [label_record(f"c{i:02d}", P if i % 5 else F) for i in range(60)]
        + [label_record("ghost", P)],
    )
    dis, cal_path = tmp_path / "dis.jsonl", tmp_path / "cal.json"
    code = main(
        [
            "calibrate",
            str(results),
            str(labels),
            "--disagreements",
            str(dis),
            "--save",
            str(cal_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "failure recall     11/12 = 91.7%" in out
    assert "false alarms       1/48 = 2.1%" in out
    assert "0 result rows without a label, 1 label without a result row" in out
    assert "disagreements: 2 of 60" in out
    assert [json.loads(line)["id"] for line in dis.read_text().splitlines()] == ["c03", "c10"]
    assert load_calibration(cal_path).n == 60

    code = main(["calibrate", "--only", str(dis), str(results), str(labels), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["n"] == 2 and data["agreement"]["successes"] == 0
    assert data["unmatched_labels"] == []  # the ghost label is outside --only


def test_cli_calibrate_warns_loudly_when_expired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write_jsonl(tmp_path / "r.jsonl", [result_row("a", P), result_row("b", F)])
    labels = write_jsonl(
        tmp_path / "l.jsonl",
        [label_record("a", P, rubric_fingerprint="old"), label_record("b", F)],
    )
    assert main(["calibrate", str(results), str(labels), "--json"]) == 0
    captured = capsys.readouterr()
    assert "WARNING: CALIBRATION EXPIRED" in captured.err
    assert json.loads(captured.out)["expired"][0].startswith("CALIBRATION EXPIRED")


def test_cli_calibrate_bad_labels_file_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write_jsonl(tmp_path / "r.jsonl", [result_row("a", P)])
    labels = tmp_path / "l.jsonl"
    labels.write_text('{"id": "a", "label": "PASS"}\n{"id": "b"}\n')
    assert main(["calibrate", str(results), str(labels)]) == 2
    assert f"{labels}:2: expected a field 'label'" in capsys.readouterr().err


def test_cli_calibrate_says_the_judge_gave_one_verdict_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the judge failed all 20; the human failed 8: they agree on 8, not on all 20
    results = write_jsonl(tmp_path / "r.jsonl", [result_row(f"c{i:02d}", F) for i in range(20)])
    labels = write_jsonl(
        tmp_path / "l.jsonl", [label_record(f"c{i:02d}", F if i < 8 else P) for i in range(20)]
    )
    assert main(["calibrate", str(results), str(labels)]) == 0
    out = capsys.readouterr().out
    assert "agree on all" not in out
    assert "no interval: the judge gave one verdict only (FAIL on all 20 parsed cases)" in out
    assert "not your criterion (the judge gave one verdict only" in out
    assert "so kappa is 0 whatever your labels say" in out


def test_labels_of_one_kind_are_said_so_where_kappa_has_no_interval() -> None:
    # the judge varies, the human passed all 20: kappa is 0 and its variance 0
    cal = calibrate([P, F] * 10, [P] * 20)
    assert cal.kappa == 0.0 and cal.kappa_interval is None
    assert cal.kappa_interval_undefined == (
        "you gave one label only (PASS on all 20 parsed cases), so kappa is 0 whatever the "
        "judge's verdicts say: it cannot tell a judge that catches failures from one that does not"
    )
    assert "rater" not in cal.to_text() and "agree on all" not in cal.to_text()
