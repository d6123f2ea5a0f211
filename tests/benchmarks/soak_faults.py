"""A longer soak of the model adapters against a server that fails at random.

    python tests/benchmarks/soak_faults.py [--calls N] [--timeout S] [--seed N]

CALLS calls (default 400) go to a fault server on 127.0.0.1 whose script is a
seeded random mix of every fault in ``tests/faults.py``: 429 with and without
Retry-After, 5xx, resets, closes, hangs, dribbles (body and headers),
truncated, oversized and key-echoing bodies, and well-formed replies. Waits
between retries are not slept. It prints, per fault, how many calls ended in
a reply and how many in a ModelCallError, the slowest call as a ratio of the
timeout (a call holds at most (retries + 1) attempts of one timeout each, so
the ratio is bounded by retries + 1), and whether any error text held the key
in any escaped form (it must not). Exit 1 if a key leaked, a call raised
anything but ModelCallError, or a call outlived its bound.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from faults import Fault, FaultServer, key_forms

from tinyeval.models import ModelCallError, resolve

KEY = "sk-soak-KEY/+=0123456789abcdef"


def faults(timeout: float) -> list[Fault]:
    return [
        Fault.ok("PASS"),
        Fault.ok("PASS"),
        Fault.status(429),
        Fault.status(429, retry_after="1"),
        Fault.status(500),
        Fault.status(503),
        Fault.reset(),
        Fault.close(),
        Fault.truncated(),
        Fault.hang(timeout * 3),
        Fault.dribble(timeout / 4),
        Fault.dribble(timeout / 4, headers_too=True),
        Fault.oversized(4 * 2**20),
        Fault.oversized(4 * 2**20, declared=False),
        Fault.echo_key(401),
        Fault.echo_key(200),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=0.3)
    parser.add_argument("--retries", type=int, default=1)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()

    import os

    os.environ["OPENAI_API_KEY"] = KEY
    rng = random.Random(args.seed)
    menu = faults(args.timeout)
    script = [rng.choice(menu) for _ in range(args.calls * (args.retries + 1))]
    forms = key_forms(KEY)
    outcomes: Counter[tuple[str, str]] = Counter()
    leaks = crashes = overruns = 0
    slowest = 0.0
    bound = (args.retries + 1) * args.timeout
    lifetime = args.calls * bound + 60
    with FaultServer(script, max_requests=len(script), lifetime=lifetime) as server:
        model = resolve(
            "openai:soak",
            base_url=server.url,
            timeout=args.timeout,
            retries=args.retries,
            sleep=lambda seconds: None,
            max_response_bytes=2**20,
        )
        for n in range(args.calls):
            started = time.monotonic()
            first = len(server.faults)
            try:
                text, kind = str(model(f"call {n}")), "reply"
            except ModelCallError as error:
                text, kind = str(error), "error"
            except Exception as error:  # anything else is a bug
                text, kind = repr(error), "crash"
                crashes += 1
            elapsed = time.monotonic() - started
            slowest = max(slowest, elapsed)
            overruns += elapsed > bound + 1.0  # one second of slack for scheduling
            leaks += any(form in text for form in forms)
            name = server.faults[first] if len(server.faults) > first else "?"
            outcomes[(name, kind)] += 1
    names = sorted({name for name, _ in outcomes})
    print(
        f"{args.calls} calls, timeout {args.timeout:g} s, {args.retries} retries, seed {args.seed}"
    )
    print(f"{'first fault':<28} {'reply':>6} {'error':>6} {'crash':>6}")
    for name in names:
        row = [outcomes[(name, kind)] for kind in ("reply", "error", "crash")]
        print(f"{name:<28} {row[0]:>6} {row[1]:>6} {row[2]:>6}")
    print(f"slowest call: {slowest / args.timeout:.2f} × the timeout (bound {args.retries + 1})")
    print(f"key leaks: {leaks}; crashes: {crashes}; calls over their bound: {overruns}")
    return 1 if leaks or crashes or overruns else 0


if __name__ == "__main__":
    sys.exit(main())
