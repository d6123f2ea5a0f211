"""Never a pass it did not earn, from a results file: edited rows, trials read as cases, merged
shards of different runs, ungated categories, a second run on one --out, a thread per case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyeval.cli import main
from tinyeval.dataset import Case
from tinyeval.runner import run

GENERATOR = """
import itertools
_count = itertools.count()
def alternate(prompt):
    return "ok" if next(_count) % 2 == 0 else "bad"
"""


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "gen_alternate.py").write_text(GENERATOR, encoding="utf-8")
    cases = [{"id": f"q{i}", "category": "a", "input": "say ok", "expect": {"contains": ["ok"]}}
             for i in range(4)]  # fmt: skip
    write_jsonl(tmp_path / "cases.jsonl", cases)
    return tmp_path


def test_an_edited_status_is_refused_naming_file_and_line(folder: Path, capsys) -> None:
    write_jsonl(folder / "c.jsonl", [{"id": "a", "output": "bad", "expect": {"contains": ["ok"]}}])
    assert main(["run", "c.jsonl", "--out", "r.jsonl", "--default-threshold", "1", "-q"]) == 1
    row = rows_of(folder / "r.jsonl")[0]
    write_jsonl(folder / "r.jsonl", [dict(row, status="pass")])
    capsys.readouterr()
    for command in (["gate", "r.jsonl"], ["report", "r.jsonl"], ["compare", "r.jsonl", "r.jsonl"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "r.jsonl:1: status: the row says 'pass'" in err and "say 'fail'" in err


def trials_run(*extra: str) -> int:
    return main(["run", "cases.jsonl", "--generate-model", "py:gen_alternate:alternate",
                 "--out", "t.jsonl", "--default-threshold", "0.5", "--concurrency", "1", "-q",
                 *extra])  # fmt: skip


def test_a_trials_file_is_gated_over_cases_and_resumed_only_with_its_trials(
    folder: Path, capsys
) -> None:
    assert trials_run("--trials", "2") == 1  # each case: trial 0 passes, trial 1 fails
    capsys.readouterr()
    assert main(["gate", "t.jsonl", "--json"]) == 1  # 0 of 4 cases, not 4 of 8 rows
    gate = json.loads(capsys.readouterr().out)["gate"]["categories"]["a"]
    assert (gate["passed"], gate["total"]) == (0, 4)
    assert main(["compare", "t.jsonl", "t.jsonl", "--json"]) == 0  # paired by case, not trial
    assert json.loads(capsys.readouterr().out)["overall"]["pairs"] == 4
    assert trials_run("--resume") == 2
    err = capsys.readouterr().err
    assert '{"trials": {"gate": "all", "k": 2}}' in err and "this run has {}" in err
    assert trials_run("--resume", "--trials", "2", "--trials-gate", "any") == 2
    rows = rows_of(folder / "t.jsonl")
    write_jsonl(folder / "t.jsonl", [*rows, rows[0]])
    assert main(["gate", "t.jsonl"]) == 2
    assert "the case 'q0' (trial 0) has a second row" in capsys.readouterr().err


def test_merge_refuses_shards_of_different_runs_and_takes_trial_rows(folder: Path, capsys) -> None:
    for i, threshold in ((1, "0.5"), (2, "0.1")):
        main(["run", "cases.jsonl", "--generate-model", "py:gen_alternate:alternate",
              "--shard", f"{i}/2", "--out", f"s{i}.jsonl", "--default-threshold", threshold,
              "-q"])  # fmt: skip
    capsys.readouterr()
    for order in (["s1.jsonl", "s2.jsonl"], ["s2.jsonl", "s1.jsonl"]):
        assert main(["merge", *order, "--out", "m.jsonl"]) == 2
        err = capsys.readouterr().err
        assert "the shards differ in gate default threshold" in err and "0.1" in err
    for i in (1, 2):
        main(["run", "cases.jsonl", "--generate-model", "py:gen_alternate:alternate", "--shard",
              f"{i}/2", "--out", f"s{i}.jsonl", "--trials", "2", "-q"])  # fmt: skip
    capsys.readouterr()
    assert main(["merge", "s1.jsonl", "s2.jsonl", "--out", "m.jsonl"]) == 0
    assert len(rows_of(folder / "m.jsonl")) == 8
    assert main(["merge", "s1.jsonl", "s1.jsonl", "s2.jsonl", "--out", "m2.jsonl"]) == 2


def test_a_category_no_threshold_names_is_said_ungated_and_strict_refuses_it(
    folder: Path, capsys
) -> None:
    write_jsonl(folder / "c.jsonl", [
        {"id": "a", "category": "extraccion_monto", "output": "ok", "expect": {"contains": ["ok"]}},
        {"id": "b", "category": "extraccion_mont", "output": "ok", "expect": {"contains": ["ok"]}},
    ])  # fmt: skip
    assert main(["run", "c.jsonl", "--threshold", "extraccion_monto=1.0", "--out", "r.jsonl"]) == 0
    assert "ungated: no threshold names it; did you mean 'extraccion_monto'?" in (
        capsys.readouterr().out
    )
    assert main(["gate", "r.jsonl", "--strict-categories"]) == 2
    assert "did you mean 'extraccion_monto'?" in capsys.readouterr().err
    (folder / "tinyeval.toml").write_text(
        'cases = "c.jsonl"\nstrict_categories = true\n[thresholds]\nextraccion_monto = 1.0\n'
    )
    assert main(["run", "--out", "r2.jsonl"]) == 2
    assert not (folder / "r2.jsonl").exists()  # refused before the run


def test_a_second_run_on_one_out_is_refused_and_a_stale_lock_taken_over(
    folder: Path, capsys
) -> None:
    lock = folder / ".r.jsonl.lock"
    lock.write_text(str(os.getpid()))  # a run alive now holds it
    write_jsonl(folder / "c.jsonl", [{"id": "a", "output": "ok", "expect": {"contains": ["ok"]}}])
    assert main(["run", "c.jsonl", "--out", "r.jsonl", "--resume"]) == 2
    assert f"another run (process {os.getpid()}) is writing it" in capsys.readouterr().err
    assert main(["run", "c.jsonl", "--out", "r.jsonl"]) == 2 and not (folder / "r.jsonl").exists()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    lock.write_text(gone.stdout.strip())  # a run that crashed
    assert main(["run", "c.jsonl", "--out", "r.jsonl", "--resume"]) == 0
    assert not lock.exists()


def test_never_more_threads_than_cases() -> None:
    before = threading.active_count()
    seen: list[int] = []

    def generate(prompt: str) -> str:
        seen.append(threading.active_count())
        return "ok"

    result = run([Case(id="a", input="x", expect={"contains": ["ok"]})], generate_model=generate,
                 concurrency=5000)  # fmt: skip
    assert result.rows[0]["status"] == "pass" and seen and max(seen) <= before + 1


def test_max_errors_crossed_on_the_last_case_says_every_case_ran(folder: Path, capsys) -> None:
    (folder / "boom.py").write_text("def gen(prompt):\n    raise RuntimeError('down')\n")
    assert main(["run", "cases.jsonl", "--generate-model", "py:boom:gen", "--max-errors", "3",
                 "--out", "e.jsonl", "--concurrency", "1", "-q"]) == 3  # fmt: skip
    err = capsys.readouterr().err
    assert "the run failed: more than 3 cases errored (on the last case: every case ran" in err
    assert "stopped early" not in err and "4 of 4" not in err
    assert main(["run", "cases.jsonl", "--generate-model", "py:boom:gen", "--max-errors", "1",
                 "--out", "e.jsonl", "--concurrency", "1", "-q"]) == 3  # fmt: skip
    assert "the run stopped early: more than 1 cases errored. Rows were kept for 2 of 4" in (
        capsys.readouterr().err
    )


# --- a property: gate never passes a file that is incomplete, mixed or inconsistent


def honest_rows(n: int, trials: int) -> list[dict]:
    observers = {"trials": {"k": trials, "gate": "all"}} if trials > 1 else {}
    manifest = {
        "cases": n,
        "shard": None,
        "gate": {"default_threshold": 0.0},
        "observers": observers,
    }
    rows = []
    for i in range(n):
        for t in range(trials):
            row = {"id": f"c{i}", "category": "x", "status": "pass", "checks": {"ok": True},
                   "judges": {}, "error": None, "run": manifest,
                   "dataset_fingerprint": "f"}  # fmt: skip
            rows.append(dict(row, trial=t) if trials > 1 else row)
    return rows


FAULTS = ("drop", "edit", "twice", "mixed_trial", "other_trials", "bad_trial")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(n=st.integers(1, 6), trials=st.integers(1, 3), faults=st.sets(st.sampled_from(FAULTS)),
       pick=st.integers(0, 100))  # fmt: skip
def test_gate_never_passes_an_incomplete_mixed_or_inconsistent_file(
    tmp_path: Path, capsys, n: int, trials: int, faults: set[str], pick: int
) -> None:
    rows = honest_rows(n, trials)
    if "drop" in faults:  # a case (or one of its trials) missing
        del rows[pick % len(rows)]
    at = pick % max(len(rows), 1)
    if not rows:
        faults = set()  # nothing left to corrupt: "no result rows" is exit 2
    if "edit" in faults:  # a failing check, its status edited to pass
        rows[at] = dict(rows[at], checks={"ok": False})
    if "twice" in faults:
        rows.append(dict(rows[at]))
    if "mixed_trial" in faults:  # a row with a trial in a run without trials, or the other way
        rows[at] = {k: v for k, v in rows[at].items() if k != "trial"} if trials > 1 else dict(
            rows[at], trial=1)  # fmt: skip
    if "other_trials" in faults:
        manifest = dict(rows[at]["run"], observers={"trials": {"k": trials + 1, "gate": "any"}})
        rows[at] = dict(rows[at], run=manifest)
    if "bad_trial" in faults:
        rows[at] = dict(rows[at], trial=trials + 5)
    path = write_jsonl(tmp_path / f"r{os.getpid()}-{pick}-{len(faults)}.jsonl", rows)
    code = main(["gate", str(path)])
    capsys.readouterr()
    if faults or not rows:
        assert code != 0, (faults, rows)
    else:
        assert code == 0
