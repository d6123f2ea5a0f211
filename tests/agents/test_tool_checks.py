"""Tests for the tool checks of tinyeval.agents.tools: tool call shapes, calls read off a case."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tinyeval.agents.tools import tool_names, tools_forbidden, tools_required
from tinyeval.checks import CheckResult, CheckSpecError, NamedCheck, run_checks, run_checks_detailed


def run_one(named: NamedCheck, output: str | None, case: Any = None) -> CheckResult:
    """The result of one check, through the public runner."""
    return run_checks_detailed(output, [named], case=case)[named.name]


OPENAI_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "transfer", "arguments": '{"amount": 125050}'},
}
OPENAI_LEGACY_CALL = {"name": "transfer", "arguments": '{"amount": 125050}'}
ANTHROPIC_CALL = {"type": "tool_use", "id": "toolu_1", "name": "transfer", "input": {}}


@dataclass
class SdkFunction:
    name: str
    arguments: str = "{}"


@dataclass
class SdkToolCall:
    function: SdkFunction
    type: str = "function"


@pytest.mark.parametrize(
    "call",
    [
        "transfer",
        OPENAI_CALL,
        OPENAI_LEGACY_CALL,
        ANTHROPIC_CALL,
        SdkToolCall(SdkFunction("transfer")),
    ],
    ids=["plain", "openai", "openai-legacy", "anthropic", "sdk-object"],
)
def test_tool_names_reads_every_shape(call: Any) -> None:
    assert tool_names([call]) == ["transfer"]
    case = {"tool_calls": [call]}
    assert run_checks("ok", tools_forbidden("transfer"), case=case) == {
        "tools_forbidden:transfer": False
    }
    assert run_checks("ok", tools_required("transfer"), case=case) == {
        "tools_required:transfer": True
    }


@pytest.mark.parametrize(
    "calls",
    [
        [{"tool": "transfer"}],
        [{"type": "function", "function": {"arguments": "{}"}}],
        [{"type": "function", "function": "transfer"}],
        [{"name": ""}],
        [42],
        [None],
        "transfer",
        {"name": "transfer"},
    ],
)
def test_tool_names_rejects_unknown_shapes(calls: Any) -> None:
    with pytest.raises(CheckSpecError) as info:
        tool_names(calls)
    assert info.value.field == "tool_calls"


def test_unknown_tool_shape_in_a_case_fails_that_check_with_the_reason() -> None:
    result = run_one(tools_forbidden("transfer")[0], "ok", case={"tool_calls": [{"tool": "x"}]})
    assert result.passed is False
    assert (result.detail or "").startswith("raised CheckSpecError: tool_calls: entry 0")


def test_no_tool_calls_means_no_tools_called() -> None:
    cases: list[dict[str, Any]] = [{}, {"tool_calls": None}, {"tool_calls": []}]
    for case in cases:
        assert run_checks("ok", tools_forbidden("transfer"), case=case) == {
            "tools_forbidden:transfer": True
        }
        result = run_one(tools_required("transfer")[0], "ok", case=case)
        assert result == CheckResult(False, "not called (tools called: none)")


def test_tool_checks_read_case_objects_too() -> None:
    @dataclass
    class Case:
        tool_calls: list[Any] = field(default_factory=list)

    assert run_one(tools_forbidden("transfer")[0], "ok", case=Case(["transfer", "transfer"])) == (
        CheckResult(False, "called 2 time(s)")
    )
    assert run_one(tools_forbidden("transfer")[0], "ok", case=Case()).passed


def test_tool_checks_without_a_case_fail_and_say_why() -> None:
    result = run_one(tools_forbidden("transfer")[0], "ok")
    assert result.passed is False
    assert "no case given" in (result.detail or "")
