"""No key reaches any artefact of a run, in any form a server or a model may echo it.

Twenty key shapes live in the environment of one judged run whose fake server echoes every one
of them back, raw and escaped, in its replies and in an error body. Every artefact the run
writes (rows, cache, review file, HTML, JUnit, Markdown, the job summary, stdout, stderr) is then
searched for each key in each form.
"""

from __future__ import annotations

import base64
import html
import json
import urllib.parse
from pathlib import Path
from typing import Any

from child import run_tinyeval
from faults import Fault, FaultServer, Request

# one environment variable per shape; names end as tinyeval's secret names do
KEYS = {
    "OPENAI_API_KEY": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f",
    "OLD_OPENAI_KEY": "sk-AbCdEfGhIjKlMnOpQrStT3BlbkFJuVwXyZ0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-api03-Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEfAA",
    "ANTHROPIC_ADMIN_KEY": "sk-ant-admin01-Qw3Er4Ty5Ui6Op7As8Df9Gh0Jk-LzXcVbAA",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY+9z",
    "GITHUB_TOKEN": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "GH_FINE_TOKEN": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "SLACK_BOT_TOKEN": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "GOOGLE_API_KEY": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "AUTH_TOKEN": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1g",
    "SERVICE_TOKEN": "c2VydmljZS10b2tlbi12YWx1ZQ==",
    "WEIRD_SECRET": "k\"e'y&<v>al-ue-0042",
    "UNICODE_PASSWORD": "contraseña-ñandú-€uro-42",
    "DB_PASSWORD": "correct horse battery staple",
    "HF_TOKEN": "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345",
    "AZURE_OPENAI_API_KEY": "0123456789abcdef0123456789abcdef",
    "STRIPE_SECRET": "sk_live_51H8abcDEFghiJKLmnoPQRstu",
    "FILE_KEY": "key-read-from-a-file-0099\n",
    "PERCENT_SECRET": "p%2Fa+s/s=w?o#r&d-77",
    "MISTRAL_API_KEY": "Mi5tRaLkEy0123456789abcdefABCDEF",
}


def forms(key: str) -> set[str]:
    """The forms a key may take in text: raw, escaped (JSON, repr, percent), HTML-escaped,
    base64 and hex of its UTF-8 bytes."""
    found = set()
    for value in {key, key.strip()}:
        data = value.encode()
        found |= {
            value,
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            repr(value)[1:-1],
            urllib.parse.quote(value, safe=""),
            html.escape(value),
            html.escape(value).replace("&#x27;", "&#39;"),
            html.escape(value, quote=False),
            base64.b64encode(data).decode(),
            base64.urlsafe_b64encode(data).decode().rstrip("="),
            data.hex(),
            data.hex().upper(),
        }
    return {form for form in found if len(form) >= 8}


ECHO = " | ".join(sorted(form for key in KEYS.values() for form in forms(key)))


def echo(request: Request) -> tuple[int, dict[str, Any]]:
    """Every key in every form: in the reply, or in the error body given for one case."""
    body = request.json()
    if "is 2 pesos" in json.dumps(body):  # a refused call: its error body carries the keys
        return 400, {"error": {"message": f"bad key {ECHO}", "type": "x"}}
    verdict = "PASS" if body.get("seed", 0) % 2 == 0 else "FAIL"
    text = f"{verdict}\nThe keys: {ECHO}"
    return 200, {"model": f"fake {ECHO[:200]}", "choices": [{"message": {"content": text}}]}


def test_no_key_shape_reaches_any_artefact_in_any_form(tmp_path: Path) -> None:
    rows = [{"id": f"c{n}", "output": f"The limit is {n} pesos."} for n in range(4)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = tmp_path / "job-summary.md"
    env = {**KEYS, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    # an OpenAI-compatible server on 127.0.0.1: at most 40 requests, about 60 s
    with FaultServer([Fault.reply(echo)], max_requests=40, lifetime=60.0) as server:
        argv = ["run", "cases.jsonl", "--criterion", "States only amounts the context gives.",
                "--judge-model", "openai:fake", "--base-url", server.url, "--votes", "3",
                "--review-out", "review.jsonl", "--cache", "cache.db", "--html", "r.html",
                "--junit", "r.xml", "--markdown", "r.md", "--github",
                "--default-threshold", "0.5"]  # fmt: skip
        done = run_tinyeval(argv, tmp_path, env, timeout=120, bounded_memory=True)
    assert done.returncode in (0, 1, 3), done.stderr
    assert "Traceback" not in done.stderr and "please report" not in done.stderr
    results = tmp_path / "tinyeval-results.jsonl"
    artefacts = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "cases.jsonl"}
    artefacts["stdout"], artefacts["stderr"] = done.stdout.encode(), done.stderr.encode()
    expected = {"tinyeval-results.jsonl", "review.jsonl", "cache.db", "r.html", "r.xml", "r.md"}
    assert expected <= set(artefacts), sorted(artefacts)
    assert summary.stat().st_size > 0 and (tmp_path / "review.jsonl").stat().st_size > 0
    # the run met the keys: the replies were stored (scrubbed), one case failed on the error
    stored = [json.loads(line) for line in results.read_text().splitlines()]
    assert {row["status"] for row in stored} >= {"error"}, stored
    assert "***" in results.read_text()
    leaks = [
        (name, variable, form)
        for name, data in artefacts.items()
        for variable, key in KEYS.items()
        for form in forms(key)
        if form.encode() in data
    ]
    assert not leaks, leaks[:10]
