"""Chat logs through the whole run: the judge sees the conversation in blocks, never a JSON
dump, and generation sends the real message list with its roles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tinyeval
from tinyeval.judges.builtin import read_blocks

ROOT = Path(__file__).resolve().parents[2]

LOGS = [
    {"trace": {"span_id": f"s{i}"}, "metadata": {"route": "faq"},
     "request": {"messages": [
         {"role": "system", "content": "You are the help desk of a bank. Be brief."},
         {"role": "user", "content": question}]},
     "response": {"choices": [{"message": {"content": answer}}]}}
    for i, (question, answer) in enumerate([
        ("What are your opening hours?", "Our opening hours are 9 to 17, Monday to Friday."),
        ("How do I reset my card PIN?", "You can reset your card PIN from the app, under Cards."),
        ("Do you charge for transfers?", "I like turtles."),
    ])
]  # fmt: skip


def write_logs(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in LOGS))
    return path


def run_with(path: Path, input_path: str) -> list[dict]:
    seen: list[str] = []

    def judge(prompt: str) -> str:
        seen.append(prompt)
        return "PASS\nfine"

    fields = {"id": "trace.span_id", "category": "metadata.route", "input": input_path,
              "output": "response.choices.0.message.content"}  # fmt: skip
    cases = tinyeval.load(path, fields=fields)
    tinyeval.run(cases, judges=tinyeval.Judge("answers-the-question"), judge_model=judge)
    return [read_blocks(prompt)[0] for prompt in seen]


def test_the_message_list_gives_the_judge_the_users_question_not_a_json_dump(
    tmp_path: Path,
) -> None:
    path = write_logs(tmp_path)
    whole = run_with(path, "request.messages")
    turn = run_with(path, "request.messages.1.content")
    assert [b["QUESTION"] for b in whole] == [b["QUESTION"] for b in turn]
    assert whole[0]["QUESTION"] == "What are your opening hours?"
    assert whole[0]["SYSTEM PROMPT"] == "You are the help desk of a bank. Be brief."
    assert all('"role"' not in text for blocks in whole for text in blocks.values())
    # the built-in judge scores the two mappings alike
    fields = {"id": "trace.span_id", "output": "response.choices.0.message.content"}
    verdicts = []
    for input_path in ("request.messages", "request.messages.1.content"):
        cases = tinyeval.load(path, fields={**fields, "input": input_path})
        result = tinyeval.run(cases, judges=tinyeval.Judge("answers-the-question"))
        verdicts.append([r["judges"]["answers-the-question"]["verdict"] for r in result.rows])
    assert verdicts[0] == verdicts[1] == ["PASS", "PASS", "FAIL"]


def test_cmd_cat_as_generate_model_receives_the_message_list_with_roles(tmp_path: Path) -> None:
    record = {"id": "c1", "messages": LOGS[0]["request"]["messages"],
              "expect": {"contains": ['"role": "system"']}}  # fmt: skip
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(record) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", str(cases), "--generate-model", "cmd:cat",
         "--out", str(tmp_path / "rows.jsonl"), "--no-cache", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = json.loads((tmp_path / "rows.jsonl").read_text())
    sent = json.loads(row["output"])
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["content"] == "What are your opening hours?"
