"""CountDownLatch through the blocking API, on every store."""

from __future__ import annotations

import threading
import time

import pytest

import baton


def test_count_down_and_wait(client: baton.Client) -> None:
    latch = client.count_down_latch("boot")
    assert latch.name == "boot" and latch.count() == 0
    latch.wait(timeout=1.0)  # open: returns at once
    assert latch.try_set_count(2) is True
    assert latch.try_set_count(5) is False  # only when open
    assert latch.count() == 2
    with pytest.raises(baton.Timeout):
        latch.wait(timeout=0.2)
    assert latch.count_down() == 1
    assert latch.count_down() == 0
    assert latch.count_down() == 0  # never below zero
    latch.wait()


def test_waiter_is_woken(client: baton.Client) -> None:
    latch = client.count_down_latch("ready")
    latch.try_set_count(1)
    woke: list[float] = []

    def wait() -> None:
        client.count_down_latch("ready").wait(timeout=30.0)
        woke.append(time.monotonic())

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.2)
    assert not woke
    opened = time.monotonic()
    latch.count_down()
    t.join(timeout=30.0)
    assert not t.is_alive() and woke
    # Woken by the store, or by the core's 1 s re-check at worst; 5 s for a loaded box.
    assert woke[0] - opened < 5.0


def test_bad_counts(client: baton.Client) -> None:
    latch = client.count_down_latch("bad")
    for bad in (0, -1, 2**64):
        with pytest.raises(baton.InvalidArgument):
            latch.try_set_count(bad)
    with pytest.raises(TypeError):
        latch.try_set_count(1.5)  # type: ignore[arg-type]
