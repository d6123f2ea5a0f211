"""Hostile and malformed input files, through the library and through every command that reads one.

A generator writes each kind of bad file (deep nesting, huge integers, lone
surrogates, NUL bytes, duplicate keys, bombs, truncated gzip, a wrong type in
each field); each must end in exit 2 with one line on stderr, no traceback and
no hang, and :func:`tinyeval.load` must raise a one-line :class:`DatasetError`.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile import ROOT, assert_refused, bounded_run, refused_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tinyeval
from tinyeval.dataset import DatasetError

HAS_YAML = True
try:
    import yaml  # noqa: F401
except ImportError:  # pragma: no cover
    HAS_YAML = False

DEEP = 200_000  # far past the interpreter's recursion limit
GOOD = {"id": "a", "output": "hola", "category": "c"}


def _jsonl(*lines: bytes) -> bytes:
    return b"\n".join(lines) + b"\n"


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9)


def _whitespace_bomb() -> bytes:
    # 80 MiB of spaces and no newline: over the 64 MiB line cap, ~80 KB on disk
    out = gzip.compress(b"")[:0]
    import io

    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as stream:
        block = b" " * 2**20
        for _ in range(80):
            stream.write(block)
    return out + buffer.getvalue()


def _alias_bomb() -> bytes:
    lines = [b'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        refs = ",".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{refs}]".encode())
    lines.append(b"cases:\n- id: bomb\n  output: x\n  meta: *l9")
    return b"\n".join(lines) + b"\n"


def _wrong(field: str, value: object) -> bytes:
    return _jsonl(json.dumps({**GOOD, field: value}).encode())


# name -> (file name, contents): every kind of bad cases file
CASES_FILES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "deep-array": ("c.jsonl", lambda: b'{"id":"a","x":' + b"[" * DEEP + b"]" * DEEP + b"}\n"),
    "deep-object": (
        "c.jsonl",
        lambda: b'{"id":"a","x":' + b'{"k":' * DEEP + b"1" + b"}" * DEEP + b"}\n",
    ),
    "deep-json-list": ("c.json", lambda: b'[{"id":"a","x":' + b"[" * DEEP + b"]" * DEEP + b"}]"),
    "huge-int": ("c.jsonl", lambda: _jsonl(b'{"id":"a","output":"x","n":' + b"7" * 6000 + b"}")),
    "huge-int-json": ("c.json", lambda: b'[{"id":"a","n":' + b"7" * 6000 + b"}]"),
    "surrogate-id": ("c.jsonl", lambda: _jsonl(b'{"id":"a\\ud800","output":"x"}')),
    "surrogate-category": ("c.jsonl", lambda: _jsonl(b'{"id":"a","category":"\\udc00"}')),
    "surrogate-output": ("c.jsonl", lambda: _jsonl(b'{"id":"a","output":"ok \\udbff"}')),
    "surrogate-meta": ("c.json", lambda: b'[{"id":"a","meta":{"k":["\\ud800"]}}]'),
    "nul-jsonl": ("c.jsonl", lambda: _jsonl(b'{"id":"a","output":"x\x00y"}')),
    "nul-csv": ("c.csv", lambda: b"id,output\na,x\x00y\n"),
    "nul-csv-header": ("c.csv", lambda: b"id,out\x00put\na,x\n"),
    "duplicate-key": ("c.jsonl", lambda: _jsonl(b'{"id":"a","output":"x","output":"y"}')),
    "duplicate-key-nested": (
        "c.jsonl",
        lambda: _jsonl(b'{"id":"a","expect":{"contains":"x","contains":"y"}}'),
    ),
    "duplicate-key-json": ("c.json", lambda: b'[{"id":"a","id":"b"}]'),
    "duplicate-key-csv-cell": (
        "c.csv",
        lambda: b'id,expect\na,"{""contains"":""x"",""contains"":""y""}"\n',
    ),
    "invalid-utf8": ("c.jsonl", lambda: _jsonl(b'{"id":"a"}', b'{"id":"b\xff"}')),
    "truncated-gzip": (
        "c.jsonl.gz",
        lambda: _gzip(_jsonl(*[b'{"id":"%d"}' % n for n in range(500)]))[:300],
    ),
    "not-gzip": ("c.jsonl.gz", lambda: b"this is not gzip at all"),
    "whitespace-gzip-bomb": ("c.jsonl.gz", _whitespace_bomb),
    "cut-json": ("c.json", lambda: b'[{"id":"a"},'),
    "cut-jsonl": ("c.jsonl", lambda: b'{"id":"a"}\n{"id":"b","out'),
    "binary": ("c.jsonl", lambda: bytes(range(256)) * 4),
    "empty": ("c.jsonl", lambda: b""),
    "only-blank-lines": ("c.jsonl", lambda: b"\n\n   \n"),
    "top-level-scalar": ("c.json", lambda: b"42"),
    "id-list": ("c.jsonl", lambda: _wrong("id", ["a"])),
    "id-empty": ("c.jsonl", lambda: _wrong("id", " ")),
    "category-object": ("c.jsonl", lambda: _wrong("category", {"a": 1})),
    "output-number": ("c.jsonl", lambda: _wrong("output", 3.5)),
    "context-number": ("c.jsonl", lambda: _wrong("context", 7)),
    "expect-list": ("c.jsonl", lambda: _wrong("expect", ["contains"])),
    "expect-bad-regex": ("c.jsonl", lambda: _wrong("expect", {"regex": "("})),
    "expect-exponential-regex": ("c.jsonl", lambda: _wrong("expect", {"regex": "^(a+)+$"})),
    "expect-unknown-key": ("c.jsonl", lambda: _wrong("expect", {"containz": "x"})),
    "tool-calls-string": ("c.jsonl", lambda: _wrong("tool_calls", "search")),
    "label-maybe": ("c.jsonl", lambda: _wrong("label", "maybe")),
    "label-nan": ("c.jsonl", lambda: b'{"id":"a","label":NaN}\n'),
    "record-list": ("c.jsonl", lambda: b"[1, 2]\n"),
    "duplicate-id": ("c.jsonl", lambda: _jsonl(b'{"id":"a"}', b'{"id":"a"}')),
}
if HAS_YAML:
    CASES_FILES |= {
        "yaml-alias-bomb": ("c.yaml", _alias_bomb),
        "yaml-duplicate-key": ("c.yaml", lambda: b"- id: a\n  output: x\n  output: y\n"),
        "yaml-deep": ("c.yaml", lambda: b"- id: a\n  x: " + b"[" * 500 + b"]" * 500 + b"\n"),
        "yaml-huge-int": ("c.yaml", lambda: b"- id: a\n  n: " + b"9" * 6000 + b"\n"),
        "yaml-surrogate": ("c.yaml", lambda: b'- id: a\n  output: "x\\ud800"\n'),
        "yaml-self-alias": ("c.yaml", lambda: b"- &a\n  id: a\n  x: *a\n"),
        "yaml-date": ("c.yaml", lambda: b"- id: a\n  when: 2024-01-01\n"),
    }


def _write(folder: Path, name: str) -> Path:
    filename, make = CASES_FILES[name]
    path = folder / name / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(make())
    return path


@pytest.mark.parametrize("name", sorted(CASES_FILES))
def test_load_refuses_each_hostile_file_in_one_line(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path, name)
    with pytest.raises(DatasetError) as caught:
        tinyeval.load(path)
    message = str(caught.value)
    assert "\n" not in message and message.strip()
    message.encode("utf-8")  # the message itself is writable
    assert caught.value.path is not None


# one of each class, in a real process with a timeout: exit code, stderr, no hang
SUBPROCESS_KINDS = [
    "deep-array",
    "huge-int",
    "surrogate-id",
    "nul-csv",
    "duplicate-key",
    "truncated-gzip",
    "whitespace-gzip-bomb",
    "binary",
    "expect-exponential-regex",
    "yaml-alias-bomb" if HAS_YAML else "cut-json",
]


def test_run_refuses_hostile_cases_files_in_one_line_without_hanging(tmp_path: Path) -> None:
    paths = {name: _write(tmp_path, name) for name in SUBPROCESS_KINDS}

    def run(path: Path) -> subprocess.CompletedProcess[str]:
        return bounded_run(["run", str(path), "--out", f"{path}.out"], tmp_path)

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(paths, pool.map(run, paths.values()), strict=True))
    for name, result in done.items():
        assert_refused(result, None, f"run {name}")


@pytest.mark.parametrize("name", sorted(CASES_FILES))
@pytest.mark.parametrize("command", ["run", "split"])
def test_every_command_reading_cases_refuses_each_hostile_file_in_one_line(
    tmp_path: Path, name: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tinyeval.cli import main

    path = _write(tmp_path, name)
    argv = {
        "run": ["run", str(path), "--out", str(tmp_path / "out.jsonl"), "-q"],
        "split": ["split", str(path), "--holdout-out", str(tmp_path / "h.jsonl"),
                  "--dev-out", str(tmp_path / "d.jsonl")],
    }[command]  # fmt: skip
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err


# --- results and labels files: read by the runner's row reader and by calibrate

GOOD_ROW = {
    "id": "sup-001",
    "category": "c",
    "status": "pass",
    "checks": {},
    "check_details": {},
    "judges": {},
    "output": "ok",
}


def _row(**changes: object) -> bytes:
    return json.dumps({**GOOD_ROW, **changes}).encode() + b"\n"


RESULTS_FILES: dict[str, Callable[[], bytes]] = {
    "deep": lambda: _row() + b'{"id":"x","a":' + b"[" * DEEP + b"]" * DEEP + b"}\n",
    "huge-int": lambda: _row() + b'{"id":"x","n":' + b"7" * 6000 + b"}\n",
    "judges-list": lambda: _row(judges=[1]),
    "judges-inner-string": lambda: _row(judges={"j": "PASS"}),
    "invalid-utf8": lambda: _row().replace(b"sup-001", b"sup-\xff01"),
    "row-list": lambda: b"[1, 2]\n",
}

# a pass row whose judges entry is not an object is read as a pass (its judge is ignored);
# every other hostile row is refused
MAY_BE_READ = {"judges-inner-string"}


def _results_cases() -> list[object]:
    return [
        pytest.param(command, name, id=f"{command}-{name}")
        for command in ("gate", "report", "calibrate")
        for name in sorted(RESULTS_FILES)
    ]


@pytest.mark.parametrize(("command", "name"), _results_cases())
def test_commands_reading_results_refuse_hostile_rows_in_one_line(
    tmp_path: Path, command: str, name: str
) -> None:
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(RESULTS_FILES[name]())
    argv = {
        "gate": ["gate", str(path), "--default-threshold", "0.5"],
        "report": ["report", str(path), "--junit", str(tmp_path / "j.xml")],
        "calibrate": ["calibrate", str(path), str(ROOT / "examples" / "labels.jsonl")],
    }[command]
    done, written = refused_run(argv, tmp_path)
    if name in MAY_BE_READ and done.returncode == 0:
        assert "Traceback" not in done.stderr
        return
    assert_refused(done, written, f"{command} {name}")


# --- fuzzing: loaders, checks, verdict parsers, argument parsing

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))


def _nested(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    # a named function: Hypothesis reads a lambda's source and can misjudge a multi-line one
    return st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=8), children, max_size=4
    )


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    _nested,
    max_leaves=12,
)
EXPECT_KEYS = st.sampled_from(
    ["valid_json", "fields", "equals", "one_of", "range", "contains", "not_contains", "regex",
     "not_regex", "max_chars", "max_words", "tools_forbidden", "tools_required", "bogus"]
)  # fmt: skip


@FUZZ
@given(st.binary(max_size=400), st.sampled_from(["c.jsonl", "c.json", "c.csv", "c.jsonl.gz"]))
def test_loading_arbitrary_bytes_gives_cases_or_a_one_line_dataset_error(
    data: bytes, name: str
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(_gzip(data) if name.endswith(".gz") else data)
        try:
            cases = tinyeval.load(path)
        except DatasetError as error:
            assert "\n" not in str(error)
            str(error).encode("utf-8")
        else:
            assert cases and all(isinstance(case.id, str) for case in cases)
            tinyeval.dataset.dataset_fingerprint(cases)  # every loaded case can be fingerprinted


@FUZZ
@given(st.lists(st.dictionaries(st.sampled_from(["id", "output", "category", "expect", "label",
                                                 "context", "tool_calls", "x"]), JSON_VALUES,
                                max_size=6), min_size=1, max_size=4))  # fmt: skip
def test_loading_arbitrary_json_records_gives_cases_or_a_dataset_error(records: list) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
        try:
            cases = tinyeval.load(path)
        except DatasetError as error:
            assert "\n" not in str(error)
        else:  # every record became one case, with a unique text id
            assert len(cases) == len(records) == len({case.id for case in cases})
            assert all(isinstance(case.id, str) and case.id for case in cases)


@FUZZ
@given(st.dictionaries(EXPECT_KEYS, JSON_VALUES, max_size=4), st.text(max_size=40))
def test_checks_from_any_expect_block_build_or_refuse_and_never_raise_when_run(
    expect: dict, output: str
) -> None:
    from tinyeval.checks import CheckSpecError, checks_from_expect, run_checks

    try:
        checks = checks_from_expect(expect)
    except CheckSpecError as error:
        assert error.field is not None and error.field.startswith("expect")
        return
    results = run_checks(output, checks)
    assert all(isinstance(passed, bool) for passed in results.values())


@FUZZ
@given(st.text(max_size=200), st.text(max_size=60))
def test_verdict_parsers_accept_any_reply(reply: str, response: str) -> None:
    from tinyeval.judge import parse_evidence, parse_verdict
    from tinyeval.judges.pairwise import parse_choice

    verdict, _ = parse_verdict(reply)
    assert verdict in (None, "PASS", "FAIL")
    choice, _ = parse_choice(reply)
    assert choice in (None, "A", "B", "TIE")
    parse_evidence(reply, response)


ARGV_WORDS = st.sampled_from(
    ["run", "gate", "report", "compare", "merge", "split", "pairwise", "label", "calibrate",
     "stats", "cost", "wilson", "--out", "--json", "--threshold", "x=2", "=", "-", "--",
     "--default-threshold", "1.5", "-1", "nan", "--help", "--version", "--field", "a=b",
     "--concurrency", "0", "missing.jsonl", "--format", "yaml"]
)  # fmt: skip


@FUZZ
@given(st.lists(ARGV_WORDS | st.text(max_size=10), max_size=6))
def test_the_command_line_returns_an_exit_code_for_any_arguments(argv: list[str]) -> None:
    import contextlib
    import io
    import tempfile

    from tinyeval.cli import main

    if "label" in argv or "pairwise" in argv:
        argv = [word for word in argv if word not in ("label", "pairwise")]  # interactive/paid
    said = io.StringIO()
    quiet_out, quiet_err = (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(said),
    )
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder), quiet_out, quiet_err:
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse's --help, --version and usage errors
            code = stop.code
    assert code in (0, 1, 2, 3), (argv, code)  # a documented exit code
    assert "please report it" not in said.getvalue(), (argv, said.getvalue())  # never a bug


# --- the suite file, the settings and the other files a run reads: bounded children


def _deep_toml(depth: int = 100_000) -> str:
    return "x = " + "[" * depth + "]" * depth + "\n"


def _blank_lines_gzip() -> bytes:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # the gzip format
    parts = [packer.compress(b"\n" * 2**20) for _ in range(64)]  # 64 Mi blank lines
    return b"".join([*parts, packer.flush()])


SUITE = 'cases = "cases.jsonl"\n'
# name -> (files to write: name -> text or bytes, or a symlink target after "->"; argv; says)
SUITE_CORPUS: dict[str, tuple[dict[str, str | bytes], list[str], str]] = {
    "config-dev-zero": ({}, ["run", "--config", "/dev/zero"], "longer than 262,144 bytes"),
    "suite-one-huge-comment": (
        {"tinyeval.toml": SUITE + "#" * 300_000 + "\n"},
        ["run"],
        "the most tinyeval reads",
    ),
    "suite-deep-toml": ({"tinyeval.toml": SUITE + _deep_toml()}, ["run"], "nested too deeply"),
    "parent-pyproject-deep": (
        {"pyproject.toml": _deep_toml(), "sub/cases.jsonl": '{"id": "a", "output": "x"}\n'},
        ["run", "cases.jsonl", "--sub"],
        "pyproject.toml: TOML nested too deeply to read",
    ),
    "suite-huge-int": (
        {"tinyeval.toml": SUITE + "concurrency = " + "9" * 5000 + "\n"},
        ["run"],
        "tinyeval.toml: an integer too long to read",
    ),
    "suite-nul-in-a-path": (
        {"tinyeval.toml": SUITE + '[reports]\nout = "a\\u0000b"\n'},
        ["run"],
        "tinyeval.toml:3: reports.out: a NUL character",
    ),
    "suite-concurrency-bound": (
        {"tinyeval.toml": SUITE + "concurrency = 100000000\n"},
        ["run"],
        "tinyeval.toml:2: concurrency: must be at most 1,024",
    ),
    "suite-votes-bound": (
        {"tinyeval.toml": SUITE + '[[judges]]\ncriterion = "Is polite."\nvotes = 10000001\n'},
        ["run"],
        "judges[0].votes: must be at most 101",
    ),
    "suite-html-over-itself": (
        {"tinyeval.toml": SUITE + '[reports]\nhtml = "tinyeval.toml"\n'},
        ["run"],
        "html: tinyeval.toml is the input file tinyeval.toml",
    ),
    "html-over-pyproject": (
        {"pyproject.toml": '[tool.tinyeval]\ncases = "cases.jsonl"\n'},
        ["run", "--html", "pyproject.toml"],
        "is the input file",
    ),
    "out-over-cases": ({}, ["run", "cases.jsonl", "--out", "cases.jsonl"], "is the input file"),
    "suite-dangling-symlink": (
        {"tinyeval.toml": "->nowhere.toml"},
        ["run", "cases.jsonl"],
        "tinyeval.toml: cannot be read as a suite file",
    ),
    "suite-symlink-loop": (
        {"tinyeval.toml": "->tinyeval.toml"},
        ["run"],
        "tinyeval.toml: cannot be read as a suite file",
    ),
    "invalid-pyproject-here": (
        {"pyproject.toml": "[tool\n"},
        ["run", "cases.jsonl"],
        "pyproject.toml:1: not valid TOML",
    ),
    "misspelt-key-with-cases-given": (
        {"tinyeval.toml": SUITE + "treshold = 0.8\n"},
        ["run", "cases.jsonl"],
        "tinyeval.toml:2: treshold: unknown key; did you mean 'thresholds'?",
    ),
    "cli-concurrency-bound": ({}, ["run", "cases.jsonl", "--concurrency", "1000000"], "1,024"),
    "cli-votes-bound": (
        {},
        ["run", "cases.jsonl", "--criterion", "Is polite.", "--votes", "10000001"],
        "--votes: must be at most 101",
    ),
    "cli-trials-bound": (
        {},
        ["run", "cases.jsonl", "--generate-model", "builtin", "--trials", "100000000"],
        "--trials: must be at most 1,000",
    ),
    "cli-timeout-not-finite": ({}, ["run", "cases.jsonl", "--timeout", "nan"], "finite number"),
    "executor-bad-ipv6": (
        {},
        ["run", "cases.jsonl", "--executor", "dask://[::1"],
        "--executor: 'dask://[::1' is not a HOST:PORT address",
    ),
    "executor-port-out-of-range": (
        {},
        ["run", "cases.jsonl", "--executor", "dask://127.0.0.1:99999"],
        "is not a HOST:PORT address",
    ),
    "rubric-dev-zero": (
        {},
        ["run", "cases.jsonl", "--rubric", "/dev/zero"],
        "the rubric is longer than 262,144 bytes",
    ),
    "rubric-too-big": (
        {"rubric.txt": "Is it polite? " * 50_000},
        ["run", "cases.jsonl", "--rubric", "rubric.txt"],
        "rubric.txt",
    ),
    "prompt-template-dev-zero": (
        {},
        ["run", "cases.jsonl", "--generate-model", "builtin", "--prompt-template", "/dev/zero"],
        "the template is longer than",
    ),
    "cases-gzip-of-blank-lines": (
        {"bomb.jsonl.gz": _blank_lines_gzip()},
        ["run", "bomb.jsonl.gz"],
        "more than 2,000,000 lines",
    ),
}


@pytest.mark.parametrize("name", sorted(SUITE_CORPUS))
def test_hostile_suite_settings_and_files_are_refused_in_one_line(
    tmp_path: Path, name: str
) -> None:
    files, argv, says = SUITE_CORPUS[name]
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "output": "x"}\n')
    for relative, content in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif content.startswith("->"):
            path.symlink_to(content[2:])
        else:
            path.write_text(content, encoding="utf-8")
    cwd = tmp_path / "sub" if "--sub" in argv else tmp_path
    done, written = refused_run([arg for arg in argv if arg != "--sub"], cwd)
    assert_refused(done, written, name, says=says)
