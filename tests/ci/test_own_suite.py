"""The seeds' own suite, run as written: the team's YAML (``categoria``, ``fuente``, ``espera``
with their own keys), a suite file whose ``[expect]`` table says what those keys mean, and a
``py:`` system under test. The figures are the article's scene (17/20, 12/12, 38/40 under
100% / 100% / 85%): the system under test was written to it, not the report read back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "seeds-suite"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    copy = tmp_path / "pagos"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__", ".tinyeval"))
    return copy


def run_in(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, *argv], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )


def table_lines(text: str) -> dict[str, str]:
    lines: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            lines.setdefault(line.split()[0], line)
    return lines


def assert_scene(text: str) -> None:
    lines = table_lines(text)
    assert "17/20 = 85.0%" in lines["extraccion_monto"] and "BLOCKS" in lines["extraccion_monto"]
    assert "12/12 = 100.0%" in lines["rechazo"] and lines["rechazo"].endswith("ok")
    assert "38/40 = 95.0%" in lines["tono"]
    assert "67/72 = 93.1%" in lines["global"] and "never gates" in lines["global"]
    assert "gate: FAILED — blocking: extraccion_monto" in text
    # the team's keys name the failures, and the bug shows: 1.500 read as 1,5
    assert "transf-monto-punto-miles  monto_centavos: got 150, expected 150000" in text


def files_of(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_tinyeval_run_reproduces_the_scene_as_written(suite: Path) -> None:
    before = files_of(suite)
    done = run_in(suite, "-m", "tinyeval", "run")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "72 cases from evals/dataset.yaml" in done.stdout
    assert_scene(done.stdout)
    made = {p for p in files_of(suite) - before if "__pycache__" not in p}
    assert made == {"tinyeval-results.jsonl", ".tinyeval/cache.sqlite3"}  # nothing converted


def test_pytest_reproduces_the_scene_with_node_ids_in_the_yaml(suite: Path) -> None:
    done = run_in(suite, "-m", "pytest", "-p", "tinyeval.ci.pytest_plugin", "--tinyeval", "-q")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert_scene(out[out.index("tinyeval gate") :])
    assert "3 failed, 67 passed, 2 xfailed" in out
    assert "FAILED evals/dataset.yaml::transf-monto-punto-miles" in out
    # the failure points at the case in the team's own file, at its line
    assert "case transf-monto-punto-miles (extraccion_monto, evals/dataset.yaml:11)" in out


def test_an_undeclared_key_in_the_yaml_is_its_line_with_did_you_mean(suite: Path) -> None:
    cases = suite / "evals" / "dataset.yaml"
    text = cases.read_text(encoding="utf-8")
    cases.write_text(text.replace("max_palabras: 40", "max_palabra: 40", 1), encoding="utf-8")
    line = text[: text.index("- id: tono-001")].count("\n") + 1  # the case's first line
    said = f"evals/dataset.yaml:{line}: expect.max_palabra: unknown key 'max_palabra'; did you mean"
    done = run_in(suite, "-m", "tinyeval", "run")
    assert done.returncode == 2 and done.stderr.startswith(f"tinyeval: error: {said}")
    plugin = run_in(suite, "-m", "pytest", "-p", "tinyeval.ci.pytest_plugin", "--tinyeval")
    assert plugin.returncode == 4 and said in plugin.stderr, plugin.stdout + plugin.stderr
    assert "Traceback" not in done.stderr + plugin.stderr


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ('prohibido = "not_contain"', "expect.prohibido: unknown key 'not_contain'; did you mean"),
        ('moneda = { check = "equals" }', "expect.moneda: equals needs a path"),
        ('moneda = { check = "equals", path = "a..b" }', "expect.moneda: expected no empty part"),
        ('moneda = { check = "equals", paht = "m" }', "expect.moneda.paht: unknown key; did you"),
        ('max_palabras = "max_chars"', None),  # a fine entry: no error
        ('max_words = "max_chars"', "expect.max_words: the expect key 'max_words' is taken"),
        ('accion = "py:evals.nowhere:accion"', "expect.accion: py:evals.nowhere:accion: cannot"),
    ],
)
def test_the_expect_table_is_checked_at_its_line(suite: Path, entry: str, said: str | None) -> None:
    toml = suite / "tinyeval.toml"
    lines = toml.read_text(encoding="utf-8").splitlines()
    at = lines.index("[expect]                 # their expectation keys") + 1
    key = entry.split()[0]
    lines = [line for line in lines if not line.startswith(f"{key} =")]
    lines.insert(at, entry)
    toml.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = run_in(suite, "-m", "tinyeval", "run", "--dry-run")
    if said is None:
        assert done.returncode == 0, done.stdout + done.stderr
        return
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"tinyeval: error: tinyeval.toml:{at + 1}: {said}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("runner", ["run", "pytest"])
def test_init_then_run_succeeds_in_an_empty_folder(tmp_path: Path, runner: str) -> None:
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "output": "hola", "expect": {"max_words": 3}}\n'
    )
    assert run_in(tmp_path, "-m", "tinyeval", "init").returncode == 0
    if runner == "run":
        done = run_in(tmp_path, "-m", "tinyeval", "run")
    else:
        done = run_in(tmp_path, "-m", "pytest", "-p", "tinyeval.ci.pytest_plugin", "--tinyeval")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gate: PASSED" in done.stdout and "1/1 = 100.0%" in done.stdout


def test_assert_gate_names_the_failing_cases_and_why() -> None:
    from tinyeval.ci.testing import assert_gate

    rows = [{"id": f"ok-{i}", "category": "monto", "status": "pass"} for i in range(3)]
    rows.append({"id": "punto-miles", "category": "monto", "status": "fail",
                 "checks": {"monto_centavos": False},
                 "check_details": {"monto_centavos": "got 150, expected 150000"}})  # fmt: skip
    with pytest.raises(AssertionError) as raised:
        assert_gate(rows, thresholds={"monto": 1.0})
    said = str(raised.value)
    assert "BLOCKS" in said
    assert "punto-miles  monto_centavos: got 150, expected 150000" in said


def test_calibrate_gives_spearman_for_a_graded_judge(tmp_path: Path) -> None:
    scores = [1, 2, 3, 4, 5, 2, 3, 4, 5, 1, 2, 4]
    human = [1, 2, 3, 5, 5, 1, 3, 4, 4, 2, 2, 5]
    with (tmp_path / "rows.jsonl").open("w", encoding="utf-8") as rows:
        for i, score in enumerate(scores):
            verdict = {"name": "claridad", "verdict": None, "failure": "ungated", "reason": "r",
                       "score": float(score), "scale": [1, 5], "pass_at": None}  # fmt: skip
            row = {"id": f"c{i}", "category": "tono", "status": "unchecked", "output": "x"}
            rows.write(json.dumps({**row, "judges": {"claridad": verdict}}) + "\n")
    labels = "".join(json.dumps({"id": f"c{i}", "label": h}) + "\n" for i, h in enumerate(human))
    (tmp_path / "labels.jsonl").write_text(labels, encoding="utf-8")
    done = run_in(tmp_path, "-m", "tinyeval", "calibrate", "rows.jsonl", "labels.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    # scipy.stats.spearmanr of the two lists gives 0.890909...
    assert "spearman           0.891 [" in done.stdout, done.stdout


def test_the_labelling_session_shows_a_chat_as_a_transcript(tmp_path: Path) -> None:
    chat = [{"role": "system", "content": "Sos un asistente de pagos.\x1b[2J"},
            {"role": "user", "content": "pasale unos mangos a mi hermana"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"function": {"name": "ver_saldo", "arguments": "{}"}}]},
            {"role": "tool", "content": [{"type": "text", "text": "saldo: 3.000"}]}]  # fmt: skip
    row = {"id": "chat-1", "category": "rechazo", "status": "pass", "input": chat,
           "output": "¿Cuánto querés pasarle?", "checks": {"max_words": True}}  # fmt: skip
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    argv = ["-m", "tinyeval", "label", "rows.jsonl", "--out", "labels.jsonl", "--all-rows"]
    done = subprocess.run(
        [sys.executable, *argv, "--labeler", "ana"], input="p\n", cwd=tmp_path, text=True,
        capture_output=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown
    assert "user: pasale unos mangos a mi hermana" in shown and '"role"' not in shown
    assert "assistant: [calls ver_saldo]" in shown and "tool: saldo: 3.000" in shown
    assert "\x1b" not in shown and "pagos.\\x1b[2J" in shown  # the data's escape, made visible


def test_a_threshold_typo_in_the_suite_file_is_said_at_its_line(suite: Path) -> None:
    toml = suite / "tinyeval.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text.replace("\nextraccion_monto = ", "\nextraccion_montos = "), "utf-8")
    line = text[: text.index("\nextraccion_monto = ")].count("\n") + 2
    said = (
        f"tinyeval.toml:{line}: thresholds.extraccion_montos: no case has the category "
        "'extraccion_montos'; did you mean 'extraccion_monto'?"
    )
    done = run_in(suite, "-m", "tinyeval", "run")
    assert done.returncode == 2 and done.stderr == f"tinyeval: error: {said}\n", done.stderr
    plugin = run_in(suite, "-m", "pytest", "-p", "tinyeval.ci.pytest_plugin", "--tinyeval")
    assert plugin.returncode == 4, plugin.stdout + plugin.stderr  # pytest's usage error
    assert f"ERROR: tinyeval: {said}" in plugin.stderr and "Traceback" not in plugin.stderr


OLD_PYTHONS = sorted(Path(sys.base_prefix).parent.glob("3.[0-9].*/bin/python")) + sorted(
    Path(sys.base_prefix).parent.glob("3.10.*/bin/python")
)


@pytest.mark.skipif(not OLD_PYTHONS, reason="no Python older than 3.11 beside this one")
@pytest.mark.parametrize("python", OLD_PYTHONS[-2:], ids=lambda p: p.parent.parent.name)
def test_an_old_python_is_told_in_one_line(tmp_path: Path, python: Path) -> None:
    vendored = tmp_path / "vendor"
    shutil.copytree(
        ROOT / "tinyeval", vendored / "tinyeval", ignore=shutil.ignore_patterns("__pycache__")
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(vendored)}
    done = subprocess.run([str(python), "-S", "-m", "tinyeval", "run"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("tinyeval: error: tinyeval needs Python 3.11 or newer; this is")
    assert len(done.stderr.splitlines()) == 1, done.stderr
    imported = subprocess.run([str(python), "-S", "-c", "import tinyeval"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert imported.stderr.splitlines()[-1].startswith("ImportError: tinyeval needs Python 3.11")


def test_gate_and_report_list_the_failing_cases_as_run_does(suite: Path) -> None:
    ran = run_in(suite, "-m", "tinyeval", "run")
    listed = ran.stdout[ran.stdout.index("cases that did not pass") : ran.stdout.index("gate:")]
    assert "transf-monto-punto-miles" in listed
    for command, code in (("gate", 1), ("report", 0)):
        done = run_in(suite, "-m", "tinyeval", command, "tinyeval-results.jsonl")
        assert done.returncode == code, done.stdout + done.stderr
        assert listed.strip() in done.stdout


def test_a_judge_reason_shows_its_why_with_the_quoted_output_clipped(tmp_path: Path) -> None:
    output = "Según lo que figura en tu cuenta al día de hoy, debés 2.000 pesos en total."
    case = {"id": "b", "input": "¿cuánto debo?", "output": output, "context": "Deuda: 1.500."}
    (tmp_path / "c.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    argv = ["c.jsonl", "--criterion", "unsupported-claims", "--threshold", "default=1"]
    done = run_in(tmp_path, "-m", "tinyeval", "run", *argv)
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("  default  b"))
    assert line.endswith("'2.000' does not appear in the context."), line
    assert 'Unsupported claim: "Según lo' in line and output not in line


def test_retrieval_keys_and_only_are_mapped_with_field(tmp_path: Path) -> None:
    with (tmp_path / "logs.jsonl").open("w", encoding="utf-8") as logs:
        for i in range(4):
            record = {"request_id": f"r{i}", "answer": "9 a 18", "category": "faq",
                      "rag": {"docs": ["d1", "d2", "d3"][: i + 1]}, "gold": ["d2"]}  # fmt: skip
            logs.write(json.dumps(record) + "\n")
    only = "".join(json.dumps({"request_id": f"r{i}"}) + "\n" for i in (1, 3))
    (tmp_path / "only.jsonl").write_text(only, encoding="utf-8")
    fields = ["id=request_id", "output=answer", "retrieved=rag.docs", "relevant=gold"]
    argv = [arg for pair in fields for arg in ("--field", pair)]
    done = run_in(tmp_path, "-m", "tinyeval", "run", "logs.jsonl", *argv, "--only", "only.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 cases (2 selected)" in done.stdout
    assert "retrieval: 2 of 2 cases had retrieval data" in done.stdout
    # r1 ranks d2 second of two, r3 second of three: MRR 1/2, nothing at rank 1
    assert "faq       2        1   0/2 = 0.0%" in done.stdout
    assert "0.50 [0.50, 0.50]" in done.stdout


def test_assert_gate_decides_as_the_gate_and_says_on_what() -> None:
    from tinyeval.ci.testing import assert_gate

    # 40 judged cases: the judge passes 36, the people who labelled every one pass 12
    rows = [
        {"id": f"a{i}", "category": "answers", "status": "pass" if i < 36 else "fail",
         "checks": {"k": True}, "judges": {"j": {"verdict": "PASS" if i < 36 else "FAIL"}},
         "label": "PASS" if i < 12 else "FAIL"}
        for i in range(40)
    ]  # fmt: skip
    with pytest.raises(AssertionError) as raised:
        assert_gate(rows, thresholds={"answers": 0.5})
    said = str(raised.value)
    assert said.startswith("the gate blocks answers (decided on people):\n")
    assert "people ≈ 30.0%" in said and "BLOCKS (30.0% < 50.0%; people ≈" in said
    unlabelled = [{k: v for k, v in row.items() if k != "label"} for row in rows]
    verdict = assert_gate(unlabelled, thresholds={"answers": 0.5}).categories[0]
    assert (verdict.outcome, verdict.decided_on) == ("pass", "judge")
    with pytest.raises(AssertionError) as raised:
        assert_gate(unlabelled, thresholds={"answers": 0.95})
    said = str(raised.value)
    assert said.startswith("the gate blocks answers (decided on judge):\n")
    assert "judge not calibrated" in said
    plain = [dict(row, judges={}) for row in unlabelled]
    with pytest.raises(AssertionError, match=r"^the gate blocks answers \(decided on checks\):"):
        assert_gate(plain, thresholds={"answers": 0.95})
