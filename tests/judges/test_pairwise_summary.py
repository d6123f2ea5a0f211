"""The summary of a pairwise run (tinyeval.judges.pairwise.PairwiseSummary), counted by hand."""

from __future__ import annotations

import json

import pytest

from tinyeval.judge import JudgeError
from tinyeval.judges.pairwise import PairwiseJudge, PairwiseSummary, PairwiseVerdict, run_pairs
from tinyeval.stats import format_rate

JUDGE = PairwiseJudge("unsupported-claims")

# winner:            A               B               TIE              none (orders disagree)
# first-shown picks: 1 of 2          1 of 2          0 of 0           2 of 2
VERDICTS = [
    PairwiseVerdict("A", "A", ["A", "B"]),
    PairwiseVerdict("B", "B", ["B", "A"]),
    PairwiseVerdict("TIE", "TIE", ["TIE", "TIE"]),
    PairwiseVerdict("A", "B", ["A", "A"]),
    # the first order's call failed; the second picked b, shown first: 1 of 1
    PairwiseVerdict(None, "B", ["", "A"], error="ModelCallError: down"),
]


def test_the_counts_by_hand() -> None:
    summary = PairwiseSummary.of(VERDICTS, JUDGE, judge_model="builtin", a="a.jsonl", b="b.jsonl")
    assert (summary.n, summary.a_wins, summary.b_wins, summary.ties) == (5, 1, 1, 1)
    assert summary.no_winner == 2  # the disagreement and the failed call
    assert summary.call_errors == ("ModelCallError: down",)
    position = summary.position
    assert (position.both_parsed, position.consistent) == (4, 3)
    assert (position.replies, position.parse_failures) == (10, 1)
    assert (position.ties, position.picks, position.first_position_picks) == (2, 7, 5)
    assert summary.criterion == "unsupported-claims"
    assert summary.rubric_fingerprint == JUDGE.rubric_fingerprint


def test_the_json_object() -> None:
    figures = PairwiseSummary.of(VERDICTS, JUDGE, judge_model="builtin").to_dict()
    assert json.loads(json.dumps(figures)) == figures
    assert figures == {
        "criterion": "unsupported-claims",
        "judge_model": "builtin",
        "n": 5,
        "a_wins": 1,
        "b_wins": 1,
        "ties": 1,
        "no_winner": 2,
        "call_errors": 1,
        "not_compared": 0,
        "position": figures["position"],
        "rubric_fingerprint": JUDGE.rubric_fingerprint,
    }
    assert figures["position"]["consistency_rate"] == 3 / 4
    assert figures["position"]["first_position_rate"] == 5 / 7


def test_the_text_says_every_rate_with_its_interval() -> None:
    summary = PairwiseSummary.of(VERDICTS, JUDGE, judge_model="builtin", a="a.jsonl", b="b.jsonl")
    assert summary.to_text().splitlines() == [
        "5 cases compared on 'unsupported-claims' (judge builtin), each asked in both orders:",
        f"  A better (a.jsonl): {format_rate(1, 5)}",
        f"  B better (b.jsonl): {format_rate(1, 5)}",
        f"  tie:                {format_rate(1, 5)}",
        "  no winner (the orders disagreed, a reply did not parse, or a call failed): "
        f"{format_rate(2, 5)}",
        f"position consistency: {format_rate(3, 4)}; first-position picks: {format_rate(5, 7)} "
        "(an unbiased judge sits near 50%)",
        "replies that did not parse or whose call failed: 1 of 10",
        "comparisons with a failed model call: 1 (first: ModelCallError: down)",
    ]
    assert str(summary) == summary.to_text()
    # Wilson for 1/5 by hand: (0.2 + 0.38415 ± 1.96·sqrt(0.032 + 0.038415)) / 1.76830
    assert format_rate(1, 5) == "1/5 = 20.0% [3.6%, 62.4%]"


def test_undefined_position_rates_are_said_in_words() -> None:
    unparsed = PairwiseVerdict(None, None, ["?", "?"])
    text = PairwiseSummary.of([unparsed], JUDGE, judge_model="m").to_text()
    assert "position consistency: n/a (no comparison parsed in both orders)" in text
    assert "first-position picks: n/a (no reply picked A or B)" in text
    assert "replies that did not parse or whose call failed: 2 of 2" in text
    assert "failed model call" not in text  # a reply that does not parse is not a failed call


def test_a_run_of_pairs_gives_its_not_compared_cases() -> None:
    a = [{"id": i, "category": "c", "output": f"Paris ({i})."} for i in ("q1", "q2", "q3")]
    b = [{"id": i, "category": "c", "output": f"France ({i})."} for i in ("q1", "q2", "q4")]
    done = run_pairs(a, b, JUDGE, lambda prompt: "TIE")
    summary = PairwiseSummary.of(done, JUDGE, judge_model="py:m:tie")
    # q1 and q2 are on both sides; q3 and q4 on one only
    assert (summary.n, summary.ties, summary.not_compared) == (2, 2, 2)
    assert summary.to_text().splitlines()[-1] == (
        "not compared: 2 cases missing from one file or without an output"
    )


def test_nothing_compared_is_refused() -> None:
    with pytest.raises(JudgeError, match="at least one compared case"):
        PairwiseSummary.of([], JUDGE, judge_model="builtin")
