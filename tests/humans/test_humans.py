"""People against people, reference labels, drift, PPI rates from rows and labels, and the CLI."""

from __future__ import annotations

import json
import math
import random
import subprocess
from pathlib import Path

import pytest
from child import run_tinyeval

from tinyeval.calibration import (
    CalibrationError,
    LabelError,
    calibrate,
    calibrate_results,
    parse_label_fields,
    read_labels,
)
from tinyeval.estimates.ppi import ppi_pass_rate
from tinyeval.humans.labelers import (
    human_agreement,
    ppi_rates,
    read_label_set,
    read_labels_by_labeler,
    reference_labels,
    self_agreement,
)
from tinyeval.humans.session import label_session, plan_labels

ROOT = Path(__file__).resolve().parents[2]
Z975 = 1.959963984540054

# Two labelers on ten cases: they agree on 7 (4 PASS, 3 FAIL) and split on 3.
ANA = ["PASS"] * 6 + ["FAIL"] * 4
BEN = ["PASS"] * 4 + ["FAIL"] * 5 + ["PASS"]
IDS = [f"c{i}" for i in range(10)]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def two_labelers(path: Path) -> Path:
    records = [
        {"id": key, "label": label, "labeler": "ana"} for key, label in zip(IDS, ANA, strict=True)
    ]
    records.insert(0, {"id": "c0", "label": "FAIL", "labeler": "ana"})  # replaced below it
    records += [
        {"id": key, "label": label, "labeler": "ben"} for key, label in zip(IDS, BEN, strict=True)
    ]
    records.append({"id": "c4", "label": "PASS", "labeler": "cy", "adjudicated": True})
    return write_jsonl(path, records)


def judged_row(key: str, verdict: str | None, category: str = "support", **extra: object) -> dict:
    return {
        "id": key,
        "category": category,
        "status": "pass" if verdict == "PASS" else "fail",
        "output": f"output of {key}",
        "judges": {"grounded": {"verdict": verdict, "votes": [verdict], **extra}},
    }


# ---------------------------------------------------------------- people against people


def test_two_labelers_agreement_computed_by_hand(tmp_path: Path) -> None:
    found = read_label_set(two_labelers(tmp_path / "labels.jsonl"))
    assert found.labelers == ("ana", "ben")
    assert found.replaced == ("c0",)  # ana's later PASS for c0 stands
    assert found.by_labeler["ana"]["c0"]["label"] == "PASS"
    assert sorted(found.disagreements()) == ["c4", "c5", "c9"]

    agreement = human_agreement(found)
    (pair,) = agreement.pairs
    # cells: PP 4, PF 2, FF 3, FP 1 → p_o = 0.7; ana PASS 0.6, ben PASS 0.5 → p_e = 0.5
    assert pair.n == 10 and pair.kappa == pytest.approx((0.7 - 0.5) / (1 - 0.5))
    # Fleiss–Cohen–Everitt variance written out, κ = 0.4:
    kappa, p_e = 0.4, 0.5
    term_a = 0.4 * (1 - (0.6 + 0.5) * (1 - kappa)) ** 2 + 0.3 * (1 - (0.4 + 0.5) * (1 - kappa)) ** 2
    term_b = 0.2 * (0.5 + 0.4) ** 2 + 0.1 * (0.5 + 0.6) ** 2
    term_c = (kappa - p_e * (1 - kappa)) ** 2
    se = math.sqrt((term_a + (1 - kappa) ** 2 * term_b - term_c) / (10 * (1 - p_e) ** 2))
    assert pair.interval == pytest.approx((kappa - Z975 * se, kappa + Z975 * se))
    # Krippendorff's nominal alpha, 2 raters: o_PP = 8, o_FF = 6, o_PF = o_FP = 3,
    # n_P = 11, n_F = 9, n = 20: α = 1 − (n − 1)·6 / (2·11·9)
    assert agreement.alpha == pytest.approx(1 - 19 * 6 / (2 * 11 * 9))
    assert agreement.alpha_cases == 10

    reference = reference_labels(found)
    assert (reference.adjudicated, reference.majority, reference.single) == (1, 7, 0)
    assert sorted(reference.ties) == ["c5", "c9"]
    assert reference["c4"]["adjudicated"] is True and "c5" not in reference


def test_read_labels_by_labeler_and_latest_stay_consistent(tmp_path: Path) -> None:
    path = two_labelers(tmp_path / "labels.jsonl")
    by = read_labels_by_labeler(path)
    assert {name: len(labels) for name, labels in by.items()} == {"ana": 10, "ben": 10}
    latest = read_labels(path)  # today's rule: the last label standing for an id, anyone's
    assert latest["c4"]["labeler"] == "cy" and latest["c9"]["labeler"] == "ben"


def test_human_agreement_needs_two_labelers(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "l.jsonl", [{"id": "a", "label": "PASS", "labeler": "ana"}])
    with pytest.raises(CalibrationError, match="at least 2 labelers, got 1"):
        human_agreement(read_label_set(path))


def test_self_agreement_of_rechecks(tmp_path: Path) -> None:
    records = [{"id": k, "label": "PASS", "labeler": "ana"} for k in "abcd"]
    records += [
        {"id": "a", "label": "PASS", "labeler": "ana", "recheck": True},
        {"id": "b", "label": "FAIL", "labeler": "ana", "recheck": True},
        {"id": "c", "label": "PASS", "labeler": "ana", "recheck": True},
        {"id": "c", "undo": True, "labeler": "ana", "recheck": True},
    ]
    found = read_label_set(write_jsonl(tmp_path / "l.jsonl", records))
    assert found.replaced == () and found.by_labeler["ana"]["b"]["label"] == "PASS"
    (drift,) = self_agreement(found)
    assert (drift.agreement.successes, drift.agreement.n) == (1, 2)


def test_label_fields_read_raw_logs(tmp_path: Path) -> None:
    raw = [
        {"trace": {"span_id": "s1"}, "annotations": {"human": "PASS", "by": "ana"}},
        {"trace": {"span_id": "s2"}, "annotations": {"human": "fail", "by": "ben"}},
        {"id": "s3", "label": "FAIL", "labeler": "cy"},  # a record of tinyeval's own, appended
    ]
    path = write_jsonl(tmp_path / "raw.jsonl", raw)
    fields = parse_label_fields(
        ["label=annotations.human", "id=trace.span_id", "labeler=annotations.by"]
    )
    found = read_label_set(path, fields=fields)
    assert {n: list(v) for n, v in found.by_labeler.items()} == {
        "ana": ["s1"],
        "ben": ["s2"],
        "cy": ["s3"],
    }
    with pytest.raises(LabelError, match="unknown key 'idd'; did you mean 'id'"):
        parse_label_fields(["idd=x"])


# ---------------------------------------------------------------- calibration figures


def test_kappa_interval_and_the_trust_verdict_use_the_lower_bound() -> None:
    # 60 cases, 25 PP, 25 FF, 5 PF, 5 FP: κ = (50/60 − 0.5) / 0.5 = 2/3, above the 0.6 floor
    judge = ["PASS"] * 30 + ["FAIL"] * 30
    human = ["PASS"] * 25 + ["FAIL"] * 5 + ["FAIL"] * 25 + ["PASS"] * 5
    cal = calibrate(judge, human)
    assert cal.kappa == pytest.approx(2 / 3)
    # symmetric table, all margins 1/2: term_a = 2·(5/12)(1 − (1/3))²... written out:
    kappa, p_e = 2 / 3, 0.5
    term_a = 2 * (25 / 60) * (1 - 1.0 * (1 - kappa)) ** 2
    term_b = 2 * (5 / 60) * 1.0**2
    term_c = (kappa - p_e * (1 - kappa)) ** 2
    se = math.sqrt((term_a + (1 - kappa) ** 2 * term_b - term_c) / (60 * (1 - p_e) ** 2))
    assert cal.kappa_interval == pytest.approx((kappa - Z975 * se, kappa + Z975 * se))
    assert cal.kappa_interval[0] < 0.6 < cal.kappa
    assert not cal.trusted
    assert any("is not evidence of kappa >= 0.6" in w for w in cal.warnings)
    assert "kappa              0.667 [" in cal.to_text()
    assert cal.to_dict()["kappa_interval"] == list(cal.kappa_interval)

    # the same shares on 600 cases: the interval is narrow and its lower bound clears 0.6
    big = calibrate(judge * 10, human * 10)
    assert big.kappa_interval[0] > 0.6 and big.trusted


def test_graded_labels_get_a_spearman_interval() -> None:
    cal = calibrate([1, 2, 3, 4, 5, 6, 7, 8], [2, 1, 4, 3, 6, 5, 8, 7])
    rho = 1 - 6 * 8 / (8 * 63)
    se = math.sqrt((1 + rho * rho / 2) / 5)
    expected = (math.tanh(math.atanh(rho) - Z975 * se), math.tanh(math.atanh(rho) + Z975 * se))
    assert cal.spearman_interval == pytest.approx(expected)
    assert cal.to_dict()["spearman_interval"] == pytest.approx(list(expected))


def test_no_parsed_verdict_says_nothing_to_calibrate() -> None:
    cal = calibrate([None, None, None], ["PASS", "FAIL", "FAIL"])
    assert cal.warnings == (
        "the judge gave no parsed verdict on the 3 labelled cases: nothing to calibrate",
    )
    assert "you labelled no case FAIL" not in cal.to_text()


# ---------------------------------------------------------------- PPI from rows and labels


def ppi_data(seed: int = 3, n: int = 200) -> tuple[list[dict], dict[str, bool]]:
    rng = random.Random(seed)
    rows, truth = [], {}
    for i in range(n):
        key = f"r{i}"
        passed = rng.random() < 0.7
        right = rng.random() < 0.85
        verdict = "PASS" if passed == right else "FAIL"
        rows.append(judged_row(key, verdict, category="a" if i % 2 else "b"))
        truth[key] = passed
    return rows, truth


def test_ppi_rates_match_ppi_pass_rate_per_category() -> None:
    rows, truth = ppi_data()
    labelled = [row["id"] for row in rows[::5]]
    labels = {key: {"label": "PASS" if truth[key] else "FAIL"} for key in labelled}
    found = ppi_rates(rows, labels)
    assert found.design == "assumed uniform"
    assert any("assumes a random sample" in w for w in found.warnings)
    assert list(found) == ["a", "b", "global"]
    for name in ("a", "global"):
        members = [row for row in rows if name == "global" or row["category"] == name]

        def judge(row: dict) -> bool:
            return row["judges"]["grounded"]["verdict"] == "PASS"

        expected = ppi_pass_rate(
            [judge(r) for r in members if r["id"] in labels],
            [truth[r["id"]] for r in members if r["id"] in labels],
            [judge(r) for r in members if r["id"] not in labels],
        )
        assert found[name].ppi == expected
        passes = sum(judge(r) for r in members)
        assert (found[name].judge_rate.successes, found[name].judge_rate.n) == (
            passes,
            len(members),
        )
    assert found["global"].labels_rate.n == 40


def test_ppi_rates_refuse_labels_chosen_by_hand_and_mixed_designs() -> None:
    rows, _ = ppi_data()
    labels = {"r0": {"label": "PASS", "chosen": "by hand"}, "r1": {"label": "FAIL"}}
    with pytest.raises(CalibrationError, match=r"chosen 'by hand'.*not at random"):
        ppi_rates(rows, labels)
    selection = {"strategy": "random", "probability": 0.1, "budget": 20, "population": 200}
    mixed = {"r0": {"label": "PASS", "selection": selection}, "r1": {"label": "FAIL"}}
    with pytest.raises(CalibrationError, match="1 of 2 labels record how they were chosen"):
        ppi_rates(rows, mixed)
    with pytest.raises(CalibrationError, match="needs PASS/FAIL labels"):
        ppi_rates(rows, {"r0": {"label": 3}, "r1": {"label": "FAIL"}})


def test_uncertain_plan_probabilities_sum_to_the_budget_and_stay_positive() -> None:
    rows = [
        judged_row(f"r{i}", "PASS" if i % 3 else "FAIL")
        if i % 7
        else judged_row(f"r{i}", "PASS", votes=["PASS", "FAIL", "PASS"], unanimous=False)
        for i in range(140)
    ]
    rows[5]["judges"]["grounded"] = {"verdict": None, "failure": "unparsed", "votes": [None]}
    plan = plan_labels(rows, 10, strategy="uncertain", seed=1)
    assert math.fsum(plan.probabilities.values()) == pytest.approx(10)
    unsure = 20 + 1  # every 7th row splits its votes, plus one unparsed reply
    floor = 0.5 * 10 / 140  # the uniform half of the budget, spread over all 140
    certain = [p for k, p in plan.probabilities.items() if int(k[1:]) % 7 and k != "r5"]
    assert min(plan.probabilities.values()) >= floor * (1 - 1e-9) > 0
    assert certain == pytest.approx([floor] * (140 - unsure))
    assert plan.probabilities["r7"] == pytest.approx(floor + 0.5 * 10 / unsure)
    assert plan.probabilities["r5"] == pytest.approx(floor + 0.5 * 10 / unsure)
    # a budget of 50 would give the unsure 50·(0.5/140 + 0.5/21) > 1 each: they are capped
    # at 1 and the other 29 of the budget are spread over the 119 sure cases
    capped = plan_labels(rows, 50, strategy="uncertain", seed=1).probabilities
    assert math.fsum(capped.values()) == pytest.approx(50)
    assert capped["r7"] == 1.0 and capped["r1"] == pytest.approx(29 / 119)
    random_plan = plan_labels(rows, 30, strategy="random", seed=1)
    assert len(random_plan.chosen) == 30 and set(random_plan.probabilities.values()) == {30 / 140}


def test_uncertain_labels_reweighted_stay_unbiased_seeded_simulation() -> None:
    # 300 cases; the judge is right 95% of the time when sure and 55% when its votes split.
    # Labelling the unsure cases over-samples the judge's errors: the labels-only mean is
    # biased; the inverse-probability-weighted PPI estimate is not (plain PPI, λ = 1).
    rng = random.Random(20261201)
    rows, truth = [], {}
    for i in range(300):
        key = f"r{i}"
        unsure = i % 4 == 0
        passed = rng.random() < (0.4 if unsure else 0.8)
        right = rng.random() < (0.55 if unsure else 0.95)
        verdict = "PASS" if passed == right else "FAIL"
        votes = ["PASS", "FAIL", verdict] if unsure else [verdict]
        rows.append(judged_row(key, verdict, votes=votes, unanimous=not unsure))
        truth[key] = passed
    true_rate = sum(truth.values()) / len(truth)
    estimates, naive = [], []
    for seed in range(300):
        plan = plan_labels(rows, 40, strategy="uncertain", seed=seed)
        labels = {
            key: {"label": "PASS" if truth[key] else "FAIL", "selection": plan.selection(key)}
            for key in plan.chosen
        }
        found = ppi_rates(rows, labels, tuned=False)["global"]
        assert found.ppi is not None and found.ppi.weighted
        estimates.append(found.ppi.value)
        naive.append(found.labels_rate.value)
    mean = sum(estimates) / len(estimates)
    sd = math.sqrt(sum((e - mean) ** 2 for e in estimates) / (len(estimates) - 1))
    assert abs(mean - true_rate) < 3 * sd / math.sqrt(len(estimates))  # no detectable bias
    assert sum(naive) / len(naive) < true_rate - 0.05  # the unweighted labels are biased


# ---------------------------------------------------------------- sessions


def session_rows() -> list[dict]:
    return [judged_row(f"c{i}", "PASS") for i in range(10)]


def test_budget_session_records_the_selection(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    plan = plan_labels(session_rows(), 4, strategy="random", seed=2)
    summary = label_session(
        session_rows(), out, labeler="ana", keys=["p"] * 4, plan=plan, write=lambda _: None
    )
    assert summary.labelled == 4 and summary.mode == "plan"
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == list(plan.chosen)
    assert all(
        r["selection"] == {"strategy": "random", "probability": 0.4, "budget": 4, "population": 10}
        for r in records
    )


def test_recheck_and_adjudicate_sessions(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    rows = session_rows()
    quiet = {"write": lambda _: None}
    label_session(rows, out, labeler="ana", keys=["p"] * 10, **quiet)
    label_session(rows, out, labeler="ben", keys=["p"] * 8 + ["f"] * 2, **quiet)
    again = label_session(rows, out, labeler="ana", keys=["p", "f"], recheck=0.2, **quiet)
    assert again.mode == "recheck" and again.total == 2
    assert (again.self_agreement.successes, again.self_agreement.n) == (1, 2)
    found = read_label_set(out)
    assert len(found.rechecks) == 2 and found.replaced == ()
    disputed = found.disagreements()
    assert len(disputed) == 2
    shown: list[str] = []
    settled = label_session(rows, out, labeler="cy", keys=["f", "f"], adjudicate=True,
                            write=shown.append)  # fmt: skip
    assert settled.labelled == 2
    assert any("labels given: ana PASS, ben FAIL" in text for text in shown)
    after = read_label_set(out)
    assert sorted(after.adjudicated) == sorted(disputed)
    assert reference_labels(after).adjudicated == 2
    with pytest.raises(LabelError, match="pick one"):
        label_session(rows, out, labeler="x", keys=[], recheck=0.5, adjudicate=True)


# ---------------------------------------------------------------- the command line


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return run_tinyeval(args, ROOT, stdin=stdin)


def results_for_ten(path: Path) -> Path:
    verdicts = ["PASS"] * 5 + ["FAIL"] * 5
    return write_jsonl(path, [judged_row(k, v) for k, v in zip(IDS, verdicts, strict=True)])


def test_cli_calibrate_prints_human_agreement_beside_the_judge(tmp_path: Path) -> None:
    results = results_for_ten(tmp_path / "results.jsonl")
    labels = two_labelers(tmp_path / "labels.jsonl")
    done = cli("calibrate", str(results), str(labels))
    assert done.returncode == 0, done.stderr
    assert "ana vs ben: kappa 0.40 [-0.16, 0.96] on 10 cases" in done.stdout
    assert "Krippendorff's alpha (nominal) 0.42 over 10 cases" in done.stdout
    assert "1 of the labels replaced an earlier label of the same labeler" in done.stdout
    assert "judge vs human on 8 labelled cases" in done.stdout  # 2 ties left out
    as_json = json.loads(cli("calibrate", str(results), str(labels), "--json").stdout)
    assert as_json["reference"]["ties"] == ["c5", "c9"]
    assert as_json["humans"]["pairs"][0]["kappa"] == pytest.approx(0.4)
    assert as_json["labels_file"]["replaced"] == 1
    # the judge's rows as calibrate_results sees them through the reference rule
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert calibrate_results(rows, reference_labels(read_label_set(labels))).n == 8


def test_cli_calibrate_ppi_refusal_and_zero_parsed_are_one_line(tmp_path: Path) -> None:
    results = results_for_ten(tmp_path / "results.jsonl")
    by_hand = write_jsonl(
        tmp_path / "hand.jsonl",
        [{"id": "c0", "label": "PASS", "chosen": "by hand"}, {"id": "c1", "label": "PASS"}],
    )
    done = cli("calibrate", str(results), str(by_hand), "--estimate", "ppi")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "not at random" in done.stderr
    unparsed = write_jsonl(tmp_path / "unparsed.jsonl", [judged_row(k, None) for k in IDS[:3]])
    labels = write_jsonl(tmp_path / "l.jsonl", [{"id": k, "label": "PASS"} for k in IDS[:3]])
    zero = cli("calibrate", str(unparsed), str(labels))
    assert zero.returncode == 0, zero.stderr
    assert "the judge gave no parsed verdict on the 3 labelled cases: nothing to calibrate" in (
        zero.stdout
    )


def test_cli_calibrate_field_and_ppi_estimate(tmp_path: Path) -> None:
    rows, truth = ppi_data(n=60)
    results = write_jsonl(tmp_path / "results.jsonl", rows)
    raw = [
        {"span": {"id": r["id"]}, "notes": {"human": "PASS" if truth[r["id"]] else "FAIL"}}
        for r in rows[::3]
    ]
    labels = write_jsonl(tmp_path / "raw.jsonl", raw)
    done = cli(
        "calibrate", str(results), str(labels), "--field", "id=span.id",
        "--field", "label=notes.human", "--estimate", "ppi",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "judge vs human on 20 labelled cases" in done.stdout
    assert "prediction-powered pass rates" in done.stdout
    assert "the estimate assumes a random sample" in done.stdout
    bad = cli("calibrate", str(results), str(labels), "--field", "nope")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_cli_label_budget_and_recheck(tmp_path: Path) -> None:
    results = results_for_ten(tmp_path / "results.jsonl")
    out = tmp_path / "labels.jsonl"
    done = cli(
        "label", str(results), "--out", str(out), "--labeler", "ana", "--budget", "3",
        "--strategy", "uncertain", "--json", stdin="p\np\np\np\np\np\np\np\np\np\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["plan"]["strategy"] == "uncertain" and summary["plan"]["population"] == 10
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and all(r["selection"]["probability"] == pytest.approx(0.3) for r in records)
    again = cli(
        "label", str(results), "--out", str(out), "--labeler", "ana", "--recheck", "100%",
        stdin="p\n" * 10,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "your re-shown labels agree with your first ones" in again.stdout
    wrong = cli("label", str(results), "--out", str(out), "--strategy", "random")
    assert wrong.returncode == 2 and "give --budget N too" in wrong.stderr


def fce_interval(cells: dict[tuple[str, str], int]) -> tuple[float, float, float]:
    """Cohen's kappa and its Fleiss–Cohen–Everitt (1969) 95% interval, from (a, b) counts."""
    n = sum(cells.values())
    labels = {label for pair in cells for label in pair}
    row = {k: sum(c for (i, _), c in cells.items() if i == k) / n for k in labels}
    col = {k: sum(c for (_, j), c in cells.items() if j == k) / n for k in labels}
    p_o = sum(c for (i, j), c in cells.items() if i == j) / n
    p_e = sum(row[k] * col[k] for k in labels)
    kappa = (p_o - p_e) / (1 - p_e)
    term_a = sum(
        c / n * (1 - (row[i] + col[i]) * (1 - kappa)) ** 2 for (i, j), c in cells.items() if i == j
    )
    term_b = sum(c / n * (col[i] + row[j]) ** 2 for (i, j), c in cells.items() if i != j)
    term_c = (kappa - p_e * (1 - kappa)) ** 2
    se = math.sqrt((term_a + (1 - kappa) ** 2 * term_b - term_c) / (n * (1 - p_e) ** 2))
    return kappa, max(-1.0, kappa - Z975 * se), min(1.0, kappa + Z975 * se)


def test_bundled_example_prints_kappa_with_its_interval(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    run = run_tinyeval(
        ["run", "examples/cases.jsonl", "--criterion", "unsupported-claims", "--judge-category",
         "support_answers", "--out", str(results), "-q"],
        ROOT, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    done = cli("calibrate", str(results), "examples/labels.jsonl")
    assert done.returncode == 0, done.stderr
    # the bundled confusion matrix (judge, human): 10 PASS/PASS, 2 FAIL/PASS, 6 FAIL/FAIL
    assert "human PASS          10           2" in done.stdout
    kappa, low, high = fce_interval(
        {("PASS", "PASS"): 10, ("FAIL", "PASS"): 2, ("FAIL", "FAIL"): 6}
    )
    assert kappa == pytest.approx((16 / 18 - 168 / 324) / (1 - 168 / 324))
    assert f"kappa              {kappa:.3f} [{low:.3f}, {high:.3f}]" in done.stdout
    assert f"is not evidence of kappa >= 0.6: its interval reaches down to {low:.2f}" in done.stdout


def test_nothing_to_adjudicate_or_recheck_is_said(tmp_path: Path) -> None:
    shown: list[str] = []
    out = tmp_path / "labels.jsonl"
    empty = label_session(session_rows(), out, labeler="cy", keys=[], adjudicate=True,
                          write=shown.append)  # fmt: skip
    assert empty.labelled == 0 and shown[-1] == (
        "Nothing to adjudicate: no case has labels that disagree."
    )
    label_session(session_rows(), out, labeler="cy", keys=[], recheck=0.5, write=shown.append)
    assert shown[-2:] == ["Nothing to re-show: cy has labelled none of these cases yet.",
                          "no re-shown case yet: nothing to compare"]  # fmt: skip
