"""Ctrl-C (KeyboardInterrupt) interrupts a blocking wait and leaves no hold behind."""

from __future__ import annotations

import _thread
import threading
import time
from typing import Callable, Iterator

import pytest

import baton
from helpers import eventually, is_free


def interrupt_after(seconds: float) -> threading.Timer:
    """Raises KeyboardInterrupt in the main thread after `seconds`, as Ctrl-C would."""
    t = threading.Timer(seconds, _thread.interrupt_main)
    t.start()
    return t


def interrupted(call: Callable[[], object]) -> float:
    """Runs `call` (which must block), interrupts it after 0.3 s, returns how long the
    interrupt took to land."""
    timer = interrupt_after(0.3)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        timer.cancel()
        timer.join()
    took = time.monotonic() - t0
    # The wait ticks every 50 ms; 5 s covers a loaded machine.
    assert took < 5.0, f"the interrupt took {took:.1f}s"
    return took


@pytest.fixture
def holder(client: baton.Client) -> Iterator[baton.LockGuard]:
    g = client.lock("ctrl-c").acquire()
    yield g
    if not g.released:
        g.release()


def test_interrupted_acquire_leaves_no_hold(client: baton.Client, holder: baton.LockGuard) -> None:
    waiter = client.lock("ctrl-c")
    interrupted(lambda: waiter.acquire())
    i = client.inspect("ctrl-c")
    assert [h.owner for h in i.holders] == [holder.owner]
    holder.release()
    # The interrupted waiter did not take the lock after the fact.
    eventually(lambda: is_free(client, "ctrl-c"), "the lock is free after the holder left")
    assert client.inspect("ctrl-c").holders == []
    assert waiter.try_acquire() is not None  # and the handle still works


def test_interrupted_fair_and_write_waits(client: baton.Client) -> None:
    fair = client.fair_lock("ctrl-c/fair").acquire()
    interrupted(lambda: client.fair_lock("ctrl-c/fair").acquire())
    # The fair queue forgets the interrupted waiter (its place is dropped at once).
    eventually(lambda: client.inspect("ctrl-c/fair").waiters == [], "the fair queue is empty")
    fair.release()
    eventually(lambda: is_free(client, "ctrl-c/fair"), "the fair lock is free")

    reader = client.rw_lock("ctrl-c/rw").read()
    interrupted(lambda: client.rw_lock("ctrl-c/rw").write())
    eventually(lambda: client.rw_lock("ctrl-c/rw").inspect().waiters == [], "no waiting writer")
    reader.release()
    g = client.rw_lock("ctrl-c/rw").try_write()
    assert g is not None
    g.release()


def test_interrupted_semaphore_latch_and_lost_waits(client: baton.Client) -> None:
    sem = client.semaphore("ctrl-c/sem", 1)
    p = sem.acquire()
    interrupted(lambda: sem.acquire())
    p.release()
    assert sem.available() == 1

    latch = client.count_down_latch("ctrl-c/latch")
    latch.try_set_count(1)
    interrupted(lambda: latch.wait())
    assert latch.count() == 1

    g = client.lock("ctrl-c/lost").acquire()
    interrupted(lambda: g.lost.wait())
    g.release()


def test_interrupted_multi_lock(client: baton.Client) -> None:
    busy = client.lock("m2").acquire()
    interrupted(lambda: client.multi_lock(["m1", "m2", "m3"]).acquire())
    # m1 was taken before the wait on m2; the interrupt gives it back.
    eventually(lambda: is_free(client, "m1"), "the multi-lock's first lock is given back")
    busy.release()
    assert is_free(client, "m2") and is_free(client, "m3")
