"""Through the command line: case-insensitive text checks, YAML ids as written, checks of your
own that abstain, and numbers or nesting past what can be read, in a case or in an output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tinyeval import checks
from tinyeval.cli import main


def run(tmp_path: Path, cases: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list]:
    out = tmp_path / "rows.jsonl"
    code = main(["run", str(cases), "--out", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return code, capsys.readouterr().err, rows


def write_jsonl(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_contains_i_and_not_contains_i_ignore_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        {"id": "a", "output": "Hola, POR FAVOR", "expect": {"contains_i": "por favor"}},
        {"id": "b", "output": "Es URGENTE", "expect": {"not_contains_i": ["urgente"]}},
        {"id": "c", "output": "Hola", "expect": {"contains": "hola"}},  # case-sensitive
    )
    code, err, rows = run(tmp_path, cases, capsys)
    assert code == 0, err
    assert [row["status"] for row in rows] == ["pass", "fail", "fail"]
    assert rows[0]["checks"] == {"contains_i:por favor": True}
    assert rows[1]["check_details"] == {"not_contains_i:urgente": "found at character 3"}


def test_a_yaml_id_is_kept_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("yaml")
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "- id: 0123\n  output: uno\n- id: 1.50\n  output: dos\n- id: 0x1F\n  output: tres\n"
    )
    code, err, rows = run(tmp_path, cases, capsys)
    assert code == 0, err
    assert [row["id"] for row in rows] == ["0123", "1.50", "0x1F"]  # not 83, 1.5, 31


@pytest.fixture
def own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An expect key ``accion`` whose check is ``py:evals_own_checks:accion`` in tmp_path."""
    (tmp_path / "evals_own_checks.py").write_text(
        "def accion(output, expected, case):\n"
        "    if expected == 'n/a':\n"
        "        return None  # does not apply to this case\n"
        "    if expected in output:\n"
        "        return True\n"
        "    return (False, f'no {expected} in the reply')\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(checks, "_EXPECT", dict(checks._EXPECT))
    monkeypatch.delitem(sys.modules, "evals_own_checks", raising=False)
    checks.register_expect("accion", "py:evals_own_checks:accion")
    return "accion"


def test_a_python_check_passes_fails_or_abstains(
    tmp_path: Path, own_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        {"id": "ok", "output": "pedir_aclaracion", "expect": {own_key: "pedir_aclaracion"}},
        {"id": "no", "output": "transferir", "expect": {own_key: "pedir_aclaracion"}},
        {"id": "na", "output": "hola", "expect": {own_key: "n/a"}},
        {"id": "half", "output": "hola", "expect": {own_key: "n/a", "max_words": 3}},
    )
    code, err, rows = run(tmp_path, cases, capsys)
    assert code == 0, err
    by_id = {row["id"]: row for row in rows}
    assert by_id["ok"]["status"] == "pass" and by_id["ok"]["checks"] == {"accion": True}
    assert by_id["no"]["status"] == "fail"
    assert by_id["no"]["check_details"] == {"accion": "no pedir_aclaracion in the reply"}
    assert by_id["na"]["status"] == "unchecked"  # every check abstained, no judge: never a pass
    assert by_id["na"]["checks"] == {}
    assert by_id["half"]["status"] == "pass" and by_id["half"]["checks"] == {"max_words": True}


def test_a_decorated_check_may_abstain() -> None:
    @checks.check
    def only_for_amounts(output: str, case: Any) -> bool | None:
        return None if case is None else "125050" in output

    assert checks.run_checks("125050", [only_for_amounts]) == {}
    assert checks.run_checks("125050", [only_for_amounts], case={}) == {"only_for_amounts": True}


def test_a_python_check_that_cannot_be_loaded_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(checks.CheckSpecError, match="accion: py:no_such_module_here:f: cannot"):
        checks.register_expect("accion", "py:no_such_module_here:f")
    with pytest.raises(checks.CheckSpecError, match="expected py:MODULE:FUNCTION"):
        checks.register_expect("accion", "py:only_a_module")


HUGE = "9" * 5000
DEEP = "[" * 5000 + "]" * 5000


def case_line(tail: str) -> str:
    return '{"id": "a", "output": "x", ' + tail + "}\n"


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        (case_line('"expect": {"equals": {"n": ' + HUGE + "}}"), "expect", "too long"),
        (case_line('"note": ' + HUGE), "note", "too long"),
        (case_line('"expect": {"equals": {"n": ' + DEEP + "}}"), "expect", "too deeply"),
        (case_line('"expect": {"equals": {"n": 1' + HUGE + ".5}}"), "expect.equals.n", "finite"),
    ],
    ids=["huge-expected", "huge-meta", "deep-expected", "huge-float"],
)
def test_a_number_or_nesting_past_reading_in_a_case_is_exit_2_at_its_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, field: str, reason: str
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "first", "output": "ok"}\n' + text)
    code, err, rows = run(tmp_path, cases, capsys)
    assert code == 2 and rows == []
    assert err.startswith(f"tinyeval: error: {cases}:2: {field}: ") and reason in err
    assert len(err.strip().splitlines()) == 1 and "please report" not in err


@pytest.mark.parametrize(
    ("output", "detail"),
    [
        ('{"n": ' + HUGE + "}", "not valid JSON: Exceeds the limit"),
        ('{"n": ' + DEEP + "}", "not valid JSON: nested too deeply to parse"),
        ("[" * 400 + "]" * 400, "got [[[[["),
    ],
    ids=["huge", "deep", "deep-but-readable"],
)
def test_a_number_or_nesting_past_reading_in_an_output_fails_its_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str, detail: str
) -> None:
    expect = {"valid_json": True, "equals": {"n": [[1]]}, "range": {"n": [0, 1]}}
    if output.startswith("["):
        expect = {"valid_json": True, "equals": {"0": 1}, "one_of": {"0": [[1]]}}
    cases = write_jsonl(tmp_path / "cases.jsonl", {"id": "a", "output": output, "expect": expect})
    code, err, rows = run(tmp_path, cases, capsys)
    assert code == 0, err
    (row,) = rows
    assert row["status"] == "fail" and row["error"] is None
    details = list(row["check_details"].values())
    assert details and all(not text.startswith("raised") for text in details)
    assert any(text.startswith(detail) for text in details), details


def test_an_index_of_thousands_of_digits_in_a_path_is_missing_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = "items." + HUGE
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        {"id": "a", "output": '{"items": [1]}', "expect": {"equals": {path: 1}}, "items": [1]},
    )
    code, err, rows = run(tmp_path, cases, capsys)
    assert code == 0, err
    (detail,) = rows[0]["check_details"].values()
    assert rows[0]["status"] == "fail" and detail.startswith("missing: no index 999")
    out = tmp_path / "mapped.jsonl"
    code = main(["run", str(cases), "--out", str(out), "--field", f"input={path}"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert err.startswith(f"tinyeval: error: {cases}: fields: input=items.999")
    assert "please report" not in err and len(err.strip().splitlines()) == 1


def test_a_long_integer_bound_or_value_is_compared_not_converted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = int("9" * 400)  # past a float's range: math.isfinite(long) would overflow
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        {"id": "in", "output": '{"n": 5}', "expect": {"range": {"n": [0, long]}}},
        {"id": "out", "output": json.dumps({"n": long}), "expect": {"range": {"n": [0, 1.5]}}},
    )
    code, err, rows = run(tmp_path, cases, capsys)
    assert code == 0, err
    assert [row["status"] for row in rows] == ["pass", "fail"]
    assert rows[1]["check_details"]["range:n"].endswith("expected 0 <= value <= 1.5")
