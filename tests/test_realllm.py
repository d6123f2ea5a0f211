"""End to end against a real model behind an OpenAI-compatible server on 127.0.0.1:8765.

Skipped unless ``http://127.0.0.1:8765/health`` answers within a second. Any
llama.cpp ``llama-server`` serving a small instruct model there will do, for
example SmolLM2-135M-Instruct (a 96 MB GGUF file) on CPU.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tinyeval.cache import ResponseCache, cached
from tinyeval.models import Reply, resolve

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
