"""A run that calls no model reads a large cases file once, as it runs, and writes its rows
whole at the end. What it must keep from the two-pass run: the same rows, the same
fingerprint and manifest, nothing written when a case or a setting is refused (however late
it shows), and every duplicate id found, with its line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tinyeval import checks, runner
from tinyeval.cli import main
from tinyeval.dataset import _IdIndex, dataset_fingerprint, load
from tinyeval.records import read_rows

EXPECT = {"valid_json": True, "fields": ["currency"], "equals": {"amount": 5}}
STAMPS = ("started_at", "finished_at", "latency_ms")


def write_cases(path: Path, n: int, *, extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    with open(path, "w", encoding="utf-8") as stream:
        for i in range(n):
            output = json.dumps({"amount": 5 if i % 3 else 50, "currency": "ARS"})
            record = {"id": f"c{i}", "category": f"k{i % 2}", "output": output, "expect": EXPECT}
            stream.write(json.dumps(record) + "\n")
        for line in extra:
            stream.write(line + "\n")
    return path


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as large: read twice, or once as the run goes."""
    monkeypatch.setattr(runner, "READ_ONCE_BYTES", 0)


def without_stamps(path: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in row.items() if k not in STAMPS} for row in read_rows(path)]


def run(*args: str) -> int:
    try:
        return main(["run", *args, "-q"])
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.usefixtures("large")
def test_one_pass_rows_are_the_two_pass_rows(tmp_path: Path, builds: list[int]) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 9)
    one = tmp_path / "one.jsonl"
    assert run(str(cases), "--out", str(one)) == 0
    assert len(builds) == 9  # read once: each case's checks built once
    two = tmp_path / "two.jsonl"
    # a resumable run writes each row as it finishes: it reads the file before running (twice)
    assert run(str(cases), "--out", str(two), "--resume") == 0
    assert len(builds) == 9 + 18
    rows = without_stamps(one)
    assert rows == without_stamps(two)
    fingerprint = dataset_fingerprint(load(cases))
    assert [row["dataset_fingerprint"] for row in rows] == [fingerprint] * 9
    assert [row["run"]["cases"] for row in rows] == [9] * 9  # type: ignore[index]
    assert [row["status"] for row in rows] == ["fail", "pass", "pass"] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.jsonl", "one.jsonl", "two.jsonl"]


@pytest.mark.usefixtures("large")
@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (['{"id": "late", "output": "x", "expect": {"max_chars": -1}}'], ":10: expect.max_chars"),
        (['{"id": "c4", "output": "x"}'], ":10: id: duplicate id 'c4' (first on line 5)"),
        (["{not json"], ":10: not valid JSON"),
    ],
)
def test_a_bad_case_at_the_end_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], said: str
) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 9, extra=extra)
    out = tmp_path / "rows.jsonl"
    out.write_text('{"kept": "an earlier results file"}\n', encoding="utf-8")
    assert run(str(cases), "--out", str(out)) == 2
    error = capsys.readouterr().err.strip()
    assert said in error and len(error.splitlines()) == 1
    assert out.read_text(encoding="utf-8") == '{"kept": "an earlier results file"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.jsonl", "rows.jsonl"]


@pytest.mark.usefixtures("large")
def test_a_setting_the_cases_refuse_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 4)
    out = tmp_path / "rows.jsonl"
    assert run(str(cases), "--out", str(out), "--only", "c9") == 2
    assert "no case has the id 'c9'" in capsys.readouterr().err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["cases.jsonl"]


def test_an_only_id_that_matches_no_case_is_refused_even_beside_ids_that_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 4)
    out = tmp_path / "rows.jsonl"
    assert run(str(cases), "--out", str(out), "--only", "c1,c9,cc2") == 2
    error = capsys.readouterr().err.strip()
    assert error.endswith("only: no case has the ids 'c9', 'cc2'"), error
    assert len(error.splitlines()) == 1 and not out.exists()


@pytest.mark.usefixtures("large")
def test_an_interrupted_one_pass_run_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 6)
    seen = []
    original = checks.checks_from_expect

    def interrupting(expect):  # type: ignore[no-untyped-def]
        seen.append(1)
        if len(seen) == 4:
            raise KeyboardInterrupt
        return original(expect)

    monkeypatch.setattr(checks, "checks_from_expect", interrupting)
    assert run(str(cases), "--out", str(tmp_path / "rows.jsonl")) == 130
    assert [p.name for p in tmp_path.iterdir()] == ["cases.jsonl"]
    said = capsys.readouterr().err
    assert "interrupted. A run that calls no model writes its rows once it has read" in said
    assert "nothing was written to" in said


@pytest.mark.usefixtures("large")
def test_the_null_device_takes_the_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 6)
    assert run(str(cases), "--out", "/dev/null", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["dataset_fingerprint"] == dataset_fingerprint(load(cases))
    assert summary["cases"] == summary["rows"] == 6
    assert summary["gate"]["categories"]["k0"]["passed"] == 2


def test_the_id_index_finds_the_first_repeat_in_file_order() -> None:
    """Against a plain set, on ids that spill to disk in small batches."""
    generator = random.Random(7)
    for trial in range(200):
        ids = [f"id{generator.randrange(60)}" for _ in range(generator.randrange(1, 40))]
        expected = None
        seen: set[str] = set()
        for line, case_id in enumerate(ids, 1):
            if case_id in seen:
                expected = (case_id, line)
                break
            seen.add(case_id)
        found = None
        with _IdIndex(spill_after=trial % 7, batch=1 + trial % 5) as index:
            for line, case_id in enumerate(ids, 1):
                found = index.add(case_id, line)
                if found is not None:
                    break
            else:
                found = index.flush()
        assert found == expected, (ids, trial)


@pytest.mark.usefixtures("large")
def test_a_session_can_plan_then_run_the_same_prepared_cases(tmp_path: Path) -> None:
    """A dry run reads the one-pass stream to its end; the run then reads the file again,
    with the fingerprint known, rather than finding the stream spent."""
    from tinyeval.session import RunSettings, Session

    cases = write_cases(tmp_path / "cases.jsonl", 6)
    out = tmp_path / "rows.jsonl"
    with Session(RunSettings(cases=str(cases), out=str(out))) as session:
        ready = session.prepare()
        assert not ready.read and ready.fingerprint == ""
        plan = session.dry_run(ready)
        assert ready.read and ready.fingerprint == dataset_fingerprint(load(cases))
        assert plan.cases == 6
        summary = session.run(ready)
    assert summary.rows == 6 and len(read_rows(out)) == 6


@pytest.mark.usefixtures("large")
def test_a_run_stopped_early_writes_nothing(tmp_path: Path) -> None:
    """Stopped on request after three rows: nothing was spent, so nothing is written (reading
    the rest of the file for the fingerprint would make a stop as slow as half a run), and an
    earlier results file is left as it was."""
    from tinyeval.session import RunSettings, Session

    cases = write_cases(tmp_path / "cases.jsonl", 9)
    out = tmp_path / "rows.jsonl"
    out.write_text('{"kept": "an earlier results file"}\n', encoding="utf-8")
    with Session(RunSettings(cases=str(cases), out=str(out))) as session:
        ready = session.prepare()

        def stop_after_three(row: dict[str, object]) -> None:
            if ready.in_file >= 3:
                session.stop.set()

        summary = session.run(ready, on_row=stop_after_three)
    assert not summary.complete and not ready.read and summary.rows == 3
    assert out.read_text(encoding="utf-8") == '{"kept": "an earlier results file"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.jsonl", "rows.jsonl"]


def test_the_command_line_says_a_stopped_one_pass_run_wrote_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """More errors than --max-errors stop the run: exit 3, and the message says that nothing
    was written rather than offering to resume."""
    monkeypatch.setattr(runner, "READ_ONCE_BYTES", 0)
    cases = write_cases(tmp_path / "cases.jsonl", 6)
    monkeypatch.setattr(checks, "run_built_checks", _raising)  # every case errors
    out = tmp_path / "rows.jsonl"
    assert run(str(cases), "--out", str(out), "--max-errors", "1") == 3
    said = capsys.readouterr().err
    assert "the run stopped early: more than 1 cases errored" in said
    assert f"nothing was written to {out}; fix the cause and run it again" in said
    assert not out.exists()


def _raising(output: str, built: object, case: object) -> dict[str, object]:
    raise RuntimeError("a check that breaks")


@pytest.mark.usefixtures("large")
def test_an_output_that_cannot_be_written_is_said_as_in_a_two_pass_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 3)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where a folder should be", encoding="utf-8")
    for extra in ([], ["--resume"]):  # read once as it runs; read first, rows as they finish
        assert run(str(cases), "--out", str(blocked / "rows.jsonl"), *extra) == 3
        assert "writing the results failed" in capsys.readouterr().err


@pytest.mark.usefixtures("large")
def test_a_results_file_reached_through_a_link_stays_linked(tmp_path: Path) -> None:
    """As opening the link for writing would: the file it names gets the rows."""
    cases = write_cases(tmp_path / "cases.jsonl", 3)
    (tmp_path / "kept").mkdir()
    real = tmp_path / "kept" / "rows.jsonl"
    real.write_text("", encoding="utf-8")
    link = tmp_path / "rows.jsonl"
    link.symlink_to(real)
    assert run(str(cases), "--out", str(link)) == 0
    assert link.is_symlink() and len(read_rows(real)) == 3
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["rows.jsonl"]


@pytest.mark.usefixtures("large")
def test_a_results_file_replaced_keeps_its_mode(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", 3)
    out = tmp_path / "rows.jsonl"
    out.write_text("", encoding="utf-8")
    out.chmod(0o600)
    assert run(str(cases), "--out", str(out)) == 0
    assert out.stat().st_mode & 0o777 == 0o600 and len(read_rows(out)) == 3
