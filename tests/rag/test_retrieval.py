"""Tests for tinyeval.rag.retrieval: per-query metrics, the per-category report, thresholds.

Expected values are worked by hand in the tests (log2 values to 7 decimals:
log2(3) = 1.5849625, log2(5) = 2.3219281, log2(7) = 2.8073549), checked
against ``ranx`` when it is installed, and the worked example's figures are
recomputed here from the raw JSON lines, not taken from the code.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyeval
from tinyeval.errors import InputError
from tinyeval.rag.retrieval import (
    MeanValue,
    RetrievalThreshold,
    hit_at_k,
    ids_of,
    ndcg_at_k,
    parse_retrieval_threshold,
    precision_at_k,
    queries_from_cases,
    recall_at_k,
    reciprocal_rank,
    retrieval_report,
)
from tinyeval.stats import Rate, UndefinedStatisticError, wilson_interval

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rag" / "cases.jsonl"

# One ranking used throughout: relevant documents at ranks 2, 4 and 6; d5 is never retrieved.
RANKING = ["d3", "d1", "d7", "d2", "d9", "d4"]
RELEVANT = {"d1", "d2", "d4", "d5"}


# ------------------------------------------------------------------ per query, by hand


@pytest.mark.parametrize(
    ("k", "hit", "recall", "precision"),
    [
        (1, 0.0, 0 / 4, 0 / 1),  # d3 only: nothing relevant
        (2, 1.0, 1 / 4, 1 / 2),  # d1 found
        (4, 1.0, 2 / 4, 2 / 4),  # d1, d2
        (6, 1.0, 3 / 4, 3 / 6),  # d1, d2, d4; d5 never retrieved
        (10, 1.0, 3 / 4, 3 / 10),  # k beyond the list: the 4 missing slots are misses
    ],
)
def test_binary_metrics_by_hand(k: int, hit: float, recall: float, precision: float) -> None:
    assert hit_at_k(RANKING, RELEVANT, k) == hit
    assert recall_at_k(RANKING, RELEVANT, k) == pytest.approx(recall, abs=1e-15)
    assert precision_at_k(RANKING, RELEVANT, k) == pytest.approx(precision, abs=1e-15)


def test_reciprocal_rank_by_hand() -> None:
    assert reciprocal_rank(RANKING, RELEVANT) == 0.5  # first relevant (d1) at rank 2
    assert reciprocal_rank(["x", "y", "z"], ["z"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x", "y"], ["z"]) == 0.0  # none retrieved
    assert reciprocal_rank([], ["z"]) == 0.0


def test_ndcg_with_graded_gains_by_hand() -> None:
    gains = {"d1": 3, "d2": 2, "d4": 1, "d5": 3, "d3": 0}
    # DCG@6: d1 (gain 3) at rank 2 → 3/log2(3) = 1.8927893; d2 (2) at rank 4 → 2/log2(5)
    #        = 0.8613531; d4 (1) at rank 6 → 1/log2(7) = 0.3562072; d3 has gain 0.
    #        Sum = 3.1103496.
    # IDCG@6: gains sorted 3, 3, 2, 1 → 3/1 + 3/log2(3) + 2/log2(4) + 1/log2(5)
    #        = 3 + 1.8927893 + 1 + 0.4306766 = 6.3234659.
    # nDCG@6 = 3.1103496 / 6.3234659 = 0.4918742.
    assert ndcg_at_k(RANKING, gains, 6) == pytest.approx(0.4918742, abs=1e-7)
    # nDCG@2: DCG 1.8927893; IDCG@2 = 3 + 1.8927893 = 4.8927893 → 0.3868528.
    assert ndcg_at_k(RANKING, gains, 2) == pytest.approx(0.3868528, abs=1e-7)
    # nDCG@1: d3 has gain 0 → 0.
    assert ndcg_at_k(RANKING, gains, 1) == 0.0


def test_ndcg_binary_and_ideal() -> None:
    # Binary gains: relevant at rank 2 of 1 relevant → (1/log2(3)) / 1 = 0.6309298.
    assert ndcg_at_k(["x", "a"], ["a"], 5) == pytest.approx(0.6309298, abs=1e-7)
    assert ndcg_at_k(["a", "b", "c"], {"a": 3, "b": 2, "c": 1}, 3) == 1.0
    # Swapping the top two: DCG = 2 + 3/log2(3) + 1/2 = 4.3927893; IDCG = 3 + 2/log2(3) + 1/2
    # = 4.7618595 → 0.9224945.
    assert ndcg_at_k(["b", "a", "c"], {"a": 3, "b": 2, "c": 1}, 3) == pytest.approx(
        0.9224945, abs=1e-7
    )


def test_duplicates_count_once_at_their_first_rank() -> None:
    # ["a", "a", "b"]: the repeat takes rank 2 but gains nothing.
    assert precision_at_k(["a", "a", "b"], ["a", "b"], 2) == 0.5
    assert recall_at_k(["a", "a", "b"], ["a", "b"], 2) == 0.5
    assert recall_at_k(["a", "a", "b"], ["a", "b"], 3) == 1.0
    assert precision_at_k(["a", "a", "a"], ["a"], 3) == pytest.approx(1 / 3)
    # DCG@3 of b, b, a with gains a=1, b=1: 1/1 + 0 + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3)
    # = 1.6309298 → 0.9197208.
    assert ndcg_at_k(["b", "b", "a"], {"a": 1, "b": 1}, 3) == pytest.approx(0.9197208, abs=1e-7)
    assert reciprocal_rank(["x", "x", "a", "a"], ["a"]) == pytest.approx(1 / 3)


def test_ids_compare_as_text_and_objects_give_their_id() -> None:
    assert hit_at_k([7, 8], ["7"], 1) == 1.0
    assert recall_at_k([{"id": "a"}, {"id": "b"}], ["b"], 2) == 1.0
    objects = [{"doc_id": "kb-1", "text": "…"}, {"doc_id": 2, "text": "…"}]
    assert ids_of(objects, id_field="doc_id") == ["kb-1", "2"]
    assert ids_of([]) == []


def test_empty_retrieval_scores_zero() -> None:
    for function in (hit_at_k, recall_at_k, precision_at_k, ndcg_at_k):
        assert function([], ["a"], 5) == 0.0
    assert reciprocal_rank([], ["a"]) == 0.0


# ------------------------------------------------------------------ edge cases refused


@pytest.mark.parametrize("relevant", [[], set(), {}, {"a": 0, "b": 0.0}])
def test_an_empty_relevant_set_is_undefined(relevant: object) -> None:
    for function in (hit_at_k, recall_at_k, precision_at_k, ndcg_at_k):
        with pytest.raises(UndefinedStatisticError, match="no relevant documents"):
            function(["a"], relevant, 1)  # type: ignore[arg-type]
    with pytest.raises(UndefinedStatisticError):
        reciprocal_rank(["a"], relevant)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, -1, True, 2.0, "5", None])
def test_k_below_one_or_not_whole_is_refused(k: object) -> None:
    for function in (hit_at_k, recall_at_k, precision_at_k, ndcg_at_k):
        with pytest.raises(InputError, match="k must be a whole number of at least 1") as info:
            function(["a"], ["a"], k)  # type: ignore[arg-type]
        assert info.value.field == "k"


@pytest.mark.parametrize(
    ("retrieved", "relevant", "message"),
    [
        ("abc", ["a"], "expected a list of document ids"),
        (["a"], "a", "expected a list of document ids or an object"),
        ([True], ["a"], "retrieved item 1: a document id must be"),
        ([1.5], ["a"], "retrieved item 1: a document id must be"),
        ([""], ["a"], "retrieved item 1: a document id must be"),
        (["a"], [None], "relevant item 1: a document id must be"),
        (["a"], {"a": -1}, "must be a non-negative number"),
        (["a"], {"a": "2"}, "must be a non-negative number"),
        (["a"], {"a": float("nan")}, "must be a non-negative number"),
        ([{"doc_id": "a"}], ["a"], 'item 1 has no "id" key'),
    ],
)
def test_malformed_input_is_an_input_error(
    retrieved: object, relevant: object, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        recall_at_k(retrieved, relevant, 1)  # type: ignore[arg-type]


def test_missing_id_field_suggests_the_near_one() -> None:
    with pytest.raises(InputError, match="did you mean 'doc_ids'") as info:
        ids_of([{"doc_ids": "a"}], id_field="doc_id")
    assert info.value.field == "retrieved"


# ------------------------------------------------------------------ properties

_ids = st.sampled_from([f"d{i}" for i in range(8)])
_rankings = st.lists(_ids, max_size=12)
_relevant_sets = st.sets(_ids, min_size=1, max_size=6)


def _distinct_hits(ranking: list[str], relevant: set[str], k: int) -> int:
    return len(set(ranking[:k]) & relevant)


@settings(max_examples=200, deadline=None)
@given(_rankings, _relevant_sets)
def test_recall_grows_with_k_and_every_value_is_in_the_unit_interval(
    ranking: list[str], relevant: set[str]
) -> None:
    previous = 0.0
    for k in range(1, 15):
        recall = recall_at_k(ranking, relevant, k)
        assert recall >= previous
        previous = recall
        for value in (
            recall,
            precision_at_k(ranking, relevant, k),
            hit_at_k(ranking, relevant, k),
            ndcg_at_k(ranking, relevant, k),
        ):
            assert 0.0 <= value <= 1.0
    assert 0.0 <= reciprocal_rank(ranking, relevant) <= 1.0


@settings(max_examples=200, deadline=None)
@given(_rankings, _relevant_sets, st.integers(min_value=1, max_value=15))
def test_precision_times_k_counts_the_hits(ranking: list[str], relevant: set[str], k: int) -> None:
    hits = _distinct_hits(ranking, relevant, k)
    assert precision_at_k(ranking, relevant, k) * k == pytest.approx(hits)
    assert recall_at_k(ranking, relevant, k) * len(relevant) == pytest.approx(hits)
    assert hit_at_k(ranking, relevant, k) == (1.0 if hits else 0.0)


@settings(max_examples=100, deadline=None)
@given(_relevant_sets, st.integers(min_value=1, max_value=10))
def test_the_ideal_ranking_has_ndcg_one(relevant: set[str], k: int) -> None:
    assert ndcg_at_k(sorted(relevant), relevant, k) == pytest.approx(1.0)


# ------------------------------------------------------------------ reference implementation


def test_agrees_with_ranx_on_random_rankings() -> None:
    ranx = pytest.importorskip("ranx")
    rng = random.Random(20261201)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    rankings: dict[str, list[str]] = {}
    for q in range(60):
        docs = [f"d{i}" for i in range(30)]
        rng.shuffle(docs)
        ranking = docs[: rng.randint(1, 15)]
        relevant = {doc: rng.randint(1, 3) for doc in rng.sample(docs, rng.randint(1, 6))}
        name = f"q{q}"
        qrels[name], rankings[name] = relevant, ranking
        run[name] = {doc: 100.0 - rank for rank, doc in enumerate(ranking)}
    metrics = ["mrr"] + [
        f"{m}@{k}" for m in ("hit_rate", "recall", "precision", "ndcg") for k in (1, 3, 5, 10)
    ]
    expected = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics, return_mean=False)
    ours = {
        "hit_rate": hit_at_k,
        "recall": recall_at_k,
        "precision": precision_at_k,
        "ndcg": ndcg_at_k,
    }
    names = sorted(qrels, key=lambda n: list(ranx.Qrels(qrels).keys()).index(n))
    for metric in metrics:
        for index, name in enumerate(names):
            if metric == "mrr":
                value = reciprocal_rank(rankings[name], qrels[name])
            else:
                base, k = metric.split("@")
                value = ours[base](rankings[name], qrels[name], int(k))
            assert value == pytest.approx(float(expected[metric][index]), abs=1e-9), (
                metric,
                name,
            )


# ------------------------------------------------------------------ the report


def test_report_counts_and_wilson_hit_rate() -> None:
    queries = [
        ("faq", ["a", "b"], ["a"]),  # hit@1
        ("faq", ["x", "a"], ["a"]),  # hit@2 only
        ("faq", ["x", "y"], ["a"]),  # no hit
        ("faq", None, ["a"]),  # no retrieval: not counted
        ("faq", ["a"], []),  # no relevant documents: not counted
        ("billing", ["c"], {"c": 2}),
    ]
    report = retrieval_report(queries, ks=[2, 1, 2])
    assert report.ks == (1, 2)
    faq = report.category("faq")
    assert (faq.queries, faq.without_data, faq.without_relevant, faq.cases) == (3, 1, 1, 5)
    assert faq.hit[1] == Rate(1, 3, *wilson_interval(1, 3))
    assert faq.hit[2] == Rate(2, 3, *wilson_interval(2, 3))
    assert faq.mrr is not None and faq.mrr.value == pytest.approx((1 + 1 / 2 + 0) / 3)
    overall = report.overall
    assert (overall.queries, overall.without_data, overall.without_relevant) == (4, 1, 1)
    assert overall.hit[1].successes == 2
    billing = report.category("billing")
    assert billing.recall[1].value == 1.0 and billing.recall[1].low is None  # one query
    with pytest.raises(InputError, match="no category 'tone'"):
        report.category("tone")


def test_mean_interval_is_student_t_by_hand() -> None:
    # recall@5 per query: 0.5, 1, 0, 1, 0.5, 1, 1, 0.5 (two relevant, one found → 0.5)
    queries = []
    for value in (0.5, 1, 0, 1, 0.5, 1, 1, 0.5):
        relevant = ["a", "b"] if value == 0.5 else ["a"]
        queries.append(("c", ["a"] if value else ["z"], relevant))
    figure = retrieval_report(queries, ks=[5]).category("c").recall[5]
    # mean = 5.5 / 8 = 0.6875; squared deviations: 3 × 0.1875² + 4 × 0.3125² + 0.6875²
    # = 0.1054688 + 0.390625 + 0.4726563 = 0.96875; s² = 0.96875 / 7 = 0.1383929,
    # s / √8 = 0.1315264; t(0.975, 7) = 2.364624 (published t table) → half-width 0.3110091:
    # [0.3764909, 0.9985091].
    assert figure.value == 0.6875
    assert figure.low == pytest.approx(0.3764909, abs=1e-6)
    assert figure.high == pytest.approx(0.9985091, abs=1e-6)


def test_mean_interval_is_clipped_to_the_unit_interval() -> None:
    figure = MeanValue.of([1.0, 0.0, 1.0])
    # mean 2/3, s = 0.5773503, se = 0.3333333, t(0.975, 2) = 4.302653 → [-0.77, 2.10] → [0, 1]
    assert (figure.low, figure.high) == (0.0, 1.0)
    with pytest.raises(UndefinedStatisticError):
        MeanValue.of([])


def test_report_dict_and_text() -> None:
    report = retrieval_report(
        [("faq", ["a", "b"], ["b"]), ("faq", ["b"], ["b"]), ("tone", None, None)], ks=[1, 3]
    )
    data = report.to_dict()
    assert data["ks"] == [1, 3]
    assert data["intervals"] == {
        "hit": "Wilson score interval",
        "mean": "Student t interval (n - 1 degrees of freedom), clipped to [0, 1]",
    }
    faq = data["categories"]["faq"]
    assert faq["queries"] == 2 and faq["cases"] == 2
    assert set(faq["metrics"]) == {
        "hit@1", "hit@3", "recall@1", "recall@3", "precision@1", "precision@3",
        "ndcg@1", "ndcg@3", "mrr",
    }  # fmt: skip
    assert faq["metrics"]["hit@1"]["text"] == "1/2 = 50.0% [9.5%, 90.5%]"
    assert faq["metrics"]["mrr"]["mean"] == 0.75
    assert data["categories"]["tone"] == {
        "cases": 1, "queries": 0, "without_data": 1, "without_relevant": 0, "metrics": {}
    }  # fmt: skip
    json.dumps(data)  # JSON-ready
    text = report.to_text()
    assert text.splitlines()[0] == (
        "retrieval: 2 of 3 cases had retrieval data (1 without retrieved/relevant)"
    )
    assert "tone      0 of 1   -  no retrieval data" in text
    assert "faq       2        1  " in text  # every faq case had data
    assert "global" in text


def test_an_empty_ranking_is_counted_and_scores_zero() -> None:
    figures = retrieval_report([("faq", [], ["a"]), ("faq", ["a"], ["a"])], ks=[1]).category("faq")
    assert figures.queries == 2 and figures.without_data == 0
    assert figures.hit[1].successes == 1 and figures.recall[1].value == 0.5


def test_report_refuses_bad_ks_and_names_the_query() -> None:
    with pytest.raises(InputError, match="at least one k"):
        retrieval_report([], ks=[])
    with pytest.raises(InputError, match="k must be"):
        retrieval_report([], ks=[0])
    with pytest.raises(InputError, match="query 2: expected a list"):
        retrieval_report([("a", ["x"], ["x"]), ("a", "x", ["x"])])


def test_queries_from_cases_reads_meta_and_reports_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    rows = [
        {"id": "1", "output": "x", "retrieved": [{"doc_id": "a"}], "relevant": ["a"]},
        {"id": "2", "output": "x"},
        {"id": "3", "output": "x", "retrieved": "a", "relevant": ["a"]},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    cases = tinyeval.load(path)
    assert [tuple(q) for q in queries_from_cases(cases[:2])] == [
        ("default", ("a",), {"a": 1.0}),
        ("default", None, None),
    ]
    with pytest.raises(InputError) as info:
        queries_from_cases(cases)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 3, "retrieved")
    # an explicit id field wins over the guess
    with pytest.raises(InputError, match='no "id" key'):
        queries_from_cases(cases[:1], id_field="id")


# ------------------------------------------------------------------ thresholds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("recall@5=0.8", ("recall", 5, 0.8)),
        ("recall@5>=0.8", ("recall", 5, 0.8)),
        (" precision @ 3 >= 50% ", ("precision", 3, 0.5)),
        ("hit_rate@1>=0.9", ("hit", 1, 0.9)),
        ("NDCG@10>=0.7", ("ndcg", 10, 0.7)),
        ("mrr>=0.5", ("mrr", None, 0.5)),
        ("hit@1>=1", ("hit", 1, 1.0)),
    ],
)
def test_parse_retrieval_threshold(text: str, expected: tuple[object, ...]) -> None:
    assert tuple(parse_retrieval_threshold(text)) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("recal@5>=0.8", "unknown metric 'recal'; did you mean 'recall'?"),
        ("mrr@5>=0.5", "mrr takes no @k"),
        ("recall>=0.8", "recall needs a cutoff"),
        ("recall@0>=0.8", "k must be a whole number of at least 1, got '0'"),
        ("recall@x>=0.8", "k must be a whole number"),
        ("recall@5>0.8", "use '>=' (or '='), not '>'"),
        ("recall@5<=0.8", "use '>=' (or '='), not '<='"),
        ("recall@5>=1.5", "between 0 and 1"),
        ("recall@5>=abc", "between 0 and 1"),
        ("recall@5", "expected METRIC@K>=VALUE"),
        ("", "expected METRIC@K>=VALUE"),
    ],
)
def test_parse_retrieval_threshold_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_retrieval_threshold(text)


def test_threshold_round_trips_through_its_text() -> None:
    threshold = RetrievalThreshold("recall", 5, 0.8)
    assert parse_retrieval_threshold(str(threshold)) == threshold


def test_check_blocks_on_the_value_or_the_lower_bound() -> None:
    # faq: recall@5 = 1, 1, 1, 0 → mean 0.75; billing: 1, 1 → mean 1 with a zero-width interval
    queries = (
        [("faq", ["a"], ["a"])] * 3 + [("faq", ["x"], ["a"])] + [("billing", ["c"], ["c"])] * 2
    )
    report = retrieval_report(queries, ks=[5])
    gate = report.check(["recall@5>=0.7"])
    assert gate.passed and gate.blocking == ()
    assert [v.measured for v in gate.verdicts] == [0.75, 1.0]
    # The lower bound of faq: s = 0.5, se = 0.25, t(0.975, 3) = 3.182446 → 0.75 − 0.80 < 0 → 0.
    lower = report.check(["recall@5>=0.7"], on="lower")
    assert lower.blocking == ("faq",)
    assert lower.verdicts[0].measured == 0.0
    # hit rate on the lower bound uses Wilson: billing 2/2 → low 0.342 < 0.5
    assert report.check(["hit@5>=0.5"], on="lower").blocking == ("faq", "billing")
    assert report.check(["hit@5>=0.5"]).blocking == ()
    assert report.check({"billing": ["mrr>=1"]}).passed
    assert report.check([]).passed


def test_check_blocks_a_category_without_data_and_refuses_unknown_k() -> None:
    report = retrieval_report([("faq", ["a"], ["a"]), ("tone", None, None)], ks=[1, 5])
    gate = report.check(["hit@1>=0.5"])
    assert gate.blocking == ("tone",)
    assert gate.verdicts[1].note == "no queries with retrieval data"
    assert report.check({"gone": ["hit@1>=0.5"]}).blocking == ("gone",)
    # one query: no interval, so it cannot pass on the lower bound
    assert report.check({"faq": ["recall@1>=0.5"]}, on="lower").blocking == ("faq",)
    with pytest.raises(InputError, match="no k = 3"):
        report.check(["recall@3>=0.5"])
    with pytest.raises(InputError, match='"on" must be'):
        report.check(["recall@1>=0.5"], on="upper")
    data = gate.to_dict()
    assert data["blocking"] == ["tone"] and data["verdicts"][0]["threshold"] == "hit@1>=0.5"
    assert "BLOCKS" in gate.to_text()


# ------------------------------------------------------------------ the worked example


def _raw_example() -> list[dict[str, object]]:
    return [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]


def test_example_loads_with_retrieval_data_in_meta() -> None:
    cases = tinyeval.load(EXAMPLE)
    assert len(cases) >= 40
    assert {case.category for case in cases} == {"billing", "card", "account"}
    with_data = [case for case in cases if "retrieved" in case.meta]
    assert with_data and all("relevant" in case.meta for case in with_data)
    for case in with_data:
        ranking = case.meta["retrieved"]
        assert all({"doc_id", "text"} <= set(item) for item in ranking)
        # context is what the model saw: the first five passages
        assert all(item["text"] in (case.context or "") for item in ranking[:5])
    assert {case.label for case in cases} == {"PASS", "FAIL"}
    assert any(isinstance(case.meta["relevant"], dict) for case in with_data)  # graded


def test_example_report_matches_an_independent_count() -> None:
    rows = _raw_example()
    report = retrieval_report(queries_from_cases(tinyeval.load(EXAMPLE)), ks=[1, 3, 5, 10])
    for category in ("billing", "card", "account"):
        mine = [row for row in rows if row["category"] == category]
        scored = [row for row in mine if "retrieved" in row and "relevant" in row]
        figures = report.category(category)
        assert figures.queries == len(scored)
        assert figures.without_data == len(mine) - len(scored)
        reciprocal = []
        for k in (1, 5, 10):
            hits, recalls = 0, []
            for row in scored:
                ids = [item["doc_id"] for item in row["retrieved"]]  # type: ignore[union-attr]
                relevant = set(row["relevant"])  # type: ignore[call-overload]
                found = len(set(ids[:k]) & relevant)
                hits += found > 0
                recalls.append(found / len(relevant))
            assert figures.hit[k].successes == hits, (category, k)
            assert figures.recall[k].value == pytest.approx(sum(recalls) / len(recalls))
        for row in scored:
            ids = [item["doc_id"] for item in row["retrieved"]]  # type: ignore[union-attr]
            ranks = [r for r, doc in enumerate(ids, 1) if doc in set(row["relevant"])]  # type: ignore[call-overload]
            reciprocal.append(1 / ranks[0] if ranks else 0.0)
        assert figures.mrr is not None
        assert figures.mrr.value == pytest.approx(sum(reciprocal) / len(reciprocal))
    total = len(rows)
    assert report.to_text().startswith(f"retrieval: {report.overall.queries} of {total} cases")


def test_example_has_the_documented_situations() -> None:
    rows = [row for row in _raw_example() if "retrieved" in row]
    first_ranks = []
    for row in rows:
        ids = [item["doc_id"] for item in row["retrieved"]]  # type: ignore[union-attr]
        ranks = [r for r, doc in enumerate(ids, 1) if doc in set(row["relevant"])]  # type: ignore[call-overload]
        first_ranks.append(ranks[0] if ranks else None)
    assert first_ranks.count(6) >= 4  # the right document just outside k = 5
    assert first_ranks.count(None) >= 3  # nothing relevant retrieved
    assert sum(row["label"] == "FAIL" for row in rows) >= 10


def test_example_recall_threshold_blocks_the_categories_below_it() -> None:
    recalls: dict[str, list[float]] = {}
    for row in _raw_example():
        if "retrieved" not in row:
            continue
        ids = [item["doc_id"] for item in row["retrieved"]][:5]  # type: ignore[union-attr]
        relevant = set(row["relevant"])  # type: ignore[call-overload]
        recalls.setdefault(str(row["category"]), []).append(
            len(set(ids) & relevant) / len(relevant)
        )
    below = tuple(name for name, values in recalls.items() if sum(values) / len(values) < 0.8)
    assert below  # the example is meant to show a block
    report = retrieval_report(queries_from_cases(tinyeval.load(EXAMPLE)))
    assert report.check(["recall@5>=0.8"]).blocking == below
