"""A Python holder: takes one name `n` times and records every ask, grant and release.

    python py_holder.py url=… name=… kind=lock|read|write|permit|fair id=py1 n=3 hold_ms=40 \
        history=/path/h.jsonl [via=baton|redis-py] [permits=2] [lease_ms=15000]

via=baton uses the `baton` package (the wheel `baton-lock`); via=redis-py uses redis-py's
`Lock` (`SET NX PX`, token-checked release), the client baton's `?scheme=simple` layout
interoperates with.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from xlang.history import barrier, record  # noqa: E402

WAIT_S = 90.0  # one acquire's bound: far above any fair share of a run


def main() -> None:
    a = dict(arg.split("=", 1) for arg in sys.argv[1:])
    n, hold = int(a.get("n", "3")), int(a.get("hold_ms", "40")) / 1000
    via, kind = a.get("via", "baton"), a.get("kind", "lock")
    if kind.startswith("latch"):
        return latch(a, kind)
    ev = {"id": a["id"], "lang": "python", "via": via, "mode": {"fair": "lock", "pes": "permit"}.get(kind, kind)}
    take = redis_py(a) if via == "redis-py" else baton_holds(a, kind)
    barrier(a["history"], **ev)
    for _ in range(n):
        record(a["history"], ev="ask", **ev)
        release, token, owner = take()
        record(a["history"], ev="grant", token=token, owner=owner, **ev)
        time.sleep(hold)
        record(a["history"], ev="release", **ev)
        release()


def baton_holds(a: dict, kind: str):
    import baton

    client = baton.connect(a["url"])
    if kind == "lock":
        h = client.lock(a["name"])
        acquire = lambda: h.acquire(timeout=WAIT_S)  # noqa: E731
    elif kind == "fair":
        h = client.fair_lock(a["name"])
        acquire = lambda: h.acquire(timeout=WAIT_S)  # noqa: E731
    elif kind in ("read", "write"):
        rw = getattr(client.rw_lock(a["name"]), kind)
        acquire = lambda: rw(timeout=WAIT_S)  # noqa: E731
    elif kind == "permit":
        h = client.semaphore(a["name"], int(a["permits"]))
        acquire = lambda: h.acquire(timeout=WAIT_S)  # noqa: E731
    elif kind == "pes":
        ps = client.permit_semaphore(a["name"], int(a["permits"]))
        acquire = lambda: ps.acquire(timeout=WAIT_S)  # noqa: E731
    else:
        raise SystemExit(f"unknown kind {kind}")

    def take():
        g = acquire()
        return g.release, g.token, getattr(g, "owner", None)

    return take


def latch(a: dict, kind: str) -> None:
    """latch-wait: sets the count (if unset) and waits for the latch to open, recording
    when it did; latch-down: counts it down `count` times, hold_ms apart, recording each."""
    import baton

    ev = {"id": a["id"], "lang": "python", "via": "baton", "mode": "latch"}
    latch = baton.connect(a["url"]).count_down_latch(a["name"])
    if kind == "latch-wait":
        latch.try_set_count(int(a["count"]))
    barrier(a["history"], **ev)
    if kind == "latch-wait":
        latch.wait(timeout=WAIT_S)
        record(a["history"], ev="opened", **ev)
        return
    for _ in range(int(a["count"])):
        time.sleep(int(a.get("hold_ms", "200")) / 1000)
        record(a["history"], ev="countdown", **ev)
        latch.count_down()


def redis_py(a: dict):
    import redis

    url = a["url"].split("?", 1)[0]
    r = redis.Redis.from_url(url)
    lease = int(a.get("lease_ms", "15000")) / 1000

    def take():
        # sleep: redis-py polls; 50 ms between tries (its default is 100 ms).
        lock = r.lock(a["name"], timeout=lease, sleep=0.05, blocking_timeout=WAIT_S)
        if not lock.acquire():
            raise SystemExit(f"redis-py Lock {a['name']} not acquired in {WAIT_S}s")
        return lock.release, None, lock.local.token.decode()

    return take


if __name__ == "__main__":
    main()
