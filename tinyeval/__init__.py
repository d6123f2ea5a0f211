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
    "CorrectedRate": "estimates",
    "corrected_pass_rate": "estimates",
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
    "ppi_pass_rate": "estimates",
    "PPIRate": "estimates",
    "observed_rate": "stats",
    "observed_difference": "stats",
    "mean_interval": "estimates",
    "kappa_interval": "agreement",
    "spearman_interval": "agreement",
    "fleiss_kappa": "agreement",
    "krippendorff_alpha": "agreement",
    "pairwise_kappas": "agreement",
    "AgreementInterval": "agreement",
    "PairKappa": "agreement",
    # RAG and custom criteria
    "ClaimsJudge": "rag",
    "ContextRelevanceJudge": "rag",
    "GradedJudge": "rag_graded",
    "answer_relevance_judge": "rag",
    "context_precision": "rag",
    "graded_scores": "rag_graded",
    "make_judge": "rag",
    "model_family": "rag",
    "self_evaluation_warning": "rag",
    "write_steps": "geval_steps",
    # limits on what is read
    "MAX_LINE_BYTES": "formats",
    "MAX_RESPONSE_BYTES": "transport",
    "REGEX_TIMEOUT": "patterns",
    # trials, juries and stopping early
    "pass_at_k": "trials",
    "pass_all_k": "trials",
    "summarize_trials": "trials",
    "TrialSummary": "trials",
    "jury_verdict": "jury",
    "juror_agreement": "jury",
    "dawid_skene": "jury",
    "shared_family": "jury",
    "ConfidenceSequence": "sequential",
    "gate_decision": "sequential",
    "sequential_gate": "sequential",
    # retrieval and graded scores
    "recall_at_k": "retrieval",
    "precision_at_k": "retrieval",
    "hit_at_k": "retrieval",
    "reciprocal_rank": "retrieval",
    "ndcg_at_k": "retrieval",
    "ids_of": "retrieval",
    "retrieval_report": "retrieval",
    "queries_from_cases": "retrieval",
    "parse_retrieval_threshold": "retrieval",
    "RetrievalReport": "retrieval",
    "RetrievalThreshold": "retrieval",
    "RetrievalGate": "retrieval",
    "graded_summary": "graded",
    "graded_pass_fail": "graded",
    "GradedSummary": "graded",
    "GradedVerdicts": "graded",
    # conversations and agents
    "Conversation": "conversation",
    "Turn": "conversation",
    "ToolCall": "conversation",
    "ToolResult": "conversation",
    "read_tool_calls": "conversation",
    "tools_sequence": "tool_checks",
    "tools_match": "tool_checks",
    "tools_before": "tool_checks",
    "tool_args": "tool_checks",
    "max_tool_calls": "tool_checks",
    "max_repeats": "tool_checks",
    "no_tool_errors": "tool_checks",
    "trajectory": "tool_checks",
    # data
    "Case": "dataset",
    "load": "dataset",
    "iter_cases": "dataset",
    "sample": "dataset",
    "split_holdout": "dataset",
    "in_holdout": "dataset",
    "dataset_fingerprint": "dataset",
    "DatasetError": "formats",
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
    "PairwiseJudge": "pairwise",
    "Verdict": "judge",
    "PairwiseVerdict": "pairwise",
    "CRITERIA": "judge",
    "parse_verdict": "judge",
    "parse_evidence": "judge",
    "position_stats": "pairwise",
    "PositionStats": "pairwise",
    "PairwiseSummary": "pairwise",
    "load_rubric": "judge",
    "parse_choice": "judge",
    "JudgeError": "judge",
    "builtin_judge": "baseline",
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
    "BatchJob": "batch",
    "BatchModel": "batch",
    "BatchRequest": "batch",
    "BatchResult": "batch",
    "BatchOutcome": "batch",
    "BatchError": "batch",
    "BatchDeferred": "batch",
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
    "assert_gate": "testing",
    # documents
    "summary_text": "report_text",
    "summary_markdown": "report_text",
    "junit_xml": "report_text",
    "html_report": "report_html",
    "write_reports": "report",
    "ReportsWritten": "report",
    "ResponseCache": "cache",
    "cached": "cache",
    "parse_price": "calls",
    "estimate": "calls",
    # running and gating
    "run": "runner",
    "RunResult": "runner",
    "run_pairs": "pairwise",
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
    "label_session": "label",
    "read_label_set": "label_file",
    "read_labels_by_labeler": "label_file",
    "plan_labels": "label",
    "ppi_rates": "humans",
    "PPIRates": "humans",
    "human_agreement": "humans",
    "reference_labels": "humans",
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
