"""The asyncio API: same names, awaitables resolved on the caller's loop, cancellation
that cancels the acquire."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, List, TypeVar

import pytest

import baton

T = TypeVar("T")


def run(main: Callable[[baton.AsyncClient], Awaitable[T]], url: str) -> T:
    """Runs `main(client)` on a fresh loop with a 120 s guard against hangs."""

    async def wrapper() -> T:
        async with await baton.connect_async(url) as client:
            return await asyncio.wait_for(main(client), timeout=120.0)

    return asyncio.run(wrapper())


async def free(client: baton.AsyncClient, name: str) -> bool:
    g = await client.lock(name).try_acquire()
    if g is None:
        return False
    await g.release()
    return True


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"not true after {within}s: {what}")
        await asyncio.sleep(0.02)


@pytest.mark.every_store
def test_lock_basics(url: str) -> None:
    async def main(client: baton.AsyncClient) -> None:
        assert isinstance(client, baton.AsyncClient) and not client.closed
        async with client.lock("orders/42", timeout=5.0) as guard:
            assert isinstance(guard, baton.AsyncLockGuard) and guard.token > 0
            assert await client.lock("orders/42").try_acquire() is None
            with pytest.raises(baton.Timeout):
                await client.lock("orders/42").acquire(timeout=0.2)
            i = await client.inspect("orders/42")
            assert i.holders[0].token == guard.token
        assert guard.released and await free(client, "orders/42")

        lock = client.lock("orders/43", ttl=10.0)
        g = await lock.acquire()
        await g.extend(5.0)
        assert not g.lost.is_set() and await g.lost.wait(0.05) is False
        await g.release()
        with pytest.raises(baton.NotHeld):
            await g.release()
        async with lock.acquire(timeout=1.0) as g2:  # a pending acquire is a context manager
            assert g2.token > g.token
        async with await lock.acquire() as g3:  # and so is the guard
            assert g3.token > g2.token
        assert await free(client, "orders/43")

    run(main, url)


def test_lost_fires_on_ttl_expiry(url: str) -> None:
    async def main(client: baton.AsyncClient) -> None:
        g = await client.lock("short", ttl=0.3).acquire()
        assert await g.lost.wait(timeout=10.0) is True  # 0.3 s ttl, 10 s of slack
        with pytest.raises(baton.LockLost):
            await g.release()

    run(main, url)


@pytest.mark.every_store
def test_other_primitives(url: str) -> None:
    async def main(client: baton.AsyncClient) -> None:
        rw = client.rw_lock("doc")
        async with rw.read() as r, client.rw_lock("doc").read() as r2:
            assert r.token > 0 and r2.token > 0
            assert await client.rw_lock("doc").try_write() is None
        async with rw.write(timeout=5.0):
            assert await client.rw_lock("doc").try_read() is None
        assert (await rw.inspect()).holders == []

        sem = client.semaphore("parking", 3)
        async with sem.acquire(2) as p:
            assert p.count == 2 and await sem.available() == 1
            assert await sem.try_acquire(2) is None
        assert await sem.available() == 3

        ps = client.permit_semaphore("exports", 1)
        p1 = await ps.acquire(lease=30.0)
        await ps.update_lease(p1.id, 10.0)
        await ps.release(p1.id)
        assert await ps.available() == 1

        latch = client.count_down_latch("boot")
        assert await latch.try_set_count(2)
        waiter = asyncio.ensure_future(latch.wait(timeout=30.0))
        await asyncio.sleep(0.05)
        assert not waiter.done()
        assert await latch.count_down() == 1
        assert await latch.count_down() == 0
        await asyncio.wait_for(waiter, 30.0)
        assert await latch.count() == 0

        async with client.multi_lock(["b", "a"], timeout=5.0) as mg:
            assert mg.names == ["a", "b"] and len(mg.tokens) == 2
        assert await free(client, "a") and await free(client, "b")

        async with client.fair_lock("fair") as fg:
            assert fg.token > 0

    run(main, url)


def test_200_tasks_contend(url: str) -> None:
    """200 tasks, each with its own handle, take one name; the critical sections never
    overlap and the tokens grow in grant order."""

    async def main(client: baton.AsyncClient) -> None:
        state = {"inside": 0, "counter": 0}
        tokens: List[int] = []
        overlaps = 0

        async def task() -> None:
            nonlocal overlaps
            async with client.lock("hot", timeout=100.0) as g:
                state["inside"] += 1
                overlaps += state["inside"] != 1
                seen = state["counter"]
                await asyncio.sleep(0)  # let other tasks run inside the critical section
                state["counter"] = seen + 1
                tokens.append(g.token)
                state["inside"] -= 1

        await asyncio.gather(*(task() for _ in range(200)))
        assert overlaps == 0 and state["counter"] == 200
        assert tokens == sorted(tokens) and len(set(tokens)) == 200
        assert await free(client, "hot")

    run(main, url)


def test_cancelled_acquire_leaves_no_hold(url: str) -> None:
    async def main(client: baton.AsyncClient) -> None:
        holder = await client.lock("c").acquire()
        waiters = [asyncio.ensure_future(client.lock("c").acquire()) for _ in range(3)]
        in_with = asyncio.ensure_future(_enter_and_wait(client))
        await asyncio.sleep(0.2)  # every waiter is now waiting on the store
        for w in [*waiters, in_with]:
            assert not w.done()
            w.cancel()
        for w in [*waiters, in_with]:
            with pytest.raises(asyncio.CancelledError):
                await w
        assert [h.owner for h in (await client.inspect("c")).holders] == [holder.owner]
        await holder.release()
        # A cancelled waiter must not take the lock after the fact.
        await eventually(lambda: free(client, "c"), "the lock is free after cancellation")
        await asyncio.sleep(0.2)
        assert (await client.inspect("c")).holders == []

        # The fair queue forgets cancelled waiters too.
        fair = await client.fair_lock("cf").acquire()
        w = asyncio.ensure_future(client.fair_lock("cf").acquire())
        await asyncio.sleep(0.2)
        w.cancel()
        with pytest.raises(asyncio.CancelledError):
            await w

        async def queue_empty() -> bool:
            return (await client.inspect("cf")).waiters == []

        await eventually(queue_empty, "the fair queue is empty")
        await fair.release()

    run(main, url)


async def _enter_and_wait(client: baton.AsyncClient) -> None:
    async with client.lock("c"):
        await asyncio.sleep(100)


def test_cancel_racing_the_grant_leaves_no_hold(url: str) -> None:
    """Cancel at every moment around a grant: whatever the race, nothing stays held."""

    async def main(client: baton.AsyncClient) -> None:
        for i in range(40):
            holder = await client.lock("race").acquire()
            waiter = asyncio.ensure_future(client.lock("race").acquire())
            await asyncio.sleep(0.01)
            release = asyncio.ensure_future(holder.release())
            await asyncio.sleep((i % 8) * 0.0005)
            waiter.cancel()
            await release
            try:
                g = await waiter
            except asyncio.CancelledError:
                pass
            else:
                await g.release()
            await eventually(lambda: free(client, "race"), f"round {i}: the lock is free")

    run(main, url)


def test_connect_async_errors() -> None:
    async def main() -> None:
        with pytest.raises(baton.InvalidUrl):
            await baton.connect_async("nope://x")
        with pytest.raises(baton.InvalidArgument):
            await baton.connect_async("memory://?lease=abc")

    asyncio.run(main())


def test_closed_client(url: str) -> None:
    async def main() -> None:
        client = await baton.connect_async(url)
        lock = client.lock("x")
        await client.close()
        assert client.closed
        with pytest.raises(baton.Closed):
            await lock.acquire()
        with pytest.raises(baton.Closed):
            await client.count_down_latch("l").count()

    asyncio.run(main())
