"""Lock and FairLock through the blocking API, on every store."""

from __future__ import annotations

import gc
import threading
import time
from typing import List

import pytest

import baton
from helpers import eventually, is_free


@pytest.mark.every_store
def test_acquire_release_tokens_grow(client: baton.Client) -> None:
    lock = client.lock("orders/42")
    assert lock.name == "orders/42" and lock.owner
    g1 = lock.acquire()
    assert isinstance(g1.token, int) and g1.token > 0
    assert g1.name == "orders/42" and g1.owner == lock.owner
    assert not g1.released and not g1.lost.is_set()
    g1.release()
    assert g1.released
    g2 = client.lock("orders/42").acquire(timeout=5.0)
    assert g2.token > g1.token
    g2.release()


@pytest.mark.every_store
def test_try_acquire_and_timeout(client: baton.Client) -> None:
    held = client.lock("busy").acquire()
    other = client.lock("busy")
    assert other.try_acquire() is None
    t0 = time.monotonic()
    with pytest.raises(baton.Timeout) as e:
        other.acquire(timeout=0.2)
    assert time.monotonic() - t0 >= 0.15
    assert isinstance(e.value, TimeoutError) and "busy" in str(e.value)
    with pytest.raises(TimeoutError):  # the builtin catches it too
        client.lock("busy", timeout=0.1).acquire()
    held.release()
    got = other.try_acquire()
    assert got is not None
    got.release()


def test_context_managers(client: baton.Client) -> None:
    with client.lock("cm", timeout=5.0) as guard:
        assert isinstance(guard, baton.LockGuard)
        assert not is_free(client, "cm")
    assert guard.released and is_free(client, "cm")
    # The guard itself is a context manager too.
    with client.lock("cm").acquire() as g:
        assert not is_free(client, "cm")
    assert g.released and is_free(client, "cm")
    # An exception in the body still releases, and propagates.
    with pytest.raises(ZeroDivisionError):
        with client.lock("cm"):
            1 / 0
    assert is_free(client, "cm")
    # Released inside the block: leaving it is quiet.
    with client.lock("cm") as g:
        g.release()
    assert is_free(client, "cm")


def test_reentrant_handle_and_nested_with(client: baton.Client) -> None:
    lock = client.lock("re")
    with lock as outer:
        with lock as inner:  # the same handle re-enters: same token
            assert inner.token == outer.token
            assert client.inspect("re").holders[0].count == 2
        assert not is_free(client, "re")
    assert is_free(client, "re")


def test_owner_binds_reentrancy_across_handles(client: baton.Client) -> None:
    a = client.lock("job", owner="job-7")
    b = client.lock("job", owner="job-7")
    ga = a.acquire()
    gb = b.acquire(timeout=1.0)  # same owner: re-entry, not a wait
    assert ga.token == gb.token
    assert client.inspect("job").holders[0].owner == "job-7"
    gb.release()
    ga.release()
    assert is_free(client, "job")


def test_double_release_is_not_held(client: baton.Client) -> None:
    g = client.lock("twice").acquire()
    g.release()
    with pytest.raises(baton.NotHeld):
        g.release()
    with pytest.raises(baton.NotHeld):
        g.extend(5.0)


def test_ttl_expiry_sets_lost_and_release_raises_lock_lost(client: baton.Client) -> None:
    g = client.lock("short", ttl=0.3).acquire()
    assert not g.lost.is_set()
    assert g.lost.wait(timeout=0) is False  # 0 only checks
    # The ttl is 0.3 s; 10 s covers a loaded machine.
    assert g.lost.wait(timeout=10.0) is True
    assert g.lost.is_set()
    with pytest.raises(baton.LockLost):
        g.extend(1.0)
    with pytest.raises(baton.LockLost):
        g.release()
    # Free within the store's lease granularity: etcd leases are whole seconds with a 2 s
    # minimum, so its key outlives a 0.3 s ttl by up to ~1.7 s (docs/etcd-layout.md).
    eventually(lambda: is_free(client, "short"), "the expired lock is free", within=5.0)


def test_lost_wait_times_out_while_held(client: baton.Client) -> None:
    g = client.lock("kept").acquire()
    t0 = time.monotonic()
    assert g.lost.wait(timeout=0.2) is False
    assert time.monotonic() - t0 >= 0.15
    g.release()


def test_extend_keeps_a_ttl_grant(client: baton.Client) -> None:
    # A 1 s ttl extended every 0.4 s: the holder counts its lease from when the request
    # was sent, minus a drift margin, so the period leaves room for a slow store (the etcd
    # gateway) on a loaded machine.
    g = client.lock("ext", ttl=1.0).acquire()
    for _ in range(4):  # 1.6 s in all, past the 1 s ttl
        time.sleep(0.4)
        g.extend(1.5)
    assert not g.lost.is_set()
    lease_left = client.inspect("ext").holders[0].lease_left
    assert lease_left is None or 0 < lease_left <= 1.5
    g.release()


def test_watchdog_lease_outlives_the_lease(url: str) -> None:
    # A 1 s watchdog lease renewed by the core keeps the lock past several leases.
    client = baton.connect(url)
    g = client.lock("wd", lease=1.0).acquire()
    assert g.lost.wait(timeout=2.5) is False
    assert not is_free(client, "wd")
    g.release()
    client.close()


def test_dropped_guard_is_released(client: baton.Client) -> None:
    client.lock("gc").acquire()  # the guard is dropped at once
    gc.collect()
    # Released in the background by the core; 10 s is generous.
    eventually(lambda: is_free(client, "gc"), "a dropped guard's lock is freed")


def test_inspect(client: baton.Client) -> None:
    before = client.inspect("insp")
    assert before.name == "insp" and not before.is_held and before.last_token is None
    g = client.lock("insp").acquire()
    i = client.lock("insp").inspect()
    assert i.kind == "lock" and i.is_held and i.last_token == g.token and i.count == 0
    (h,) = i.holders
    assert h.mode == "exclusive" and h.count == 1 and h.token == g.token and h.owner == g.owner
    assert h.lease_left is None or 0 < h.lease_left <= 30.0
    assert "insp" in repr(i) and "exclusive" in repr(h)
    g.release()


def test_close_releases_and_later_calls_raise_closed(url: str) -> None:
    c = baton.connect(url)
    observer = baton.connect(url)  # a named memory:// store is shared in-process too
    lock = c.lock("closing")
    g = lock.acquire()
    with c:
        assert not c.closed
    assert c.closed
    assert g.lost.wait(timeout=10.0)
    with pytest.raises(baton.Closed):
        lock.acquire(timeout=1.0)
    with pytest.raises(baton.Closed):
        c.inspect("closing")
    c.close()  # idempotent
    eventually(lambda: is_free(observer, "closing"), "close released the lock")
    observer.close()


def test_fair_lock_grants_in_request_order(client: baton.Client) -> None:
    fair = "fair/q"
    holder = client.fair_lock(fair).acquire()
    order: List[str] = []
    errors: List[BaseException] = []

    def waiter(tag: str) -> None:
        try:
            with client.fair_lock(fair, timeout=30.0):
                order.append(tag)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = []
    for i, tag in enumerate("abc"):
        t = threading.Thread(target=waiter, args=(tag,))
        t.start()
        threads.append(t)
        # Wait until this waiter is queued before starting the next one.
        eventually(lambda: len(client.inspect(fair).waiters) == i + 1, f"waiter {tag} queued")
    holder.release()
    for t in threads:
        t.join(timeout=30.0)
        assert not t.is_alive()
    assert not errors, errors
    assert order == ["a", "b", "c"]


def test_fair_lock_basics(client: baton.Client) -> None:
    f = client.fair_lock("fair/b", ttl=5.0)
    with f as g:
        assert client.fair_lock("fair/b").try_acquire() is None
        assert g.token > 0
    g2 = f.try_acquire()
    assert g2 is not None
    g2.release()


def test_semaphore_size_is_state(client: baton.Client) -> None:
    three, five = client.semaphore("sem-size", 3), client.semaphore("sem-size", 5)
    p = three.acquire()
    assert three.inspect().permits == 3 and "permits=3" in repr(three.inspect())
    with pytest.raises(baton.InvalidArgument, match="has 3 permits; this handle asked for 5"):
        five.try_acquire()
    with pytest.raises(baton.InvalidArgument):
        five.available()
    p.release()
    assert five.inspect().permits is None
    q = five.acquire(timeout=10)
    assert five.inspect().permits == 5
    q.release()
