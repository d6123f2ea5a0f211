"""The RAG example through the command line: a retrieval table apart from generation, a
retrieval threshold that blocks, and faithfulness by claims with the offline judge."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from child import run_tinyeval

ROOT = Path(__file__).resolve().parents[2]
RAG = ROOT / "examples" / "rag" / "cases.jsonl"


def tinyeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tinyeval(args, cwd, timeout=120)


def recall_at_5_by_hand() -> dict[str, float]:
    """Mean recall@5 per category, straight from the file (ids deduplicated at first rank)."""
    sums: dict[str, list[float]] = {}
    for line in RAG.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if "retrieved" not in case or not case.get("relevant"):
            continue
        ranking: list[str] = []
        for item in case["retrieved"]:
            doc = str(item["doc_id"] if isinstance(item, dict) else item)
            if doc not in ranking:
                ranking.append(doc)
        relevant = case["relevant"]
        wanted = {str(k) for k, v in relevant.items() if v > 0} if isinstance(relevant, dict) \
            else {str(r) for r in relevant}  # fmt: skip
        found = len(wanted & set(ranking[:5])) / len(wanted)
        sums.setdefault(case["category"], []).append(found)
    return {name: sum(values) / len(values) for name, values in sums.items()}


def test_the_rag_example_prints_a_retrieval_table_and_a_threshold_blocks(tmp_path: Path) -> None:
    done = tinyeval("run", str(RAG), "--out", "rows.jsonl", "--json",
                    "--retrieval-threshold", "recall@5=0.8", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    by_hand = recall_at_5_by_hand()
    table = summary["retrieval"]["categories"]
    for category, value in by_hand.items():
        assert abs(table[category]["metrics"]["recall@5"]["mean"] - value) < 1e-9
    blocking = sorted(summary["retrieval_gate"]["blocking"])
    assert blocking == sorted(c for c, v in by_hand.items() if v < 0.8)
    text = tinyeval("run", str(RAG), "--out", "rows.jsonl", "--retrieval-threshold",
                    "recall@5=0.8", cwd=tmp_path).stdout  # fmt: skip
    assert "retrieval: 45 of 47 cases had retrieval data" in text
    assert "MRR" in text and "retrieval gate: FAILED — blocking:" in text


def test_faithfulness_by_claims_with_the_offline_judge_stores_each_claim(tmp_path: Path) -> None:
    done = tinyeval("run", str(RAG), "--criterion", "faithfulness-by-claims", "--out",
                    "rows.jsonl", "-q", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    judged = [r for r in rows if r["judges"]]
    assert judged
    for row in judged:
        verdict = row["judges"]["faithfulness-by-claims"]
        assert len(verdict["claim_verdicts"]) == len(verdict["claims"])
        supported = sum(v["verdict"] == "PASS" for v in verdict["claim_verdicts"])
        if verdict["claims"]:
            assert abs(verdict["score"] - supported / len(verdict["claims"])) < 1e-9
        assert (verdict["verdict"] == "PASS") == (supported == len(verdict["claims"]) > 0)


def test_a_graded_judge_prints_its_histogram_and_bottom_ten_percent(tmp_path: Path) -> None:
    (tmp_path / "grader.py").write_text(
        "def score(prompt):\n"
        "    return '1' if 'bad' in prompt else '5'\n"
    )  # fmt: skip
    records = [{"id": f"c{i:02d}", "output": "bad" if i < 2 else "good", "input": "q?",
                "expect": {"max_words": 3}} for i in range(20)]  # fmt: skip
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = tinyeval("run", "c.jsonl", "--criterion", "graded:The answer is good.",
                    "--judge-model", "py:grader:score", "--no-cache", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # 2 of 20 scored 1 and 18 scored 5: the bottom 10% is exactly the two low ones
    assert "bottom 10% (score <= 1): c00 1, c01 1" in done.stdout
    assert "more than 80% of scores fall on two values" in done.stdout
    # without a pass mark the score gates nothing: every case passes on its code check alone
    assert "20/20 = 100.0%" in done.stdout


def test_quiet_says_why_when_only_the_retrieval_gate_fails(tmp_path: Path) -> None:
    done = tinyeval("run", str(RAG), "--out", "rows.jsonl", "-q",
                    "--retrieval-threshold", "recall@1=0.99", cwd=tmp_path)  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    gate, retrieval = done.stderr.splitlines()
    assert gate == "gate: no thresholds given, so nothing gates"
    assert retrieval.startswith("retrieval gate: FAILED — blocking: account, billing")
