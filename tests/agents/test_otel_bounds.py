"""OTel traces that are hostile or large: one line naming file, line and field (exit 2) for
values past what OTLP allows, and a rebuild whose time grows linearly with the trace."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tinyeval.agents.otel import records_from_otel
from tinyeval.cli import main


def chat_span(n: int, **overrides: Any) -> dict[str, Any]:
    span = {
        "traceId": "t1",
        "spanId": f"s{n}",
        "startTimeUnixNano": str(n + 1),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.prompt", "value": {"stringValue": f"question {n}"}},
            {"key": "gen_ai.completion", "value": {"stringValue": f"answer {n}"}},
        ],
    }
    span.update(overrides)
    return span


def tool_span(n: int) -> dict[str, Any]:
    return {
        "traceId": "t1",
        "spanId": f"tool{n}",
        "startTimeUnixNano": str(n + 1),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.call.id", "value": {"stringValue": f"call{n}"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
        ],
    }


def export(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def rebuild_seconds(n: int) -> float:
    spans = [chat_span(i) if i % 2 else tool_span(i) for i in range(n)]
    document = export(spans)
    best = float("inf")
    gc.disable()  # a collection triggered by the rest of the suite's heap is not the rebuild's
    try:
        for _ in range(5):
            started = time.process_time()
            ((_, record),) = records_from_otel(document)
            best = min(best, time.process_time() - started)
            assert len(record["messages"]) >= n
    finally:
        gc.enable()
    return best


def test_the_rebuild_of_one_trace_grows_linearly() -> None:
    small, large = rebuild_seconds(2_000), rebuild_seconds(8_000)
    # CPU time, not wall time: other processes on a loaded machine do not count
    assert large < 8 * small  # 4 times the spans: about 4 times the work (quadratic: 16)


def write(tmp_path: Path, document_text: str) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(document_text, encoding="utf-8")
    return path


DEEP = json.dumps("[" * 50_000 + "]" * 50_000)
HOSTILE = {
    "deep JSON in stringValue": (
        '{"key": "gen_ai.input.messages", "value": {"stringValue": ' + DEEP + "}}",
        "attributes",
    ),
    "intValue Infinity": ('{"key": "n", "value": {"intValue": Infinity}}', "intValue"),
    "intValue 'Infinity'": ('{"key": "n", "value": {"intValue": "Infinity"}}', "intValue"),
    "intValue of 400 digits": (
        '{"key": "n", "value": {"intValue": "' + "9" * 400 + '"}}',
        "intValue",
    ),
}


@pytest.mark.parametrize("name", HOSTILE, ids=list(HOSTILE))
def test_hostile_attribute_values_are_one_line_naming_file_line_and_field(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    attribute, field = HOSTILE[name]
    first = json.dumps(chat_span(1))
    span = json.dumps(chat_span(2, spanId="bad"))
    bad = span[: span.rindex("]")] + ", " + attribute + span[span.rindex("]") :]
    text = '{"resourceSpans": [{"scopeSpans": [{"spans": [\n' + first + ",\n" + bad + "\n]}]}]}\n"
    path = write(tmp_path, text)
    code = main(["run", str(path), "--format", "otel", "--out", str(tmp_path / "rows.jsonl")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "please report it" not in err
    assert f"{path}:3: resourceSpans.0.scopeSpans.0.spans.1." in err and field in err


@pytest.mark.parametrize(
    "start",
    ['"Infinity"', "Infinity", '"' + "9" * 400 + '"', "1e400"],
    ids=["text-infinity", "infinity", "400-digits", "1e400"],
)
def test_a_start_time_past_64_bits_is_refused(
    tmp_path: Path, start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    span = json.dumps(chat_span(1, startTimeUnixNano="START")).replace('"START"', start)
    path = write(tmp_path, '{"resourceSpans": [{"scopeSpans": [{"spans": [\n' + span + "\n]}]}]}")
    code = main(["run", str(path), "--format", "otel", "--out", str(tmp_path / "rows.jsonl")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{path}:2: resourceSpans.0.scopeSpans.0.spans.0.startTimeUnixNano" in err
    assert not (tmp_path / "rows.jsonl").exists()
