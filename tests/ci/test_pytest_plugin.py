"""The pytest plugin, run as a user runs it: pytest in a subprocess, on a copy of the scene.

The scene is the background articles' own: 12/12 refusal, 38/40 tone and 17/20 amount
extraction under thresholds 100% / 85% / 100%. The global 67/72 is above every threshold
but one, and the amount category blocks: pytest must exit 1. The figures are the scene's
definition (``examples/pytest/cases.jsonl`` was written to it), not the plugin's output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENE = ROOT / "examples" / "pytest"


@pytest.fixture
def scene(tmp_path: Path) -> Path:
    copy = tmp_path / "scene"
    shutil.copytree(SCENE, copy)
    return copy


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tinyeval.ci.pytest_plugin", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def fix_amounts(folder: Path) -> None:
    """Make every amount case's output the amount it expects."""
    path = folder / "cases.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row["category"] == "amount_extraction":
            row["output"] = json.dumps(row["expect"]["equals"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_the_scene_exits_1_with_the_table(scene: Path) -> None:
    done = pytest_in(scene, "--tinyeval", "-q")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    table = out[out.index("tinyeval gate") :]
    lines: dict[str, str] = {}
    for line in table.splitlines():
        if line.strip():
            lines.setdefault(line.split()[0], line)  # the table's row, not a failing case's
    assert "17/20 = 85.0% [64.0%, 94.8%]" in lines["amount_extraction"]
    assert "BLOCKS" in lines["amount_extraction"]
    assert "12/12 = 100.0%" in lines["refusal"] and lines["refusal"].endswith("ok")
    # 38/40 [83.5%, 98.6%] meets 85% but its interval reaches below: let through, and said
    assert "38/40 = 95.0%" in lines["tone"] and lines["tone"].endswith("(let through)")
    assert "inconclusive — about 9 more cases needed" in lines["tone"]
    assert "67/72 = 93.1%" in lines["global"]
    assert "gate: FAILED — blocking: amount_extraction" in table
    # the three amount failures are failures; the two tone failures are tolerated (xfail)
    assert "3 failed, 67 passed, 2 xfailed" in out
    # a failed case's message shows the failing check with what it got
    assert "failed check equals:amount_cents: got 300, expected 300000" in out


def test_the_fixed_scene_exits_0(scene: Path) -> None:
    fix_amounts(scene)
    done = pytest_in(scene, "--tinyeval", "-q", "-rx")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "70 passed, 2 xfailed" in done.stdout
    assert "gate: PASSED" in done.stdout
    assert "failed within tolerance: category tone" in done.stdout  # -rx shows why


def test_k_selects_one_case_and_gates_only_its_category(scene: Path) -> None:
    done = pytest_in(scene, "--tinyeval", "-q", "-k", "amt-001")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 71 deselected" in done.stdout
    assert "a selection: 1 of 72 cases" in done.stdout
    one = pytest_in(scene, "--tinyeval", "-q", "-k", "amt-005")
    assert one.returncode == 1 and "1 failed, 71 deselected" in one.stdout


def test_k_selects_a_category_and_last_failed_reruns_the_failures(scene: Path) -> None:
    done = pytest_in(scene, "--tinyeval", "-q", "-k", "amount_extraction")
    assert done.returncode == 1 and "3 failed, 17 passed, 52 deselected" in done.stdout
    again = pytest_in(scene, "--tinyeval", "-q", "--lf")
    assert "3 failed, 69 deselected" in again.stdout, again.stdout


def test_stopping_early_is_incomplete(scene: Path) -> None:
    done = pytest_in(scene, "--tinyeval", "-q", "-x")
    assert done.returncode == 1
    assert "gate: INCOMPLETE — 57 of 72 cases" in done.stdout


def test_inert_without_a_suite(scene: Path) -> None:
    done = pytest_in(scene, "-q")
    assert done.returncode == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "tinyeval gate" not in done.stdout


def test_the_ini_option_turns_it_on(scene: Path) -> None:
    (scene / "pytest.ini").write_text("[pytest]\ntinyeval_suite = tinyeval.toml\n")
    done = pytest_in(scene, "-q")
    assert done.returncode == 1 and "BLOCKS" in done.stdout


def test_a_category_can_block_with_every_item_green(tmp_path: Path) -> None:
    # 12/12 has a Wilson lower bound of 75.8%: under a 90% threshold gated on the lower
    # bound, the category blocks although every case passes
    cases = [
        {"id": f"r{i}", "category": "refusal", "output": "¿Cuánto?", "expect": {"regex": r"\?"}}
        for i in range(12)
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "tinyeval.toml").write_text(
        'cases = "cases.jsonl"\n[thresholds]\nrefusal = 0.9\n[gate]\ninconclusive = "block"\n'
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = pytest_in(tmp_path, "--tinyeval", "-q")
    assert done.returncode == 1, done.stdout
    assert "12 passed" in done.stdout and "inconclusive — about" in done.stdout
    assert "(BLOCKS)" in done.stdout


def test_a_misspelt_suite_key_is_a_usage_error(scene: Path) -> None:
    (scene / "tinyeval.toml").write_text('cases = "cases.jsonl"\n[thresholds]\ntone = 0.85\n'
                                         '[gate]\ninconclusiv = "block"\n')  # fmt: skip
    done = pytest_in(scene, "--tinyeval=tinyeval.toml", "-q")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert (
        "tinyeval.toml:5: gate.inconclusiv: unknown key; did you mean 'inconclusive'?"
        in done.stderr
    )


def test_xdist_gates_on_the_controller(scene: Path) -> None:
    pytest.importorskip("xdist")
    done = pytest_in(scene, "--tinyeval", "-q", "-p", "xdist.plugin", "-n", "2")
    assert done.returncode == 1 and "67/72" in done.stdout


def test_the_row_travels_with_a_serialized_report() -> None:
    """pytest-xdist sends reports from workers through these hooks: the row must survive."""
    reports = pytest.importorskip("_pytest.reports")
    report = reports.TestReport("cases.jsonl::amt-005", ("cases.jsonl", 56, "case"), {},
                                "failed", None, "call", [])  # fmt: skip
    report.tinyeval_row = {"id": "amt-005", "status": "fail", "checks": {"valid_json": True}}
    data = reports.pytest_report_to_serializable(report)
    back = reports.pytest_report_from_serializable(json.loads(json.dumps(data)))
    assert back.tinyeval_row == report.tinyeval_row


@pytest.mark.parametrize("n", [0, 1, 12, 40, 100])
@pytest.mark.parametrize("threshold", [0.5, 0.85, 0.9, 1.0])
@pytest.mark.parametrize("policy", ["pass", "block"])
def test_allowed_failures_is_the_gate_rule(n: int, threshold: float, policy: str) -> None:
    from tinyeval.ci.pytest_plugin import allowed_failures
    from tinyeval.gating import gate

    allowed = allowed_failures(n, threshold, inconclusive=policy)
    assert allowed is not None
    for failures in range(n + 1):
        tally = {"c": {"passed": n - failures, "total": n}}
        passes = gate(tally, {"c": threshold}, inconclusive=policy).passed
        assert passes == (failures <= allowed)
