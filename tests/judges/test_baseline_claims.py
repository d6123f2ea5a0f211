"""The built-in judge: question tags do not hide a claim; framing sentences are not claims."""

from __future__ import annotations

import pytest

from tinyeval.judge import Judge
from tinyeval.judges.builtin import builtin_judge

claims = Judge("unsupported-claims")
WARRANTY = "La garantía del equipo es de 2 años. The device warranty is 2 years."


def verdict(response: str, context: str = WARRANTY) -> str:
    return claims(builtin_judge, response=response, context=context).verdict


@pytest.mark.parametrize(
    "response",
    [
        "La garantía es de 5 años, ¿ok?",
        "La garantía es de 5 años ¿ok?",
        "¿La garantía es de 5 años?",
        "¿Sabías que la garantía es de 5 años?",
        "The warranty is 5 years, right?",
        "The warranty is 5 years, ok?",
        "La garantía es de 5 años, ¿verdad?",
        "El equipo cubre inundaciones y robos, ¿ok?",
    ],
)
def test_an_unsupported_claim_with_a_question_mark_is_still_checked(response: str) -> None:
    assert verdict(response) == "FAIL"


@pytest.mark.parametrize(
    "response",
    [
        "La garantía es de 2 años, ¿ok?",
        "¿La garantía es de 2 años?",
        "¿Algo más?",
        "Any questions?",
    ],
)
def test_a_supported_claim_or_a_plain_question_passes(response: str) -> None:
    assert verdict(response) == "PASS"


@pytest.mark.parametrize(
    "framing",
    [
        "Here's a concise summary of the passage:",
        "Here is a short summary:",
        "Below is an overview of the text.",
        "Aquí tienes un resumen del texto:",
        "En resumen, estos son los puntos principales:",
    ],
)
def test_a_framing_sentence_is_not_a_claim(framing: str) -> None:
    assert verdict(f"{framing}\nThe device warranty is 2 years.") == "PASS"


@pytest.mark.parametrize(
    "response",
    [
        "Here's a summary: the warranty is 5 years.",
        "Here's a concise summary of the passage: the device covers floods and theft.",
        "Aquí tienes un resumen: la garantía es de 5 años.",
        "This is the warranty: 5 years.",
        "Here is a summary of the 2019 recall.",
    ],
)
def test_a_claim_cannot_hide_in_a_framing_sentence(response: str) -> None:
    assert verdict(response) == "FAIL"


def test_a_framing_sentence_followed_by_a_supported_claim_passes() -> None:
    assert verdict("Here's a summary: the device warranty is 2 years.") == "PASS"
