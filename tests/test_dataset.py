"""Loading cases: each format and loader error (file:line: field), samples, splits, fingerprints."""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyeval.dataset import (
    RECOGNISED_KEYS,
    Case,
    DatasetError,
    dataset_fingerprint,
    iter_cases,
    load,
    parse_field_mapping,
    sample,
    split_holdout,
)

ROOT = Path(__file__).resolve().parents[1]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- writing files, checking errors


def write(path: Path, content: str | bytes) -> Path:
    """Write text (UTF-8, line endings untouched) or bytes; gzip it when the name ends in .gz."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def jsonl(*records: Any) -> str:
    """One JSON value a line; a str is written as it is (for deliberately broken lines)."""
    return "".join(
        (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records
    )


def csv_text(header: list[str], *rows: list[str]) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def load_error(path: Path, **options: Any) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        load(path, **options)
    return info.value


def assert_error(
    error: DatasetError, path: Path | str, line: int | None, field: str | None, *fragments: str
) -> None:
    """The message reads FILE:LINE: FIELD: ... and the attributes say the same."""
    assert (error.path, error.line, error.field) == (str(path), line, field), str(error)
    where = f"{path}:{line}" if line is not None else f"{path}"
    prefix = f"{where}: {field}: " if field else f"{where}: "
    message = str(error)
    assert message.startswith(prefix), message
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


AMOUNT_RECORDS = [
    {
        "id": "amt-001",
        "input": "Transferí $1.250,50",
        "output": '{"amount_cents": 125050}',
        "category": "amounts",
        "expect": {"valid_json": True, "equals": {"amount_cents": 125050}},
        "label": "PASS",
        "team": "pagos",
    },
    {
        "id": "amt-002",
        "input": "¿Cuánto es?",
        "output": "ñandú",
        "category": "amounts",
        "tool_calls": ["lookup_balance"],
        "origin": "ticket-9",
        "label": "FAIL",
    },
    {"id": "tone-001", "input": "hola", "output": "chau", "context": "saludo"},
]


def amount_csv() -> str:
    """AMOUNT_RECORDS as CSV: JSON in expect/tool_calls cells, empty cells for absent values."""
    header = [
        "id",
        "input",
        "output",
        "category",
        "expect",
        "tool_calls",
        "origin",
        "label",
        "context",
        "team",
    ]
    rows = []
    for record in AMOUNT_RECORDS:
        row = []
        for key in header:
            value = record.get(key)
            if value is None:
                row.append("")
            elif key in ("expect", "tool_calls"):
                row.append(json.dumps(value))
            else:
                row.append(value)
        rows.append(row)
    return csv_text(header, *rows)


def comparable(cases: Iterable[Case]) -> list[dict[str, Any]]:
    return [case.to_dict() for case in cases]


# --------------------------------------------------------------------------- JSONL


class TestJsonl:
    def test_recognised_keys_become_fields_and_the_rest_meta(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl(*AMOUNT_RECORDS))
        first, second, third = load(path)
        assert first.id == "amt-001"
        assert first.input == "Transferí $1.250,50"
        assert first.output == '{"amount_cents": 125050}'
        assert first.category == "amounts"
        assert first.expect == {"valid_json": True, "equals": {"amount_cents": 125050}}
        assert first.label == "PASS"
        assert first.meta == {"team": "pagos"}
        assert second.tool_calls == ("lookup_balance",)
        assert second.origin == "ticket-9"
        assert (third.category, third.context, third.label) == ("default", "saludo", None)
        assert (first.source, first.line, third.line) == (str(path), 1, 3)

    def test_blank_lines_are_skipped_and_lines_still_counted(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", '\n{"id": "a"}\n   \n\t\n{"id": "b"}\n\n')
        assert [(c.id, c.line) for c in load(path)] == [("a", 2), ("b", 5)]

    def test_crlf_line_endings(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", '{"id": "a", "output": "x"}\r\n\r\n{"id": "b"}\r\n')
        cases = load(path)
        assert [(c.id, c.line, c.output) for c in cases] == [("a", 1, "x"), ("b", 3, None)]

    def test_last_line_without_newline_is_fine(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", '{"id": "a"}\n{"id": "b"}')
        assert [c.id for c in load(path)] == ["a", "b"]

    def test_utf8_with_and_without_bom_read_the_same(self, tmp_path: Path) -> None:
        text = jsonl(*AMOUNT_RECORDS)
        plain = write(tmp_path / "plain.jsonl", text)
        bom = write(tmp_path / "bom.jsonl", b"\xef\xbb\xbf" + text.encode("utf-8"))
        assert comparable(load(plain)) == comparable(load(bom))
        assert load(bom)[0].id == "amt-001"  # not "\ufeffamt-001"

    def test_unicode_line_separators_inside_strings_do_not_split_lines(
        self, tmp_path: Path
    ) -> None:
        # U+2028, U+0085 and U+000C may stand raw inside JSON strings; str.splitlines cuts there.
        text = "a\u2028b\x85c\x0cd"
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "a", "output": text}, {"id": "b"}))
        cases = load(path)
        assert cases[0].output == text
        assert [c.line for c in cases] == [1, 2]

    def test_ndjson_and_upper_case_suffixes(self, tmp_path: Path) -> None:
        for name in ("cases.ndjson", "CASES.JSONL", "cases.v2.jsonl"):
            assert [c.id for c in load(write(tmp_path / name, jsonl({"id": "a"})))] == ["a"]

    def test_iter_cases_streams_one_case_at_a_time(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "a"}, {"id": "b"}, "not json"))
        cases = iter_cases(path)
        assert next(cases).id == "a"  # the bad line 3 has not been read yet
        assert next(cases).id == "b"
        with pytest.raises(DatasetError) as info:
            next(cases)
        assert_error(info.value, path, 3, None, "not valid JSON")

    def test_path_objects_and_strings_are_both_accepted(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "a"}))
        assert comparable(load(path)) == comparable(load(str(path)))


class TestAcceptedValues:
    """Values that are accepted and normalised (each one documented; nothing else is coerced)."""

    @pytest.fixture
    def one(self, tmp_path: Path) -> Callable[[dict[str, Any]], Case]:
        def load_one(record: dict[str, Any]) -> Case:
            (case,) = load(write(tmp_path / "one.jsonl", jsonl(record)))
            return case

        return load_one

    def test_an_integer_id_becomes_a_string(self, one: Callable[..., Case]) -> None:
        assert one({"id": 7}).id == "7"

    def test_an_object_or_list_output_becomes_compact_json_text(
        self, one: Callable[..., Case]
    ) -> None:
        assert one({"id": "a", "output": {"amount_cents": 125050, "nota": "ñ"}}).output == (
            '{"amount_cents":125050,"nota":"ñ"}'
        )
        assert one({"id": "a", "output": [1, "x"]}).output == '[1,"x"]'

    def test_a_list_of_strings_context_is_joined_by_blank_lines(
        self, one: Callable[..., Case]
    ) -> None:
        assert one({"id": "a", "context": ["uno", "dos"]}).context == "uno\n\ndos"

    def test_null_category_is_the_default(self, one: Callable[..., Case]) -> None:
        assert one({"id": "a", "category": None}).category == "default"

    def test_a_numeric_origin_becomes_a_string(self, one: Callable[..., Case]) -> None:
        assert one({"id": "a", "origin": 4512}).origin == "4512"

    def test_labels_are_normalised(self, one: Callable[..., Case]) -> None:
        assert one({"id": "a", "label": " pass "}).label == "PASS"
        assert one({"id": "a", "label": "fail"}).label == "FAIL"
        assert one({"id": "a", "label": 4}).label == 4
        assert one({"id": "a", "label": "3"}).label == 3
        assert one({"id": "a", "label": "0.5"}).label == 0.5
        assert one({"id": "a", "label": None}).label is None

    def test_null_expect_and_tool_calls_mean_none(self, one: Callable[..., Case]) -> None:
        case = one({"id": "a", "expect": None, "tool_calls": None})
        assert (case.expect, case.tool_calls) == ({}, ())

    def test_input_keeps_any_json_value(self, one: Callable[..., Case]) -> None:
        messages = [{"role": "user", "content": "hola"}]
        assert one({"id": "a", "input": messages}).input == messages

    def test_tool_call_shapes_are_kept_as_given(self, one: Callable[..., Case]) -> None:
        calls = [
            "lookup",
            {"type": "function", "function": {"name": "transfer", "arguments": "{}"}},
            {"type": "tool_use", "id": "t1", "name": "audit", "input": {}},
        ]
        assert one({"id": "a", "tool_calls": calls}).tool_calls == tuple(calls)


# --------------------------------------------------------------------------- stdin


class TestStdin:
    def test_dash_reads_jsonl_from_standard_input(self, monkeypatch: pytest.MonkeyPatch) -> None:
        data = b"\xef\xbb\xbf" + jsonl(*AMOUNT_RECORDS).encode("utf-8")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        cases = load("-")
        assert [c.id for c in cases] == ["amt-001", "amt-002", "tone-001"]
        assert cases[1].output == "ñandú"
        assert cases[0].source == "-"

    def test_errors_on_stdin_name_the_line(self, monkeypatch: pytest.MonkeyPatch) -> None:
        data = jsonl({"id": "a"}, {"input": "no id"}).encode("utf-8")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        with pytest.raises(DatasetError) as info:
            load("-")
        assert_error(info.value, "<stdin>", 2, "id", "every case needs an id")

    def test_format_override_reads_csv_from_stdin(self, monkeypatch: pytest.MonkeyPatch) -> None:
        data = csv_text(["id", "output"], ["a", "x"]).encode("utf-8")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        assert [(c.id, c.output) for c in load("-", format="csv")] == [("a", "x")]


# --------------------------------------------------------------------------- JSON


class TestJsonList:
    def test_a_list_gives_the_same_cases_as_jsonl(self, tmp_path: Path) -> None:
        as_json = write(tmp_path / "cases.json", json.dumps(AMOUNT_RECORDS, indent=2))
        as_jsonl = write(tmp_path / "cases.jsonl", jsonl(*AMOUNT_RECORDS))
        assert comparable(load(as_json)) == comparable(load(as_jsonl))

    def test_each_case_gets_the_line_it_starts_on(self, tmp_path: Path) -> None:
        text = '[\n  {"id": "a",\n   "output": "x"},\n\n  {"id": "b"}, {"id": "c"}\n]\n'
        cases = load(write(tmp_path / "cases.json", text))
        assert [(c.id, c.line) for c in cases] == [("a", 2), ("b", 5), ("c", 5)]

    def test_an_object_with_a_cases_list(self, tmp_path: Path) -> None:
        text = '{\n "name": "suite",\n "cases": [\n  {"id": "a"},\n  {"id": "b"}\n ]\n}\n'
        cases = load(write(tmp_path / "cases.json", text))
        assert [(c.id, c.line) for c in cases] == [("a", 4), ("b", 5)]

    def test_the_cases_key_is_found_even_after_a_cases_string(self, tmp_path: Path) -> None:
        # "cases" appears first as a value and a list comes before the real key.
        text = json.dumps({"title": "cases", "tags": [1, 2], "cases": [{"id": "a"}]})
        assert [c.id for c in load(write(tmp_path / "cases.json", text))] == ["a"]

    def test_a_bad_item_names_its_line(self, tmp_path: Path) -> None:
        text = '[\n  {"id": "a"},\n  {"id": "b", "label": "MAYBE"}\n]'
        path = write(tmp_path / "cases.json", text)
        assert_error(load_error(path), path, 3, "label", "MAYBE")

    def test_an_item_that_is_not_an_object(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.json", '[\n  {"id": "a"},\n  "b"\n]')
        assert_error(load_error(path), path, 3, None, "expected a JSON object for each case")

    def test_invalid_json_names_the_line(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.json", '[\n  {"id": "a"},\n  {"id": "b",}\n]')
        assert_error(load_error(path), path, 3, None, "not valid JSON")

    @pytest.mark.parametrize(
        ("text", "got"),
        [
            ('{"id": "a"}', "got an object"),
            ('"cases"', 'got string "cases"'),
            ('{"cases": {"id": "a"}}', "got an object"),
            ("3", "got number 3"),
        ],
    )
    def test_not_a_list(self, tmp_path: Path, text: str, got: str) -> None:
        path = write(tmp_path / "cases.json", text)
        assert_error(load_error(path), path, 1, None, "expected a JSON list of cases", got)

    def test_an_empty_list_has_no_cases(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.json", "[]")
        assert_error(load_error(path), path, None, None, "no cases")


# --------------------------------------------------------------------------- CSV


class TestCsv:
    def test_same_cases_as_jsonl(self, tmp_path: Path) -> None:
        as_csv = write(tmp_path / "cases.csv", amount_csv())
        as_jsonl = write(tmp_path / "cases.jsonl", jsonl(*AMOUNT_RECORDS))
        assert comparable(load(as_csv)) == comparable(load(as_jsonl))

    def test_json_cells_and_empty_cells(self, tmp_path: Path) -> None:
        text = csv_text(
            ["id", "output", "expect", "tool_calls", "label", "note"],
            ["a", "", '{"max_chars": 5}', '["transfer"]', "pass", ""],
            ["b", "ok", "", "", "", "kept"],
        )
        a, b = load(write(tmp_path / "cases.csv", text))
        assert (a.output, a.expect, a.tool_calls, a.label, a.meta) == (
            None,
            {"max_chars": 5},
            ("transfer",),
            "PASS",
            {},
        )
        assert (b.output, b.expect, b.tool_calls, b.label, b.meta) == (
            "ok",
            {},
            (),
            None,
            {"note": "kept"},
        )

    def test_cells_are_text_except_the_json_ones(self, tmp_path: Path) -> None:
        text = csv_text(["id", "input", "output", "context"], ["7", "12", '{"a": 1}', '["x"]'])
        (case,) = load(write(tmp_path / "cases.csv", text))
        assert (case.id, case.input, case.output, case.context) == ("7", "12", '{"a": 1}', '["x"]')

    def test_numeric_labels(self, tmp_path: Path) -> None:
        text = csv_text(["id", "label"], ["a", "4"], ["b", "0.75"], ["c", "1e1"])
        assert [c.label for c in load(write(tmp_path / "cases.csv", text))] == [4, 0.75, 10.0]

    def test_multi_line_cells_keep_later_line_numbers(self, tmp_path: Path) -> None:
        text = csv_text(
            ["id", "output"],
            ["a", "line one\nline two\nline three"],  # lines 2-4
            ["b", "x"],  # line 5
            ["c", "crlf\r\ninside"],  # lines 6-7
            ["d", "y"],  # line 8
        )
        cases = load(write(tmp_path / "cases.csv", text))
        assert [(c.id, c.line) for c in cases] == [("a", 2), ("b", 5), ("c", 6), ("d", 8)]
        assert cases[0].output == "line one\nline two\nline three"
        assert cases[2].output == "crlf\r\ninside"

    def test_a_bad_label_after_a_multi_line_cell(self, tmp_path: Path) -> None:
        text = csv_text(
            ["id", "output", "label"], ["a", "uno\ndos\ntres", "PASS"], ["b", "x", "MAYBE"]
        )
        path = write(tmp_path / "cases.csv", text)
        assert_error(load_error(path), path, 5, "label", "MAYBE")

    def test_blank_lines_do_not_shift_line_numbers(self, tmp_path: Path) -> None:
        path = write(
            tmp_path / "cases.csv", "\r\nid,label\r\na,PASS\r\n\r\n\r\nb,FAIL\r\n\r\nc,MAYBE\r\n"
        )
        assert_error(load_error(path), path, 8, "label", "MAYBE")
        ok = write(tmp_path / "ok.csv", "id,output\na,x\n\n\nb,y\n")
        assert [(c.id, c.line) for c in load(ok)] == [("a", 2), ("b", 5)]

    def test_invalid_json_in_an_expect_cell(self, tmp_path: Path) -> None:
        text = csv_text(["id", "expect"], ["a", '{"max_chars": 5}'], ["b", '{"max_chars": }'])
        path = write(tmp_path / "cases.csv", text)
        assert_error(load_error(path), path, 3, "expect", "expected JSON in this cell")

    def test_invalid_json_in_a_tool_calls_cell(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", csv_text(["id", "tool_calls"], ["a", "transfer"]))
        assert_error(load_error(path), path, 2, "tool_calls", "expected JSON in this cell")

    def test_validation_errors_name_the_csv_line(self, tmp_path: Path) -> None:
        text = csv_text(["id", "expect"], ["a", ""], ["b", '{"not_contain": ["1250.5"]}'])
        path = write(tmp_path / "cases.csv", text)
        assert_error(
            load_error(path), path, 3, "expect.not_contain", "did you mean 'not_contains'?"
        )

    def test_more_cells_than_columns(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", "id,output\na,x\nb,y,z\n")
        assert_error(load_error(path), path, 3, None, "3 cells but the header has 2 columns")

    def test_fewer_cells_than_columns(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", "id,output,label\na,x,PASS\n\nb\n")
        assert_error(load_error(path), path, 4, None, "1 cell but the header has 3 columns")
        two = write(tmp_path / "two.csv", "id,output,label\na,x\n")
        assert_error(load_error(two), two, 2, None, "2 cells but the header has 3 columns")

    def test_empty_cells_are_absent_values(self, tmp_path: Path) -> None:
        (case,) = load(write(tmp_path / "cases.csv", "id,output,label\na,,\n"))
        assert (case.id, case.output, case.label) == ("a", None, None)

    @pytest.mark.parametrize(
        ("header", "bom"),
        [
            ("id;category;input;output", ""),
            ("id;category;input;output", "\ufeff"),
            ("id\tcategory\tinput\toutput", ""),
        ],
    )
    def test_a_header_split_by_another_separator(
        self, tmp_path: Path, header: str, bom: str
    ) -> None:
        row = header.replace("id", "a-1").replace("category", "tono")
        path = write(tmp_path / "export.csv", f"{bom}{header}\n{row}\n")
        assert_error(
            load_error(path),
            path,
            1,
            None,
            f"the header has 1 column {header!r}: tinyeval reads comma-separated CSV "
            "(re-export with commas)",
        )

    def test_a_one_column_file_is_still_read(self, tmp_path: Path) -> None:
        assert [c.id for c in load(write(tmp_path / "ids.csv", "id\na\nb\n"))] == ["a", "b"]

    def test_an_empty_column_name(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", "id,,output\na,b,c\n")
        assert_error(load_error(path), path, 1, None, "empty column name")

    def test_a_column_named_twice(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", "id,output,output\na,x,y\n")
        assert_error(load_error(path), path, 1, None, "'output' twice")

    def test_spaces_around_column_names_are_ignored(self, tmp_path: Path) -> None:
        (case,) = load(write(tmp_path / "cases.csv", " id , output \na,x\n"))
        assert (case.id, case.output) == ("a", "x")

    def test_an_unclosed_quote_is_an_error_not_a_swallowed_file(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", 'id,output\na,x\nb,"never closed\nc,y\n')
        assert_error(load_error(path), path, 3, None, "not valid CSV")

    def test_a_cell_longer_than_the_csv_module_default_limit(self, tmp_path: Path) -> None:
        long_context = "x" * 300_000  # the csv module refuses cells over 131072 by default
        path = write(tmp_path / "cases.csv", csv_text(["id", "context"], ["a", long_context]))
        assert load(path)[0].context == long_context

    @pytest.mark.parametrize("text", ["", "id,output\n", "id,output\n\n\n"])
    def test_no_rows_means_no_cases(self, tmp_path: Path, text: str) -> None:
        path = write(tmp_path / "cases.csv", text)
        assert_error(load_error(path), path, None, None, "no cases")


# --------------------------------------------------------------------------- YAML


class TestYaml:
    def test_a_yaml_list_gives_the_same_cases_as_jsonl(self, tmp_path: Path) -> None:
        yaml = pytest.importorskip("yaml")
        as_yaml = write(tmp_path / "cases.yaml", yaml.safe_dump(AMOUNT_RECORDS, allow_unicode=True))
        as_jsonl = write(tmp_path / "cases.jsonl", jsonl(*AMOUNT_RECORDS))
        assert comparable(load(as_yaml)) == comparable(load(as_jsonl))

    def test_lines_and_the_cases_mapping(self, tmp_path: Path) -> None:
        pytest.importorskip("yaml")
        text = "suite: pagos\ncases:\n  - id: a\n    output: x\n\n  - id: b\n    label: MAYBE\n"
        path = write(tmp_path / "cases.yml", text)
        assert_error(load_error(path), path, 6, "label", "MAYBE")
        ok = write(tmp_path / "ok.yml", text.replace("MAYBE", "pass"))
        assert [(c.id, c.line, c.label) for c in load(ok)] == [("a", 3, None), ("b", 6, "PASS")]

    def test_invalid_yaml_names_the_line(self, tmp_path: Path) -> None:
        pytest.importorskip("yaml")
        path = write(tmp_path / "cases.yaml", "- id: a\n- id: b\n  output: [unclosed\n")
        error = load_error(path)
        assert error.line is not None and error.line >= 3
        assert "not valid YAML" in str(error)

    def test_not_a_list(self, tmp_path: Path) -> None:
        pytest.importorskip("yaml")
        path = write(tmp_path / "cases.yaml", "id: a\noutput: x\n")
        assert_error(
            load_error(path), path, 1, None, "expected a YAML list of cases", "got an object"
        )

    def test_a_date_is_refused_rather_than_crashing_the_fingerprint(self, tmp_path: Path) -> None:
        pytest.importorskip("yaml")
        path = write(tmp_path / "cases.yaml", "- id: a\n- id: b\n  logged: 2024-05-01\n")
        assert_error(load_error(path), path, 2, None, "quote dates")
        quoted = write(tmp_path / "quoted.yaml", "- id: a\n- id: b\n  logged: '2024-05-01'\n")
        assert load(quoted)[1].meta == {"logged": "2024-05-01"}

    def test_an_empty_yaml_file_has_no_cases(self, tmp_path: Path) -> None:
        pytest.importorskip("yaml")
        path = write(tmp_path / "cases.yaml", "# nothing yet\n")
        assert_error(load_error(path), path, None, None, "no cases")

    def test_missing_pyyaml_is_named(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "yaml", None)  # makes `import yaml` raise ImportError
        path = write(tmp_path / "cases.yaml", "- id: a\n")
        assert_error(load_error(path), path, None, None, "PyYAML", "pip install pyyaml")


# ------------------------------------------------------------------ gzip, encodings, formats


class TestGzip:
    @pytest.mark.parametrize(
        "name", ["cases.jsonl.gz", "cases.json.gz", "cases.csv.gz", "cases.yaml.gz"]
    )
    def test_each_format_gzipped(self, tmp_path: Path, name: str) -> None:
        if "yaml" in name:
            pytest.importorskip("yaml")
            import yaml

            text = yaml.safe_dump(AMOUNT_RECORDS, allow_unicode=True)
        elif "csv" in name:
            text = amount_csv()
        elif ".json." in name:
            text = json.dumps(AMOUNT_RECORDS)
        else:
            text = jsonl(*AMOUNT_RECORDS)
        plain = write(tmp_path / "plain.jsonl", jsonl(*AMOUNT_RECORDS))
        assert comparable(load(write(tmp_path / name, text))) == comparable(load(plain))

    def test_gzipped_errors_keep_their_line(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl.gz", jsonl({"id": "a"}, {"id": "a"}))
        assert_error(load_error(path), path, 2, "id", "duplicate id 'a'")

    def test_a_gz_name_on_a_plain_file(self, tmp_path: Path) -> None:
        path = tmp_path / "cases.jsonl.gz"
        path.write_bytes(b'{"id": "a"}\n')
        assert_error(load_error(path), path, None, None, "not a readable gzip file")

    def test_a_truncated_gzip_file(self, tmp_path: Path) -> None:
        data = gzip.compress(jsonl(*({"id": f"c{i}"} for i in range(200))).encode())
        path = tmp_path / "cases.jsonl.gz"
        path.write_bytes(data[: len(data) // 2])
        assert_error(load_error(path), path, None, None, "not a readable gzip file")

    def test_a_corrupt_deflate_stream(self, tmp_path: Path) -> None:
        data = bytearray(gzip.compress(b'{"id": "a"}\n'))
        data[10] = 0b111  # first deflate block: final, reserved block type 11 (invalid)
        path = tmp_path / "cases.jsonl.gz"
        path.write_bytes(bytes(data))
        assert_error(load_error(path), path, None, None, "not a readable gzip file")


class TestEncodingAndFormat:
    def test_non_utf8_bytes_name_the_line(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", b'{"id": "a"}\n{"id": "b", "output": "caf\xe9"}\n')
        assert_error(load_error(path), path, 2, None, "not UTF-8", "0xe9")

    def test_non_utf8_in_csv(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", b"id,output\na,x\nb,ni\xf1o\n")
        assert_error(load_error(path), path, 3, None, "not UTF-8")

    def test_utf16_is_not_utf8(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", '{"id": "a"}\n'.encode("utf-16"))
        assert_error(load_error(path), path, 1, None, "not UTF-8")

    @pytest.mark.parametrize("name", ["cases.txt", "cases", "cases.gz", "cases.tsv.gz"])
    def test_unknown_extension(self, tmp_path: Path, name: str) -> None:
        path = write(tmp_path / name, jsonl({"id": "a"}))
        assert_error(
            load_error(path),
            path,
            None,
            None,
            "cannot tell the format",
            "give the format (format jsonl, json, csv, yaml or otel)",
        )

    def test_format_override(self, tmp_path: Path) -> None:
        as_txt = write(tmp_path / "cases.txt", jsonl({"id": "a"}))
        assert [c.id for c in load(as_txt, format="jsonl")] == ["a"]
        csv_named_json = write(tmp_path / "export.json", "id,output\nb,x\n")
        assert [c.output for c in load(csv_named_json, format="csv")] == ["x"]
        gz = write(tmp_path / "export.txt.gz", "id\nc\n")
        assert [c.id for c in load(gz, format="csv")] == ["c"]

    def test_unknown_format_value(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "a"}))
        assert_error(load_error(path, format="xml"), path, None, None, "unknown format 'xml'")

    def test_a_missing_file_is_an_os_error(self, tmp_path: Path) -> None:
        with pytest.raises(FileNotFoundError):
            load(tmp_path / "nope.jsonl")


# --------------------------------------------------------------------------- field mapping


class TestFieldMapping:
    LOG: ClassVar[dict[str, Any]] = {
        "request_id": "r-1",
        "request": {
            "messages": [
                {"role": "system", "content": "sé breve"},
                {"role": "user", "content": "¿Cuánto?"},
            ]
        },
        "response": {"choices": [{"message": {"content": "$1.250,50"}}]},
        "team": "pagos",
    }

    def test_dotted_paths_through_objects_and_lists(self, tmp_path: Path) -> None:
        path = write(tmp_path / "log.jsonl", jsonl(self.LOG))
        fields = {
            "id": "request_id",
            "input": "request.messages.1.content",
            "context": "request.messages.0.content",
            "output": "response.choices.0.message.content",
        }
        (case,) = load(path, fields=fields)
        assert (case.id, case.input, case.context, case.output) == (
            "r-1",
            "¿Cuánto?",
            "sé breve",
            "$1.250,50",
        )
        assert case.meta == {"team": "pagos"}  # mapped sources are not repeated in meta

    def test_a_negative_index_counts_from_the_end(self, tmp_path: Path) -> None:
        path = write(tmp_path / "log.jsonl", jsonl(self.LOG))
        (case,) = load(path, fields={"id": "request_id", "input": "request.messages.-1.content"})
        assert case.input == "¿Cuánto?"

    def test_a_mapped_id_that_is_missing(self, tmp_path: Path) -> None:
        other = {k: v for k, v in self.LOG.items() if k != "request_id"}
        path = write(tmp_path / "log.jsonl", jsonl(self.LOG, other))
        error = load_error(path, fields={"id": "request_id"})
        assert_error(error, path, 2, "id", "'request_id' is not in this record")

    @pytest.mark.parametrize(
        "dotted",
        [
            "answer",
            "request.messages.5.content",
            "request.messages.x",
            "team.name",
            "request.messages.0.content.deeper",
        ],
    )
    def test_other_mapped_keys_that_are_missing_are_absent(
        self, tmp_path: Path, dotted: str
    ) -> None:
        # absent from this record, present in another: the record simply has no output
        messages = {"x": "m", "5": {"content": "c"}, "0": {"content": {"deeper": "d"}}}
        other = {**self.LOG, "request_id": "other", "answer": "a", "team": {"name": "t"},
                 "request": {"messages": messages}}  # fmt: skip
        path = write(tmp_path / "log.jsonl", jsonl(self.LOG, other))
        case, _ = load(path, fields={"id": "request_id", "output": dotted})
        assert case.output is None

    def test_a_mapped_value_is_still_validated(self, tmp_path: Path) -> None:
        path = write(tmp_path / "log.jsonl", jsonl(self.LOG))
        error = load_error(path, fields={"id": "request_id", "label": "team"})
        assert_error(error, path, 1, "label", 'got string "pagos"')

    def test_mapping_csv_columns(self, tmp_path: Path) -> None:
        path = write(
            tmp_path / "log.csv",
            csv_text(["ticket", "question", "answer"], ["T-9", "¿Qué?", "Nada"]),
        )
        (case,) = load(path, fields={"id": "ticket", "input": "question", "output": "answer"})
        assert (case.id, case.input, case.output, case.meta) == ("T-9", "¿Qué?", "Nada", {})

    def test_a_record_that_is_not_an_object(self, tmp_path: Path) -> None:
        path = write(tmp_path / "log.jsonl", jsonl(self.LOG, [1, 2]))
        assert_error(
            load_error(path, fields={"id": "request_id"}), path, 2, None, "expected a JSON object"
        )

    def test_an_unknown_mapping_key_suggests_the_right_one(self, tmp_path: Path) -> None:
        path = write(tmp_path / "log.jsonl", jsonl(self.LOG))
        with pytest.raises(DatasetError) as info:
            load(path, fields={"ouptut": "response"})
        assert info.value.field == "fields"
        assert "unknown key 'ouptut'; did you mean 'output'?" in str(info.value)

    def test_parse_field_mapping(self) -> None:
        assert parse_field_mapping([" input = request.messages.0.content ", "id=request_id"]) == {
            "input": "request.messages.0.content",
            "id": "request_id",
        }
        assert parse_field_mapping([]) == {}
        assert parse_field_mapping(["output=a=b"]) == {"output": "a=b"}  # the first = splits

    @pytest.mark.parametrize("text", ["input", "=question", "input=", " = ", ""])
    def test_malformed_field_text(self, text: str) -> None:
        with pytest.raises(DatasetError) as info:
            parse_field_mapping([text])
        assert info.value.field == "fields"
        assert str(info.value) == f"fields: expected KEY=PATH, got {text!r}"

    def test_unknown_key_names_the_close_one(self) -> None:
        with pytest.raises(DatasetError) as info:
            parse_field_mapping(["inptu=question"])
        assert str(info.value) == "fields: unknown key 'inptu'; did you mean 'input'?"

    def test_unknown_key_without_a_close_match_lists_the_keys(self) -> None:
        with pytest.raises(DatasetError) as info:
            parse_field_mapping(["zzz=q"])
        assert "expected one of " + ", ".join(RECOGNISED_KEYS) in str(info.value)


# --------------------------------------------------------------------------- validation


# (bad record on line 3 of a file, field named, fragment of the message)
BAD_RECORDS = [
    ('{"input": "q"}', "id", "every case needs an id"),
    ('{"id": ""}', "id", 'expected a non-empty string, got string ""'),
    ('{"id": "   "}', "id", "expected a non-empty string"),
    ('{"id": ["a"]}', "id", "got a list"),
    ('{"id": true}', "id", "got boolean true"),
    ('{"id": 1.5}', "id", "got number 1.5"),
    ('{"id": null}', "id", "got null"),
    ('{"id": "x", "output": 42}', "output", "got number 42"),
    ('{"id": "x", "output": false}', "output", "got boolean false"),
    ('{"id": "x", "context": 3}', "context", "a list of strings"),
    ('{"id": "x", "context": ["a", 1]}', "context", "got a list"),
    ('{"id": "x", "category": ""}', "category", "expected a non-empty string"),
    ('{"id": "x", "category": " "}', "category", "expected a non-empty string"),
    ('{"id": "x", "category": 7}', "category", "got number 7"),
    ('{"id": "x", "origin": {"ticket": 1}}', "origin", "got an object"),
    ('{"id": "x", "origin": true}', "origin", "got boolean true"),
    ('{"id": "x", "expect": ["contains"]}', "expect", "expected an object of expectations"),
    ('{"id": "x", "expect": []}', "expect", "got a list"),
    ('{"id": "x", "expect": false}', "expect", "got boolean false"),
    (
        '{"id": "x", "expect": {"not_contain": ["1250.5"]}}',
        "expect.not_contain",
        "unknown key 'not_contain'; did you mean 'not_contains'?",
    ),
    ('{"id": "x", "expect": {"regex": "("}}', "expect.regex", "invalid regex"),
    ('{"id": "x", "expect": {"max_chars": -1}}', "expect.max_chars", "non-negative"),
    ('{"id": "x", "expect": {"equals": [1]}}', "expect.equals", "expected an object"),
    ('{"id": "x", "expect": {"contains": []}}', "expect.contains", "check nothing"),
    ('{"id": "x", "tool_calls": "transfer"}', "tool_calls", "a list of tool calls"),
    ('{"id": "x", "tool_calls": {"name": "transfer"}}', "tool_calls", "got an object"),
    ('{"id": "x", "tool_calls": {}}', "tool_calls", "got an object"),
    ('{"id": "x", "tool_calls": 0}', "tool_calls", "got number 0"),
    ('{"id": "x", "tool_calls": [{"tool": "transfer"}]}', "tool_calls", "entry 0"),
    ('{"id": "x", "label": "MAYBE"}', "label", 'got string "MAYBE"'),
    ('{"id": "x", "label": true}', "label", "got boolean true"),
    ('{"id": "x", "label": "nan"}', "label", 'got string "nan"'),
    ('{"id": "x", "label": "inf"}', "label", 'got string "inf"'),
    ('{"id": "x", "label": NaN}', "label", "got number nan"),
    ('{"id": "x", "label": -Infinity}', "label", "got number -inf"),
    ('{"id": "x", "label": ["PASS"]}', "label", "got a list"),
]


class TestValidation:
    @pytest.mark.parametrize(
        ("record", "field", "fragment"), BAD_RECORDS, ids=[f"{f}:{r}" for r, f, _ in BAD_RECORDS]
    )
    def test_each_bad_value_names_file_line_and_field(
        self, tmp_path: Path, record: str, field: str, fragment: str
    ) -> None:
        path = write(tmp_path / "cases.jsonl", f'{{"id": "fine"}}\n\n{record}\n{{"id": "later"}}\n')
        assert_error(load_error(path), path, 3, field, fragment)

    @pytest.mark.parametrize("record", ["[1, 2]", '"just text"', "42", "null"])
    def test_a_record_that_is_not_an_object(self, tmp_path: Path, record: str) -> None:
        path = write(tmp_path / "cases.jsonl", f'{{"id": "a"}}\n{record}\n')
        assert_error(load_error(path), path, 2, None, "expected a JSON object for each case")

    def test_an_invalid_json_line(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", '{"id": "a"}\n{"id": "b",, }\n{"id": "c"}\n')
        assert_error(load_error(path), path, 2, None, "not valid JSON", "column 12")

    def test_a_truncated_last_line_says_so(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", '{"id": "a"}\n{"id": "b", "output": "cut mid-wr')
        # The string's quote is column 23: '{"id": "b", "output": ' before it is 22 characters.
        assert str(load_error(path)) == (
            f"{path}:2: the last line is not complete JSON: "
            "Unterminated string starting at column 23 (is the file cut short?)"
        )

    def test_messages_ending_in_at_do_not_say_at_twice(self, tmp_path: Path) -> None:
        # The parser's own messages "Invalid control character at" and "Unterminated
        # string starting at" already end in "at".
        path = write(tmp_path / "cases.jsonl", '{"id": "a"}\n{"id": "b\tc"}\n')
        # '{"id": "b' is 9 characters, so the raw tab inside the string is column 10.
        assert_error(load_error(path), path, 2, None, "Invalid control character at column 10")
        unterminated = write(tmp_path / "open.jsonl", '{"id": "a"}\n{"id": "b\n')
        # the string opened at column 8 runs to the end of the line
        assert_error(load_error(unterminated), unterminated, 2, None, "starting at column 8")
        assert "at at" not in str(load_error(path))
        cell = write(tmp_path / "cases.csv", 'id,expect\na,"{""x"": ""y}"\n')
        assert_error(load_error(cell), cell, 2, "expect", "starting at column 7")
        listed = write(tmp_path / "cases.json", '[{"id": "a"},\n {"id": "b}]')
        assert "at at" not in str(load_error(listed))

    def test_a_broken_line_with_its_newline_is_not_called_cut_short(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", '{"id": "a"}\n{"id": "b", "output": "cut\n')
        error = load_error(path)
        assert_error(error, path, 2, None, "not valid JSON")
        assert "cut short" not in str(error)

    def test_a_duplicate_id_names_the_second_line(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "a"}, {"id": "b"}, "", {"id": "a"}))
        assert_error(load_error(path), path, 4, "id", "duplicate id 'a'")

    def test_an_int_id_and_its_string_are_the_same_id(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "7"}, {"id": 7}))
        assert_error(load_error(path), path, 2, "id", "duplicate id '7'")

    def test_ids_differing_only_in_case_or_space_are_distinct(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "a"}, {"id": "A"}, {"id": "a "}))
        assert [c.id for c in load(path)] == ["a", "A", "a "]

    @pytest.mark.parametrize("text", ["", "\n\n  \n", "\r\n"])
    def test_an_empty_file_has_no_cases(self, tmp_path: Path, text: str) -> None:
        path = write(tmp_path / "cases.jsonl", text)
        error = load_error(path)
        assert str(error) == f"{path}: no cases in the file"
        assert list(iter_cases(path)) == []  # iterating an empty file is not itself an error


class TestIdFromLine:
    def test_records_without_an_id_are_named_after_their_line(self, tmp_path: Path) -> None:
        path = write(
            tmp_path / "cases.jsonl", jsonl({"input": "a"}, "", {"id": "mine"}, {"input": "c"})
        )
        assert [c.id for c in load(path, id_from_line=True)] == ["line-1", "mine", "line-4"]

    def test_without_the_option_the_id_is_required(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"input": "a"}))
        assert_error(load_error(path), path, 1, "id", "(id_from_line)")

    def test_an_explicit_id_can_collide_with_a_line_name(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "line-2"}, {"input": "b"}))
        assert_error(load_error(path, id_from_line=True), path, 2, "id", "duplicate id 'line-2'")

    def test_an_explicit_bad_id_is_still_an_error(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": ""}))
        assert_error(load_error(path, id_from_line=True), path, 1, "id", "non-empty string")

    def test_csv_rows_are_named_after_their_line(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", csv_text(["input"], ["uno\ndos"], ["tres"]))
        assert [c.id for c in load(path, id_from_line=True)] == ["line-2", "line-4"]


# --------------------------------------------------------------------------- sample


class TestSample:
    CASES: ClassVar[list[Case]] = [Case(id=str(i)) for i in range(1000)]

    def ids(self, cases: Iterable[Case]) -> list[str]:
        return [c.id for c in cases]

    def test_the_same_seed_gives_the_same_sample(self) -> None:
        assert self.ids(sample(self.CASES, 10, seed=42)) == self.ids(
            sample(self.CASES, 10, seed=42)
        )
        assert self.ids(sample(self.CASES, 10, seed="v1")) == self.ids(
            sample(list(self.CASES), 10, seed="v1")
        )

    def test_another_seed_gives_another_sample(self) -> None:
        assert set(self.ids(sample(self.CASES, 10, seed=1))) != set(
            self.ids(sample(self.CASES, 10, seed=2))
        )

    def test_it_is_not_the_top_of_the_file(self) -> None:
        picked = [int(i) for i in self.ids(sample(self.CASES, 10, seed=0))]
        assert set(picked) != set(range(10))
        assert max(picked) >= 100  # spread over the file, not clustered at the top

    def test_every_case_at_most_once_and_all_when_n_is_the_size(self) -> None:
        everything = sample(self.CASES, len(self.CASES), seed=3)
        assert sorted(self.ids(everything), key=int) == self.ids(self.CASES)
        assert sample(self.CASES, 0, seed=3) == []

    def test_it_accepts_any_iterable(self) -> None:
        assert len(sample(iter(self.CASES), 5, seed=0)) == 5

    @pytest.mark.parametrize("n", [1001, -1, True, 2.0])
    def test_bad_sizes(self, n: Any) -> None:
        with pytest.raises(DatasetError) as info:
            sample(self.CASES, n, seed=0)
        assert info.value.field == "sample size"
        assert str(info.value).startswith("sample size: ")
        assert repr(n) in str(info.value)

    def test_one_case_is_singular(self) -> None:
        with pytest.raises(DatasetError) as info:
            sample([Case(id="a")], 2, seed=0)
        assert str(info.value) == "sample size: asked for a sample of 2 but there is only 1 case"

    def test_too_large_says_how_many_there_are(self) -> None:
        with pytest.raises(DatasetError, match="sample of 1001 but there are only 1000 cases"):
            sample(self.CASES, 1001, seed=0)


# --------------------------------------------------------------------------- holdout split


class TestSplitHoldout:
    @FAST
    @given(
        st.sets(st.text(min_size=1, max_size=12), max_size=40),
        st.sets(st.text(min_size=1, max_size=12), max_size=40),
        st.floats(min_value=0.01, max_value=0.99),
    )
    def test_adding_cases_never_moves_an_existing_one(
        self, before: set[str], added: set[str], fraction: float
    ) -> None:
        _, holdout = split_holdout([Case(id=i) for i in sorted(before)], fraction)
        _, holdout_after = split_holdout([Case(id=i) for i in sorted(before | added)], fraction)
        held = {c.id for c in holdout}
        assert held == {c.id for c in holdout_after} & before

    @FAST
    @given(st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=30), st.randoms())
    def test_order_does_not_matter_and_nothing_is_lost(self, ids: list[str], rnd: Any) -> None:
        cases = [Case(id=i) for i in ids]
        shuffled = cases[:]
        rnd.shuffle(shuffled)
        dev, hold = split_holdout(cases, 0.3)
        _, hold2 = split_holdout(shuffled, 0.3)
        assert {c.id for c in hold} == {c.id for c in hold2}
        assert sorted(c.id for c in dev + hold) == sorted(ids)
        assert [c.id for c in dev] == [i for i in ids if i in {c.id for c in dev}]  # order kept

    @pytest.mark.parametrize("fraction", [0.2, 0.5, 0.05])
    def test_the_fraction_is_respected_on_10k_ids(self, fraction: float) -> None:
        n = 10_000
        _, hold = split_holdout([Case(id=f"case-{i}") for i in range(n)], fraction)
        # Each id lands in the holdout independently with probability p, so the count is
        # Binomial(n, p): mean n·p, sd sqrt(n·p·(1-p)). For p = 0.2: 2000 ± 4·40 = [1840, 2160];
        # p = 0.5: 5000 ± 4·50; p = 0.05: 500 ± 4·21.8. Outside 4 sd happens with p < 1e-4.
        mean = n * fraction
        sd = math.sqrt(n * fraction * (1 - fraction))
        assert mean - 4 * sd <= len(hold) <= mean + 4 * sd

    @pytest.mark.parametrize("fraction", [0, 0.0, 1, 1.0, -0.1, 1.5, float("nan")])
    def test_bad_fractions(self, fraction: float) -> None:
        with pytest.raises(DatasetError) as info:
            split_holdout([Case(id="a")], fraction)
        assert info.value.field == "holdout fraction"
        assert str(info.value) == (
            f"holdout fraction: expected a number between 0 and 1 (exclusive), got {fraction!r}"
        )

    def test_the_salt_changes_the_split(self) -> None:
        cases = [Case(id=f"c{i}") for i in range(1000)]
        default = {c.id for c in split_holdout(cases, 0.2)[1]}
        again = {c.id for c in split_holdout(cases, 0.2, salt="tinyeval-holdout")[1]}
        other = {c.id for c in split_holdout(cases, 0.2, salt="2025-q3")[1]}
        assert default == again
        assert default != other

    def test_a_larger_fraction_only_adds_to_the_holdout(self) -> None:
        cases = [Case(id=f"c{i}") for i in range(500)]
        small = {c.id for c in split_holdout(cases, 0.1)[1]}
        large = {c.id for c in split_holdout(cases, 0.3)[1]}
        assert small < large


# --------------------------------------------------------------------------- fingerprint


def recipe_fingerprint(cases: Iterable[Case]) -> str:
    """The documented recipe, written out again independently of the library code."""
    digests = []
    for case in cases:
        blob = json.dumps(case.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        digests.append(int(hashlib.sha256(blob.encode("utf-8")).hexdigest(), 16))
    total = sum(digests) % 2**256
    return hashlib.sha256(f"{len(digests)}:{total:064x}".encode()).hexdigest()[:16]


FULL = Case(
    id="amt-001",
    input="¿Cuánto?",
    output="$1.250,50",
    context="saldo",
    category="amounts",
    expect={"contains": ["$1.250,50"]},
    origin="ticket-9",
    tool_calls=("lookup",),
    label="PASS",
    meta={"team": "pagos"},
)


class TestFingerprint:
    def test_it_follows_the_documented_recipe(self, tmp_path: Path) -> None:
        cases = load(write(tmp_path / "cases.jsonl", jsonl(*AMOUNT_RECORDS)))
        assert dataset_fingerprint(cases) == recipe_fingerprint(cases)
        assert dataset_fingerprint([FULL]) == recipe_fingerprint([FULL])
        # zero cases: sha256 of "0:" followed by 64 zeros
        assert (
            dataset_fingerprint([]) == hashlib.sha256(("0:" + "0" * 64).encode()).hexdigest()[:16]
        )

    def test_sixteen_hex_digits(self) -> None:
        value = dataset_fingerprint([FULL])
        assert len(value) == 16 and int(value, 16) >= 0

    @FAST
    @given(
        st.lists(st.text(min_size=1, max_size=6), unique=True, min_size=1, max_size=12),
        st.randoms(),
    )
    def test_order_does_not_matter(self, ids: list[str], rnd: Any) -> None:
        cases = [Case(id=i, output=i * 2) for i in ids]
        shuffled = cases[:]
        rnd.shuffle(shuffled)
        assert dataset_fingerprint(cases) == dataset_fingerprint(shuffled)

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("id", "amt-002"),
            ("input", "¿Cuánto? "),
            ("output", "$1.250,5"),
            ("output", None),
            ("context", "saldo."),
            ("category", "amount"),
            ("expect", {"contains": ["$1.250,5"]}),
            ("expect", {}),
            ("origin", None),
            ("tool_calls", ()),
            ("tool_calls", ("lookup", "x")),
            ("label", "FAIL"),
            ("label", None),
            ("label", 1),
            ("meta", {"team": "pago"}),
            ("meta", {}),
        ],
    )
    def test_any_field_change_changes_it(self, name: str, value: Any) -> None:
        other = Case(id="other", output="x")
        changed = dataclasses.replace(FULL, **{name: value})
        assert dataset_fingerprint([FULL, other]) != dataset_fingerprint([changed, other])

    def test_where_a_case_was_read_from_does_not_count(self) -> None:
        moved = dataclasses.replace(FULL, source="elsewhere.csv", line=99)
        assert dataset_fingerprint([FULL]) == dataset_fingerprint([moved])

    def test_the_number_of_copies_counts(self) -> None:
        assert dataset_fingerprint([FULL]) != dataset_fingerprint([FULL, FULL])

    def test_the_same_cases_in_every_format_give_the_same_fingerprint(self, tmp_path: Path) -> None:
        files = [
            write(tmp_path / "cases.jsonl", jsonl(*AMOUNT_RECORDS)),
            write(tmp_path / "cases.json", json.dumps(list(reversed(AMOUNT_RECORDS)), indent=1)),
            write(tmp_path / "cases.csv", amount_csv()),
            write(tmp_path / "cases.csv.gz", amount_csv()),
        ]
        try:
            import yaml
        except ImportError:
            pass
        else:
            files.append(
                write(tmp_path / "cases.yaml", yaml.safe_dump(AMOUNT_RECORDS, allow_unicode=True))
            )
        values = {dataset_fingerprint(load(path)) for path in files}
        assert len(values) == 1, values

    def test_it_streams_from_iter_cases(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl(*AMOUNT_RECORDS))
        assert dataset_fingerprint(iter_cases(path)) == dataset_fingerprint(load(path))


# --------------------------------------------------------------------------- properties of parsing

_TEXT = st.text(max_size=15)
_CHARS = st.characters(codec="utf-8", exclude_characters="\x00")  # CSV refuses a raw NUL
_NONBLANK = st.text(_CHARS, min_size=1, max_size=15).filter(lambda s: s.strip() != "")
_RECORDS = st.lists(
    st.fixed_dictionaries(
        {
            "input": st.text(_CHARS, min_size=1, max_size=30),
            "output": st.text(_CHARS, min_size=1, max_size=30),
            "category": _NONBLANK,
            "label": st.sampled_from([None, "PASS", "FAIL"]),
        }
    ),
    min_size=1,
    max_size=6,
)


def _with_ids(records: list[dict[str, Any]], ids: list[str]) -> list[dict[str, Any]]:
    return [
        {"id": i, **{k: v for k, v in r.items() if v is not None}}
        for i, r in zip(ids, records, strict=False)
    ]


class TestRoundTrip:
    @FAST
    @given(_RECORDS, st.lists(_NONBLANK, min_size=6, max_size=6, unique=True))
    def test_jsonl_csv_and_json_give_back_the_written_fields(
        self, records: list[dict[str, Any]], ids: list[str]
    ) -> None:
        records = _with_ids(records, ids)
        header = ["id", "input", "output", "category", "label"]
        rows = [[r.get(key, "") for key in header] for r in records]
        with tempfile.TemporaryDirectory() as folder:
            base = Path(folder)
            files = [
                write(base / "cases.jsonl", jsonl(*records)),
                write(base / "cases.csv", csv_text(header, *rows)),
                write(base / "cases.json", json.dumps(records, ensure_ascii=False, indent=2)),
            ]
            loaded = [load(path) for path in files]
        for cases in loaded:
            got = [(c.id, c.input, c.output, c.category, c.label) for c in cases]
            assert got == [
                (r["id"], r["input"], r["output"], r["category"], r.get("label")) for r in records
            ]
        assert len({dataset_fingerprint(cases) for cases in loaded}) == 1


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)
# cells that are awkward for the loader: numbers in words, JSON fragments, blanks
_CELLS = st.text(max_size=6) | st.sampled_from(
    [
        "nan",
        "inf",
        "-Infinity",
        "1e3",
        "1_0",
        "-0",
        "pass",
        "[]",
        "{}",
        "null",
        "  ",
        '["x"]',
        '{"max_chars": -1}',
        '[{"tool": 1}]',
        '{"regex": "("}',
    ]
)
_ANY_RECORD = st.dictionaries(
    st.sampled_from([*RECOGNISED_KEYS, "extra"]), _JSON_VALUES, max_size=6
)


def _loads_or_dataset_error(path: Path, **options: Any) -> list[Case] | None:
    """Anything but a list of valid cases or a DatasetError is a bug."""
    try:
        cases = load(path, **options)
    except DatasetError as error:
        assert "\n" not in str(error)
        return None
    for case in cases:
        assert isinstance(case.id, str) and case.id.strip()
        assert case.output is None or isinstance(case.output, str)
        assert isinstance(case.category, str) and case.category.strip()
        assert (
            case.label is None
            or case.label in ("PASS", "FAIL")
            or (isinstance(case.label, int | float) and math.isfinite(case.label))
        )
    dataset_fingerprint(cases)  # never a TypeError from a value JSON cannot hold
    return cases


class TestNoCrash:
    """Arbitrary input gives valid cases or one DatasetError, never another exception."""

    @FAST
    @given(st.lists(_ANY_RECORD | _JSON_VALUES, min_size=1, max_size=4))
    def test_any_jsonl_records(self, records: list[Any]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            _loads_or_dataset_error(
                write(Path(folder) / "c.jsonl", jsonl(*records)), id_from_line=True
            )

    @FAST
    @given(
        st.lists(st.lists(_CELLS, min_size=1, max_size=4), min_size=1, max_size=4),
        st.lists(st.sampled_from([*RECOGNISED_KEYS, "x", ""]), min_size=1, max_size=4),
    )
    def test_any_csv_cells(self, rows: list[list[str]], header: list[str]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            _loads_or_dataset_error(
                write(Path(folder) / "c.csv", csv_text(header, *rows)), id_from_line=True
            )

    @FAST
    @given(st.binary(max_size=60), st.sampled_from(["c.jsonl", "c.csv", "c.json", "c.jsonl.gz"]))
    def test_any_bytes(self, data: bytes, name: str) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / name
            path.write_bytes(data)
            _loads_or_dataset_error(path)

    @FAST
    @given(st.text(alphabet="-:[]{}&*!|>'\"#\n ,?0123456789.aeid_TPASFIL", max_size=60))
    def test_any_yaml_text(self, text: str) -> None:
        pytest.importorskip("yaml")
        with tempfile.TemporaryDirectory() as folder:
            _loads_or_dataset_error(write(Path(folder) / "c.yaml", text), id_from_line=True)


# --------------------------------------------------------------------------- the command line


def run_cli(
    *args: str, stdin: bytes | None = None, cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "TINYEVAL_TRACEBACK"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "tinyeval", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )


MALFORMED = [
    ("missing-id.jsonl", jsonl({"id": "a"}, {"input": "x"}), "missing-id.jsonl:2", "id"),
    (
        "typo.jsonl",
        jsonl({"id": "a"}, "", {"id": "b", "expect": {"not_contain": ["1250.5"]}}),
        "typo.jsonl:3",
        "expect.not_contain",
    ),
    (
        "label.csv",
        csv_text(["id", "output", "label"], ["a", "uno\ndos", "PASS"], ["b", "x", "nan"]),
        "label.csv:4",
        "label",
    ),
    ("dup.json", json.dumps([{"id": "a"}, {"id": "a"}], indent=1), "dup.json:5", "id"),
    ("broken.jsonl", '{"id": "a"}\n{"id": "b", "output": "cut', "broken.jsonl:2", "cut short"),
    ("latin1.jsonl", '{"id": "a"}\n{"id": "é"}\n'.encode("latin-1"), "latin1.jsonl:2", "UTF-8"),
]


class TestCommandLine:
    @pytest.mark.parametrize(
        ("name", "content", "where", "field"), MALFORMED, ids=[m[0] for m in MALFORMED]
    )
    def test_a_malformed_file_is_one_line_and_exit_2(
        self, tmp_path: Path, name: str, content: str | bytes, where: str, field: str
    ) -> None:
        write(tmp_path / name, content)
        result = run_cli("run", name, "--out", "rows.jsonl", cwd=tmp_path)
        stderr = result.stderr.decode("utf-8")
        assert result.returncode == 2, stderr
        assert len(stderr.splitlines()) == 1, stderr
        assert stderr.startswith("tinyeval: error: ")
        assert where in stderr and field in stderr
        assert "Traceback" not in stderr
        assert not (tmp_path / "rows.jsonl").exists()

    def test_a_malformed_field_option(self, tmp_path: Path) -> None:
        write(tmp_path / "cases.jsonl", jsonl({"id": "a"}))
        result = run_cli(
            "run", "cases.jsonl", "--field", "inptu=q", "--out", "rows.jsonl", cwd=tmp_path
        )
        assert result.returncode == 2
        assert result.stderr.decode() == (
            "tinyeval: error: --field: unknown key 'inptu'; did you mean 'input'?\n"
        )
        assert not (tmp_path / "rows.jsonl").exists()

    def test_stdin_runs_and_writes_one_row_per_case(self, tmp_path: Path) -> None:
        data = jsonl(
            {"id": "a", "output": "hola", "expect": {"max_chars": 10}},
            {"id": "b", "output": "chau"},
        )
        result = run_cli(
            "run", "-", "--out", "rows.jsonl", "--quiet", stdin=data.encode(), cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
        assert sorted(r["id"] for r in rows) == ["a", "b"]
        expected = dataset_fingerprint(
            [Case(id="a", output="hola", expect={"max_chars": 10}), Case(id="b", output="chau")]
        )
        assert {r["dataset_fingerprint"] for r in rows} == {expected}

    def test_malformed_stdin_is_one_line_and_exit_2(self, tmp_path: Path) -> None:
        data = jsonl({"id": "a"}, {"id": "b", "label": "MAYBE"}).encode()
        result = run_cli("run", "-", "--out", "rows.jsonl", stdin=data, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr.decode().startswith("tinyeval: error: <stdin>:2: label: ")
        assert len(result.stderr.decode().splitlines()) == 1
        assert not (tmp_path / "rows.jsonl").exists()


class TestMisspeltKeys:
    """Other keys are kept as meta, but a near-miss of a recognised key is refused."""

    @pytest.mark.parametrize(
        ("key", "meant"),
        [("expects", "expect"), ("ouput", "output"), ("Id", "id"), ("Category", "category"),
         ("contex", "context"), ("tool_call", "tool_calls")],
    )  # fmt: skip
    def test_a_near_miss_is_an_error_naming_the_key(
        self, tmp_path: Path, key: str, meant: str
    ) -> None:
        record = {"id": "a", "output": "x", "category": "c", key: "value"}
        record.pop(meant, None)
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "b", "output": "y"}, record))
        assert_error(load_error(path), path, 2, key, f"did you mean {meant!r}?")

    @pytest.mark.parametrize("key", ["expected", "outputs", "team", "request_id", "labels_v2"])
    def test_ordinary_meta_keys_are_kept(self, tmp_path: Path, key: str) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "a", "output": "x", key: 1}))
        assert load(path)[0].meta == {key: 1}

    def test_a_near_miss_is_fine_when_the_key_itself_is_there(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.jsonl", jsonl({"id": "a", "output": "x", "ouput": "y"}))
        assert load(path)[0].meta == {"ouput": "y"}

    def test_a_csv_header_in_title_case(self, tmp_path: Path) -> None:
        path = write(tmp_path / "cases.csv", csv_text(["Id", "Output"], ["a", "x"]))
        assert_error(load_error(path), path, 2, "Id", "did you mean 'id'?")


class TestFieldPathFoundNowhere:
    def test_a_mapped_path_in_no_record_is_an_error(self, tmp_path: Path) -> None:
        records = [{"rid": f"r{i}", "response": {"text": "x"}} for i in range(3)]
        path = write(tmp_path / "log.jsonl", jsonl(*records))
        error = load_error(path, fields={"id": "rid", "output": "response.txt"})
        assert error.field == "fields"
        assert "output=response.txt: the path is in none of the 3 records" in str(error)

    def test_a_path_missing_from_some_records_is_fine(self, tmp_path: Path) -> None:
        records = [{"rid": "r0", "response": {"text": "x"}}, {"rid": "r1", "response": {}}]
        path = write(tmp_path / "log.jsonl", jsonl(*records))
        cases = load(path, fields={"id": "rid", "output": "response.text"})
        assert [c.output for c in cases] == ["x", None]


def test_an_unfinished_line_in_the_middle_names_the_right_column(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cases.jsonl", '{"id": "a", "output": "x"}\n{"id": "b", "output": "x"\n'
    )
    # the line is 25 characters; the parser wants a ',' or '}' just past it, at column 26
    # (with the line ending left in, it would point at column 1 of a line that isn't there)
    assert_error(load_error(path), path, 2, None, "not valid JSON", "column 26")


# ---------------------------------------------------------------- conversations, wildcards, CSV

CHAT_LOG = {
    "trace": {"span_id": "sp-1"},
    "request": {
        "messages": [
            {"role": "system", "content": "You are Acme's support bot. Answer from the docs."},
            {"role": "user", "content": "Do you ship to Canada?"},
        ]
    },
    "response": {"choices": [{"message": {"content": "Yes, in 5-8 business days."}}]},
    "retrieval": {
        "docs": [
            {"doc_id": "d1", "text": "We ship to the US and Canada."},
            {"doc_id": "d2", "text": "Canada: 5-8 business days."},
        ]
    },
}
AGENT_MESSAGES = [
    {"role": "system", "content": "Look orders up before refunding."},
    {"role": "user", "content": "Refund order A17."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "lookup_order", "arguments": '{"order_id": "A17"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "processing"}'},
    {"role": "assistant", "content": "Refunded."},
]  # fmt: skip


class TestConversations:
    def test_an_input_mapped_to_messages_gives_the_user_turn_as_the_question(
        self, tmp_path: Path
    ) -> None:
        """The fresh-user file: input=request.messages now means the same question as .1.content."""
        path = write(tmp_path / "logs.jsonl", jsonl(CHAT_LOG))
        base = {"id": "trace.span_id", "output": "response.choices.0.message.content"}
        whole = load(path, fields={**base, "input": "request.messages"})[0]
        turn = load(path, fields={**base, "input": "request.messages.1.content"})[0]
        assert whole.conversation is not None and turn.conversation is None
        assert whole.conversation.question == turn.input == "Do you ship to Canada?"
        assert whole.conversation.system == "You are Acme's support bot. Answer from the docs."
        assert whole.input == CHAT_LOG["request"]["messages"]  # the row keeps the logged list

    def test_messages_with_a_final_assistant_turn_give_the_output(self, tmp_path: Path) -> None:
        path = write(tmp_path / "c.jsonl", jsonl({"id": "a", "messages": AGENT_MESSAGES}))
        (case,) = load(path)
        assert case.output == "Refunded."
        assert case.tool_calls == ()
        assert case.conversation is not None and case.conversation.final_turn is None
        assert [c.name for c in case.conversation.tool_calls] == ["lookup_order"]
        assert case.input == AGENT_MESSAGES[:-1]
        assert case.to_dict()["conversation"]["system"] == "Look orders up before refunding."
        again = write(tmp_path / "again.jsonl", jsonl(case.to_record()))
        assert load(again)[0].conversation == case.conversation

    def test_a_final_turn_with_only_tool_calls_is_an_output(self, tmp_path: Path) -> None:
        path = write(tmp_path / "c.jsonl", jsonl({"id": "a", "messages": AGENT_MESSAGES[:3]}))
        (case,) = load(path)
        assert case.output == ""
        assert case.tool_calls == (
            {"name": "lookup_order", "arguments": {"order_id": "A17"}, "id": "c1"},
        )
        assert case.conversation is not None and case.conversation.tool_calls == ()

    def test_content_null_with_mapped_tool_calls_loads_as_an_empty_output(
        self, tmp_path: Path
    ) -> None:
        record = {
            "id": "a",
            "resp": {"content": None, "tool_calls": AGENT_MESSAGES[2]["tool_calls"]},
        }
        path = write(tmp_path / "c.jsonl", jsonl(record))
        (case,) = load(path, fields={"output": "resp.content", "tool_calls": "resp.tool_calls"})
        assert case.output == ""
        assert len(case.tool_calls) == 1

    def test_anthropic_messages_with_a_top_level_system(self, tmp_path: Path) -> None:
        record = {
            "id": "a",
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Hours?"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "9 to 5."}]},
            ],
        }
        (case,) = load(write(tmp_path / "c.jsonl", jsonl(record)))
        assert case.output == "9 to 5."
        assert case.conversation is not None and case.conversation.system == "Be brief."

    def test_messages_errors_name_file_line_and_place(self, tmp_path: Path) -> None:
        bad = [{"role": "user", "content": "a"}, {"role": "assistant", "content": 7}]
        path = write(
            tmp_path / "c.jsonl", jsonl({"id": "x", "output": "o"}, {"id": "y", "messages": bad})
        )
        error = load_error(path)
        assert (error.path, error.line, error.field) == (str(path), 2, "messages.1.content")
        assert str(error).startswith(f"{path}:2: messages.1.content: expected a string")
        mapped = write(
            tmp_path / "m.jsonl", jsonl({"id": "x", "req": [{"role": "usr", "content": "a"}]})
        )
        error = load_error(mapped, fields={"input": "req"})
        assert (error.line, error.field) == (1, "input.0.role")
        assert "did you mean 'user'" in str(error)
        for value in ("hi", {"role": "user"}):
            error = load_error(write(tmp_path / "t.jsonl", jsonl({"id": "z", "messages": value})))
            assert error.field == "messages"

    def test_a_final_assistant_turn_and_an_output_are_refused(self, tmp_path: Path) -> None:
        record = {"id": "a", "messages": AGENT_MESSAGES, "output": "Refunded."}
        error = load_error(write(tmp_path / "c.jsonl", jsonl(record)))
        assert (error.line, error.field) == (1, "messages")
        assert "give the response once" in str(error)

    def test_final_tool_calls_and_case_tool_calls_are_refused(self, tmp_path: Path) -> None:
        record = {"id": "a", "messages": AGENT_MESSAGES[:3], "tool_calls": ["lookup_order"]}
        error = load_error(write(tmp_path / "c.jsonl", jsonl(record)))
        assert (error.line, error.field) == (1, "tool_calls")

    def test_cases_without_messages_keep_their_fingerprint_shape(self) -> None:
        assert "conversation" not in Case(id="a", output="x").to_dict()


class TestWildcardPaths:
    def test_a_star_maps_over_a_list(self, tmp_path: Path) -> None:
        path = write(tmp_path / "logs.jsonl", jsonl(CHAT_LOG))
        fields = {
            "id": "trace.span_id",
            "output": "response.choices.0.message.content",
            "context": "retrieval.docs.*.text",
        }
        (case,) = load(path, fields=fields)
        assert case.context == "We ship to the US and Canada.\n\nCanada: 5-8 business days."
        error = load_error(path, fields={**fields, "origin": "retrieval.docs.*.doc_id"})
        assert (error.field, error.line) == ("origin", 1)  # a list where a string is needed

    def test_an_element_without_the_rest_of_the_path_is_an_error_naming_it(
        self, tmp_path: Path
    ) -> None:
        record = {"id": "a", "output": "o", "docs": [{"text": "x"}, {"body": "y"}]}
        error = load_error(
            write(tmp_path / "c.jsonl", jsonl(record)), fields={"context": "docs.*.text"}
        )
        assert (error.line, error.field) == (1, "fields")
        assert "context=docs.*.text: element 1 of 'docs': no key 'text'" in str(error)

    def test_a_star_over_something_that_is_not_a_list(self, tmp_path: Path) -> None:
        record = {"id": "a", "output": "o", "docs": {"text": "x"}}
        error = load_error(
            write(tmp_path / "c.jsonl", jsonl(record)), fields={"context": "docs.*.text"}
        )
        assert "the path is in none of the 1 records" in str(error)
        error = load_error(
            write(tmp_path / "d.jsonl", jsonl(record)), fields={"context": "docs.te*"}
        )
        assert "* as a whole part" in str(error)

    def test_tool_calls_mapped_through_a_star(self, tmp_path: Path) -> None:
        record = {
            "id": "a",
            "output": "o",
            "steps": [{"call": {"name": "search"}}, {"call": {"name": "refund"}}],
        }
        (case,) = load(
            write(tmp_path / "c.jsonl", jsonl(record)), fields={"tool_calls": "steps.*.call"}
        )
        assert case.tool_calls == ({"name": "search"}, {"name": "refund"})


class TestMappedCsvJsonCells:
    def test_a_mapped_expect_column_is_parsed(self, tmp_path: Path) -> None:
        text = csv_text(
            ["ticket", "answer", "checks", "tools"],
            ["t1", "Hi", '{"tools_required": ["lookup_order"]}', '["lookup_order"]'],
        )
        fields = {"id": "ticket", "output": "answer", "expect": "checks", "tool_calls": "tools"}
        (case,) = load(write(tmp_path / "t.csv", text), fields=fields)
        assert case.expect == {"tools_required": ["lookup_order"]}
        assert case.tool_calls == ("lookup_order",)

    def test_a_bad_json_cell_names_its_column(self, tmp_path: Path) -> None:
        text = csv_text(["ticket", "answer", "checks"], ["t1", "Hi", "{oops"])
        error = load_error(
            write(tmp_path / "t.csv", text),
            fields={"id": "ticket", "output": "answer", "expect": "checks"},
        )
        assert (error.line, error.field) == (2, "checks")

    def test_a_messages_column(self, tmp_path: Path) -> None:
        text = csv_text(["id", "messages"], ["a", json.dumps(AGENT_MESSAGES)])
        (case,) = load(write(tmp_path / "t.csv", text))
        assert case.output == "Refunded."


@FAST
@given(st.lists(st.text(max_size=5), max_size=4))
def test_a_star_path_gives_every_element_in_order(texts: list[str]) -> None:
    from tinyeval.dataset import _get_mapped

    record = {"docs": [{"text": text} for text in texts]}
    assert _get_mapped(record, "docs.*.text") == texts
    assert _get_mapped({"rows": [[t] for t in texts]}, "rows.*.0") == texts


# --- the one bounded reader -------------------------------------------------------------


def test_iter_json_lines_bounds_lines_and_raises_the_callers_error(tmp_path: Path) -> None:
    from tinyeval._formats import iter_json_lines, read_text
    from tinyeval.errors import InputError

    class LabelsError(InputError):
        pass

    path = tmp_path / "labels.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write('\ufeff{"id": "a"}\n{"id": "' + "x" * 50 + '"}\n')
    assert list(iter_json_lines(path, max_line_bytes=100)) == [
        (1, {"id": "a"}),
        (2, {"id": "x" * 50}),
    ]
    with pytest.raises(LabelsError) as info:
        list(iter_json_lines(path, max_line_bytes=20, error=LabelsError))
    assert (info.value.path, info.value.line) == (str(path), 2)
    assert "the line is longer than 20 bytes" in str(info.value)
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"id": "a", "id": "b"}\n')
    with pytest.raises(LabelsError, match="the key 'id' is given twice"):
        list(iter_json_lines(twice, error=LabelsError))
    assert read_text(path).startswith('{"id": "a"}')
    with pytest.raises(DatasetError, match="the rubric is longer than 10 bytes"):
        read_text(path, what="the rubric", max_bytes=10)


def test_tool_calls_in_a_copy_without_agents_name_the_field_and_the_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tinyeval

    monkeypatch.setitem(tinyeval._EXTRAS["reader"], "tool_calls", "gone.tools:tool_names")
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "output": "hi", "tool_calls": ["lookup"]}\n')
    with pytest.raises(DatasetError) as info:
        load(str(cases))
    assert str(info.value).endswith(
        "cases.jsonl:1: tool_calls: a case with tool_calls needs tinyeval/gone/, which this copy"
        " lacks"
    )


def test_ids_past_the_spill_stay_in_memory_in_a_copy_without_scale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tinyeval
    from tinyeval.dataset import _IdIndex

    monkeypatch.setitem(tinyeval._EXTRAS["reader"], "case_ids", "gone.ids:CaseIds")
    with _IdIndex(spill_after=1) as seen:
        assert [seen.add(i, n) for n, i in enumerate(["a", "b", "c", "a"], 1)] == [
            None,
            None,
            None,
            ("a", 4),
        ]
