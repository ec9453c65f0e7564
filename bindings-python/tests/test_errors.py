"""Exceptions: every core error kind maps to its class; bad input raises the right class
with a clear message; no input makes a Rust panic cross into Python."""

from __future__ import annotations

import builtins
import itertools
import math
import random
from typing import Any, Callable, List

import pytest

import baton
from baton import _baton

# Core kind → (the class it raises, the builtin exception that class also is).
MAPPING = {
    "InvalidArgument": (baton.InvalidArgument, ValueError),
    "InvalidUrl": (baton.InvalidUrl, None),
    "Timeout": (baton.Timeout, TimeoutError),
    "NotHeld": (baton.NotHeld, None),
    "LockLost": (baton.LockLost, None),
    "Connection": (baton.ConnectionError, builtins.ConnectionError),
    "Backend": (baton.BackendError, None),
    "Closed": (baton.Closed, None),
    "Unsupported": (baton.Unsupported, None),
}


def test_every_kind_maps_to_its_class() -> None:
    assert _baton._error_kinds() == list(MAPPING)  # the core's ErrorKind::ALL, in order
    for kind, (cls, builtin) in MAPPING.items():
        with pytest.raises(cls) as e:
            _baton._raise(kind)
        assert type(e.value) is cls and isinstance(e.value, baton.BatonError)
        if builtin is not None:
            assert isinstance(e.value, builtin)
        assert kind in str(e.value)
    with pytest.raises(baton.InvalidArgument, match="unknown error kind"):
        _baton._raise("Nope")


def test_exception_classes_are_distinct_and_exported() -> None:
    classes = [c for c, _ in MAPPING.values()]
    assert len(set(classes)) == 9
    for c in classes:
        assert issubclass(c, baton.BatonError) and c.__module__ == "baton" and c.__doc__
        assert getattr(baton, c.__name__) is c
    assert baton.ConnectionError is not builtins.ConnectionError


BAD_NAMES = ["", "a" * 256, "é" * 128, "a\0b", "\ud800"]


@pytest.mark.parametrize("bad", BAD_NAMES, ids=["empty", "long", "long-utf8", "nul", "surrogate"])
def test_bad_names(client: baton.Client, bad: str) -> None:
    makers: List[Callable[[], Any]] = [
        lambda: client.lock(bad),
        lambda: client.fair_lock(bad),
        lambda: client.rw_lock(bad),
        lambda: client.semaphore(bad, 1),
        lambda: client.permit_semaphore(bad, 1),
        lambda: client.count_down_latch(bad),
        lambda: client.multi_lock(["ok", bad]),
        lambda: client.inspect(bad),
    ]
    for make in makers:
        with pytest.raises(baton.InvalidArgument) as e:
            make()
        assert "name" in str(e.value)


def test_name_limits_are_bytes(client: baton.Client) -> None:
    client.lock("a" * 255).acquire().release()
    with pytest.raises(baton.InvalidArgument, match="255"):
        client.lock("a" * 256)


@pytest.mark.parametrize(
    "bad", [-1.0, 0, 0.0, math.nan, math.inf, -math.inf, 1e300, 10**400, 1e-12],
    ids=["negative", "zero-int", "zero", "nan", "inf", "-inf", "huge", "huge-int", "rounds-to-zero"],
)
def test_bad_durations(client: baton.Client, bad: float) -> None:
    calls: List[Callable[[], Any]] = [
        lambda: client.lock("d", ttl=bad),
        lambda: client.lock("d", lease=bad),
        lambda: client.lock("d", timeout=bad),
        lambda: client.fair_lock("d", ttl=bad),
        lambda: client.rw_lock("d", ttl=bad),
        lambda: client.semaphore("d", 1, lease=bad),
        lambda: client.multi_lock(["d"], timeout=bad),
        lambda: client.lock("d").acquire(timeout=bad),
        lambda: client.rw_lock("d").read(timeout=bad),
        lambda: client.semaphore("d", 1).acquire(timeout=bad),
        lambda: client.permit_semaphore("d", 1).acquire(lease=bad),
        lambda: client.count_down_latch("d").wait(timeout=bad),
    ]
    for call in calls:
        with pytest.raises(baton.InvalidArgument) as e:
            call()
        assert isinstance(e.value, ValueError)
        msg = str(e.value)
        assert any(w in msg for w in ("seconds", "zero", "limit", "large")), msg
    g = client.lock("d").acquire()
    with pytest.raises(baton.InvalidArgument):
        g.extend(bad)
    if bad != 0:  # wait(0) only checks, as threading.Event.wait(0) does
        with pytest.raises(baton.InvalidArgument):
            g.lost.wait(bad)
    g.release()


def test_wrong_types_are_type_errors(client: baton.Client) -> None:
    bad_calls: List[Callable[[], Any]] = [
        lambda: client.lock(42),  # type: ignore[arg-type]
        lambda: client.lock("t", ttl="5s"),  # type: ignore[arg-type]
        lambda: client.semaphore("t", 1.5),  # type: ignore[arg-type]
        lambda: client.semaphore("t", "3"),  # type: ignore[arg-type]
        lambda: client.lock("t").acquire(timeout=[1]),  # type: ignore[arg-type]
        lambda: baton.connect(None),  # type: ignore[arg-type]
    ]
    for call in bad_calls:
        with pytest.raises(TypeError):
            call()


@pytest.mark.parametrize("bad", [0, -1, 2**32, 2**70])
def test_bad_permits(client: baton.Client, bad: int) -> None:
    with pytest.raises(baton.InvalidArgument) as e:
        client.semaphore("p", bad).acquire(timeout=1.0)
    assert "permit" in str(e.value)
    with pytest.raises(baton.InvalidArgument):
        client.permit_semaphore("p", bad).acquire(timeout=1.0)
    with pytest.raises(baton.InvalidArgument):
        client.semaphore("p", 2).acquire(count=bad)


@pytest.mark.parametrize(
    "bad,cls",
    [
        ("", baton.InvalidUrl),
        ("memory", baton.InvalidUrl),
        ("nope://host", baton.InvalidUrl),
        ("nope://user:s3cret@host/x", baton.InvalidUrl),
        ("memory://?lease=abc", baton.InvalidArgument),
        ("memory://?lease=10s&renew=20s", baton.InvalidArgument),
        ("memory://?bogus=1", baton.InvalidUrl),
        ("sqlite:///nonexistent-dir-baton/x/y.db", baton.ConnectionError),
        ("postgres://user:s3cret@127.0.0.1:1/db", baton.ConnectionError),
    ],
)
def test_bad_urls(bad: str, cls: type) -> None:
    with pytest.raises(baton.BatonError) as e:
        baton.connect(bad)
    assert isinstance(e.value, cls), repr(e.value)
    assert "s3cret" not in str(e.value) and "s3cret" not in repr(e.value)
    assert str(e.value)


def test_owner_is_checked(client: baton.Client) -> None:
    with pytest.raises(baton.InvalidArgument):
        client.lock("o", owner="").acquire(timeout=1.0)


def test_random_junk_never_panics(client: baton.Client) -> None:
    """Junk of every kind into every argument: only ordinary exceptions come out (a
    pyo3 PanicException derives from BaseException, so it would escape `except
    Exception` and fail the test)."""
    rng = random.Random(6)
    junk: List[Any] = [
        None, True, -1, 0, 1, 2**31, 2**63, 2**64, -(2**63), 10**30, 0.5, -0.0, math.nan,
        math.inf, 1e-300, 1e308, "", "x", "\0", "\ud800", "é" * 300, b"bytes", [], ["a"],
        [""], {}, object(), 3 + 4j,
    ]
    ops: List[Callable[[Any], Any]] = [
        lambda v: client.lock(v),
        lambda v: client.lock("j", ttl=v),
        lambda v: client.lock("j", owner=v).try_acquire(),
        lambda v: client.lock("j").acquire(timeout=v),
        lambda v: client.semaphore("j", v).try_acquire(),
        lambda v: client.semaphore("j", 2).try_acquire(v),
        lambda v: client.permit_semaphore("j", 2).release(v),
        lambda v: client.permit_semaphore("j", 2).update_lease("x", v),
        lambda v: client.count_down_latch("j").try_set_count(v),
        lambda v: client.multi_lock(v),
        lambda v: client.inspect(v),
        lambda v: baton.connect(v),
        lambda v: _baton._raise(v),
    ]
    for op, value in itertools.product(ops, junk):
        try:
            result = op(value)
        except (baton.BatonError, TypeError, ValueError):
            continue
        if isinstance(result, (baton.LockGuard, baton.Permit)):
            result.release()
        elif isinstance(result, baton.Client):
            result.close()
    # And a few random sequences of calls on one handle.
    lock = client.lock("seq")
    for _ in range(200):
        action = rng.choice(["acquire", "try", "release", "extend", "inspect"])
        try:
            if action == "acquire":
                lock.acquire(timeout=rng.choice([0.01, 0.05]))
            elif action == "try":
                g = lock.try_acquire()
                if g and rng.random() < 0.5:
                    g.release()
            elif action == "release":
                g = lock.try_acquire()
                if g:
                    g.release()
                    g.release()
            elif action == "extend":
                g = lock.try_acquire()
                if g:
                    g.extend(rng.choice([0.5, -1.0, math.nan]))
            else:
                lock.inspect()
        except baton.BatonError:
            pass
