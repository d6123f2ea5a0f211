"""The gate decides a judged category on what people would say (``run --labels``).

A judge (a ``py:`` model) passes 87% of 750 summaries; people pass 32% of them. With 100
random labels the gate blocks at 50%, decided on people; without labels it passes, and every
report says the judge is not calibrated.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

from child import run_tinyeval

ROOT = Path(__file__).resolve().parents[2]
N, PEOPLE_PASS, JUDGE_PASS = 750, 240, 653  # 32% and 87% of 750

JUDGE = """
def judge(prompt):
    return "PASS\\nfaithful" if "[judge:PASS]" in prompt else "FAIL\\nunfaithful"
"""


def _suite(tmp_path: Path) -> dict[str, bool]:
    """Writes the cases, the judge and 100 random labels; returns what people say of each id."""
    (tmp_path / "fakejudge.py").write_text(JUDGE, encoding="utf-8")
    people = {f"s{i:03d}": i < PEOPLE_PASS for i in range(N)}
    with (tmp_path / "cases.jsonl").open("w", encoding="utf-8") as f:
        for i, key in enumerate(people):
            said = "PASS" if i < JUDGE_PASS else "FAIL"  # every people-PASS is a judge-PASS
            case = {"id": key, "category": "summaries", "output": f"Summary {i}. [judge:{said}]"}
            f.write(json.dumps(case) + "\n")
    chosen = random.Random(7).sample(sorted(people), 100)
    with (tmp_path / "labels.jsonl").open("w", encoding="utf-8") as f:
        for key in chosen:
            label = "PASS" if people[key] else "FAIL"
            f.write(json.dumps({"id": key, "label": label, "labeler": "ana"}) + "\n")
    return people


def _tinyeval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tinyeval(args, tmp_path, path=[tmp_path], timeout=120)


RUN = (
    "run",
    "cases.jsonl",
    "--criterion",
    "The summary states only what the source says.",
    "--judge-model",
    "py:fakejudge:judge",
    "--no-cache",
    "--concurrency",
    "8",
    "--threshold",
    "summaries=0.5",
)


def test_labels_make_the_gate_decide_on_people(tmp_path: Path) -> None:
    _suite(tmp_path)
    done = _tinyeval(tmp_path, *RUN, "--labels", "labels.jsonl", "--json", "--out", "a.jsonl")
    assert done.returncode == 1, done.stderr
    verdict = json.loads(done.stdout)["gate"]["categories"]["summaries"]
    assert verdict["rate"] == JUDGE_PASS / N  # the judge's own rate is still reported
    assert verdict["decided_on"] == "people"
    estimate = verdict["estimate"]
    assert (estimate["method"], estimate["labels"]) == ("ppi", 100)
    assert estimate["low"] <= PEOPLE_PASS / N <= estimate["high"] < 0.5
    assert verdict["outcome"] == "block" and verdict["blocking"]

    text = _tinyeval(tmp_path, "gate", "a.jsonl")  # the results remember the labels
    assert text.returncode == 1, text.stderr
    line = next(x for x in text.stdout.splitlines() if x.startswith("summaries: judge"))
    assert line.startswith("summaries: judge 87.1% [84.5%, 89.3%] · people ≈ ")
    assert "(PPI++, 100 labels) · threshold 50.0% · BLOCKS" in line


def test_without_labels_the_gate_passes_and_every_report_says_judge_not_calibrated(
    tmp_path: Path,
) -> None:
    _suite(tmp_path)
    reports = ("--markdown", "gate.md", "--junit", "junit.xml", "--html", "gate.html")
    done = _tinyeval(tmp_path, *RUN, "--out", "b.jsonl", *reports)
    assert done.returncode == 0, done.stderr
    assert "ok (judge not calibrated)" in done.stdout
    assert "summaries: judge 87.1% [84.5%, 89.3%] · judge not calibrated" in done.stdout
    for report in ("gate.md", "junit.xml", "gate.html"):
        assert "judge not calibrated" in (tmp_path / report).read_text(encoding="utf-8"), report
    summary = json.loads(_tinyeval(tmp_path, "gate", "b.jsonl", "--json").stdout)
    verdict = summary["gate"]["categories"]["summaries"]
    assert verdict["decided_on"] == "judge" and verdict["outcome"] == "pass"
    assert verdict["estimate"]["how"] == "judge not calibrated"


def test_a_saved_calibration_gates_on_the_corrected_rate(tmp_path: Path) -> None:
    _suite(tmp_path)
    assert _tinyeval(tmp_path, *RUN, "--out", "c.jsonl").returncode == 0
    saved = _tinyeval(tmp_path, "calibrate", "c.jsonl", "labels.jsonl", "--save", "cal.json")
    assert saved.returncode == 0, saved.stderr
    done = _tinyeval(tmp_path, "gate", "c.jsonl", "--calibration", "cal.json", "--json")
    verdict = json.loads(done.stdout)["gate"]["categories"]["summaries"]
    assert (verdict["decided_on"], verdict["estimate"]["method"]) == ("people", "rogan-gladen")
    assert verdict["estimate"]["low"] <= PEOPLE_PASS / N <= verdict["estimate"]["high"]


SUITE = """
cases = "cases.jsonl"
labels = "labels.jsonl"
min_kappa = 0.6

[thresholds]
summaries = 0.2

[[judges]]
criterion = "The summary states only what the source says."

[models.judge]
spec = "py:fakejudge:judge"
"""


def test_a_judge_below_the_least_kappa_is_not_trusted(tmp_path: Path) -> None:
    _suite(tmp_path)
    (tmp_path / "tinyeval.toml").write_text(SUITE, encoding="utf-8")
    done = _tinyeval(tmp_path, "run", "--no-cache", "--out", "d.jsonl")
    assert done.returncode == 0, done.stderr  # people ≈ 32% clears 20%, but not on this judge
    line = next(x for x in done.stdout.splitlines() if x.startswith("summaries  "))
    assert "judge not trusted: " in line and "< 0.6 (let through;" in line
    strict = _tinyeval(tmp_path, "gate", "d.jsonl", "--inconclusive", "block", "--json")
    assert strict.returncode == 1
    verdict = json.loads(strict.stdout)["gate"]["categories"]["summaries"]
    assert verdict["outcome"] == "judge not trusted" and verdict["blocking"]
    assert "kappa" in verdict["note"]


def test_label_strategy_gate_records_the_chances_the_estimate_reweights(tmp_path: Path) -> None:
    _suite(tmp_path)
    assert _tinyeval(tmp_path, *RUN, "--out", "e.jsonl").returncode == 0
    label = [
        "label",
        "e.jsonl",
        "--out",
        "picked.jsonl",
        "--budget",
        "60",
        "--pilot",
        "labels.jsonl",
        "--strategy",
        "gate",
        "--labeler",
        "ana",
        "--break-every",
        "0",
    ]
    session = run_tinyeval(label, tmp_path, stdin="p\n" * 200, timeout=120)
    assert session.returncode == 0, session.stderr
    records = [json.loads(x) for x in (tmp_path / "picked.jsonl").read_text().splitlines()]
    assert records and all(r["selection"]["strategy"] == "gate" for r in records)
    assert all(0 < r["selection"]["probability"] <= 1 for r in records)
    # the pilot shows people split the judge's PASSes and agree with its FAILs: PASSes get more
    chance = {int(r["id"][1:]) < JUDGE_PASS: r["selection"]["probability"] for r in records}
    assert chance[True] > 1.5 * chance[False]
    done = _tinyeval(tmp_path, "gate", "e.jsonl", "--labels", "picked.jsonl", "--json")
    estimate = json.loads(done.stdout)["gate"]["categories"]["summaries"]["estimate"]
    assert estimate["labels"] == len(records) and "weighted" in estimate["how"]


def test_labels_need_rows_written_to_a_file(tmp_path: Path) -> None:
    _suite(tmp_path)
    done = _tinyeval(tmp_path, *RUN, "--labels", "labels.jsonl", "--out", os.devnull)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().endswith(
        "out: the labels and the calibration read the rows back: it must be a file"
    )


def test_stop_when_decided_never_stops_a_category_people_decide(tmp_path: Path) -> None:
    _suite(tmp_path)
    early = _tinyeval(tmp_path, *RUN, "--stop-when-decided", "--json", "--out", "early.jsonl")
    # on the judge's rate alone (87% against 50%) the sequence passes it after a few cases
    assert early.returncode == 0, early.stderr
    assert json.loads(early.stdout)["stop_when_decided"]["summaries"]["outcome"] == "pass"
    assert len((tmp_path / "early.jsonl").read_text().splitlines()) < 100
    # with labels the gate decides on people (32%): the sequence of the judge's rate would
    # have passed a category people block, so it is not applied and every case runs
    done = _tinyeval(tmp_path, *RUN, "--stop-when-decided", "--labels", "labels.jsonl",
                     "--out", "all.jsonl")  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == N
    said = "  summaries: not stopped: the gate decides on people's estimate, not on the judge's "
    assert said + "rate; every case ran" in done.stdout.splitlines()
    assert "BLOCKS (" in done.stdout and "people ≈ " in done.stdout
