"""A sample that uses every public name of `baton`, checked with `mypy --strict` (and run
by test_typing.py, so it is also known to work)."""

from __future__ import annotations

import asyncio
import sys
from typing import List, Optional, Tuple

import baton


def blocking(url: str) -> List[int]:
    tokens: List[int] = []
    with baton.connect(url) as client:
        c: baton.Client = client
        assert isinstance(c.id, str) and isinstance(c.url, str) and not c.closed
        lock: baton.Lock = c.lock("t/lock", ttl=10.0, lease=None, owner=None, timeout=5.0)
        with lock as guard:
            g: baton.LockGuard = guard
            tokens.append(g.token)
            name: str = g.name
            owner: str = g.owner
            lost: baton.LostEvent = g.lost
            assert not lost.is_set() and not lost.wait(0) and name and owner
            g.extend(10.0)
        maybe: Optional[baton.LockGuard] = lock.try_acquire()
        if maybe is not None:
            maybe.release()
        g2 = lock.acquire(timeout=1.0)
        assert not g2.released
        g2.release()
        insp: baton.Inspection = lock.inspect()
        holders: List[baton.Holder] = insp.holders
        last: Optional[int] = insp.last_token
        assert insp.name and insp.kind and not insp.is_held and insp.count == 0 and not insp.waiters
        # A free name's last token is gone where the store forgets free names (Redis,
        # memory://; SQL after 10 s), and kept elsewhere.
        assert holders == [] and (last is None or last > 0) and lock.name and lock.owner

        fair: baton.FairLock = c.fair_lock("t/fair", timeout=5.0)
        with fair as fg:
            tokens.append(fg.token)

        rw: baton.RwLock = c.rw_lock("t/rw")
        with rw.read(timeout=5.0) as r:
            tokens.append(r.token)
        w: Optional[baton.LockGuard] = rw.try_write()
        if w is not None:
            w.release()
        with rw.write():
            pass
        assert rw.try_read() is not None and rw.name and rw.inspect().kind

        sem: baton.Semaphore = c.semaphore("t/sem", 3)
        with sem.acquire(count=2, timeout=5.0) as permit:
            p: baton.Permit = permit
            assert p.count == 2 and p.id and p.name and sem.available() == 1
            tokens.append(p.token)
        maybe_p: Optional[baton.Permit] = sem.try_acquire(1)
        if maybe_p is not None:
            maybe_p.extend(5.0)
            maybe_p.release()
        assert sem.permits == 3 and sem.name and sem.inspect().kind

        ps: baton.PermitSemaphore = c.permit_semaphore("t/ps", 2, ttl=None)
        leased = ps.acquire(lease=30.0)
        ps.update_lease(leased.id, 10.0)
        ps.release(leased.id)
        assert ps.try_acquire() is not None and ps.available() >= 1 and ps.name and ps.inspect()

        latch: baton.CountDownLatch = c.count_down_latch("t/latch")
        assert latch.try_set_count(1) and latch.count() == 1 and latch.count_down() == 0
        latch.wait(timeout=1.0)
        assert latch.name

        multi: baton.MultiLock = c.multi_lock(["t/a", "t/b"], timeout=5.0)
        with multi as mg:
            m: baton.MultiGuard = mg
            tokens.extend(m.tokens)
            assert m.names == multi.names and not m.lost.is_set()
        maybe_m: Optional[baton.MultiGuard] = multi.try_acquire()
        if maybe_m is not None:
            maybe_m.release()
        assert multi.acquire(timeout=1.0).tokens
        assert c.inspect("t/lock").name

        fence: baton.Fence = c.fence()
        try:
            written: bool = fence.write("t/fenced", "v", tokens[0])
            got: Optional[Tuple[str, int]] = fence.read("t/fenced")
            assert written and got is not None and got[1] == tokens[0]
        except baton.Unsupported:
            pass  # a store without fenced writes (redlock://)
        sql: str = baton.fenced_update("UPDATE t SET a = 1", tokens[0])
        assert "fence" in sql
    return tokens


async def asynchronous(url: str) -> List[int]:
    tokens: List[int] = []
    async with await baton.connect_async(url) as client:
        c: baton.AsyncClient = client
        lock: baton.AsyncLock = c.lock("a/lock", ttl=10.0)
        async with lock as guard:
            g: baton.AsyncLockGuard = guard
            lost: baton.AsyncLostEvent = g.lost
            assert not lost.is_set() and not await lost.wait(0.01)
            await g.extend(5.0)
            tokens.append(g.token)
        pending: baton.Acquiring[baton.AsyncLockGuard] = lock.acquire(timeout=5.0)
        g2 = await pending
        await g2.release()
        maybe: Optional[baton.AsyncLockGuard] = await lock.try_acquire()
        if maybe is not None:
            async with maybe:
                pass
        insp: baton.Inspection = await lock.inspect()
        assert insp.name and lock.name and lock.owner

        fair: baton.AsyncFairLock = c.fair_lock("a/fair")
        async with fair.acquire() as fg:
            tokens.append(fg.token)

        rw: baton.AsyncRwLock = c.rw_lock("a/rw")
        async with rw.read(timeout=5.0) as r:
            tokens.append(r.token)
        async with rw.write():
            pass
        r2 = await rw.try_read()
        assert r2 is not None
        await r2.release()
        w2 = await rw.try_write()
        if w2 is not None:
            await w2.release()
        assert rw.name and (await rw.inspect()).kind

        sem: baton.AsyncSemaphore = c.semaphore("a/sem", 2)
        async with sem.acquire(count=1) as permit:
            p: baton.AsyncPermit = permit
            await p.extend(5.0)
            tokens.append(p.token)
            assert p.id and p.count == 1 and p.name and not p.released
        assert await sem.available() == 2 and sem.permits == 2 and sem.name
        assert await sem.try_acquire() is not None and (await sem.inspect()).kind

        ps: baton.AsyncPermitSemaphore = c.permit_semaphore("a/ps", 1)
        leased = await ps.acquire(lease=10.0)
        await ps.update_lease(leased.id, 5.0)
        await ps.release(leased.id)
        assert await ps.try_acquire() is not None and await ps.available() >= 0
        assert ps.name and (await ps.inspect()).kind

        latch: baton.AsyncCountDownLatch = c.count_down_latch("a/latch")
        assert await latch.try_set_count(1) and await latch.count_down() == 0
        await latch.wait(timeout=1.0)
        assert await latch.count() == 0 and latch.name

        multi: baton.AsyncMultiLock = c.multi_lock(["a/x", "a/y"])
        async with multi as mg:
            m: baton.AsyncMultiGuard = mg
            tokens.extend(m.tokens)
            assert m.names == multi.names
        maybe_m: Optional[baton.AsyncMultiGuard] = await multi.try_acquire()
        if maybe_m is not None:
            await maybe_m.release()
        assert (await c.inspect("a/lock")).name and c.id and c.url and not c.closed

        fence: baton.AsyncFence = c.fence()
        try:
            written: bool = await fence.write("a/fenced", "v", tokens[0])
            got: Optional[Tuple[str, int]] = await fence.read("a/fenced")
            assert written and got is not None
        except baton.Unsupported:
            pass
    return tokens


def errors() -> None:
    classes: List[type[baton.BatonError]] = [
        baton.InvalidArgument,
        baton.InvalidUrl,
        baton.Timeout,
        baton.NotHeld,
        baton.LockLost,
        baton.ConnectionError,
        baton.BackendError,
        baton.Closed,
        baton.Unsupported,
    ]
    try:
        baton.connect("nope://")
    except baton.BatonError as e:
        assert type(e) in classes
    v: ValueError = baton.InvalidArgument("x")
    t: TimeoutError = baton.Timeout("x")
    ce: ConnectionError = baton.ConnectionError("x")
    assert v and t and ce and baton.__version__


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "memory://typing"
    print(len(blocking(target)), len(asyncio.run(asynchronous(target))))
    errors()
