"""A Dask address that cannot be one is refused at once (exit 2, naming it), never waited on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyeval.cli import main


@pytest.mark.parametrize(
    "address", ["dask://[::1", "dask://host:99999", "dask://host", "dask://:8786", "dask://h:0"]
)
def test_a_bad_dask_address_is_exit_2_naming_it(
    tmp_path: Path, address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "a", "output": "x", "expect": {"contains": ["x"]}}) + "\n")
    code = main(["run", str(cases), "--executor", address, "--out", str(tmp_path / "rows.jsonl")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"tinyeval: error: --executor: {address!r} is not a HOST:PORT address")
    assert not (tmp_path / "rows.jsonl").exists()
