"""Repeated trials through the command line: one row per trial, the case as the unit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

GENERATOR = """
import zlib

def generate(prompt, *, sample=0):
    group = zlib.crc32(prompt.encode()) % 10
    if group < 8:
        return "right"  # 80%: always right
    if group == 8:
        return "wrong"  # 10%: always wrong
    return "right" if sample % 2 == 0 else "wrong"  # 10%: right in trials 0, 2 and 4 of 5
"""


def test_five_trials_find_the_flaky_cases_and_gate_on_the_case(tmp_path: Path) -> None:
    (tmp_path / "gen.py").write_text(GENERATOR)
    cases = [{"id": f"c{i:02d}", "input": f"question {i}", "expect": {"contains": ["right"]}}
             for i in range(60)]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    groups = {c["id"]: zlib.crc32(c["input"].encode()) % 10 for c in cases}
    steady = [i for i, g in groups.items() if g < 8]
    half = sorted(i for i, g in groups.items() if g == 9)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    command = [sys.executable, "-m", "tinyeval", "run", "cases.jsonl", "--generate-model",
               "py:gen:generate", "--trials", "5", "--no-cache", "--json",
               "--out", "rows.jsonl"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "rows.jsonl").read_text().splitlines()
    assert len(rows) == 5 * 60  # one row per trial
    summary = json.loads(done.stdout)
    trials = summary["trials"]["categories"]["default"]
    assert trials["flaky"] == half
    # by hand: pass^5 counts the always-right cases; pass@1 is the mean over all 300 trials
    assert abs(trials["pass_all_k"]["value"] - len(steady) / 60) < 1e-12
    assert abs(trials["pass_rate"]["value"] - (5 * len(steady) + 3 * len(half)) / 300) < 1e-12
    # the honest interval (case as the unit) is wider than trials taken as independent draws
    honest = trials["pass_rate"]["high"] - trials["pass_rate"]["low"]
    naive = trials["naive"]["high"] - trials["naive"]["low"]
    assert honest > naive
    # the gate counts cases: a case passes when all five of its trials pass
    gate = summary["gate"]["categories"]["default"]
    assert (gate["passed"], gate["total"]) == (len(steady), 60)


def test_stop_when_decided_stops_both_categories_early_with_the_right_outcome(
    tmp_path: Path,
) -> None:
    cases = [{"id": f"a{i:03d}", "category": "good", "output": "ok",
              "expect": {"contains": ["ok"]}} for i in range(300)]  # fmt: skip
    cases += [{"id": f"b{i:03d}", "category": "bad", "output": "ok" if i % 2 else "no",
               "expect": {"contains": ["ok"]}} for i in range(300)]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", "cases.jsonl", "--default-threshold", "0.8",
         "--stop-when-decided", "--json", "--out", "rows.jsonl"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    decided = summary["stop_when_decided"]
    assert decided["good"]["outcome"] == "pass" and decided["bad"]["outcome"] == "block"
    rows = (tmp_path / "rows.jsonl").read_text().splitlines()
    assert len(rows) < 200  # far fewer than the 600 cases
    assert summary["gate"]["blocking"] == ["bad"]
    # a results file of a run meant to stop early is not "incomplete" when gated later
    gate = subprocess.run([sys.executable, "-m", "tinyeval", "gate", "rows.jsonl"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert gate.returncode == 1 and "INCOMPLETE" not in gate.stdout


PRICED = """
from tinyeval.models import Reply

def generate(prompt):
    return Reply("answer", usage={"input_tokens": 100_000, "output_tokens": 0})
"""


def test_max_cost_stops_within_one_in_flight_window_of_the_cap(tmp_path: Path) -> None:
    (tmp_path / "priced.py").write_text(PRICED)
    cases = [{"id": f"c{i:03d}", "input": f"q{i}", "expect": {"contains": ["answer"]}}
             for i in range(200)]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", "cases.jsonl", "--generate-model",
         "py:priced:generate", "--price", "in=1,out=1", "--max-cost", "1", "--concurrency", "4",
         "--no-cache", "--out", "rows.jsonl", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "the spend cap of $1.00 was reached" in done.stderr and "--resume" in done.stderr
    rows = len((tmp_path / "rows.jsonl").read_text().splitlines())
    # each call costs $0.10: the cap is reached at 10 calls; at most one window (2 × 4 + 2
    # cases) more were already on their way
    assert 10 <= rows <= 10 + 10


def test_a_dry_run_counts_the_real_prompts_and_calls_nothing(tmp_path: Path) -> None:
    (tmp_path / "spy.py").write_text(
        "import pathlib\n"
        "def judge(prompt):\n"
        "    pathlib.Path('called').write_text('yes')\n"
        "    return 'PASS'\n"
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", str(ROOT / "examples" / "cases.jsonl"),
         "--criterion", "unsupported-claims", "--judge-category", "support_answers",
         "--judge-model", "py:spy:judge", "--votes", "3", "--dry-run", "--json",
         "--price", "in=1,out=5", "--out", "rows.jsonl"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    support = [json.loads(line) for line in (ROOT / "examples" / "cases.jsonl").read_text()
               .splitlines() if '"support_answers"' in line]  # fmt: skip
    # every support answer with a context reaches the judge when its code checks pass: 3 votes
    assert plan["calls"]["judge"] % 3 == 0 and 0 < plan["calls"]["judge"] <= 3 * len(support)
    assert plan["calls"]["generate"] == 0 and plan["cost_usd"] > 0
    assert "<<<RESPONSE>>>" in plan["first_prompt"]["judge"]
    assert not (tmp_path / "called").exists() and not (tmp_path / "rows.jsonl").exists()


def test_a_trial_past_the_case_timeout_keeps_its_trial_number(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(
        "import time\n\ndef generate(prompt):\n"
        "    if 'slow' in prompt:\n        time.sleep(5)\n    return 'ok'\n"
    )
    cases = [{"id": name, "input": name, "expect": {"contains": ["ok"]}} for name in ("a", "slow")]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    command = [sys.executable, "-m", "tinyeval", "run", "cases.jsonl", "--generate-model",
               "py:slow:generate", "--trials", "2", "--case-timeout", "0.3", "--no-cache",
               "--out", "rows.jsonl", "-q"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    timed_out = sorted(r["trial"] for r in rows if r["id"] == "slow")
    assert timed_out == [0, 1]  # one row per (case, trial), each an error of the timeout
    assert all("per-case timeout" in r["error"] for r in rows if r["id"] == "slow")
    gate = subprocess.run([sys.executable, "-m", "tinyeval", "gate", "rows.jsonl"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert gate.returncode == 0, gate.stderr  # read back as two trials of one case
