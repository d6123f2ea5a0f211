"""A corpus of hostile inputs and faults for every reader and server door of the package.

Bad input (every file a command reads, every setting): exit 2, one line, no traceback, nothing
written. A bad reply (HTTP server, ``cmd:`` model, batch provider): an error row for its case, or
exit 3, never the internal-error line, never a hang. Every child runs under the memory limit and
the timeout of :mod:`hostile`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from faults import Fault, FaultServer, Request
from hostile import ROOT, assert_refused, bounded_run, limit_memory, refused_run

DEEP = 100_000
CASES = '{"id": "a", "output": "hola", "category": "c"}\n{"id": "b", "output": "adios"}\n'
ROW = {"id": "a", "category": "c", "output": "hola", "checks": {"max_chars": True},
       "check_details": {}, "judges": {}, "status": "pass", "error": None}  # fmt: skip
GOOD = json.dumps(ROW) + "\n"
LABELS = '{"id": "a", "label": "PASS"}\n'
JUDGE = "def judge(prompt):\n    return 'PASS\\nfine'\n"
PY_JUDGE = ["--criterion", "Is polite.", "--judge-model", "py:judge_mod:judge"]


def _deep_row() -> str:
    return GOOD + '{"id": "x", "a": ' + "[" * DEEP + "]" * DEEP + "}\n"


def _huge_int_row() -> str:
    return GOOD + '{"id": "x", "n": ' + "7" * 6000 + "}\n"


def _otel(value: dict[str, Any], **span: Any) -> str:
    attribute = {"key": "gen_ai.prompt", "value": value}
    base = {"traceId": "t1", "spanId": "s1", "name": "chat", "startTimeUnixNano": "1",
            "attributes": [attribute]}  # fmt: skip
    trace = {"resourceSpans": [{"scopeSpans": [{"spans": [{**base, **span}]}]}]}
    return json.dumps(trace) + "\n"


# name -> (files: name -> text or bytes, argv, what the one line says)
REFUSED: dict[str, tuple[dict[str, str | bytes], list[str], str | None]] = {
    # every file read by a command other than run's cases: as /dev/zero, deep, a huge integer
    "gate-dev-zero": ({}, ["gate", "/dev/zero"], "/dev/zero"),
    "report-dev-zero": ({}, ["report", "/dev/zero", "--html", "r.html"], "/dev/zero"),
    "merge-dev-zero": ({}, ["merge", "good.jsonl", "/dev/zero", "--out", "m.jsonl"], "/dev/zero"),
    "merge-deep": ({"deep.jsonl": _deep_row()}, ["merge", "deep.jsonl", "--out", "m.jsonl"], None),
    "merge-huge-int": (
        {"big.jsonl": _huge_int_row()},
        ["merge", "big.jsonl", "--out", "m.jsonl"],
        None,
    ),
    "compare-dev-zero-before": ({}, ["compare", "/dev/zero", "good.jsonl"], "/dev/zero"),
    "compare-dev-zero-after": ({}, ["compare", "good.jsonl", "/dev/zero"], "/dev/zero"),
    "compare-deep": ({"deep.jsonl": _deep_row()}, ["compare", "good.jsonl", "deep.jsonl"], None),
    "cost-results-dev-zero": ({}, ["cost", "--results", "/dev/zero"], "/dev/zero"),
    "cost-results-huge-int": (
        {"big.jsonl": _huge_int_row()},
        ["cost", "--results", "big.jsonl"],
        None,
    ),
    "cost-cases-dev-zero": ({}, ["cost", "/dev/zero"], "/dev/zero"),
    "label-dev-zero": ({}, ["label", "/dev/zero", "--out", "l.jsonl"], "/dev/zero"),
    "label-deep": ({"deep.jsonl": _deep_row()}, ["label", "deep.jsonl", "--out", "l.jsonl"], None),
    "label-out-a-directory": ({"d/x": ""}, ["label", "good.jsonl", "--out", "d"], None),
    "pairwise-dev-zero": (
        {},
        ["pairwise", "/dev/zero", "good.jsonl", "--criterion", "Is polite."],
        "/dev/zero",
    ),
    "pairwise-deep": (
        {"deep.jsonl": _deep_row()},
        ["pairwise", "good.jsonl", "deep.jsonl", "--criterion", "Is polite."],
        None,
    ),
    "calibrate-labels-dev-zero": ({}, ["calibrate", "good.jsonl", "/dev/zero"], "/dev/zero"),
    "calibrate-results-dev-zero": ({}, ["calibrate", "/dev/zero", "labels.jsonl"], "/dev/zero"),
    "calibrate-labels-deep": (
        {"deep.jsonl": '{"id": "a", "label": ' + "[" * DEEP + "]" * DEEP + "}\n"},
        ["calibrate", "good.jsonl", "deep.jsonl"],
        None,
    ),
    "calibrate-labels-one-long-line": (
        {"long.jsonl": '{"id": "a", "label": "PASS", "' + "k" * 500_000 + "\n"},
        ["calibrate", "good.jsonl", "long.jsonl"],
        None,
    ),
    "calibrate-only-dev-zero": (
        {},
        ["calibrate", "good.jsonl", "labels.jsonl", "--only", "/dev/zero"],
        "/dev/zero",
    ),
    "run-only-dev-zero": ({}, ["run", "cases.jsonl", "--only", "/dev/zero"], "/dev/zero"),
    "run-calibration-dev-zero": (
        {},
        ["run", "cases.jsonl", *PY_JUDGE, "--calibration", "/dev/zero"],
        "/dev/zero",
    ),
    "run-calibration-deep": (
        {"cal.json": "[" * DEEP + "]" * DEEP},
        ["run", "cases.jsonl", *PY_JUDGE, "--calibration", "cal.json"],
        "cal.json",
    ),
    "run-calibration-not-one": (
        {"cal.json": '{"format": "tinyeval-calibration", "version": 1, "correction": NaN}'},
        ["run", "cases.jsonl", *PY_JUDGE, "--calibration", "cal.json"],
        "cal.json",
    ),
    "run-rejudge-dev-zero": (
        {},
        ["run", "cases.jsonl", "--rejudge", "/dev/zero", *PY_JUDGE],
        "/dev/zero",
    ),
    "run-rejudge-deep": (
        {"deep.jsonl": _deep_row()},
        ["run", "cases.jsonl", "--rejudge", "deep.jsonl", *PY_JUDGE],
        None,
    ),
    "run-rubric-deep-json": (
        {"rubric.json": "[" * DEEP + "]" * DEEP},
        ["run", "cases.jsonl", "--rubric", "rubric.json"],
        "rubric.json",
    ),
    "run-template-unknown-field": (
        {"t.txt": "Answer {nonsense.field}"},
        [
            "run",
            "cases.jsonl",
            "--generate-model",
            "builtin",
            "--regenerate",
            "--prompt-template",
            "t.txt",
        ],
        None,
    ),
    # settings and outputs
    "run-out-a-directory": ({"d/x": ""}, ["run", "cases.jsonl", "--out", "d"], None),
    "run-html-a-directory": ({"d/x": ""}, ["run", "cases.jsonl", "--html", "d"], None),
    "run-cache-a-directory": ({"d/x": ""}, ["run", "cases.jsonl", *PY_JUDGE, "--cache", "d"], None),
    "run-cache-dev-full": ({}, ["run", "cases.jsonl", *PY_JUDGE, "--cache", "/dev/full"], None),
    "run-cache-not-sqlite": (
        {"c.db": b"this is not a database at all" * 100},
        ["run", "cases.jsonl", *PY_JUDGE, "--cache", "c.db"],
        "c.db",
    ),
    "run-dawid-skene-without-jury": ({}, ["run", "cases.jsonl", "--dawid-skene"], None),
    "run-max-line-bytes-zero": ({}, ["run", "cases.jsonl", "--max-line-bytes", "0"], None),
    "run-max-response-bytes-huge": (
        {},
        ["run", "cases.jsonl", *PY_JUDGE, "--max-response-bytes", "9" * 40],
        None,
    ),
    "run-max-cost-nan": ({}, ["run", "cases.jsonl", *PY_JUDGE, "--max-cost", "nan"], None),
    "run-batch-poll-inf": ({}, ["run", "cases.jsonl", "--batch-poll", "inf"], None),
    "run-shard-zero": ({}, ["run", "cases.jsonl", "--shard", "0/0"], None),
    "run-pass-env-bad-name": (
        {},
        ["run", "cases.jsonl", *PY_JUDGE, "--pass-env", "A=B"],
        None,
    ),
    "run-base-url-not-http": (
        {},
        [
            "run",
            "cases.jsonl",
            "--criterion",
            "Is polite.",
            "--judge-model",
            "openai:m",
            "--base-url",
            "file:///etc/passwd",
        ],
        None,
    ),
    "run-unknown-model-kind": (
        {},
        ["run", "cases.jsonl", "--criterion", "Is polite.", "--judge-model", "nope:m"],
        None,
    ),
    "run-executor-unknown": ({}, ["run", "cases.jsonl", "--executor", "ray://x"], None),
    "run-field-nul": ({}, ["run", "cases.jsonl", "--field", "input=a\x01b"], None),
    "run-retrieval-threshold-bad": (
        {},
        ["run", "cases.jsonl", "--retrieval-threshold", "recall@0=2"],
        None,
    ),
    # case formats beyond those of test_hostile_inputs: chat, OTel, retrieval
    "chat-system-number": (
        {
            "chat.jsonl": '{"id": "a", "messages": [{"role": "user", "content": "hi"}], '
            '"system": 5}\n'
        },
        ["run", "chat.jsonl"],
        "chat.jsonl:1",
    ),
    "otel-deep-string-value": (
        {"t.json": _otel({"stringValue": "[" * DEEP + "]" * DEEP})},
        ["run", "t.json", "--format", "otel"],
        "t.json",
    ),
    "otel-int-infinity": (
        {"t.json": _otel({"intValue": "Infinity"})},
        ["run", "t.json", "--format", "otel"],
        "t.json",
    ),
    "otel-start-infinity": (
        {"t.json": _otel({"stringValue": "hi"}, startTimeUnixNano="Infinity")},
        ["run", "t.json", "--format", "otel"],
        "t.json",
    ),
    "otel-dev-zero": ({}, ["run", "/dev/zero", "--format", "otel"], "/dev/zero"),
    "retrieval-gain-huge": (
        {
            "r.jsonl": '{"id": "a", "output": "x", "retrieved": ["d1"], "relevant": {"d1": '
            + "9" * 400
            + "}}\n"
        },
        ["run", "r.jsonl"],
        "r.jsonl:1",
    ),
    "csv-one-huge-cell": (
        {"c.csv": "id,output\na," + "x" * 300_000 + "\n"},
        ["run", "c.csv", "--max-line-bytes", "1000"],
        "c.csv",
    ),
}


def _write(folder: Path, files: dict[str, str | bytes]) -> None:
    base = {"cases.jsonl": CASES, "good.jsonl": GOOD, "labels.jsonl": LABELS,
            "judge_mod.py": JUDGE}  # fmt: skip
    for name, content in {**base, **files}.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_hostile_input_is_refused_in_one_line_writing_nothing(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, argv, says = REFUSED[name]
    _write(tmp_path, files)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # a py: model's import writes nothing
    done, written = refused_run(argv, tmp_path)
    line = assert_refused(done, written, name, says=says)
    assert line.startswith("tinyeval: error:") or "tinyeval" in line, line


# --- bad replies from an OpenAI-compatible server: an error row for the case, never exit 3's
# internal-error line, never a hang

HUGE = "9" * 400
REPLIES: dict[str, bytes] = {
    "not-json": b"<html>busy</html>",
    "a-list": b"[1, 2, 3]",
    "no-choices": b'{"choices": []}',
    "content-number": b'{"choices": [{"message": {"content": 7}}]}',
    "content-null": b'{"choices": [{"message": {"content": null}}]}',
    "deep": b'{"choices": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    "huge-usage": (
        b'{"choices": [{"message": {"content": "PASS"}}], "usage": {"prompt_tokens": '
        + HUGE.encode()
        + b', "completion_tokens": 1}}'
    ),
    "nan-usage": b'{"choices": [{"message": {"content": "PASS"}}], "usage": '
    b'{"prompt_tokens": NaN, "completion_tokens": Infinity}}',
    "invalid-utf8": b'{"choices": [{"message": {"content": "\xff\xfe"}}]}',
    "surrogate": b'{"choices": [{"message": {"content": "PASS \\ud800"}}]}',
    "too-long": b'{"choices": [{"message": {"content": "' + b"x" * 300_000 + b'"}}]}',
    "duplicate-key": b'{"choices": [{"message": {"content": "PASS", "content": "FAIL"}}]}',
}


def scripted(request: Request) -> tuple[int, bytes]:
    """The reply chosen by the case id in the prompt (``case=NAME``), else a plain PASS."""
    prompt = request.body.decode("utf-8", "replace")
    body = b'{"choices": [{"message": {"content": "PASS"}}]}'
    for name, reply in REPLIES.items():
        if f"case={name}." in prompt:
            body = reply
    return 200, body


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]
    return {row["id"]: row for row in rows}


def _assert_no_internal_error(done: subprocess.CompletedProcess[str], what: str) -> None:
    assert "Traceback" not in done.stderr, f"{what}: {done.stderr[-2000:]}"
    assert "please report it" not in done.stderr + done.stdout, f"{what}: {done.stderr[-1000:]}"


def test_bad_server_replies_are_error_rows_for_their_cases(tmp_path: Path) -> None:
    names = sorted(REPLIES)
    cases = [{"id": name, "output": f"case={name}.", "category": "c"} for name in names]
    cases.append({"id": "fine", "output": "case=fine.", "category": "c"})
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    # on 127.0.0.1: at most 200 requests, and it stops itself after 50 s
    with FaultServer([Fault.reply(scripted)], max_requests=200, lifetime=50.0) as server:
        done = bounded_run(
            ["run", "cases.jsonl", "--criterion", "Is polite.", "--judge-model", "openai:m",
             "--base-url", server.url, "--max-response-bytes", "200000", "--timeout", "5",
             "--max-errors", "100", "--no-cache", "--default-threshold", "0.1"],
            tmp_path,
        )  # fmt: skip
    _assert_no_internal_error(done, "bad replies")
    rows = _rows(tmp_path / "tinyeval-results.jsonl")
    assert set(rows) == {*names, "fine"}, sorted(rows)
    assert rows["fine"]["status"] == "pass", (rows["fine"]["error"], done.stderr[-800:])
    not_read = {"not-json", "a-list", "no-choices", "content-number", "deep", "invalid-utf8",
                "too-long"}  # fmt: skip
    for name in not_read:
        assert rows[name]["status"] == "error", (name, rows[name]["status"], rows[name]["error"])
    for name in ("huge-usage", "nan-usage"):  # a reply with usage that is not a count is read
        assert rows[name]["status"] in ("pass", "error"), rows[name]
    assert done.returncode in (0, 1, 3), done.stderr


# --- cmd: models that misbehave

CMD = """import sys, time
prompt = sys.stdin.read()
for name in ("exit-1", "invalid-utf8", "empty", "sleeps", "floods", "stderr-flood"):
    if "case=" + name + "." in prompt:
        break
else:
    name = "fine"
if name == "exit-1":
    sys.exit(1)
if name == "invalid-utf8":
    sys.stdout.buffer.write(b"PASS \\xff\\xfe")
if name == "empty":
    pass
if name == "sleeps":
    time.sleep(30)
if name == "floods":
    chunk = b"PASS " * 20000
    while True:
        sys.stdout.buffer.write(chunk)
if name == "stderr-flood":
    sys.stderr.write("x" * 5000000)
    sys.exit(2)
if name == "fine":
    print("PASS")
"""


def test_misbehaving_cmd_models_are_error_rows_for_their_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each thread's malloc arena reserves address space: without this cap, the memory limit
    # itself (not the replies) can refuse a thread
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    names = ["exit-1", "invalid-utf8", "empty", "sleeps", "floods", "stderr-flood"]
    cases = [{"id": n, "output": f"case={n}.", "category": "c"} for n in [*names, "fine"]]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "judge_cmd.py").write_text(CMD, encoding="utf-8")
    command = f"cmd:{sys.executable} judge_cmd.py"
    done = bounded_run(
        ["run", "cases.jsonl", "--criterion", "Is polite.", "--judge-model", command,
         "--timeout", "3", "--max-response-bytes", "100000", "--max-errors", "100",
         "--no-cache", "--concurrency", "3", "--default-threshold", "0.1"],
        tmp_path,
    )  # fmt: skip
    _assert_no_internal_error(done, "cmd models")
    rows = _rows(tmp_path / "tinyeval-results.jsonl")
    assert rows["fine"]["status"] == "pass", (rows["fine"]["error"], done.stderr[-800:])
    for name in ("exit-1", "sleeps", "floods", "stderr-flood"):
        assert rows[name]["status"] == "error", (name, rows[name])
        assert len(rows[name]["error"]) < 2000, (name, len(rows[name]["error"]))
    for name in ("invalid-utf8", "empty"):  # never a pass that no verdict gave
        assert rows[name]["status"] != "pass" or name == "invalid-utf8", (name, rows[name])
    assert done.returncode in (0, 1, 3), done.stderr


# --- batches: a provider whose status never ends, or is garbage


def test_a_batch_that_never_ends_stops_the_run_incomplete_in_one_line(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    try:
        from tests.scale.fake_batch_server import KEY_OPENAI, FakeBatchServer
    finally:
        sys.path.remove(str(ROOT))
    (tmp_path / "cases.jsonl").write_text(CASES)
    for body in (b'{"status": "dreaming"}', b'{"status": ' + b"[" * DEEP + b"]" * DEEP + b"}"):
        with FakeBatchServer(delay_polls=0, status_body=body, lifetime=40) as server:
            env = {"OPENAI_API_KEY": KEY_OPENAI, "OPENAI_BASE_URL": server.openai_base}
            done = bounded_run(
                ["run", "cases.jsonl", "--criterion", "Is good.", "--judge-model", "openai:m",
                 "--batch", "--batch-poll", "0.05", "--batch-max-wait", "1", "--timeout", "5",
                 "--out", "rows.jsonl"],
                tmp_path, env,
            )  # fmt: skip
        _assert_no_internal_error(done, f"batch status {body[:20]!r}")
        assert done.returncode == 3, done.stderr
        assert KEY_OPENAI not in done.stdout + done.stderr


# --- the pytest plugin: bad input is one tinyeval: line, exit 4, never INTERNALERROR


@pytest.mark.parametrize(
    "suite",
    [
        "x = " + "[" * DEEP + "]" * DEEP + "\n",
        'cases = "cases.jsonl"\nconcurrency = ' + "9" * 5000 + "\n",
        'cases = "cases.jsonl"\n[reports]\nout = "a\\u0000b"\n',
        'cases = "/dev/zero"\n',
    ],
    ids=["deep", "huge-int", "nul-path", "dev-zero-cases"],
)
def test_the_pytest_plugin_refuses_a_hostile_suite_in_one_line(tmp_path: Path, suite: str) -> None:
    (tmp_path / "cases.jsonl").write_text(CASES)
    (tmp_path / "suite.toml").write_text(suite, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--tinyeval=suite.toml"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        preexec_fn=limit_memory, check=False,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-2000:]
    assert done.returncode == 4, out[-2000:]
    said = [line for line in out.splitlines() if "tinyeval:" in line]
    assert len(said) == 1 and len(said[0]) < 1200, out[-2000:]
