"""A jury through the command line: several judge models, the majority, calibration per juror."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

JURORS = """
def lenient(prompt):
    return "PASS\\nfine"

def strict(prompt):
    return "FAIL\\nnot fine"

def reader(prompt):
    return "FAIL\\nbad" if "bad" in prompt.split("<<<RESPONSE>>>")[1] else "PASS\\nok"
"""


def test_a_jury_of_three_scripted_judges_with_known_errors(tmp_path: Path) -> None:
    (tmp_path / "jurors.py").write_text(JURORS)
    # 6 good answers and 4 bad ones; the human labels say exactly that
    cases = [{"id": f"c{i}", "input": "q?", "output": "bad answer" if i < 4 else "good answer",
              "label": "FAIL" if i < 4 else "PASS"} for i in range(10)]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    run = [sys.executable, "-m", "tinyeval", "run", "cases.jsonl", "--criterion", "Is good.",
           "--judge-model", "py:jurors:lenient", "--judge-model", "py:jurors:strict",
           "--judge-model", "py:jurors:reader", "--no-cache", "--out", "rows.jsonl",
           "--review-out", "review.jsonl", "-q"]  # fmt: skip
    done = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    for row in rows:
        verdict = next(iter(row["judges"].values()))
        assert set(verdict["jurors"]) == {"py:jurors:lenient", "py:jurors:strict",
                                          "py:jurors:reader"}  # fmt: skip
        # the majority is the reader's verdict: lenient and strict always cancel out
        assert verdict["verdict"] == ("FAIL" if row["output"] == "bad answer" else "PASS")
        assert row["judge_model"].startswith("jury:")
    # every case is split (lenient and strict disagree), so every case goes to review
    assert len((tmp_path / "review.jsonl").read_text().splitlines()) == 10
    cal = subprocess.run([sys.executable, "-m", "tinyeval", "calibrate", "rows.jsonl",
                          "cases.jsonl", "--json"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert cal.returncode == 0, cal.stderr
    jurors = {j["juror"]: j for j in json.loads(cal.stdout)["jury"]["jurors"]}
    # by hand: lenient passes everything (catches 0 of 4 failures, 0 false alarms of 6),
    # strict fails everything (4 of 4, 6 of 6 false alarms), the reader is right every time
    assert jurors["py:jurors:lenient"]["failure_recall"]["successes"] == 0
    assert jurors["py:jurors:strict"]["false_alarm_rate"]["successes"] == 6
    assert jurors["py:jurors:reader"]["failure_recall"]["text"].startswith("4/4")

    # without labels, the jurors' error rates can be estimated from the verdicts alone
    estimate = subprocess.run([*run[:-1], "--dawid-skene", "--json"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert estimate.returncode == 0, estimate.stderr
    found = json.loads(estimate.stdout)["dawid_skene"]
    assert {j["juror"] for j in found["jurors"]} == {"py:jurors:lenient", "py:jurors:strict",
                                                      "py:jurors:reader"}  # fmt: skip
