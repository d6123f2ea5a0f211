"""The session and the summary reach extras only through _EXTRAS: a plain run loads none of
theirs, an executor, a section or an observer is found by its name in the table."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tinyeval
from tinyeval import session as session_module
from tinyeval.errors import InputError
from tinyeval.report import Section
from tinyeval.runner import PreparedCases
from tinyeval.session import RunSettings, Session, open_executor

ROOT = Path(__file__).resolve().parent.parent

PLAIN_RUN = """
import sys
from tinyeval.report import write_reports
from tinyeval.session import RunSettings, Session
with Session(RunSettings(cases="cases.jsonl", out="rows.jsonl", thresholds={"t": "1.0"})) as s:
    summary = s.run(s.prepare())
write_reports(summary.report, "rows.jsonl", markdown="gate.md", environ={})
print(sorted(name for name in sys.modules if name.split(".")[:2] in
             [["tinyeval", extra] for extra in ("judges", "rag", "scale", "ci", "estimates")]))
"""


def test_a_checks_only_run_and_its_markdown_load_no_extra_of_the_session(tmp_path: Path) -> None:
    case = {"id": "a", "category": "t", "output": "Hi", "expect": {"max_words": 3}}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    done = subprocess.run([sys.executable, "-c", PLAIN_RUN], cwd=tmp_path, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT)}, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_executor_is_found_by_its_scheme_and_an_unknown_one_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with (
        pytest.raises(InputError, match=r"executor: expected dask:…, got 'ray:x'"),
        open_executor("ray:x"),
    ):
        pass

    @contextlib.contextmanager
    def fake(spec: str, concurrency: int) -> Iterator[str]:
        yield f"{spec} with {concurrency}"

    monkeypatch.setitem(tinyeval._EXTRAS["executor"], "fake", "unused")
    monkeypatch.setattr(session_module, "_extra", lambda door, name, what=None: fake)
    with open_executor("fake:here", 3) as executor:
        assert executor == "fake:here with 3"


def test_observers_are_made_only_for_the_settings_given(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, Any]] = []

    real = session_module._extra

    def factory(door: str, name: str, what: str | None = None) -> Any:
        if door != "observer":  # the price is parsed by the cost extra, as in a real run
            return real(door, name, what)
        return lambda settings, ready: made.append((name, settings)) or name

    monkeypatch.setattr(tinyeval, "_EXTRAS", {**tinyeval._EXTRAS, "observer": {}})
    monkeypatch.setitem(session_module._EXTRAS["observer"], "max_cost", "unused")
    monkeypatch.setitem(session_module._EXTRAS["observer"], "stop_when_decided", "unused")
    monkeypatch.setattr(session_module, "_extra", factory)
    ready = PreparedCases((), "ab12")
    assert Session(RunSettings(cases="c.jsonl")).observers(ready) == {}
    settings = RunSettings(cases="c.jsonl", max_cost=2.0, price="in=1,out=2")
    assert Session(settings).observers(ready) == {"max_cost": "max_cost"}
    assert made == [("max_cost", settings)]


def test_a_section_that_fails_fails_the_run() -> None:
    from tinyeval.gating import gate
    from tinyeval.session import RunSummary

    part = Section(["table"], {"retrieval": {}}, "retrieval gate: FAILED — blocking: recall@5")
    report = gate({"tone": {"passed": 3, "total": 3}}, thresholds={"tone": 1.0})
    assert RunSummary(report, lines=tuple(part.lines)).passed
    assert not RunSummary(report, sections_failed=(part.failed,) if part.failed else ()).passed


def test_progress_without_a_total_shows_no_eta() -> None:
    from tinyeval.cli._common import StatusLine

    progress = StatusLine(None, io.StringIO())
    progress.update({"status": "pass"})
    assert progress.line(progress.started + 2.0) == "1 · 0.5 cases/s · 0 failed · 0 errors"
