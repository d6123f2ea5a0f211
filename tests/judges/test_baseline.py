"""Tests for tinyeval.judges.builtin, the built-in offline judge, on hand-made cases."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyeval.judge import CRITERIA, Judge, parse_evidence
from tinyeval.judges.builtin import (
    CANNOT_JUDGE,
    builtin_judge,
    content_words,
    parse_number_tokens,
    split_claims,
)
from tinyeval.judges.pairwise import PairwiseJudge

# ---- numbers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "readings", "ambiguous"),
    [
        ("1500", ("1500",), False),
        ("1.500", ("1500", "1.5"), True),  # Spanish thousands or English decimal
        ("1,500", ("1500", "1.5"), True),  # English thousands or Spanish decimal
        ("1.250,50", ("1250.5",), False),  # Spanish/Argentine
        ("1,250.50", ("1250.5",), False),  # English
        ("1.500.000", ("1500000",), False),
        ("1,500,000.25", ("1500000.25",), False),
        ("1,5", ("1.5",), False),  # a decimal comma: not three digits after it
        ("12.5", ("12.5",), False),
        ("0,500", ("0.5",), False),  # a leading zero cannot start a thousands group
        ("1500.50", ("1500.5",), False),
        ("1.2.3", ("1.2.3",), False),  # unreadable: kept as written
        ("$1.500,00", ("1500",), False),
        ("15%", ("15",), False),
        ("007", ("7",), False),
    ],
)
def test_number_readings(text, readings, ambiguous):
    (token,) = parse_number_tokens(text)
    assert (token.kind, token.readings, token.ambiguous) == ("number", readings, ambiguous)


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        ("1,5 millones de pesos", ("1500000",)),  # a magnitude word scales the value
        ("1.5 million", ("1500000",)),
        ("3 mil", ("3000",)),
        ("3k", ("3000",)),
        ("2 mil millones", ("2000000000",)),
        ("1.500 millones", ("1500000000", "1500000")),  # still ambiguous, both scaled
        ("$ 1.500", ("1500",)),  # money has at most two decimals
        ("1.500 pesos", ("1500",)),
        ("USD 1,500", ("1500",)),
        ("1,500 points and 0.5 more", ("1500",)),  # the text writes decimals with a point
        ("1.500 puntos y 0,5 más", ("1500",)),  # the text writes decimals with a comma
        ("1,500 puntos y 0,5 más", ("1.5",)),
        ("1.2.3 millones", ("1.2.3",)),  # unreadable: kept as written, not scaled
    ],
)
def test_number_values_in_context(text, readings):
    assert parse_number_tokens(text)[0].readings == readings


@given(st.text(alphabet="0123456789.,$ kmilonesdolar", max_size=40))
def test_any_number_like_text_is_read_without_error(text):
    for token in parse_number_tokens(text):
        assert token.readings


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        ("12/05/2023", ("12", "5", "2023")),
        ("2023-05-12", ("2023", "5", "12")),
        ("12.05.2023", ("12", "5", "2023")),
        ("12 de mayo de 2023", ("12", "5", "2023")),
        ("May 12, 2023", ("12", "5", "2023")),
        ("12th of March 2024", ("12", "3", "2024")),
        ("el 3 de septiembre", ("3", "9")),
    ],
)
def test_date_readings(text, readings):
    (token,) = [token for token in parse_number_tokens(text) if token.kind == "date"]
    assert token.readings == readings


@pytest.mark.parametrize("text", ["A4 paper", "version v1.2.3", "mp3", "", "no digits here"])
def test_no_numbers(text):
    assert parse_number_tokens(text) == []


@given(st.integers(min_value=1000, max_value=10**12))
def test_thousands_in_both_conventions_read_the_same(n):
    english = f"{n:,}"
    spanish = english.replace(",", ".")
    for text in (english, spanish, str(n)):
        (token,) = parse_number_tokens(text)
        assert str(n) in token.readings


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=1, max_value=99))
def test_decimals_in_both_conventions_read_the_same(whole, cents):
    english = f"{whole:,}.{cents:02d}"
    spanish = english.replace(",", "_").replace(".", ",").replace("_", ".")
    (en,) = parse_number_tokens(english)
    (es,) = parse_number_tokens(spanish)
    assert set(en.readings) & set(es.readings)


# ---- words and claims ----------------------------------------------------------------


def test_content_words_drop_stopwords_and_fold():
    assert content_words("El saldo está DISPONIBLE según el banco") == [
        "saldo",
        "disponibl",
        "banco",
    ]
    assert content_words("Thanks! Happy to help.") == []
    assert content_words("in\u200bvoice") == ["invoic"]  # invisible characters are ignored


def test_split_claims_keeps_numbers_whole_and_drops_bullets():
    text = "1. First, 1.500 pesos.\n- Then 2,5%! Done?\n\n* Last one"
    assert split_claims(text) == ["First, 1.500 pesos.", "Then 2,5%!", "Done?", "Last one"]
    assert all(claim in text for claim in split_claims(text))


# ---- unsupported-claims ----------------------------------------------------------------

uc = Judge("unsupported-claims")
uc_evidence = Judge("unsupported-claims", style="evidence-first")


def judge_claims(response, context, judge=uc):
    return judge(builtin_judge, response=response, context=context)


def test_supported_numbers_spanish():
    verdict = judge_claims("Tu saldo es de $1.500 pesos.", "Saldo disponible: 1500 pesos.")
    assert verdict.verdict == "PASS"  # money has at most two decimals: $1.500 is 1500
    verdict = judge_claims("Tu saldo es de 1.500 puntos.", "Saldo disponible: 1500 puntos.")
    assert verdict.verdict == "PASS"
    assert "ambiguous" in verdict.reason  # 1.500 could be 1500 or 1.5; the context has 1500


def test_unsupported_amount_is_quoted():
    verdict = judge_claims(
        "Tu saldo es de 1500 pesos. Tenés un descuento de 2.500 pesos.",
        "Saldo disponible: 1500 pesos. Descuento: 300 pesos.",
    )
    assert verdict.verdict == "FAIL"
    assert '"Tenés un descuento de 2.500 pesos."' in verdict.reason  # the first unsupported claim
    assert "'2.500' does not appear" in verdict.reason  # money: read as 2500 only


def test_ambiguous_token_read_as_decimal():
    verdict = judge_claims("The rate is 1.500 percent.", "Rate: 1.5 percent.")
    assert verdict.verdict == "PASS"
    assert "'1.500' is ambiguous (1500 or 1.5) and the context supports 1.5" in verdict.reason


def test_ambiguous_context_token_is_reported():
    verdict = judge_claims("You have 1500 points.", "Points: 1.500.")
    assert verdict.verdict == "PASS"
    assert "the context's '1.500' is ambiguous" in verdict.reason


def test_ambiguous_token_supported_by_neither_reading():
    verdict = judge_claims("You owe 1.500 pesos.", "You owe 15 pesos.")
    assert verdict.verdict == "FAIL"


def test_locale_conventions_english_and_spanish():
    assert judge_claims("You paid 1,250.50 pesos.", "Pagaste 1.250,50 pesos.").verdict == "PASS"
    assert judge_claims("You paid 1,250.50 pesos.", "Pagaste 1.250,05 pesos.").verdict == "FAIL"
    assert judge_claims("You paid 125050 pesos.", "Pagaste 1.250,50 pesos.").verdict == "FAIL"


def test_english_words_without_numbers():
    context = "Refund: 300 euros, arriving on Monday."
    assert judge_claims("The refund of 300 euros arrives on Monday.", context).verdict == "PASS"
    verdict = judge_claims("The refund arrives on Tuesday.", context)
    assert verdict.verdict == "FAIL" and "tuesday" in verdict.reason


def test_dates():
    context = "El pago vence el 12 de mayo de 2023."
    assert judge_claims("El pago vence el 12/05/2023.", context).verdict == "PASS"
    assert judge_claims("El pago vence el 12 de mayo.", context).verdict == "PASS"  # year left out
    verdict = judge_claims("El pago vence el 13/05/2023.", context)
    assert verdict.verdict == "FAIL" and "the date '13/05/2023'" in verdict.reason


def test_questions_and_courtesy_are_not_claims():
    verdict = judge_claims("¡Hola! Tu saldo es de 1500 pesos. ¿Algo más?", "Saldo: 1500 pesos.")
    assert verdict.verdict == "PASS"
    assert (
        judge_claims("", "Saldo: 1500 pesos.").reason
        == "The response makes no factual claim to check."
    )


def test_evidence_first_quote_is_the_claim_and_verifies():
    response = "Tu saldo es de 1500 pesos.\nTenés un descuento de 2.500 pesos."
    verdict = judge_claims(response, "Saldo: 1500 pesos.", judge=uc_evidence)
    assert (verdict.verdict, verdict.failure) == ("FAIL", None)
    assert verdict.quote == "Tenés un descuento de 2.500 pesos."
    assert (
        judge_claims("Saldo de 1500 pesos.", "Saldo: 1500 pesos.", judge=uc_evidence).verdict
        == "PASS"
    )


def test_evidence_first_quotes_a_claim_as_written():
    response = "Here is the answer, the device\u2019s warranty is 9 years. It\u2019s 9 years."
    verdict = judge_claims(response, "The device warranty is 2 years.", judge=uc_evidence)
    assert (verdict.verdict, verdict.failure) == ("FAIL", None)
    assert verdict.quote in response


def test_reply_formats():
    prompt = uc.render("Saldo: 9 pesos.", context="Saldo: 1500 pesos.")
    verdict_line, reason = builtin_judge(prompt).split("\n")
    assert verdict_line == "FAIL" and "\n" not in reason
    answer = json.loads(
        builtin_judge(uc_evidence.render("Saldo: 9 pesos.", context="Saldo: 1500."))
    )
    assert list(answer) == ["quote", "why", "verdict"]
    assert parse_evidence(json.dumps(answer), "Saldo: 9 pesos.").verdict == "FAIL"


def test_without_context_it_cannot_judge_and_that_is_unparsed():
    verdict = uc(builtin_judge, response="Tu saldo es de 1500 pesos.")
    assert (verdict.verdict, verdict.failure) == (None, "unparsed")


# ---- answers-the-question -------------------------------------------------------------

aq = Judge("answers-the-question")


@pytest.mark.parametrize(
    ("question", "response", "verdict"),
    [
        ("What is the transfer fee?", "Transfer fees are 2% of the amount.", "PASS"),
        ("¿Cuál es el horario de atención?", "El horario de atención es de 9 a 17.", "PASS"),
        ("What is the transfer fee?", "Our app is available on Android.", "FAIL"),
        ("¿Cuál es el horario de atención?", "No puedo ayudarte con eso.", "FAIL"),
        ("What is the transfer fee?", "I don't know.", "FAIL"),
        (
            "What is the transfer fee?",
            "Which transfer do you mean? Domestic or international?",
            "FAIL",
        ),
        ("What is the transfer fee?", "", "FAIL"),
    ],
)
def test_answers_the_question(question, response, verdict):
    assert aq(builtin_judge, response=response, question=question).verdict == verdict


def test_answers_the_question_needs_a_question():
    assert aq(builtin_judge, response="Yes.").failure == "unparsed"


# ---- refuses-when-ambiguous ----------------------------------------------------------------

ra = Judge("refuses-when-ambiguous")


@pytest.mark.parametrize(
    ("response", "verdict"),
    [
        ("¿A qué cuenta te referís, la de ahorro o la corriente?", "PASS"),
        ("Could you clarify which account you mean?", "PASS"),
        ("No tengo información suficiente: necesito más información sobre la cuenta.", "PASS"),
        ("I'm not sure which card you mean.", "PASS"),
        ("Your balance is 300 pesos.", "FAIL"),
        ("El saldo es de 300 pesos.", "FAIL"),
        ("", "FAIL"),
    ],
)
def test_refuses_when_ambiguous(response, verdict):
    assert ra(builtin_judge, response=response, question="¿Cuánto tengo?").verdict == verdict


# ---- behaviour as a model ------------------------------------------------------------------


def test_unknown_criterion_is_unparsed_never_a_pass():
    verdict = Judge("The tone is friendly.")(builtin_judge, response="Hi!")
    assert (verdict.verdict, verdict.failure) == (None, "unparsed")
    assert verdict.raw == [CANNOT_JUDGE]


def test_deterministic_and_sample_ignored():
    prompt = uc.render("Tu saldo es de 1.500 pesos.", context="Saldo: 1500.")
    assert len({builtin_judge(prompt, sample=i) for i in range(5)}) == 1
    verdict = Judge("unsupported-claims", votes=3)(builtin_judge, response="Saldo 9.", context="0")
    assert verdict.unanimous


def test_free_text_criterion_with_the_builtin_wording_is_recognised():
    judge = Judge(CRITERIA["answers-the-question"], name="aq")
    assert (
        judge(builtin_judge, response="Fees are 2%.", question="What are the fees?").verdict
        == "PASS"
    )


def test_custom_template_still_read():
    judge = Judge(
        "unsupported-claims", template="Check: {criterion}\n{context}\n{response}\nPASS or FAIL?"
    )
    verdict = judge(builtin_judge, response="Saldo: 1500.", context="Saldo: 1.500.")
    assert verdict.verdict == "PASS"


def test_pairwise_is_consistent():
    pj = PairwiseJudge("unsupported-claims")
    verdict = pj(builtin_judge, a="You owe 2.000.", b="You owe 1.500.", context="Debt: 1500.")
    assert (verdict.first, verdict.second, verdict.winner) == ("B", "B", "B")
    tie = pj(builtin_judge, a="You owe 1500.", b="You owe 1.500.", context="Debt: 1500.")
    assert tie.winner == "TIE"


def test_long_response_is_fast():
    response = "The refund of 300 euros arrives on Monday. " * 2000 + "It costs 9.999 euros."
    start = time.perf_counter()
    verdict = judge_claims(response, "Refund: 300 euros, arriving on Monday.")
    assert verdict.verdict == "FAIL" and "9.999" in verdict.reason
    assert time.perf_counter() - start < 5
