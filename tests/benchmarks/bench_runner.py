"""What the runner costs on top of the models it calls: time, per-case overhead, cache, memory.

    python tests/benchmarks/bench_runner.py [--part latency|overhead|cache|memory] ...

Four parts (all by default; each takes well under two minutes on two cores
with the defaults, the memory part about two):

latency   CASES judged cases (output and context) with a judge that sleeps
          LATENCY seconds and answers "PASS", at CONCURRENCY in flight. The
          ideal wall time is CASES × LATENCY / CONCURRENCY; the floors are the
          same sleeps on a bare thread pool and on a bare event loop (what
          Python itself costs). Run with a sync judge (time.sleep) and an async
          one (asyncio.sleep), in process and as a whole `tinyeval run` process
          (a py: judge model), beside a bare interpreter's start.
overhead  microseconds per case with a zero-latency model: code checks only,
          then with a judge, on 1 and 4 threads, rows kept in memory or not.
cache     the latency run three times through a response cache: calls made and
          wall time of the re-runs (every reply served from the cache).
memory    peak RSS of ``python -m tinyeval run FILE --out /dev/null -q``
          (checks only) on SMALL and BIG generated cases, read from the
          child's own rusage, and the bytes per case that the loader's
          duplicate-id index adds (measured with tracemalloc).

Scale with --cases, --latency, --concurrency, --overhead-cases, --small, --big.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import tinyeval  # noqa: E402
from tinyeval.cache import ResponseCache, cached  # noqa: E402
from tinyeval.dataset import Case  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_checks_only import (  # noqa: E402  (one CLI timing, one corpus)
    child_env,
    cli_run,
    write_cases,
)

CONTEXT = "Refunds are paid back to the original card within 5 business days."
AMOUNT = json.dumps({"amount_cents": 125050, "currency": "ARS"})
AMOUNT_EXPECT = {"valid_json": True, "fields": ["currency"], "equals": {"amount_cents": 125050}}


class CountingJudge:
    """A judge model that waits ``latency`` seconds and answers PASS, counting its calls."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.calls += 1
        if self.latency:
            time.sleep(self.latency)
        return "PASS\nok"


class AsyncCountingJudge(CountingJudge):
    """The same judge as an ``async def`` model: it awaits ``asyncio.sleep(latency)``."""

    async def __call__(self, prompt: str) -> str:  # type: ignore[override]
        with self._lock:
            self.calls += 1
        if self.latency:
            await asyncio.sleep(self.latency)
        return "PASS\nok"


def judged_cases(n: int) -> list[Case]:
    return [
        Case(
            id=f"case-{i:06d}",
            input="How long does a refund take?",
            output=f"Refund {i} arrives within {i % 7 + 1} business days.",  # distinct prompts
            context=CONTEXT,
        )
        for i in range(n)
    ]


def checked_cases(n: int, *, context: str | None = None) -> list[Case]:
    return [
        Case(id=f"case-{i:06d}", output=AMOUNT, expect=AMOUNT_EXPECT, context=context)
        for i in range(n)
    ]


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def judged_run(cases: list[Case], model: Callable[[str], str], concurrency: int) -> float:
    judge = tinyeval.Judge("unsupported-claims")

    def go() -> None:
        result = tinyeval.run(
            cases, judges=judge, judge_model=model, concurrency=concurrency, keep_rows=False
        )
        assert result.total == len(cases) and result.errors == 0, result.categories

    return timed(go)


# --------------------------------------------------------------------------- parts


def part_latency(args: argparse.Namespace) -> None:
    n, latency, concurrency = args.cases, args.latency, args.concurrency
    ideal = n * latency / concurrency
    rounds = -(-n // concurrency) * latency  # whole rounds: the last one is partly idle

    def bare_pool() -> None:
        with cf.ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(time.sleep, [latency] * n))

    def bare_loop() -> None:  # CONCURRENCY coroutines taking the sleeps from one list
        async def worker(sleeps: list[float]) -> None:
            while sleeps:
                await asyncio.sleep(sleeps.pop())

        async def main() -> None:
            sleeps = [latency] * n
            await asyncio.gather(*(worker(sleeps) for _ in range(concurrency)))

        asyncio.run(main())

    floor = min(timed(bare_pool) for _ in range(args.repeat))
    loop_floor = min(timed(bare_loop) for _ in range(args.repeat))
    start = min(timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
                for _ in range(5))  # fmt: skip
    print(
        f"\n[latency] {n:,} judged cases, judge sleeps {latency * 1000:.0f} ms, "
        f"concurrency {concurrency}, keep_rows=False"
    )
    print(f"  ideal  {n:,} × {latency} s / {concurrency}  = {ideal:.3f} s")
    print(f"  whole rounds ⌈{n}/{concurrency}⌉ × {latency} s = {rounds:.3f} s")
    print(
        f"  bare thread pool, sleeps only       = {floor:.3f} s "
        f"({(floor / ideal - 1) * 100:+.1f}% vs ideal)"
    )
    print(
        f"  bare event loop, asyncio.sleep only  = {loop_floor:.3f} s "
        f"({(loop_floor / ideal - 1) * 100:+.1f}% vs ideal)"
    )
    print(f"  a bare interpreter, python -c pass  = {start:.3f} s (best of 5)")
    floors = {"sync": floor, "async": loop_floor}
    for kind, judge in (("sync", CountingJudge), ("async", AsyncCountingJudge)):
        times = [
            judged_run(judged_cases(n), judge(latency), concurrency) for _ in range(args.repeat)
        ]
        best, worst = min(times), max(times)
        print(
            f"  tinyeval.run, {kind} judge (best of {len(times)}) = {best:.3f} s "
            f"= {best / ideal:.3f}× ideal ({(best / floors[kind] - 1) * 100:+.1f}% vs its floor); "
            f"worst {worst:.3f} s = {worst / ideal:.3f}×"
        )
    for kind in ("sync", "async"):
        times = [cli_judged_run(n, latency, concurrency, kind) for _ in range(args.repeat)]
        best = min(times)
        print(
            f"  whole CLI process, {kind} judge (best of {len(times)}) = {best:.3f} s "
            f"= {best / ideal:.3f}× ideal (interpreter start and reading included; "
            f"{(best - start) / ideal:.3f}× without the bare interpreter's start)"
        )


# one module per kind, each importing what its kind needs: a sync judge's module does not
# import asyncio (about 40 ms at start and 15 at exit, which a sync user does not pay)
JUDGE_MODULES = {
    "sync": """
import time

LATENCY = {latency!r}


def judge(prompt):
    time.sleep(LATENCY)
    return "PASS\\nok"
""",
    "async": """
import asyncio

LATENCY = {latency!r}


async def judge(prompt):
    await asyncio.sleep(LATENCY)
    return "PASS\\nok"
""",
}


def cli_judged_run(n: int, latency: float, concurrency: int, kind: str) -> float:
    """The whole ``tinyeval run`` process on ``n`` judged cases, with a ``kind`` ("sync" or
    "async") judge: wall seconds."""
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "bench_judge.py").write_text(JUDGE_MODULES[kind].format(latency=latency))
        cases = Path(folder, "cases.jsonl")
        with open(cases, "w", encoding="utf-8") as stream:
            for case in judged_cases(n):
                record = {"id": case.id, "input": case.input, "output": case.output,
                          "context": case.context}  # fmt: skip
                stream.write(json.dumps(record) + "\n")
        env = child_env(folder)
        argv = [sys.executable, "-m", "tinyeval", "run", str(cases), "--out", os.devnull, "-q",
                "--criterion", "unsupported-claims", "--judge-model", "py:bench_judge:judge",
                "--concurrency", str(concurrency), "--no-cache"]  # fmt: skip
        began = time.perf_counter()
        subprocess.run(argv, env=env, cwd=folder, check=True)
        return time.perf_counter() - began


def part_overhead(args: argparse.Namespace) -> None:
    n = args.overhead_cases
    print(f"\n[overhead] {n:,} cases, zero-latency model; µs per case (best of {args.repeat})")
    checks_only = checked_cases(n)
    judged = checked_cases(n, context=CONTEXT)  # the same checks, then the judge
    judge = tinyeval.Judge("unsupported-claims")
    instant = CountingJudge(0.0)
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "rows.jsonl")
        setups: list[tuple[str, dict[str, object]]] = [
            ("3 checks", {"cases": checks_only}),
            ("3 checks, rows written to a file", {"cases": checks_only, "out": out}),
            (
                "3 checks + judge (unsupported-claims)",
                {"cases": judged, "judges": judge, "judge_model": instant},
            ),
            (
                "3 checks + judge, rows written to a file",
                {"cases": judged, "judges": judge, "judge_model": instant, "out": out},
            ),
        ]
        for label, options in setups:
            figures = []
            for concurrency in (1, 4):
                kwargs = {**options, "concurrency": concurrency, "keep_rows": False}
                best = min(timed(lambda k=kwargs: tinyeval.run(**k)) for _ in range(args.repeat))
                figures.append(f"{best / n * 1e6:6.1f} µs on {concurrency} thread(s)")
            print(f"  {label:<38} " + ", ".join(figures))


def part_cache(args: argparse.Namespace) -> None:
    n, latency, concurrency = args.cases, args.latency, args.concurrency
    cases = judged_cases(n)
    print(
        f"\n[cache] {n:,} judged cases, judge sleeps {latency * 1000:.0f} ms, run three times "
        f"through a ResponseCache"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "cache.sqlite3")
        for attempt in ("first run", "second run", "third run"):
            judge = CountingJudge(latency)
            with ResponseCache(path) as store:
                model = cached(judge, store, spec="py:bench:judge")
                elapsed = judged_run(cases, model, concurrency)
                hits, misses, stores = store.stats()
            print(
                f"  {attempt:<10}: {elapsed:7.3f} s, {judge.calls:,} model calls, "
                f"{hits:,} cache hits, {misses:,} misses, {stores:,} stored "
                f"({elapsed / n * 1e6:.0f} µs per case)"
            )
        # the baseline: the same 2,000 replies read from the cache in a plain loop, prompts
        # rendered beforehand (each read is checked to be a hit: these are the run's prompts)
        rubric = tinyeval.Judge("unsupported-claims")
        prompts = [rubric.render(c.output or "", context=c.context, question=c.input)
                   for c in cases]  # fmt: skip
        with ResponseCache(path) as store:
            model = cached(CountingJudge(latency), store, spec="py:bench:judge")
            began = time.perf_counter()
            replies = [model.peek(prompt) for prompt in prompts]
            reading = time.perf_counter() - began
        assert all(reply is not None for reply in replies), "a prompt the run did not make"
        print(
            f"  the cache reads alone, in a plain loop: {reading:.3f} s "
            f"({reading / n * 1e6:.0f} µs per case; {reading / elapsed:.0%} of the last re-run)"
        )


def loader_bytes_per_case(path: Path, n: int) -> float:
    """Peak memory traced while streaming the file through the loader, per case."""
    tracemalloc.start()
    count = sum(1 for _ in tinyeval.iter_cases(path))
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == n
    return peak / n


def part_memory(args: argparse.Namespace) -> None:
    print(
        f"\n[memory] `tinyeval run FILE --out {os.devnull} -q`, checks only, peak RSS of the "
        "child process"
    )
    figures: dict[int, tuple[float, float, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for n in (args.small, args.big):
            path = Path(folder) / f"cases-{n}.jsonl"
            write_cases(path, n)
            size = path.stat().st_size
            timing, rss = cli_run(path)
            elapsed = timing.wall
            figures[n] = (elapsed, rss, size)
            print(
                f"  {n:>10,} cases ({size / 2**20:6.1f} MiB file): peak RSS {rss:6.1f} MiB, "
                f"{elapsed:6.1f} s ({elapsed / n * 1e6:.0f} µs per case)"
            )
            if n == args.small:
                traced = loader_bytes_per_case(path, n)
            path.unlink()
    _, small_rss, small_size = figures[args.small]
    _, big_rss, big_size = figures[args.big]
    grown = (big_rss - small_rss) * 2**20 / (args.big - args.small)
    print(
        f"  file {big_size / small_size:.0f}× larger, peak RSS +{big_rss - small_rss:.1f} MiB "
        f"= {grown:.0f} bytes per extra case"
    )
    print(
        f"  the loader's own peak while streaming {args.small:,} cases (tracemalloc): "
        f"{traced:.0f} bytes per case (the duplicate-id index keeps up to 50,000 ids in memory, "
        "then moves to a temporary SQLite file)"
    )


PARTS = {
    "latency": part_latency,
    "overhead": part_overhead,
    "cache": part_cache,
    "memory": part_memory,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--part",
        choices=sorted(PARTS),
        action="append",
        help="run only this part (repeatable; default: all)",
    )
    parser.add_argument("--cases", type=int, default=2000, help="judged cases (default 2000)")
    parser.add_argument("--latency", type=float, default=0.05, help="judge sleep, s (0.05)")
    parser.add_argument("--concurrency", type=int, default=32, help="cases in flight (32)")
    parser.add_argument("--overhead-cases", type=int, default=20000, help="(default 20000)")
    parser.add_argument("--small", type=int, default=100_000, help="memory: small file cases")
    parser.add_argument("--big", type=int, default=1_000_000, help="memory: big file cases")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (default 3)")
    args = parser.parse_args(argv)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, tinyeval {tinyeval.__version__}"
    )
    for name in args.part or list(PARTS):
        PARTS[name](args)


if __name__ == "__main__":
    main()
