"""The runner's fast paths: checks built once per case, no thread for cases that call no model,
small files read once. Each is checked for what it must keep: the same rows."""

from __future__ import annotations

import dataclasses
import json
import pickle
import threading
from pathlib import Path

import pytest

import tinyeval
from tinyeval import runner
from tinyeval.dataset import Case, dataset_fingerprint, iter_cases, load
from tinyeval.errors import utc_stamp
from tinyeval.records import row_stamp

EXPECT = {"valid_json": True, "fields": ["currency"], "equals": {"amount": 5}, "max_chars": 80}


def write_cases(path: Path, n: int) -> Path:
    with open(path, "w", encoding="utf-8") as stream:
        for i in range(n):
            output = json.dumps({"amount": 5 if i % 3 else 50, "currency": "ARS"})
            record = {"id": f"c{i}", "category": f"k{i % 2}", "output": output, "expect": EXPECT}
            stream.write(json.dumps(record) + "\n")
    return path


def statuses(result: runner.RunResult) -> dict[str, tuple[int, int]]:
    return {name: (t.passed, t.total) for name, t in result.sorted_categories().items()}


@pytest.mark.parametrize("read_once", [True, False])
def test_checks_are_built_once_per_read_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[int], read_once: bool
) -> None:
    path = write_cases(tmp_path / "cases.jsonl", 6)
    if not read_once:
        monkeypatch.setattr(runner, "READ_ONCE_BYTES", 0)
    ready = runner.prepare_cases(str(path))
    result = tinyeval.run(ready.cases, dataset_fingerprint=ready.fingerprint)
    # read once: built while validating, carried to the run; read twice: once more in the
    # second read, and never in the run itself (it used to build them a third time)
    assert len(builds) == (6 if read_once else 12)
    # cases 0 and 3 have amount 50: they fail equals, in categories k0 and k1
    assert statuses(result) == {"k0": (2, 3), "k1": (2, 3)}
    assert result.rows[0]["checks"] == {"valid_json": True, "field:currency": True,
                                        "equals:amount": False, "max_chars": True}  # fmt: skip


def test_a_pickled_case_builds_its_checks_again(tmp_path: Path, builds: list[int]) -> None:
    case = next(iter_cases(write_cases(tmp_path / "cases.jsonl", 1)))
    assert case.built_checks is not None and len(builds) == 1
    copy = pickle.loads(pickle.dumps(case))  # what a process executor receives
    assert copy.built_checks is None and copy == case
    assert runner.evaluate_case(copy)["checks"] == runner.evaluate_case(case)["checks"]
    assert len(builds) == 2  # the copy built its own; the original used the ones it carried


def test_checks_follow_an_expect_block_replaced(tmp_path: Path) -> None:
    case = next(iter_cases(write_cases(tmp_path / "cases.jsonl", 1)))
    other = dataclasses.replace(case, expect={"max_words": 0})
    assert [c.name for c in other.expect_checks()] == ["max_words"]
    assert runner.evaluate_case(other)["checks"] == {"max_words": False}


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread every case was evaluated on."""
    seen: list[str] = []
    original = runner.evaluate_case

    def noting(case, **task):  # type: ignore[no-untyped-def]
        seen.append(threading.current_thread().name)
        return original(case, **task)

    monkeypatch.setattr(runner, "evaluate_case", noting)
    return seen


def checked(n: int, **fields: object) -> list[Case]:
    return [Case(id=f"c{i}", output="hola", expect={"max_words": 1}, **fields) for i in range(n)]  # type: ignore[arg-type]


def test_cases_that_call_no_model_run_in_the_calling_thread(threads: list[str]) -> None:
    here = threading.current_thread().name
    result = tinyeval.run(checked(8), concurrency=4)
    assert result.categories["default"].passed == 8
    assert threads == [here] * 8


def test_judged_cases_still_run_on_the_workers(threads: list[str]) -> None:
    here = threading.current_thread().name
    judge = tinyeval.Judge("answers-the-question")
    cases = checked(6, input="Hola?")
    result = tinyeval.run(cases, judges=judge, judge_model="builtin", concurrency=3)
    assert result.total == 6
    assert len(threads) == 6 and here not in threads


def test_one_worker_runs_every_case_in_the_calling_thread(threads: list[str]) -> None:
    here = threading.current_thread().name
    judge = tinyeval.Judge("answers-the-question")
    tinyeval.run(checked(3, input="Hola?"), judges=judge, judge_model="builtin")
    assert threads == [here] * 3


def test_a_per_case_timeout_keeps_the_workers(threads: list[str]) -> None:
    here = threading.current_thread().name
    tinyeval.run(checked(3), concurrency=2, case_timeout=30)
    assert len(threads) == 3 and here not in threads


def test_a_categories_judge_leaves_the_others_in_the_calling_thread(threads: list[str]) -> None:
    here = threading.current_thread().name
    judge = tinyeval.Judge("answers-the-question")
    cases = [*checked(2, input="Hola?", category="judged"), *checked(3, category="plain")]
    cases = [dataclasses.replace(c, id=f"{c.category}-{c.id}") for c in cases]
    result = tinyeval.run(cases, judges=judge, judge_model="builtin", concurrency=2,
                          judge_categories=["judged"])  # fmt: skip
    assert result.total == 5
    assert threads.count(here) == 3  # the three plain cases; the judged two on workers


def test_the_rows_do_not_depend_on_the_path_taken(tmp_path: Path) -> None:
    cases = load(write_cases(tmp_path / "cases.jsonl", 9))
    inline = tinyeval.run(cases, concurrency=4)
    on_workers = tinyeval.run(cases, concurrency=4, case_timeout=30)
    strip = ("started_at", "finished_at", "latency_ms")

    def rows(result: runner.RunResult) -> list[dict[str, object]]:
        found = [{k: v for k, v in row.items() if k not in strip} for row in result.rows]
        return sorted(found, key=lambda row: str(row["id"]))

    assert rows(inline) == rows(on_workers)


@pytest.mark.parametrize("read_once", [True, False])
def test_a_small_file_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_once: bool
) -> None:
    path = write_cases(tmp_path / "cases.jsonl", 4)
    if not read_once:
        monkeypatch.setattr(runner, "READ_ONCE_BYTES", 0)
    ready = runner.prepare_cases(str(path), only=["c1", "c2"])
    assert ready.fingerprint == dataset_fingerprint(load(path))
    write_cases(path, 1)  # the file changes after it was read
    ids = [case.id for case in ready.cases]
    # kept from the one read, or read again (and only c1 and c2 were asked for: c1 is gone)
    assert ids == (["c1", "c2"] if read_once else [])
    assert [case.id for case in ready.cases] == ids  # iterable again


def test_row_stamps_are_utc_stamps() -> None:
    first = row_stamp()
    assert len(first) == len(utc_stamp()) and first[10] == "T" and first.endswith("Z")
    assert utc_stamp() >= first and row_stamp() >= first


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_async_model_is_awaited_on_one_loop(concurrency: int) -> None:
    import asyncio

    loops: set[int] = set()

    async def generate(prompt: str) -> str:
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0)
        return "hola"

    cases = [Case(id=f"c{i}", input="Hi", expect={"max_words": 1}) for i in range(12)]
    result = tinyeval.run(cases, generate_model=generate, concurrency=concurrency)
    assert result.categories["default"].passed == 12
    assert len(loops) == 1  # one long-lived loop for every call, never one per call


def test_a_case_read_has_every_field_of_the_dataclass(tmp_path: Path) -> None:
    """Cases read are made without the dataclass's __init__ (it costs 5x more): each must still
    have every field, so a field added to Case cannot be left unset by the reader."""
    case = next(iter_cases(write_cases(tmp_path / "cases.jsonl", 1)))
    assert set(vars(case)) == {f.name for f in dataclasses.fields(Case)}
    assert case == Case(**{f.name: getattr(case, f.name) for f in dataclasses.fields(Case)})
