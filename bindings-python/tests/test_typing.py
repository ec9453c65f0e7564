"""The typing sample (checked by `mypy --strict` in scripts/test) also runs, on every store."""

from __future__ import annotations

import asyncio

import typing_check


def test_typing_sample_runs(url: str) -> None:
    assert typing_check.blocking(url)
    assert asyncio.run(typing_check.asynchronous(url))
    typing_check.errors()
