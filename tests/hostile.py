"""Run the command line on a hostile input in a bounded child, and check how it was refused.

Each child runs under a memory limit (``RLIMIT_AS``) and a timeout, so an input that would
fill memory or hang fails its test instead of the machine. To add a case, write its files
into a folder and call::

    done, written = refused_run(["run", "--config", "tinyeval.toml"], folder)
    assert_refused(done, written, "a deep suite file")

``assert_refused`` asserts exit 2, one line on stderr, no traceback, no internal-error line,
and that nothing in the folder was created, changed or removed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from child import ROOT, limit_memory, run_tinyeval

TIMEOUT = 60  # seconds a child may run
__all__ = ["ROOT", "assert_refused", "bounded_run", "limit_memory", "refused_run"]


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` (symlinks not followed), with its size and change time."""
    found = {}
    for path in sorted(folder.rglob("*")):
        status = path.lstat()
        found[str(path.relative_to(folder))] = (status.st_size, status.st_mtime_ns)
    return found


def bounded_run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m tinyeval ARGV`` in ``cwd``, with ``env`` added, under the memory limit and
    the timeout."""
    return run_tinyeval(argv, cwd, env, timeout=TIMEOUT, bounded_memory=True)


def refused_run(
    argv: list[str], cwd: Path
) -> tuple[subprocess.CompletedProcess[str], tuple[dict[str, tuple[int, int]], Path]]:
    """The run, and what is needed to tell that it wrote nothing."""
    before = snapshot(cwd)
    return bounded_run(argv, cwd), (before, cwd)


def assert_refused(
    done: subprocess.CompletedProcess[str],
    written: tuple[dict[str, tuple[int, int]], Path] | None,
    what: str,
    *,
    says: str | None = None,
) -> str:
    """Exit 2, one line on stderr (containing ``says``), no traceback, nothing written (unless
    ``written`` is None: the folder is not watched); returns the line."""
    err = done.stderr
    assert "Traceback" not in err and "please report it" not in err, f"{what}: {err[-2000:]}"
    assert done.returncode == 2, f"{what}: exit {done.returncode}: {err[-1000:]}"
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"{what}: {lines[:5]}"
    assert len(lines[0]) < 1200, f"{what}: a line of {len(lines[0]):,} characters"
    if says is not None:
        assert says in lines[0], f"{what}: {lines[0]}"
    if written is not None:
        before, folder = written
        assert snapshot(folder) == before, f"{what}: the refused run wrote files"
    return lines[0]
