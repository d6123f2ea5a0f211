"""OpenTelemetry GenAI trace exports read into cases, one per trace, and evaluated end to end.

The fixture ``data/otel_genai_export.json`` was written by hand from the GenAI semantic
conventions: the current ``gen_ai.input.messages`` / ``gen_ai.output.messages`` attributes
(traces 1 and 2, with ``execute_tool`` spans, one failing), the older flattened
``gen_ai.prompt.N`` / ``gen_ai.completion.N`` attributes (trace 3), and the
``gen_ai.*.message`` / ``gen_ai.choice`` span events (trace 4); plus an HTTP span with no
GenAI attributes, which is no case.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyeval
from tinyeval import checks
from tinyeval.agents import tools
from tinyeval.agents.conversation import from_messages
from tinyeval.agents.otel import records_from_otel
from tinyeval.dataset import DatasetError, load
from tinyeval.errors import InputError

EXPORT = Path(__file__).parents[1] / "data" / "otel_genai_export.json"
SYSTEM = (
    "You are Acme's support agent. Look an order up before changing it. "
    "Refunds only for orders not yet shipped."
)


def test_one_case_per_trace_with_the_trace_id_as_id() -> None:
    cases = load(EXPORT)
    assert [c.id for c in cases] == [
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "0af7651916cd43dd8448eb211c80319c",
        "7d5c1b8a3e9f40c2b6a1d0e9f8c7b6a5",
        "a3ce929d0e0e47364bf92f3577b34da6",
    ]  # the health-check trace has no GenAI span
    text = EXPORT.read_text(encoding="utf-8").splitlines()
    for case in cases:  # each case points at the line of its trace's first span
        assert case.line is not None and '"spanId"' in text[case.line - 1]


def test_current_conventions_conversation_model_and_usage() -> None:
    case = load(EXPORT)[0]
    assert case.conversation is not None
    assert case.conversation.system == SYSTEM
    assert case.conversation.question == "Where is my order A1043?"
    assert case.output == "Order A1043 has shipped with UPS and should arrive on December 3."
    assert [(k.name, k.arguments) for k in tools.trajectory(case)] == [
        ("lookup_order", {"order_id": "A1043"})
    ]
    (result,) = case.conversation.tool_results
    assert json.loads(result.text)["status"] == "shipped" and not result.is_error
    assert case.meta["model"] == "gpt-4o-2024-08-06"
    assert case.meta["usage"] == {"input_tokens": 412 + 486, "output_tokens": 19 + 31}
    assert case.meta["agent"] == "support-agent" and case.meta["service"] == "support-agent"
    assert case.meta["trace"] == {"spans": 4, "root": "invoke_agent support-agent"}


def test_a_failing_tool_span_is_an_error_result() -> None:
    case = load(EXPORT)[1]
    assert [k.name for k in tools.trajectory(case)] == ["lookup_order", "issue_refund"]
    assert case.conversation is not None
    refund = case.conversation.tool_results[1]
    assert (refund.name, refund.is_error, refund.text) == (
        "issue_refund", True, "payment gateway timed out after 30 s",
    )  # fmt: skip
    assert case.meta["usage"] == {"input_tokens": 430 + 470 + 512, "output_tokens": 22 + 25 + 28}


def test_older_flattened_attributes() -> None:
    case = load(EXPORT)[2]
    assert case.conversation is not None
    assert case.conversation.system == SYSTEM
    assert case.conversation.question == "What is your return window?"
    assert case.output.startswith("You can return unused items within 30 days")  # type: ignore[union-attr]
    assert case.meta["model"] == "gpt-4o-mini-2024-07-18"
    assert case.meta["usage"] == {"input_tokens": 88, "output_tokens": 41}
    assert tools.trajectory(case) == ()


def test_events_and_a_tool_result_found_in_the_next_chat_span() -> None:
    case = load(EXPORT)[3]
    assert case.conversation is not None
    assert case.conversation.question == "Cancel order C77, I ordered the wrong size."
    assert [(k.name, k.arguments) for k in tools.trajectory(case)] == [
        ("cancel_order", {"order_id": "C77"})
    ]
    (result,) = case.conversation.tool_results
    assert json.loads(result.text) == {"order_id": "C77", "cancelled": True}
    assert case.output == "Order C77 is cancelled; you have not been charged."


def test_run_evaluates_the_traces_end_to_end() -> None:
    cases = load(EXPORT)
    trajectory = checks.checks_from_expect(
        {"no_tool_errors": True, "tools_before": ["lookup_order", "issue_refund"], "max_repeats": 1}
    )
    result = tinyeval.run(cases, checks=trajectory)
    status = {row["id"][:4]: row["status"] for row in result.rows}
    # only trace 2 has a failed tool call; its refund came after the lookup
    assert status == {"4bf9": "pass", "0af7": "fail", "7d5c": "pass", "a3ce": "pass"}
    failed = next(row for row in result.rows if row["status"] == "fail")
    assert failed["checks"] == {
        "tools_before:lookup_order,issue_refund": True,
        "max_repeats": True,
        "no_tool_errors": False,
    }
    assert failed["check_details"]["no_tool_errors"].startswith("issue_refund returned an error")


def test_the_format_can_be_named_and_is_detected_from_the_content(tmp_path: Path) -> None:
    copy = tmp_path / "spans.otlp"
    copy.write_text(EXPORT.read_text(encoding="utf-8"), encoding="utf-8")
    assert len(load(copy, format="otel")) == 4
    renamed = tmp_path / "export.json"
    renamed.write_text(EXPORT.read_text(encoding="utf-8"), encoding="utf-8")
    assert [c.id for c in load(renamed)] == [c.id for c in load(copy, format="otel")]


def span(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "traceId": "t1",
        "spanId": "s1",
        "startTimeUnixNano": "1",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.prompt", "value": {"stringValue": "Hi"}},
            {"key": "gen_ai.completion", "value": {"stringValue": "Hello"}},
        ],
    }
    base.update(overrides)
    return base


def export(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def test_plain_text_prompt_and_completion() -> None:
    ((_, record),) = records_from_otel(export(span()))
    assert record["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]
    assert record["usage"] is None


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ([], "resourceSpans"),
        ({"resourceSpans": {}}, ".resourceSpans"),
        (export(span(traceId="")), "resourceSpans.0.scopeSpans.0.spans.0.traceId"),
        (
            export(span(startTimeUnixNano="soon")),
            "resourceSpans.0.scopeSpans.0.spans.0.startTimeUnixNano",
        ),
        (
            export(span(attributes=[{"value": {}}])),
            "resourceSpans.0.scopeSpans.0.spans.0.attributes.0",
        ),
        (
            export(span(attributes=[{"key": "n", "value": {"intValue": "x"}}])),
            "resourceSpans.0.scopeSpans.0.spans.0.attributes.0.value.intValue",
        ),
    ],
)
def test_errors_name_the_place(document: Any, field: str) -> None:
    with pytest.raises(InputError) as caught:
        list(records_from_otel(document, path="spans.json"))
    assert caught.value.field == field
    assert str(caught.value).startswith("spans.json: ")


def test_a_bad_message_in_a_trace_is_a_dataset_error_with_file_and_line(tmp_path: Path) -> None:
    bad = span(
        attributes=[
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {
                "key": "gen_ai.input.messages",
                "value": {"stringValue": '[{"role": "robot", "content": "x"}]'},
            },
        ]
    )
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(export(bad), indent=1), encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load(path)
    assert caught.value.field == "messages.0.role"
    assert caught.value.line is not None and caught.value.path == str(path)


# --- property: any JSON-like export gives records or an InputError, never another error ---


scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=6)
any_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
keys = st.sampled_from(
    [
        "gen_ai.operation.name",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.prompt",
        "gen_ai.completion",
        "gen_ai.prompt.0.role",
        "gen_ai.prompt.0.content",
        "gen_ai.completion.0.tool_calls.0.name",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.result",
        "gen_ai.usage.input_tokens",
        "gen_ai.system_instructions",
        "error.type",
        "content",
        "message",
        "id",
        "gen_ai.event.content",
    ]
)
otlp_values = st.recursive(
    st.fixed_dictionaries(
        {
            "stringValue": st.text(max_size=6)
            | st.sampled_from(
                ["chat", "execute_tool", '[{"role": "user", "parts": []}]', '{"role": 1}', "[1]"]
            )
        }
    )
    | st.fixed_dictionaries({"intValue": st.integers(-2, 5).map(str) | scalars})
    | st.fixed_dictionaries({"boolValue": st.booleans()})
    | any_values,
    lambda inner: st.fixed_dictionaries(
        {"arrayValue": st.fixed_dictionaries({"values": st.lists(inner, max_size=3)})}
    ),
    max_leaves=6,
)
attributes = st.lists(
    st.fixed_dictionaries({"key": keys, "value": otlp_values}) | any_values, max_size=5
)
spans = st.fixed_dictionaries(
    {
        "traceId": st.sampled_from(["t1", "t2"]) | any_values,
        "spanId": st.sampled_from(["a", "b", "c"]),
    },
    optional={
        "parentSpanId": st.sampled_from(["", "a", "x"]) | any_values,
        "startTimeUnixNano": st.integers(0, 9).map(str) | any_values,
        "attributes": attributes,
        "events": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(
                        ["gen_ai.user.message", "gen_ai.choice", "gen_ai.tool.message", "x"]
                    )
                },
                optional={"attributes": attributes},
            )
            | any_values,
            max_size=3,
        ),
        "status": st.fixed_dictionaries(
            {}, optional={"code": st.sampled_from([0, 1, 2]), "message": any_values}
        )
        | any_values,
        "name": any_values,
    },
)


@settings(max_examples=150, deadline=None)
@given(st.lists(spans | any_values, max_size=4) | any_values)
def test_any_export_gives_records_or_an_input_error(raw_spans: Any) -> None:
    document = export(*raw_spans) if isinstance(raw_spans, list) else raw_spans
    try:
        records = list(records_from_otel(document))
    except InputError:
        return
    for _, record in records:
        json.dumps(record)
        with contextlib.suppress(InputError):
            from_messages(record["messages"])


def test_ids_that_are_not_strings_are_not_used_as_call_ids() -> None:
    tool = span(
        spanId="s2",
        startTimeUnixNano="5",
        attributes=[
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
            {
                "key": "gen_ai.tool.call.id",
                "value": {"arrayValue": {"values": [{"intValue": "1"}]}},
            },
        ],
    )
    ((_, record),) = records_from_otel(export(span(), tool))
    conversation = from_messages(record["messages"])
    assert [(k.name, k.id) for k in conversation.tool_calls] == [("search", "s2")]
