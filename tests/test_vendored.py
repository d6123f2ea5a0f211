"""A copy of tinyeval/ with every subpackage deleted still does the design card's whole job.

The copy lives in a temporary project as ``vendored/tinyeval`` and is imported from there, as a
repository that vendors it would; what needs a deleted extra says so in one line, exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tinyeval

PACKAGE = Path(tinyeval.__file__).parent


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    copy = root / "vendored" / "tinyeval"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for sub in copy.iterdir():
        if sub.is_dir() and sub.name != "cli":
            shutil.rmtree(sub)
    cases = [
        {"id": "a1", "category": "amounts", "output": '{"cents": 125050}',
         "expect": {"valid_json": True, "equals": {"cents": 125050}}},
        {"id": "a2", "category": "amounts", "output": '{"cents": 1250}',
         "expect": {"equals": {"cents": 125050}}},
        {"id": "t1", "category": "tone", "output": "Claro, te ayudo.",
         "expect": {"not_contains": ["idiota"]}},
    ]  # fmt: skip
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    tools = {
        "id": "x",
        "output": "ok",
        "tool_calls": ["pay"],
        "expect": {"tools_required": ["pay"]},
    }
    (root / "tools.jsonl").write_text(json.dumps(tools) + "\n")
    return root


def _python(project: Path, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(project / "vendored")}
    # -S: no site-packages, so no installed tinyeval can stand in for what the copy lacks
    return subprocess.run(
        [sys.executable, "-S", *args], cwd=project, capture_output=True, text=True, env=env,
        check=check, timeout=120,
    )  # fmt: skip


def test_the_copy_has_no_subpackage(project: Path) -> None:
    copy = project / "vendored" / "tinyeval"
    assert sorted(p.name for p in copy.iterdir() if p.is_dir()) == ["cli"]


def test_the_library_works_from_the_copy(project: Path) -> None:
    home = str(project / "vendored" / "tinyeval")
    code = f"import tinyeval\nassert tinyeval.__file__.startswith({home!r}), tinyeval.__file__\n"
    code += """
cases = tinyeval.load("cases.jsonl")
assert [c.id for c in cases] == ["a1", "a2", "t1"]
print(tinyeval.run_checks(cases[0].output, tinyeval.checks_from_expect(cases[0].expect)))
judge = tinyeval.Judge("The reply is polite.")
verdict = judge(lambda prompt: "PASS\\nIt is polite.", response=cases[2].output)
print(verdict.verdict)
result = tinyeval.run(cases, judges=[judge], judge_model=lambda prompt: "PASS\\nfine",
                      judge_categories=["tone"])
print(sorted((r["id"], r["status"]) for r in result.rows))
report = tinyeval.gate(result.categories, {"amounts": 1.0, "tone": 0.5})
print(report.passed, {v.category: v.outcome for v in report.categories}["amounts"])
cal = tinyeval.calibrate(["PASS", "FAIL", "PASS", "FAIL"], ["PASS", "FAIL", "FAIL", "FAIL"])
print(cal.n, round(cal.agreement.value, 2))
low, high = tinyeval.wilson_interval(27, 30)
print(f"{low:.3f} {high:.3f}", tinyeval.sample_size(0.90, 0.85))
"""
    done = _python(project, "-c", code)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "{'valid_json': True, 'equals:cents': True}"
    assert lines[1] == "PASS"
    assert lines[2] == "[('a1', 'pass'), ('a2', 'fail'), ('t1', 'pass')]"
    assert lines[3].split() == ["False", "block"]
    assert lines[4] == "4 0.75"
    assert lines[5] == "0.744 0.965 686"


def test_the_command_line_gates_per_category_from_the_copy(project: Path) -> None:
    args = ["-m", "tinyeval", "run", "cases.jsonl", "--out", "rows.jsonl"]
    blocked = _python(project, *args, "--threshold", "amounts=1.0", "--threshold", "tone=0.5")
    assert blocked.returncode == 1, blocked.stderr
    assert "amounts" in blocked.stdout and "Traceback" not in blocked.stderr
    passed = _python(project, *args, "--threshold", "tone=0.5")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    gate = _python(project, "-m", "tinyeval", "gate", "rows.jsonl", "--threshold", "tone=0.5")
    assert gate.returncode == 0, gate.stdout + gate.stderr


def test_what_needs_a_deleted_extra_says_so_in_one_line(project: Path) -> None:
    done = _python(project, "-m", "tinyeval", "run", "tools.jsonl", "--out", "tools-rows.jsonl")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert (
        "tools_required" in lines[0] and "needs tinyeval/agents/, which this copy lacks" in lines[0]
    )
    assert not (project / "tools-rows.jsonl").exists()


def test_a_dry_run_in_the_copy_names_the_cost_planner_it_lacks(project: Path) -> None:
    done = _python(project, "-m", "tinyeval", "run", "cases.jsonl", "--dry-run")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "tinyeval: error: a dry run needs tinyeval/scale/, which this copy lacks"
    ]
