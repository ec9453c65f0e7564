"""16 threads sharing one client: mutual exclusion, growing tokens, the GIL released."""

from __future__ import annotations

import threading
import time
from typing import List

import baton

THREADS = 16
ROUNDS = 25  # 400 acquisitions per store


def test_sixteen_threads_share_one_client(client: baton.Client) -> None:
    state = {"counter": 0, "inside": 0, "last_token": 0}
    overlaps: List[int] = []
    tokens: List[int] = []
    errors: List[BaseException] = []
    start = threading.Barrier(THREADS)

    def work() -> None:
        try:
            start.wait(timeout=30.0)
            for _ in range(ROUNDS):
                # Each round a new handle: a new owner, so threads exclude each other.
                with client.lock("shared", timeout=60.0) as guard:
                    state["inside"] += 1
                    if state["inside"] != 1:
                        overlaps.append(state["inside"])
                    seen = state["counter"]
                    time.sleep(0)  # invite a thread switch inside the critical section
                    state["counter"] = seen + 1
                    tokens.append(guard.token)
                    state["inside"] -= 1
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120.0)  # 400 hand-offs take a few seconds; 120 s is generous
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:3]
    assert not overlaps
    assert state["counter"] == THREADS * ROUNDS
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)


def test_gil_is_released_while_waiting(client: baton.Client) -> None:
    """A thread blocked in acquire() does not stop the others from running Python."""
    held = client.lock("gil").acquire()
    done = threading.Event()

    def wait() -> None:
        with client.lock("gil", timeout=30.0):
            done.set()

    t = threading.Thread(target=wait)
    t.start()
    spins = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.3:
        spins += 1
    assert spins > 10_000  # pure-Python work went on while the other thread waited
    held.release()
    t.join(timeout=30.0)
    assert done.is_set()
