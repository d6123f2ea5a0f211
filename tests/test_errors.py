"""The error family's messages, and the phrasing helpers (behaviour their doctests showed)."""

from __future__ import annotations

from tinyeval.errors import IncompleteError, InputError, TinyevalError, describe_json, did_you_mean
from tinyeval.stats import StatisticsError, wilson_interval


def test_every_error_shares_the_root() -> None:
    try:
        wilson_interval(31, 30)
    except TinyevalError as error:
        assert isinstance(error, StatisticsError)
    assert issubclass(IncompleteError, TinyevalError) and issubclass(InputError, ValueError)


def test_input_error_names_only_what_it_knows() -> None:
    error = InputError("expected KEY=PATH, got 'input'", field="fields")
    assert (str(error), error.path, error.line) == (
        "fields: expected KEY=PATH, got 'input'",
        None,
        None,
    )
    assert str(InputError("no cases in the file", path="-")) == "<stdin>: no cases in the file"
    assert str(InputError("bad", line=4)) == "line 4: bad"


def test_describe_json_and_did_you_mean() -> None:
    assert (describe_json([1, 2]), describe_json({"a": 1})) == ("a list", "an object")
    assert did_you_mean("zzz", ["contains"]) is None


def test_an_input_error_quotes_a_few_hundred_characters_of_its_input_on_one_line() -> None:
    criterion = "Is it polite?\n" * 150_000  # 2 MB
    error = InputError(f"unknown criterion {criterion!r}", path="k" * 2**20, field="x\n" * 1000)
    message = str(error)
    assert "\n" not in message and len(message) < 1200
    assert message.startswith("…kkk") and message.endswith(" (2,250,020 characters)")
