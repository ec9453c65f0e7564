"""On a plain redis:// server, the synchronous API's calls run over the calling thread's own
connection (named ``baton-own``; ARCHITECTURE.md, "When a binding may own an executor"):
one a thread, none for asyncio calls, closed when its thread ends or the client closes.
Checked against the server's own ``CLIENT LIST``, asked on a plain socket."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
import uuid
from typing import Dict
from urllib.parse import unquote, urlsplit

import pytest

import baton

REDIS = os.environ.get("BATON_TEST_REDIS_URL", "").strip()
pytestmark = pytest.mark.skipif(not REDIS, reason="BATON_TEST_REDIS_URL is not set (scripts/services)")


def _command(sock: socket.socket, *args: str) -> None:
    sock.sendall(f"*{len(args)}\r\n".encode() + b"".join(f"${len(a)}\r\n{a}\r\n".encode() for a in args))


def own() -> Dict[str, str]:
    """id → last command of every ``baton-own`` connection of the server."""
    u = urlsplit(REDIS)
    with socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379), timeout=10) as s:
        f = s.makefile("rb")
        if u.password:
            _command(s, "AUTH", *([unquote(u.username)] if u.username else []), unquote(u.password))
            assert f.readline().startswith(b"+"), "AUTH refused"
        _command(s, "CLIENT", "LIST", "TYPE", "normal")
        head = f.readline()
        assert head.startswith(b"$"), head
        body = f.read(int(head[1:]) + 2).decode()
    found = {}
    for line in body.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split(" ") if "=" in kv)
        if fields.get("name") == "baton-own":
            found[fields["id"]] = fields.get("cmd", "")
    return found


def eventually(what: str, cond) -> None:  # type: ignore[no-untyped-def]
    # The server notices a closed socket at once; 10 s covers a loaded host.
    until = time.monotonic() + 10.0
    while not cond():
        assert time.monotonic() < until, f"{what}: not within 10 s"
        time.sleep(0.02)


def test_sync_calls_use_the_threads_own_connection() -> None:
    before = own()

    def fresh() -> Dict[str, str]:
        return {k: v for k, v in own().items() if k not in before}

    name = f"py-own/{uuid.uuid4().hex[:8]}"
    with baton.connect(REDIS) as client:

        async def with_asyncio() -> None:
            async with await baton.connect_async(REDIS) as aclient:
                async with aclient.lock(name):
                    pass

        asyncio.run(with_asyncio())
        assert fresh() == {}, "asyncio calls open no own connection"

        tokens = []
        for _ in range(3):
            with client.lock(name) as guard:
                tokens.append(guard.token)
        assert tokens == sorted(tokens) and len(set(tokens)) == 3, tokens
        mine = fresh()
        assert len(mine) == 1, f"one own connection for this thread: {mine}"
        assert list(mine.values()) == ["evalsha"], "the release's script went over it"

        def in_thread() -> None:
            for _ in range(5):
                with client.lock(f"{name}-t"):
                    pass

        t = threading.Thread(target=in_thread)
        t.start()
        t.join(30)
        assert not t.is_alive()
        eventually("the thread's own connection closes when it ends", lambda: fresh().keys() == mine.keys())
    eventually("the client's own connections close with it", lambda: fresh() == {})
