"""RwLock through the blocking API, on every store."""

from __future__ import annotations

import threading

import pytest

import baton
from helpers import eventually


def test_readers_share_writer_excludes(client: baton.Client) -> None:
    a, b, c = (client.rw_lock("doc/7") for _ in range(3))
    assert a.name == "doc/7"
    with a.read() as r1, b.read(timeout=5.0) as r2:
        assert r1.token > 0 and r2.token > 0
        assert c.try_write() is None
        with pytest.raises(baton.Timeout):
            c.write(timeout=0.2)
        i = a.inspect()
        assert i.kind == "rwlock" and sorted(h.mode for h in i.holders) == ["read", "read"]
    with a.write() as w:
        assert b.try_read() is None and b.try_write() is None
        with pytest.raises(baton.Timeout):
            b.read(timeout=0.2)
        assert a.inspect().holders[0].mode == "write"
    assert w.released
    g = b.try_write()
    assert g is not None
    g.release()


def test_writer_may_read_and_upgrade_is_refused(client: baton.Client) -> None:
    rw = client.rw_lock("doc/8")
    with rw.write():
        with rw.read() as r:  # downgrade: the writer may read
            assert r.token > 0
    with rw.read():
        with pytest.raises(baton.InvalidArgument):
            rw.write(timeout=1.0)


@pytest.mark.every_store
def test_waiting_writer_is_woken(client: baton.Client) -> None:
    reader = client.rw_lock("doc/9").read()
    got: list[int] = []

    def write() -> None:
        with client.rw_lock("doc/9").write(timeout=30.0) as w:
            got.append(w.token)

    t = threading.Thread(target=write)
    t.start()
    eventually(lambda: len(client.rw_lock("doc/9").inspect().waiters) == 1, "the writer waits")
    reader.release()
    t.join(timeout=30.0)
    assert not t.is_alive() and len(got) == 1
