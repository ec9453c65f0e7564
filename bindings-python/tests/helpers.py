"""Bounded helpers shared by the tests."""

from __future__ import annotations

import time
from typing import Callable

import pytest

import baton


def eventually(check: Callable[[], bool], what: str, within: float = 10.0) -> None:
    """Polls `check` every 20 ms until it holds; fails after `within` seconds (generous:
    the machine running the suite may be loaded by parallel builds)."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not true after {within}s: {what}")
        time.sleep(0.02)


def is_free(client: baton.Client, name: str) -> bool:
    """Whether nobody holds the lock `name` (checked by taking it once)."""
    g = client.lock(name).try_acquire()
    if g is None:
        return False
    g.release()
    return True
