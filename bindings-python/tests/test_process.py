"""Mutual exclusion across processes: 8 processes x 100 acquisitions guard a
read-modify-write file counter; no update is lost and fencing tokens strictly increase.
Runs on every store processes can share (sqlite, and Redis etc. when present)."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from pathlib import Path
from typing import List, Tuple

import pytest

import baton

PROCESSES = 8
ROUNDS = 100


def worker(url: str, counter: str, journal: str, rounds: int) -> None:
    """One process: `rounds` times, under the lock, read the counter, write it + 1, and
    append `token` to the journal."""
    client = baton.connect(url)
    for _ in range(rounds):
        with client.lock("counter", timeout=120.0) as guard:
            with open(counter) as f:
                count, last = (int(x) for x in f.read().split())
            if guard.token <= last:
                raise AssertionError(f"token {guard.token} after {last}")
            with open(counter, "w") as f:
                f.write(f"{count + 1} {guard.token}")
                f.flush()
                os.fsync(f.fileno())
            with open(journal, "a") as f:
                f.write(f"{guard.token}\n")
    client.close()


def run_workers(url: str, tmp: Path, processes: int, rounds: int) -> Tuple[int, List[int]]:
    counter, journal = tmp / "counter", tmp / "journal"
    counter.write_text("0 0")
    journal.write_text("")
    ctx = mp.get_context("spawn")  # fresh interpreters, as separate programs would be
    procs = [ctx.Process(target=worker, args=(url, str(counter), str(journal), rounds)) for _ in range(processes)]
    for p in procs:
        p.start()
    # A cross-process hand-off on SQLite is woken by polling (2-50 ms); 800 of them take
    # ~10-40 s on a loaded 2-core box. 300 s is the hang guard, not an expectation.
    deadline = time.monotonic() + 300.0
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
        p.join(timeout=10.0)
    assert not alive, f"{len(alive)} workers still running after 300 s"
    assert [p.exitcode for p in procs] == [0] * processes
    count = int(counter.read_text().split()[0])
    tokens = [int(line) for line in journal.read_text().split()]
    return count, tokens


def test_processes_exclude_each_other(shared_url: str, tmp_path: Path) -> None:
    count, tokens = run_workers(shared_url, tmp_path, PROCESSES, ROUNDS)
    assert count == PROCESSES * ROUNDS  # no lost update
    assert len(tokens) == PROCESSES * ROUNDS
    assert all(a < b for a, b in zip(tokens, tokens[1:]))  # strictly increasing


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_client_from_before_fork_is_closed_in_the_child(shared_url: str) -> None:
    """The child of fork() gets a fresh runtime; the parent's client reports Closed
    there (its leases belong to the parent) instead of hanging."""
    if shared_url.startswith("zk://"):
        # Known gap of the new ZooKeeper store: reported as xfail, never as a pass.
        pytest.xfail("zk://: a client from before fork() is not yet closed in the child")
    client = baton.connect(shared_url)
    held = client.lock("forked").acquire()
    ctx = mp.get_context("fork")
    q: "mp.Queue[str]" = ctx.Queue()
    p = ctx.Process(target=_forked_child, args=(client, shared_url, q))
    p.start()
    p.join(timeout=60.0)
    if p.is_alive():
        p.kill()
        pytest.fail("the forked child hung")
    assert p.exitcode == 0
    assert q.get(timeout=5.0) == "ok"
    assert not held.lost.is_set()  # the child did not touch the parent's lease
    held.release()  # NotHeld had the child released it, Connection had it cut the socket
    client.close()


def _forked_child(client: baton.Client, url: str, q: "mp.Queue[str]") -> None:
    try:
        client.lock("x").try_acquire()
        q.put("no Closed")
        return
    except baton.Closed:
        pass
    # Closing it here releases nothing and closes nothing of the parent's: its holds and
    # connections (the parent thread's own Redis connection is this process's socket too).
    client.close()
    fresh = baton.connect(url)
    assert fresh.lock("forked").try_acquire() is None  # the parent still holds it
    fresh.close()
    q.put("ok")
