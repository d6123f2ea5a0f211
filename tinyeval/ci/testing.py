"""Evaluate a suite from tests: a case at a time, the gate over the rows, and ``assert_gate``.

The pytest plugin (:mod:`tinyeval.ci.pytest_plugin`) is built on these, and so can
a hand-written test::

    def test_gate():
        result = tinyeval.run(tinyeval.load("cases.jsonl"))
        tinyeval.assert_gate(result.rows, thresholds={"amount_extraction": 1.0})

Everything here goes through the library's public path: :func:`tinyeval.load`,
:class:`tinyeval.Judge`, :func:`tinyeval.run` and :func:`tinyeval.gate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._formats import MAX_CONFIG_BYTES, read_text
from ..errors import InputError
from ..gating import GateReport, from_rows, gate
from ..suite import JudgeSpec, Suite

__all__ = [
    "SuiteRunner",
    "assert_gate",
    "tally_rows",
]


def tally_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per-category counts from result rows, as :func:`tinyeval.gate` takes them.

    Every row is in its category's ``total``; only ``status == "pass"`` is
    passed, so errored and unchecked cases count against the rate.

    >>> tally_rows([{"category": "tone", "status": "pass"},
    ...             {"category": "tone", "status": "error"}])
    {'tone': {'passed': 1, 'total': 2, 'errors': 1, 'unparsed': 0, 'judged': 0}}
    """
    tallies: dict[str, dict[str, int]] = {}
    for row in rows:
        slot = tallies.setdefault(
            str(row.get("category", "default")),
            {"passed": 0, "total": 0, "errors": 0, "unparsed": 0, "judged": 0},
        )
        slot["total"] += 1
        slot["passed"] += row.get("status") == "pass"
        slot["errors"] += row.get("status") == "error"
        slot["judged"] += len(row.get("judges") or {})
        slot["unparsed"] += sum(
            1
            for verdict in (row.get("judges") or {}).values()
            if verdict.get("verdict") is None and verdict.get("failure") != "error"
        )
    return dict(sorted(tallies.items()))


def assert_gate(
    report_or_rows: GateReport | Iterable[Mapping[str, Any]] | Any,
    thresholds: Mapping[str, float | str] | None = None,
    *,
    default_threshold: float | str | None = None,
    inconclusive: str = "pass",
    confidence: float = 0.95,
    labels: str | None = None,
    min_kappa: float | None = None,
) -> GateReport:
    """Fail a test when a category blocks: the message says on what each blocking category was
    decided (``decided_on``: its checks, the judge's verdicts or people's estimate), then the
    gate's table and, given rows, the cases that did not pass and why.

    Takes a :class:`~tinyeval.gating.GateReport`, a
    :class:`~tinyeval.runner.RunResult` (its rows) or result rows; with rows,
    the gate is computed from ``thresholds``, ``default_threshold`` and ``inconclusive``, as
    ``tinyeval gate`` computes it: a judged category whose cases carry labels (or with
    ``labels``, a labels file; ``min_kappa``) is decided on people's estimate, and the cases'
    clusters widen the intervals. Returns the report when nothing blocks.

    >>> rows = [{"id": str(i), "category": "amounts", "status": "pass" if i < 17 else "fail"}
    ...         for i in range(20)]
    >>> assert_gate(rows, thresholds={"amounts": 1.0})
    Traceback (most recent call last):
    ...
    AssertionError: the gate blocks amounts (decided on checks):
    category  pass rate [95% Wilson]         threshold  gate
    amounts   17/20 = 85.0% [64.0%, 94.8%]   100.0%     BLOCKS (85.0% < 100.0%)
    ...
    cases that did not pass:
      amounts  17  not passed
    ...
    >>> assert_gate(rows, thresholds={"amounts": "80%"}).passed
    True
    """
    from ..report import failure_lines, summary_text

    rows: list[Mapping[str, Any]] | None = None
    if isinstance(report_or_rows, GateReport):
        report = report_or_rows
    else:
        rows = list(getattr(report_or_rows, "rows", report_or_rows))
        report = gate(
            tally_rows(rows),
            thresholds,
            default_threshold=default_threshold,
            inconclusive=inconclusive,
            confidence=confidence,
            **from_rows(rows, labels=labels, min_kappa=min_kappa, confidence=confidence),
        )
    if report.blocking:
        failed = [r for r in rows if r.get("status") != "pass"] if rows is not None else []
        cases = failure_lines(failed, shown=len(failed), where="the rows given")[1:]
        said = "\n".join(
            [summary_text(report), *(["cases that did not pass:", *cases] if cases else [])]
        )
        blocks = ", ".join(f"{c.category} (decided on {c.decided_on})" for c in report.blocking)
        raise AssertionError(f"the gate blocks {blocks}:\n{said}")
    return report


class SuiteRunner:
    """Runs a :class:`~tinyeval.suite.Suite` one case at a time, as a test runner needs.

    The judges and models are built once; :meth:`evaluate` runs one case
    through :func:`tinyeval.run` (its code checks, then the judges that look at
    its category) and returns its result row; :meth:`gate` judges rows against
    the suite's thresholds.

    >>> from tinyeval.dataset import Case
    >>> runner = SuiteRunner(Suite(settings={"thresholds": {"amounts": 1.0}}))
    >>> row = runner.evaluate(Case(id="a", category="amounts", output='{"cents": 5}',
    ...                            expect={"equals": {"cents": 50}}))
    >>> row["status"], runner.gate([row]).passed
    ('fail', False)
    """

    def __init__(self, suite: Suite) -> None:
        self.suite = suite
        self.judges: list[tuple[JudgeSpec, Any]] = [(spec, spec.judge()) for spec in suite.judges]
        self._models: dict[str, Any] = {}

    def _model(self, spec: str, max_tokens: str) -> Any:
        if spec not in self._models:
            from ..session import open_model

            given = {name: self.suite.settings.get(name) for name in ("base_url", "timeout")}
            given.update(
                temperature=self.suite.temperature, max_tokens=self.suite.settings.get(max_tokens)
            )
            options = {name: value for name, value in given.items() if value is not None}
            self._models[spec], _ = open_model(spec, **options)
        return self._models[spec]

    def judges_for(self, category: str) -> tuple[list[Any], str | None]:
        """The judges that look at ``category``, and the model spec they share (None: no judge).

        Judges of one category must share a model: a case's judges are asked
        through one model in one run.
        """
        default = self.suite.judge_model or "builtin"
        chosen = [(spec, judge) for spec, judge in self.judges if spec.applies_to(category)]
        models = sorted({spec.model or default for spec, _ in chosen})
        if len(models) > 1:
            raise InputError(
                f"the judges of category {category!r} ask different models "
                f"({', '.join(models)}); give them one model",
                path=self.suite.path,
                field="judges",
            )
        return [judge for _, judge in chosen], (models[0] if models else None)

    def evaluate(self, case: Any) -> dict[str, Any]:
        """Run one case: its code checks, then the judges of its category; return its row."""
        from ..runner import run

        judges, model_spec = self.judges_for(case.category)
        judge_model = self._model(model_spec, "judge_max_tokens") if model_spec else None
        generate = self.suite.generate_model
        template = None
        if self.suite.prompt_template:
            template = read_text(self.suite.prompt_template, max_bytes=MAX_CONFIG_BYTES)
        result = run(
            [case],
            judges=judges,
            judge_model=judge_model,
            generate_model=self._model(generate, "max_tokens") if generate else None,
            prompt_template=template,
            fail_fast=None,
        )
        return dict(result.rows[0])

    def gate(
        self, rows: Iterable[Mapping[str, Any]], *, only: Sequence[str] | None = None
    ) -> GateReport:
        """The suite's gate over ``rows``; with ``only``, thresholds of just those categories.

        ``only`` is for a selection of the cases (a test run with ``-k``): a
        category left out of the selection is not a category that vanished.
        The suite's ``inconclusive`` and ``allow_unchecked`` settings are passed
        on to :func:`tinyeval.gate` when it takes them.
        """
        import inspect

        thresholds = dict(self.suite.thresholds)
        if only is not None:
            thresholds = {k: v for k, v in thresholds.items() if k in only}
        options: dict[str, Any] = {}
        accepted = inspect.signature(gate).parameters
        if self.suite.inconclusive is not None and "inconclusive" in accepted:
            options["inconclusive"] = self.suite.inconclusive
        if self.suite.allow_unchecked and "allow_unchecked" in accepted:
            options["allow_unchecked"] = True
        rows = list(rows)
        return gate(
            tally_rows(rows),
            thresholds,
            default_threshold=self.suite.default_threshold,
            **from_rows(rows, labels=self.suite.labels, min_kappa=self.suite.min_kappa),
            **options,
        )
