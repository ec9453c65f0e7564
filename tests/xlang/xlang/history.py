"""The shared history of one contention run, and the checker that judges it.

Every holder, whatever its language, appends one JSON line per event to one file opened
with O_APPEND (one write() per line, so lines from concurrent processes never interleave):

    {"t": <CLOCK_MONOTONIC ns>, "ev": "ask"|"grant"|"release", "id": "py1", "lang": "python",
     "via": "baton"|"redis-py"|…, "mode": "lock"|"read"|"write"|"permit", "token": int|null,
     "owner": str|null}

Every language reads the same clock (Python `time.monotonic_ns`, Node `process.hrtime`,
Go and the JVM `clock_gettime(CLOCK_MONOTONIC)`), so the lines order across processes. A
holder writes "grant" after its acquire returned and "release" before it releases: the
recorded interval lies inside the real hold, so an overlap in the history is a real one.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional


def record(path: str, **event: object) -> None:
    """Appends one event, stamped now, in one write()."""
    event = {"t": time.monotonic_ns(), **event}
    line = (json.dumps(event, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def barrier(path: str, **event: object) -> None:
    """Records "ready", then waits (bounded) for the driver's go file `<history>.go`: every
    holder connects first, so they all contend from the same moment."""
    record(path, ev="ready", **event)
    deadline = time.monotonic() + 120
    while not os.path.exists(path + ".go"):
        if time.monotonic() > deadline:
            raise SystemExit(f"no {path}.go within 120 s")
        time.sleep(0.01)


def load(path: str) -> List[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        events = [json.loads(line) for line in f if line.strip()]
    return sorted(events, key=lambda e: e["t"])


@dataclass
class Verdict:
    """What the checker found in one history."""

    grants: int = 0
    holders: int = 0
    languages: List[str] = field(default_factory=list)
    vias: List[str] = field(default_factory=list)
    max_held: int = 0
    max_gap_ms: float = 0.0
    violations: List[str] = field(default_factory=list)


def check(
    events: List[dict],
    *,
    limit: int = 1,
    modes: str = "exclusive",
    bound_ms: float,
    expect_grants: Optional[int] = None,
    tokens: str = "grow",
) -> Verdict:
    """Judges a history.

    modes: "exclusive" (locks, `limit` = 1; semaphores of `limit` permits of one each) or
    "rw" (any readers or one writer alone). tokens: "grow" (every grant carrying a token
    has one above every earlier grant's) or "none". `bound_ms`: a holder that was already
    waiting when a release happened must be granted within this of the release, if it is
    the next grant after it (liveness, and proof that it was the release that woke it and
    not the lease running out, which is far longer).
    """
    v = Verdict()
    held: Dict[str, dict] = {}  # holder id -> its grant event
    asking: Dict[str, int] = {}  # holder id -> when its pending ask began
    last_release: Optional[dict] = None
    last_token: Optional[int] = None
    ids, langs, vias = set(), set(), set()
    for e in events:
        who, ev = e["id"], e["ev"]
        ids.add(who)
        langs.add(e["lang"])
        vias.add(e.get("via", "baton"))
        if ev == "ask":
            asking[who] = e["t"]
        elif ev == "grant":
            v.grants += 1
            if who in held:
                v.violations.append(f"{who} granted twice without a release")
            _check_exclusion(v, e, held, limit, modes)
            held[who] = e
            v.max_held = max(v.max_held, len(held))
            tok = e.get("token")
            if tokens == "grow" and tok is not None:
                if last_token is not None and tok <= last_token:
                    v.violations.append(f"token {tok} of {who} not above the earlier grant's {last_token}")
                last_token = tok
            asked = asking.pop(who, None)
            if last_release is not None and asked is not None and asked < last_release["t"]:
                gap = (e["t"] - last_release["t"]) / 1e6
                v.max_gap_ms = max(v.max_gap_ms, gap)
                if gap > bound_ms:
                    v.violations.append(
                        f"{who} ({e['lang']}/{e.get('via', 'baton')}) granted {gap:.0f} ms after "
                        f"{last_release['id']}'s release (bound {bound_ms:.0f} ms)"
                    )
            last_release = None  # only the first grant after a release is bound by it
        elif ev == "release":
            if held.pop(who, None) is None:
                v.violations.append(f"{who} released what it did not hold")
            last_release = e
    if held:
        v.violations.append(f"holds never released: {sorted(held)}")
    if expect_grants is not None and v.grants != expect_grants:
        v.violations.append(f"{v.grants} grants, expected {expect_grants}")
    v.holders, v.languages, v.vias = len(ids), sorted(langs), sorted(vias)
    return v


def check_latch(events: List[dict], *, count: int, waiters: int, bound_ms: float) -> Verdict:
    """A count-down latch: `count` count-downs; every waiter opens after the last of them
    (never before) and within `bound_ms` of it (woken by it, not by a poll's timeout)."""
    v = Verdict()
    downs = [e for e in events if e["ev"] == "countdown"]
    opened = [e for e in events if e["ev"] == "opened"]
    v.grants = len(opened)
    v.holders = len({e["id"] for e in events})
    v.languages = sorted({e["lang"] for e in events})
    v.vias = sorted({e.get("via", "baton") for e in events})
    if len(downs) != count:
        v.violations.append(f"{len(downs)} count-downs, expected {count}")
    if len(opened) != waiters:
        v.violations.append(f"{len(opened)} waiters opened, expected {waiters}")
    if downs:
        last = downs[-1]["t"]
        for e in opened:
            # "countdown" is recorded before the count-down call, so an opening before the
            # last record is one the latch gave too early.
            gap = (e["t"] - last) / 1e6
            v.max_gap_ms = max(v.max_gap_ms, gap)
            if gap < 0:
                v.violations.append(f"{e['id']} opened {-gap:.0f} ms before the last count-down")
            elif gap > bound_ms:
                v.violations.append(f"{e['id']} opened {gap:.0f} ms after the last count-down (bound {bound_ms:.0f})")
    return v


def _check_exclusion(v: Verdict, e: dict, held: Dict[str, dict], limit: int, modes: str) -> None:
    who = e["id"]
    if modes == "rw":
        writers = [h for h, g in held.items() if g.get("mode") == "write"]
        if e.get("mode") == "write" and held:
            v.violations.append(f"writer {who} granted while {sorted(held)} hold")
        elif writers:
            v.violations.append(f"reader {who} granted while writer {writers[0]} holds")
    elif len(held) + 1 > limit:
        v.violations.append(f"{who} granted while {sorted(held)} hold (limit {limit})")
