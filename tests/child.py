"""Run the command line in a child process, bounded: the one runner of the tests.

``run_tinyeval(["gate", "rows.jsonl"], folder)`` runs ``python -m tinyeval gate rows.jsonl``
in ``folder`` with this checkout importable, under a timeout (and, when asked, a memory limit),
and returns the finished process with its output read as UTF-8.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMORY_LIMIT = 2**30  # bytes of address space a bounded child may take


def limit_memory() -> None:  # runs in the child, before Python starts
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_tinyeval(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    *,
    path: Sequence[Path] = (),
    stdin: str | None = None,
    timeout: float = 60,
    bounded_memory: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m tinyeval ARGV`` in ``cwd``: ``env`` added to the environment (which keeps
    no ``GITHUB_*`` variable of its own), the folders of ``path`` importable after this
    checkout, ``stdin`` as its input, ended after ``timeout`` seconds, and limited to
    ``MEMORY_LIMIT`` bytes if ``bounded_memory``."""
    importable = os.pathsep.join(str(folder) for folder in [ROOT, *path])
    # nothing of a CI job's (its summary file) and no traceback switch, unless ``env`` says
    full = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    full.pop("TINYEVAL_TRACEBACK", None)
    full |= {"PYTHONPATH": importable, "PYTHONIOENCODING": "utf-8", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tinyeval", *argv],
        cwd=cwd,
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
        preexec_fn=limit_memory if bounded_memory else None,
        check=False,
    )
