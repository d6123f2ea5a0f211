"""The runner: one row per case whatever happens, counted before it can fail."""

from __future__ import annotations

import concurrent.futures as cf
import io
import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tinyeval.checks import check
from tinyeval.cli._common import StatusLine
from tinyeval.dataset import Case
from tinyeval.errors import InputError
from tinyeval.records import ResultsFileError, read_rows, resumable_rows, write_records
from tinyeval.runner import (
    Observer,
    RunnerError,
    evaluate_case,
    run,
    shard_index,
)
from tinyeval.scale.plan import dry_run
from tinyeval.session import parse_shard


def amount_case(i: int, cents: int, *, right: bool = True) -> Case:
    output = json.dumps({"amount_cents": cents if right else cents // 100})
    return Case(
        id=f"amt-{i:03d}",
        output=output,
        category="amount_extraction",
        expect={"valid_json": True, "equals": {"amount_cents": cents}},
    )


class TestCountBeforeFail:
    def test_a_raising_check_is_a_failed_case_in_the_denominator(self) -> None:
        @check
        def explodes(output: str) -> bool:
            raise RuntimeError("boom")

        cases = [Case(id="a", output="x"), Case(id="b", output="y")]
        result = run(cases, checks=[explodes])
        tally = result.categories["default"]
        assert (tally.total, tally.passed, tally.failed) == (2, 0, 2)
        row = result.rows[0]
        assert row["checks"]["explodes"] is False
        assert "RuntimeError: boom" in row["check_details"]["explodes"]

    def test_missing_output_without_generate_model_is_an_error_row(self) -> None:
        result = run([Case(id="a"), Case(id="b", output="ok", expect={"max_words": 1})])
        statuses = {r["id"]: r["status"] for r in result.rows}
        assert statuses == {"a": "error", "b": "pass"}
        error_row = next(r for r in result.rows if r["id"] == "a")
        assert "no output" in error_row["error"]
        assert result.categories["default"].total == 2
        assert result.errors == 1

    def test_a_raising_generate_model_errors_the_case_not_the_run(self) -> None:
        def flaky(prompt: str) -> str:
            if "bad" in prompt:
                raise ConnectionError("server went away")
            return "fine"

        cases = [Case(id="a", input="good", expect={"contains": ["fine"]}),
                 Case(id="b", input="bad", expect={"contains": ["fine"]})]  # fmt: skip
        result = run(cases, generate_model=flaky)
        rows = {r["id"]: r for r in result.rows}
        assert rows["a"]["status"] == "pass" and rows["a"]["output"] == "fine"
        assert rows["b"]["status"] == "error"
        assert rows["b"]["error"] == "ConnectionError: server went away"

    def test_a_model_returning_a_non_string_is_an_error(self) -> None:
        result = run([Case(id="a", input="x")], generate_model=lambda p: {"text": "x"})
        assert result.rows[0]["status"] == "error"
        assert "expected str" in result.rows[0]["error"]


class TestRows:
    def test_row_has_the_documented_keys(self) -> None:
        row = evaluate_case(amount_case(1, 125050), dataset_fingerprint="abc")
        for key in (
            "id",
            "category",
            "origin",
            "output",
            "checks",
            "check_details",
            "judges",
            "run",
            "status",
            "error",
            "judge_model",
            "rubric_fingerprint",
            "dataset_fingerprint",
            "tinyeval_version",
            "started_at",
            "finished_at",
            "latency_ms",
            "usage",
        ):
            assert key in row
        assert "judge" not in row  # the first verdict is not kept twice
        assert row["dataset_fingerprint"] == "abc"
        assert row["started_at"].endswith("Z")

    def test_a_case_nothing_checks_is_unchecked_never_a_pass(self) -> None:
        result = run([Case(id="a", output="anything"), Case(id="b", output="x", expect={})])
        assert [r["status"] for r in result.rows] == ["unchecked", "unchecked"]
        tally = result.categories["default"]
        assert (tally.passed, tally.unchecked, tally.total) == (0, 2, 2)
        assert tally.unchecked_ids == ["a", "b"]

    def test_a_judge_that_cannot_judge_the_case_leaves_it_unchecked(self) -> None:
        from tinyeval import Judge

        calls: list[str] = []

        def model(prompt: str) -> str:
            calls.append(prompt)
            return "PASS"

        with_context = Case(id="a", output="1 peso", context="1 peso", expect={"max_words": 5})
        without = Case(id="b", output="1 peso", expect={"max_words": 5})
        result = run([with_context, without], judges=Judge("unsupported-claims"),
                     judge_model=model)  # fmt: skip
        rows = {r["id"]: r for r in result.rows}
        assert rows["a"]["status"] == "pass" and len(calls) == 1
        assert rows["b"]["status"] == "unchecked"
        assert "needs a context" in rows["b"]["judge_skipped"]

    def test_exact_amount_equality(self) -> None:
        right = evaluate_case(amount_case(1, 125050))
        wrong = evaluate_case(amount_case(2, 125050, right=False))
        assert right["status"] == "pass"
        assert wrong["status"] == "fail"
        assert wrong["checks"]["equals:amount_cents"] is False

    def test_rows_are_written_and_flushed_as_cases_finish(self, tmp_path) -> None:
        out = tmp_path / "rows.jsonl"
        seen_on_disk: list[int] = []

        def on_row(row: dict) -> None:
            seen_on_disk.append(len(out.read_text(encoding="utf-8").splitlines()))

        run([amount_case(i, 100 * i) for i in range(1, 6)], out=out, on_row=on_row)
        assert seen_on_disk == [1, 2, 3, 4, 5]
        assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [
            f"amt-{i:03d}" for i in range(1, 6)
        ]

    def test_generated_output_usage_is_recorded(self) -> None:
        class Reply(str):
            usage: ClassVar[dict[str, int]] = {"input_tokens": 7, "output_tokens": 3}

        result = run([Case(id="a", input="hola")], generate_model=lambda p: Reply("chau"))
        assert result.rows[0]["usage"] == {"input_tokens": 7, "output_tokens": 3}
        assert result.usage["input_tokens"] == 7 and result.usage["output_tokens"] == 3
        assert result.usage["cached_input_tokens"] == 0

    def test_usage_replayed_from_a_cache_is_counted_apart(self) -> None:
        class Replayed(str):
            usage: ClassVar[dict[str, int]] = {"input_tokens": 7, "output_tokens": 3}
            cached = True

        result = run([Case(id="a", input="hola")], generate_model=lambda p: Replayed("chau"))
        assert result.rows[0]["usage"] == {"cached_input_tokens": 7, "cached_output_tokens": 3}

    def test_async_models_are_awaited(self) -> None:
        async def model(prompt: str) -> str:
            return prompt.upper()

        result = run([Case(id="a", input="hola")], generate_model=model)
        assert result.rows[0]["output"] == "HOLA"

    def test_prompt_template(self) -> None:
        prompts: list[str] = []
        run(
            [Case(id="a", input="hola")],
            generate_model=lambda p: prompts.append(p) or "x",
            prompt_template="Q: {input}\nA:",
        )
        assert prompts == ["Q: hola\nA:"]


class TestConcurrency:
    def test_any_executor_can_run_the_cases(self) -> None:
        cases = [amount_case(i, i) for i in range(1, 21)]
        with cf.ThreadPoolExecutor(max_workers=3) as pool:
            result = run(cases, executor=pool)
        assert result.total == 20 and result.categories["amount_extraction"].passed == 20

    def test_concurrency_bounds_cases_in_flight(self) -> None:
        lock = threading.Lock()
        in_flight = peak = 0
        gate = threading.Event()

        def slow(prompt: str) -> str:
            nonlocal in_flight, peak
            with lock:
                in_flight += 1
                peak = max(peak, in_flight)
            gate.wait(0.02)
            with lock:
                in_flight -= 1
            return "ok"

        run([Case(id=str(i), input="x") for i in range(30)], generate_model=slow, concurrency=4)
        assert 1 < peak <= 4

    def test_max_errors_stops_the_run_and_marks_it_incomplete(self) -> None:
        def broken(prompt: str) -> str:
            raise TimeoutError("too slow")

        cases = [Case(id=str(i), input="x") for i in range(50)]
        result = run(cases, generate_model=broken, max_errors=2, concurrency=1)
        assert not result.complete
        assert "more than 2" in (result.stopped_reason or "")
        assert 3 <= result.total < 50

    def test_bad_concurrency_is_refused(self) -> None:
        with pytest.raises(ValueError, match="concurrency"):
            run([], concurrency=0)


A = '{"id": "a", "status": "pass", "checks": {"contains:x": true}}'
B = '{"id": "b", "status": "fail"}'


class TestReadRows:
    def test_a_cases_file_is_not_taken_for_results(self, tmp_path) -> None:
        path = tmp_path / "cases.jsonl"
        path.write_text('{"id": "a", "output": "x"}\n', encoding="utf-8")
        with pytest.raises(ResultsFileError, match=r"cases.jsonl:1: not a result row"):
            read_rows(path)

    def test_partial_last_line_is_detected_and_repaired(self, tmp_path) -> None:
        path = tmp_path / "rows.jsonl"
        path.write_text(f"{A}\n{B}\n" + '{"id": "c", "stat', encoding="utf-8")
        with pytest.raises(ResultsFileError, match=r"rows.jsonl:3: the last line is not complete"):
            read_rows(path)
        assert [r["id"] for r in read_rows(path, repair=True)] == ["a", "b"]
        assert path.read_text() == f"{A}\n{B}\n"

    def test_a_complete_bad_line_is_an_error_even_with_repair(self, tmp_path) -> None:
        path = tmp_path / "rows.jsonl"
        path.write_text(f"{A}\nnot json\n{B}\n", encoding="utf-8")
        with pytest.raises(ResultsFileError, match=r":2: not valid JSON"):
            read_rows(path, repair=True)

    def test_a_complete_last_line_without_newline_is_kept(self, tmp_path) -> None:
        path = tmp_path / "rows.jsonl"
        path.write_text(f"{A}\n{B}", encoding="utf-8")
        assert [r["id"] for r in read_rows(path)] == ["a", "b"]  # a whole object: a whole row
        assert [r["id"] for r in read_rows(path, repair=True)] == ["a", "b"]
        assert path.read_text() == f"{A}\n{B}\n"  # a resumed run's rows start a line


class TestShards:
    def test_shards_partition_the_ids_and_are_stable(self) -> None:
        ids = [f"case-{i}" for i in range(1000)]
        shards = [shard_index(i, 4) for i in ids]
        assert set(shards) == {1, 2, 3, 4}
        assert shards == [shard_index(i, 4) for i in ids]
        # adding cases never moves an existing one
        assert [shard_index(i, 4) for i in ids[:500]] == shards[:500]
        # the split is roughly even: each shard within 4 sd of 250 (sd = sqrt(1000·¼·¾) ≈ 13.7)
        for k in (1, 2, 3, 4):
            assert abs(shards.count(k) - 250) < 4 * 13.7

    @pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
    def test_bad_shard_text(self, text: str) -> None:
        with pytest.raises(InputError, match="shard: expected I/N"):
            parse_shard(text)


def test_progress_is_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = StatusLine(3, stream)
    for _ in range(3):
        progress.update({"status": "pass"})
    progress.close()
    assert stream.getvalue() == ""


def test_progress_draws_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    progress = StatusLine(2, stream)
    progress.update({"status": "fail"})
    progress.update({"status": "error"})
    progress.close()
    text = stream.getvalue()
    assert "2/2" in text and "1 failed" in text and "1 errors" in text


class TestCaseTimeout:
    def test_a_case_past_its_timeout_is_an_error_row_and_the_run_goes_on(self) -> None:
        release = threading.Event()

        def model(prompt: str) -> str:
            if prompt == "hangs":
                release.wait(10)  # far longer than the timeout; released at the end
            return "ok"

        ok = {"contains": ["ok"]}
        cases = [Case(id="slow", input="hangs", expect=ok), Case(id="a", input="x", expect=ok),
                 Case(id="b", input="y", expect=ok)]  # fmt: skip
        try:
            result = run(cases, generate_model=model, concurrency=2, case_timeout=0.2)
        finally:
            release.set()
        rows = {r["id"]: r for r in result.rows}
        assert rows["slow"]["status"] == "error"
        assert "longer than 0.2 s" in rows["slow"]["error"]
        assert rows["a"]["status"] == rows["b"]["status"] == "pass"
        assert result.total == 3 and result.errors == 1 and result.abandoned == 1

    def test_fast_cases_are_unaffected(self) -> None:
        cases = [Case(id=str(i), output="x", expect={"max_words": 1}) for i in range(20)]
        result = run(cases, case_timeout=5)
        assert result.categories["default"].passed == 20 and result.abandoned == 0

    def test_bad_timeout(self) -> None:
        with pytest.raises(ValueError, match="case_timeout"):
            run([], case_timeout=0)


class TestFailFast:
    @staticmethod
    def unreachable(prompt: str) -> str:
        raise ConnectionRefusedError("cannot reach 127.0.0.1:9")

    def test_a_run_whose_first_cases_all_error_stops_early(self) -> None:
        cases = [Case(id=str(i), input="x") for i in range(100)]
        result = run(cases, generate_model=self.unreachable, concurrency=1)
        assert not result.complete
        assert result.stopped_reason.startswith("10 cases errored before any model call")
        assert "cannot reach" in result.stopped_reason
        assert 10 <= result.total < 100

    def test_one_success_first_means_errors_do_not_stop_the_run(self) -> None:
        def sometimes(prompt: str) -> str:
            if prompt == "ok":
                return "fine"
            raise ConnectionRefusedError("down")

        cases = [Case(id="0", input="ok")] + [Case(id=str(i), input="x") for i in range(1, 30)]
        result = run(cases, generate_model=sometimes, concurrency=1)
        assert result.complete and result.total == 30 and result.errors == 29

    def test_fail_fast_can_be_turned_off(self) -> None:
        cases = [Case(id=str(i), input="x") for i in range(15)]
        result = run(cases, generate_model=self.unreachable, fail_fast=None)
        assert result.complete and result.errors == 15

    def test_cases_without_a_model_do_not_hide_a_dead_judge(self) -> None:
        from tinyeval import Judge

        def dead(prompt: str) -> str:
            raise ConnectionRefusedError("cannot reach 127.0.0.1:9")

        # 40 cases the judge skips (another category) finish first and pass
        cases = [Case(id=f"t{i}", output="ok", category="tone") for i in range(40)]
        cases += [Case(id=f"s{i}", output="ok", context="ok", category="support")
                  for i in range(30)]  # fmt: skip
        result = run(cases, judges=[Judge("unsupported-claims")], judge_model=dead,
                     judge_categories=["support"], concurrency=1)  # fmt: skip
        assert not result.complete and "before any model call succeeded" in result.stopped_reason
        assert 10 <= result.categories["support"].errors < 30  # cases in flight still finish


def test_a_case_nothing_looked_at_is_unchecked_and_one_without_output_errors() -> None:
    assert evaluate_case(Case(id="b", output="anything"))["status"] == "unchecked"
    assert evaluate_case(Case(id="c"))["status"] == "error"


class _StopAt(Observer):
    name = "stop_at"

    def __init__(self, rows: int) -> None:
        self.rows, self.seen = rows, 0

    def row(self, row: dict[str, Any], result: object) -> str | None:
        self.seen += 1
        return f"{self.rows} rows were enough" if self.seen >= self.rows else None

    def manifest(self) -> int:
        return self.rows


class _SkipOdd(Observer):
    name = "skip_odd"

    def cases(self, cases: Iterable[Case]) -> Iterable[Case]:
        return reversed(list(cases))

    def skip(self, case: Case) -> bool:
        return int(case.id) % 2 == 1


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_observer_stops_the_run_and_says_why(concurrency: int) -> None:
    cases = [Case(id=str(i), output="x", expect={"contains": ["x"]}) for i in range(50)]
    result = run(cases, observers=[_StopAt(5)], concurrency=concurrency)
    assert not result.complete
    assert result.stopped_by == result.stopped_reason == "5 rows were enough"
    assert 5 <= result.total <= 5 + 2 * concurrency + 2


def test_an_observer_expands_reorders_and_skips_cases() -> None:
    cases = [Case(id=str(i), output="x", expect={"contains": ["x"]}) for i in range(6)]
    result = run(cases, observers=[_SkipOdd()])
    assert result.complete and [row["id"] for row in result.rows] == ["4", "2", "0"]
    assert result.rows[0]["run"]["cases"] == 6  # the manifest counts the cases given


def test_resume_refuses_rows_an_observer_recorded_otherwise(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    cases = [Case(id=str(i), output="x", expect={"contains": ["x"]}) for i in range(20)]
    run(cases, out=out, observers=[_StopAt(3)])
    assert run(cases, out=out, resume=True, observers=[_StopAt(3)]).resumed == 3
    with pytest.raises(RunnerError, match="stop_at"):
        run(cases, out=out, resume=True, observers=[_StopAt(4)])
    with pytest.raises(RunnerError, match="the same settings"):
        run(cases, out=out, resume=True)


def test_resume_names_the_judge_setting_that_changed(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    row = {"id": "a", "status": "pass", "judge_model": "builtin", "dataset_fingerprint": "d",
           "judges": {"tone": {"verdict": "PASS", "rubric_fingerprint": "r1"}}}  # fmt: skip
    write_records(out, [row])
    assert resumable_rows(out, "d", {"tone": "r1"}, "builtin", {}) == [row]
    for now, spec, said in [
        ({}, "builtin", 'the rubric of judge \'tone\' "r1", this run has "none: no such judge"'),
        ({"tone": "r2"}, "builtin", 'the rubric of judge \'tone\' "r1", this run has "r2"'),
        ({"tone": "r1"}, "py:m", 'judge model "builtin", this run has "py:m"'),
    ]:
        with pytest.raises(ResultsFileError) as caught:
            resumable_rows(out, "d", now, spec, {})
        assert f"the case 'a' was run with {said}: resuming would mix the two" in str(caught.value)


def test_a_dry_run_takes_runs_options_and_no_other() -> None:
    plan = dry_run([Case(id="a", input="hi")], generate_model="cmd:cat", regenerate=True)
    assert plan.calls["generate"] == 1 and plan.first_prompt["generate"] == "hi"
    with pytest.raises(TypeError, match="trials"):
        dry_run([Case(id="a", input="hi")], trials=3)
