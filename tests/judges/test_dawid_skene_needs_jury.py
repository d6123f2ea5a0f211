"""--dawid-skene reads a jury's verdicts: without a jury it is refused before the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyeval.cli import main


@pytest.mark.parametrize("judges", [[], ["builtin"]], ids=["no judge model", "one judge model"])
def test_dawid_skene_without_a_jury_is_exit_2(
    tmp_path: Path, judges: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "a", "input": "q?", "output": "answer"}) + "\n")
    models = [arg for spec in judges for arg in ("--judge-model", spec)]
    code = main(["run", str(cases), "--criterion", "Is good.", *models, "--dawid-skene",
                 "--out", str(tmp_path / "rows.jsonl")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert err == "tinyeval: error: --dawid-skene: needs a jury: 3, 5… judge models\n"
    assert not (tmp_path / "rows.jsonl").exists()
