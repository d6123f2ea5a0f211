"""Text from data cannot forge CI output: ids and categories reach the terminal, the job summary,
the annotations, the Markdown, HTML and JUnit reports neutralised for each (``run`` and ``gate``
through the CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = [
    "::stop-commands::tok",
    "x\n::error title=Y::forged",
    "[Approve deploy](https://e.x)",
    "a\u202eb",
    "![img](https://e.x/i.png)<img src=x onerror=alert(1)>",
    "tab\there\r::warning::cr",
]
OURS = ("::error file=", "::warning file=", "::error title=tinyeval")  # tinyeval's commands


def tinyeval(folder: Path, *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr, decoded without turning a CR into a line break."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    env["GITHUB_STEP_SUMMARY"] = str(folder / "summary.md")
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", *args],
        cwd=folder, env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    return done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


def scene(folder: Path) -> None:
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as f:
        for i, case_id in enumerate(HOSTILE):
            category = HOSTILE[(i + 1) % len(HOSTILE)]
            record = {"id": case_id, "category": category, "output": "one two three",
                      "expect": {"max_words": 2}}  # fmt: skip
            f.write(json.dumps(record) + "\n")


def assert_no_forged_command(text: str) -> None:
    assert "\r" not in text  # the runner would end a line there
    for line in text.split("\n"):  # GitHub's runner reads a command after trimming the line
        stripped = line.strip()
        if stripped.startswith("::"):
            assert stripped.startswith(OURS), line
            head = stripped[2:].split("::", 1)[0]  # the command and its properties
            assert ":" not in head, line  # data in a property cannot end it early
        assert "##[" not in line


def assert_inert_markdown(text: str) -> None:
    assert "[Approve deploy](" not in text and "![img](" not in text
    assert "<img" not in text and "\u202e" not in text
    assert "\\[Approve deploy\\]" in text


def test_run_and_gate_neutralise_every_destination(tmp_path: Path) -> None:
    scene(tmp_path)
    code, out, err = tinyeval(tmp_path, "run", "cases.jsonl", "--out", "rows.jsonl",
                    "--default-threshold", "0.5", "--junit", "j.xml", "--html", "h.html",
                    "--markdown", "m.md")  # fmt: skip
    assert code == 1, err
    gate_code, gate_out, gate_err = tinyeval(tmp_path, "gate", "rows.jsonl", "--github")
    assert gate_code == 1, gate_err
    for said in (out + err, gate_out + gate_err):
        assert_no_forged_command(said)
        assert "\u202e" not in said
        assert "x\\x0a::error title=Y::forged" in said  # shown, escaped
    annotations = [line for line in out.split("\n") if line.startswith("::")]
    assert len(annotations) == len(HOSTILE)  # one per blocking category, and no more
    assert_inert_markdown((tmp_path / "m.md").read_text(encoding="utf-8"))
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert_inert_markdown(summary)
    assert_no_forged_command(summary)
    page = (tmp_path / "h.html").read_text(encoding="utf-8")
    assert "\u202e" not in page and "<img src=x" not in page and "a\\u202eb" in page
    junit = (tmp_path / "j.xml").read_text(encoding="utf-8")
    assert "\u202e" not in junit and "\r" not in junit
    names = {case.get("name") for case in ET.fromstring(junit).iter("testcase")}
    assert "x\\x0a::error title=Y::forged" in names and "a\\u202eb" in names
