"""End to end against a real model behind an OpenAI-compatible server on 127.0.0.1:8765.

Skipped unless ``http://127.0.0.1:8765/health`` answers within a second. Any
llama.cpp ``llama-server`` serving a small instruct model there will do, for
example SmolLM2-135M-Instruct (a 96 MB GGUF file) on CPU.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from child import run_tinyeval

from tinyeval.cache import ResponseCache, cached
from tinyeval.models import Reply, resolve
from tinyeval.records import primary_verdict

ROOT = Path(__file__).resolve().parent.parent
BASE = "http://127.0.0.1:8765"
MODEL = "SmolLM2-135M-Instruct"


def _server_is_up() -> bool:
    try:
        with urllib.request.urlopen(f"{BASE}/health", timeout=1.0) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


pytestmark = [
    pytest.mark.realllm,
    pytest.mark.skipif(not _server_is_up(), reason=f"no model server answering at {BASE}/health"),
]


def test_openai_adapter_end_to_end() -> None:
    model = resolve(f"openai:{MODEL}", base_url=f"{BASE}/v1", max_tokens=16, timeout=60)
    reply = model("Say PASS")
    assert isinstance(reply, Reply) and reply.strip()
    assert reply.usage is not None
    assert reply.usage["input_tokens"] > 0 and reply.usage["output_tokens"] > 0
    assert reply.model  # the name the server reported
    assert reply.latency_ms is not None and reply.latency_ms > 0


def test_json_schema_constrains_the_reply() -> None:
    import json

    schema = {
        "type": "object",
        "required": ["verdict"],
        "properties": {"verdict": {"type": "string", "enum": ["PASS", "FAIL"]}},
    }
    model = resolve(f"openai:{MODEL}", base_url=f"{BASE}/v1", max_tokens=32, timeout=60)
    reply = model("Is 2 + 2 = 4? Answer PASS or FAIL as JSON.", json_schema=schema)
    assert json.loads(reply)["verdict"] in ("PASS", "FAIL")


def test_a_cached_rerun_makes_no_call(tmp_path: Path) -> None:
    model = resolve(f"openai:{MODEL}", base_url=f"{BASE}/v1", max_tokens=8, timeout=60)
    with ResponseCache(tmp_path / "cache.sqlite3") as cache:
        first = cached(model, cache)("Say PASS")
        again = cached(model, cache)("Say PASS")
        assert (first.cached, again.cached) == (False, True)
        assert again == first and again.usage == first.usage
        assert cache.stats().stores == 1


def _run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tinyeval(args, tmp_path, timeout=600)


def _support_cases(tmp_path: Path, n: int) -> Path:
    """The first n support cases of the bundled example (the ones a judge grades)."""
    lines = (ROOT / "examples" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    support = [line for line in lines if '"support_answers"' in line][:n]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(support) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("style", ["verdict-first", "evidence-first"])
def test_the_whole_run_path_against_a_real_model(tmp_path: Path, style: str) -> None:
    """run --judge-model openai:… over real cases: structure, not the tiny model's verdicts."""
    cases = _support_cases(tmp_path, 4)
    done = _run_cli(
        tmp_path, "run", str(cases), "--out", "rows.jsonl", "--json",
        "--criterion", "unsupported-claims", "--judge-style", style,
        "--judge-model", f"openai:{MODEL}", "--base-url", f"{BASE}/v1",
        "--judge-max-tokens", "96", "--concurrency", "2", "--price", "in=1,out=5",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr  # the gate may pass or fail; the run completes
    summary = json.loads(done.stdout)
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(
        json.loads(line)["id"] for line in cases.read_text().splitlines()
    )  # every case a row
    judged = [r for r in rows if primary_verdict(r) is not None]
    assert len(judged) == 4 and summary["judge"]["judged"] == 4
    unparsed = sum(
        primary_verdict(r)["verdict"] is None and primary_verdict(r)["failure"] != "error"
        for r in judged
    )
    assert summary["judge"]["unparsed"] == unparsed  # parse failures counted, none dropped
    for row in judged:
        assert row["judge_model"] == f"openai:{MODEL}"
        assert primary_verdict(row)["model"] == MODEL  # the name the server reported
        assert row["usage"]["input_tokens"] > 0  # usage recorded
        if primary_verdict(row)["verdict"] is None:
            assert row["status"] in ("fail", "error")  # an unparsed reply is never a pass
    assert summary["usage"]["input_tokens"] > 0 and summary["cost_usd"] > 0
    text = _run_cli(tmp_path, "gate", "rows.jsonl")
    assert "judge verdicts that did not parse" in text.stdout  # and shown
