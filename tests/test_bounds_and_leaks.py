"""Caches that are not ours, replies past their bound, usage that is not a count, keys in
escaped forms, a cmd: model's environment, and structured verdicts, through the CLI."""

from __future__ import annotations

import base64
import html
import json
import os
import sqlite3
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from child import run_tinyeval
from faults import Fault, FaultServer
from hostile import assert_refused

JUDGE = "def fails(prompt):\n    return 'FAIL\\nIt invents the amount.'\n"
Reply = Callable[[dict[str, Any], str], Any]


def tinyeval(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "judges.py").write_text(JUDGE, encoding="utf-8")
    if not (tmp_path / "cases.jsonl").exists():
        rows = [{"id": f"c{n}", "output": f"The limit is {n} pesos."} for n in range(3)]
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (tmp_path / "cases.jsonl").write_text(text, encoding="utf-8")
    argv = ["run", "cases.jsonl", *args]
    return run_tinyeval(argv, tmp_path, env, path=[tmp_path], timeout=120, bounded_memory=True)


JUDGED = ("--criterion", "States only amounts the context gives.", "--default-threshold", "1")


def _foul(path: Path, kind: str) -> None:
    with sqlite3.connect(path) as db:
        if kind == "trigger":
            db.execute(
                "CREATE TRIGGER to_pass AFTER INSERT ON replies BEGIN "
                "UPDATE replies SET text = 'PASS' || substr(text, 5); END"
            )
            db.execute("UPDATE replies SET text = 'PASS' || substr(text, 5)")
        elif kind == "view":
            db.execute("ALTER TABLE replies RENAME TO kept")
            db.execute("CREATE VIEW replies AS SELECT * FROM kept")
        else:
            db.execute("CREATE TABLE notes (text TEXT)")


def _contents(path: Path) -> list[Any]:
    with sqlite3.connect(path) as db:
        objects = db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        table = "kept" if ("table", "kept") in {row[:2] for row in objects} else "replies"
        return objects + db.execute(f"SELECT * FROM {table} ORDER BY text").fetchall()


@pytest.mark.parametrize("refresh", [False, True])
@pytest.mark.parametrize("kind", ["trigger", "view", "table"])
def test_a_cache_holding_what_tinyeval_did_not_create_is_refused(
    tmp_path: Path, kind: str, refresh: bool
) -> None:
    first = tinyeval(tmp_path, *JUDGED, "--judge-model", "py:judges:fails", "--cache", "c.db")
    assert first.returncode == 1, first.stderr  # every case FAILs
    _foul(tmp_path / "c.db", kind)
    before = _contents(tmp_path / "c.db")
    again = ["--out", "again.jsonl", *(["--refresh"] if refresh else [])]
    done = tinyeval(
        tmp_path, *JUDGED, "--judge-model", "py:judges:fails", "--cache", "c.db", *again
    )
    assert_refused(done, None, kind, says="not a tinyeval cache")
    assert not (tmp_path / "again.jsonl").exists()
    assert _contents(tmp_path / "c.db") == before  # nothing stored through it


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "under-a-file"])
def test_a_cache_path_that_is_not_a_regular_file_is_refused_before_the_run(
    tmp_path: Path, kind: str
) -> None:
    places = {"fifo": tmp_path / "pipe", "directory": tmp_path, "device": Path("/dev/full")}
    path = places.get(kind, tmp_path / "notes.txt" / "c.db")
    if kind == "fifo":
        os.mkfifo(path)
    if kind == "under-a-file":
        path.parent.write_text("notes", encoding="utf-8")
    if kind == "device" and not path.exists():
        pytest.skip("no /dev/full here")
    done = tinyeval(tmp_path, *JUDGED, "--judge-model", "py:judges:fails", "--cache", str(path))
    expected = "notes.txt" if kind == "under-a-file" else "give the path of a file"
    says = f"cannot use the cache {path}" if kind == "under-a-file" else expected
    assert_refused(done, None, kind, says=says)
    assert expected in done.stderr and "rollback" not in done.stderr.lower()
    assert not (tmp_path / "tinyeval-results.jsonl").exists()


def judged(row: dict[str, Any]) -> dict[str, Any]:
    [verdict] = row["judges"].values()
    return dict(verdict)


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_cmd_model_printing_for_ever_is_a_too_long_reply_not_a_memory_error(
    tmp_path: Path,
) -> None:
    done = tinyeval(tmp_path, *JUDGED, "--judge-model", "cmd:yes PASS", "--timeout", "30")
    assert "MemoryError" not in done.stderr and "please report" not in done.stderr
    rows = rows_of(tmp_path / "tinyeval-results.jsonl")
    assert [row["status"] for row in rows] == ["error"] * 3
    for row in rows:
        assert "larger than 8,388,608 bytes" in judged(row)["error"]


# --- a fake OpenAI-compatible server that sees each request's body and key


def fake_openai(reply: Reply) -> FaultServer:
    """Answers each POST on 127.0.0.1 with ``reply(body, key)``; at most 60 requests, 60 s."""
    answer = Fault.reply(lambda request: (200, reply(request.json(), request.key)))
    return FaultServer([answer], max_requests=60, lifetime=60.0)


def bodies(server: FaultServer) -> list[dict[str, Any]]:
    return [request.json() for request in server.requests]


def chat(text: str, usage: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "fake-1", "choices": [{"message": {"content": text}}]}
    if usage is not None:
        body["usage"] = usage
    return body


def openai_run(tmp_path: Path, server: FaultServer, *args: str, **env: str) -> Any:
    return tinyeval(
        tmp_path, *JUDGED, "--judge-model", "openai:fake", "--base-url", server.url, *args, env=env
    )


@pytest.mark.parametrize(
    "count", ["9" * 400, "NaN", "Infinity", "-Infinity", '"12"', "-5", "1.5", "true"]
)
def test_a_usage_number_that_is_not_a_count_leaves_usage_unknown(
    tmp_path: Path, count: str
) -> None:
    # the reply is built as text so the server can send what JSON itself would refuse
    text = json.dumps(chat("PASS\nfine")).removesuffix("}")
    text += f', "usage": {{"prompt_tokens": {count}, "completion_tokens": 1}}}}'
    with fake_openai(lambda body, key: text.encode()) as server:
        done = openai_run(tmp_path, server, "--cache", "c.db")
    assert len(server.requests) == 3
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "please report" not in done.stderr
    rows = rows_of(tmp_path / "tinyeval-results.jsonl")
    assert [judged(row)["verdict"] for row in rows] == ["PASS"] * 3
    assert all(judged(row)["usage"] is None for row in rows)


KEY = "sk-\"quo'te&<amp>-SECRET-1234"


def escaped_forms(key: str) -> list[str]:
    escaped = html.escape(key)
    data = key.encode()
    return [
        escaped,
        escaped.replace("&#x27;", "&#39;"),
        html.escape(key, quote=False),
        base64.b64encode(data).decode(),
        base64.urlsafe_b64encode(data).decode().rstrip("="),
        data.hex(),
        data.hex().upper(),
    ]


def test_a_key_echoed_html_escaped_base64_or_hex_is_stored_nowhere(tmp_path: Path) -> None:
    def reply(body: dict[str, Any], key: str) -> dict[str, Any]:
        verdict = "PASS" if body.get("seed", 0) % 2 == 0 else "FAIL"
        return chat(f"{verdict}\nYour key: " + " | ".join(escaped_forms(key)), {})

    with fake_openai(reply) as server:
        done = openai_run(
            tmp_path,
            server,
            "--votes",
            "3",
            "--review-out",
            "review.jsonl",
            "--cache",
            "c.db",
            OPENAI_API_KEY=KEY,
        )
    assert done.returncode in (0, 1), done.stderr
    assert len(server.requests) == 9  # three cases, three votes each: each reply carried the key
    stored = [tmp_path / "tinyeval-results.jsonl", tmp_path / "review.jsonl"]
    stored += list(tmp_path.glob("c.db*"))
    assert (tmp_path / "review.jsonl").stat().st_size > 0
    for path in stored:
        data = path.read_bytes()
        for form in [KEY, *escaped_forms(KEY)]:
            assert form.encode() not in data, (path.name, form)
    assert "***" in (tmp_path / "tinyeval-results.jsonl").read_text(encoding="utf-8")


LEAKY = "cmd:sh -c 'echo PASS; echo \"[$GITHUB_PAT][$DB_PASS][$OPENAI_API_KEY_2][$API_KEYS]\"'"
SECRETS = {
    "GITHUB_PAT": "ghp_patvalue0123456789",
    "DB_PASS": "db-password-value-42",
    "OPENAI_API_KEY_2": "sk-second-key-value-77",
    "API_KEYS": "key-one-value,key-two-value",
}


def test_a_cmd_judge_sees_only_the_basic_environment(tmp_path: Path) -> None:
    done = tinyeval(tmp_path, *JUDGED, "--judge-model", LEAKY, "--html", "r.html", env=SECRETS)
    assert done.returncode == 0, done.stderr
    for path in (tmp_path / "tinyeval-results.jsonl", tmp_path / "r.html"):
        text = path.read_text(encoding="utf-8")
        assert "[][][][]" in text or path.suffix == ".html"
        for value in SECRETS.values():
            assert value not in text, (path.name, value)
    assert all(value not in done.stdout + done.stderr for value in SECRETS.values())


def test_pass_env_names_what_a_cmd_model_also_sees(tmp_path: Path) -> None:
    done = tinyeval(tmp_path, *JUDGED, "--judge-model", LEAKY, "--pass-env", "DB_PASS", env=SECRETS)
    assert done.returncode == 0, done.stderr
    reasons = [judged(row)["reason"] for row in rows_of(tmp_path / "tinyeval-results.jsonl")]
    assert reasons == ["[][db-password-value-42][][]"] * 3


# --- structured verdicts


def test_the_structured_style_asks_for_a_json_schema_and_reads_the_verdict(
    tmp_path: Path,
) -> None:
    answer = chat(json.dumps({"verdict": "FAIL", "reason": "It invents the amount."}))
    with fake_openai(lambda body, key: answer) as server:
        done = openai_run(tmp_path, server, "--judge-style", "structured", "--no-cache")
    assert len(server.requests) == 3
    for body in bodies(server):
        schema = body["response_format"]["json_schema"]["schema"]
        assert body["response_format"]["type"] == "json_schema"
        assert schema["properties"]["verdict"]["enum"] == ["PASS", "FAIL"]
        assert schema["required"] == ["verdict", "reason"]
    assert done.returncode == 1, done.stderr
    rows = rows_of(tmp_path / "tinyeval-results.jsonl")
    assert [(judged(r)["verdict"], judged(r)["reason"]) for r in rows] == [
        ("FAIL", "It invents the amount.")
    ] * 3


def test_a_structured_reply_out_of_shape_is_unparsed_never_a_pass(tmp_path: Path) -> None:
    with fake_openai(lambda body, key: chat('{"verdict": "PASS"}')) as server:
        done = openai_run(tmp_path, server, "--judge-style", "structured", "--no-cache")
    assert done.returncode == 1, done.stderr
    for row in rows_of(tmp_path / "tinyeval-results.jsonl"):
        assert row["status"] == "fail" and judged(row)["failure"] == "unparsed"
        assert "'verdict', 'reason'" in judged(row)["reason"]


REAL = "http://127.0.0.1:8765"


def _real_server_is_up() -> bool:
    try:
        with urllib.request.urlopen(f"{REAL}/health", timeout=1.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.mark.realllm
@pytest.mark.skipif(not _real_server_is_up(), reason=f"no model server at {REAL}/health")
def test_a_135m_model_gives_parseable_structured_verdicts(tmp_path: Path) -> None:
    model = "openai:SmolLM2-135M-Instruct"
    args = ["--judge-model", model, "--base-url", f"{REAL}/v1", "--no-cache", "--timeout", "120"]
    rows = [{"id": "a", "output": "The limit is 500 pesos."}, {"id": "b", "output": "Hello."}]
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (tmp_path / "cases.jsonl").write_text(text, encoding="utf-8")
    done = tinyeval(tmp_path, *JUDGED, *args, "--judge-style", "structured")
    assert done.returncode in (0, 1), done.stderr
    verdicts = [judged(row)["verdict"] for row in rows_of(tmp_path / "tinyeval-results.jsonl")]
    assert len(verdicts) == 2 and all(v in ("PASS", "FAIL") for v in verdicts)
