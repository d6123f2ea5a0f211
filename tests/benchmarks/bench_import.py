"""How much `import tinyeval` adds to an interpreter start.

    python tests/benchmarks/bench_import.py [RUNS]

Starts a bare interpreter and one that imports tinyeval RUNS times each
(interleaved, default 40) and prints the median and minimum wall times, the
difference, and the modules the import brings in.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start(code: str) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - began


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    bare, loaded = [], []
    for _ in range(runs):
        bare.append(start("pass"))
        loaded.append(start("import tinyeval"))
    new = subprocess.run(
        [sys.executable, "-c",
         "import sys; b = set(sys.modules); import tinyeval; print(sorted(set(sys.modules) - b))"],
        check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout.strip()
    ms = 1000
    print(f"python {sys.version.split()[0]}, {runs} runs each")
    print(f"bare interpreter:   median {statistics.median(bare) * ms:6.1f} ms, min {min(bare) * ms:6.1f} ms")
    print(f"import tinyeval:    median {statistics.median(loaded) * ms:6.1f} ms, min {min(loaded) * ms:6.1f} ms")
    print(f"difference:         median {(statistics.median(loaded) - statistics.median(bare)) * ms:+6.1f} ms, "
          f"min {(min(loaded) - min(bare)) * ms:+6.1f} ms")
    print(f"modules added by the import: {new}")


if __name__ == "__main__":
    main()
