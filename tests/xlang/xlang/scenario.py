"""One scenario: holders start together on one name, then the checker judges the history."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from typing import List, Optional

from .history import Verdict, check, check_latch, load
from .holders import Holder, Running, env_tool

# A waiter that was waiting at a release must be granted within this much of it. Why 5 s:
# baton's waiters are woken by the release itself (Redis pub/sub, etcd watch, PostgreSQL
# NOTIFY, SQLite's in-process wake or its version poll), in milliseconds; a baton waiter
# behind a peer that publishes nothing re-checks within the engine's 1 s; the peers poll
# every 50-70 ms; `baton run`/`etcdctl lock` start a Python stamp process after the grant
# (0.1-0.5 s on the loaded 2-core machine): at worst about 1.5 s measured. 5 s is over
# three times that, and far below every lease in the run (15 s for the peers, baton's 30 s
# watchdog lease): a grant that waited for a lease to run out fails it.
BOUND_MS = 5000.0


@dataclass
class Outcome:
    store: str
    title: str
    verdict: Verdict
    failures: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures and not self.verdict.violations

    def line(self) -> str:
        v = self.verdict
        status = "PASS" if self.ok else "FAIL"
        return (
            f"{status} {self.store:<13} {self.title:<44} holders={v.holders} "
            f"languages={','.join(v.languages)} clients={','.join(v.vias)} grants={v.grants} "
            f"max_held={v.max_held} max_wake={v.max_gap_ms:.0f}ms "
            f"violations={len(v.violations) + len(self.failures)}"
        )

    def problems(self) -> List[str]:
        return self.failures + self.verdict.violations


def run(
    store: str,
    title: str,
    url: str,
    name: str,
    holders: List[Holder],
    workdir: str,
    *,
    n: int = 3,
    hold_ms: int = 40,
    limit: int = 1,
    modes: str = "exclusive",
    tokens: str = "grow",
) -> Outcome:
    slug = "".join(c if c.isalnum() else "-" for c in f"{store}-{title}")
    history = os.path.join(workdir, f"{slug}.jsonl")
    _fresh(history)
    running = Running()
    for h in holders:
        running.start(h, url, name, history, n, hold_ms)
    running.go(history)
    failures = running.wait()
    verdict = check(load(history), limit=limit, modes=modes, bound_ms=BOUND_MS,
                    expect_grants=None if failures else n * len(holders), tokens=tokens)
    return Outcome(store, title, verdict, failures)


def latch(store: str, title: str, url: str, name: str, waiters: List[Holder], downer: Holder, workdir: str,
          count: int = 3) -> Outcome:
    """Waiters set the count and wait; the downer counts down `count` times."""
    slug = "".join(c if c.isalnum() else "-" for c in f"{store}-{title}")
    history = os.path.join(workdir, f"{slug}.jsonl")
    _fresh(history)
    running = Running()
    for h in [*waiters, downer]:
        h.extra["count"] = str(count)
        running.start(h, url, name, history, 1, 300)
    running.go(history)
    failures = running.wait()
    verdict = check_latch(load(history), count=count, waiters=len(waiters), bound_ms=BOUND_MS)
    return Outcome(store, title, verdict, failures)


def inspect_peer(store: str, url: str, name: str, peer: Holder, waiter: Holder, workdir: str) -> Outcome:
    """The peer holds alone for a while: `baton inspect` must show its hold (its owner
    value), and a baton waiter asking meanwhile must be granted when the peer releases."""
    slug = "".join(c if c.isalnum() else "-" for c in f"{store}-inspect-{peer.via}")
    history = os.path.join(workdir, f"{slug}.jsonl")
    _fresh(history)
    running = Running()
    running.start(peer, url, name, history, 1, 2500)
    running.go(history)
    failures: List[str] = []
    grant = _await_grant(history, peer.id, 60.0)
    if grant is None:
        failures.append(f"{peer.via} was not granted within 60 s")
    else:
        seen = _inspect(url, name)
        holders = seen.get("holders") or []
        if not seen.get("held") or not holders:
            failures.append(f"baton inspect shows no hold while {peer.via} holds: {seen}")
        else:
            want = grant.get("owner") or ""
            got = holders[0].get("owner", "")
            if want and want not in got:
                failures.append(f"baton inspect shows owner {got!r}, {peer.via} holds as {want!r}")
        running.start(waiter, url, name, history, 1, 40)
    failures += running.wait()
    verdict = check(load(history), bound_ms=BOUND_MS, expect_grants=None if failures else 2, tokens="none")
    title = f"inspect {peer.via}'s hold, baton waits"
    return Outcome(store, title, verdict, failures)


def _fresh(history: str) -> None:
    for f in (history, history + ".go"):
        if os.path.exists(f):
            os.unlink(f)


def _await_grant(history: str, who: str, secs: float) -> Optional[dict]:
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        for e in load(history):
            if e["id"] == who and e["ev"] == "grant":
                return e
        time.sleep(0.05)
    return None


def _inspect(url: str, name: str) -> dict:
    p = subprocess.run([env_tool("BATON_CLI"), "--url", url, "inspect", "--json", name],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return {"error": p.stderr.strip()}
    return json.loads(p.stdout)
