"""tinyeval: evaluate LLM output so that the number it prints can be trusted.

Code checks first, a one-criterion PASS/FAIL judge only for what code cannot
check, the judge calibrated against human labels, every rate with a Wilson
interval, and a gate per category that can fail a CI job. Standard library only.

Public names are loaded on first use, so ``import tinyeval`` stays cheap and
imports nothing it does not need:

>>> import tinyeval
>>> low, high = tinyeval.wilson_interval(27, 30)
>>> f"{low:.3f} {high:.3f}"
'0.744 0.965'
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: importing tinyeval stays cheap
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# public name -> the module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "TinyevalError": "errors",
    "InputError": "errors",
    "IncompleteError": "errors",
    # statistics
    "wilson_interval": "stats",
    "format_rate": "stats",
    "Rate": "stats",
    "CorrectedRate": "estimates.ppi",
    "corrected_pass_rate": "estimates.ppi",
    "Interval": "stats",
    "sample_size": "stats",
    "power": "stats",
    "detectable_difference": "stats",
    "mcnemar": "stats",
    "cohen_kappa": "stats",
    "spearman": "stats",
    "StatisticsError": "stats",
    "cases_to_decide": "stats",
    "UndefinedStatisticError": "stats",
    # the statistics said in one sentence each
    "Sentence": "sentences",
    "JudgeRates": "sentences",
    "wilson_sentence": "sentences",
    "sample_size_sentence": "sentences",
    "power_sentence": "sentences",
    "detectable_sentence": "sentences",
    "mcnemar_sentence": "sentences",
    "judge_rates_from_calibration": "sentences",
    # estimates from few labels, and agreement between raters
    "ppi_pass_rate": "estimates.ppi",
    "PPIRate": "estimates.ppi",
    "observed_rate": "stats",
    "observed_difference": "stats",
    "mean_interval": "estimates.ppi",
    "kappa_interval": "humans.agreement",
    "spearman_interval": "humans.agreement",
    "fleiss_kappa": "humans.agreement",
    "krippendorff_alpha": "humans.agreement",
    "pairwise_kappas": "humans.agreement",
    "AgreementInterval": "humans.agreement",
    "PairKappa": "humans.agreement",
    # RAG and custom criteria
    "ClaimsJudge": "rag.judges",
    "ContextRelevanceJudge": "rag.judges",
    "GradedJudge": "judges.graded_judge",
    "answer_relevance_judge": "rag.judges",
    "context_precision": "rag.judges",
    "graded_scores": "judges.graded_judge",
    "make_judge": "rag.judges",
    "model_family": "rag.judges",
    "self_evaluation_warning": "rag.judges",
    "write_steps": "judges.steps",
    # limits on what is read
    "MAX_LINE_BYTES": "_formats",
    "MAX_RESPONSE_BYTES": "_http",
    "REGEX_TIMEOUT": "_regex",
    # trials, juries and stopping early
    "pass_at_k": "estimates.trials",
    "pass_all_k": "estimates.trials",
    "summarize_trials": "estimates.trials",
    "TrialSummary": "estimates.trials",
    "jury_verdict": "judges.jury",
    "juror_agreement": "judges.jury",
    "dawid_skene": "judges.jury",
    "shared_family": "judges.jury",
    "ConfidenceSequence": "estimates.sequential",
    "gate_decision": "estimates.sequential",
    "sequential_gate": "estimates.sequential",
    # retrieval and graded scores
    "recall_at_k": "rag.retrieval",
    "precision_at_k": "rag.retrieval",
    "hit_at_k": "rag.retrieval",
    "reciprocal_rank": "rag.retrieval",
    "ndcg_at_k": "rag.retrieval",
    "ids_of": "rag.retrieval",
    "retrieval_report": "rag.retrieval",
    "queries_from_cases": "rag.retrieval",
    "parse_retrieval_threshold": "rag.retrieval",
    "RetrievalReport": "rag.retrieval",
    "RetrievalThreshold": "rag.retrieval",
    "RetrievalGate": "rag.retrieval",
    "graded_summary": "judges.graded",
    "graded_pass_fail": "judges.graded",
    "GradedSummary": "judges.graded",
    "GradedVerdicts": "judges.graded",
    # conversations and agents
    "Conversation": "agents.conversation",
    "Turn": "agents.conversation",
    "ToolCall": "agents.conversation",
    "ToolResult": "agents.conversation",
    "read_tool_calls": "agents.conversation",
    "tools_sequence": "agents.tools",
    "tools_match": "agents.tools",
    "tools_before": "agents.tools",
    "tool_args": "agents.tools",
    "max_tool_calls": "agents.tools",
    "max_repeats": "agents.tools",
    "no_tool_errors": "agents.tools",
    "trajectory": "agents.tools",
    # data
    "Case": "dataset",
    "load": "dataset",
    "iter_cases": "dataset",
    "sample": "dataset",
    "split_holdout": "dataset",
    "in_holdout": "dataset",
    "dataset_fingerprint": "dataset",
    "DatasetError": "_formats",
    "ResultsNotCasesError": "dataset",
    # code checks
    "check": "check_core",
    "run_checks": "checks",
    "run_checks_detailed": "checks",
    "checks_from_expect": "checks",
    "CheckResult": "check_core",
    "NamedCheck": "check_core",
    "get_path": "check_core",
    "tool_names": "check_core",
    "CheckSpecError": "check_core",
    # the judge
    "Judge": "judge",
    "PairwiseJudge": "judges.pairwise",
    "Verdict": "judge",
    "PairwiseVerdict": "judges.pairwise",
    "CRITERIA": "judge",
    "parse_verdict": "judge",
    "parse_evidence": "judge",
    "position_stats": "judges.pairwise",
    "PositionStats": "judges.pairwise",
    "PairwiseSummary": "judges.pairwise",
    "load_rubric": "judge",
    "parse_choice": "judge",
    "JudgeError": "judge",
    "builtin_judge": "judges.builtin",
    # models and cache
    "resolve": "models",
    "Model": "models",
    "as_model": "models",
    "ask": "calls",
    "Reply": "calls",
    "Price": "calls",
    "Usage": "calls",
    "Estimate": "calls",
    "ModelConfigError": "models",
    "ModelCallError": "models",
    "CacheError": "cache",
    "BatchJob": "scale.batch",
    "BatchModel": "scale.batch",
    "BatchRequest": "scale.batch",
    "BatchResult": "scale.batch",
    "BatchOutcome": "scale.batch",
    "BatchError": "scale.batch",
    "BatchDeferred": "scale.batch",
    "CostError": "calls",
    "RunnerError": "runner",
    "ResultsFileError": "records",
    "GateError": "gating",
    "LabelError": "label_file",
    "UsageError": "cli",
    # the suite file and tests
    "load_suite": "suite",
    "find_suite": "suite",
    "Suite": "suite",
    "JudgeSpec": "suite",
    "ModelSettings": "suite",
    "starter_text": "suite",
    "assert_gate": "ci.testing",
    # documents
    "summary_text": "report_text",
    "summary_markdown": "report_text",
    "junit_xml": "report_text",
    "html_report": "ci.html",
    "write_reports": "report",
    "ReportsWritten": "report",
    "ResponseCache": "cache",
    "cached": "cache",
    "parse_price": "calls",
    "estimate": "calls",
    # running and gating
    "run": "runner",
    "RunResult": "runner",
    "run_pairs": "judges.pairwise",
    "Session": "session",
    "RunSettings": "session",
    "RunSummary": "session",
    "read_rows": "records",
    "tally": "records",
    "Row": "records",
    "CategoryTally": "records",
    "Completeness": "records",
    "GateReport": "gating",
    "CategoryVerdict": "gating",
    "compare_runs": "gating",
    "compare_holdout": "gating",
    "gate_rows": "gating",
    "gate": "gating",
    "calibrate": "calibration",
    "calibrate_results": "calibration",
    "Calibration": "calibration",
    "CalibrationError": "calibration",
    "load_calibration": "calibration",
    "corrected_rate_for": "calibration",
    "label_session": "humans.session",
    "read_label_set": "label_file",
    "read_labels_by_labeler": "label_file",
    "plan_labels": "humans.session",
    "ppi_rates": "humans.labelers",
    "PPIRates": "humans.labelers",
    "human_agreement": "humans.labelers",
    "reference_labels": "humans.labelers",
    "read_labels": "label_file",
    "LabelRecord": "label_file",
    "default_labeler": "label_file",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tinyeval' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
