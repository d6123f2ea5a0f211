"""How much `import tinyeval` adds to an interpreter start.

    python tests/benchmarks/bench_import.py [RUNS]

Starts a bare interpreter and one that imports tinyeval RUNS times each
(interleaved, default 40) and prints the median and minimum wall times, the
difference, and the modules the import brings in.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start(code: str) -> float:
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    return time.perf_counter() - began


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    # byte-compiled first, as installing does: with PYTHONDONTWRITEBYTECODE set, a module
    # changed since its .pyc would otherwise be compiled again in every start timed
    compileall.compile_dir(ROOT / "tinyeval", quiet=1)
    bare, loaded = [], []
    for _ in range(runs):
        bare.append(start("pass"))
        loaded.append(start("import tinyeval"))
    code = "import sys; b = set(sys.modules); import tinyeval; print(sorted(set(sys.modules) - b))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env
    )
    new = run.stdout.strip()
    ms = 1000
    print(f"python {sys.version.split()[0]}, {runs} runs each")
    for name, times in (("bare interpreter", bare), ("import tinyeval", loaded)):
        median, fastest = statistics.median(times) * ms, min(times) * ms
        print(f"{name + ':':<20}median {median:6.1f} ms, min {fastest:6.1f} ms")
    median = (statistics.median(loaded) - statistics.median(bare)) * ms
    fastest = (min(loaded) - min(bare)) * ms
    print(f"{'difference:':<20}median {median:+6.1f} ms, min {fastest:+6.1f} ms")
    print(f"modules added by the import: {new}")


if __name__ == "__main__":
    main()
