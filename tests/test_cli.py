"""The command line end to end, in a subprocess, as a user would run it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from child import run_tinyeval

ROOT = Path(__file__).resolve().parent.parent


def tinyeval(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_tinyeval(args, cwd or ROOT, stdin=stdin, timeout=120)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    return path


def amount_records(right: int, wrong: int) -> list[dict]:
    """`right` correct extractions of $ 1.250,50 and `wrong` that read it as 1250.5."""
    records = []
    for i in range(right + wrong):
        cents = 125050 if i < right else 1250
        records.append(
            {
                "id": f"amt-{i:03d}",
                "category": "amount_extraction",
                "input": "pasale $ 1.250,50 a Juan",
                "output": json.dumps({"amount_cents": cents}),
                "expect": {"valid_json": True, "equals": {"amount_cents": 125050}},
            }
        )
    return records


def tone_records(n: int) -> list[dict]:
    return [
        {
            "id": f"tone-{i}",
            "category": "tone",
            "output": "Entiendo tu enojo, lo resolvemos hoy.",
            "expect": {"not_contains": ["calmate"]},
        }
        for i in range(n)
    ]


class TestTheGateBlocksPerCategory:
    def test_17_of_20_blocks_under_100_percent_although_the_global_rate_is_high(
        self, tmp_path: Path
    ) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(17, 3) + tone_records(80))
        out = tmp_path / "rows.jsonl"
        done = tinyeval(
            "run",
            str(cases),
            "--out",
            str(out),
            "--threshold",
            "amount_extraction=1.0",
            "--default-threshold",
            "0.9",
        )
        assert done.returncode == 1, done.stderr
        lines = done.stdout.splitlines()
        amount = next(line for line in lines if line.startswith("amount_extraction"))
        # 17/20: p̂ = 0.85, z = 1.96 → Wilson (0.640, 0.948)
        assert "17/20 = 85.0% [64.0%, 94.8%]" in amount
        assert "BLOCKS" in amount and "100.0%" in amount
        overall = next(line for line in lines if line.startswith("global"))
        assert "97/100 = 97.0%" in overall and "never gates" in overall
        tone = next(line for line in lines if line.startswith("tone"))
        assert tone.rstrip().endswith("ok")
        assert "gate: FAILED" in done.stdout
        assert len(out.read_text().splitlines()) == 100

    def test_passing_gate_exits_0(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(20, 0))
        done = tinyeval(
            "run",
            str(cases),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--threshold",
            "amount_extraction=100%",
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "gate: PASSED" in done.stdout

    def test_no_threshold_reports_without_gating(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(1, 1))
        done = tinyeval("run", str(cases), "--out", str(tmp_path / "o.jsonl"))
        assert done.returncode == 0
        assert "no threshold" in done.stdout

    def test_a_threshold_for_a_category_with_no_cases_blocks(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(2, 0))
        done = tinyeval(
            "run", str(cases), "--out", str(tmp_path / "o.jsonl"), "--threshold", "safety=0.9"
        )
        assert done.returncode == 1
        assert "no cases in this category" in done.stdout

    def test_gate_on_the_lower_bound(self, tmp_path: Path) -> None:
        # 20/20 has a Wilson lower bound of 0.839 (z = 1.96: 1 − z²/(n+z²) = 20/23.84)
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(20, 0))
        base = [
            "run",
            str(cases),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--threshold",
            "amount_extraction=0.85",
        ]
        assert tinyeval(*base).returncode == 0
        assert tinyeval(*base, "--inconclusive", "block").returncode == 1

    def test_json_summary(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(17, 3))
        done = tinyeval(
            "run",
            str(cases),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--json",
            "--threshold",
            "amount_extraction=1",
        )
        assert done.returncode == 1
        summary = json.loads(done.stdout)
        category = summary["gate"]["categories"]["amount_extraction"]
        assert (category["passed"], category["total"], category["blocking"]) == (17, 20, True)
        assert round(category["low"], 3) == 0.640 and round(category["high"], 3) == 0.948
        assert summary["gate"]["blocking"] == ["amount_extraction"]
        assert summary["cases"] == 20 and summary["complete"] is True
        assert len(summary["dataset_fingerprint"]) == 16


class TestBadInput:
    @pytest.mark.parametrize(
        ("content", "where", "field"),
        [
            ('{"id": "a", "output": "x"}\n{"output": "y"}\n', ":2:", "id"),
            ('{"id": "a", "output": "x"}\n{"id": "a", "output": "y"}\n', ":2:", "id"),
            ('{"id": "a", "expect": {"not_contain": ["x"]}}\n', ":1:", "not_contains"),
            ('{"id": "a", "expect": {"regex": "("}}\n', ":1:", "regex"),
            ('{"id": "a", "expect": {"max_chars": -1}}\n', ":1:", "max_chars"),
            ('{"id": "a", "expect": {"equals": [1]}}\n', ":1:", "equals"),
            ('{"id": "a"}\n{"id": "b", "output": \n', ":2:", "JSON"),
            ("[1, 2]\n", ":1:", "object"),
        ],
    )
    def test_one_line_exit_2_and_no_rows_written(
        self, tmp_path: Path, content: str, where: str, field: str
    ) -> None:
        cases = tmp_path / "cases.jsonl"
        cases.write_text(content, encoding="utf-8")
        out = tmp_path / "rows.jsonl"
        done = tinyeval("run", str(cases), "--out", str(out))
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("tinyeval: error: ")
        assert f"cases.jsonl{where}" in lines[0] and field in lines[0]
        assert not out.exists()

    def test_missing_file(self, tmp_path: Path) -> None:
        done = tinyeval("run", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o.jsonl"))
        assert done.returncode == 2
        assert "nope.jsonl" in done.stderr and "Traceback" not in done.stderr

    def test_bad_threshold_is_refused_before_running(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(1, 0))
        out = tmp_path / "o.jsonl"
        done = tinyeval(
            "run", str(cases), "--out", str(out), "--threshold", "amount_extraction=1.5"
        )
        assert done.returncode == 2 and "threshold" in done.stderr
        assert not out.exists()

    def test_unknown_option_is_usage_error(self) -> None:
        done = tinyeval("run", "--no-such-option")
        assert done.returncode == 2


class TestStdinResumeShards:
    def test_cases_from_stdin(self, tmp_path: Path) -> None:
        records = amount_records(2, 1)
        stdin = "".join(json.dumps(r) + "\n" for r in records)
        done = tinyeval("run", "-", "--out", str(tmp_path / "o.jsonl"), "--json", stdin=stdin)
        assert json.loads(done.stdout)["gate"]["overall"]["total"] == 3

    def test_resume_keeps_rows_and_runs_only_the_rest(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(5, 0))
        out = tmp_path / "rows.jsonl"
        assert tinyeval("run", str(cases), "--out", str(out)).returncode == 0
        rows = out.read_text().splitlines()
        # as after a kill -9: two rows lost and half a line left behind
        out.write_text("\n".join(rows[:3]) + "\n" + rows[3][:25], encoding="utf-8")
        done = tinyeval("run", str(cases), "--out", str(out), "--resume", "--json")
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["resumed_rows"] == 3
        assert summary["gate"]["overall"]["total"] == 5
        ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
        assert sorted(ids) == [f"amt-{i:03d}" for i in range(5)]

    def test_resume_refuses_rows_from_another_dataset(self, tmp_path: Path) -> None:
        out = tmp_path / "rows.jsonl"
        first = write_jsonl(tmp_path / "a.jsonl", amount_records(2, 0))
        second = write_jsonl(tmp_path / "b.jsonl", amount_records(3, 0))
        assert tinyeval("run", str(first), "--out", str(out)).returncode == 0
        done = tinyeval("run", str(second), "--out", str(out), "--resume")
        assert done.returncode == 2 and "another dataset" in done.stderr

    def test_shards_merge_to_the_whole_run(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(17, 3) + tone_records(10))
        parts = []
        for i in (1, 2, 3):
            part = tmp_path / f"shard{i}.jsonl"
            done = tinyeval("run", str(cases), "--out", str(part), "--shard", f"{i}/3", "-q")
            assert done.returncode == 0, done.stderr
            parts.append(str(part))
        merged = tmp_path / "merged.jsonl"
        assert tinyeval("merge", *parts, "--out", str(merged)).returncode == 0
        done = tinyeval("gate", str(merged), "--threshold", "amount_extraction=1", "--json")
        assert done.returncode == 1
        category = json.loads(done.stdout)["gate"]["categories"]["amount_extraction"]
        assert (category["passed"], category["total"]) == (17, 20)

    def test_merge_refuses_a_case_twice(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(2, 0))
        out = tmp_path / "rows.jsonl"
        tinyeval("run", str(cases), "--out", str(out))
        merged = tmp_path / "merged.jsonl"
        done = tinyeval("merge", str(out), str(out), "--out", str(merged))
        assert done.returncode == 2 and "amt-000" in done.stderr
        assert not merged.exists()


def test_max_errors_exits_3(tmp_path: Path) -> None:
    module = tmp_path / "broken_model.py"
    module.write_text(
        "def generate(prompt):\n    raise TimeoutError('no answer')\n", encoding="utf-8"
    )
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"id": str(i), "input": "x"} for i in range(30)])
    done = tinyeval(
        "run",
        str(cases),
        "--out",
        str(tmp_path / "o.jsonl"),
        "--generate-model",
        "py:broken_model:generate",
        "--max-errors",
        "2",
        "--concurrency",
        "1",
        cwd=tmp_path,
    )
    assert done.returncode == 3, done.stderr
    assert "stopped early: more than 2 cases errored" in done.stderr


def test_version() -> None:
    from tinyeval import __version__

    done = tinyeval("--version")
    assert done.returncode == 0 and __version__ in done.stdout


def test_case_timeout_turns_a_stuck_case_into_an_error_row(tmp_path: Path) -> None:
    module = tmp_path / "sleepy.py"
    module.write_text(
        "import time\n"
        "def generate(prompt):\n"
        "    if prompt == 'stuck':\n"
        "        time.sleep(20)\n"
        "    return 'ok'\n",
        encoding="utf-8",
    )
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [{"id": "stuck", "input": "stuck"}, {"id": "a", "input": "x"}, {"id": "b", "input": "y"}],
    )
    out = tmp_path / "rows.jsonl"
    done = tinyeval("run", str(cases), "--out", str(out), "--generate-model", "py:sleepy:generate",
                    "--case-timeout", "0.5", "--json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {json.loads(line)["id"]: json.loads(line) for line in out.read_text().splitlines()}
    assert rows["stuck"]["status"] == "error" and "per-case timeout" in rows["stuck"]["error"]
    assert json.loads(done.stdout)["errors"] == 1


class TestRefusedBeforeRunning:
    def refused(self, tmp_path: Path, *args: str, records: list[dict] | None = None) -> str:
        cases = write_jsonl(
            tmp_path / "cases.jsonl", records or amount_records(2, 0) + tone_records(2)
        )
        out = tmp_path / "rows.jsonl"
        done = tinyeval("run", str(cases), "--out", str(out), *args)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not out.exists()
        return done.stderr

    def test_out_over_the_input_file(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(2, 0))
        done = tinyeval("run", str(cases), "--out", str(cases))
        assert done.returncode == 2 and "is the input file" in done.stderr
        assert len(cases.read_text().splitlines()) == 2  # untouched

    @pytest.mark.parametrize("option", ["--out", "--junit", "--markdown"])
    def test_an_output_that_is_a_directory(self, tmp_path: Path, option: str) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", amount_records(2, 0))
        (tmp_path / "here").mkdir()
        done = tinyeval("run", str(cases), option, str(tmp_path / "here"))
        assert done.returncode == 2, done.stdout + done.stderr  # was 3: "writing … failed"
        assert done.stderr.strip().endswith("is a directory; expected the path of a file")
        assert len(done.stderr.strip().splitlines()) == 1

    def test_a_misspelt_threshold_category(self, tmp_path: Path) -> None:
        message = self.refused(tmp_path, "--threshold", "amount_extractoin=1")
        assert "did you mean 'amount_extraction'?" in message

    def test_an_unknown_judge_category(self, tmp_path: Path) -> None:
        message = self.refused(tmp_path, "--criterion", "unsupported-claims",
                               "--judge-category", "support")  # fmt: skip
        assert "no case has the category 'support'" in message

    def test_options_that_need_a_partner(self, tmp_path: Path) -> None:
        assert "--judge-model has no effect without --criterion" in self.refused(
            tmp_path, "--judge-model", "builtin"
        )
        assert "--prompt-template has no effect without --generate-model" in self.refused(
            tmp_path, "--prompt-template", "t.txt"
        )

    def test_cases_without_output_and_no_generate_model(self, tmp_path: Path) -> None:
        message = self.refused(tmp_path, records=[{"id": "a", "output": "x"}, {"id": "b"}])
        assert "1 case without an output (the first at" in message and "cases.jsonl:2" in message

    def test_a_threshold_given_twice(self, tmp_path: Path) -> None:
        message = self.refused(tmp_path, "--threshold", "tone=0.9", "--threshold", "tone=0.8")
        assert "given twice" in message

    def test_a_shard_out_of_range_is_one_line(self, tmp_path: Path) -> None:
        assert "--shard" in self.refused(tmp_path, "--shard", "4/3")

    def test_a_vanished_category_still_blocks_rather_than_refusing(self, tmp_path: Path) -> None:
        cases = write_jsonl(tmp_path / "cases.jsonl", tone_records(2))
        done = tinyeval("run", str(cases), "--out", str(tmp_path / "o.jsonl"),
                        "--threshold", "safety=0.99")  # fmt: skip
        assert done.returncode == 1 and "no cases in this category" in done.stdout


def test_a_library_error_about_a_setting_names_the_option_that_gave_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the library says "max_errors: …" (it knows no options); the command line says --max-errors
    from tinyeval.cli import main
    from tinyeval.errors import InputError
    from tinyeval.session import RunSettings, Session

    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "output": "x", "expect": {"max_words": 3}}\n')
    assert main(["run", str(cases), "--max-errors", "-1", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == "tinyeval: error: --max-errors: must be 0 or more, got -1\n"
    with pytest.raises(InputError) as caught:
        Session(RunSettings(cases=str(cases), max_errors=-1))
    assert str(caught.value) == "max_errors: must be 0 or more, got -1"


def test_the_run_command_and_run_settings_have_the_same_defaults() -> None:
    """A setting left out means the same thing from Python as on the command line."""
    import argparse
    from dataclasses import MISSING, fields

    from tinyeval.cli import build_parser
    from tinyeval.session import RunSettings

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = commands.choices["run"]
    given = {a.dest: a.default for a in parser._actions}
    spelled_apart = {"fields": "field", "thresholds": "threshold", "judges": "suite_judges"}
    compared = 0
    for setting in fields(RunSettings):
        dest = spelled_apart.get(setting.name, setting.name)
        if dest not in given or (setting.default is MISSING and setting.default_factory is MISSING):
            continue
        default = (setting.default if setting.default is not MISSING
                   else setting.default_factory())  # fmt: skip
        cli_default = given[dest]
        if isinstance(default, tuple | list | dict) or default is None:
            assert not default and not cli_default, setting.name  # nothing, either way
        else:
            assert default == cli_default, (setting.name, default, cli_default)
        compared += 1
    assert compared >= 50


def test_a_command_line_that_names_its_command_builds_that_command_alone() -> None:
    """``main`` builds only the named command's parser, the core's or an extra's (through
    ``_EXTRAS["command"]``), and that parser is the one the whole parser has."""
    import argparse

    from tinyeval import _EXTRAS
    from tinyeval.cli import _CORE, build_parser

    def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return dict(action.choices)

    whole = commands(build_parser())
    assert set(whole) == {*_CORE, *_EXTRAS["command"]}
    for name in whole:
        alone = commands(build_parser(name))
        assert name in alone and set(alone) <= set(whole), name
        assert alone[name].format_help() == whole[name].format_help(), name


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--help"], "    cost      estimate"),  # the top-level help lists every command
        (["--help", "run"], "    cost      estimate"),
        (["rn", "cases.jsonl"], "invalid choice: 'rn' (choose from 'run', 'gate'"),
    ],
)
def test_help_and_a_misspelt_command_still_see_every_command(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tinyeval.cli import main

    with pytest.raises(SystemExit):
        main(argv)
    captured = capsys.readouterr()
    assert expected in captured.out + captured.err


def test_run_help_shows_at_most_30_core_options_then_each_extras_group(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The core's options come first; each extra's come after, under a title naming it."""
    from tinyeval.cli import main
    from tinyeval.suite import CI, ESTIMATES, GROUPS, JUDGES, RAG, SCALE

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    first_extra = min(text.index(f"\n{title}:") for title in (ESTIMATES, SCALE, JUDGES, RAG, CI))
    core = [line for line in text[:first_extra].splitlines() if line.startswith("  -")]
    assert 20 <= len(core) <= 30
    assert [title for title in GROUPS if f"\n{title}:" in text] == list(GROUPS)


def test_every_option_of_run_is_a_setting_or_says_how_to_show_the_run() -> None:
    """The run settings are spelled once: each option of run is a RunSettings field, but for
    the few that say how the run is shown."""
    import argparse
    from dataclasses import fields

    from tinyeval.cli import build_parser
    from tinyeval.suite import RunSettings

    action = next(
        a for a in build_parser("run")._actions if isinstance(a, argparse._SubParsersAction)
    )
    dests = {a.dest for a in action.choices["run"]._actions}
    shown = {"help", "cases", "config", "json", "quiet", "dry_run", "github"}
    assert dests - shown == {f.name for f in fields(RunSettings) if "help" in f.metadata}
