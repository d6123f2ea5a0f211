"""Runs with a judge, end to end: scripted py: models that raise, babble or answer empty.

Whatever the judge model does, every case gets exactly one row and nothing
that did not parse counts as a pass.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from child import run_tinyeval

from tinyeval import Judge, run
from tinyeval.dataset import Case
from tinyeval.records import primary_verdict

ROOT = Path(__file__).resolve().parent.parent

SCRIPTED_MODELS = textwrap.dedent(
    """
    import itertools

    _calls = itertools.count()

    def always_pass(prompt):
        return "PASS\\nEverything is supported."

    def raises(prompt):
        raise ConnectionError("judge unreachable")

    def babbles(prompt):
        return "Well, looking at this response carefully, I would say it is mostly fine. PASS"

    def empty(prompt):
        return ""

    def bold(prompt):
        return "**PASS**\\nLooks good."

    def alternating(prompt, sample=0):
        return "PASS\\nok" if sample % 2 == 0 else "FAIL\\nno"

    def none(prompt):
        return None

    def huge(prompt):
        return "PASS\\n" + "x" * 5_000_000
    """
)


def cases_file(tmp_path: Path, n: int = 6) -> Path:
    path = tmp_path / "cases.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "id": f"sup-{i}",
                        "category": "support",
                        "input": "¿Cuál es el límite?",
                        "context": "El límite diario es de $ 500.000.",
                        "output": "El límite diario es de $ 500.000.",
                    }
                )
                + "\n"
            )
    return path


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "scripted.py").write_text(SCRIPTED_MODELS, encoding="utf-8")
    return run_tinyeval(args, tmp_path, path=[tmp_path], timeout=120)


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_huge_judge_reply_is_kept_once_clipped_and_still_parses(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    done = run_cli(tmp_path, "run", str(cases_file(tmp_path, 3)), "--out", str(out),
                   "--criterion", "unsupported-claims", "--judge-model", "py:scripted:huge",
                   "--no-cache")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size < 3 * 30_000  # not 3 cases x 2 copies x 5 MB
    for row in rows_of(out):
        verdict = primary_verdict(row)
        assert (verdict["verdict"], row["status"]) == ("PASS", "pass")
        (reply,) = verdict["raw"]
        assert reply == "PASS\n" + "x" * 19_995 + "\n[tinyeval: 4,980,005 characters cut]"
        assert verdict["reason"] == "x" * 499 + "…"


@pytest.mark.parametrize(
    ("model", "status", "failure"),
    [
        ("raises", "error", "error"),
        ("babbles", "fail", "unparsed"),
        ("empty", "fail", "unparsed"),
        ("bold", "fail", "unparsed"),
        ("none", "error", "error"),
    ],
)
def test_broken_judges_never_pass_and_every_case_has_one_row(
    tmp_path: Path, model: str, status: str, failure: str
) -> None:
    cases = cases_file(tmp_path)
    out = tmp_path / "rows.jsonl"
    done = run_cli(
        tmp_path,
        "run",
        str(cases),
        "--out",
        str(out),
        "--criterion",
        "unsupported-claims",
        "--judge-model",
        f"py:scripted:{model}",
        "--no-cache",
        "--json",
        "--threshold",
        "support=0.5",
    )
    assert done.returncode == 1, done.stderr
    rows = rows_of(out)
    assert sorted(r["id"] for r in rows) == [f"sup-{i}" for i in range(6)]
    for row in rows:
        assert row["status"] == status
        assert primary_verdict(row)["verdict"] is None
        assert primary_verdict(row)["failure"] == failure
        assert row["judge_model"] == f"py:scripted:{model}"
        assert len(row["rubric_fingerprint"]) == 64
    summary = json.loads(done.stdout)
    category = summary["gate"]["categories"]["support"]
    assert (category["passed"], category["total"]) == (0, 6)
    if failure == "unparsed":
        assert summary["judge"] == {"judged": 6, "unparsed": 6, "unparsed_rate": 1.0}


def test_unparsed_rate_is_printed_in_the_summary(tmp_path: Path) -> None:
    done = run_cli(
        tmp_path,
        "run",
        str(cases_file(tmp_path)),
        "--out",
        "rows.jsonl",
        "--criterion",
        "unsupported-claims",
        "--judge-model",
        "py:scripted:babbles",
    )
    assert "judge verdicts that did not parse: 6/6 = 100.0%" in done.stdout


def test_a_passing_judge_passes(tmp_path: Path) -> None:
    done = run_cli(
        tmp_path,
        "run",
        str(cases_file(tmp_path)),
        "--out",
        "rows.jsonl",
        "--criterion",
        "unsupported-claims",
        "--judge-model",
        "py:scripted:always_pass",
        "--threshold",
        "support=1",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_votes_and_the_review_queue(tmp_path: Path) -> None:
    out, review = tmp_path / "rows.jsonl", tmp_path / "review.jsonl"
    done = run_cli(
        tmp_path,
        "run",
        str(cases_file(tmp_path, 4)),
        "--out",
        str(out),
        "--criterion",
        "unsupported-claims",
        "--judge-model",
        "py:scripted:alternating",
        "--votes",
        "3",
        "--review-out",
        str(review),
    )
    assert done.returncode == 0, done.stderr
    for row in rows_of(out):
        # samples 0, 1, 2 → PASS, FAIL, PASS: a 2-1 majority for PASS, not unanimous
        assert primary_verdict(row)["votes"] == ["PASS", "FAIL", "PASS"]
        assert (
            primary_verdict(row)["verdict"] == "PASS" and primary_verdict(row)["unanimous"] is False
        )
    assert len(rows_of(review)) == 4
    assert "non-unanimous verdicts for review: 4" in done.stdout


def test_several_criteria_each_have_a_verdict(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    rubric = tmp_path / "tone.json"
    rubric.write_text(json.dumps({"name": "polite", "criterion": "The response is polite."}))
    done = run_cli(
        tmp_path,
        "run",
        str(cases_file(tmp_path, 2)),
        "--out",
        str(out),
        "--criterion",
        "unsupported-claims",
        "--rubric",
        str(rubric),
        "--judge-model",
        "py:scripted:always_pass",
    )
    assert done.returncode == 0, done.stderr
    row = rows_of(out)[0]
    assert set(row["judges"]) == {"unsupported-claims", "polite"}
    assert primary_verdict(row)["name"] == "unsupported-claims"


def test_judge_is_skipped_when_a_check_already_failed() -> None:
    calls: list[str] = []

    def model(prompt: str) -> str:
        calls.append(prompt)
        return "PASS\nfine"

    cases = [Case(id="a", output="x", context="y", expect={"contains": ["y"]}),
             Case(id="b", output="y", context="y")]  # fmt: skip
    result = run(cases, judges=Judge("unsupported-claims"), judge_model=model)
    rows = {r["id"]: r for r in result.rows}
    assert rows["a"]["judge_skipped"] == "a code check failed" and rows["a"]["status"] == "fail"
    assert primary_verdict(rows["b"])["verdict"] == "PASS" and len(calls) == 1
    run(cases[:1], judges=Judge("unsupported-claims"), judge_model=model, judge_all=True)
    assert len(calls) == 2


def test_judge_categories_restrict_the_judge() -> None:
    cases = [
        Case(id="a", output="x", category="tone", expect={"max_words": 1}),
        Case(id="b", output="y", category="support", context="y"),
    ]
    result = run(
        cases,
        judges=[Judge("unsupported-claims")],
        judge_model=lambda p: "FAIL\nno",
        judge_categories=["support"],
    )
    rows = {r["id"]: r for r in result.rows}
    assert rows["a"]["status"] == "pass" and rows["a"]["judge_skipped"] == "category not judged"
    assert rows["b"]["status"] == "fail"


def test_bundled_example_with_the_builtin_judge(tmp_path: Path) -> None:
    """The README's first command: offline, amount_extraction blocks at 17/20."""
    done = run_cli(
        tmp_path,
        "run",
        str(ROOT / "examples" / "cases.jsonl"),
        "--out",
        "rows.jsonl",
        "--criterion",
        "unsupported-claims",
        "--judge-category",
        "support_answers",
        "--threshold",
        "amount_extraction=1.0",
        "--json",
    )
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    amount = summary["gate"]["categories"]["amount_extraction"]
    assert (amount["passed"], amount["total"], amount["blocking"]) == (17, 20, True)
    assert summary["judge"]["judged"] == 18  # every support case reaches the judge
    rows = rows_of(tmp_path / "rows.jsonl")
    assert len(rows) == 62
    judged = [r for r in rows if primary_verdict(r)]
    assert {r["judge_model"] for r in judged} == {"builtin"}


def test_the_cases_own_labels_decide_before_a_saved_calibration(tmp_path: Path) -> None:
    example = ROOT / "examples"
    base = [
        "run",
        str(example / "cases.jsonl"),
        "--criterion",
        "unsupported-claims",
        "--judge-category",
        "support_answers",
    ]
    assert run_cli(tmp_path, *base, "--out", "first.jsonl").returncode == 0
    saved = run_cli(
        tmp_path, "calibrate", "first.jsonl", str(example / "labels.jsonl"), "--save", "cal.json"
    )
    assert saved.returncode == 0, saved.stderr
    done = run_cli(tmp_path, *base, "--out", "second.jsonl", "--calibration", "cal.json", "--json")
    assert done.returncode == 0, done.stderr
    support = json.loads(done.stdout)["gate"]["categories"]["support_answers"]
    # Every bundled support case carries its label (12 PASS of 18): people's rate is 2/3,
    # from the labels themselves; Rogan–Gladen with the calibration would say the same.
    assert support["decided_on"] == "people" and support["estimate"]["method"] == "ppi"
    assert support["estimate"]["value"] == pytest.approx(2 / 3)


def test_calibration_without_a_judge_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "cal.json").write_text("{}")
    done = run_cli(
        tmp_path,
        "run",
        str(cases_file(tmp_path)),
        "--out",
        "rows.jsonl",
        "--calibration",
        "cal.json",
    )
    assert done.returncode == 2 and "--criterion" in done.stderr


def _results_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two result files over the same support cases; B adds an unsupported promise to each."""
    a_rows, b_rows = [], []
    for i in range(4):
        row = {"id": f"s{i}", "category": "support", "input": "¿Cuál es el límite?",
               "context": "El límite diario es de $ 500.000.",
               "output": "El límite diario es de $ 500.000.", "status": "pass",
               "checks": {"contains:500.000": True}}  # fmt: skip
        a_rows.append(row)
        b_rows.append({**row, "output": row["output"] + " Te devolvemos el dinero en 24 horas."})
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in a_rows), encoding="utf-8")
    b.write_text("".join(json.dumps(r) + "\n" for r in b_rows), encoding="utf-8")
    return a, b


def test_pairwise_command_with_the_builtin_judge(tmp_path: Path) -> None:
    a, b = _results_pair(tmp_path)
    done = run_cli(tmp_path, "pairwise", str(a), str(b), "--criterion", "unsupported-claims",
                   "--json", "--out", "pairs.jsonl")  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert (figures["n"], figures["a_wins"], figures["b_wins"]) == (4, 4, 0)
    assert figures["position"]["consistency_rate"] == 1.0
    # each case: order 1 picks A (shown first), order 2 picks A (shown second) → 4 of 8 first
    assert figures["position"]["first_position_rate"] == 0.5
    assert len(rows_of(tmp_path / "pairs.jsonl")) == 4


def test_pairwise_exposes_a_judge_that_always_picks_the_first(tmp_path: Path) -> None:
    a, b = _results_pair(tmp_path)
    (tmp_path / "first.py").write_text("def pick(prompt):\n    return 'A\\nThe first.'\n")
    done = run_cli(tmp_path, "pairwise", str(a), str(b), "--criterion", "unsupported-claims",
                   "--judge-model", "py:first:pick", "--no-cache")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no winner (the orders disagreed, a reply did not parse, or a call failed): 4/4" in (
        done.stdout
    )
    assert "position consistency: 0/4 = 0.0%" in done.stdout
    assert "first-position picks: 8/8 = 100.0%" in done.stdout


def test_pairwise_with_a_dead_model_exits_3(tmp_path: Path) -> None:
    a, b = _results_pair(tmp_path)
    (tmp_path / "dead.py").write_text("def call(prompt):\n    raise ConnectionError('down')\n")
    done = run_cli(tmp_path, "pairwise", str(a), str(b), "--criterion", "unsupported-claims",
                   "--judge-model", "py:dead:call", "--no-cache")  # fmt: skip
    assert done.returncode == 3
    assert "the model call failed" in done.stderr and "nothing more was compared" in done.stderr
    assert "down" in done.stderr
