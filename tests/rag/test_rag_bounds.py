"""A retrieval gain no float holds is bad input: exit 2, one line naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyeval.cli import main


@pytest.mark.parametrize("gain", ["9" * 400, "-" + "9" * 400, "1e400"], ids=["400", "-400", "e400"])
def test_a_gain_of_400_digits_is_refused_naming_the_case_and_field(
    tmp_path: Path, gain: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"id": "a", "output": "x", "expect": {"contains": ["x"]}, "retrieved": ["d1"],
            "relevant": {"d1": 1}}  # fmt: skip
    bad = json.dumps({**good, "id": "b", "relevant": {"d1": "GAIN"}}).replace('"GAIN"', gain)
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(good) + "\n" + bad + "\n", encoding="utf-8")
    code = main(["run", str(cases), "--out", str(tmp_path / "rows.jsonl")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"tinyeval: error: {cases}:2: relevant: the gain of 'd1'")
    assert err.count("\n") == 1 and len(err) < 400
