"""The blind, resumable labelling session: scripted keys, stdin, a pseudo-terminal, the file."""

from __future__ import annotations

import json
import os
import random
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child import run_tinyeval

from tinyeval.calibration import LabelError, read_labels
from tinyeval.humans.session import label_session, parse_choices, parse_grades
from tinyeval.records import output_fingerprint

ROOT = Path(__file__).resolve().parents[2]
JUDGE_REASON = "QZX-JUDGE-REASON-7731"
JUDGE_RAW = "QZX-RAW-REPLY-4410"
CHECK_DETAIL = "QZX-CHECK-DETAIL-5521"
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)$")


def make_row(case_id: str, output: str | None = None, **extra: object) -> dict:
    row = {
        "id": case_id,
        "category": "refunds",
        "origin": f"ticket-{case_id}",
        "input": f"input of {case_id}",
        "context": f"context of {case_id}",
        "output": f"output of {case_id}" if output is None else output,
        "checks": {"valid_json": False},
        "check_details": {"valid_json": CHECK_DETAIL},
        "judge": {
            "name": "grounded",
            "criterion": "Every claim is supported by the context.",
            "verdict": "FAIL",
            "reason": JUDGE_REASON,
            "raw": [f"FAIL\n{JUDGE_RAW}"],
            "model": "builtin",
            "rubric_fingerprint": "rubric-1",
        },
        "judges": {},
        "status": "fail",
        "judge_model": "builtin",
        "rubric_fingerprint": "rubric-1",
    }
    row.update(extra)
    return row


ROWS = [make_row(f"c{i}") for i in range(6)]


def run_session(tmp_path: Path, keys: list[str], rows: list[dict] = ROWS, **options: object):
    shown: list[str] = []
    out = tmp_path / "labels.jsonl"
    summary = label_session(rows, out, labeler="ana", keys=keys, write=shown.append, **options)
    return summary, "\n".join(shown), out


def shown_ids(text: str) -> list[str]:
    return re.findall(r"\| id: (\S+)", text)


def expected_order(rows: list[dict], seed: int) -> list[str]:
    ids = sorted(row["id"] for row in rows)
    random.Random(seed).shuffle(ids)
    return ids


# ---------------------------------------------------------------- the library session


def test_labels_are_written_with_provenance(tmp_path: Path) -> None:
    summary, text, out = run_session(tmp_path, ["p", "f", "p", "f", "p", "f"])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    order = expected_order(ROWS, 0)
    assert [r["id"] for r in records] == order
    assert [r["label"] for r in records] == ["PASS", "FAIL"] * 3
    first = records[0]
    assert first["labeler"] == "ana"
    assert ISO_UTC.match(first["at"])
    assert (first["rubric_fingerprint"], first["judge_model"]) == ("rubric-1", "builtin")
    assert first["output_fingerprint"] == output_fingerprint(f"output of {order[0]}")
    assert summary.labelled == 6 and summary.remaining == 0 and summary.stopped == "done"
    assert "Done: all 6 cases are labelled" in text


def test_order_is_seeded_and_independent_of_the_file_order(tmp_path: Path) -> None:
    _, text, _ = run_session(tmp_path, ["q"] * 0, seed=7)
    assert shown_ids(text)[:1] == expected_order(ROWS, 7)[:1]
    (tmp_path / "labels.jsonl").unlink()
    _, forward, _ = run_session(tmp_path, ["s"] * 6, seed=7)
    _, backward, _ = run_session(tmp_path, ["s"] * 6, rows=ROWS[::-1], seed=7)
    assert shown_ids(forward) == shown_ids(backward) == expected_order(ROWS, 7)
    _, other, _ = run_session(tmp_path, ["s"] * 6, seed=8)
    assert shown_ids(other) != shown_ids(forward)


def test_the_session_is_blind_to_the_judge(tmp_path: Path) -> None:
    _, text, _ = run_session(tmp_path, ["p"] * 6)
    for secret in (JUDGE_REASON, JUDGE_RAW, CHECK_DETAIL, "valid_json", "rubric-1"):
        assert secret not in text
    # what the labeller does see: the case and the criterion (the question, not the answer)
    assert "input of c0" in text and "context of c0" in text and "output of c0" in text
    assert "criterion: Every claim is supported by the context." in text


def test_resume_skips_labelled_ids_and_keeps_the_order(tmp_path: Path) -> None:
    first, text1, out = run_session(tmp_path, ["p", "f", "q"])
    assert first.stopped == "quit" and first.labelled == 2 and first.remaining == 4
    assert "run the same command to resume" in text1
    second, text2, _ = run_session(tmp_path, ["p"] * 4)
    assert second.already_labelled == 2 and second.labelled == 4
    assert shown_ids(text1)[:2] + shown_ids(text2) == expected_order(ROWS, 0)
    assert "2 already labelled, 4 to go" in text2
    third, text3, _ = run_session(tmp_path, [])
    assert third.remaining == 0 and "0 to go" in text3
    assert len(read_labels(out)) == 6


def test_undo_withdraws_the_last_label_and_shows_the_case_again(tmp_path: Path) -> None:
    _, text, out = run_session(tmp_path, ["p", "u", "f", "q"])
    first = expected_order(ROWS, 0)[0]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r.get("label"), r.get("undo")) for r in lines] == [
        (first, "PASS", None),
        (first, None, True),
        (first, "FAIL", None),
    ]
    assert read_labels(out) == {first: lines[2]}
    assert shown_ids(text).count(first) == 2
    assert f"withdrew the label of {first!r}" in text


def test_undo_after_a_skip_steps_back_without_writing(tmp_path: Path) -> None:
    summary, text, out = run_session(tmp_path, ["u", "s", "u", "p", "q"])
    first = expected_order(ROWS, 0)[0]
    assert "nothing to undo in this session" in text
    assert f"back to {first!r}" in text
    assert list(read_labels(out)) == [first]
    assert summary.skipped == 0 and summary.undone == 0


def test_undo_after_resume_only_reaches_this_session(tmp_path: Path) -> None:
    run_session(tmp_path, ["p", "q"])
    _, text, out = run_session(tmp_path, ["u", "q"])
    assert "nothing to undo in this session" in text
    assert len(read_labels(out)) == 1


def test_a_break_is_suggested_every_n_labels(tmp_path: Path) -> None:
    rows = [make_row(f"c{i}") for i in range(8)]
    _, text, _ = run_session(tmp_path, ["p"] * 7 + ["q"], rows=rows, break_every=3)
    assert text.count("consider a break") == 2  # after the 3rd and the 6th label
    assert "You have given 3 labels" in text and "You have given 6 labels" in text
    (tmp_path / "labels.jsonl").unlink()
    _, quiet, _ = run_session(tmp_path, ["p"] * 8, rows=rows, break_every=0)
    assert "consider a break" not in quiet


def test_unknown_keys_and_words(tmp_path: Path) -> None:
    summary, text, out = run_session(tmp_path, ["x", "PASS", "fail", "skip", "quit"])
    assert "unknown key 'x'" in text
    assert [r["label"] for r in read_labels(out).values()] == ["PASS", "FAIL"]
    assert summary.skipped == 1 and summary.stopped == "quit"


def test_end_of_input_stops_cleanly(tmp_path: Path) -> None:
    summary, text, _ = run_session(tmp_path, ["p"])
    assert summary.stopped == "end of input" and summary.labelled == 1
    assert "Stopped (end of input)" in text


def test_grades_and_other_choices(tmp_path: Path) -> None:
    _, text, out = run_session(tmp_path, ["3", "5", "9", "1", "q"], choices=parse_grades("1-5"))
    assert [r["label"] for r in read_labels(out).values()] == [3, 5, 1]
    assert "keys: 1..5 grade" in text and "unknown key '9'" in text
    (out).unlink()
    _, _, out = run_session(tmp_path, ["a", "t", "b", "q"], choices=parse_choices("a=A,b=B,t=TIE"))
    assert [r["label"] for r in read_labels(out).values()] == ["A", "TIE", "B"]


@pytest.mark.parametrize(
    ("text", "message"),
    [("s=SKIP", "reserved"), ("a=A,A=B", "its own key"), ("a", "KEY=LABEL"), ("q=Q", "reserved")],
)
def test_bad_choices(text: str, message: str) -> None:
    with pytest.raises(LabelError, match=message):
        parse_choices(text)


@pytest.mark.parametrize("text", ["5-1", "1", "a-b", "3-3"])
def test_bad_grades(text: str) -> None:
    with pytest.raises(LabelError, match="LOW-HIGH"):
        parse_grades(text)


def test_setup_errors_name_the_parameter_never_an_option(tmp_path: Path) -> None:
    # the library names its parameter (field=); only the command line spells it as an option
    with pytest.raises(LabelError) as grades:
        parse_grades("5-1")
    with pytest.raises(LabelError) as choices:
        parse_choices("a")
    with pytest.raises(LabelError) as labeler:
        label_session(ROWS, tmp_path / "l.jsonl", labeler=" ", keys=[])
    found = [(e.value.field, str(e.value)) for e in (grades, choices, labeler)]
    assert [field for field, _ in found] == ["grades", "choices", "labeler"]
    assert not any("--" in text for _, text in found)


def test_rows_without_output_are_counted_not_shown(tmp_path: Path) -> None:
    rows = [make_row("a"), {**make_row("b"), "output": None}]
    summary, text, _ = run_session(tmp_path, ["p"], rows=rows)
    assert summary.not_shown == 1 and summary.total == 1
    assert "1 row has no output and is not shown" in text
    assert "Labelling 1 case into" in text and "Done: the 1 case is labelled" in text
    assert shown_ids(text) == ["a"]


def test_long_cases_are_paged(tmp_path: Path) -> None:
    long = "\n".join(f"line {i}" for i in range(30))
    rows = [make_row("a", output=long), make_row("b", output=long)]
    order = expected_order(rows, 0)
    # first case: Enter through the pages, then label; second: label at the first page break
    keys = ["", "", "", "p", "f"]
    _, text, out = run_session(tmp_path, keys, rows=rows, page_lines=12, width=60)
    assert text.count("-- more") >= 4
    assert "line 29" in text
    assert {key: r["label"] for key, r in read_labels(out).items()} == {
        order[0]: "PASS",
        order[1]: "FAIL",
    }


def test_an_unknown_key_at_a_page_break_shows_the_keys_and_stays(tmp_path: Path) -> None:
    long = "\n".join(f"line {i}" for i in range(30))
    rows = [make_row("a", output=long)]
    # "x" at the first page break: the keys again, the same page break; then Enter, then p
    _, text, out = run_session(tmp_path, ["x", "", "", "", "p"], rows=rows, page_lines=12)
    complaints = [line for line in text.splitlines() if line.startswith("unknown key 'x'")]
    assert complaints == [
        "unknown key 'x'; Enter next page, keys: p PASS, f FAIL, s skip, u undo, q quit"
    ]
    before, after = text.split(complaints[0])
    assert "line 29" not in before and "line 29" in after
    assert [r["label"] for r in read_labels(out).values()] == ["PASS"]


def test_without_a_labeler_name_the_login_or_anonymous_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import getpass

    from tinyeval.humans.session import default_labeler

    for variable in ("USER", "USERNAME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(getpass, "getuser", lambda: "login-name")
    assert default_labeler() == "login-name"
    out = tmp_path / "labels.jsonl"
    label_session([make_row("a")], out, keys=["p"], write=lambda text: None)
    assert read_labels(out)["a"]["labeler"] == "login-name"

    def no_login() -> str:
        raise OSError("No username set in the environment")

    monkeypatch.setattr(getpass, "getuser", no_login)
    assert default_labeler() == "anonymous"
    assert default_labeler({"USER": "ana"}) == "ana"


def test_read_labels_records_know_their_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"id": "a", "label": "PASS"}\n\n{"id": "b", "label": "FAIL"}\n')
    records = read_labels(path)
    assert (records["b"].source, records["b"].line) == (str(path), 3)
    assert json.dumps(records["b"]) == '{"id": "b", "label": "FAIL"}'


def test_wrapping_follows_the_width(tmp_path: Path) -> None:
    rows = [make_row("a", output="word " * 60)]
    _, text, _ = run_session(tmp_path, ["p"], rows=rows, width=40)
    body = text.split("OUTPUT\n", 1)[1].split("\n")
    assert all(len(line) <= 40 for line in body[:5])
    assert body[0].startswith("  word word")


def test_session_refuses_bad_setup(tmp_path: Path) -> None:
    with pytest.raises(LabelError, match="labeler"):
        label_session(ROWS, tmp_path / "l.jsonl", labeler=" ", keys=[])
    with pytest.raises(LabelError, match="more than once"):
        label_session([make_row("a"), make_row("a")], tmp_path / "l.jsonl", labeler="x", keys=[])


# ---------------------------------------------------------------- reading labels


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "a", "label": "PASS"}', "{oops"], ":2: not valid JSON"),
        (['{"id": "a'], ":1: not valid JSON: Unterminated string starting at column 8"),
        (['["a"]'], ":1: expected a JSON object, got a list"),
        (['"PASS"'], ':1: expected a JSON object, got string "PASS"'),
        (['{"label": "PASS"}'], ":1: field 'id'"),
        (['{"id": "a"}'], ":1: expected a field 'label'"),
        (['{"id": "a", "label": null}'], ":1: field 'label'"),
        (['{"id": "a", "label": true}'], ":1: field 'label'"),
        (['{"id": "a", "undo": true}'], ":1: undo for id 'a', which has no label standing"),
    ],
)
def test_read_labels_errors_name_file_and_line(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LabelError, match=re.escape(f"{path}{message}")):
        read_labels(path)


def test_read_labels_last_label_wins_and_undo_reverts_to_the_previous(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    lines = [
        {"id": "a", "label": "PASS"},
        {"id": "a", "label": "FAIL"},
        {"id": "b", "label": 4},
        {"id": "a", "undo": True},
        {"id": "c", "label": "FAIL"},
        {"id": "c", "undo": True},
    ]
    path.write_text("\n".join(map(json.dumps, lines)) + "\n\n")
    assert {k: r["label"] for k, r in read_labels(path).items()} == {"a": "PASS", "b": 4}


# ---------------------------------------------------------------- the command line


def write_results(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def cli(*args: str, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    return run_tinyeval(args, ROOT, env, stdin=stdin)


def test_cli_label_reads_one_key_per_line_from_a_pipe(tmp_path: Path) -> None:
    results = write_results(tmp_path / "results.jsonl", ROWS)
    out = tmp_path / "labels.jsonl"
    done = cli("label", str(results), "--out", str(out), "--labeler", "bea", stdin="p\nf\n\nq\n")
    assert done.returncode == 0, done.stderr
    assert JUDGE_REASON not in done.stdout and JUDGE_RAW not in done.stdout
    labels = read_labels(out)
    assert [r["label"] for r in labels.values()] == ["PASS", "FAIL"]
    assert {r["labeler"] for r in labels.values()} == {"bea"}

    again = cli(
        "label", str(results), "--out", str(out), "--json", stdin="u\ns\np\n", env={"USER": "bea"}
    )
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["already_labelled"] == 2 and summary["labelled"] == 1
    assert summary["skipped"] == 1 and summary["stopped"] == "end of input"
    assert "nothing to undo" in again.stderr  # the session goes to stderr with --json
    assert read_labels(out)[expected_order(ROWS, 0)[3]]["labeler"] == "bea"
    # a second labeler is shown every case again: a case is done for whoever labelled it
    other = cli(
        "label", str(results), "--out", str(out), "--json", stdin="q\n", env={"USER": "cid"}
    )
    assert json.loads(other.stdout)["already_labelled"] == 0


def test_cli_label_bad_input_is_one_line(tmp_path: Path) -> None:
    results = write_results(tmp_path / "results.jsonl", ROWS)
    bad = cli(
        "label",
        str(results),
        "--out",
        str(tmp_path / "l.jsonl"),
        "--labeler",
        "a",
        "--grades",
        "5-1",
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "grades: expected LOW-HIGH" in bad.stderr


def _read_until(fd: int, needles: tuple[bytes, ...], seen: bytearray, log: bytearray) -> bytes:
    """Read the terminal until one of ``needles`` shows up in ``seen``; return it."""
    deadline = time.monotonic() + 20.0
    while True:
        for needle in needles:
            if needle in seen:
                return needle
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out waiting for {needles}; got {bytes(seen[-400:])!r}")
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"terminal closed before {needles}; got {bytes(seen)!r}")
            seen.extend(chunk)
            log.extend(chunk)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_cli_label_on_a_terminal_takes_single_key_presses_and_pages(tmp_path: Path) -> None:
    pty = pytest.importorskip("pty")
    long = "\n".join(f"line {i}" for i in range(40))
    rows = [make_row("a", output=long), make_row("b"), make_row("c")]
    results = write_results(tmp_path / "results.jsonl", rows)
    out = tmp_path / "labels.jsonl"
    order = expected_order(rows, 0)

    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "70", "LINES": "20"}
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tinyeval",
            "label",
            str(results),
            "--out",
            str(out),
            "--labeler",
            "tty-user",
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=ROOT,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    seen, log = bytearray(), bytearray()
    pages = 0
    try:
        for case_id in order:
            _read_until(master, (f"id: {case_id}".encode(),), seen, log)
            while _read_until(master, (b"-- more", b"your label?"), seen, log) == b"-- more":
                pages += 1
                seen.clear()
                os.write(master, b"\r")  # Enter: the next page
            seen.clear()
            os.write(master, b"f" if case_id == "a" else b"p")  # one key press, no Enter
            _read_until(master, (b"-> ",), seen, log)
        _read_until(master, (b"Done",), seen, log)
        assert child.wait(timeout=20) == 0
        if sys.platform.startswith("linux"):  # the master reports the terminal's settings
            import termios

            local_modes = termios.tcgetattr(master)[3]
            assert local_modes & termios.ICANON and local_modes & termios.ECHO  # restored
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
    assert pages >= 2  # 40 output lines on a 20-line terminal
    assert b"line 39" in log and JUDGE_REASON.encode() not in log
    labels = read_labels(out)
    assert {key: r["label"] for key, r in labels.items()} == {
        "a": "FAIL",
        "b": "PASS",
        "c": "PASS",
    }
    assert {r["labeler"] for r in labels.values()} == {"tty-user"}


def test_the_command_offers_only_judged_rows_unless_asked(tmp_path: Path) -> None:
    rows = [
        {"id": "j1", "category": "s", "status": "pass", "output": "uno",
         "judges": {"u": {"verdict": "PASS"}}, "judge": {"verdict": "PASS"}},
        {"id": "c1", "category": "t", "status": "pass", "output": "dos", "judges": {},
         "checks": {"contains:dos": True}},
    ]  # fmt: skip
    results = tmp_path / "rows.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    root = Path(__file__).resolve().parents[2]

    def labelled(*extra: str) -> set[str]:
        out = tmp_path / f"labels{len(extra)}.jsonl"
        subprocess.run(
            [sys.executable, "-m", "tinyeval", "label", str(results), "--out", str(out),
             "--labeler", "ana", *extra],
            input="p\np\n", text=True, capture_output=True, cwd=root, check=True,
        )  # fmt: skip
        return {json.loads(line)["id"] for line in out.read_text().splitlines()}

    assert labelled() == {"j1"}
    assert labelled("--all-rows") == {"j1", "c1"}
