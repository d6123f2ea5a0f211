"""The bundled example dataset in ``examples/``: its shape, its counts, and that
its deterministic expectations say what its human labels say.

The structural tests use only the standard library. The tests at the end run
the real checks and the real loader, so a change to either that breaks the
example (which is what new users run first) fails here.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tinyeval.checks import checks_from_expect, run_checks
from tinyeval.dataset import load

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# the keys DESIGN.md allows in an ``expect`` block
KNOWN_EXPECT_KEYS = {
    "valid_json",
    "fields",
    "equals",
    "one_of",
    "range",
    "contains",
    "not_contains",
    "regex",
    "not_regex",
    "max_chars",
    "max_words",
    "tools_forbidden",
    "tools_required",
}
CATEGORIES = {"amount_extraction", "ambiguous_transfer", "support_answers", "tone"}
# categories whose code checks alone decide PASS/FAIL; support_answers is graded by the judge
CHECKED_BY_CODE = ("amount_extraction", "ambiguous_transfer", "tone")

# The raw-logs mapping the README demonstrates (--field KEY=PATH).
RAW_LOG_FIELDS = {
    "id": "request_id",
    "input": "request.messages.0.content",
    "output": "response.text",
    "category": "tags.feature",
}


def read_jsonl(name: str) -> list[dict[str, Any]]:
    """Every line of ``examples/NAME`` as a JSON object; fail naming the line otherwise."""
    rows = []
    with (EXAMPLES / name).open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                pytest.fail(f"{name}:{number}: not JSON: {error}")
            if not isinstance(row, dict):
                pytest.fail(f"{name}:{number}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
    return rows


def dig(record: Any, dotted: str) -> Any:
    """Follow ``a.b.0.c`` through objects and lists; KeyError/IndexError when absent."""
    for part in dotted.split("."):
        record = record[int(part)] if isinstance(record, list) else record[part]
    return record


CASES = read_jsonl("cases.jsonl")
BY_ID = {case["id"]: case for case in CASES}


def in_category(category: str) -> list[dict[str, Any]]:
    return [case for case in CASES if case["category"] == category]


# --------------------------------------------------------------------------- shape


def test_ids_are_unique_and_readable() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    prefixes = {
        "amount_extraction": "amt-",
        "ambiguous_transfer": "amb-",
        "support_answers": "sup-",
        "tone": "tone-",
    }
    for case in CASES:
        assert case["id"].startswith(prefixes[case["category"]]), case["id"]


def test_size_and_categories() -> None:
    counts = Counter(case["category"] for case in CASES)
    assert len(CASES) >= 60
    assert set(counts) == CATEGORIES
    assert counts["amount_extraction"] == 20


def test_amount_extraction_has_17_pass_and_3_fail() -> None:
    labels = Counter(case["label"] for case in in_category("amount_extraction"))
    assert labels == {"PASS": 17, "FAIL": 3}


def test_every_category_has_failures_and_passes() -> None:
    for category in CATEGORIES:
        labels = {case["label"] for case in in_category(category)}
        assert labels == {"PASS", "FAIL"}, category


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["id"])
def test_case_has_the_required_keys(case: dict[str, Any]) -> None:
    for key in ("id", "category", "input", "output", "origin"):
        assert isinstance(case.get(key), str) and case[key].strip(), key
    assert case["label"] in ("PASS", "FAIL")
    assert isinstance(case["expect"], dict) and case["expect"]
    assert set(case["expect"]) <= KNOWN_EXPECT_KEYS, set(case["expect"]) - KNOWN_EXPECT_KEYS


def test_support_cases_have_context_and_the_others_do_not() -> None:
    for case in CASES:
        if case["category"] == "support_answers":
            assert isinstance(case.get("context"), str) and case["context"].strip(), case["id"]
        else:
            assert "context" not in case, case["id"]


def tool_call_shape(call: Any) -> str:
    """'name', 'openai' or 'anthropic'; fail on anything else."""
    if isinstance(call, str):
        return "name"
    if call.get("type") == "function":
        arguments = json.loads(call["function"]["arguments"])  # a JSON string in this shape
        assert isinstance(arguments, dict)
        assert call["function"]["name"]
        return "openai"
    if call.get("type") == "tool_use":
        assert isinstance(call["input"], dict) and call["name"]
        return "anthropic"
    pytest.fail(f"unknown tool-call shape: {call!r}")


def test_tool_calls_mix_the_three_shapes() -> None:
    shapes = Counter(tool_call_shape(call) for case in CASES for call in case.get("tool_calls", []))
    assert set(shapes) == {"name", "openai", "anthropic"}


def test_tool_expectations_only_where_tool_calls_are_recorded() -> None:
    for case in CASES:
        if {"tools_forbidden", "tools_required"} & set(case["expect"]):
            assert "tool_calls" in case, case["id"]


# --------------------------------------------------------------------------- amounts

# The right amount for each extraction case, worked out by hand from its input.
# In es-AR the dot groups thousands and the comma is the decimal separator.
HAND_AMOUNTS = {
    "amt-001": 1250 * 100 + 50,  # "1.250,50" = 1250 pesos 50 centavos = 125050
    "amt-002": 1500 * 100,  # "1.500" = one thousand five hundred = 150000
    "amt-003": 2_000_000 * 100,  # "$ 2.000.000" = 200000000
    "amt-004": 1500 * 100,  # "mil quinientos" = 1500 = 150000
    "amt-005": 300 * 100,  # "USD 300" = 30000 (USD cents)
    "amt-006": 1500 * 100,  # "1,5 lucas": a luca is 1000 pesos, 1.5 * 1000 = 1500 = 150000
    "amt-007": 750 * 100,  # "750" = 75000
    "amt-008": 12345 * 100 + 67,  # "$ 12.345,67" = 1234567
    "amt-009": 89 * 100 + 90,  # "$ 89,90" = 8990
    "amt-010": 2350 * 100,  # "dos mil trescientos cincuenta" = 2350 = 235000
    "amt-011": 3 * 1_000_000 * 100,  # "3 palos": a palo is a million pesos = 300000000
    "amt-012": 45_000 * 100,  # English "ARS 45,000": the comma groups thousands = 4500000
    "amt-013": 1250 * 100 + 50,  # English "$1,250.50" = 125050
    "amt-014": 1200 * 100,  # "U$S 1.200" = 120000 (USD cents)
    "amt-015": 20_000 * 100,  # "20.000 pesos" = 2000000
    "amt-016": 1_000_000 * 100,  # "1.000.000,00" = 100000000
    "amt-018": 1250 * 100 + 50,  # "1.250,50" again = 125050
    "amt-019": 1500 * 100,  # "1.500" again = 150000
    "amt-020": 2500 * 100,  # "2.500" = 250000
}
APPROXIMATE = {"amt-017": 15_000 * 100}  # "unos 15 mil": about 15000 pesos, so a range


def test_every_extraction_case_has_a_hand_derived_amount() -> None:
    extraction_ids = {case["id"] for case in in_category("amount_extraction")}
    assert set(HAND_AMOUNTS) | set(APPROXIMATE) == extraction_ids


@pytest.mark.parametrize("case_id", sorted(HAND_AMOUNTS))
def test_equals_expectation_is_the_exact_integer(case_id: str) -> None:
    expected = BY_ID[case_id]["expect"]["equals"]["amount_cents"]
    assert type(expected) is int
    assert expected == HAND_AMOUNTS[case_id]


def test_approximate_amount_gets_a_range_not_equals() -> None:
    for case_id, about in APPROXIMATE.items():
        expect = BY_ID[case_id]["expect"]
        assert "amount_cents" not in expect.get("equals", {})
        low, high = expect["range"]["amount_cents"]
        assert low < about < high


def parsed_amount(output: str) -> int | None:
    try:
        value = json.loads(output)
    except json.JSONDecodeError:
        return None
    return value.get("amount_cents") if isinstance(value, dict) else None


@pytest.mark.parametrize("case_id", sorted(HAND_AMOUNTS))
def test_extraction_output_is_right_exactly_when_labelled_pass(case_id: str) -> None:
    # independent of tinyeval.checks: strict JSON and the exact integer
    case = BY_ID[case_id]
    amount = parsed_amount(case["output"])
    right = type(amount) is int and amount == HAND_AMOUNTS[case_id]
    assert right == (case["label"] == "PASS")


# --------------------------------------------------------------------------- labels and raw logs


def test_labels_file_mirrors_the_support_labels() -> None:
    labels = read_jsonl("labels.jsonl")
    ids = [row["id"] for row in labels]
    assert len(ids) == len(set(ids))
    assert set(ids) <= set(BY_ID)
    assert {c["id"] for c in in_category("support_answers")} <= set(ids)
    for row in labels:
        assert set(row) == {"id", "label", "labeler", "at"}
        assert row["label"] == BY_ID[row["id"]]["label"], row["id"]
        assert row["labeler"] == "ana"
        assert datetime.fromisoformat(row["at"]).tzinfo is not None, row["at"]


def test_raw_logs_need_the_field_mapping() -> None:
    rows = read_jsonl("raw-logs.jsonl")
    assert len(rows) >= 8
    ids = []
    for row in rows:
        # none of tinyeval's own key names at the top: the mapping is what makes them cases
        assert not {"id", "input", "output", "category"} & set(row)
        for key, path in RAW_LOG_FIELDS.items():
            assert isinstance(dig(row, path), str) and dig(row, path), (key, path)
        assert row["request"]["messages"][0]["role"] == "user"
        ids.append(row["request_id"])
    assert len(ids) == len(set(ids))


# --------------------------------------------------------------------------- with tinyeval itself


def _run_expect(case: dict[str, Any]) -> dict[str, bool]:
    built = checks_from_expect(case["expect"])
    return run_checks(case["output"], built, case={"tool_calls": case.get("tool_calls", [])})


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if case["category"] in CHECKED_BY_CODE],
    ids=lambda case: case["id"],
)
def test_checks_pass_exactly_when_labelled_pass(case: dict[str, Any]) -> None:
    results = _run_expect(case)
    failed = sorted(name for name, passed in results.items() if not passed)
    if case["label"] == "PASS":
        assert not failed, f"{case['id']} is labelled PASS but fails {failed}"
    else:
        assert failed, f"{case['id']} is labelled FAIL but every check passes"


@pytest.mark.parametrize("case", in_category("support_answers"), ids=lambda case: case["id"])
def test_support_checks_pass_and_leave_grading_to_the_judge(case: dict[str, Any]) -> None:
    results = _run_expect(case)
    assert all(results.values()), results


def test_loader_reads_the_cases_and_the_mapped_raw_logs() -> None:
    cases = load(EXAMPLES / "cases.jsonl")
    assert [case.id for case in cases] == [case["id"] for case in CASES]
    raw = load(EXAMPLES / "raw-logs.jsonl", fields=RAW_LOG_FIELDS)
    rows = read_jsonl("raw-logs.jsonl")
    assert [(c.id, c.input, c.output, c.category) for c in raw] == [
        tuple(dig(row, path) for path in RAW_LOG_FIELDS.values()) for row in rows
    ]
