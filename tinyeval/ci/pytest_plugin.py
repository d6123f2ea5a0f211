"""The pytest plugin: every case of a suite is a test, and the gate decides the exit status.

Registered through the ``pytest11`` entry point, and inert unless a suite is
asked for: ``pytest --tinyeval`` (the suite file found from the working
directory upwards), ``pytest --tinyeval=path/to/tinyeval.toml``, or the ini
option ``tinyeval_suite = tinyeval.toml``.

- Each case is a test item named by its id, under its cases file
  (``cases.jsonl::amt-018``), collected in file order: ``-k``, ``-x``, ``--lf``
  and ``pytest-xdist`` see stable node ids.
- A case runs through :func:`tinyeval.run`: its code checks, then the judges
  of its category. A failed case's message lists the failing checks and the
  judge's reason.
- **A failed case is xfail only while its category still passes its gate**
  ("failed within tolerance": 2 failures of 40 under 85% is what the threshold
  allows); the failure that makes its category block, and every one after it,
  is a failure (red ``F``), as is any failure under a 100% threshold. So ``-x``
  stops at the first failure that blocks. A case that nothing checked is never
  xfail: a failure (skipped, said so, with ``allow_unchecked``). Failures are
  counted in each process: under pytest-xdist each worker counts its own.
- The per-category table with intervals is printed in the terminal summary,
  and the gate sets the exit status: 1 when a category blocks, even if every
  item was green (``inconclusive = "block"`` with too few cases), and 1 when the
  session ended before every selected case ran.

>>> allowed_failures(40, 0.85)  # under an 85% gate, up to 6 of 40 may fail (34/40 = 85%)
6
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import TinyevalError, shorten
from ..gating import gate
from ..records import Completeness
from ..report import line_of, terminal_text
from .testing import SuiteRunner


def allowed_failures(
    n: int, threshold: float | None, *, inconclusive: str = "pass", confidence: float = 0.95
) -> int | None:
    """How many of a category's ``n`` cases may fail with its gate still passing, by the gate's
    own rule (-1: none may; None: no threshold).

    >>> allowed_failures(40, 0.85), allowed_failures(20, 1.0), allowed_failures(12, None)
    (6, 0, None)
    """
    if threshold is None:
        return None

    def blocks(failures: int) -> bool:
        tally = {"c": {"passed": n - failures, "total": n}}
        return bool(
            gate(tally, {"c": threshold}, inconclusive=inconclusive, confidence=confidence).blocking
        )

    return next((f for f in range(n + 1) if blocks(f)), n + 1) - 1


if TYPE_CHECKING:  # pytest is imported by the hooks, never when this module is
    import pytest

    _FileBase = pytest.File
    _ItemBase = pytest.Item
else:
    _FileBase = _ItemBase = object

__all__ = ["pytest_addoption", "pytest_configure"]  # its pytest classes: see __getattr__

_PLUGIN = "tinyeval-suite"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--tinyeval[=SUITE]`` and the ini option ``tinyeval_suite``."""
    group = parser.getgroup("tinyeval", "tinyeval: every case of a suite as a test, gated")
    group.addoption(
        "--tinyeval",
        nargs="?",
        const="",
        default=None,
        metavar="SUITE",
        help="run the cases of a tinyeval suite as tests and gate the session on it "
        "(SUITE: a tinyeval.toml or pyproject.toml; default: found from here upwards)",
    )
    parser.addini(
        "tinyeval_suite",
        "the tinyeval suite file whose cases run as tests (relative to the ini file)",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Load the suite, when one is asked for, and register the plugin's session part."""
    from ..suite import load_suite

    option = config.getoption("tinyeval", None)
    ini = str(config.getini("tinyeval_suite") or "")
    if option is None and not ini:
        return
    path: Path | None = None
    if option:
        path = Path(option)
    elif ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        path = base / ini
    with _usage_errors(path or "the suite file"):
        runner = SuiteRunner(load_suite(path, start=config.invocation_params.dir))
    config.addinivalue_line("markers", "tinyeval: a case of the tinyeval suite")
    config.pluginmanager.register(_types().TinyevalPlugin(config, runner), _PLUGIN)


_BAD_INPUT = (TinyevalError, RecursionError, ValueError, OverflowError, OSError)


@contextlib.contextmanager
def _usage_errors(where: object) -> Iterator[None]:
    """Bad input (a suite nested too deeply, a NUL in a path, a number too long) as one
    ``tinyeval:`` line and pytest's usage-error exit (4), never an INTERNALERROR."""
    import pytest

    try:
        yield
    except _BAD_INPUT as exc:
        if isinstance(exc, TinyevalError):
            said = str(exc)
        elif isinstance(exc, RecursionError):
            said = f"{where}: nested too deeply to read"
        else:
            said = f"{where}: {type(exc).__name__}: {exc}"
        raise pytest.UsageError(f"tinyeval: {line_of(shorten(said, 300))}") from None


def _plugin(config: pytest.Config) -> _Session:
    plugin = config.pluginmanager.get_plugin(_PLUGIN)
    assert isinstance(plugin, _Session), "the tinyeval plugin is configured"
    return plugin


class _Types(NamedTuple):
    CasesFile: type[_CasesFile]
    CaseItem: type[_CaseItem]
    TinyevalPlugin: type[_Session]


@functools.cache
def _types() -> _Types:
    """The plugin's pytest classes, made once, on the first hook that needs them (so this
    module imports pytest only when pytest runs it)."""
    import pytest

    class CasesFile(_CasesFile, pytest.File):
        __doc__ = _CasesFile.__doc__
        __qualname__ = "CasesFile"

    class CaseItem(_CaseItem, pytest.Item):
        __doc__ = _CaseItem.__doc__
        __qualname__ = "CaseItem"

    class TinyevalPlugin(_Session):
        __doc__ = _Session.__doc__
        __qualname__ = "TinyevalPlugin"
        pytest_collection_modifyitems = pytest.hookimpl(tryfirst=True)(
            _Session.pytest_collection_modifyitems
        )
        pytest_runtest_makereport = pytest.hookimpl(hookwrapper=True)(
            _Session.pytest_runtest_makereport
        )

    return _Types(CasesFile, CaseItem, TinyevalPlugin)


def __getattr__(name: str) -> Any:
    """``CasesFile``, ``CaseItem`` and ``TinyevalPlugin``, made on first use (they need pytest)."""
    if name in _Types._fields:
        return getattr(_types(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CaseFailed(TinyevalError):
    """A case did not pass: its message lists the failing checks and the judge's reason."""


def _failure_message(row: dict[str, Any]) -> str:
    """Every reason a row did not pass, one per line.

    >>> print(_failure_message({"status": "fail", "checks": {"valid_json": True, "equals:c": False},
    ...                         "check_details": {"equals:c": "got 150, expected 150000"},
    ...                         "judges": {}}))
    failed check equals:c: got 150, expected 150000
    """
    lines = []
    if row.get("status") == "error":
        lines.append(f"error: {row.get('error')}")
    details = row.get("check_details") or {}
    for name, ok in (row.get("checks") or {}).items():
        if not ok:
            detail = details.get(name)
            lines.append(f"failed check {name}" + (f": {detail}" if detail else ""))
    for name, verdict in (row.get("judges") or {}).items():
        if verdict.get("verdict") == "PASS":
            continue
        if verdict.get("verdict") is None:
            lines.append(f"judge {name}: no verdict ({verdict.get('failure')})")
        else:
            lines.append(f"judge {name}: {verdict.get('verdict')}: {verdict.get('reason')}")
    if not lines:
        lines.append(f"status {row.get('status')}: nothing checked this case")
    return "\n".join(terminal_text(line_of(line)) for line in lines)


class _CasesFile(_FileBase):
    """A cases file as a pytest collector: one :class:`CaseItem` per case, in file order."""

    def collect(self) -> Iterator[_CaseItem]:
        """The cases of the file, loaded and validated by :func:`tinyeval.load`."""
        from ..dataset import load

        plugin = _plugin(self.config)
        suite = plugin.runner.suite
        with _usage_errors(self.path):
            cases = load(self.path, fields=suite.fields or None, format=suite.format,
                         id_from_line=suite.id_from_line)  # fmt: skip
        for case in cases:  # a node id is printed: its id on one line, no command at its start
            name = terminal_text(line_of(case.id))
            yield _types().CaseItem.from_parent(self, name=name, case=case)


class _CaseItem(_ItemBase):
    """One case as a test: passes when its row passes; see the module for failed cases."""

    def __init__(self, *, case: Any, **kwargs: Any) -> None:
        import pytest

        super().__init__(**kwargs)
        self.case = case
        self.add_marker(pytest.mark.tinyeval)
        self.extra_keyword_matches.add(case.category)  # -k amount_extraction: a category
        self.row: dict[str, Any] | None = None

    def runtest(self) -> None:
        """Evaluate the case; raise :class:`_CaseFailed`, or xfail while the gate tolerates it."""
        import pytest

        plugin = _plugin(self.config)
        row = plugin.runner.evaluate(self.case)
        self.row = row
        if row.get("status") == "pass":
            return
        message = _failure_message(row)
        if row.get("status") == "unchecked" and plugin.runner.suite.allow_unchecked:
            pytest.skip(f"unchecked (allow_unchecked): {message}")
        tolerated = plugin.tolerance(self.case.category, unchecked=row.get("status") == "unchecked")
        if tolerated is not None:
            pytest.xfail(f"{tolerated}\n{message}")
        raise _CaseFailed(message)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        """The failing checks and the judge's reason, not a traceback of the plugin."""
        if isinstance(excinfo.value, _CaseFailed):
            source = os.path.relpath(self.path, self.config.invocation_params.dir)
            where = f"{source}:{self.case.line}" if self.case.line else source
            case, category = line_of(self.case.id), line_of(self.case.category)
            return terminal_text(f"case {case} ({category}, {where}):\n{excinfo.value}")
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """Where the case is: its file and line."""
        return self.path, (self.case.line or 1) - 1, terminal_text(f"case {line_of(self.case.id)}")


class _Session:
    """The session part: collect the cases, gather their rows, print the table, gate."""

    def __init__(self, config: pytest.Config, runner: SuiteRunner) -> None:
        self.config = config
        self.runner = runner
        self.rows: dict[str, dict[str, Any]] = {}
        self.selected: dict[str, str] = {}  # node id -> category, of the items to run
        self.collected = 0
        self.allowed: dict[str, int | None] = {}
        self.failed: dict[str, int] = {}  # failures so far, by category
        self.report: Any = None
        self.incomplete: str | None = None

    # --- collection

    def pytest_collection_modifyitems(  # tryfirst: see _types
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Add the suite's cases after the other tests (before ``-k`` and ``--lf`` select)."""
        ours: list[pytest.Item] = []
        for path in self.runner.suite.cases:
            collector = _types().CasesFile.from_parent(session, path=Path(path).absolute())
            ours.extend(collector.collect())
        self.collected = len(ours)
        items.extend(ours)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Count the selected cases per category: the gate's tolerance depends on them (a
        threshold's typo is refused first, at its line, when the whole suite is selected)."""
        ours = [item.case.category for item in session.items if isinstance(item, _CaseItem)]
        if len(ours) == self.collected:
            with _usage_errors(self.runner.suite.path):
                self.runner.suite.refuse_typos(set(ours))
        counts: dict[str, int] = {}
        for item in session.items:
            if isinstance(item, _CaseItem):
                self.selected[item.nodeid] = item.case.category
                counts[item.case.category] = counts.get(item.case.category, 0) + 1
        suite = self.runner.suite
        for category, n in counts.items():
            threshold = suite.thresholds.get(category, suite.default_threshold)
            self.allowed[category] = allowed_failures(
                n, threshold, inconclusive=suite.inconclusive or "pass"
            )

    def tolerance(self, category: str, *, unchecked: bool = False) -> str | None:
        """Why one more failed case of ``category`` is tolerated (an xfail reason), or None:
        never for an unchecked case, nor once the category's failures block its gate."""
        allowed = self.allowed.get(category)
        name = line_of(category)
        if unchecked:
            return None
        if allowed is None:
            return f"failed, not gated: category {name} has no threshold"
        failed = self.failed[category] = self.failed.get(category, 0) + 1
        if failed > allowed:
            return None
        of = sum(1 for c in self.selected.values() if c == category)
        return (
            f"failed within tolerance: category {name} passes its gate with up to "
            f"{allowed} failed of {of} ({failed} so far)"
        )

    # --- rows, also from pytest-xdist workers (a report attribute travels with the report)

    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:  # a hookwrapper
        """Attach the case's result row to its report."""
        outcome = yield
        if isinstance(item, _CaseItem) and call.when == "call" and item.row is not None:
            outcome.get_result().tinyeval_row = item.row

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep each case's row, on the process that reports (the controller under xdist)."""
        row = getattr(report, "tinyeval_row", None)
        if report.when == "call" and row is not None:
            self.rows[report.nodeid] = row

    # --- the gate

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Gate the rows: exit status 1 when a category blocks or cases did not run."""
        import pytest

        if hasattr(self.config, "workerinput") or not self.selected:
            return  # an xdist worker: the controller gates
        rows = [self.rows[node] for node in self.selected if node in self.rows]
        only = None
        if len(self.selected) < self.collected:
            only = sorted(set(self.selected.values()))
        try:
            self.report = self.runner.gate(rows, only=only)
        except TinyevalError as exc:
            self.incomplete = str(exc)
            self.report = None
        if self.report is not None and len(rows) < len(self.selected):  # said as every report
            ran = Completeness(seen=len(rows), expected=len(self.selected))
            self.report = replace(self.report, completeness=ran)
        failed = self.report is None or not self.report.passed or self.incomplete
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The per-category table with intervals, the failing cases, and the gate's line."""
        if self.report is None and not self.incomplete:
            return
        from ..report import failure_lines, summary_text

        suite = self.runner.suite
        write = terminalreporter.write_line
        terminalreporter.section("tinyeval gate")
        selection = ""
        if len(self.selected) < self.collected:
            selection = (
                f" (a selection: {len(self.selected)} of {self.collected} cases; "
                "thresholds of the categories selected only)"
            )
        write(f"suite {suite.path} (fingerprint {suite.fingerprint}){selection}")
        if self.report is not None:
            rows = [self.rows[node] for node in self.selected if node in self.rows]
            failed = sorted(
                (r for r in rows if r.get("status") != "pass"),
                key=lambda r: (str(r.get("category")), str(r.get("id"))),
            )
            extra = [f"cases that did not pass ({len(failed)}):"] if failed else []
            extra += failure_lines(failed, shown=len(failed), where="")[1:]
            text = summary_text(self.report, extra_lines=(*extra, *([""] if extra else [])))
            for line in text.splitlines():
                write(line)
        if self.incomplete:
            write(terminal_text(f"gate: INCOMPLETE — {line_of(self.incomplete)}"))
