"""The house: a small core at the top level, the extras in subpackages behind the doors.

The core (the top-level modules and ``cli/``) never imports a subpackage, not even inside a
function; it names the extras only in the one table ``tinyeval._EXTRAS``. No import cycle
remains, lazy imports included.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import tinyeval

PACKAGE = Path(tinyeval.__file__).parent
EXTRAS = sorted(
    p.name
    for p in PACKAGE.iterdir()
    if p.is_dir() and p.name != "cli" and (p / "__init__.py").exists()
)
CORE = sorted([*PACKAGE.glob("*.py"), *(PACKAGE / "cli").glob("*.py")])


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, typing: bool = True) -> list[tuple[int, str]]:
    """Every package module a file imports: at the top, in functions, and (unless ``typing``
    is False) under ``if TYPE_CHECKING:``, which runs no import."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set()
    if not typing:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                skipped |= {id(inner) for inner in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join([*base, node.module] if node.module else base)
            found.append((node.lineno, target))
            if node.module is None:  # `from . import x` imports the module x
                found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tinyeval"):
            found.append((node.lineno, node.module or ""))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("tinyeval")]
    return found


def _is_extra(module: str) -> bool:
    parts = module.split(".")
    return len(parts) > 1 and parts[1] in EXTRAS


def test_the_extras_are_the_expected_subpackages() -> None:
    assert EXTRAS == ["agents", "ci", "estimates", "humans", "judges", "rag", "scale"]


def test_the_core_never_imports_an_extra() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: imports {module}"
        for path in CORE
        for line, module in _imports(path)
        if _is_extra(module)
    ]
    assert not found, "\n".join(found)


def test_the_table_is_the_only_place_the_core_names_an_extra() -> None:
    named = re.compile(r"\b(?:tinyeval\.)?(" + "|".join(EXTRAS) + r")\.[a-z_]+:")
    places = []
    for path in CORE:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if named.search(line) and path.name != "__init__.py":
                places.append(f"{path.name}:{number}: {line.strip()}")
    assert not places, "\n".join(places)
    for door, entries in tinyeval._EXTRAS.items():
        for name, target in entries.items():
            module, _, attribute = target.partition(":")
            assert module.split(".")[0] in EXTRAS and attribute, (door, name, target)


def test_every_entry_of_the_table_loads() -> None:
    for door, entries in tinyeval._EXTRAS.items():
        for name in entries:
            assert tinyeval._extra(door, name) is not None, (door, name)


def test_no_import_cycle_lazy_imports_included() -> None:
    # imports for type checking alone run nothing, so they make no cycle
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for _, target in _imports(path, typing=False):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and modules[target].name != "__init__.py":
                graph[name].add(target)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    limit = sys.getrecursionlimit()  # restored: other tests rely on the interpreter's default
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for node in graph:
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    assert not cycles, cycles


def test_the_front_door_is_small() -> None:
    assert len(tinyeval.__all__) <= 40
    for name in tinyeval.__all__:
        assert not name.startswith("_") or name == "__version__"
        home = getattr(getattr(tinyeval, name), "__module__", None)
        assert home is None or not _is_extra(home), f"{name} comes from the extra {home}"


def test_the_core_is_about_a_dozen_small_modules() -> None:
    top = [p for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    public = [p.name for p in top if not p.name.startswith("_")]
    private = [p.name for p in top if p.name.startswith("_")]
    assert len(public) <= 14, public
    assert len(private) <= 3, private
    sizes = {_module_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in CORE}
    assert max(sizes.values()) <= 1000, {n: s for n, s in sizes.items() if s > 1000}
    assert sum(sizes.values()) <= 11_000, sum(sizes.values())  # the house's ceiling


def test_run_help_shows_the_core_options_first() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tinyeval", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "100", "PATH": ""},
        cwd=PACKAGE.parent,
    )
    options = 0
    for line in done.stdout.splitlines():
        if re.match(r"^\S.*\(tinyeval/[a-z]+/\):$", line):
            break  # the first extra's group
        if re.match(r"^  -", line) and not line.strip().startswith("-h"):
            options += 1
    else:
        raise AssertionError("no extra's option group in `tinyeval run --help`")
    assert 0 < options <= 30, options
