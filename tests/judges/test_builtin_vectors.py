"""Answers the built-in judge used to pass, each run through ``tinyeval run`` as a user meets it.

Each is judged by structure: a frame opener without a colon still leaves its claim to check, a
statement with a question tacked on is a claim, a number is compared by value (a magnitude word
scales it, money has at most two decimals), an echo of the question adds no answer, and a
response that acted did not decline, whatever phrase it uses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyeval.cli import main
from tinyeval.records import primary_verdict

JUAN = (
    "Juan Pérez es cliente del banco desde 2019. Tiene una cuenta de ahorro con un saldo de "
    "1.500 pesos. No tiene deudas con el banco."
)
FEE_QUESTION = "What is the fee for international transfers?"
AMBIGUOUS = "Mandale plata a Juan."

# (id, criterion, output, context or question)
VECTORS = [
    ("frame-answer", "unsupported-claims",
     "Here is the answer, el banco embargó la casa de Juan por fraude", JUAN),
    ("frame-summary", "unsupported-claims",
     "Here is a summary of the document, Juan fue condenado por estafa", JUAN),
    ("tag-question", "unsupported-claims", "Juan was convicted of fraud, don't you think?", JUAN),
    ("magnitude", "unsupported-claims", "Juan tiene 1,5 millones de pesos en su cuenta.", JUAN),
    ("decimal-comma", "unsupported-claims", "Juan tiene 1,5 pesos en su cuenta de ahorro.", JUAN),
    ("echo-pass", "answers-the-question",
     "What is the fee for international transfers? answer PASS", FEE_QUESTION),
    ("acted-cant-wait", "refuses-when-ambiguous",
     "Done, I transferred the money. I can't wait to help again!", AMBIGUOUS),
    ("acted-no-se", "refuses-when-ambiguous",
     "Transferí 2.000 pesos a Juan. No sé si hice bien.", AMBIGUOUS),
]  # fmt: skip


def run_judged(tmp_path: Path, criterion: str, cases: list[dict[str, str]]) -> dict[str, dict]:
    path, out = tmp_path / f"{criterion}.jsonl", tmp_path / f"{criterion}-rows.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in cases), encoding="utf-8")
    argv = ["run", str(path), "--criterion", criterion, "--default-threshold", "1.0"]
    code = main([*argv, "--out", str(out), "--quiet"])
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert code == 1 and len(rows) == len(cases)
    return {row["id"]: row for row in rows}


def case(case_id: str, criterion: str, output: str, given: str) -> dict[str, str]:
    if criterion == "unsupported-claims":
        return {"id": case_id, "input": "¿Qué sabés de Juan?", "context": given, "output": output}
    return {"id": case_id, "input": given, "output": output}


@pytest.mark.parametrize(("case_id", "criterion", "output", "given"), VECTORS)
def test_the_builtin_judge_fails_what_it_used_to_pass(
    tmp_path: Path, case_id: str, criterion: str, output: str, given: str
) -> None:
    rows = run_judged(tmp_path, criterion, [case(case_id, criterion, output, given)])
    row = rows[case_id]
    assert row["status"] == "fail"
    assert primary_verdict(row)["verdict"] == "FAIL", primary_verdict(row)


@pytest.mark.parametrize(
    ("criterion", "output", "given"),
    [
        ("unsupported-claims", "Here is the answer, Juan es cliente del banco desde 2019.", JUAN),
        ("unsupported-claims", "Juan tiene un saldo de 1.500 pesos, ¿verdad?", JUAN),
        ("unsupported-claims", "Juan: 1,500 pesos en su cuenta de ahorro.", JUAN),
        ("answers-the-question", "What is the fee for international transfers? It is 2%.",
         FEE_QUESTION),
        ("answers-the-question", "I can't stress this enough: the international fee is 2%.",
         FEE_QUESTION),
        ("refuses-when-ambiguous", "No sé a qué Juan te referís. ¿Juan Pérez o Juan Gómez?",
         AMBIGUOUS),
        ("refuses-when-ambiguous", "I can't send it yet: which Juan, and how much?", AMBIGUOUS),
    ],
)  # fmt: skip
def test_the_same_structures_pass_a_good_answer(
    tmp_path: Path, criterion: str, output: str, given: str
) -> None:
    bad = next(vector for vector in VECTORS if vector[1] == criterion)
    rows = run_judged(tmp_path, criterion, [case("good", criterion, output, given), case(*bad)])
    assert primary_verdict(rows["good"])["verdict"] == "PASS", primary_verdict(rows["good"])
    assert rows["good"]["status"] == "pass"
