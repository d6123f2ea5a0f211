"""Tests for tinyeval.checks: every check passing and failing, every spec error, tool shapes."""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyeval import checks
from tinyeval.agents.tools import tools_forbidden, tools_required
from tinyeval.checks import (
    CheckResult,
    CheckSpecError,
    NamedCheck,
    check,
    checks_from_expect,
    contains,
    equals,
    get_path,
    has_field,
    in_range,
    matches,
    max_chars,
    max_words,
    not_contains,
    not_matches,
    one_of,
    run_checks,
    run_checks_detailed,
    valid_json,
)


def run_one(named: NamedCheck, output: str | None, case: Any = None) -> CheckResult:
    """The result of one check, through the public runner."""
    return run_checks_detailed(output, [named], case=case)[named.name]


def spec_error(expect: Any) -> CheckSpecError:
    with pytest.raises(CheckSpecError) as info:
        checks_from_expect(expect)
    return info.value


# --- valid_json -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['{"amount": 125050}', "  [1, 2]\n", "null", '"x"', "\t3\r\n"])
def test_valid_json_passes_with_surrounding_whitespace(text: str) -> None:
    assert run_one(valid_json(), text) == CheckResult(True)


@pytest.mark.parametrize(
    "text", ["", "{'amount': 1}", '{"amount": 1', '{"a": 1} trailing', "NaN", "[Infinity]"]
)
def test_valid_json_fails_on_non_json(text: str) -> None:
    result = run_one(valid_json(), text)
    assert result.passed is False
    assert result.detail is not None and result.detail.startswith("not valid JSON")


def test_valid_json_detail_gives_the_error_position() -> None:
    # '{"amount": 1' ends after 12 characters: the parser expects ',' or '}' at char 12.
    detail = run_one(valid_json(), '{"amount": 1').detail
    assert detail is not None and "(char 12)" in detail


def test_valid_json_does_not_strip_code_fences_and_says_so() -> None:
    result = run_one(valid_json(), '```json\n{"amount": 125050}\n```')
    assert result.passed is False
    assert result.detail is not None and "code fence" in result.detail


def test_deeply_nested_json_is_a_failure_not_a_crash() -> None:
    result = run_one(valid_json(), "[" * 100_000 + "]" * 100_000)
    assert result.passed is False


def _strict_loads_ok(text: str) -> bool:
    def reject(name: str) -> Any:
        raise ValueError(name)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({key for key, _ in pairs}) != len(pairs):
            raise ValueError("a key given twice")
        return dict(pairs)

    try:
        json.loads(text, parse_constant=reject, object_pairs_hook=unique)
    except (ValueError, RecursionError):
        return False
    return True


@given(st.text(max_size=30))
def test_valid_json_agrees_with_strict_json_loads_on_any_text(text: str) -> None:
    assert run_one(valid_json(), text).passed is _strict_loads_ok(text)


def test_json_with_a_key_given_twice_fails_every_check_that_reads_it_naming_the_key() -> None:
    # a reader keeps either value: the check must not pick the one that passes
    output = '{"amount_cents": 125050, "amount_cents": 1250}'
    found = checks.run_checks_detailed(
        output, checks_from_expect({"valid_json": True, "equals": {"amount_cents": 1250}})
    )
    for result in found.values():
        assert not result.passed
        assert result.detail == "not valid JSON: the key 'amount_cents' is given twice"
    nested = '{"payee": {"name": "Ana", "name": "Juan"}}'
    assert not run_one(equals("payee.name", "Juan"), nested).passed


def test_a_key_given_twice_blocks_the_gate_through_the_cli(tmp_path: Path) -> None:
    case = {"id": "amt-1", "category": "amounts", "expect": {"equals": {"amount_cents": 1250}},
            "output": '{"amount_cents": 125050, "amount_cents": 1250}'}  # fmt: skip
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", "cases.jsonl", "--threshold", "amounts=1.0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(checks.__file__).parents[1])},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the key 'amount_cents' is given twice" in done.stdout


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@given(json_values, st.sampled_from(["", " ", "\n", "\t \r\n"]))
def test_valid_json_accepts_any_dumped_value(value: Any, padding: str) -> None:
    assert run_one(valid_json(), padding + json.dumps(value) + padding).passed


# --- get_path ---------------------------------------------------------------------------


def test_get_path_through_objects_and_arrays() -> None:
    data = {"payee": {"name": "Juan", "accounts": [{"cbu": "0170"}, {"cbu": "0290"}]}, "0": "zero"}
    assert get_path(data, "payee.accounts.1.cbu") == "0290"
    assert get_path(data, "0") == "zero"  # digits are a key inside an object
    assert get_path([[10, 11], [12]], "1.0") == 12


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("payee.alias", "no key 'alias' in 'payee'"),
        ("payee.accounts.2", "no index 2 in 'payee.accounts' (length 1)"),
        ("payee.accounts.first", "'payee.accounts' is an array, and 'first' is not an index"),
        ("payee.accounts.-2", "no index -2 in 'payee.accounts' (length 1)"),
        ("payee.accounts.-x", "'payee.accounts' is an array, and '-x' is not an index"),
        ("payee.name.0", "'payee.name' is a string, not an object or an array"),
        ("missing", "no key 'missing' at the top level"),
    ],
)
def test_get_path_missing_raises_lookup_error(path: str, message: str) -> None:
    data = {"payee": {"name": "Juan", "accounts": [{"cbu": "0170"}]}}
    with pytest.raises(LookupError) as info:
        get_path(data, path)
    assert str(info.value) == message


@pytest.mark.parametrize("path", ["", "a..b", ".a", "a.", 3])
def test_get_path_rejects_malformed_paths(path: Any) -> None:
    with pytest.raises(CheckSpecError) as info:
        get_path({"a": 1}, path)
    assert info.value.field == "path"


keys = st.text(min_size=1, max_size=6).filter(lambda key: "." not in key)


@st.composite
def nested_with_path(draw: st.DrawFn) -> tuple[Any, str, Any]:
    """A random nested structure, a path into it, and the value placed at that path."""
    value = draw(json_values)
    steps = draw(st.lists(st.one_of(keys, st.integers(0, 3)), min_size=1, max_size=5))
    structure = value
    for step in reversed(steps):
        if isinstance(step, int):
            siblings = draw(st.lists(json_values, min_size=step, max_size=step))
            structure = [*siblings, structure, *draw(st.lists(json_values, max_size=2))]
        else:
            others = draw(st.dictionaries(keys, json_values, max_size=3))
            structure = {**others, step: structure}
    return structure, ".".join(str(step) for step in steps), value


@given(nested_with_path())
def test_get_path_finds_what_was_put_there(example: tuple[Any, str, Any]) -> None:
    structure, path, value = example
    assert get_path(structure, path) == value
    # and the same path works on the JSON text through has_field
    assert run_one(has_field(path), json.dumps(structure)).passed


# --- fields -----------------------------------------------------------------------------


def test_fields_pass_fail_and_null_counts_as_present() -> None:
    output = '{"amount": 125050, "payee": {"name": null}}'
    assert run_checks(output, [has_field(p) for p in ("amount", "payee.name", "currency")]) == {
        "field:amount": True,
        "field:payee.name": True,
        "field:currency": False,
    }
    assert run_one(has_field("currency"), output).detail == (
        "missing: no key 'currency' at the top level"
    )


def test_json_checks_fail_on_non_json_output_with_the_reason() -> None:
    results = run_checks_detailed("Transferiré $1.250,50", [has_field("amount")])
    assert results["field:amount"].passed is False
    assert (results["field:amount"].detail or "").startswith("not valid JSON")


# --- equals: exactness ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        ('{"amount": 125050}', True),
        ('{"amount": 125050.0}', True),  # JSON has one number type: same value
        ('{"amount": 1250.5}', False),  # the amount in pesos, not in centavos
        ('{"amount": 1250.50}', False),
        ('{"amount": "125050"}', False),  # a string is never a number
        ('{"amount": 125051}', False),
        ('{"amount": null}', False),
    ],
)
def test_equals_125050_exactly(output: str, passed: bool) -> None:
    assert run_one(equals("amount", 125050), output).passed is passed


def test_equals_detail_shows_the_actual_value_and_type() -> None:
    named = equals("amount", 125050)
    assert run_one(named, '{"amount": 1250.5}').detail == "got 1250.5, expected 125050"
    assert run_one(named, '{"amount": "125050"}').detail == (
        'got "125050" (a string), expected 125050'
    )
    assert run_one(named, "{}").detail == "missing: no key 'amount' at the top level"


@pytest.mark.parametrize(
    ("actual", "expected", "passed"),
    [
        ("true", True, True),
        ("1", True, False),  # bool is never a number, whatever Python says about True == 1
        ("true", 1, False),
        ("0", False, False),
        ('"1"', 1, False),
        ("null", None, True),
        ('"ARS"', "ARS", True),
        ('"ars"', "ARS", False),
        ("[1, 2]", [1, 2], True),
        ("[1, 2]", [2, 1], False),
        ("[1, true]", [1, 1], False),
        ('{"a": 1, "b": [2.0]}', {"b": [2], "a": 1}, True),
        ('{"a": 1}', {"a": 1, "b": 2}, False),
        ('{"a": 1, "b": 2}', {"a": 1}, False),
        ('{"a": "1"}', {"a": 1}, False),
    ],
)
def test_equals_has_no_python_coercions(actual: str, expected: Any, passed: bool) -> None:
    assert run_one(equals("v", expected), f'{{"v": {actual}}}').passed is passed


def test_equals_path_into_arrays() -> None:
    output = '{"transfers": [{"amount": 100}, {"amount": 125050}]}'
    assert run_one(equals("transfers.1.amount", 125050), output).passed


# --- one_of and range -------------------------------------------------------------------


def test_one_of_passes_and_fails_exactly() -> None:
    named = one_of("currency", ["ARS", "USD"])
    assert run_one(named, '{"currency": "USD"}').passed
    assert run_one(named, '{"currency": "EUR"}').detail == (
        'got "EUR", expected one of ["ARS", "USD"]'
    )
    assert run_one(one_of("n", [1, 2]), '{"n": true}').passed is False


@pytest.mark.parametrize(
    ("value", "passed"),
    [("1", True), ("50.5", True), ("100", True), ("0.999", False), ("101", False)],
)
def test_range_is_inclusive(value: str, passed: bool) -> None:
    assert run_one(in_range("n", 1, 100), f'{{"n": {value}}}').passed is passed


@pytest.mark.parametrize("value", ['"50"', "true", "null", "[50]"])
def test_range_fails_for_non_numbers(value: str) -> None:
    result = run_one(in_range("n", 1, 100), f'{{"n": {value}}}')
    assert result.passed is False
    assert (result.detail or "").endswith("expected a number")


def test_range_open_ends() -> None:
    assert run_one(in_range("n", None, 10), '{"n": -1e9}').passed
    assert run_one(in_range("n", 0, None), '{"n": -1}').detail == "got -1, expected 0 <= value"
    assert run_one(in_range("n", None, None), '{"n": 3}').passed
    assert run_one(in_range("n", 1, 2), '{"n": 3}').detail == "got 3, expected 1 <= value <= 2"


# --- contains / not_contains ------------------------------------------------------------


def test_argentine_amount_renderings() -> None:
    # "$1.250,50" is 1250 pesos 50 centavos written the Argentine way (dot for
    # thousands, comma for decimals); "1250.5" and "$125.050" are wrong renderings.
    expect = {"contains": ["$1.250,50"], "not_contains": ["1250.5", "$125.050"]}
    built = checks_from_expect(expect)
    assert run_checks("Transferiré $1.250,50 a Juan", built) == {
        "contains:$1.250,50": True,
        "not_contains:1250.5": True,
        "not_contains:$125.050": True,
    }
    assert run_checks("Transferiré $125.050 a Juan", built) == {
        "contains:$1.250,50": False,
        "not_contains:1250.5": True,
        "not_contains:$125.050": False,
    }
    assert run_checks("Transferiré 1250.50 pesos", built)["not_contains:1250.5"] is False


def test_contains_is_case_sensitive() -> None:
    assert run_one(contains("Juan"), "pagale a juan").passed is False
    assert run_one(not_contains("Juan"), "pagale a juan").passed is True


def test_contains_details() -> None:
    assert run_one(contains("CBU"), "sin datos").detail == "not found"
    # "CBU" starts after "Tu " (3 characters)
    assert run_one(not_contains("CBU"), "Tu CBU es ...").detail == "found at character 3"


@given(st.text(max_size=20), st.text(min_size=1, max_size=4))
def test_contains_agrees_with_in(output: str, text: str) -> None:
    assert run_one(contains(text), output).passed is (text in output)
    assert run_one(not_contains(text), output).passed is (text not in output)


def test_long_texts_get_short_distinct_stable_names() -> None:
    first = "Lamentablemente no puedo ejecutar la transferencia " + "a" * 20
    second = "Lamentablemente no puedo ejecutar la transferencia " + "b" * 20
    names = [contains(first).name, contains(second).name]
    assert names[0] != names[1]
    assert all(len(name) <= len("contains:") + 40 for name in names)
    assert contains(first).name == names[0]  # the same text always gives the same name
    assert "\n" not in not_contains("línea uno\nlínea dos").name


# --- regex / not_regex ------------------------------------------------------------------


def test_regex_uses_search_and_no_implicit_flags() -> None:
    assert run_one(matches(r"\d{22}"), "CBU: 0170099220000067797370").passed
    assert run_one(matches(r"^CBU"), "Tu CBU").detail == "no match"
    assert run_one(matches("(?i)cbu"), "Tu CBU").passed
    assert run_one(matches(re.compile("cbu", re.IGNORECASE)), "Tu CBU").passed


def test_not_regex_detail_shows_the_match() -> None:
    named = not_matches(r"\d+\.\d{2}\b")
    assert run_one(named, "$1.250,50").passed
    # "$" is character 0, so "1250.50" starts at character 1
    assert run_one(named, "$1250.50").detail == "matched '1250.50' at character 1"
    assert named.name == r"not_regex:\d+\.\d{2}\b"


# --- max_chars / max_words --------------------------------------------------------------


def test_length_limits_pass_and_fail() -> None:
    assert run_one(max_chars(4), "hola").passed  # the limit itself is allowed
    assert run_one(max_chars(3), "hola").detail == "4 characters, more than 3"
    assert run_one(max_chars(1), "é").passed  # one character, two UTF-8 bytes
    assert run_one(max_words(2), "  hola\n  che ").passed
    assert run_one(max_words(2), "hola che boludo").detail == "3 words, more than 2"
    assert run_one(max_chars(0), "").passed


@given(st.text(max_size=40), st.integers(0, 50))
def test_length_limits_agree_with_len_and_split(output: str, limit: int) -> None:
    assert run_one(max_chars(limit), output).passed is (len(output) <= limit)
    assert run_one(max_words(limit), output).passed is (len(output.split()) <= limit)


# --- checks_from_expect: building -------------------------------------------------------


def test_every_expect_key_builds_its_named_checks_in_a_fixed_order() -> None:
    expect = {
        "tools_required": ["lookup_balance"],
        "tools_forbidden": ["transfer"],
        "max_words": 50,
        "max_chars": 400,
        "not_regex": [r"\d+\.\d{2}\b"],
        "regex": r"\$\d",
        "not_contains_i": ["ARS 1250"],
        "contains_i": "juan",
        "not_contains": ["1250.5"],
        "contains": "$1.250,50",
        "range": {"amount": [1, None]},
        "one_of": {"currency": ["ARS"]},
        "equals": {"amount": 125050},
        "fields": ["amount", "payee.name"],
        "valid_json": True,
    }
    names = [named.name for named in checks_from_expect(expect)]
    assert names == [
        "valid_json",
        "field:amount",
        "field:payee.name",
        "equals:amount",
        "one_of:currency",
        "range:amount",
        "contains:$1.250,50",
        "not_contains:1250.5",
        "contains_i:juan",
        "not_contains_i:ARS 1250",
        r"regex:\$\d",
        r"not_regex:\d+\.\d{2}\b",
        "max_chars",
        "max_words",
        "tools_forbidden:transfer",
        "tools_required:lookup_balance",
    ]
    # the trajectory keys that follow are tested in test_trajectory.py
    assert tuple(checks.EXPECT_KEYS)[: len(expect)] == tuple(reversed(list(expect)))


def test_a_whole_expect_block_on_a_good_and_a_bad_output() -> None:
    expect = {
        "valid_json": True,
        "equals": {"amount": 125050},
        "one_of": {"currency": ["ARS"]},
        "not_contains": ["1250.5"],
        "tools_forbidden": ["transfer"],
    }
    built = checks_from_expect(expect)
    good = run_checks('{"amount": 125050, "currency": "ARS"}', built, case={"tool_calls": []})
    assert all(good.values())
    bad = run_checks('{"amount": 1250.5, "currency": "ARS"}', built, case={"tool_calls": []})
    assert bad == {
        "valid_json": True,
        "equals:amount": False,
        "one_of:currency": True,
        "not_contains:1250.5": False,
        "tools_forbidden:transfer": True,
    }


def test_valid_json_false_and_empty_expect_give_no_checks() -> None:
    assert checks_from_expect({"valid_json": False}) == []
    assert checks_from_expect({}) == []


# --- checks_from_expect: every spec error -----------------------------------------------


@pytest.mark.parametrize(
    ("expect", "field", "words"),
    [
        ([1], "expect", "expected an object of expectations"),
        ({1: 2}, "expect", "expected string keys"),
        ({"valid_json": "yes"}, "expect.valid_json", "expected true or false"),
        ({"valid_json": 1}, "expect.valid_json", "expected true or false"),
        ({"fields": "amount"}, "expect.fields", "expected a list of strings"),
        ({"fields": []}, "expect.fields", "would check nothing"),
        ({"fields": ["amount", 3]}, "expect.fields[1]", "expected a string"),
        ({"fields": ["a..b"]}, "expect.fields[0]", "empty part"),
        ({"fields": ["amount", "amount"]}, "expect.fields[1]", "repeats entry 0"),
        ({"equals": [1]}, "expect.equals", "expected an object of path → value"),
        ({"equals": {}}, "expect.equals", "would check nothing"),
        ({"equals": {1: 5}}, "expect.equals.1", "expected a dotted path"),
        ({"one_of": {None: [1]}}, "expect.one_of.None", "expected a dotted path"),
        ({"contains": ()}, "expect.contains", "would check nothing"),
        ({"equals": {"amount": {1, 2}}}, "expect.equals.amount", "expected a JSON value"),
        ({"equals": {"amount": float("nan")}}, "expect.equals.amount", "finite number"),
        ({"one_of": ["ARS"]}, "expect.one_of", "expected an object of path"),
        ({"one_of": {}}, "expect.one_of", "would check nothing"),
        ({"one_of": {"currency": "ARS"}}, "expect.one_of.currency", "list of allowed values"),
        ({"one_of": {"currency": []}}, "expect.one_of.currency", "at least one allowed value"),
        ({"range": [1, 2]}, "expect.range", "expected an object of path"),
        ({"range": {}}, "expect.range", "would check nothing"),
        ({"range": {"amount": 5}}, "expect.range.amount", "expected [min, max]"),
        ({"range": {"amount": [1, 2, 3]}}, "expect.range.amount", "expected [min, max]"),
        ({"range": {"amount": ["1", 2]}}, "expect.range.amount", "got a string"),
        ({"range": {"amount": [True, 2]}}, "expect.range.amount", "got a boolean"),
        ({"range": {"amount": [5, 1]}}, "expect.range.amount", "min <= max, got [5, 1]"),
        ({"contains": 5}, "expect.contains", "expected a string or a list of strings"),
        ({"contains": []}, "expect.contains", "would check nothing"),
        ({"contains": [""]}, "expect.contains[0]", "non-empty string"),
        ({"contains": ""}, "expect.contains", "non-empty string"),
        ({"contains": ["x", None]}, "expect.contains[1]", "expected a string"),
        ({"not_contains": {"a": 1}}, "expect.not_contains", "list of strings"),
        ({"not_contains": []}, "expect.not_contains", "would check nothing"),
        ({"regex": "("}, "expect.regex", "invalid regex '('"),
        ({"regex": ["ok", "[a-"]}, "expect.regex[1]", "unterminated character set"),
        ({"regex": []}, "expect.regex", "would check nothing"),
        ({"not_regex": "(?P<x"}, "expect.not_regex", "invalid regex"),
        ({"not_regex": 3}, "expect.not_regex", "list of strings"),
        ({"max_chars": -1}, "expect.max_chars", "non-negative integer"),
        ({"max_chars": True}, "expect.max_chars", "got a boolean true"),
        ({"max_chars": 10.0}, "expect.max_chars", "non-negative integer"),
        ({"max_words": "50"}, "expect.max_words", "non-negative integer"),
        ({"max_words": False}, "expect.max_words", "got a boolean false"),
        ({"tools_forbidden": "transfer"}, "expect.tools_forbidden", "list of strings"),
        ({"tools_forbidden": []}, "expect.tools_forbidden", "would check nothing"),
        ({"tools_required": [""]}, "expect.tools_required[0]", "non-empty string"),
        ({"tools_required": [{"name": "x"}]}, "expect.tools_required[0]", "expected a string"),
    ],
)
def test_spec_errors_name_the_field(expect: Any, field: str, words: str) -> None:
    error = spec_error(expect)
    assert error.field == field
    assert words in error.reason
    assert str(error) == f"{field}: {error.reason}"
    assert isinstance(error, ValueError)


def test_invalid_regex_message_carries_re_error_text() -> None:
    try:
        re.compile("(")
    except re.error as error:
        expected = str(error)
    assert spec_error({"regex": "("}).reason == f"invalid regex '(': {expected}"


def test_unknown_key_suggests_the_closest() -> None:
    error = spec_error({"not_contain": ["1250.5"]})
    assert error.field == "expect.not_contain"
    assert "did you mean 'not_contains'?" in error.reason
    assert "did you mean 'tools_forbidden'?" in spec_error({"tool_forbidden": ["x"]}).reason


def test_unknown_key_without_a_close_match_lists_the_known_keys() -> None:
    message = spec_error({"zzz": 1}).reason
    assert "did you mean" not in message
    assert all(key in message for key in checks.EXPECT_KEYS)


# --- factories validate too -------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: contains(""),
        lambda: not_contains(3),  # type: ignore[arg-type]
        lambda: matches("("),
        lambda: not_matches(""),
        lambda: matches(re.compile("")),
        lambda: max_chars(-1),
        lambda: max_words(True),
        lambda: equals("a", object()),
        lambda: equals("", 1),
        lambda: one_of("a", []),
        lambda: one_of("a", "ARS"),
        lambda: in_range("a", 2, 1),
        lambda: in_range("a", float("nan"), None),
        lambda: tools_forbidden(),
        lambda: tools_required(""),
    ],
)
def test_factories_reject_bad_arguments(make: Any) -> None:
    with pytest.raises(CheckSpecError):
        make()


# --- running ----------------------------------------------------------------------------


def test_a_raising_check_fails_with_the_exception_and_the_others_still_run() -> None:
    def explodes(output: str) -> bool:
        raise ZeroDivisionError("division by zero")

    results = run_checks_detailed("hola", [explodes, max_chars(10), contains("hola")])
    assert results["explodes"] == CheckResult(False, "raised ZeroDivisionError: division by zero")
    assert results["max_chars"].passed and results["contains:hola"].passed


def test_missing_output_fails_every_check_with_no_output() -> None:
    results = run_checks_detailed(None, [valid_json(), max_chars(10), not_contains("x")])
    assert results == {
        "valid_json": CheckResult(False, "no output"),
        "max_chars": CheckResult(False, "no output"),
        "not_contains:x": CheckResult(False, "no output"),
    }


def test_non_string_output_is_an_error() -> None:
    with pytest.raises(CheckSpecError) as info:
        run_checks({"amount": 125050}, [valid_json()])  # type: ignore[arg-type]
    assert info.value.field == "output"


def test_duplicate_names_are_an_error_never_an_overwrite() -> None:
    with pytest.raises(CheckSpecError, match="two checks are named 'max_chars'"):
        run_checks("x", [max_chars(1), max_chars(100)])
    with pytest.raises(CheckSpecError, match="two checks are named '<lambda>'"):
        run_checks("x", [lambda o: True, lambda o: False])


def test_items_that_are_not_checks_are_an_error() -> None:
    with pytest.raises(CheckSpecError, match="unpack"):
        run_checks("x", [[has_field("a")]])  # type: ignore[list-item]
    with pytest.raises(CheckSpecError, match="expected a check"):
        run_checks("x", ["contains:x"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (True, CheckResult(True)),
        (False, CheckResult(False)),
        ((False, "too short"), CheckResult(False, "too short")),
        (CheckResult(True, "fine"), CheckResult(True, "fine")),
    ],
)
def test_user_checks_may_return_bool_pair_or_result(returned: Any, expected: CheckResult) -> None:
    assert run_one(NamedCheck("mine", lambda output: returned), "x") == expected


@pytest.mark.parametrize("returned", [1, "PASS", 0.0, (1, "x"), (True,), [True, "x"]])
def test_other_return_values_fail_rather_than_pass_by_truthiness(returned: Any) -> None:
    result = run_one(NamedCheck("mine", lambda output: returned), "x")
    assert result.passed is False
    assert (result.detail or "").startswith("returned ")


def test_check_decorator_forms_and_case_access() -> None:
    @check
    def mentions_payee(output: str, case: Any) -> bool:
        return case.get("payee", "") in output

    @check(name="short")
    def under_ten(output: str) -> bool:
        return len(output) < 10

    named = check(lambda output: True, name="always")
    assert isinstance(mentions_payee, NamedCheck) and mentions_payee.name == "mentions_payee"
    assert (under_ten.name, named.name) == ("short", "always")
    assert run_checks("a Juan", [mentions_payee, under_ten], case={"payee": "Juan"}) == {
        "mentions_payee": True,
        "short": True,
    }


def test_plain_functions_are_named_by_dunder_name() -> None:
    def polite(output: str) -> bool:
        return "por favor" in output

    assert run_checks("por favor", [polite]) == {"polite": True}


def test_names_must_be_non_empty_strings() -> None:
    with pytest.raises(CheckSpecError):
        NamedCheck("", lambda output: True)
    with pytest.raises(CheckSpecError):
        check(lambda output: True, name="  ")


def test_check_result_rejects_truthy_non_bools() -> None:
    with pytest.raises(CheckSpecError):
        CheckResult(1)  # type: ignore[arg-type]
    with pytest.raises(CheckSpecError):
        CheckResult(True, 3)  # type: ignore[arg-type]


def test_json_is_parsed_once_per_distinct_output(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = checks._DECODER

    class Counting:
        def decode(self, text: str) -> Any:
            calls.append(text)
            return real.decode(text)

    checks._parse_json.cache_clear()
    monkeypatch.setattr(checks, "_DECODER", Counting())  # the decoder checks parse with
    output = '{"amount": 125050, "currency": "ARS", "unique": 8812}'
    built = [valid_json(), has_field("amount"), has_field("currency"), equals("amount", 125050)]
    assert all(run_checks(output, built).values())
    assert calls == [output]


def test_spec_error_survives_pickling() -> None:
    # process pools send exceptions back pickled: the field must come along
    error = pickle.loads(pickle.dumps(spec_error({"max_chars": -1})))
    assert (type(error), error.field) == (CheckSpecError, "expect.max_chars")
    assert str(error).startswith("expect.max_chars: expected a non-negative integer")


class TwoArguments:
    def __call__(self, output: str, case: Any) -> bool:
        return case is not None


class OneArgument:
    def method(self, output: str) -> bool:
        return bool(output)


@pytest.mark.parametrize(
    ("func", "expected"),
    [
        (lambda output: bool(output), True),
        (lambda output, case: case is not None, False),  # the runner's case is None here
        (lambda *args: len(args) == 2, True),
        (TwoArguments(), False),
        (OneArgument().method, True),
    ],
)
def test_checks_get_the_case_only_when_they_take_it(func: Any, expected: bool) -> None:
    assert NamedCheck("mine", func)("x") is expected


# --- the registry of expect keys ----------------------------------------------------------


def test_an_extras_key_in_a_copy_without_it_says_which_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import tinyeval
    from tinyeval.dataset import DatasetError, load

    monkeypatch.setitem(tinyeval._EXTRAS["expect"], "gone_key", "gone.tools:build")
    with pytest.raises(tinyeval.InputError) as info:
        checks_from_expect({"gone_key": ["x"]})
    assert (
        str(info.value) == "the expect key 'gone_key' needs tinyeval/gone/, which this copy lacks"
    )
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "output": "hi", "expect": {"gone_key": ["x"]}}\n')
    with pytest.raises(DatasetError) as at:
        load(str(cases))
    assert str(at.value).endswith(
        "cases.jsonl:1: the expect key 'gone_key' needs tinyeval/gone/, which this copy lacks"
    )


def test_register_expect_adds_a_key_run_after_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "_EXPECT", dict(checks._EXPECT))
    checks.register_expect("terse", lambda value, field: [max_words(value)])
    built = checks_from_expect({"terse": 3, "contains": "hi"})
    assert [c.name for c in built] == ["contains:hi", "max_words"]
    with pytest.raises(CheckSpecError, match="is taken"):
        checks.register_expect("contains", lambda value, field: [])
    with pytest.raises(CheckSpecError, match="is taken"):
        checks.register_expect("tools_required", lambda value, field: [])
    with pytest.raises(CheckSpecError, match="did you mean 'terse'"):
        checks_from_expect({"terse_": 1})
