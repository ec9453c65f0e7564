"""MultiLock through the blocking API, on every store."""

from __future__ import annotations

import pytest

import baton
from helpers import is_free


def test_all_or_nothing(client: baton.Client) -> None:
    multi = client.multi_lock(["b", "a", "c"])
    assert multi.names == ["a", "b", "c"]  # canonical order
    with multi as g:
        assert g.names == ["a", "b", "c"] and len(g.tokens) == 3
        assert all(t > 0 for t in g.tokens) and not g.lost.is_set()
        assert not is_free(client, "b")
    assert g.released and all(is_free(client, n) for n in "abc")

    busy = client.lock("b").acquire()
    assert multi.try_acquire() is None
    with pytest.raises(baton.Timeout):
        multi.acquire(timeout=0.2)
    assert is_free(client, "a") and is_free(client, "c")  # nothing kept
    busy.release()
    g2 = multi.acquire(timeout=5.0)
    g2.release()
    with pytest.raises(baton.NotHeld):
        g2.release()


def test_ttl_applies_to_each_lock(client: baton.Client) -> None:
    g = client.multi_lock(["x", "y"], ttl=0.3).acquire()
    assert g.lost.wait(timeout=10.0)
    with pytest.raises(baton.LockLost):
        g.release()


def test_empty_and_bad(client: baton.Client) -> None:
    with pytest.raises(baton.InvalidArgument):
        client.multi_lock([]).acquire()
    with pytest.raises(baton.InvalidArgument):
        client.multi_lock(["ok", ""])
    with pytest.raises(TypeError):
        client.multi_lock("ab")  # a str is not a list of names
