"""compare: the size of a change with its paired interval, Holm across categories, margins,
trials as pass fractions, clusters, several runs ranked, and what the runs differ in."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from statistics import NormalDist

import pytest

from tinyeval.cli import main
from tinyeval.errors import InputError
from tinyeval.gating import _clustered_variance, _design_effect, compare_runs, gate_rows
from tinyeval.stats import paired_difference_interval, wilson_interval

Z = NormalDist().inv_cdf(0.975)


def rows(statuses: str, category: str = "c", start: int = 0, **more: object) -> list[dict]:
    return [
        {"id": f"{category}{start + i}", "category": category, **more,
         "status": "pass" if s == "P" else "fail"}
        for i, s in enumerate(statuses)
    ]  # fmt: skip


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def connor(delta: float, psi: float, alpha: float = 0.05, power: float = 0.80) -> int:
    """Connor (1987), written out again: (z_α/2·√ψ + z_β·√(ψ − δ²))² / δ², rounded up."""
    q = NormalDist().inv_cdf
    root = q(1 - alpha / 2) * psi**0.5 + q(power) * (psi - delta**2) ** 0.5
    return math.ceil((root / delta) ** 2)


# ----------------------------------------------------------------- the figures, by function


def test_paired_counts_delta_newcombe_interval_and_exact_p() -> None:
    c = compare_runs(rows("PPPPPPPPPPFFFFF"), rows("FFFFPPPPPPPFFFF")).overall
    # 4 broke (ids 0-3), 1 fixed (id 10): p = 2·P(X ≤ 1), X ~ Bin(5, ½) = 2·(1 + 5)/32 = 0.375
    assert (c.pairs, c.both_pass, c.fixed, c.broke, c.both_fail) == (15, 6, 1, 4, 4)
    assert c.p == pytest.approx(0.375) and c.delta == pytest.approx(-3 / 15)
    assert (c.low, c.high) == pytest.approx(paired_difference_interval(6, 1, 4, 4))
    assert c.decision == "no detectable change" and c.design_effect == 1.0


def test_tango_on_request() -> None:
    c = compare_runs(rows("PPPPPPPPPPFFFFF"), rows("FFFFPPPPPPPFFFF"), interval="tango").overall
    assert (c.low, c.high) == pytest.approx(paired_difference_interval(6, 1, 4, 4, method="tango"))


def test_unpaired_ids_are_reported_not_counted_and_nothing_shared_is_an_error() -> None:
    report = compare_runs(rows("PP") + rows("P", "c", 9), rows("PF") + rows("F", "c", 7))
    assert report.only_before == ("c9",) and report.only_after == ("c7",)
    assert report.overall.pairs == 2
    with pytest.raises(InputError, match="no case id in common"):
        compare_runs(rows("P"), rows("P", "c", 5))


def test_holm_across_categories_raw_and_adjusted() -> None:
    # a: 6 broke → p = 2/2⁶ = 0.03125; b: 3 broke → p = 2/2³ = 0.25.
    # Holm by hand: 2 × 0.03125 = 0.0625 for a; max(0.0625, 1 × 0.25) = 0.25 for b.
    before = rows("P" * 10, "a") + rows("P" * 10, "b")
    after = rows("F" * 6 + "P" * 4, "a") + rows("F" * 3 + "P" * 7, "b")
    a, b = compare_runs(before, after).categories
    assert (a.p, a.p_adjusted) == pytest.approx((0.03125, 0.0625))
    assert (b.p, b.p_adjusted) == pytest.approx((0.25, 0.25))
    assert a.decision == "no detectable change"  # raw p < 0.05, adjusted not
    assert compare_runs(before, after, adjust="none").categories[0].decision == "worse"


def test_a_margin_decides_not_worse_worse_or_inconclusive_with_connors_cases() -> None:
    same = rows("P" * 150 + "F" * 50)
    assert compare_runs(same, same, margin=0.02).overall.decision == "noninferior"
    broke = rows("F" * 40 + "P" * 110 + "F" * 50)
    assert compare_runs(same, broke, margin=0.02).overall.decision == "worse"
    # 3 fixed, 2 broke of 40: Δ = +2.5 points, interval straddles −5; to tell Δ from −M:
    # δ = 0.075, ψ = 5/40, Connor's paired n, less the 40 there are
    before = rows("PP" + "FFF" + "P" * 20 + "F" * 15)
    after = rows("FF" + "PPP" + "P" * 20 + "F" * 15)
    c = compare_runs(before, after, margin=0.05).overall
    assert c.low < -0.05 < c.high and c.decision == "inconclusive"
    assert c.more_cases == connor(0.075, 5 / 40) - 40


def test_trials_each_case_counts_its_pass_fraction() -> None:
    def trials(fractions: list[float], times: int = 1) -> list[dict]:
        return [
            {"id": f"q{i}", "category": "a", "trial": t, "status": "pass" if t < 2 * f else "fail"}
            for i, f in enumerate(fractions * times) for t in range(2)
        ]  # fmt: skip

    before, after = [1, 0.5, 0, 0.5], [1, 1, 0.5, 0.5]
    report = compare_runs(trials(before, 50), trials(after, 50))
    c = report.overall
    # d = (0, .5, .5, 0) × 50: Δ = 0.25, s² = 12.5/199, SE = √(s²/200); expected counts Σxy, …
    se = math.sqrt(12.5 / 199 / 200)
    assert report.trials and c.pairs == 200
    assert (c.both_pass, c.fixed, c.broke, c.both_fail) == pytest.approx((87.5, 62.5, 12.5, 37.5))
    assert (c.delta, c.low, c.high) == pytest.approx((0.25, 0.25 - Z * se, 0.25 + Z * se))
    assert c.p == pytest.approx(2 * NormalDist().cdf(-0.25 / se))
    # four cases are too few for a normal interval: the pass/fail one of the rounded counts
    few = compare_runs(trials(before), trials(after)).overall
    assert (few.both_pass, few.fixed, few.broke, few.both_fail) == (1.75, 1.25, 0.25, 0.75)
    assert (few.low, few.high) == pytest.approx(paired_difference_interval(2, 1, 0, 1))
    one = [{"id": "a", "trial": t, "status": "pass"} for t in range(3)]
    assert compare_runs(one, one).overall.low < -0.5  # one case decides nothing
    two = compare_runs(trials([0, 0]), trials([0.5, 0.5])).overall  # the same change in both
    assert two.p == 1.0 and two.decision == "no detectable change"


def test_clustered_variance_and_design_effect_by_hand() -> None:
    # four values, two clusters of identical values: residuals sum to ±1 per cluster,
    # CR1 = 2/1 · (1 + 1) / 16 = 0.25; every case its own: s²/n = (1/3)/4
    assert _clustered_variance([1, 1, 0, 0], "aabb") == pytest.approx(0.25)
    assert _clustered_variance([1, 1, 0, 0], range(4)) == pytest.approx(1 / 12)
    assert _design_effect([1, 1, 0, 0], "aabb") == pytest.approx(3.0)
    assert _design_effect([1, 0, 1, 0], "aabb") == 1.0  # never below 1
    assert _design_effect([1, 0, 1], "aaa") == 3.0  # one cluster: as good as one case


def test_clusters_widen_the_paired_interval() -> None:
    before = rows("P" * 40)
    after = rows("F" * 5 + "P" * 35)
    plain = compare_runs(before, after).overall
    for i, row in enumerate(after):
        row["cluster"] = f"doc{i // 5}"  # the five broken cases share one document
    clustered = compare_runs(before, after).overall
    assert clustered.design_effect > 1.2 and clustered.delta == plain.delta
    assert clustered.low < plain.low and clustered.high > plain.high


# ----------------------------------------------------------------- simulations


def _category_rows(rng: random.Random, name: str, n: int) -> tuple[list[dict], list[dict]]:
    """n cases, each with its own pass chance, run twice with no true change."""
    chances = rng.choices((0.3, 0.8, 0.95, 1.0), k=n)
    before = [rng.random() < p for p in chances]
    after = [rng.random() < p for p in chances]
    return (
        rows("".join("P" if x else "F" for x in before), name),
        rows("".join("P" if x else "F" for x in after), name),
    )


def test_no_true_change_fails_on_worse_at_most_five_percent_of_twelve_category_runs() -> None:
    rng = random.Random(2026)
    runs, flagged, unadjusted = 1000, 0, 0
    for _ in range(runs):
        before, after = [], []
        for k in range(12):
            old, new = _category_rows(rng, f"k{k}", 30)
            before += old
            after += new
        report = compare_runs(before, after)
        flagged += bool(report.failing("worse"))
        unadjusted += any(c.p < 0.05 and c.delta < 0 for c in report.categories)
    rate, error = flagged / runs, math.sqrt(0.05 * 0.95 / runs)
    print(f"no true change: --fail-on worse in {rate:.1%}, unadjusted {unadjusted / runs:.1%}")
    assert rate <= 0.05 + 2 * error, rate  # Holm holds the familywise rate (about 1%)
    assert unadjusted / runs > 2 * rate, (rate, unadjusted / runs)  # without it: about 10%


def test_clustered_interval_covers_where_the_naive_one_does_not() -> None:
    # 40 clusters of 5 cases, ICC 0.3, true pass rate 0.8: a cluster's rate ~ Beta(a, b)
    # with a + b = 1/ICC − 1, mean 0.8 (the beta-binomial model)
    rng = random.Random(7)
    total = 1 / 0.3 - 1
    covered = naive = 0
    runs = 1000
    for _ in range(runs):
        found = []
        for g in range(40):
            p = rng.betavariate(0.8 * total, 0.2 * total)
            statuses = ["pass" if rng.random() < p else "fail" for _ in range(5)]
            found += [
                {"id": f"{g}-{i}", "category": "a", "cluster": f"doc{g}", "status": status}
                for i, status in enumerate(statuses)
            ]
        verdict = gate_rows(found).categories[0]
        covered += verdict.low <= 0.8 <= verdict.high
        low, high = wilson_interval(verdict.passed, verdict.total)
        naive += low <= 0.8 <= high
    print(f"coverage: clustered {covered / runs:.1%}, naive {naive / runs:.1%}")
    assert covered / runs >= 0.93, covered / runs  # about 94%
    assert naive / runs < 0.90, naive / runs  # about 80%: too narrow by √2.2


# ----------------------------------------------------------------- through the command line


CASES = [
    {"id": f"t{i}", "category": "tone" if i < 20 else "amounts", "input": f"q{i}",
     "doc": f"d{i // 4}", "output": "ok" if i % 5 else "bad", "expect": {"contains": ["ok"]}}
    for i in range(40)
]  # fmt: skip


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def run_on(cases: list[dict], out: str, *extra: str) -> None:
    write_jsonl(Path(out + ".cases.jsonl"), cases)
    assert main(["run", out + ".cases.jsonl", "--out", out, "-q", *extra]) == 0


def test_cli_before_after_in_words_json_and_no_dataset_warning_for_outputs(
    folder: Path, capsys
) -> None:
    run_on(CASES, "before.jsonl")
    changed = [dict(c, output="bad") if c["id"] in ("t1", "t2", "t3") else c for c in CASES]
    run_on(changed, "after.jsonl")
    capsys.readouterr()
    assert main(["compare", "before.jsonl", "after.jsonl"]) == 0
    done = capsys.readouterr()
    # tone: 3 of 16 passing cases broke; Newcombe's interval, McNemar's p = 2/8
    low, high = paired_difference_interval(13, 0, 3, 4)
    said = f"−15.0 points [{100 * low:.1f}, {100 * high:+.1f}]".replace("-", "−")
    assert said in done.out and "p = 0.25 (adjusted 0.5): no detectable change" in done.out
    assert "16/20 → 13/20 pass: 13 both pass, 0 fixed, 3 broke, 4 both fail" in done.out
    assert "warning" not in done.err  # only the outputs changed: the same dataset
    assert main(["compare", "before.jsonl", "after.jsonl", "--json", "--fail-on", "worse"]) == 0
    tone = json.loads(capsys.readouterr().out)["categories"]["tone"]
    keys = {"pairs", "both_pass", "fixed", "broke", "both_fail", "delta", "low", "high", "p",
            "p_adjusted", "margin", "decision"}  # fmt: skip
    assert keys <= set(tone) and (tone["broke"], tone["p_adjusted"]) == (3, 0.5)
    assert main(["compare", "before.jsonl", "after.jsonl", "--json", "--interval", "tango"]) == 0
    tone = json.loads(capsys.readouterr().out)["categories"]["tone"]
    tango = paired_difference_interval(13, 0, 3, 4, method="tango")
    assert (tone["low"], tone["high"]) == pytest.approx(tango)
    run_on([dict(c, input="other") if c["id"] == "t1" else c for c in changed], "moved.jsonl")
    capsys.readouterr()
    assert main(["compare", "before.jsonl", "moved.jsonl"]) == 0
    assert "1 paired case changed input, context or checks (e.g. 't1')" in capsys.readouterr().err


def test_cli_fail_on_worse_and_on_not_noninferior(folder: Path, capsys) -> None:
    run_on(CASES, "before.jsonl")
    run_on([dict(c, output="bad") for c in CASES], "after.jsonl")
    capsys.readouterr()
    assert main(["compare", "before.jsonl", "after.jsonl", "--fail-on", "worse"]) == 1
    assert "worse" in capsys.readouterr().out
    assert main(["compare", "before.jsonl", "before.jsonl", "--fail-on", "worse"]) == 0
    assert main(["compare", "before.jsonl", "before.jsonl", "--fail-on", "not-noninferior"]) == 2
    assert "--fail-on not-noninferior needs --margin" in capsys.readouterr().err
    # 32 of 40 pass both times, nothing changed: [−x, +x] is wider than 2 points at n = 40
    argv = ["compare", "before.jsonl", "before.jsonl", "--fail-on", "not-noninferior"]
    assert main([*argv, "--margin", "2"]) == 1
    assert "inconclusive — about" in capsys.readouterr().out
    assert main([*argv, "--margin", "0.5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["overall"]["margin"] == 0.5 and data["failing"] == []
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--margin", "two"])
    assert stopped.value.code == 2
    assert "expected points (2) or a fraction (0.02), got 'two'" in capsys.readouterr().err


def test_cli_clusters_mapped_from_a_field_widen_gate_and_compare(folder: Path, capsys) -> None:
    clustered = [dict(c, output="bad") if c["id"] in ("t0", "t1", "t2", "t3") else c for c in CASES]
    run_on(clustered, "before.jsonl", "--field", "cluster=doc")
    written = Path("before.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["cluster"] for line in written} >= {"d0", "d9"}
    capsys.readouterr()
    assert main(["gate", "before.jsonl", "--default-threshold", "0.5", "--json"]) == 0
    tone = json.loads(capsys.readouterr().out)["gate"]["categories"]["tone"]
    assert tone["design_effect"] > 1.2 and tone["low"] < wilson_interval(13, 20)[0]
    assert main(["gate", "before.jsonl", "--default-threshold", "0.5"]) == 0
    assert "(design effect " in capsys.readouterr().out
    run_on(CASES, "after.jsonl", "--field", "cluster=doc")
    capsys.readouterr()
    assert main(["compare", "before.jsonl", "after.jsonl"]) == 0
    assert "design effect" in capsys.readouterr().out


def test_cli_ranks_several_runs_and_groups_those_like_the_best(folder: Path, capsys) -> None:
    run_on(CASES, "a.jsonl")
    run_on([dict(c, output="ok") for c in CASES], "best.jsonl")
    run_on([dict(c, output="bad") for c in CASES], "worst.jsonl")
    run_on([dict(c, output="ok") if c["id"] != "t0" else c for c in CASES], "close.jsonl")
    capsys.readouterr()
    assert main(["compare", "a.jsonl", "worst.jsonl", "close.jsonl", "best.jsonl", "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)["ranking"]
    assert [r["run"] for r in ranked] == ["best.jsonl", "close.jsonl", "a.jsonl", "worst.jsonl"]
    # against the best: close 1 broke (p = 1), a 8 broke (p = 2/2⁸), worst 40 broke (2/2⁴⁰);
    # Holm by hand: the smallest × 3, then × 2, then × 1, never below the one before
    assert [r["p_adjusted"] for r in ranked] == pytest.approx([1, 1, 4 / 2**8, 6 / 2**40])
    assert [r["decision"] for r in ranked[1:]] == ["no detectable change", "worse", "worse"]
    assert main(["compare", "a.jsonl", "worst.jsonl", "best.jsonl"]) == 0
    out = capsys.readouterr().out
    assert "each against the best, best.jsonl" in out and "a.jsonl      40/40 → 32/40 pass" in out
    assert main(["compare", "a.jsonl"]) == 2
    assert main(["compare", "a.jsonl", "worst.jsonl", "best.jsonl", "--margin", "2"]) == 2


def test_the_suite_files_margin_is_used_when_no_margin_is_given(folder: Path, capsys) -> None:
    run_on(CASES, "before.jsonl")
    Path("tinyeval.toml").write_text('cases = "before.jsonl.cases.jsonl"\nmargin = "50%"\n')
    capsys.readouterr()
    argv = ["compare", "before.jsonl", "before.jsonl", "--fail-on", "not-noninferior", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["margin"] == 0.5
    assert main([*argv, "--margin", "1"]) == 1  # the option wins: 1 point is too close to tell
    Path("tinyeval.toml").write_text('cases = "before.jsonl.cases.jsonl"\nmargin = "half"\n')
    assert main(argv) == 2
    assert "tinyeval.toml:2: margin: expected a rate from 0 to 1" in capsys.readouterr().err


def test_the_suite_files_fields_map_the_cluster(folder: Path) -> None:
    write_jsonl(Path("cases.jsonl"), CASES)
    Path("tinyeval.toml").write_text('cases = "cases.jsonl"\n[fields]\ncluster = "doc"\n')
    assert main(["run", "--out", "r.jsonl", "-q"]) == 0
    rows = [json.loads(line) for line in Path("r.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["cluster"] for row in rows[:5]] == ["d0", "d0", "d0", "d0", "d1"]


def test_run_widens_its_table_for_clusters_exactly_as_gate_on_its_rows(
    folder: Path, capsys
) -> None:
    # 40 clusters of 5 cases sharing their outcome mostly (high ICC): 5, 5, 5, 4, 0 passing
    passing = [(5, 5, 5, 4, 0)[g % 5] for g in range(40)]
    cases = [
        {"id": f"{g}-{i}", "category": "docs", "cluster": f"doc{g}",
         "output": "ok" if i < passing[g] else "bad", "expect": {"contains": ["ok"]}}
        for g in range(40) for i in range(5)
    ]  # fmt: skip
    write_jsonl(Path("c.jsonl"), cases)
    argv = ["--default-threshold", "0.68", "--inconclusive", "block"]
    ran = main(["run", "c.jsonl", "--out", "rows.jsonl", *argv])
    run_out = capsys.readouterr().out
    gated = main(["gate", "rows.jsonl"])
    gate_out = capsys.readouterr().out
    # the design effect by hand: CR1 variance of the mean over the naive one
    values = [float(i < k) for k in passing for i in range(5)]
    n, p = len(values), sum(values) / len(values)
    residuals = [sum(values[5 * g : 5 * g + 5]) - 5 * p for g in range(40)]
    naive = n / (n - 1) * sum((x - p) ** 2 for x in values) / n**2
    effect = 40 / 39 * sum(e * e for e in residuals) / n**2 / naive
    low, high = wilson_interval(152, 200, design_effect=effect)
    cell = f"152/200 = 76.0% [{low:.1%}, {high:.1%}] (design effect {effect:.1f})"
    line = next(x for x in run_out.splitlines() if x.startswith("docs "))
    assert cell in line and "inconclusive" in line and "(BLOCKS)" in line
    assert line in gate_out.splitlines() and ran == gated == 1
    # without the clusters the same cases pass: the naive interval clears 68%
    write_jsonl(Path("c.jsonl"), [{k: v for k, v in c.items() if k != "cluster"} for c in cases])
    assert main(["run", "c.jsonl", "--out", "plain.jsonl", *argv]) == 0
    assert "design effect" not in capsys.readouterr().out


def test_compare_says_which_rate_it_compares() -> None:
    verdict = {"support": {"verdict": "PASS"}}
    judged = rows("PPPF", "answers", judges=verdict) + rows("PPF", "amounts")
    report = compare_runs(judged, judged)
    by_name = {c.category: c for c in report.categories}
    assert (by_name["answers"].decided_on, by_name["amounts"].decided_on) == ("judge", "checks")
    assert report.overall.decided_on == "judge"  # as the gate's global line: a judge counts
    assert report.to_dict()["categories"]["answers"]["decided_on"] == "judge"
    text = report.to_text().splitlines()
    assert text[0].startswith("amounts    2/3 → 2/3 pass")  # checks only: no mark
    assert text[2].startswith("answers    judge 3/4 → 3/4 pass")
    assert text[-1] == "judge: rates of the judge's verdicts; people's estimate is not compared"
    plain = compare_runs(rows("PPF", "amounts"), rows("PPF", "amounts"))
    assert plain.overall.decided_on == "checks" and "judge" not in plain.to_text()
