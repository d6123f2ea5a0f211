"""The example GitHub workflow, copied into a repository: its install and run steps execute,
in a fresh virtual environment, from ``tinyeval init`` to an annotated, failing job."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "github" / "tinyeval.yml"


def steps() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    job = workflow["jobs"]["eval"]
    return {"env": workflow["env"], **{s["name"]: s for s in job["steps"] if "name" in s}}


def run_step(
    step: dict[str, Any], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """A step's script as GitHub runs a bash step, then the variables it set for later steps."""
    assert step.get("shell") == "bash"
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    for line in Path(env["GITHUB_ENV"]).read_text(encoding="utf-8").splitlines():
        name, _, value = line.partition("=")
        env[name] = value
    return done


@pytest.fixture
def repository(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A repository with tinyeval vendored under vendor/, its suite in evals/, and the job's
    environment: a fresh virtual environment without tinyeval, and GitHub's files."""
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "tinyeval", repo / "vendor" / "tinyeval", ignore=ignore)
    (repo / "evals").mkdir()
    cases = '{"id": "ok", "output": "hola"}\n{"id": "long", "output": "hola que tal"}\n'
    (repo / "evals" / "cases.jsonl").write_text(cases.replace("}", ', "expect": {"max_words": 1}}'))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GITHUB_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env.update({k: str(v) for k, v in steps()["env"].items()})
    env.update(TINYEVAL_FROM="vendor", SUITE_DIR="evals", GITHUB_WORKSPACE=str(repo))
    env.update(GITHUB_ENV=str(tmp_path / "github_env"), GITHUB_ACTIONS="true")
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "summary.md")
    Path(env["GITHUB_ENV"]).touch()
    return repo, env


@pytest.mark.skipif(os.name != "posix", reason="the workflow's steps are bash scripts")
def test_the_copied_workflow_installs_inits_runs_and_annotates(
    repository: tuple[Path, dict[str, str]],
) -> None:
    repo, env = repository
    found = subprocess.run(
        ["python", "-c", "import tinyeval"], cwd=repo, env=env, capture_output=True
    )
    assert found.returncode == 1  # the job's Python has no tinyeval until the install step
    installed = run_step(steps()["Install tinyeval"], env, repo)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    init = subprocess.run(["python", "-m", "tinyeval", "init"], cwd=repo / "evals", env=env)
    assert init.returncode == 0
    done = run_step(steps()["Evaluate"], env, repo)
    assert done.returncode == 1, done.stdout + done.stderr  # 1/2 under the starter's 80%
    assert "default   1/2 = 50.0%" in done.stdout
    # the annotation's path is the repository's, though the job ran in evals/
    assert "::error file=evals/cases.jsonl,line=2," in done.stdout, done.stdout
    assert (repo / "evals" / "tinyeval-junit.xml").exists()
    assert "1/2" in Path(env["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")


def test_the_workflow_installs_no_package_name_from_a_registry() -> None:
    install = steps()["Install tinyeval"]["run"]
    assert "pip install tinyeval" not in WORKFLOW.read_text(encoding="utf-8")
    assert 'pip install "$TINYEVAL_FROM"' in install  # a folder of the repository


@pytest.mark.skipif(os.name != "posix", reason="the workflow's steps are bash scripts")
def test_a_wrong_source_folder_is_one_error_line(repository: tuple[Path, dict[str, str]]) -> None:
    repo, env = repository
    env["TINYEVAL_FROM"] = "nowhere"
    done = run_step(steps()["Install tinyeval"], env, repo)
    assert done.returncode == 2
    assert done.stdout.startswith("::error::TINYEVAL_FROM=nowhere holds neither")
