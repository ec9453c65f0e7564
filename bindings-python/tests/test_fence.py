"""Fenced writes at the resource (``client.fence()``, ``baton.fenced_update``): a holder
paused past its lease wakes up with an old token, and the store itself refuses its write."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

import baton

#: Stores without fenced writes: their fence calls raise Unsupported.
NO_FENCE = ("redlock",)


def test_paused_holders_write_is_refused(url: str) -> None:
    with baton.connect(url) as a, baton.connect(url) as b:
        if url.split("://", 1)[0] in NO_FENCE:
            with pytest.raises(baton.Unsupported):
                a.fence().write("stock", "1", 1)
            return
        old = a.lock("sale", ttl=2.0).acquire(timeout=10.0)
        assert a.fence().write("stock", "9", old.token) is True
        # `a` stops here (a GC pause, SIGSTOP) until its lease is gone; `b` takes over.
        new = b.lock("sale").acquire(timeout=30.0)
        assert new.token > old.token
        assert b.fence().write("stock", "8", new.token) is True
        assert b.fence().write("stock", "7", new.token) is True  # one grant, many writes
        assert a.fence().write("stock", "8", old.token) is False  # the late write is refused
        assert b.fence().read("stock") == ("7", new.token)
        assert b.fence().read("nothing-here") is None
        new.release()
        with pytest.raises(baton.LockLost):
            old.release()


def test_async_fence(url: str) -> None:
    if url.split("://", 1)[0] in NO_FENCE:
        return

    async def main() -> None:
        async with await baton.connect_async(url) as c:
            fence = c.fence()
            async with c.lock("async-sale", timeout=10.0) as g:
                assert await fence.write("async-stock", "5", g.token) is True
                assert await fence.write("async-stock", "4", g.token - 1) is False
                assert await fence.read("async-stock") == ("5", g.token)

    asyncio.run(main())


def test_fenced_update_guards_your_own_statement(tmp_path: Path) -> None:
    """The rewritten UPDATE runs on any driver (here the standard library's sqlite3)."""
    sql = baton.fenced_update("UPDATE stock SET n = n - 1 WHERE item = ?", 7)
    assert sql == "UPDATE stock SET n = n - 1, fence = 7 WHERE (item = ?) AND fence <= 7"
    db = sqlite3.connect(tmp_path / "shop.db")
    db.execute("CREATE TABLE stock (item INTEGER PRIMARY KEY, n INTEGER, fence INTEGER NOT NULL DEFAULT 0)")
    db.execute("INSERT INTO stock (item, n) VALUES (1, 10)")
    with baton.connect(f"sqlite://{tmp_path / 'locks.db'}") as client:
        first = client.lock("stock/1").acquire()
        first.release()
        second = client.lock("stock/1").acquire()
        sell = "UPDATE stock SET n = n - 1 WHERE item = ?"
        assert db.execute(baton.fenced_update(sell, second.token), (1,)).rowcount == 1
        assert db.execute(baton.fenced_update(sell, first.token), (1,)).rowcount == 0  # stale
        second.release()
    assert db.execute("SELECT n, fence FROM stock").fetchone() == (9, second.token)
    with pytest.raises(baton.InvalidArgument):
        baton.fenced_update("DELETE FROM stock", 1)


def test_execute_runs_a_guarded_statement(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'both.db'}"
    db = sqlite3.connect(tmp_path / "both.db")
    db.execute("CREATE TABLE stock (item INTEGER PRIMARY KEY, n INTEGER, fence INTEGER NOT NULL DEFAULT 0)")
    db.execute("INSERT INTO stock (item, n) VALUES (1, 10)")
    db.commit()
    db.close()
    with baton.connect(url) as client:
        fence = client.fence()
        g = client.lock("stock/1").acquire()
        assert fence.execute("UPDATE stock SET n = n - 1 WHERE item = 1", g.token) == 1
        assert fence.execute("UPDATE stock SET n = n - 1 WHERE item = 1", g.token - 1) == 0
        g.release()
    with baton.connect("memory://") as mem, pytest.raises(baton.Unsupported):
        mem.fence().execute("UPDATE stock SET n = 1", 1)
