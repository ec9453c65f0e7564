#!/usr/bin/env python3
"""Whole-system test: every language from its built package contending on one name, and
the real peer clients contending with baton. Run by scripts/suites/80-xlang.sh, which
builds the packages, installs them and the peers, and sets the environment
(xlang/holders.py lists it; the store URLs are the BATON_TEST_*_URL of scripts/services).

    python3 tests/xlang/run.py [--only SUBSTRING] [--work DIR] [--lanes N]

Prints one line per scenario, a summary per store, and `N passed, N failed`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import tempfile
import uuid
from collections import OrderedDict
from typing import Callable, Dict, List

from xlang.holders import Holder
from xlang.scenario import Outcome, inspect_peer, latch, run

RUN = uuid.uuid4().hex[:8]


def baton_everywhere(kind: str = "lock", per_lang: int = 2, cli: bool = True, **extra: str) -> List[Holder]:
    """Holders of baton itself: the Rust CLI (`baton run`, locks only), Python from the
    wheel, Node from the tarball (ESM and CommonJS), and one JVM holder from the jar (a JVM
    is the heaviest process of a run: one per scenario)."""
    hs: List[Holder] = [Holder(f"jvm-baton-{kind}0", "java", "baton", kind, dict(extra))]
    if cli and kind == "lock":
        hs += [Holder(f"rust{i}", "rust", "baton-cli") for i in range(per_lang)]
    hs += [Holder(f"py-{kind}{i}", "python", kind=kind, extra=dict(extra)) for i in range(per_lang)]
    hs += [Holder(f"node-{kind}{i}", "node", kind=kind, extra={**extra, "module": "cjs" if i % 2 else "esm"})
           for i in range(per_lang)]
    return hs


def browser(store: str, kind: str = "lock", **extra: str) -> List[Holder]:
    """On etcd, a holder in headless Chromium: the wasm package over the same etcd's JSON
    gateway (`etcd+http://`, the browser's transport). The browser reaches no other store."""
    if store != "etcd":
        return []
    url = os.environ.get("BATON_TEST_ETCD_HTTP_URL")
    if not url:
        raise SystemExit("xlang: BATON_TEST_ETCD_HTTP_URL not set: source the services' services.env")
    return [Holder(f"browser-{kind}0", "browser", kind=kind, extra={"url": url, **extra})]


def rw_holders() -> List[Holder]:
    return [Holder("py-write", "python", kind="write"), Holder("py-read", "python", kind="read"),
            Holder("node-write", "node", kind="write"), Holder("node-read", "node", kind="read", extra={"module": "cjs"}),
            Holder("py-read2", "python", kind="read"), Holder("jvm-baton-write", "java", "baton", "write")]


def stores(work: str) -> "OrderedDict[str, str]":
    env = os.environ
    need = {"redis": "BATON_TEST_REDIS_URL", "redlock": "BATON_TEST_REDLOCK_URL",
            "etcd": "BATON_TEST_ETCD_URL", "postgres": "BATON_TEST_POSTGRES_URL",
            "mysql": "BATON_TEST_MYSQL_URL", "zk": "BATON_TEST_ZK_URL"}
    missing = [v for v in need.values() if not env.get(v)]
    if missing:
        raise SystemExit(f"xlang: {', '.join(missing)} not set: source the services' services.env")
    return OrderedDict([
        ("sqlite", f"sqlite://{os.path.join(work, 'xlang.db')}"),
        ("redis", env["BATON_TEST_REDIS_URL"]),
        ("redis-simple", with_option(env["BATON_TEST_REDIS_URL"], "scheme=simple")),
        ("redlock", env["BATON_TEST_REDLOCK_URL"]),
        ("etcd", env["BATON_TEST_ETCD_URL"]),
        ("postgres", env["BATON_TEST_POSTGRES_URL"]),
        ("mysql", env["BATON_TEST_MYSQL_URL"]),
        ("zk", env["BATON_TEST_ZK_URL"]),
    ])


def with_option(url: str, opt: str) -> str:
    return url + ("&" if "?" in url else "?") + opt


def plan(work: str) -> List[Callable[[], Outcome]]:
    """Every scenario, in order, as thunks (so `--only` filters before anything runs)."""
    s = stores(work)
    steps: List[Callable[[], Outcome]] = []

    def add(label: str, thunk: Callable[[], Outcome]) -> None:
        thunk.label = label  # type: ignore[attr-defined]
        steps.append(thunk)

    for store, url in s.items():
        name = f"xlang-{RUN}/{store}"
        web = " + browser" if browser(store) else ""
        add(f"{store} lock", lambda store=store, url=url, name=name, web=web: run(
            store, f"lock: rust cli + python + node + jvm{web}", url, f"{name}/lock",
            baton_everywhere() + browser(store), work))
        if store == "redis-simple":
            continue  # `scheme` changes locks only: the other kinds are the default layout's
        add(f"{store} semaphore", lambda store=store, url=url, name=name, web=web: run(
            store, f"semaphore of 2: python + node + jvm{web}", url, f"{name}/sem",
            baton_everywhere("permit", permits="2") + browser(store, "permit", permits="2"),
            work, hold_ms=60, limit=2, tokens="none"))
        add(f"{store} rwlock", lambda store=store, url=url, name=name, web=web: run(
            store, f"rw lock: writers alone, python + node + jvm{web}", url, f"{name}/rw",
            rw_holders() + browser(store, "write"), work, modes="rw", tokens="none"))

    # Real peers, each from its own registry, both directions (they wait on baton, baton
    # waits on them), and `baton inspect` reading their holds.
    simple, redlock = s["redis-simple"], with_option(s["redlock"], "scheme=simple")
    peers_simple = [Holder("redis-py0", "python", "redis-py"), Holder("redis-py1", "python", "redis-py"),
                    Holder("node-redlock", "node", "node-redlock"), Holder("redsync", "go", "redsync")]
    add("redis-simple peers", lambda: run("redis-simple", "peers: redis-py, node-redlock, redsync", simple,
                                          f"xlang-{RUN}/peers", peers_simple + baton_everywhere(per_lang=1), work,
                                          tokens="grow"))
    peers_redlock = [Holder("node-redlock", "node", "node-redlock"), Holder("redsync", "go", "redsync")]
    add("redlock peers", lambda: run("redlock", "peers: node-redlock, redsync (quorum)", redlock,
                                     f"xlang-{RUN}/peers", peers_redlock + baton_everywhere(per_lang=1), work))
    peers_etcd = [Holder("etcdctl0", "go", "etcdctl"), Holder("etcdctl1", "go", "etcdctl"),
                  Holder("go-mutex0", "go", "etcd-mutex"), Holder("go-mutex1", "go", "etcd-mutex")]
    add("etcd peers", lambda: run("etcd", "peers: etcdctl lock, Go concurrency.Mutex", s["etcd"],
                                  f"xlang-{RUN}/peers", peers_etcd + baton_everywhere(per_lang=1), work))
    # Redisson (Maven Central) on the default layout: RFencedLock (an RLock drawing its
    # tokens from the counter baton's locks use, so tokens must grow across both),
    # RFairLock, RReadWriteLock, RSemaphore (baton's ?semaphore=rsemaphore),
    # RPermitExpirableSemaphore, RCountDownLatch; ?names=bare gives every kind Redisson's names.
    # ?free=keep: baton keeps a free name's counter (RFencedLock's INCR would start again at
    # 1 below baton's clock-based tokens) and semaphore counts, as docs/redis-layout.md says
    # for names shared with Redisson.
    redis = with_option(s["redis"], "free=keep")
    bare = with_option(redis, "names=bare")
    jvm = lambda kind, k=2, **x: [Holder(f"jvm-{kind}{i}", "java", "redisson", kind, dict(x)) for i in range(k)]  # noqa: E731
    add("redis redisson lock", lambda: run("redis", "redisson: RFencedLock", redis, f"xlang-{RUN}/rs-lock",
                                           jvm("lock") + baton_everywhere(per_lang=1), work))
    add("redis redisson fair", lambda: run("redis", "redisson: RFairLock", redis, f"xlang-{RUN}/rs-fair",
                                           jvm("fair") + baton_everywhere("fair", per_lang=1), work, tokens="none"))
    add("redis redisson rw", lambda: run("redis", "redisson: RReadWriteLock", bare, f"xlang-{RUN}/rs-rw",
                                         jvm("read", 1) + jvm("write", 1) + rw_holders(), work, modes="rw",
                                         tokens="none"))
    add("redis redisson semaphore", lambda: run(
        "redis", "redisson: RSemaphore (rsemaphore)", with_option(bare, "semaphore=rsemaphore"),
        f"xlang-{RUN}/rs-sem", jvm("permit", permits="2") + baton_everywhere("permit", per_lang=1, permits="2"),
        work, hold_ms=60, limit=2, tokens="none"))
    add("redis redisson pes", lambda: run(
        "redis", "redisson: RPermitExpirableSemaphore", bare, f"xlang-{RUN}/rs-pes",
        jvm("pes", permits="2") + baton_everywhere("pes", per_lang=1, permits="2"), work, hold_ms=60, limit=2,
        tokens="none"))
    add("redis redisson latch", lambda: latch(
        "redis", "redisson: RCountDownLatch, baton counts", bare, f"xlang-{RUN}/rs-latch1",
        [Holder("jvm-wait", "java", "redisson", "latch-wait"), Holder("py-wait", "python", kind="latch-wait")],
        Holder("py-down", "python", kind="latch-down"), work))
    add("redis redisson latch2", lambda: latch(
        "redis", "redisson: RCountDownLatch, Redisson counts", bare, f"xlang-{RUN}/rs-latch2",
        [Holder("py-wait", "python", kind="latch-wait")], Holder("jvm-down", "java", "redisson", "latch-down"), work))

    # Apache Curator (Maven Central) on zk://: InterProcessMutex, InterProcessReadWriteLock
    # and InterProcessSemaphoreV2 on the znodes baton's names map to.
    zk = s["zk"]
    cur = lambda kind, k=2, **x: [Holder(f"curator-{kind}{i}", "java", "curator", kind, dict(x)) for i in range(k)]  # noqa: E731
    add("zk curator lock", lambda: run("zk", "curator: InterProcessMutex", zk, f"xlang-{RUN}/cur-lock",
                                       cur("lock") + baton_everywhere(per_lang=1), work))
    add("zk curator rw", lambda: run("zk", "curator: InterProcessReadWriteLock", zk, f"xlang-{RUN}/cur-rw",
                                     cur("read", 1) + cur("write", 1) + rw_holders(), work, modes="rw",
                                     tokens="none"))
    add("zk curator semaphore", lambda: run(
        "zk", "curator: InterProcessSemaphoreV2", zk, f"xlang-{RUN}/cur-sem",
        cur("permit", permits="2") + baton_everywhere("permit", per_lang=1, permits="2"), work, hold_ms=60,
        limit=2, tokens="none"))

    waiter = Holder("py-waiter", "python")
    for store, url, peer in [("redis-simple", simple, Holder("redis-py", "python", "redis-py")),
                             ("redis-simple", simple, Holder("node-redlock", "node", "node-redlock")),
                             ("redis-simple", simple, Holder("redsync", "go", "redsync")),
                             ("redlock", redlock, Holder("node-redlock", "node", "node-redlock")),
                             ("redlock", redlock, Holder("redsync", "go", "redsync")),
                             ("etcd", s["etcd"], Holder("etcdctl", "go", "etcdctl")),
                             ("etcd", s["etcd"], Holder("go-mutex", "go", "etcd-mutex")),
                             ("redis", redis, Holder("redisson", "java", "redisson")),
                             ("zk", zk, Holder("curator", "java", "curator"))]:
        add(f"{store} inspect {peer.via}", lambda store=store, url=url, peer=peer: inspect_peer(
            store, url, f"xlang-{RUN}/inspect-{peer.via}", peer, waiter, work))
    return steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="run the scenarios whose label contains this")
    ap.add_argument("--work", help="folder for the histories (default: a new temporary one)")
    ap.add_argument("--lanes", type=int, default=2, help="scenarios run side by side (default: 2)")
    opts = ap.parse_args()
    work = opts.work or tempfile.mkdtemp(prefix="baton-xlang-")
    os.makedirs(work, exist_ok=True)
    steps = [t for t in plan(work) if not opts.only or any(o in t.label for o in opts.only)]  # type: ignore[attr-defined]
    print(f"xlang: run {RUN}, {len(steps)} scenarios, histories in {work}", flush=True)
    outcomes: List[Outcome] = []
    # Scenarios side by side (--lanes): each has names, a history and holders of its own, and
    # mostly waits on holds and on the holders' start (two thirds of the CPU idle, one at a
    # time); outcomes print in plan order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.lanes) as pool:
        for o in pool.map(lambda step: step(), steps):
            outcomes.append(o)
            print(o.line(), flush=True)
            for p in o.problems()[:10]:
                print(f"    {p}", flush=True)
    summary(outcomes)
    passed = sum(o.ok for o in outcomes)
    print(f"{passed} passed, {len(outcomes) - passed} failed")
    return 0 if passed == len(outcomes) and outcomes else 1


def summary(outcomes: List[Outcome]) -> None:
    per: Dict[str, List[Outcome]] = OrderedDict()
    for o in outcomes:
        per.setdefault(o.store, []).append(o)
    print("\nper store:")
    for store, os_ in per.items():
        langs = sorted({lang for o in os_ for lang in o.verdict.languages})
        clients = sorted({v for o in os_ for v in o.verdict.vias})
        print(f"  {store:<13} scenarios={len(os_)} holders={sum(o.verdict.holders for o in os_)} "
              f"languages={','.join(langs)} clients={','.join(clients)} "
              f"grants={sum(o.verdict.grants for o in os_)} "
              f"violations={sum(len(o.problems()) for o in os_)}")


if __name__ == "__main__":
    sys.exit(main())
