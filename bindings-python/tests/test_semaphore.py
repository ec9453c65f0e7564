"""Semaphore and PermitSemaphore through the blocking API, on every store."""

from __future__ import annotations

import time

import pytest

import baton
from helpers import eventually


@pytest.mark.every_store
def test_permits(client: baton.Client) -> None:
    sem = client.semaphore("parking", 3)
    assert sem.permits == 3 and sem.name == "parking" and sem.available() == 3
    two = sem.acquire(2)
    assert two.count == 2 and two.token > 0 and two.name == "parking" and two.id
    assert sem.available() == 1
    assert sem.try_acquire(2) is None
    with sem.acquire(timeout=5.0) as one:
        assert one.count == 1 and sem.available() == 0
        assert client.semaphore("parking", 3).try_acquire() is None
        with pytest.raises(baton.Timeout):
            sem.acquire(timeout=0.2)
        i = sem.inspect()
        assert i.kind == "semaphore" and sum(h.count for h in i.holders) == 3
    assert one.released and sem.available() == 1
    two.release()
    assert sem.available() == 3
    with pytest.raises(baton.NotHeld):
        two.release()


def test_permit_ttl_and_extend(client: baton.Client) -> None:
    sem = client.semaphore("ttl-sem", 1, ttl=0.3)
    p = sem.acquire()
    p.extend(2.0)
    time.sleep(0.5)  # past the first ttl, within the extension
    assert not p.lost.is_set()
    p.release()
    q = sem.acquire()
    assert q.lost.wait(timeout=10.0)  # 0.3 s ttl; 10 s for a loaded machine
    with pytest.raises(baton.LockLost):
        q.release()
    eventually(lambda: sem.available() == 1, "the expired permit came back")


def test_bad_counts(client: baton.Client) -> None:
    sem = client.semaphore("counts", 2)
    for bad in (0, 3):
        with pytest.raises(baton.InvalidArgument):
            sem.acquire(bad)
    with pytest.raises(baton.InvalidArgument):
        client.semaphore("zero", 0).acquire()


def test_permit_semaphore(client: baton.Client) -> None:
    ps = client.permit_semaphore("exports", 2)
    assert ps.name == "exports" and ps.available() == 2
    p = ps.acquire(lease=60.0)
    q = ps.acquire(timeout=5.0)
    assert len(p.id) == 32 and p.id != q.id
    assert ps.try_acquire() is None and ps.available() == 0
    ps.update_lease(p.id, 30.0)
    ps.release(p.id)  # by id, as another process would
    assert ps.available() == 1
    with pytest.raises(baton.NotHeld):
        ps.release(p.id)
    with pytest.raises(baton.NotHeld):
        ps.update_lease("0" * 32, 5.0)
    with pytest.raises(baton.Unsupported):
        ps.acquire(timeout=1.0, lease=1.0)
    q.release()
    ids = {h.owner for h in ps.inspect().holders}
    assert ids == set()
    with ps.acquire() as r:
        assert {h.owner for h in ps.inspect().holders} == {r.id}
    assert ps.available() == 2


def test_permit_lease_expires(client: baton.Client) -> None:
    ps = client.permit_semaphore("leased", 1)
    p = ps.acquire(lease=0.3)
    assert p.lost.wait(timeout=10.0)
    eventually(lambda: ps.available() == 1, "the leased permit came back")
