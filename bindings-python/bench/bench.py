#!/usr/bin/env python3
"""Benchmark of the Python binding, next to the same scenarios in Rust (`baton bench`).

Scenarios, each stopped after --iterations operations or --duration seconds:

  acquire+release (blocking)  one handle: ``lock.acquire().release()`` in a loop
  acquire+release (asyncio)   the same with ``await lock.acquire()`` / ``await g.release()``
  hand-off (blocking)         two threads pass one lock; time from the holder's
                              ``release()`` call to the waiter's ``acquire()`` returning
  hand-off (asyncio)          the same with two tasks on one event loop

Per-call overhead of the binding: the blocking acquire+release p50 minus the p50 of
``baton bench``'s "acquire+release, 1 task" on the same store (the Rust CLI, run here
when found: --cli, else target/release/baton).

  python bindings-python/bench/bench.py                       # memory:// and a temp sqlite file
  python bindings-python/bench/bench.py --url sqlite:///tmp/b.db --json

On a redis:// URL the same two blocking scenarios also run with redis-py's ``Lock`` (the
``redis`` package from PyPI; its defaults: ``sleep=0.1`` between polls), on the same
server in the same run:

  python bindings-python/bench/bench.py --url redis://127.0.0.1:6379
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

try:
    import baton
except ImportError:  # benches/peers/bench-peers times redis-py with this file's loops, wheel or not
    baton = None  # type: ignore[assignment]

SETTLE = 0.001  # the holder lets the waiter park for 1 ms before releasing


class Budget:
    """At most `ops` operations or `seconds` of wall time."""

    def __init__(self, ops: int, seconds: float) -> None:
        self.ops, self.deadline = ops, time.perf_counter() + seconds

    def more(self, done: int) -> bool:
        return done < self.ops and time.perf_counter() < self.deadline


def summary(name: str, samples_ns: List[int], elapsed: Optional[float]) -> Dict[str, Any]:
    s = sorted(samples_ns)

    def q(p: float) -> float:
        return s[min(len(s) - 1, int(p * len(s)))] / 1000.0 if s else 0.0

    return {
        "scenario": name,
        "ops": len(s),
        "ops_per_sec": round(len(s) / elapsed) if elapsed else None,
        "p50_us": round(q(0.5), 1),
        "p99_us": round(q(0.99), 1),
        "max_us": round(s[-1] / 1000.0, 1) if s else 0.0,
    }


def timed(name: str, budget: Budget, op: Callable[[], Any]) -> Dict[str, Any]:
    """`op` in a loop until the budget is spent, each call one latency sample."""
    samples: List[int] = []
    started = time.perf_counter()
    while budget.more(len(samples)):
        t = time.perf_counter_ns()
        op()
        samples.append(time.perf_counter_ns() - t)
    return summary(name, samples, time.perf_counter() - started)


def handoff(name: str, budget: Budget, take: Callable[[int], Any], give: Callable[[Any], None],
            most: Optional[int] = None) -> Dict[str, Any]:
    """Two handles (0 and 1) pass one lock: a waiter thread calls `take(other)`, the holder
    lets it park for SETTLE and calls `give(held)`; a sample is the time from that call
    until the waiter's `take` returns. At most `most` samples, besides the budget."""
    held, turn = take(0), 1
    samples: List[int] = []
    while budget.more(len(samples)) and (most is None or len(samples) < most):
        ready, box = threading.Event(), {}

        def wait(i: int = turn) -> None:
            ready.set()
            box["held"] = take(i)
            box["at"] = time.perf_counter_ns()

        t = threading.Thread(target=wait)
        t.start()
        ready.wait(30.0)
        time.sleep(SETTLE)
        released_at = time.perf_counter_ns()
        give(held)
        t.join(30.0)
        held, turn = box["held"], 1 - turn
        samples.append(box["at"] - released_at)
    give(held)
    return summary(name, samples, None)


def uncontended_blocking(client: baton.Client, budget: Budget) -> Dict[str, Any]:
    lock = client.lock("pybench/uncontended")
    lock.acquire().release()  # warm-up: store rows, connections
    return timed("acquire+release (blocking)", budget, lambda: lock.acquire().release())


def handoff_blocking(client: baton.Client, budget: Budget) -> Dict[str, Any]:
    locks = [client.lock("pybench/handoff"), client.lock("pybench/handoff")]
    return handoff("hand-off (blocking)", budget, lambda i: locks[i].acquire(timeout=30.0), lambda g: g.release())


def redispy_scenarios(url: str, budget: Callable[[], Budget]) -> List[Dict[str, Any]]:
    """redis-py's ``Lock`` (``SET NX PX`` + Lua release) with its default settings."""
    import redis  # only needed for this comparison

    r = redis.Redis.from_url(url.split("?")[0])
    # A 30 s lease, as baton's watchdog lease: redis-py has no watchdog.
    lock = r.lock("pybench/redis-py-uncontended", timeout=30)
    lock.acquire()
    lock.release()
    rows = [timed("redis-py Lock acquire+release", budget(), lambda: (lock.acquire(), lock.release()))]

    # thread_local=False: the waiter thread acquires, the main thread releases later.
    locks = [r.lock("pybench/redis-py-handoff", timeout=30, thread_local=False) for _ in range(2)]

    def take(i: int) -> Any:
        locks[i].acquire(blocking_timeout=30)
        return locks[i]

    # Each hand-off costs up to one 0.1 s poll: a few hundred samples are plenty.
    rows.append(handoff("redis-py Lock hand-off", budget(), take, lambda held: held.release(), most=300))
    r.close()
    return rows


async def uncontended_async(client: baton.AsyncClient, budget: Budget) -> Dict[str, Any]:
    lock = client.lock("pybench/uncontended-async")
    await (await lock.acquire()).release()
    samples: List[int] = []
    started = time.perf_counter()
    while budget.more(len(samples)):
        t = time.perf_counter_ns()
        g = await lock.acquire()
        await g.release()
        samples.append(time.perf_counter_ns() - t)
    return summary("acquire+release (asyncio)", samples, time.perf_counter() - started)


async def handoff_async(client: baton.AsyncClient, budget: Budget) -> Dict[str, Any]:
    locks = [client.lock("pybench/handoff-async"), client.lock("pybench/handoff-async")]
    held = await locks[0].acquire()
    samples: List[int] = []
    while budget.more(len(samples)):
        ready = asyncio.Event()

        async def wait(lock: baton.AsyncLock = locks[1]) -> Any:
            ready.set()
            g = await lock.acquire(timeout=30.0)
            return g, time.perf_counter_ns()

        task = asyncio.ensure_future(wait())
        await ready.wait()
        await asyncio.sleep(SETTLE)
        released_at = time.perf_counter_ns()
        await held.release()
        held, granted_at = await task
        samples.append(granted_at - released_at)
        locks.reverse()
    await held.release()
    return summary("hand-off (asyncio)", samples, None)


async def run_async(url: str, ops: int, seconds: float) -> List[Dict[str, Any]]:
    client = await baton.connect_async(url)
    try:
        return [
            await uncontended_async(client, Budget(ops, seconds)),
            await handoff_async(client, Budget(ops, seconds)),
        ]
    finally:
        await client.close()


def rust_bench(cli: Optional[Path], url: str, ops: int, seconds: float) -> Optional[Dict[str, Any]]:
    """`baton bench --json` on the same store, or None without the CLI."""
    if cli is None or not cli.exists():
        return None
    out = subprocess.run(
        [str(cli), "bench", "--json", "--url", url, "--iterations", str(ops), "--duration", f"{seconds}s"],
        capture_output=True, text=True, timeout=300, check=True,
    )
    report: Dict[str, Any] = json.loads(out.stdout)
    return report


def bench_store(url: str, ops: int, seconds: float) -> Dict[str, Any]:
    client = baton.connect(url)
    try:
        rows = [uncontended_blocking(client, Budget(ops, seconds)), handoff_blocking(client, Budget(ops, seconds))]
    finally:
        client.close()
    rows += asyncio.run(run_async(url, ops, seconds))
    if url.startswith("redis://"):
        rows += redispy_scenarios(url, lambda: Budget(ops, seconds))
    return {"url": client.url, "scenarios": rows}


def render(results: List[Dict[str, Any]]) -> str:
    lines = []
    for r in results:
        lines.append(f"baton Python binding on {r['url']}")
        lines.append(f"  {'scenario':<30} {'ops':>7} {'ops/s':>8} {'p50':>10} {'p99':>10} {'max':>10}")
        for s in r["scenarios"]:
            rate = "-" if s["ops_per_sec"] is None else str(s["ops_per_sec"])
            lines.append(
                f"  {s['scenario']:<30} {s['ops']:>7} {rate:>8} {s['p50_us']:>8.1f}µs {s['p99_us']:>8.1f}µs"
                f" {s['max_us']:>8.1f}µs"
            )
        by = {s["scenario"]: s for s in r["scenarios"]}
        if "redis-py Lock acquire+release" in by:
            ours, theirs = by["acquire+release (blocking)"], by["redis-py Lock acquire+release"]
            ho, tho = by["hand-off (blocking)"], by["redis-py Lock hand-off"]
            lines.append(
                f"  vs redis-py: acquire+release {ours['ops_per_sec']} vs {theirs['ops_per_sec']} ops/s"
                f" (x{ours['ops_per_sec'] / theirs['ops_per_sec']:.2f}); hand-off p50 {ho['p50_us']:.0f}µs vs"
                f" {tho['p50_us']:.0f}µs (x{tho['p50_us'] / ho['p50_us']:.0f} lower)"
            )
        if "rust" in r:
            rust = r["rust"]
            lines.append(
                f"  Rust (baton bench), same store: acquire+release p50 {rust['acquire_release_p50_us']:.1f}µs"
                f" ({rust['ops_per_sec']:.0f} ops/s), hand-off p50 {rust['handoff_p50_us']:.1f}µs"
            )
            lines.append(f"  binding overhead per acquire+release (p50): {r['binding_overhead_p50_us']:+.1f}µs")
        lines.append("")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    root = Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", action="append", help="store URL (repeatable; default: memory:// and a temp sqlite file)")
    ap.add_argument("--iterations", type=int, default=10_000, help="most operations per scenario")
    ap.add_argument("--duration", type=float, default=3.0, help="longest seconds per scenario")
    ap.add_argument("--cli", type=Path, default=root / "target" / "release" / "baton", help="the baton CLI")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="baton-pybench-")
    urls = args.url or ["memory://pybench", f"sqlite://{os.path.join(tmp, 'bench.db')}"]
    results: List[Dict[str, Any]] = []
    for url in urls:
        py = bench_store(url, args.iterations, args.duration)
        # The CLI gets its own sqlite file, so the two runs do not share rows.
        cli_url = url.replace("bench.db", "bench-cli.db")
        rust = rust_bench(args.cli, cli_url, args.iterations, args.duration)
        if rust:
            by = {s["name"]: s for s in rust["scenarios"]}
            r1, rh = by["uncontended_1"], by["handoff"]
            py["rust"] = {"acquire_release_p50_us": r1["p50_us"], "ops_per_sec": r1["ops_per_sec"],
                          "handoff_p50_us": rh["p50_us"]}
            py["binding_overhead_p50_us"] = round(py["scenarios"][0]["p50_us"] - r1["p50_us"], 1)
        results.append(py)
    if args.json:
        print(json.dumps({"python": sys.version.split()[0], "baton": baton.__version__, "results": results}, indent=2))
    else:
        print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
