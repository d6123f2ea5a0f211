"""Cost estimates and bills: the worked example, prices, token formatting, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyeval.cli import main
from tinyeval.errors import InputError
from tinyeval.scale.cost import (
    CostError,
    Price,
    estimate,
    format_tokens,
    format_usd,
    parse_price,
    run_cost,
    tally_usage,
)


def test_the_worked_example() -> None:
    # 300 cases judged in both orders = 600 calls.
    # in:  600 x 1,500 = 900,000 tokens x $1 / 1M = $0.90
    # out: 600 x   200 = 120,000 tokens x $5 / 1M = $0.60   -> $1.50 a run
    price = parse_price("in=1.0,out=5.0")
    one = estimate(300, 1500, 200, orders=2, price=price)
    assert (one.calls, one.tokens_in, one.tokens_out) == (600, 900_000, 120_000)
    assert one.usd == pytest.approx(1.50)
    # three votes triple every call: 1,800 calls, 2.7M in, 360k out, $4.50
    three = estimate(300, 1500, 200, votes=3, orders=2, price=price)
    assert (three.calls, three.tokens_in, three.tokens_out) == (1800, 2_700_000, 360_000)
    assert three.usd == pytest.approx(4.50)
    assert str(three) == (
        "300 cases × 3 votes × 2 orders = 1,800 judge calls: 2.7M tokens in, 360k out; "
        "about $4.50 a run at $1.00/$5.00 per million tokens."
    )


def test_estimate_without_a_price() -> None:
    e = estimate(1, 100, 10)
    assert e.usd is None and e.price is None
    assert str(e) == (
        "1 case × 1 vote × 1 order = 1 judge call: 100 tokens in, 10 out; "
        "no price given, so no dollar figure."
    )
    assert e.to_dict()["usd"] is None and e.to_dict()["price"] is None


@pytest.mark.parametrize(
    ("cases", "tokens_in", "tokens_out", "votes", "orders"),
    [
        (-1, 1, 1, 1, 1),
        (1, -1, 1, 1, 1),
        (1, 1, 1, 0, 1),
        (1, 1, 1, 1, 0),
        (1.5, 1, 1, 1, 1),
        (True, 1, 1, 1, 1),
    ],
)
def test_estimate_rejects_bad_counts(
    cases: int, tokens_in: int, tokens_out: int, votes: int, orders: int
) -> None:
    with pytest.raises(CostError):
        estimate(cases, tokens_in, tokens_out, votes=votes, orders=orders)


@given(
    cases=st.integers(0, 10_000),
    tokens_in=st.integers(0, 100_000),
    tokens_out=st.integers(0, 10_000),
    votes=st.integers(1, 9),
    orders=st.integers(1, 2),
    price_in=st.floats(0, 100, allow_nan=False),
    price_out=st.floats(0, 100, allow_nan=False),
)
def test_estimate_is_calls_times_tokens_times_price(
    cases: int,
    tokens_in: int,
    tokens_out: int,
    votes: int,
    orders: int,
    price_in: float,
    price_out: float,
) -> None:
    e = estimate(
        cases, tokens_in, tokens_out, votes=votes, orders=orders, price=Price(price_in, price_out)
    )
    calls = cases * votes * orders
    assert e.calls == calls
    expected = calls * (tokens_in * price_in + tokens_out * price_out) / 1e6
    assert e.usd == pytest.approx(expected, rel=1e-12, abs=1e-12)
    # votes multiply the bill exactly
    single = estimate(
        cases, tokens_in, tokens_out, votes=1, orders=orders, price=Price(price_in, price_out)
    )
    assert e.usd == pytest.approx(votes * (single.usd or 0.0), rel=1e-12, abs=1e-12)


def test_parse_price() -> None:
    assert parse_price("in=1.0,out=5.0") == Price(1.0, 5.0)
    assert parse_price(" OUT = $0.6 , in=0.15 ") == Price(0.15, 0.6)
    assert parse_price("in=0,out=0") == Price(0.0, 0.0)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1,5",
        "in=1",
        "out=5",
        "in=1,out=5,in=2",
        "in=one,out=5",
        "in=-1,out=5",
        "in=nan,out=5",
        "in=inf,out=5",
        "input=1,output=5",
    ],
)
def test_parse_price_rejects(text: str) -> None:
    with pytest.raises(CostError, match="price"):
        parse_price(text)


@given(st.floats(0, 1e4, allow_nan=False), st.floats(0, 1e4, allow_nan=False))
def test_parse_price_round_trip(price_in: float, price_out: float) -> None:
    assert parse_price(f"in={price_in!r},out={price_out!r}") == Price(price_in, price_out)


def test_run_cost_and_tally() -> None:
    usages = [
        {"input_tokens": 1000, "output_tokens": 100},
        None,
        {"input_tokens": 2000, "output_tokens": 300},
    ]
    # in 3,000 x $2/1M = $0.006; out 400 x $10/1M = $0.004; total $0.01
    assert run_cost(usages, Price(2.0, 10.0)) == pytest.approx(0.01)
    assert tally_usage(usages) == (3, 3000, 400, 1)
    with pytest.raises(InputError, match="input_tokens must be an integer"):
        tally_usage([{"input_tokens": "12", "output_tokens": 1}])


def test_format_tokens_examples() -> None:
    assert [
        format_tokens(n) for n in (0, 999, 1000, 1049, 12_345, 360_000, 2_700_000, 1_234_567_890)
    ] == ["0", "999", "1k", "1.05k", "12.3k", "360k", "2.7M", "1.23B"]


@given(st.integers(0, 10**14))
def test_format_tokens_is_within_half_a_percent(n: int) -> None:
    text = format_tokens(n)
    scale = {"k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(text[-1], 1)
    number = float(text[:-1] if scale != 1 else text)
    # three significant digits: the rounding error is at most half a unit in the third digit
    assert abs(number * scale - n) <= 0.005 * n + 1e-9
    assert number < 1000 or text.endswith("T")


def test_format_usd() -> None:
    assert [format_usd(x) for x in (0, 0.6, 1.5, 4.5, 12345.678, 0.075, 0.0012)] == [
        "$0.00",
        "$0.60",
        "$1.50",
        "$4.50",
        "$12,345.68",
        "$0.075",
        "$0.0012",
    ]


# --------------------------------------------------------------------------- the CLI

ARGS = ["cost", "--cases", "300", "--tokens-in", "1500", "--tokens-out", "200", "--orders", "2"]


def test_cli_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--votes", "3", "--price", "in=1.0,out=5.0"]) == 0
    assert capsys.readouterr().out == (
        "300 cases × 3 votes × 2 orders = 1,800 judge calls: 2.7M tokens in, 360k out; "
        "about $4.50 a run at $1.00/$5.00 per million tokens.\n"
    )


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--price", "in=1,out=5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "cases": 300,
        "votes": 1,
        "orders": 2,
        "calls": 600,
        "tokens_in": 900_000,
        "tokens_out": 120_000,
        "price": {"in": 1.0, "out": 5.0},
        "usd": 1.5,
    }


def test_cli_without_price_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ARGS) == 0
    out = capsys.readouterr().out
    assert "no price given" in out and "$" not in out.split("--price")[0]


def test_cli_bad_input_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "--cases", "3"]) == 2
    assert "cost needs --tokens-in, --tokens-out" in capsys.readouterr().err
    assert main([*ARGS, "--price", "in=1"]) == 2
    assert main([*ARGS, "--votes", "0"]) == 2


def test_cli_results_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {
            "id": "a",
            "status": "pass",
            "checks": {"contains:x": True},
            "usage": {"input_tokens": 1500, "output_tokens": 200},
        },
        {"id": "b", "status": "fail", "usage": {"input_tokens": 1500, "output_tokens": 200}},
        {"id": "c", "status": "error", "usage": None},
    ]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["cost", "--results", str(path), "--price", "in=1,out=5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # 3,000 in x $1/1M + 400 out x $5/1M = $0.003 + $0.002 = $0.005
    assert data["rows"] == 3 and data["rows_without_usage"] == 1
    assert (data["tokens_in"], data["tokens_out"]) == (3000, 400)
    assert data["usd"] == pytest.approx(0.005)
    assert main(["cost", "--results", str(path), "--price", "in=1,out=5"]) == 0
    assert capsys.readouterr().out.endswith(
        "3 rows in " + str(path) + ", 2 with token usage: 3k tokens in, 400 out; about $0.0050 at "
        "$1.00/$5.00 per million tokens.\n"
    )


def test_tokens_replayed_from_the_cache_are_not_counted_as_spent() -> None:

    paid = {"input_tokens": 1_000_000, "output_tokens": 0}
    replayed = {"cached_input_tokens": 1_000_000, "cached_output_tokens": 200_000}
    price = parse_price("in=1,out=5")
    assert run_cost([paid, replayed], price) == 1.0
    assert tally_usage([paid, replayed]).input_tokens == 1_000_000


def test_cost_of_results_without_any_usage_is_unknown_not_zero(tmp_path: Path, capsys) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps(
            {
                "id": "a",
                "category": "c",
                "status": "pass",
                "checks": {"contains:x": True},
                "usage": None,
            }
        )
        + "\n"
    )
    assert main(["cost", "--results", str(rows), "--price", "in=1,out=5"]) == 0
    out = capsys.readouterr().out
    assert "the cost is unknown" in out and "$" not in out
    assert main(["cost", "--results", str(rows), "--price", "in=1,out=5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["usd"] is None


# ------------------------------------------------------------- from a cases or suite file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_cost_of_a_cases_file_is_the_dry_run_of_that_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = str(EXAMPLES / "cases.jsonl")
    judged = ["--criterion", "unsupported-claims", "--votes", "3"]
    assert main(["cost", cases, *judged, "--price", "in=1,out=5", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    out = tmp_path / "never-written.jsonl"
    assert main(["run", cases, *judged, "--dry-run", "--json", "--price", "in=1,out=5",
                 "--out", str(out)]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == plan and not out.exists()
    # three votes per judged case, and only the offline judge: no cost
    assert plan["calls"]["judge"] > 0 and plan["calls"]["judge"] % 3 == 0
    assert plan["offline"] == plan["calls"]["judge"] and plan["cost_usd"] == 0


def test_cost_of_a_suite_counts_its_judges(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "--config", str(EXAMPLES / "tinyeval.toml")]) == 0
    text = capsys.readouterr().out
    cases = len((EXAMPLES / "cases.jsonl").read_text(encoding="utf-8").splitlines())
    assert text.startswith(f"dry run: {cases} cases, no model called") and "judge:" in text


def test_cost_of_a_cases_file_refuses_what_run_refuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = str(EXAMPLES / "cases.jsonl")
    assert main(["cost", cases, "--criterion", "x", "--votes", "2"]) == 2
    assert "--votes: expected an odd number" in capsys.readouterr().err
