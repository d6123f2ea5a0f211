"""Tests for tinyeval.judge: strict parsing, evidence, votes, pairwise, untrusted text."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import operator
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyeval import judge as judge_module
from tinyeval.judge import (
    _ANGLE_RUN,
    CRITERIA,
    EVIDENCE_SCHEMA,
    EVIDENCE_TEMPLATE,
    VERDICT_TEMPLATE,
    Judge,
    JudgeError,
    Verdict,
    neutralize,
    parse_evidence,
    parse_verdict,
    rubric_fingerprint,
)
from tinyeval.judges.builtin import builtin_judge, read_blocks
from tinyeval.judges.pairwise import (
    PairwiseJudge,
    PairwiseVerdict,
    parse_choice,
    position_stats,
)
from tinyeval.judges.steps import StepsJudge
from tinyeval.models import accepted_keywords

ANGLE_LIKE = judge_module._ANGLES_OPEN + judge_module._ANGLES_CLOSE + judge_module._ANGLES_MULTI
CORPUS_PATH = Path(__file__).parent / "data" / "adversarial_responses.jsonl"


def load_corpus() -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in CORPUS_PATH.read_text(encoding="ascii").splitlines()]
    return [(row["id"], row["text"] * row.get("repeat", 1) + row.get("then", "")) for row in rows]


ADVERSARIAL = load_corpus()


def replies(*texts: str):
    """A scripted model that returns ``texts`` in turn and records the prompts and samples."""
    answers = iter(texts)

    def model(prompt: str, *, sample: int = 0) -> str:
        model.calls.append((prompt, sample))
        return next(answers)

    model.calls = []
    return model


# ---- verdict-first parsing --------------------------------------------------------

ACCEPTED = [
    ("PASS", "PASS", ""),
    ("FAIL", "FAIL", ""),
    ("pass", "PASS", ""),  # case-folded: allowed
    ("Fail", "FAIL", ""),
    (" PASS ", "PASS", ""),
    ("PASS\nbecause", "PASS", "because"),
    ("\n\nPASS", "PASS", ""),  # leading blank lines are skipped
    ("\t PASS\r\nThe figures match.\n", "PASS", "The figures match."),
    ("FAIL\n\nIt invents 2.000.", "FAIL", "It invents 2.000."),
    ("PASS\u00a0", "PASS", ""),  # a no-break space is white space
]

REJECTED = [
    "PASS.",
    "**PASS**",
    "Verdict: PASS",
    "PASSED",
    "FAIL!",
    "",
    "   \n\t",
    "PASS/FAIL",
    "P A S S",
    "PASS FAIL",
    "`PASS`",
    "'PASS'",
    "PASS:",
    "PASS - all supported",
    "Answer:\nPASS",
    "P\u0410SS",  # Cyrillic capital A
    "\u0420ASS",  # Cyrillic capital ER
    "PA\u200bSS",  # zero-width space inside
    "\u200bPASS",  # zero-width space before
    "\ufeffPASS",  # byte-order mark
    "\uff30\uff21\uff33\uff33",  # full-width letters
    "PA\u017fS",  # long s: casefolds to "s", but it is not ASCII
    "<think>It is supported.</think>\nPASS",
    "<think>\nok\n</think>\n\nPASS",
    "I think this should PASS.",
    "YES",
    "TRUE",
]


@pytest.mark.parametrize(("text", "verdict", "reason"), ACCEPTED)
def test_parse_verdict_accepts_exact_first_line(text, verdict, reason):
    assert parse_verdict(text) == (verdict, reason)


@pytest.mark.parametrize("text", REJECTED)
def test_parse_verdict_rejects_everything_else(text):
    verdict, reason = parse_verdict(text)
    assert verdict is None
    assert reason.startswith("unparsed:")


def test_parse_verdict_non_text_is_unparsed():
    assert parse_verdict(None)[0] is None  # type: ignore[arg-type]


@given(st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc")), st.text())
def test_any_character_before_pass_makes_it_unparsed(prefix, tail):
    # a visible or invisible non-space character glued to the verdict word is never skipped
    assert parse_verdict(prefix + "PASS\n" + tail)[0] is None


@given(st.text())
def test_parse_verdict_never_invents_a_verdict(text):
    verdict, _ = parse_verdict(text)
    if verdict is not None:
        first = text.lstrip().split("\n", 1)[0].strip()
        assert first.upper() == verdict and first.isascii()


# ---- evidence-first parsing -------------------------------------------------------

RESPONSE = "You owe 2.000 pesos.\nThe fee is  5%."
FAIL_OBJ = '{"quote": "2.000 pesos", "why": "Not in the context.", "verdict": "FAIL"}'
PASS_OBJ = '{"quote": null, "why": "All supported.", "verdict": "PASS"}'

EVIDENCE_OK = [
    (FAIL_OBJ, "FAIL", "2.000 pesos"),
    (PASS_OBJ, "PASS", None),
    ("  \n" + PASS_OBJ + "\n\n", "PASS", None),
    ("```json\n" + FAIL_OBJ + "\n```", "FAIL", "2.000 pesos"),
    ("```\n" + PASS_OBJ + "\n```", "PASS", None),
    ("```JSON\n" + PASS_OBJ + "\n```\n", "PASS", None),
    # whitespace-normalised match: the response has a newline and a double space
    ('{"quote": "pesos. The fee is 5%.", "why": "x", "verdict": "FAIL"}', "FAIL", None),
    (
        '{\n  "quote": "  You owe\\n2.000 pesos. ",\n  "why": "x",\n  "verdict": "FAIL"\n}',
        "FAIL",
        None,
    ),
]

EVIDENCE_UNPARSED = [
    '{"verdict": "PASS", "quote": null, "why": "x"}',  # verdict first
    '{"why": "x", "quote": null, "verdict": "PASS"}',  # order
    '{"quote": null, "why": "x", "verdict": "PASS", "score": 1}',  # extra key
    '{"quote": null, "verdict": "PASS"}',  # missing key
    '{"quote": null, "quote": null, "why": "x", "verdict": "PASS"}',  # duplicate key
    '{"quote": null, "why": "x", "verdict": "pass"}',
    '{"quote": null, "why": "x", "verdict": "Pass"}',
    '{"quote": null, "why": "x", "verdict": true}',
    '{"quote": null, "why": "x", "verdict": "PASS."}',
    '{"quote": 2000, "why": "x", "verdict": "FAIL"}',
    '{"quote": {"text": "2.000"}, "why": "x", "verdict": "FAIL"}',
    '{"quote": null, "why": null, "verdict": "PASS"}',
    '{"quote": null, "why": "x", "verdict": "FAIL"}',  # FAIL needs a quote
    '{"quote": "   ", "why": "x", "verdict": "FAIL"}',  # an empty quote is no quote
    '{"quote": "2.000 pesos", "why": "x", "verdict": "PASS"}',  # PASS needs null
    PASS_OBJ + "\nHope this helps!",  # trailing prose
    "Here is my answer: " + PASS_OBJ,  # leading prose
    "```json\n" + PASS_OBJ + "\n```\nDone.",  # prose after the fence
    "```json\n" + PASS_OBJ + "\n```\n```json\n" + PASS_OBJ + "\n```",  # two fences
    "```json " + PASS_OBJ + "```",  # one-line fence
    "```python\n" + PASS_OBJ + "\n```",  # another language tag
    "[" + PASS_OBJ + "]",
    '{"quote": null, "why": "x", "verdict": "PASS",}',  # trailing comma
    "{'quote': None, 'why': 'x', 'verdict': 'PASS'}",  # a Python dict
    "<think>hm</think>\n" + PASS_OBJ,
    "",
    "PASS",
]


@pytest.mark.parametrize(("text", "verdict", "quote"), EVIDENCE_OK)
def test_parse_evidence_accepts(text, verdict, quote):
    evidence = parse_evidence(text, RESPONSE)
    assert evidence.failure is None
    assert evidence.verdict == verdict
    if quote is not None:
        assert evidence.quote == quote


@pytest.mark.parametrize("text", EVIDENCE_UNPARSED)
def test_parse_evidence_rejects(text):
    evidence = parse_evidence(text, RESPONSE)
    assert (evidence.verdict, evidence.failure) == (None, "unparsed")
    assert evidence.reason.startswith("unparsed:")


@pytest.mark.parametrize(
    "quote",
    [
        "3.000 pesos",  # not in the response
        "you owe 2.000 pesos",  # case differs
        "2.000\u200b pesos",  # a zero-width space the response does not have
        "2,000 pesos",  # another rendering of the same number is not a quote
    ],
)
def test_parse_evidence_discards_unverified_quote(quote):
    text = json.dumps({"quote": quote, "why": "x", "verdict": "FAIL"})
    evidence = parse_evidence(text, RESPONSE)
    assert (evidence.verdict, evidence.failure, evidence.quote) == (None, "unverified_quote", quote)


def test_evidence_schema_lists_the_keys_in_answer_order():
    assert list(EVIDENCE_SCHEMA["properties"]) == ["quote", "why", "verdict"]
    assert EVIDENCE_SCHEMA["required"] == ["quote", "why", "verdict"]
    assert EVIDENCE_SCHEMA["properties"]["verdict"]["enum"] == ["PASS", "FAIL"]
    assert EVIDENCE_SCHEMA["additionalProperties"] is False


def test_evidence_judge_reports_unverified_quote():
    judge = Judge("unsupported-claims", style="evidence-first")
    model = replies('{"quote": "9.999 pesos", "why": "x", "verdict": "FAIL"}')
    verdict = judge(model, response="You owe 2.000 pesos.", context="Debt: 2.000 pesos.")
    assert (verdict.verdict, verdict.parsed, verdict.failure) == (None, False, "unverified_quote")


def test_evidence_quote_may_match_the_response_as_shown():
    # the model sees "&lt;&lt;" where the response had "<<"; quoting what it saw is verified
    judge = Judge("unsupported-claims", style="evidence-first")
    response = "Use x << 2 for 4.000 pesos."
    model = replies('{"quote": "Use x &lt;&lt; 2 for 4.000 pesos.", "why": "x", "verdict": "FAIL"}')
    assert judge(model, response=response, context="nothing").verdict == "FAIL"


# ---- votes --------------------------------------------------------------------------


def test_three_votes_two_to_one():
    judge = Judge("Is polite.", votes=3)
    verdict = judge(replies("PASS\na", "FAIL\nb", "PASS\nc"), response="Thanks.")
    assert verdict.verdict == "PASS"
    assert verdict.reason == "a"  # the first vote that agrees with the majority
    assert verdict.votes == ["PASS", "FAIL", "PASS"]
    assert not verdict.unanimous
    assert verdict.failure is None


def test_three_votes_unanimous():
    verdict = Judge("Is polite.", votes=3)(replies("FAIL\nx", "fail", " FAIL "), response="No.")
    assert (verdict.verdict, verdict.unanimous) == ("FAIL", True)


def test_unparsed_votes_count_against_both_sides():
    judge = Judge("Is polite.", votes=3)
    # 1 PASS of 3 is not a strict majority (needs 2)
    verdict = judge(replies("PASS", "**PASS**", "PASS."), response="Thanks.")
    assert (verdict.verdict, verdict.failure, verdict.parsed) == (None, "unparsed", False)
    assert verdict.vote_failures == [None, "unparsed", "unparsed"]
    # 2 PASS of 3 is, and the unparsed vote breaks unanimity
    verdict = judge(replies("PASS", "PASS", "Verdict: PASS"), response="Thanks.")
    assert (verdict.verdict, verdict.unanimous) == ("PASS", False)
    # PASS, FAIL, unparsed: no majority
    verdict = judge(replies("PASS", "FAIL", ""), response="Thanks.")
    assert verdict.verdict is None
    assert verdict.reason == "no majority among 3 votes (PASS, FAIL, unparsed)"


def test_failed_call_among_votes():
    def model(prompt, *, sample=0):
        if sample == 2:
            raise ConnectionError("timed out")
        return ["PASS", "FAIL"][sample]

    verdict = Judge("Is polite.", votes=3)(model, response="Hi.")
    assert (verdict.verdict, verdict.failure) == (None, "error")
    assert verdict.error == "ConnectionError: timed out"
    assert verdict.raw == ["PASS", "FAIL", ""]
    assert "first error: ConnectionError: timed out" in verdict.reason


@pytest.mark.parametrize("votes", [0, 2, 4, -1, True, 1.0, "3"])
def test_votes_must_be_odd_and_positive(votes):
    with pytest.raises(JudgeError, match="votes"):
        Judge("Is polite.", votes=votes)


def test_sample_index_is_passed_and_distinct():
    model = replies("PASS", "PASS", "PASS", "PASS", "PASS")
    Judge("Is polite.", votes=5)(model, response="Hi.")
    assert [sample for _, sample in model.calls] == [0, 1, 2, 3, 4]
    assert len({prompt for prompt, _ in model.calls}) == 1  # same prompt, distinct samples


def test_sample_is_not_passed_to_callables_without_it():
    calls = []

    def plain(prompt):
        calls.append(prompt)
        return "PASS"

    verdict = Judge("Is polite.", votes=3)(plain, response="Hi.")
    assert verdict.verdict == "PASS" and len(calls) == 3


def test_sample_detection_for_other_callables():
    class Model:
        def __call__(self, prompt, *, sample=0):
            return "PASS"

    def by_position(prompt, sample):
        return "PASS"

    def accepts_sample(call_model):
        return "sample" in accepted_keywords(call_model)

    assert accepts_sample(Model())
    assert accepts_sample(functools.partial(by_position))
    assert accepts_sample(builtin_judge)
    assert not accepts_sample(lambda prompt, **kwargs: "PASS")
    assert not accepts_sample(operator.itemgetter(0))  # no signature at all
    # a C callable without a signature is called with the prompt only: prompt[0] is "Y"
    verdict = Judge("Is polite.")(operator.itemgetter(0), response="Hi.")
    assert (verdict.failure, verdict.raw) == ("unparsed", ["Y"])


def test_evidence_first_passes_the_schema_when_accepted():
    seen = []

    def structured(prompt, *, sample=0, json_schema=None):
        seen.append(json_schema)
        return '{"quote": null, "why": "ok", "verdict": "PASS"}'

    assert Judge("x", style="evidence-first", votes=3)(structured, response="y").verdict == "PASS"
    assert seen == [EVIDENCE_SCHEMA] * 3
    seen.clear()
    Judge("x")(lambda prompt, json_schema=None: seen.append(json_schema) or "PASS", response="y")
    assert seen == [None]  # verdict-first asks for no schema


# ---- failing, babbling and async models -----------------------------------------------


def test_model_that_raises_is_recorded_not_raised():
    def broken(prompt):
        raise RuntimeError("HTTP 500")

    verdict = Judge("Is polite.")(broken, response="Hi.")
    assert (verdict.verdict, verdict.parsed, verdict.failure) == (None, False, "error")
    assert verdict.error == "RuntimeError: HTTP 500"
    assert "HTTP 500" in verdict.reason
    assert not verdict.passed


def test_keyboard_interrupt_is_not_swallowed():
    def interrupted(prompt):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Judge("Is polite.")(interrupted, response="Hi.")


@pytest.mark.parametrize("reply", [None, 42, b"PASS", ["PASS"]])
def test_model_returning_non_text_is_an_error(reply):
    verdict = Judge("Is polite.")(lambda prompt: reply, response="Hi.")
    assert verdict.failure == "error"
    assert "expected str" in verdict.error


@pytest.mark.parametrize(
    "reply", ["", "I think the response is fine overall.", "\n\n", "The verdict is PASS."]
)
@pytest.mark.parametrize("style", ["verdict-first", "evidence-first"])
def test_babbling_or_empty_models_never_pass(reply, style):
    verdict = Judge("Is polite.", style=style, votes=3)(lambda prompt: reply, response="Hi.")
    assert verdict.verdict is None and verdict.failure == "unparsed" and not verdict.passed


def test_async_model():
    async def model(prompt, *, sample=0):
        await asyncio.sleep(0)
        return f"PASS\nsample {sample}"

    verdict = Judge("Is polite.", votes=3)(model, response="Hi.")
    assert verdict.verdict == "PASS" and verdict.reason == "sample 0"


def test_async_model_inside_a_running_event_loop():
    async def model(prompt):
        return "FAIL\nrude"

    async def main():
        return Judge("Is polite.")(model, response="Go away.")

    assert asyncio.run(main()).verdict == "FAIL"


class Reply(str):
    """A str with the attributes model adapters attach."""

    usage: dict[str, int] | None = None
    model: str | None = None


def reply_with(text, usage, model=None):
    reply = Reply(text)
    reply.usage = usage
    reply.model = model
    return reply


def test_usage_is_summed_and_model_reported():
    answers = iter(
        [
            reply_with("PASS", {"input_tokens": 100, "output_tokens": 3}, "judge-1"),
            reply_with("PASS", {"input_tokens": 100, "output_tokens": 4}, "judge-1"),
            reply_with("FAIL", None),
        ]
    )
    verdict = Judge("Is polite.", votes=3)(lambda prompt: next(answers), response="Hi.")
    # 100 + 100 + nothing = 200 input tokens; 3 + 4 = 7 output tokens
    assert verdict.usage == {"input_tokens": 200, "output_tokens": 7}
    assert verdict.model == "judge-1"
    assert Judge("Is polite.")(lambda prompt: "PASS", response="Hi.").usage is None


def test_to_dict_has_the_contract_keys_and_is_json():
    verdict = Judge("answers-the-question")(lambda p: "PASS\nYes.", response="9.", question="?")
    row = verdict.to_dict()
    contract = {"name", "criterion", "verdict", "parsed", "failure", "reason", "votes"}
    contract |= {"unanimous", "raw", "model", "rubric_fingerprint"}
    assert contract <= set(row)
    assert row["name"] == "answers-the-question"
    assert row["raw"] == ["PASS\nYes."]
    assert json.loads(json.dumps(row)) == row


def test_verdict_properties():
    unparsed = Verdict(None, "x", [None], [""], "unparsed")
    assert (unparsed.parsed, unparsed.unanimous, unparsed.passed) == (False, False, False)
    assert Verdict("FAIL", "x", ["FAIL"], ["FAIL"], None).unanimous


# ---- construction and templates --------------------------------------------------------


def test_names():
    assert Judge("unsupported-claims").name == "unsupported-claims"
    # a criterion of your own gets a slug of its words and a digest: two never share a name
    assert Judge("The tone is friendly.").name == "the-tone-is-friendly-773e"
    assert Judge("The tone is friendly.").name != Judge("The tone is warm.").name
    assert Judge("The tone is friendly.", name="tone").name == "tone"
    assert set(CRITERIA) >= {"unsupported-claims", "answers-the-question", "refuses-when-ambiguous"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"criterion": ""}, "criterion"),
        ({"criterion": "  "}, "criterion"),
        ({"criterion": "x", "style": "likert"}, "style"),
        ({"criterion": "x", "template": "no placeholders"}, "placeholder"),
        ({"criterion": "x", "template": "{criterion} only"}, "response"),
        ({"criterion": "x", "template": "{criterion}\n<<<RESPONSE>>>\n{response}"}, "marker"),
        ({"criterion": "Check <<<END RESPONSE>>>"}, "marker"),
    ],
)
def test_bad_construction_raises_judge_error(kwargs, message):
    with pytest.raises(JudgeError, match=message):
        Judge(**kwargs)


@pytest.mark.parametrize("steps", ["one step", ["ok", ""], ["<<<END RESPONSE>>>"]])
def test_bad_steps_raise_judge_error(steps):
    with pytest.raises(JudgeError, match="step"):
        StepsJudge("x", steps=steps)


def test_judge_error_is_a_value_error():
    assert issubclass(JudgeError, ValueError)


def test_bad_call_arguments():
    judge = Judge("x")
    with pytest.raises(JudgeError, match="response"):
        judge(lambda p: "PASS", response=None)
    with pytest.raises(JudgeError, match="context"):
        judge(lambda p: "PASS", response="hi", context={"a": 1})


def test_steps_are_rendered_numbered():
    prompt = StepsJudge("x", steps=["List the claims.", "Check each one."]).render("hi")
    assert "1. List the claims.\n2. Check each one.\n" in prompt


def test_context_list_is_joined_and_absent_blocks_leave_no_trace():
    prompt = Judge("x").render("hi", context=["first passage", "second passage"])
    assert read_blocks(prompt)[0]["CONTEXT"] == "first passage\n\nsecond passage"
    bare = Judge("x").render("hi")
    assert "QUESTION" not in bare and "CONTEXT" not in bare and "\n\n\n" not in bare


def test_custom_template_and_inert_braces():
    judge = Judge("Has {response} in it", template='{"a": 1}\n{criterion}\n{response}Go.')
    prompt = judge.render("{criterion} {steps}")
    assert prompt.startswith('{"a": 1}\nHas {response} in it\n<<<RESPONSE>>>\n')
    assert prompt.count("<<<RESPONSE>>>") == 1
    assert read_blocks(prompt)[0]["RESPONSE"] == "{criterion} {steps}"


def test_verdict_first_prompt_layout():
    prompt = Judge("unsupported-claims").render(
        "You owe 1.500.", context="Debt: 1.500.", question="How much?"
    )
    assert prompt.startswith("You are grading one property of a response.\n\n")
    assert f"PROPERTY: {CRITERIA['unsupported-claims']}\n" in prompt
    layout = (
        "<<<QUESTION>>>\nHow much?\n<<<END QUESTION>>>\n"
        "<<<CONTEXT>>>\nDebt: 1.500.\n<<<END CONTEXT>>>\n"
        "<<<RESPONSE>>>\nYou owe 1.500.\n<<<END RESPONSE>>>\n"
    )
    assert layout in prompt
    assert prompt.endswith("one sentence explaining the verdict. Write nothing else.")


# ---- rubric fingerprint -----------------------------------------------------------------


def test_fingerprint_follows_the_documented_recipe():
    # the recipe, written out by hand: canonical JSON with sorted keys, ASCII, no spaces
    canonical = (
        '{"criterion":"The answer is polite.","steps":["Read it."],'
        '"style":"verdict-first","template":"Grade: {criterion}\\n{response}"}'
    )
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    judge = StepsJudge(
        "The answer is polite.", template="Grade: {criterion}\n{response}", steps=["Read it."]
    )
    assert judge.rubric_fingerprint == expected
    assert (
        rubric_fingerprint("Grade: {criterion}\n{response}", "The answer is polite.", ["Read it."])
        == expected
    )


def test_fingerprint_of_the_default_rubric():
    canonical = json.dumps(
        {
            "criterion": CRITERIA["unsupported-claims"],
            "steps": [],
            "style": "evidence-first",
            "template": EVIDENCE_TEMPLATE,
        },
        sort_keys=True,
        ensure_ascii=True,
        separators=(",", ":"),
    )
    expected = hashlib.sha256(canonical.encode()).hexdigest()
    assert Judge("unsupported-claims", style="evidence-first").rubric_fingerprint == expected
    # a built-in name and its text are the same rubric
    assert (
        Judge(CRITERIA["unsupported-claims"], style="evidence-first").rubric_fingerprint == expected
    )


def test_fingerprint_changes_with_each_part():
    base = Judge("x").rubric_fingerprint
    others = {
        Judge("y").rubric_fingerprint,
        StepsJudge("x", steps=["s"]).rubric_fingerprint,
        Judge("x", style="evidence-first", template=VERDICT_TEMPLATE).rubric_fingerprint,
        Judge("x", template=VERDICT_TEMPLATE + " ").rubric_fingerprint,
        PairwiseJudge("x").rubric_fingerprint,
    }
    assert base not in others and len(others) == 5
    assert Judge("x", votes=3, name="n").rubric_fingerprint == base  # votes and name are not rubric


def test_fingerprint_is_stable_across_processes():
    code = "from tinyeval.judge import Judge; print(Judge('unsupported-claims').rubric_fingerprint)"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=Path(__file__).parent.parent,
    )
    assert out.stdout.strip() == Judge("unsupported-claims").rubric_fingerprint


def test_every_verdict_carries_the_fingerprint():
    judge = Judge("x")
    assert judge(lambda p: "PASS", response="y").rubric_fingerprint == judge.rubric_fingerprint


# ---- pairwise -----------------------------------------------------------------------------


def test_pairwise_always_a_is_inconsistent():
    pj = PairwiseJudge("answers-the-question")
    model = replies("A\nfirst", "A\nfirst again")
    verdict = pj(model, a="Paris.", b="Lyon.", question="Capital of France?")
    # order 1 shows a first: "A" means a. Order 2 shows b first: "A" means b, stored as "B".
    assert (verdict.first, verdict.second, verdict.winner, verdict.consistent) == (
        "A",
        "B",
        None,
        False,
    )
    assert read_blocks(model.calls[0][0])[0]["RESPONSE A"] == "Paris."
    assert read_blocks(model.calls[1][0])[0]["RESPONSE A"] == "Lyon."
    stats = position_stats([verdict]).to_dict()
    assert stats["first_position_rate"] == 1.0 and stats["consistency_rate"] == 0.0


def test_pairwise_consistent_judge():
    def prefers_paris(prompt):
        blocks, _ = read_blocks(prompt)
        return "A\nParis." if "Paris" in blocks["RESPONSE A"] else "B\nParis."

    pj = PairwiseJudge("answers-the-question")
    assert pj(prefers_paris, a="Paris.", b="Lyon.").winner == "A"
    assert pj(prefers_paris, a="Lyon.", b="Paris.").winner == "B"
    verdict = pj(prefers_paris, a="Lyon.", b="Paris.")
    assert verdict.consistent and verdict.to_dict()["winner"] == "B"


def test_pairwise_ties_parse_failures_and_errors():
    pj = PairwiseJudge("x")
    assert pj(lambda p: "tie", a="1", b="2").winner == "TIE"
    unparsed = pj(replies("A", "Response B"), a="1", b="2")
    assert (unparsed.first, unparsed.second, unparsed.winner) == ("A", None, None)

    def broken(prompt):
        raise TimeoutError("slow")

    errored = pj(broken, a="1", b="2")
    assert errored.winner is None and errored.error == "TimeoutError: slow"
    assert errored.raw == ["", ""]


@pytest.mark.parametrize(
    ("text", "choice"),
    [
        ("A", "A"),
        ("b\nwhy", "B"),
        (" TIE ", "TIE"),
        ("tie", "TIE"),
        ("A.", None),
        ("Response A", None),
        ("**A**", None),
        ("A or B", None),
        ("\u0410", None),  # Cyrillic A
        ("", None),
        ("AB", None),
    ],
)
def test_parse_choice(text, choice):
    assert parse_choice(text)[0] == choice


def test_position_stats_by_hand():
    verdicts = [
        # consistent: order 1 picked the first shown, order 2 the second shown
        PairwiseVerdict("A", "A", ["A", "B"]),
        PairwiseVerdict("A", "B", ["A", "A"]),  # always the first shown
        PairwiseVerdict("TIE", None, ["TIE", "?"]),  # a tie and a parse failure
    ]
    stats = position_stats(verdicts).to_dict()
    # replies: 6; parsed: 5 (one "?"); ties: 1; picks: 4 (A, A, A, B mapped)
    # first-position picks: verdict 1 order 1 (A) yes, order 2 ("A" mapped, b shown first) no;
    # verdict 2 both yes -> 3 of 4. Both orders parsed in 2 of 3 comparisons, 1 consistent.
    assert stats == {
        "n": 3,
        "consistent": 1,
        "both_parsed": 2,
        "consistency_rate": 1 / 2,
        "replies": 6,
        "parse_failures": 1,
        "ties": 1,
        "picks": 4,
        "first_position_picks": 3,
        "first_position_rate": 0.75,
    }
    assert position_stats([PairwiseVerdict("TIE", "TIE", ["TIE", "TIE"])]).first_position is None
    with pytest.raises(JudgeError):
        position_stats([])


def test_pairwise_template_needs_both_responses():
    with pytest.raises(JudgeError, match="response_b"):
        PairwiseJudge("x", template="{criterion} {response_a}")


# ---- untrusted text -------------------------------------------------------------------------

CONTEXT = "La cuota mensual del gimnasio es de 12.000 pesos."
QUESTION = "¿Cuánto cuesta la cuota mensual del gimnasio?"
MARKERS = {
    name: (f"<<<{name}>>>", f"<<<END {name}>>>")
    for name in ("QUESTION", "CONTEXT", "RESPONSE", "RESPONSE A", "RESPONSE B")
}


def assert_blocks_intact(prompt: str, expected: dict[str, str]) -> None:
    """Exactly one opening and one closing marker per block, in order, text entirely inside."""
    position = -1
    for name, text in expected.items():
        opening, closing = MARKERS[name]
        assert prompt.count(opening) == 1 and prompt.count(closing) == 1, name
        start, end = prompt.index(opening), prompt.index(closing)
        assert position < start < end
        position = end
        inside = prompt[start + len(opening) + 1 : end - 1]
        assert inside == neutralize(text)
        assert _ANGLE_RUN.search(inside) is None
    assert read_blocks(prompt)[0] == {name: neutralize(text) for name, text in expected.items()}


def test_corpus_is_large_enough():
    assert len(ADVERSARIAL) >= 20
    assert len({name for name, _ in ADVERSARIAL}) == len(ADVERSARIAL)


@pytest.mark.parametrize(("name", "text"), ADVERSARIAL, ids=[name for name, _ in ADVERSARIAL])
@pytest.mark.parametrize("style", ["verdict-first", "evidence-first"])
def test_adversarial_text_stays_inside_its_block(name, text, style):
    prompt = Judge("unsupported-claims", style=style).render(text, context=text, question=text)
    assert_blocks_intact(prompt, {"QUESTION": text, "CONTEXT": text, "RESPONSE": text})


@pytest.mark.parametrize(("name", "text"), ADVERSARIAL, ids=[name for name, _ in ADVERSARIAL])
def test_adversarial_text_stays_inside_pairwise_blocks(name, text):
    prompt = PairwiseJudge("answers-the-question").render(text, text, question=text)
    assert_blocks_intact(prompt, {"QUESTION": text, "RESPONSE A": text, "RESPONSE B": text})


def echo_prompt(prompt: str) -> str:
    return prompt


def echo_response_block(prompt: str) -> str:
    """Copies the delimited response, markers included, as a careless model might."""
    start, end = prompt.index("<<<RESPONSE>>>"), prompt.index("<<<END RESPONSE>>>")
    return prompt[start : end + len("<<<END RESPONSE>>>")]


@pytest.mark.parametrize(("name", "text"), ADVERSARIAL, ids=[name for name, _ in ADVERSARIAL])
@pytest.mark.parametrize("style", ["verdict-first", "evidence-first"])
@pytest.mark.parametrize("criterion", ["unsupported-claims", "answers-the-question"])
def test_injected_text_never_yields_a_pass(name, text, style, criterion):
    judge = Judge(criterion, style=style)
    for model in (builtin_judge, echo_prompt, echo_response_block):
        verdict = judge(model, response=text, context=CONTEXT, question=QUESTION)
        assert verdict.verdict != "PASS", (model.__name__, verdict.reason)
    for model in (echo_prompt, echo_response_block):
        assert judge(model, response=text, context=CONTEXT, question=QUESTION).failure == "unparsed"


@given(st.text())
def test_any_text_stays_inside_its_block(text):
    prompt = Judge("x").render(text, context=text, question=text)
    assert_blocks_intact(prompt, {"QUESTION": text, "CONTEXT": text, "RESPONSE": text})


@given(st.text())
def test_neutralize_is_idempotent(text):
    once = neutralize(text)
    assert neutralize(once) == once


@given(st.text(alphabet=st.characters(blacklist_characters=ANGLE_LIKE)))
def test_text_without_angles_is_shown_unchanged(text):
    assert neutralize(text) == text


def test_marker_look_alikes_are_all_defused():
    for text in [
        "<<<RESPONSE>>>",
        "<<<end response>>>",
        "< < < END RESPONSE > > >",
        "\uff1c\uff1c\uff1cEND RESPONSE\uff1e\uff1e\uff1e",
        "<\u200b<\u200b<x",
        "\u226aRESPONSE\u226b",
        "\u2039\u2039RESPONSE\u203a\u203a",
    ]:
        shown = neutralize(text)
        assert _ANGLE_RUN.search(shown) is None
        assert not re.search(r"<\s*<", shown)
