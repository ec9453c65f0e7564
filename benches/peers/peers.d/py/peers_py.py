#!/usr/bin/env python3
"""The Python sides of `benches/peers/bench-peers`: redis-py's ``Lock`` and baton's Python
binding (blocking API), timed in the three scenarios of ``baton bench`` and printed as one
JSON object, the shape every side of the bench prints:

  peers_py.py --side redis-py|baton --url redis://127.0.0.1:31010[?scheme=simple] \
      [--duration S] [--iterations N] [--handoff-max K]

64 tasks are 64 threads, a name and a handle each (a blocking client's way to overlap).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict

# The loops of the binding's own bench (bindings-python/bench/bench.py), shared.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bindings-python" / "bench"))
import bench  # noqa: E402

bench.SETTLE = 0.010  # the holder lets the waiter park 10 ms before releasing, as `baton bench` does
MANY = 64


def windowed(t0: float, stats: Dict[str, Any]) -> Dict[str, Any]:
    """`stats` with the timed part's wall-clock window (`bench-peers --cpu` reads CPU time over it)."""
    return {**stats, "t0_unix": t0, "t1_unix": time.time()}


def summary(samples_ns: Any, elapsed: Any) -> Dict[str, Any]:
    return bench.summary("", samples_ns, elapsed)


def handoff(take: Callable[[int], Any], give: Callable[[Any], None], ops: int, seconds: float) -> Dict[str, Any]:
    """Handles 0 and 1 pass one lock; a sample runs from the holder's release to the grant."""
    return windowed(time.time(), bench.handoff("hand-off", bench.Budget(ops, seconds), take, give))


def uncontended(make: Callable[[str], Callable[[], None]], tasks: int, ops: int, seconds: float) -> Dict[str, Any]:
    cycles = [make(f"bench/peer-py/{tasks}-{time.time_ns()}/{i}") for i in range(tasks)]
    for c in cycles:
        c()  # warm-up: connections, scripts
    lock, claimed, all_ns = threading.Lock(), [0], []  # type: ignore[var-annotated]
    t0 = time.time()
    start = time.perf_counter()
    deadline = start + seconds

    def run(cycle: Callable[[], None]) -> None:
        mine = []
        while time.perf_counter() < deadline:
            with lock:
                claimed[0] += 1
                if claimed[0] > ops:
                    break
            t = time.perf_counter_ns()
            cycle()
            mine.append(time.perf_counter_ns() - t)
        with lock:
            all_ns.extend(mine)

    threads = [threading.Thread(target=run, args=(c,)) for c in cycles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return windowed(t0, summary(all_ns, time.perf_counter() - start))


def redis_py(url: str, a: argparse.Namespace) -> Dict[str, Any]:
    import redis

    # A pool as large as the threads, so no thread waits for a connection.
    r = redis.Redis.from_url(url.split("?")[0], max_connections=MANY + 4)

    def make(name: str) -> Callable[[], None]:
        lock = r.lock(name, timeout=30)  # a 30 s lease, as baton's watchdog lease

        def cycle() -> None:
            lock.acquire()
            lock.release()

        return cycle

    name = f"bench/peer-py/handoff-{time.time_ns()}"
    # thread_local=False: the waiter thread acquires, the main thread releases later.
    locks = [r.lock(name, timeout=30, thread_local=False) for _ in range(2)]

    def take(i: int) -> Any:
        locks[i].acquire(blocking_timeout=30)
        return locks[i]

    out = {
        "one": uncontended(make, 1, a.iterations, a.duration),
        "many": uncontended(make, MANY, a.iterations, a.duration),
        "handoff": handoff(take, lambda held: held.release(), a.handoff_max, a.duration),
    }
    r.close()
    return out


def baton_py(url: str, a: argparse.Namespace) -> Dict[str, Any]:
    import baton

    client = baton.connect(url)

    def make(name: str) -> Callable[[], None]:
        lock = client.lock(name)
        return lambda: lock.acquire().release()

    name = f"bench/peer-py/handoff-{time.time_ns()}"
    locks = [client.lock(name), client.lock(name)]
    try:
        return {
            "one": uncontended(make, 1, a.iterations, a.duration),
            "many": uncontended(make, MANY, a.iterations, a.duration),
            "handoff": handoff(lambda i: locks[i].acquire(timeout=30.0), lambda g: g.release(),
                               a.iterations, a.duration),
        }
    finally:
        client.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", choices=["redis-py", "baton"], required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--duration", type=float, default=3.0, help="longest seconds per scenario")
    ap.add_argument("--iterations", type=int, default=10_000, help="most cycles per scenario")
    ap.add_argument("--handoff-max", type=int, default=100, help="most hand-offs of a polling peer")
    a = ap.parse_args()
    run = redis_py if a.side == "redis-py" else baton_py
    print(json.dumps({"scenarios": run(a.url, a)}))


if __name__ == "__main__":
    main()
