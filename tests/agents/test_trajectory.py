"""Trajectory checks: the tool calls of a case's conversation, in order, with their arguments."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyeval import checks
from tinyeval.agents import tools
from tinyeval.agents.conversation import from_messages
from tinyeval.agents.tools import (
    max_repeats,
    max_tool_calls,
    no_tool_errors,
    tool_args,
    tools_before,
    tools_match,
    tools_sequence,
    trajectory,
)
from tinyeval.checks import (
    CheckResult,
    CheckSpecError,
    checks_from_expect,
    run_checks,
    run_checks_detailed,
)


def openai_log(calls: list[tuple[str, Any]], *, error_for: str | None = None) -> dict[str, Any]:
    """An OpenAI-shaped conversation: one assistant turn per call, arguments as JSON strings."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please refund order A17."}]
    for index, (name, arguments) in enumerate(calls):
        call_id = f"call_{index}"
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function",
                     "function": {"name": name, "arguments": text}},
                ],
            }
        )  # fmt: skip
        result = '{"error": "not found"}' if name == error_for else '{"ok": true}'
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    messages.append({"role": "assistant", "content": "Done."})
    return {"messages": messages}


def anthropic_log(calls: list[tuple[str, Any]], *, error_for: str | None = None) -> dict[str, Any]:
    """The same in Anthropic's shape: tool_use blocks, tool_result blocks with is_error."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please refund order A17."}]
    for index, (name, arguments) in enumerate(calls):
        call_id = f"toolu_{index}"
        messages.append(
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": call_id, "name": name, "input": arguments}]}
        )  # fmt: skip
        block = {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}
        if name == error_for:
            block.update(content="order service unavailable", is_error=True)
        messages.append({"role": "user", "content": [block]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    return {"messages": messages}


SHAPES = pytest.mark.parametrize("log", [openai_log, anthropic_log], ids=["openai", "anthropic"])
GOOD = [("lookup_order", {"order_id": "A17"}), ("issue_refund", {"order_id": "A17", "amount": 20})]


def one(check: Any, case: Any) -> CheckResult:
    (result,) = run_checks_detailed("Done.", [check], case=case).values()
    return result


@SHAPES
def test_tools_sequence(log: Any) -> None:
    check = tools_sequence(["lookup_order", "issue_refund"])
    assert one(check, log(GOOD)).passed
    repeated = log([GOOD[0], GOOD[0], GOOD[1]])
    assert one(check, repeated) == CheckResult(
        False,
        "got [lookup_order, lookup_order, issue_refund], expected [lookup_order, issue_refund]",
    )
    assert one(check, log(GOOD[::-1])).detail == (
        "got [issue_refund, lookup_order], expected [lookup_order, issue_refund]"
    )
    assert one(tools_sequence([]), log([])).passed
    assert one(tools_sequence([]), log(GOOD)).detail == (
        "got [lookup_order, issue_refund], expected []"
    )


@SHAPES
def test_tools_match_modes(log: Any) -> None:
    reference = ["lookup_order", "issue_refund"]
    # (calls made, strict, unordered, subset, superset), worked out from the definitions
    table = [
        (["lookup_order", "issue_refund"], True, True, True, True),
        (["issue_refund", "lookup_order"], False, True, True, True),
        (["lookup_order"], False, False, True, False),
        (["lookup_order", "issue_refund", "email"], False, False, False, True),
        (["lookup_order", "email"], False, False, False, False),
        (["lookup_order", "lookup_order", "issue_refund"], False, False, False, True),
        ([], False, False, True, False),
    ]
    for made, *expected in table:
        case = log([(name, {}) for name in made])
        got = [one(tools_match(reference, mode), case).passed for mode in tools.TOOLS_MATCH_MODES]
        assert got == expected, made


def test_tools_match_details_name_what_was_seen() -> None:
    case = openai_log([("lookup_order", {}), ("email", {})])
    assert one(tools_match(["lookup_order", "issue_refund"], "unordered"), case).detail == (
        "got [lookup_order, email], expected [lookup_order, issue_refund] in any order "
        "(missing [issue_refund], extra [email])"
    )
    assert one(tools_match(["lookup_order", "issue_refund"]), case).detail == (
        "got [lookup_order, email], expected [lookup_order, issue_refund]"
    )


@SHAPES
def test_tools_before(log: Any) -> None:
    check = tools_before("lookup_order", "issue_refund")
    assert one(check, log(GOOD)).passed
    assert one(check, log([GOOD[0]])).passed  # no refund: nothing came too early
    assert one(check, log([GOOD[1]])).detail == (
        "issue_refund (call 1) came before any lookup_order (never called)"
    )
    assert one(check, log([GOOD[1], GOOD[0], GOOD[1]])).detail == (
        "issue_refund (call 1) came before any lookup_order (first at call 2)"
    )


@SHAPES
def test_tool_args_subset_match_with_exact_equality(log: Any) -> None:
    check = tool_args("issue_refund", {"order_id": "A17"})
    assert one(check, log(GOOD)).passed  # "amount" is extra and allowed
    assert one(tool_args("issue_refund", {"order_id": "A17", "amount": 20.0}), log(GOOD)).passed
    wrong = log([("issue_refund", {"order_id": 17})])
    assert one(check, wrong).detail == (
        'issue_refund called 1 time, never with {"order_id": "A17"}; got {"order_id": 17}'
    )
    assert not one(tool_args("issue_refund", {"amount": True}), log(GOOD)).passed
    assert one(check, log([GOOD[0]])).detail == (
        "issue_refund not called (tools called: [lookup_order])"
    )
    # some call matching is enough
    assert one(check, log([("issue_refund", {"order_id": "B2"}), GOOD[1]])).passed


def test_tool_args_reads_arguments_given_as_json_strings_and_flags_bad_ones() -> None:
    text = '{"order_id": "A17", "amount": 20}'
    case = {"tool_calls": [{"name": "issue_refund", "arguments": text}]}
    assert one(tool_args("issue_refund", {"amount": 20}), case).passed
    bad = openai_log([("issue_refund", "{order_id: A17")])
    (call,) = trajectory(bad)
    assert call.invalid_arguments is not None
    assert one(tool_args("issue_refund", {"order_id": "A17"}), bad).detail == (
        'issue_refund called 1 time, never with {"order_id": "A17"}; '
        'got "{order_id: A17" (not valid JSON: Expecting property name enclosed in double quotes '
        "at column 2)"
    )


def test_tool_args_with_a_key_given_twice_match_nothing_and_name_the_key() -> None:
    twice = '{"order_id": "B99", "order_id": "A17"}'  # a reader keeps either value
    case = {"tool_calls": [{"name": "issue_refund", "arguments": twice}]}
    found = one(tool_args("issue_refund", {"order_id": "A17"}), case)
    assert not found.passed
    assert "the key 'order_id' is given twice" in (found.detail or "")


@SHAPES
def test_max_tool_calls_and_max_repeats(log: Any) -> None:
    looped = log([GOOD[0]] * 3 + [("lookup_order", {"order_id": "B2"})])
    assert one(max_tool_calls(4), looped).passed
    assert one(max_tool_calls(3), looped).detail == (
        "4 tool calls, more than 3: [lookup_order, lookup_order, lookup_order, lookup_order]"
    )
    assert one(max_repeats(3), looped).passed
    assert one(max_repeats(2), looped).detail == (
        'lookup_order({"order_id":"A17"}) called 3 times, more than 2'
    )
    assert one(max_repeats(1), log(GOOD)).passed


@SHAPES
def test_no_tool_errors(log: Any) -> None:
    assert one(no_tool_errors(), log(GOOD)).passed
    failed = one(no_tool_errors(), log(GOOD, error_for="lookup_order"))
    assert not failed.passed
    assert (failed.detail or "").startswith("lookup_order returned an error: ")


def test_no_tool_errors_reads_json_error_keys_but_not_empty_ones() -> None:
    def case(content: str) -> dict[str, Any]:
        return {"messages": [{"role": "tool", "tool_call_id": "c", "content": content}]}

    assert not one(no_tool_errors(), case('{"error": {"code": 404}}')).passed
    for fine in ('{"error": null}', '{"error": ""}', '{"status": "error"}', "error: none", "{"):
        assert one(no_tool_errors(), case(fine)).passed, fine


def test_case_tool_calls_follow_the_conversation() -> None:
    case = openai_log([GOOD[0]])
    case["tool_calls"] = [
        {"type": "tool_use", "name": "issue_refund", "input": {"order_id": "A17"}}
    ]
    assert [call.name for call in trajectory(case)] == ["lookup_order", "issue_refund"]
    assert run_checks(
        "ok", checks_from_expect({"tools_required": ["lookup_order"]}), case=case
    ) == {"tools_required:lookup_order": True}


def test_case_objects_with_a_conversation() -> None:
    from tinyeval.dataset import Case

    conversation = from_messages(anthropic_log(GOOD)["messages"])
    case = Case(id="a", output="Done.", conversation=conversation)
    assert one(tools_sequence(["lookup_order", "issue_refund"]), case).passed
    assert not one(tools_sequence(["lookup_order"]), None).passed  # no case: cannot know


def test_expect_block_builds_the_trajectory_checks_in_order() -> None:
    expect = {
        "no_tool_errors": True,
        "max_repeats": 1,
        "max_tool_calls": 4,
        "tool_args": {"issue_refund": {"order_id": "A17"}},
        "tools_before": [["lookup_order", "issue_refund"], ["lookup_order", "email"]],
        "tools_match": {"tools": ["lookup_order", "issue_refund"], "mode": "superset"},
        "tools_sequence": ["lookup_order", "issue_refund"],
    }
    built = checks_from_expect(expect)
    assert [c.name for c in built] == [
        "tools_sequence", "tools_match", "tools_before:lookup_order,issue_refund",
        "tools_before:lookup_order,email", "tool_args:issue_refund", "max_tool_calls",
        "max_repeats", "no_tool_errors",
    ]  # fmt: skip
    assert checks.EXPECT_KEYS[-len(expect) :] == tuple(reversed(list(expect)))
    assert all(run_checks("Done.", built, case=openai_log(GOOD)).values())
    assert checks_from_expect({"tools_before": ["a", "b"]})[0].name == "tools_before:a,b"
    assert checks_from_expect({"no_tool_errors": False}) == []


@pytest.mark.parametrize(
    ("expect", "field"),
    [
        ({"tools_sequence": "lookup_order"}, "expect.tools_sequence"),
        ({"tools_sequence": ["a", ""]}, "expect.tools_sequence[1]"),
        ({"tools_match": ["a"]}, "expect.tools_match"),
        ({"tools_match": {"tools": ["a"], "mode": "unorderd"}}, "expect.tools_match.mode"),
        ({"tools_match": {"tool": ["a"]}}, "expect.tools_match.tool"),
        ({"tools_match": {"mode": "strict"}}, "expect.tools_match"),
        ({"tools_before": ["a"]}, "expect.tools_before"),
        ({"tools_before": [["a", "b"], ["c"]]}, "expect.tools_before[1]"),
        ({"tools_before": ["a", "a"]}, "expect.tools_before"),
        ({"tool_args": {"refund": {}}}, "expect.tool_args.refund"),
        ({"tool_args": {"refund": {"amount": float("nan")}}}, "expect.tool_args.refund"),
        ({"tool_args": ["refund"]}, "expect.tool_args"),
        ({"max_tool_calls": -1}, "expect.max_tool_calls"),
        ({"max_repeats": 0}, "expect.max_repeats"),
        ({"no_tool_errors": "yes"}, "expect.no_tool_errors"),
    ],
)
def test_spec_errors_name_the_field(expect: dict[str, Any], field: str) -> None:
    with pytest.raises(CheckSpecError) as caught:
        checks_from_expect(expect)
    assert caught.value.field == field


def test_did_you_mean_for_a_mode() -> None:
    with pytest.raises(CheckSpecError, match="did you mean 'unordered'"):
        checks_from_expect({"tools_match": {"tools": ["a"], "mode": "unorderd"}})


def test_a_bad_message_in_a_case_fails_the_check_with_the_place() -> None:
    result = one(tools_sequence([]), {"messages": [{"role": "robot", "content": "x"}]})
    assert not result.passed
    assert "messages.0.role" in (result.detail or "")


# --- properties: the modes against their definitions, arguments as text or objects -----

tool = st.sampled_from(["search", "lookup_order", "issue_refund", "email"])
small_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
argument_objects = st.dictionaries(st.sampled_from(["id", "amount", "q"]), small_json, max_size=3)


@settings(max_examples=100, deadline=None)
@given(st.lists(tool, max_size=6), st.lists(tool, max_size=4))
def test_tools_match_agrees_with_multiset_definitions(
    made: list[str], reference: list[str]
) -> None:
    case = {"tool_calls": made}
    got, ref = Counter(made), Counter(reference)
    expected = {
        "strict": made == reference,
        "unordered": got == ref,
        "subset": all(got[name] <= ref[name] for name in got),
        "superset": all(ref[name] <= got[name] for name in ref),
    }
    for mode, passes in expected.items():
        assert one(tools_match(reference, mode), case).passed is passes, mode


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(tool, argument_objects), max_size=5), tool, argument_objects)
def test_arguments_as_json_text_or_objects_give_the_same_verdicts(
    calls: list[tuple[str, dict[str, Any]]], name: str, wanted: dict[str, Any]
) -> None:
    as_text = {"tool_calls": [{"name": n, "arguments": json.dumps(a)} for n, a in calls]}
    as_objects = {"tool_calls": [{"type": "tool_use", "name": n, "input": a} for n, a in calls]}
    built = [max_repeats(1), max_tool_calls(3), tools_before("search", "issue_refund")]
    if wanted:
        built.append(tool_args(name, wanted))
    assert run_checks("", built, case=as_text) == run_checks("", built, case=as_objects)
    if wanted:  # a call whose arguments hold the wanted ones passes, written by hand
        expected = any(
            n == name
            and all(k in a and json.dumps(a[k]) == json.dumps(v) for k, v in wanted.items())
            for n, a in calls
        )
        assert one(tool_args(name, wanted), as_text).passed is expected


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30))
def test_any_argument_text_is_read_without_raising(text: str) -> None:
    case = {"tool_calls": [{"name": "search", "arguments": text}]}
    (call,) = trajectory(case)
    try:
        parsed = json.loads(text)
    except ValueError:
        assert call.invalid_arguments is not None or not text.strip()
    else:
        if text.strip() and all(token not in text for token in ("NaN", "Infinity")):
            assert call.invalid_arguments is None and call.arguments == parsed
    run_checks("", [max_repeats(1), tool_args("search", {"q": 1})], case=case)


# --- the agent example, end to end ---------------------------------------------------

AGENT_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent" / "cases.jsonl"

# What each logged conversation did wrong, as designed when the example was written, and so
# which check must fail. Cases not listed pass every check.
DESIGNED_FAILURES = {
    "os-06": {"max_repeats"},  # the same lookup three times
    "os-07": {"tool_args:lookup_order", "no_tool_errors"},  # looked up N1070 for N1007
    "os-08": {"no_tool_errors"},  # the lookup failed; a status was invented
    "os-09": {"tools_required:lookup_order", "tool_args:lookup_order"},  # no lookup at all
    "os-11": {"no_tool_errors"},  # a timeout, retried: the checks are stricter than the label
    "rf-04": {"tools_before:lookup_order,issue_refund"},  # refund without a lookup
    "rf-05": {"tools_before:lookup_order,issue_refund"},  # refund, then lookup
    "rf-06": {"max_repeats"},  # the same refund twice
    "rf-07": {"no_tool_errors"},  # the refund failed; the assistant said done
    "rf-08": {"tools_forbidden:issue_refund"},  # refunded a shipped order
    "rf-09": {"tool_args:issue_refund"},  # refunded N2090 for N2009
    "cx-04": {"tools_match"},  # cancel, then lookup
    "cx-06": {"no_tool_errors"},  # the cancellation failed; the assistant said done
    "cx-07": {"tools_match", "max_tool_calls"},  # three lookups
    "cx-08": {"contains:cancel"},  # the log ends on the cancel call: no answer
    "cx-10": {"tool_args:cancel_order"},  # cancelled N3100 for N3010
}
# The human label disagrees with the checks here, by design: two answers contradict what the
# tools returned (a wrong date, a voucher nobody issued), which only a judge or a person
# sees; one handled a tool error well (retried), which no_tool_errors cannot tell.
CHECKS_MISS = {"os-10", "rf-10"}
CHECKS_OVERSHOOT = {"os-11"}


def test_the_agent_example_runs_end_to_end_with_the_designed_outcomes() -> None:
    import tinyeval

    cases = tinyeval.load(AGENT_EXAMPLE)
    assert len(cases) >= 30
    assert Counter(c.category for c in cases) == {
        "order_status": 11, "refunds": 11, "cancellations": 10,
    }  # fmt: skip
    result = tinyeval.run(cases)
    rows = {row["id"]: row for row in result.rows}
    assert set(rows) == {c.id for c in cases}
    for case in cases:
        row = rows[case.id]
        failed = {name for name, ok in row["checks"].items() if not ok}
        assert failed == DESIGNED_FAILURES.get(case.id, set()), case.id
        assert row["status"] == ("fail" if case.id in DESIGNED_FAILURES else "pass"), case.id
        agrees = (row["status"] == "pass") == (case.label == "PASS")
        assert agrees is (case.id not in CHECKS_MISS | CHECKS_OVERSHOOT), case.id
        for name in failed:  # every failure says what it saw
            assert row["check_details"][name], (case.id, name)
    assert rows["cx-08"]["output"] == ""  # the final turn only calls a tool
    assert rows["rf-04"]["check_details"]["tools_before:lookup_order,issue_refund"] == (
        "issue_refund (call 1) came before any lookup_order (never called)"
    )
