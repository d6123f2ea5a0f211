"""The suite file: finding it, reading it, refusing what it cannot mean, overriding it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tinyeval.errors import InputError
from tinyeval.gating import from_rows
from tinyeval.suite import JudgeSpec, find_suite, load_suite

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- finding


def test_found_in_a_parent_directory(tmp_path: Path) -> None:
    suite = write(tmp_path, "tinyeval.toml", 'cases = "c.jsonl"\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert Path(find_suite(deep)).resolve() == suite.resolve()
    loaded = load_suite(start=deep)
    # the cases path is relative to the suite file, not to where the search started
    assert Path(loaded.cases[0]).resolve() == (tmp_path / "c.jsonl").resolve()


def test_the_nearest_directory_wins(tmp_path: Path) -> None:
    write(tmp_path, "tinyeval.toml", 'cases = "outer.jsonl"\n')
    inner = write(tmp_path / "inner", "tinyeval.toml", 'cases = "inner.jsonl"\n')
    assert Path(find_suite(inner.parent)).resolve() == inner.resolve()


def test_tinyeval_toml_wins_over_pyproject_in_the_same_directory(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.tinyeval]\ncases = "from-pyproject.jsonl"\n')
    write(tmp_path, "tinyeval.toml", 'cases = "from-toml.jsonl"\n')
    assert Path(load_suite(start=tmp_path).cases[0]).name == "from-toml.jsonl"


def test_pyproject_table_is_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.tinyeval]\ncases = "c.jsonl"\n'
        "[tool.tinyeval.thresholds]\ntone = 0.85\n",
    )
    suite = load_suite(start=tmp_path)
    assert suite.thresholds == {"tone": 0.85}
    assert Path(suite.path or "").name == "pyproject.toml"


def test_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    write(tmp_path, "tinyeval.toml", 'cases = "outer.jsonl"\n')
    write(tmp_path / "pkg", "pyproject.toml", '[project]\nname = "pkg"\n')
    found = find_suite(tmp_path / "pkg")
    assert found is not None and Path(found).resolve() == (tmp_path / "tinyeval.toml").resolve()


def test_nothing_found_says_where_it_looked(tmp_path: Path, monkeypatch) -> None:
    # Path.parents of tmp_path may hold a suite file on a developer's machine: look from a
    # fake root instead, by making every candidate absent.
    monkeypatch.setattr(Path, "is_file", lambda self: False)
    assert find_suite(tmp_path) is None
    with pytest.raises(InputError, match=r"no tinyeval\.toml"):
        load_suite(start=tmp_path)


def test_a_directory_given_reads_its_own_suite(tmp_path: Path) -> None:
    write(tmp_path / "evals", "pyproject.toml", '[tool.tinyeval]\ncases = "c.jsonl"\n')
    assert Path(load_suite(tmp_path / "evals").cases[0]).name == "c.jsonl"
    with pytest.raises(InputError, match="in this directory"):
        load_suite(tmp_path)  # not upwards: the directory given is the one meant


def test_explicit_pyproject_without_the_table_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(InputError, match=r"pyproject.toml: no \[tool.tinyeval\] table"):
        load_suite(path)


# --------------------------------------------------------------------------- errors


def test_misspelt_key_names_file_line_and_the_key_meant(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tinyeval.toml",
        'cases = "c.jsonl"\n\n[thresholds]\ntone = 0.85\n\n'
        '[gate]\n# comment\ninconclusiv = "block"\n',
    )
    with pytest.raises(InputError) as caught:
        load_suite(path)
    error = caught.value
    assert isinstance(error, InputError)
    assert (error.path, error.line, error.field) == (str(path), 8, "gate.inconclusiv")
    assert str(error).endswith("did you mean 'inconclusive'?")


def test_misspelt_key_in_the_second_judge_points_at_its_line(tmp_path: Path) -> None:
    text = (
        'cases = "c.jsonl"\n'  # 1
        "[[judges]]\n"  # 2
        'criterion = "unsupported-claims"\n'  # 3
        'categories = [\n  "a",\n  "b = c",\n]\n'  # 4-7: a multi-line array with an "="
        "[[judges]]\n"  # 8
        'criterion = "polite"\n'  # 9
        "vote = 3\n"  # 10
    )
    with pytest.raises(InputError) as caught:
        load_suite(write(tmp_path, "tinyeval.toml", text))
    assert (caught.value.line, caught.value.field) == (10, "judges[1].vote")
    assert "did you mean 'votes'?" in str(caught.value)


def test_dotted_keys_and_pyproject_lines(tmp_path: Path) -> None:
    text = (
        '[project]\nname = "x"\n'  # 1-2
        "[tool.tinyeval]\n"  # 3
        'cases = "c.jsonl"\n'  # 4
        'models.judge.spec = "builtin"\n'  # 5
        "models.judge.temprature = 0\n"  # 6
    )
    with pytest.raises(InputError) as caught:
        load_suite(write(tmp_path, "pyproject.toml", text))
    assert (caught.value.line, caught.value.field) == (6, "models.judge.temprature")
    assert "did you mean 'temperature'?" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "line", "field", "expected"),
    [
        ('cases = "c.jsonl"\nconcurrency = "4"\n', 2, "concurrency", "a whole number >= 1"),
        ('cases = "c.jsonl"\n[thresholds]\ntone = 1.5\n', 3, "thresholds.tone", "a rate"),
        ('cases = "c.jsonl"\n[gate]\ninconclusive = "no"\n', 3, "gate.inconclusive",
         "one of pass, block"),
        ('cases = "c.jsonl"\n[gate]\nallow_unchecked = 1\n', 3, "gate.allow_unchecked", "true"),
        ('cases = 3\n', 1, "cases", "a non-empty string"),
        ('cases = "c.jsonl"\n[[judges]]\ncriterion = "x"\nvotes = 2\n', 4, "judges[0].votes",
         "an odd number"),
        ('cases = "c.jsonl"\n[holdout]\nfraction = 1.2\n', 3, "holdout.fraction", "a fraction"),
        ('cases = "c.jsonl"\n[[judges]]\ncriterion = "a"\n[[judges]]\ncriterion = [\n "y = 2",\n]',
         5, "judges[1].criterion", "a non-empty string"),
        ('cases = "c.jsonl"\n\n[models.generate]\nspec = "x"\ntimeout = 0\n', 5,
         "models.generate.timeout", "a number > 0"),
    ],
)  # fmt: skip
def test_wrong_types_name_the_key_the_type_and_the_line(
    tmp_path: Path, text: str, line: int, field: str, expected: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_suite(write(tmp_path, "tinyeval.toml", text))
    assert (caught.value.line, caught.value.field) == (line, field)
    assert f"expected {expected}" in caught.value.reason


def test_an_api_key_is_refused(tmp_path: Path) -> None:
    text = 'cases = "c.jsonl"\n[models.judge]\nspec = "openai:x"\napi_key = "sk-secret"\n'
    with pytest.raises(InputError) as caught:
        load_suite(write(tmp_path, "tinyeval.toml", text))
    assert caught.value.line == 4 and "environment" in str(caught.value)
    assert "sk-secret" not in str(caught.value)


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_suite(write(tmp_path, "tinyeval.toml", 'cases = "c.jsonl"\n[gate\n'))
    assert caught.value.line == 2 and "not valid TOML" in str(caught.value)


def test_missing_cases_and_judge_without_criterion(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no 'cases' key"):
        load_suite(write(tmp_path, "tinyeval.toml", "default_threshold = 0.5\n"))
    text = 'cases = "c.jsonl"\n[[judges]]\nname = "x"\n'
    with pytest.raises(InputError, match="exactly one of 'criterion'") as caught:
        load_suite(write(tmp_path, "tinyeval.toml", text))
    assert caught.value.line == 2


# --------------------------------------------------------------------------- contents


def test_full_suite_reads_every_setting(tmp_path: Path) -> None:
    text = """
cases = ["a.jsonl", "more/b.jsonl"]
format = "jsonl"
concurrency = 4
default_threshold = "50%"
[fields]
input = "request.q"
[thresholds]
amount_extraction = 1
tone = "85%"
[gate]
inconclusive = "block"
allow_unchecked = true
[[judges]]
rubric = "rubrics/polite.json"
name = "polite"
style = "evidence-first"
votes = 3
model = "cmd:./judge.sh"
categories = ["tone"]
[models.judge]
spec = "builtin"
temperature = 0
[models.generate]
spec = "openai:m"
max_tokens = 200
timeout = 30
base_url = "http://127.0.0.1:9/v1"
prompt_template = "prompt.txt"
[price]
in = 0.15
out = 0.6
[holdout]
fraction = 0.2
salt = "s"
[reports]
junit = "out/j.xml"
"""
    suite = load_suite(write(tmp_path, "tinyeval.toml", text))
    base = str(tmp_path)
    assert suite.cases == (os.path.join(base, "a.jsonl"), os.path.join(base, "more/b.jsonl"))
    assert suite.thresholds == {"amount_extraction": 1.0, "tone": 0.85}
    assert (suite.default_threshold, suite.inconclusive) == (0.5, "block")
    assert (
        suite.allow_unchecked and suite.concurrency == 4 and suite.fields == {"input": "request.q"}
    )
    (judge,) = suite.judges
    assert judge == JudgeSpec(
        rubric=os.path.join(base, "rubrics/polite.json"), name="polite", style="evidence-first",
        votes=3, model="cmd:./judge.sh", categories=("tone",),
    )  # fmt: skip
    assert (suite.judge_model, suite.temperature, suite.generate_model) == (
        "builtin",
        0.0,
        "openai:m",
    )
    assert suite.prompt_template == os.path.join(base, "prompt.txt")
    assert (suite.max_tokens, suite.timeout) == (200, 30.0)
    assert suite.price == "in=0.15,out=0.6"
    assert (suite.holdout, suite.salt) == (0.2, "s")
    assert suite.junit == os.path.join(base, "out/j.xml") and suite.html is None
    # the canonical form gives the paths back as written
    assert suite.to_dict()["judges"][0]["rubric"] == "rubrics/polite.json"


def test_fingerprint_ignores_layout_and_location_but_not_settings(tmp_path: Path) -> None:
    one = write(tmp_path / "one", "tinyeval.toml", 'cases = "c.jsonl"\n[thresholds]\ntone = 0.85\n')
    # comments, a dotted key instead of a table, "85%" for 0.85, another order and directory
    two = write(
        tmp_path / "two",
        "tinyeval.toml",
        '# a comment\nthresholds.tone = "85%"\ncases = "c.jsonl"\n',
    )
    first, second = load_suite(one), load_suite(two)
    assert first.fingerprint == second.fingerprint
    assert len(first.fingerprint) == 16 and int(first.fingerprint, 16) >= 0
    third = write(
        tmp_path / "three", "tinyeval.toml", 'cases = "c.jsonl"\n[thresholds]\ntone = 0.9\n'
    )
    assert load_suite(third).fingerprint != first.fingerprint
    # the same suite loaded twice: the same fingerprint
    assert load_suite(one).fingerprint == first.fingerprint


def test_the_bundled_example_is_the_readme_first_command() -> None:
    suite = load_suite(EXAMPLES / "tinyeval.toml")
    assert [Path(p).resolve() for p in suite.cases] == [(EXAMPLES / "cases.jsonl").resolve()]
    assert suite.thresholds == {"amount_extraction": 1.0} and suite.default_threshold == 0.5
    assert [(j.criterion, j.categories) for j in suite.judges] == [
        ("unsupported-claims", ("support_answers",))
    ]
    assert suite.judge_model == "builtin"


def test_the_example_suite_evaluates_as_the_readme_command_does() -> None:
    """The suite, run a case at a time, gives the rows the long command line gives."""
    import tinyeval
    from tinyeval.ci.testing import SuiteRunner

    suite = load_suite(EXAMPLES / "tinyeval.toml")
    cases = tinyeval.load(suite.cases[0])
    runner = SuiteRunner(suite)
    by_suite = {case.id: runner.evaluate(case)["status"] for case in cases}
    # --criterion unsupported-claims --judge-category support_answers (judge model builtin)
    result = tinyeval.run(
        cases,
        judges=[tinyeval.Judge("unsupported-claims")],
        judge_model="builtin",
        judge_categories=["support_answers"],
    )
    assert by_suite == {row["id"]: row["status"] for row in result.rows}
    # --threshold amount_extraction=1.0 --default-threshold 0.5: the same gate, which blocks
    report = runner.gate([runner.evaluate(case) for case in cases])
    people = from_rows(result.rows)  # the cases carry labels: people decide support
    same = tinyeval.gate(
        result.categories, {"amount_extraction": 1.0}, default_threshold=0.5, **people
    )
    assert report.to_dict() == same.to_dict() and not report.passed


def test_lines_in_arrays_of_tables_under_pyproject_and_inline_tables(tmp_path: Path) -> None:
    text = (
        "[tool.tinyeval]\n"  # 1
        'cases = "c.jsonl"\n'  # 2
        "[[tool.tinyeval.judges]]\n"  # 3
        'criterion = "a"\n'  # 4
        "[[tool.tinyeval.judges]]\n"  # 5
        'criterion = """two\n'  # 6
        "lines = 3\n"  # 7: inside a multi-line string, not a key
        '"""\n'  # 8
        'style = "verdict-last"\n'  # 9
    )
    with pytest.raises(InputError) as caught:
        load_suite(write(tmp_path, "pyproject.toml", text))
    assert (caught.value.line, caught.value.field) == (9, "judges[1].style")
    inline = 'cases = "c.jsonl"\n\n"models" = { judge = { spec = "builtin", tmp = 1 } }\n'
    with pytest.raises(InputError) as caught:
        load_suite(write(tmp_path / "inline", "tinyeval.toml", inline))
    # a key inside an inline table is placed on the line of the key that holds the table
    assert (caught.value.line, caught.value.field) == (3, "models.judge.tmp")


def test_judge_and_generate_models_share_one_temperature(tmp_path: Path) -> None:
    text = 'cases = "c.jsonl"\n[models.judge]\nspec = "a"\ntemperature = 0\n'
    text += '[models.generate]\nspec = "b"\ntemperature = 1\n'
    with pytest.raises(InputError, match="differ in temperature") as caught:
        load_suite(write(tmp_path, "tinyeval.toml", text))
    assert (caught.value.line, caught.value.field) == (7, "models.generate.temperature")
