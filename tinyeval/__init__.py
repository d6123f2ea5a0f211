"""tinyeval: evaluate LLM output so that the number it prints can be trusted.

>>> import tinyeval
>>> low, high = tinyeval.wilson_interval(27, 30)
>>> f"{low:.3f} {high:.3f}"
'0.744 0.965'
"""

import importlib  # loaded by every interpreter's start already
import sys

if sys.version_info < (3, 11):  # noqa: UP036 (written so that older Pythons parse this far)
    _said = f"tinyeval needs Python 3.11 or newer; this is Python {sys.version.split()[0]}"
    raise SystemExit("tinyeval: error: " + _said) if sys.argv[:1] == ["-m"] else ImportError(_said)

TYPE_CHECKING = False  # typing is not imported at run time: importing tinyeval stays cheap
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.2.0"

# public name -> the core module that defines it, loaded on first use
_EXPORTS: dict[str, str] = {
    name: module
    for module, names in {
        "errors": "TinyevalError InputError IncompleteError",
        "stats": "wilson_interval Rate sample_size power mcnemar cohen_kappa spearman",
        "dataset": "Case load iter_cases sample split_holdout dataset_fingerprint",
        "checks": "check run_checks checks_from_expect",
        "models": "resolve ask",
        "cache": "ResponseCache",
        "judge": "Judge Verdict CRITERIA parse_verdict",
        "runner": "run RunResult",
        "records": "read_rows",
        "gating": "gate compare_runs GateReport",
        "calibration": "calibrate Calibration read_labels",
        "session": "Session",
        "suite": "RunSettings",
    }.items()
    for name in names.split()
}

__all__ = ["__version__", *_EXPORTS]

# The one table of extras: door -> the name a user writes -> "subpackage.module:attribute",
# imported by _extra() on first use. The core never imports a subpackage.
_EXTRAS: dict[str, dict[str, str]] = {
    # expect keys: builder(value, where) -> the key's named checks
    "expect": {
        "tools_forbidden": "agents.tools:build_tools_forbidden",
        "tools_required": "agents.tools:build_tools_required",
        "tools_sequence": "agents.tools:build_tools_sequence",
        "tools_match": "agents.tools:build_tools_match",
        "tools_before": "agents.tools:build_tools_before",
        "tool_args": "agents.tools:build_tool_args",
        "max_tool_calls": "agents.tools:build_max_tool_calls",
        "max_repeats": "agents.tools:build_max_repeats",
        "no_tool_errors": "agents.tools:build_no_tool_errors",
    },
    # case readers: a file format or a case shape the core's loader does not read itself
    "reader": {
        "case_ids": "scale.ids:CaseIds",
        "messages": "agents.conversation:read_case_messages",
        "otel": "agents.otel:records_from_otel",
        "retrieval": "rag.retrieval:queries_from_cases",
        "retrieval_threshold": "rag.retrieval:parse_retrieval_threshold",
        "tool_calls": "agents.tools:tool_names",
    },
    # criteria with a judge of their own (name or "prefix:"), and models by spec
    "criterion": {
        "faithfulness-by-claims": "rag.judges:rag_judge",
        "answer-relevance": "rag.judges:rag_judge",
        "context-relevance": "rag.judges:rag_judge",
        "graded:": "judges.graded_judge:graded_judge",
        "steps": "judges.steps:steps_judge",
    },
    "model": {"builtin": "judges.builtin:builtin_judge"},
    # what wraps the judge or the models of a run (a jury of several judge models, batches)
    "wrapper": {
        "batch": "scale.session_batches:Batches",
        "cache_first": "scale.cached:from_cache",
        "jury": "judges.jury:Jury",
    },
    # run observers: watch the rows of a run and may stop it
    "observer": {
        "trials": "estimates.trials:make",
        "stop_when_decided": "estimates.sequential:make",
        "max_cost": "scale.spend:make",
        "review_out": "judges.review:make",
    },
    # sections of the run's summary, gate estimators, reports written after a run
    "section": {
        "retrieval": "rag.summary:retrieval_section",
        "self_evaluation": "rag.summary:self_evaluation_section",
        "graded": "judges.summary:graded_section",
        "jury": "judges.summary:jury_section",
    },
    "estimator": {
        "correction_summary": "estimates.corrected:correction_summary",
        "ppi_pass_rate": "estimates.ppi:ppi_pass_rate",
        "people": "estimates.people:people_rates",
        "label_design": "estimates.people:label_design",
        "open_case": "estimates.people:open_case",
    },
    "report": {
        "junit": "ci.github:junit_report",
        "html": "ci.html:html_page",
        "github": "ci.github:github_report",
    },
    # what a price costs: the dollars of a run's tokens and of a dry run's
    "cost": {
        "price": "scale.cost:parse_price",
        "usage": "scale.cost:usage_cost",
        "usd": "scale.cost:format_usd",
        "plan": "scale.spend:plan_cost",
        "plan_line": "scale.spend:plan_cost_line",
        "dry_run": "scale.plan:dry_run",
    },
    # executors by scheme ("dask")
    "executor": {"dask": "scale.executors:open_dask"},
    # command-line commands (an extra's `run` options are RunSettings fields, in its group)
    "command": {
        "pairwise": "judges.cli:add_pairwise",
        "label": "humans.cli:add_label",
        "calibrate": "humans.cli:extend_calibrate",
        "cost": "scale.cli:add_cost",
        "init": "ci.init:add_init",
    },
}


def _extra(door: str, name: str, what: "str | None" = None) -> "Any":
    """The extra under ``name`` at ``door`` (an InputError names the folder a copy lacks)."""
    target = _EXTRAS[door][name]
    module_name, _, attribute = target.partition(":")
    subpackage = module_name.partition(".")[0]
    try:
        module = importlib.import_module(f".{module_name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name not in (f"{__name__}.{subpackage}", f"{__name__}.{module_name}"):
            raise
        from .errors import InputError

        folder = __name__.rpartition(".")[2]  # a vendored copy's own name: yourpkg._vendor.tinyeval
        raise InputError(
            f"{what or repr(name)} needs {folder}/{subpackage}/, which this copy lacks"
        ) from None
    return getattr(module, attribute)


def __getattr__(name: str) -> "Any":
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tinyeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
