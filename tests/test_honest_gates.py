"""Honest gates, as a new user meets them: nothing checked never passes, incomplete results
never gate, a results file is not a cases file, an undecided gate says what it needs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from child import run_tinyeval

ROOT = Path(__file__).resolve().parent.parent


def tinyeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tinyeval(args, cwd, timeout=120)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_file_nothing_checks_exits_1_naming_the_unchecked_cases(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "c.jsonl", [{"id": "a", "output": "anything"}, {"id": "b", "output": "x"}]
    )
    done = tinyeval("run", "c.jsonl", "--default-threshold", "1.0", cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert "2 cases had nothing to check them" in done.stdout and "a, b" in done.stdout
    assert "BLOCKS (2 cases had nothing to check them)" in done.stdout
    allowed = tinyeval("run", "c.jsonl", "--default-threshold", "1.0", "--allow-unchecked",
                       "--json", cwd=tmp_path)  # fmt: skip
    gate = json.loads(allowed.stdout)["gate"]["categories"]["default"]
    # still never a pass: 0 of 2 passed, so a 100% threshold blocks on the rate itself
    assert allowed.returncode == 1 and (gate["passed"], gate["unchecked"]) == (0, 2)


def test_the_raw_logs_example_no_longer_reports_a_rate_it_did_not_check() -> None:
    done = tinyeval("run", "examples/raw-logs.jsonl", "--field", "id=request_id",
                    "--field", "input=request.messages.0.content", "--field",
                    "output=response.text", "--field", "category=tags.feature", "--out",
                    os.devnull, "--json", cwd=ROOT)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    overall = json.loads(done.stdout)["gate"]["overall"]
    assert overall["passed"] == 0 and overall["unchecked"] == overall["total"] > 0


@pytest.fixture
def thirty(tmp_path: Path) -> Path:
    records = [{"id": f"c{i:02d}", "category": "a" if i < 15 else "b", "output": "ok",
                "expect": {"contains": ["ok"]}} for i in range(30)]  # fmt: skip
    write_jsonl(tmp_path / "cases.jsonl", records)
    done = tinyeval("run", "cases.jsonl", "--out", "rows.jsonl", "--default-threshold", "0.5",
                    "-q", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_gate_on_an_interrupted_run_is_incomplete_and_exits_3(thirty: Path) -> None:
    rows = (thirty / "rows.jsonl").read_text().splitlines()
    (thirty / "partial.jsonl").write_text("\n".join(rows[:20]) + "\n")
    done = tinyeval("gate", "partial.jsonl", cwd=thirty)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "gate: INCOMPLETE — 20 of 30 cases" in done.stdout
    # the run's own thresholds were remembered: nothing was given again
    assert "gate settings from the results" in done.stdout
    report = tinyeval("report", "partial.jsonl", "--json", cwd=thirty)
    assert report.returncode == 3
    assert json.loads(report.stdout)["gate"]["outcome"] == "incomplete"


def test_merge_of_two_of_three_shards_is_refused_unless_partial(thirty: Path) -> None:
    for i in (1, 2, 3):
        done = tinyeval("run", "cases.jsonl", "--shard", f"{i}/3", "--out", f"s{i}.jsonl", "-q",
                        cwd=thirty)  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
    refused = tinyeval("merge", "s1.jsonl", "s2.jsonl", "--out", "m.jsonl", cwd=thirty)
    assert refused.returncode == 3 and "missing 1 shard: 3/3" in refused.stderr
    assert not (thirty / "m.jsonl").exists()
    partial = tinyeval("merge", "s1.jsonl", "s2.jsonl", "--out", "m.jsonl", "--allow-partial",
                       cwd=thirty)  # fmt: skip
    assert partial.returncode == 3 and "incomplete" in partial.stdout
    assert tinyeval("gate", "m.jsonl", cwd=thirty).returncode == 3
    whole = tinyeval("merge", "s1.jsonl", "s2.jsonl", "s3.jsonl", "--out", "all.jsonl",
                     cwd=thirty)  # fmt: skip
    assert whole.returncode == 0 and tinyeval("gate", "all.jsonl", cwd=thirty).returncode == 0


def test_a_results_file_is_not_a_cases_file_and_rejudge_generates_nothing(thirty: Path) -> None:
    done = tinyeval("run", "rows.jsonl", cwd=thirty)
    assert done.returncode == 2
    assert "looks like a results file written by tinyeval run" in done.stderr
    assert "--rejudge" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    # the outputs recorded in rows.jsonl, judged again with the expect blocks of the cases;
    # the cases file itself has no outputs, and no generate model is given
    bare = [{"id": f"c{i:02d}", "category": "a" if i < 15 else "b",
             "expect": {"contains": ["ok"]}} for i in range(30)]  # fmt: skip
    write_jsonl(thirty / "bare.jsonl", bare)
    again = tinyeval("run", "bare.jsonl", "--rejudge", "rows.jsonl", "--only", "c01,c02",
                     "--out", "again.jsonl", "--json", cwd=thirty)  # fmt: skip
    assert again.returncode == 0, again.stderr
    rows = [json.loads(line) for line in (thirty / "again.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["c01", "c02"]
    assert all(r["status"] == "pass" and "generate_model" not in r for r in rows)


def test_13_of_13_under_80_percent_is_inconclusive_and_says_how_many_more(tmp_path: Path) -> None:
    records = [{"id": f"t{i}", "output": "ok", "expect": {"contains": ["ok"]}} for i in range(13)]
    write_jsonl(tmp_path / "c.jsonl", records)
    done = tinyeval("run", "c.jsonl", "--default-threshold", "0.8", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # let through by default, and said
    category = json.loads(done.stdout)["gate"]["categories"]["default"]
    # at a rate of 1 the Wilson lower bound is N / (N + z²) >= 0.8 once N >= 4 z² = 15.37
    assert (category["outcome"], category["more_cases_needed"]) == ("inconclusive", 3)
    strict = tinyeval("run", "c.jsonl", "--default-threshold", "0.8", "--inconclusive", "block",
                      cwd=tmp_path)  # fmt: skip
    assert strict.returncode == 1 and "inconclusive — about 3 more cases needed" in strict.stdout


def test_quiet_prints_only_the_gate_line_when_it_fails(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "output": "x", "expect": {"contains": ["y"]}}])
    done = tinyeval("run", "c.jsonl", "--default-threshold", "1.0", "-q", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "gate: FAILED — blocking: default (1 of 1 gated)\n"
    # the bundled example: no table, once or twice; with its suite file the gate fails
    cases = str(ROOT / "examples" / "cases.jsonl")
    done = tinyeval("run", cases, "-q", "--out", "a.jsonl", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    suite = str(ROOT / "examples" / "tinyeval.toml")
    done = tinyeval("run", "--config", suite, "-q", "--out", "b.jsonl", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "gate: FAILED — blocking: amount_extraction (1 of 4 gated)\n"


def test_a_misspelt_expect_key_names_its_field_once(tmp_path: Path) -> None:
    case = {"id": "a", "output": "x", "expect": {"not_contain": ["y"]}}
    write_jsonl(tmp_path / "c.jsonl", [case])
    done = tinyeval("run", "c.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("tinyeval: error: c.jsonl:1: expect.not_contain: unknown key "
                                   "'not_contain'; did you mean 'not_contains'?")  # fmt: skip
