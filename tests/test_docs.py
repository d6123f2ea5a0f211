"""Every example of README.md and docs/ runs, and shows what it prints.

- A ```console block is a shell session: its ``$`` lines run in order, in one bash, from a copy of
  the repository's ``examples/`` (the working directory holds ``examples/``, as a checkout's root
  does); the other lines are the output expected (stdout and stderr as they come). ``…`` stands for
  any text within a line, and a line of ``…`` alone for any lines.
- A ```python block is a doctest (``>>>`` lines); the blocks of one page share their names and
  their working directory, as a reader who pastes them in order would.
- A ```toml or ```json block must parse.
- Any other block, or one of the above not run, has a comment on the line before it saying why:
  ``<!-- test: skip=REASON -->``. The same comment sets a block's working directory
  (``cwd=examples``), its exit status (``exit=1``, of its last command), a command to run first,
  its output unseen (``before=COMMAND``), or writes the block to a file the next examples use
  (``write=NAME``); ``;`` separates settings.
- docs/cli.md, and each part of a page between ``<!-- generated: NAME -->`` and
  ``<!-- end generated -->``, is written from the code; the test fails when it drifts.

To refresh every shown output, the command-line reference and the generated parts after a change
of the bundled examples or of the code (the ``…`` elisions are kept where they still fit; review
the diff):

    TINYEVAL_DOCS_REFRESH=1 python -m pytest tests/test_docs.py
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import doctest
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
REFRESH = os.environ.get("TINYEVAL_DOCS_REFRESH") == "1"
RUN_KINDS = {"console", "python", "toml", "json"}
MIN_RUN = 60  # the examples run today: a page losing its examples fails
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
DIRECTIVE = re.compile(r"<!-- test: (.*?) -->[ \t]*\n\Z")
GENERATED = re.compile(
    r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end generated -->)", re.MULTILINE | re.DOTALL
)


@dataclasses.dataclass
class Block:
    page: Path
    kind: str
    text: str
    start: int  # offset of the block's text in the page
    line: int  # line of its opening fence
    settings: dict[str, str]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, each with the settings of the comment just before it."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        directive = DIRECTIVE.search(text, 0, match.start())
        settings: dict[str, str] = {}
        if directive:
            for part in re.split(r";\s+(?=\w+=)", directive.group(1)):
                key, _, value = part.partition("=")
                settings[key.strip()] = value.strip()
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, match.group(1), match.group(2), match.start(2), line, settings))
    return found


# ---------------------------------------------------------------- comparing outputs


def _pattern(expected: str) -> re.Pattern[str]:
    """``expected`` as a regex: ``…`` any text within a line, a line of ``…`` any lines."""
    parts = []
    for line in expected.splitlines():
        if line.strip() == "…":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in line.split("…")) + r"\n")
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


def _normal(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "".join(line + "\n" for line in lines)


def matches(expected: str, got: str) -> bool:
    return bool(_pattern(_normal(expected)).match(_normal(got)))


def reelide(old: str, new: str) -> str:
    """``new`` output with ``old``'s elisions kept where they still fit."""
    old_lines, new_lines = _normal(old).splitlines(), _normal(new).splitlines()
    keyed, at = list(new_lines), 0
    for line in old_lines:  # a line eliding part of itself stands for the line it matches
        if "…" in line and line.strip() != "…":
            pattern = re.compile(".*".join(re.escape(p) for p in line.split("…")) + r"\Z")
            for index in range(at, len(keyed)):
                if pattern.match(keyed[index]):
                    keyed[index], at = line, index + 1
                    break
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_lines, keyed, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += old_lines[i1:i2]
        elif any(line.strip() == "…" for line in old_lines[i1:i2]):
            out.append("…")
        else:
            out += keyed[j1:j2]
    return "".join(line + "\n" for line in out)


# ---------------------------------------------------------------- running a page


def _sandbox(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYEVAL", "GITHUB"))}
    env.pop("PYTEST_ADDOPTS", None)
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
        PYTHONPATH=str(ROOT),
        HOME=str(home),
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
        COLUMNS="80",
        LANG="C.UTF-8",
        USER="docs",
    )
    return env


MARK = "@@ tinyeval docs: next command @@"


def console_steps(text: str) -> list[tuple[str, str]]:
    """The commands of a console block (with their continuation lines), each with its output."""
    steps: list[list[str]] = []
    continued = False
    for line in text.splitlines(True):
        if continued or line.startswith("$ "):
            if continued:
                steps[-1][0] += line
            else:
                steps.append([line, ""])
            continued = line.rstrip("\n").endswith("\\")
        elif steps:
            steps[-1][1] += line
    return [(command, output) for command, output in steps]


def run_console(block: Block, sandbox: Path) -> tuple[list[str], int]:
    """Each command's output, and the exit status of the last."""
    steps = console_steps(block.text)
    # the marker's echo keeps the status of the command before it, for a shown ``echo $?``
    script = "".join(
        f"status=$?; echo '{MARK}'; (exit $status)\n{command[2:]}" for command, _ in steps
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=sandbox / block.settings.get("cwd", "."),
        env=_env(sandbox),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    return done.stdout.split(MARK + "\n")[1:], done.returncode


def run_before(block: Block, sandbox: Path) -> None:
    command = block.settings.get("before")
    if command:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=sandbox / block.settings.get("cwd", "."),
            env=_env(sandbox),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "Traceback" not in done.stderr, f"{block.where}: before: {done.stderr}"


class _Checker(doctest.OutputChecker):
    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        # ``…`` with the space around it, as that space is normalised away in ``got`` too
        return super().check_output(re.sub(r"\s*…\s*", "...", want), got, optionflags)


class _Runner(doctest.DocTestRunner):
    def __init__(self) -> None:
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        super().__init__(checker=_Checker(), optionflags=flags, verbose=False)
        self.failed: list[tuple[doctest.Example, str]] = []

    def report_failure(self, out: Any, test: Any, example: doctest.Example, got: str) -> None:
        if example.exc_msg is None:  # an exception's traceback is never written into a page
            self.failed.append((example, got))
        super().report_failure(out, test, example, got)


def run_python(
    block: Block, globs: dict[str, Any], sandbox: Path
) -> tuple[str, list[tuple[doctest.Example, str]] | None]:
    """What the doctest reported, and the outputs to refresh (None when nothing failed)."""
    test = doctest.DocTestParser().get_doctest(block.text, globs, block.where, block.where, 0)
    assert test.examples, f"{block.where}: a python block without a >>> example"
    runner = _Runner()
    report: list[str] = []
    here = os.getcwd()
    os.chdir(sandbox / block.settings.get("cwd", "."))
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("GITHUB")}
    try:
        results = runner.run(test, out=report.append, clear_globs=False)
    finally:
        os.chdir(here)
        os.environ.update(saved)
    return "".join(report), (runner.failed if results.failed else None)


def outputs_of(blocks: list[Block]) -> dict[int, Block]:
    """A python script's shown output: the ```text block right after it, by the script's start."""
    shown = {}
    for script, after in itertools.pairwise(blocks):
        if script.kind == "python" and ">>> " not in script.text and after.kind == "text":
            text = script.page.read_text(encoding="utf-8")
            between = text[script.start + len(script.text) : after.start]
            if re.fullmatch(r"```[ \t]*\n\s*```text\n", between):
                shown[script.start] = after
    return shown


def run_script(block: Block, globs: dict[str, Any], sandbox: Path) -> str:
    """Run a python block as a script in the page's names; what it printed."""
    import contextlib
    import io

    printed = io.StringIO()
    here = os.getcwd()
    os.chdir(sandbox / block.settings.get("cwd", "."))
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(block.text, block.where, "exec"), globs)
    finally:
        os.chdir(here)
    return printed.getvalue()


def _replace_lines(text: str, first: int, count: int, lines: str) -> str:
    """``text`` with ``count`` lines from line ``first`` (0-based) replaced by ``lines``."""
    split = text.splitlines(True)
    return "".join(split[:first]) + lines + "".join(split[first + count :])


def page_params() -> list[Any]:
    return [pytest.param(page, id=str(page.relative_to(ROOT))) for page in PAGES]


@pytest.fixture
def isolated(tmp_path: Path) -> Iterator[None]:
    """What a page's Python may change for the tests after it: the expect keys it registers,
    the modules it imports from its sandbox, the import path."""
    from tinyeval import checks

    keys, order = dict(checks._EXPECT), dict(checks._ORDER)
    modules, path = set(sys.modules), list(sys.path)
    yield
    checks._EXPECT.clear()
    checks._EXPECT.update(keys)
    checks._ORDER.clear()
    checks._ORDER.update(order)
    for name in set(sys.modules) - modules:  # the page's own modules (jurors, gen, mychecks)
        if str(getattr(sys.modules[name], "__file__", "")).startswith(str(tmp_path)):
            del sys.modules[name]
    sys.path[:] = path


@pytest.mark.parametrize("page", page_params())
def test_every_example_of_the_page_runs_as_shown(
    page: Path, tmp_path: Path, isolated: None
) -> None:
    sandbox = _sandbox(tmp_path)
    globs: dict[str, Any] = {"__name__": "docs"}
    problems: list[str] = []
    edits: list[tuple[Block, str]] = []  # (block, its new text)
    blocks = blocks_of(page)
    output_of = outputs_of(blocks)
    for block in blocks:
        if "skip" in block.settings or block.kind not in RUN_KINDS:
            continue
        run_before(block, sandbox)
        if "write" in block.settings:  # a file the next examples use, shown as it is
            target = sandbox / block.settings.get("cwd", ".") / block.settings["write"]
            target.write_text(block.text, encoding="utf-8")
        if block.kind == "python" and "write" in block.settings:
            compile(block.text, block.where, "exec")
        elif block.kind == "console":
            steps = console_steps(block.text)
            outputs, status = run_console(block, sandbox)
            if len(outputs) != len(steps) or not all(
                matches(expected, got) for (_, expected), got in zip(steps, outputs, strict=False)
            ):
                problems.append(f"{block.where}: expected\n{block.text}\ngot\n{''.join(outputs)}")
                new = "".join(c + reelide(e, g) for (c, e), g in zip(steps, outputs, strict=False))
                edits.append((block, new))
            wanted = block.settings.get("exit")
            if wanted is not None and status != int(wanted):
                problems.append(f"{block.where}: exit {status}, expected {wanted}")
        elif block.kind == "python" and ">>> " not in block.text:
            shown = output_of.get(block.start)
            got = run_script(block, globs, sandbox)
            if shown is not None and not matches(shown.text, got):
                problems.append(f"{block.where}: expected\n{shown.text}\ngot\n{got}")
                edits.append((shown, reelide(shown.text, got)))
            elif shown is None and got:
                problems.append(f"{block.where}: printed, but shows no ```text output:\n{got}")
        elif block.kind == "python":
            report, failed = run_python(block, globs, sandbox)
            if failed is not None:  # an unexpected exception is reported, never refreshed
                problems.append(f"{block.where}:\n{report}")
                edits.append((block, _refreshed_python(block.text, failed)))
        elif block.kind == "toml":
            tomllib.loads(block.text)
        elif block.kind == "json":
            _parse_json(block)
    if REFRESH and edits:
        text = page.read_text(encoding="utf-8")
        for block, new in sorted(edits, key=lambda edit: -edit[0].start):
            text = text[: block.start] + new + text[block.start + len(block.text) :]
        if len(FENCE.findall(text)) == len(blocks):  # an output holding a fence is not written
            page.write_text(text, encoding="utf-8")
    assert not problems, "\n\n".join(problems)


def _refreshed_python(text: str, failed: list[tuple[doctest.Example, str]]) -> str:
    for example, got in sorted(failed, key=lambda item: -item[0].lineno):
        first = example.lineno + example.source.count("\n")
        text = _replace_lines(text, first, example.want.count("\n"), reelide(example.want, got))
    return text


def _parse_json(block: Block) -> None:
    try:
        json.loads(block.text)
    except json.JSONDecodeError:  # JSON lines
        for line in block.text.splitlines():
            if line.strip():
                json.loads(line)


# ---------------------------------------------------------------- counting


def test_every_block_runs_or_says_why_not() -> None:
    """Every fenced block is run, or its comment gives the reason; the count cannot fall."""
    unexplained, counts = [], {"run": 0, "skipped": 0}
    for page in PAGES:
        if page.name == "cli.md":  # generated from the parser, and compared whole with it
            continue
        blocks = blocks_of(page)
        outputs = {shown.start for shown in outputs_of(blocks).values()}
        for block in blocks:
            if block.start in outputs:
                continue  # a script's output: compared with what the script prints
            skip = block.settings.get("skip")
            if skip is not None and not skip:
                unexplained.append(f"{block.where}: skip= without a reason")
            elif skip or block.kind not in RUN_KINDS:
                counts["skipped"] += 1
                if not skip:
                    unexplained.append(f"{block.where}: a ```{block.kind} block that nothing runs")
            else:
                counts["run"] += 1
    assert not unexplained, "\n".join(unexplained)
    assert counts["run"] >= MIN_RUN, counts
    assert counts["skipped"] <= counts["run"] // 4, counts


def test_every_python_and_console_block_has_something_to_check() -> None:
    for page in PAGES:
        for block in blocks_of(page):
            if block.kind == "console" and "skip" not in block.settings:
                assert console_steps(block.text), (
                    f"{block.where}: a console block without a $ command"
                )


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == "python -m pytest"
    assert 'python -m pip install -e ".[test]" && python -m pytest' in readme


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 400, lines


def test_every_relative_link_leads_somewhere() -> None:
    link = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in link.finditer(text):
            target, anchor = match.group(1), match.group(2)
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (page.parent / target).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and path.suffix == ".md" and anchor[1:] not in _anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {target}{anchor}")
        for match in re.finditer(r"\]\((#[^)\s]+)\)", text):
            if match.group(1)[1:] not in _anchors(page):
                broken.append(f"{page.relative_to(ROOT)}: {match.group(1)}")
    assert not broken, "\n".join(broken)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    anchors = set()
    for heading in re.findall(r"^#+ (.*)$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


# ---------------------------------------------------------------- generated reference


def _help(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    text = parser._get_formatter()._expand_help(action) if action.help else ""
    return " ".join(text.split()).replace("|", "\\|")


def _option(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or action.dest
    if action.option_strings and action.nargs != 0:
        metavar = action.metavar or action.dest.upper()
        names += f" {metavar if isinstance(metavar, str) else ' '.join(metavar)}"
    elif not action.option_strings:
        names = str(action.metavar or action.dest)
    return f"`{names}`".replace("|", "\\|")


def _parser_doc(parser: argparse.ArgumentParser, name: str, depth: int) -> Iterator[str]:
    yield f"{'#' * depth} {name}\n\n"
    if parser.description:
        yield " ".join(parser.description.split()) + "\n\n"
    usage = parser.format_usage().strip().removeprefix("usage: ")
    yield f"```text\n{usage}\n```\n\n"
    children: list[tuple[str, argparse.ArgumentParser]] = []
    for group in parser._action_groups:
        rows = []
        for action in group._group_actions:
            if isinstance(action, argparse._SubParsersAction):
                children += list(action.choices.items())
                continue
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            rows.append(f"| {_option(action)} | {_help(action, parser)} |\n")
        if rows:
            title = group.title or "options"
            yield f"**{title}**\n\n| argument | meaning |\n| --- | --- |\n{''.join(rows)}\n"
    for child_name, child in children:
        yield from _parser_doc(child, f"{name} {child_name}", min(depth + 1, 4))


def cli_reference() -> str:
    """docs/cli.md, from the parsers of ``tinyeval.cli`` (of every extra of this checkout)."""
    from tinyeval.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parser = build_parser()
        head = [
            "# Command-line reference\n\n",
            "Written from the parsers of `tinyeval.cli` by `tests/test_docs.py`, which fails when"
            " this page\ndrifts from them; do not edit it by hand (the test's docstring says how"
            " to refresh it).\nExit codes, bounds and what each failure prints:"
            " [promises](promises.md).\n\n",
        ]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        names = list(sub.choices)
        head.append("Commands: " + ", ".join(f"[`{n}`](#tinyeval-{n})" for n in names) + ".\n\n")
        body = list(_parser_doc(parser, "tinyeval", 2))
    finally:
        if saved is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = saved
    return "".join(head + body).rstrip("\n") + "\n"


def generated_parts() -> dict[str, str]:
    """The parts of pages written from the code, by name."""
    return {"settings-bounds": settings_bounds()}


def settings_bounds() -> str:
    """The bounds of the run settings, from ``RunSettings``' field metadata."""
    from tinyeval.suite import RunSettings

    rows = ["| setting | option | least | most |\n", "| --- | --- | --- | --- |\n"]
    for item in dataclasses.fields(RunSettings):
        least, most = item.metadata.get("least"), item.metadata.get("most")
        if least is None and most is None:
            continue
        flag = item.metadata.get("flag") or "--" + item.name.replace("_", "-")
        rows.append(f"| `{item.name}` | `{flag}` | {_number(least)} | {_number(most)} |\n")
    return "".join(rows)


def _number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, int) and value >= 2**20 and value % 2**20 == 0:
        return f"{value // 2**20:,} MiB" if value < 2**30 else f"{value // 2**30:,} GiB"
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def test_the_command_line_reference_is_the_parser() -> None:
    page = ROOT / "docs" / "cli.md"
    expected = cli_reference()
    if REFRESH and (not page.exists() or page.read_text(encoding="utf-8") != expected):
        page.write_text(expected, encoding="utf-8")
    assert page.read_text(encoding="utf-8") == expected, "docs/cli.md drifted: refresh it"


def test_the_generated_parts_are_the_code() -> None:
    parts = generated_parts()
    seen = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")

        def fill(match: re.Match[str]) -> str:
            seen.add(match.group(2))
            return match.group(1) + parts[match.group(2)] + match.group(4)

        new = GENERATED.sub(fill, text)
        if REFRESH and new != text:
            page.write_text(new, encoding="utf-8")
        assert page.read_text(encoding="utf-8") == new, f"{page.name}: generated parts drifted"
    assert seen == set(parts), f"generated parts on no page: {set(parts) - seen}"


# ---------------------------------------------------------------- figures the code determines

_UNITS = {"": 1, "s": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
_FIGURE = re.compile(r"(\d[\d,]*(?:\.\d+)?) ?(KiB|MiB|GiB|s)?")


def _stated(cell: str) -> float | None:
    """The figure a table cell states (``64 MiB``, ``2,000,000``, ``2 s``), or None."""
    match = _FIGURE.fullmatch(cell.strip())
    if not match:
        return None
    return float(match.group(1).replace(",", "")) * _UNITS[match.group(2) or ""]


def _in_the_code(reference: str) -> Any:
    """The value ``reference`` names: a constant, a dataclass field's default (``RunSettings.x``)
    or a parameter's default (``module.function(parameter)``)."""
    import importlib
    import inspect

    path, _, parameter = reference.rstrip(")").partition("(")
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for index, name in enumerate(parts[cut:]):
            if dataclasses.is_dataclass(value) and index == len(parts[cut:]) - 1:
                return {f.name: f.default for f in dataclasses.fields(value)}[name]
            value = getattr(value, name)
        break
    if parameter:
        return inspect.signature(value).parameters[parameter].default
    return value


def test_every_figure_of_the_promises_is_the_code() -> None:
    """Each table row of docs/promises.md that names the code states the code's value."""
    text = (ROOT / "docs" / "promises.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (.*?) \| (.*?) \| `([\w.()]+)` \|$", text, flags=re.MULTILINE)
    assert len(rows) >= 15, rows
    for first, second, reference in rows:
        stated = _stated(second) if _stated(second) is not None else _stated(first)
        assert stated is not None, f"no figure in the row of {reference}"
        assert stated == float(_in_the_code(reference)), f"{reference}: {first} | {second}"


def test_the_suite_file_table_has_every_key_and_its_defaults() -> None:
    """Each suite-file key of a run setting is in the table, with the setting's default."""
    from tinyeval.suite import RunSettings

    text = (ROOT / "docs" / "suite-and-ci.md").read_text(encoding="utf-8")
    rows = {}
    for first, default in re.findall(r"^\| (`[^|]*`) \| [^|]*? \| ([^|]*?) \|", text, re.MULTILINE):
        names = re.findall(r"`([^`]+)`", first)
        table = names[0][1:-1] + "." if names[0].startswith("[") and len(names) > 1 else ""
        for name in names[1:] if table else names:
            rows[table + name.strip("[]")] = default
    for item in dataclasses.fields(RunSettings):
        key = item.metadata.get("suite")
        if key is None:
            continue
        assert key in rows, f"the suite-file table of docs/suite-and-ci.md lacks {key}"
        default = item.default
        if isinstance(default, int | float) and not isinstance(default, bool) and key in rows:
            assert _stated(rows[key].strip("`")) == default, f"{key}: {rows[key]} != {default}"


def test_the_json_summary_keys_are_those_a_run_prints(tmp_path: Path) -> None:
    """docs/gate.md's table of the ``gate`` object and its per-category keys name what
    ``run --json`` prints: no key missing from the page, none the run no longer prints."""
    from tinyeval.cli import main

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        import contextlib
        import io

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            main(["run", "--config", "examples/tinyeval.toml", "--json", "--out", "rows.jsonl"])
    finally:
        os.chdir(here)
    gate = json.loads(printed.getvalue())["gate"]
    text = (ROOT / "docs" / "gate.md").read_text(encoding="utf-8")
    table = text[text.index("The gate is under `gate`:") :]
    table = table[: table.index("\n\n", table.index("| key |"))]
    first_cells = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    documented = {name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)}
    documented |= set(re.findall(r"`(\w+)` lists", table))
    assert documented == set(gate), documented ^ set(gate)
    per_category = re.search(r"^\| `categories` \| per category: (.*) \|$", table, re.MULTILINE)
    assert per_category, "no per-category row"
    named = set(re.findall(r"`(\w+)`", per_category.group(1)))
    assert set(gate["categories"]["tone"]) <= named, set(gate["categories"]["tone"]) - named


# A figure stated in prose, where the code decides it: (page, the words around it with (\d…) for the
# figure, its unit, the code it must equal).
PROSE_FIGURES = [
    (
        "docs/models.md",
        r"`--timeout` \(default (\d+) s\)",
        "s",
        "tinyeval.suite.RunSettings.timeout",
    ),
    ("docs/models.md", r"retried up to (\d+) times", "", "tinyeval.models.resolve(retries)"),
    ("docs/models.md", r"capped at\s+(\d+) s", "s", "tinyeval._http.RETRY_AFTER_CAP"),
    ("docs/models.md", r"(\d+) cases errored before", "", "tinyeval.suite.RunSettings.fail_fast"),
    ("docs/models.md", r"\((\d+) MiB by default\)", "MiB", "tinyeval._http.MAX_RESPONSE_BYTES"),
    ("docs/cases.md", r"time budget\s+\((\d+) s\)", "s", "tinyeval._regex.REGEX_TIMEOUT"),
    (
        "docs/cases.md",
        r"larger than\s+(\d+) MiB reads it once",
        "MiB",
        "tinyeval.runner.READ_ONCE_BYTES",
    ),
    ("docs/cases.md", r"nothing\s+writes to for (\d+) s", "s", "tinyeval._formats.PIPE_WAIT"),
    ("docs/promises.md", r"a body over (\d+) MiB", "MiB", "tinyeval._http.MAX_RESPONSE_BYTES"),
    ("docs/promises.md", r"(\d+) s budget", "s", "tinyeval._regex.REGEX_TIMEOUT"),
    (
        "docs/extras/scale.md",
        r"the first wait between polls, default (\d+)\)",
        "s",
        "tinyeval.suite.RunSettings.batch_poll",
    ),
    (
        "docs/extras/scale.md",
        r"\(suite\s+key `batch_max_wait`, (\d+) hours by default\)",
        "h",
        "tinyeval.suite.RunSettings.batch_max_wait",
    ),
    (
        "docs/suite-and-ci.md",
        r"\| `concurrency` \| whole number ≥ 1 \| (\d+) \|",
        "",
        "tinyeval.suite.RunSettings.concurrency",
    ),
]


@pytest.mark.parametrize(("page", "words", "unit", "reference"), PROSE_FIGURES)
def test_a_figure_in_prose_is_the_code(page: str, words: str, unit: str, reference: str) -> None:
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    match = re.search(words.replace(r"\s+", " "), text)
    assert match, f"{page} no longer says {words!r}: update PROSE_FIGURES with the page"
    scale = {"": 1, "s": 1, "h": 3600, "MiB": 2**20}[unit]
    assert float(match.group(1)) * scale == float(_in_the_code(reference)), (page, words)
