"""A chat case's system prompt that is neither text nor text blocks is bad input (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyeval.cli import main


@pytest.mark.parametrize("system", [5, {"text": "x"}, True], ids=["number", "object", "bool"])
def test_a_system_prompt_that_is_not_text_names_case_line_and_field(
    tmp_path: Path, system: object, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"id": "a", "messages": [{"role": "user", "content": "hi"}], "output": "hello"}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "b", "system": system})
                     + "\n")  # fmt: skip
    code = main(["run", str(cases), "--out", str(tmp_path / "rows.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"tinyeval: error: {cases}:2: system: expected the system prompt as")
    assert not (tmp_path / "rows.jsonl").exists()
