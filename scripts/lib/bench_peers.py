#!/usr/bin/env python3
"""The rounds of `scripts/bench-peers` (``run``) and their report (``report``).

  bench_peers.py run --out DIR --peers a,b --cli PATH --redis H:P --redlock H:P,… --etcd H:P --zk H:P
                     [--rounds N] [--duration S] [--iterations N] [--handoff-max K] [--sides rust,python,node]
  bench_peers.py report --out DIR

``run`` appends one JSON line per side per round to DIR/rounds.jsonl; ``report`` reads it and
writes DIR/summary.md and DIR/*.svg. Only the standard library: the report is hand-written
SVG. Each peer is a file scripts/bench-peers.d/NAME.sh (see scripts/bench-peers); `floor` is
built in: redis-benchmark replaying the exact scripts of a baton cycle.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = ROOT / "scripts" / "bench-peers.d"
SCENARIOS = ("one", "many", "handoff")
RUN_TIMEOUT = 600  # seconds, any single side of a round


# ---------------------------------------------------------------- peers

def peer_meta(name: str) -> Dict[str, str]:
    """PEER_* variables of scripts/bench-peers.d/NAME.sh."""
    f = PEERS_DIR / f"{name}.sh"
    out = subprocess.run(
        ["bash", "-c", '. "$1"; printf "%s\\n" "$PEER_LABEL" "$PEER_STORE" "${PEER_BATON_QUERY:-}" '
         '"${PEER_BATON_SIDES:-rust}"', "_", str(f)],
        capture_output=True, text=True, check=True, timeout=30)
    label, store, query, sides = out.stdout.rstrip("\n").split("\n")
    return {"label": label, "store": store, "query": query, "sides": sides}


def loadavg() -> List[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return [0.0, 0.0, 0.0]


# `--pin`: the CPUs every side runs on (`taskset -c`), the servers being on CPU 0; empty: unpinned.
SIDE_CPUS = ""


def pinned(cmd: List[str]) -> List[str]:
    """`cmd` on the sides' CPUs when the run is pinned (its children inherit them)."""
    return ["taskset", "-c", SIDE_CPUS, *cmd] if SIDE_CPUS else cmd


# ---------------------------------------------------------------- CPU time (`--cpu`)

CLK_TCK = os.sysconf("SC_CLK_TCK")
CPU_INTERVAL = 0.02  # seconds between samples: a scenario's 3 s window holds ~150


def proc_ticks(pid: int) -> Optional[Tuple[int, int]]:
    """(parent pid, user + system clock ticks of every thread) of a live process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    f = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, …
    return int(f[1]), int(f[11]) + int(f[12])


def machine_ticks() -> int:
    """Clock ticks every CPU spent busy (user, nice, system, irq, softirq, steal)."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return f[0] + f[1] + f[2] + f[5] + f[6] + f[7]


def listening_pids(endpoints: str) -> List[int]:
    """The processes listening on the ports of `endpoints` (host:port, comma-separated)."""
    pids = set()
    for ep in (e for e in endpoints.split(",") if e):
        out = subprocess.run(["ss", "-Htlnp", f"sport = :{ep.rsplit(':', 1)[1]}"], capture_output=True, text=True,
                             timeout=10).stdout
        pids.update(int(x) for x in re.findall(r"pid=(\d+)", out))
    return sorted(pids)


class CpuSampler(threading.Thread):
    """Samples, every CPU_INTERVAL, the CPU time of a side (its process and every descendant,
    found anew every few samples; each pid's last figure kept once it ends), of the store's
    servers, and of the whole machine, with the wall-clock time of each sample."""

    def __init__(self, root: int, servers: List[int]) -> None:
        super().__init__(daemon=True)
        self.root, self.servers = root, servers
        self.samples: List[Tuple[float, int, int, int]] = []  # (time, machine, servers, side)
        self.side: Dict[int, int] = {}
        self.halt = threading.Event()

    def descendants(self) -> None:
        parents = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit() and (t := proc_ticks(int(d.name))):
                parents[int(d.name)] = t[0]
        tree, grew = {self.root}, True
        while grew:
            more = {p for p, pp in parents.items() if pp in tree} - tree
            tree |= more
            grew = bool(more)
        for p in tree:
            self.side.setdefault(p, 0)

    def sample(self) -> None:
        for p in self.side:
            if (t := proc_ticks(p)) is not None:
                self.side[p] = max(self.side[p], t[1])
        servers = sum((proc_ticks(p) or (0, 0))[1] for p in self.servers)
        self.samples.append((time.time(), machine_ticks(), servers, sum(self.side.values())))

    def run(self) -> None:
        n = 0
        while not self.halt.is_set():
            if n % 10 == 0:
                self.descendants()
            self.sample()
            n += 1
            self.halt.wait(CPU_INTERVAL)
        self.sample()  # after the side ended: its last figures stand for the end of its window

    def window(self, t0: float, t1: float) -> Optional[Tuple[float, float, float]]:
        """CPU seconds (machine, servers, side) between wall-clock times t0 and t1, linearly
        interpolated between the samples around each end."""
        s = self.samples
        if len(s) < 2 or t1 <= t0 or t1 > s[-1][0] or t0 < s[0][0] - 0.1:
            return None
        t0 = max(t0, s[0][0])  # a side at work before the first sample (started ms ago): from it

        def at(t: float) -> List[float]:
            i = next(k for k in range(1, len(s)) if s[k][0] >= t)
            (ta, *a), (tb, *b) = s[i - 1], s[i]
            w = (t - ta) / (tb - ta) if tb > ta else 1.0
            return [x + (y - x) * w for x, y in zip(a, b)]

        lo, hi = at(t0), at(t1)
        m, sv, sd = ((y - x) / CLK_TCK for x, y in zip(lo, hi))
        return m, sv, sd


# The servers whose CPU time `--cpu` reads for the side being run (none: `--cpu` is off), and the
# sampler of the last side run.
CPU_SERVERS: Optional[List[int]] = None
LAST_SAMPLER: Optional[CpuSampler] = None


def cpu_per_op(sampler: CpuSampler, scen: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """µs of CPU per operation of one scenario: the side's, the servers', the machine's."""
    w = sampler.window(scen.get("t0_unix") or 0.0, scen.get("t1_unix") or 0.0) if scen.get("ops") else None
    if not w:
        return None
    m, sv, sd = (1e6 * x / scen["ops"] for x in w)
    wall = 1e6 * (scen["t1_unix"] - scen["t0_unix"]) / scen["ops"]
    return {"client_us": round(sd, 1), "servers_us": round(sv, 1), "machine_us": round(m, 1), "wall_us": round(wall, 1)}


def run_json(cmd: List[str]) -> Dict[str, Any]:
    """Runs a side; its stdout is one JSON object (on one line, or the whole output). With
    `--cpu`, samples its CPU time and the servers' while it runs (LAST_SAMPLER)."""
    global LAST_SAMPLER
    proc = subprocess.Popen(pinned(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = None
    if CPU_SERVERS is not None:
        sampler = CpuSampler(proc.pid, CPU_SERVERS)
        sampler.start()
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"{Path(cmd[0]).name}: no answer in {RUN_TIMEOUT} s") from None
    finally:
        if sampler:
            sampler.halt.set()
            sampler.join(timeout=10)
    LAST_SAMPLER = sampler
    out = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    if out.returncode != 0:
        raise RuntimeError(f"{Path(cmd[0]).name} exited {out.returncode}: {out.stderr.strip()[-800:]}")
    text = out.stdout.strip()
    lines = [x for x in text.splitlines() if x.startswith("{")]
    try:
        parsed: Dict[str, Any] = json.loads(text if text.startswith("{") else lines[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"{Path(cmd[0]).name}: no JSON on stdout: {text[-400:]}") from None
    return parsed


def rust_scenarios(report: Dict[str, Any]) -> Dict[str, Any]:
    """`baton bench --json` → the common shape {one, many, handoff}."""
    names = {"uncontended_1": "one", "uncontended_64": "many", "handoff": "handoff"}
    out = {}
    for s in report["scenarios"]:
        k = names[s["name"]]
        rate = s["ops_per_sec"] if k != "handoff" else None
        out[k] = {"ops": s["ops"], "ops_per_sec": rate, "p50_us": s["p50_us"], "p99_us": s["p99_us"],
                  "max_us": s["max_us"], "t0_unix": s.get("t0_unix"), "t1_unix": s.get("t1_unix")}
    return out


class Runner:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.targets = {"redis": a.redis, "redlock": a.redlock, "etcd": a.etcd, "zk": a.zk}
        self.out = Path(a.out)
        self.rounds_file = self.out / "rounds.jsonl"
        self.server_pids: Dict[str, List[int]] = {}

    def baton_url(self, store: str, query: str) -> str:
        scheme = {"redis": "redis", "redlock": "redlock", "etcd": "etcd", "zk": "zk"}[store]
        url = f"{scheme}://{self.targets[store]}"
        return f"{url}?{query}" if query else url

    def baton_side(self, side: str, url: str, peer: str = "") -> Dict[str, Any]:
        a = self.a
        if side == "rust":
            return rust_scenarios(run_json([a.cli, "bench", "--json", "--url", url, "--iterations", str(a.iterations),
                                            "--duration", f"{a.duration}s"]))
        if side == "python":
            return run_json([a.python, str(PEERS_DIR / "py" / "peers_py.py"), "--side", "baton", "--url", url,
                             "--duration", str(a.duration), "--iterations", str(a.iterations)])["scenarios"]
        if side == "node":
            return run_json(["node", str(PEERS_DIR / "node" / "peers_node.mjs"), "--side", "baton",
                             "--modules", str(ROOT / "bindings-node"), "--target", url,
                             "--duration-ms", str(int(a.duration * 1000)), "--iterations", str(a.iterations)])["scenarios"]
        # Any other side (a JVM binding, …) is the peer file's own `baton_run SIDE URL …`.
        cmd = ["bash", "-c", '. "$1"; shift; baton_run "$@"', "_", str(PEERS_DIR / f"{peer}.sh"), side, url,
               str(a.duration), str(a.iterations), str(a.handoff_max)]
        return run_json(cmd)["scenarios"]

    def peer_side(self, name: str, store: str) -> Dict[str, Any]:
        a = self.a
        cmd = ["bash", "-c", '. "$1"; shift; peer_run "$@"', "_", str(PEERS_DIR / f"{name}.sh"),
               self.targets[store], str(a.duration), str(a.iterations), str(a.handoff_max)]
        return run_json(cmd)["scenarios"]

    def record(self, rnd: int, peer: str, label: str, side: str, store: str, target: str, fn: Any) -> None:
        global CPU_SERVERS, LAST_SAMPLER
        if self.a.cpu:
            CPU_SERVERS = self.server_pids.setdefault(store, listening_pids(self.targets[store]))
        LAST_SAMPLER = None
        before, t0 = loadavg(), time.time()
        row: Dict[str, Any] = {"round": rnd, "peer": peer, "label": label, "side": side, "store": store,
                               "target": target,
                               "busy": self.a.busy, "pin": self.a.pin, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
                               "loadavg": before}
        try:
            row["scenarios"] = fn()
            for scen in row["scenarios"].values():
                if LAST_SAMPLER and (cpu := cpu_per_op(LAST_SAMPLER, scen)):
                    scen["cpu"] = cpu
        except Exception as e:  # one failed side is recorded, the rounds go on
            row["error"] = str(e)
        row["seconds"] = round(time.time() - t0, 2)
        row["loadavg_after"] = loadavg()
        with self.rounds_file.open("a") as f:
            f.write(json.dumps(row) + "\n")
        what = row.get("error") or " ".join(
            f"{k}={v['ops_per_sec']:.0f}/s" if v.get("ops_per_sec") else f"{k}_p50={v['p50_us']:.0f}us"
            for k, v in row["scenarios"].items())
        print(f"[bench-peers] round {rnd} {peer} {side}: {what} (load {before[0]:.1f})", file=sys.stderr)

    def run(self) -> None:
        peers = [p for p in self.a.peers.split(",") if p]
        sides_ok = set(self.a.sides.split(","))  # rust, python, node, or a peer file's own
        metas = {p: peer_meta(p) for p in peers if p != "floor"}
        floor = Floor(self.a, self.targets["redis"]) if "floor" in peers else None
        self.out.mkdir(parents=True, exist_ok=True)
        for rnd in range(1, self.a.rounds + 1):
            for p in peers:
                if p == "floor" and floor:
                    floor.round(self, rnd)
                    continue
                m = metas[p]
                url = self.baton_url(m["store"], m["query"])
                sides = [s for s in m["sides"].split() if s in sides_ok]
                steps = [(f"baton-{s}", (lambda s=s, p=p: self.baton_side(s, url, p))) for s in sides]
                steps.append(("peer", lambda p=p, m=m: self.peer_side(p, m["store"])))
                if rnd % 2 == 0:  # who goes first alternates between rounds
                    steps = steps[-1:] + steps[:-1]
                for side, fn in steps:
                    target = url if side.startswith("baton-") else self.targets[m["store"]]
                    self.record(rnd, p, m["label"], side, m["store"], target, fn)


# ---------------------------------------------------------------- floor

MONITOR_LINE = re.compile(r'^\d+\.\d+ \[\d+ [^\]]+\] (.*)$')
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def monitor_args(line: str) -> Optional[List[str]]:
    """The arguments of one MONITOR line (None for a command run by a script)."""
    m = MONITOR_LINE.match(line.strip())
    if not m or " lua]" in line.split('"', 1)[0]:
        return None
    return [bytes(q, "utf-8").decode("unicode_escape") for q in QUOTED.findall(m.group(1))]


def last_cycle(lines: List[str], key_part: str) -> Tuple[List[str], List[str]]:
    """The last acquire + release EVALSHA pair on the keys holding `key_part`."""
    calls = [a for a in (monitor_args(x) for x in lines)
             if a and a[0].upper() == "EVALSHA" and any(key_part in k for k in a[3:3 + int(a[2])])]
    if len(calls) < 2:
        raise RuntimeError(f"MONITOR saw {len(calls)} EVALSHA calls on {key_part}")
    return calls[-2], calls[-1]


class Floor:
    """redis-benchmark, one client, replaying the exact EVALSHA calls of a baton cycle of
    each layout (simple, default), captured with MONITOR on the private server.

    Acquire runs on a fresh name each time (`__rand_int__`): the script's full path. Release
    runs on a name held with a large count, releasing 1: the holder check, the count read
    and its write, without the final DEL + PUBLISH — a lower bound of the release."""

    LAYOUTS = {"simple": "scheme=simple", "default": ""}
    HELD_COUNT = "1000000000000"

    def __init__(self, a: argparse.Namespace, target: str) -> None:
        self.a = a
        self.host, self.port = target.split(":")
        self.calls: Dict[str, Tuple[List[str], List[str]]] = {}

    def cli(self, *args: str) -> str:
        return subprocess.run(["redis-cli", "-h", self.host, "-p", self.port, *args], capture_output=True,
                              text=True, timeout=30, check=True).stdout

    def capture(self, layout: str) -> Tuple[List[str], List[str]]:
        url = f"redis://{self.host}:{self.port}" + (f"?{self.LAYOUTS[layout]}" if self.LAYOUTS[layout] else "")
        # Into a file, line-buffered: a pipe left unread would stall the monitor, and a
        # block-buffered redis-cli loses its last lines when terminated.
        log = Path(self.a.out) / f"monitor-{layout}.txt"
        with log.open("w") as sink:
            mon = subprocess.Popen(["stdbuf", "-oL", "redis-cli", "-h", self.host, "-p", self.port, "monitor"],
                                   stdout=sink)
            try:
                time.sleep(0.5)
                subprocess.run([self.a.cli, "bench", "--url", url, "--iterations", "3", "--duration", "1s",
                                "--json"], capture_output=True, timeout=120, check=True)
                time.sleep(0.5)
            finally:
                mon.terminate()
                mon.wait(timeout=30)
        lines = log.read_text(errors="replace").splitlines()
        acq, rel = last_cycle(lines, "uncontended-1/")
        # Release one level (ARGV[2] = 1) of a name held many times over, so it never ends.
        nk = int(rel[2])
        rel = list(rel)
        rel[3 + nk + 1] = "1"
        return acq, rel

    def prepare(self, layout: str) -> Tuple[List[str], List[str]]:
        acq, rel = self.capture(layout)
        name = next(k for k in acq[3:3 + int(acq[2])] if "uncontended-1/" in k)
        base = name[name.index("bench/uncontended-1/"):].split("}")[0]
        fresh = [x.replace(base, f"bench/floor-{layout}/__rand_int__") for x in acq]
        held_acq = [x.replace(base, f"bench/floor-{layout}/held") for x in acq]
        held_rel = [x.replace(base, f"bench/floor-{layout}/held") for x in rel]
        self.cli(*held_acq)
        holder = acq[3 + int(acq[2])]
        for k in held_rel[3:3 + int(held_rel[2])]:
            if self.cli("type", k).strip() == "hash":
                for field in (holder, f"c:{holder}"):
                    if self.cli("hexists", k, field).strip() == "1":
                        self.cli("hset", k, field, self.HELD_COUNT)
            self.cli("persist", k)
        return fresh, held_rel

    def bench(self, args: List[str]) -> Dict[str, float]:
        # About the scenario's duration at a few thousand calls a second.
        n = max(1000, min(self.a.iterations, int(self.a.duration * 3000)))
        out = subprocess.run(pinned(["redis-benchmark", "-h", self.host, "-p", self.port, "-c", "1", "-n", str(n),
                                     "-r", "100000000", "--csv", *args]), capture_output=True, text=True,
                             timeout=RUN_TIMEOUT, check=True).stdout.strip().splitlines()
        row = next(x for x in reversed(out) if x.startswith('"') and not x.startswith('"test"'))
        cols = [c.strip('"') for c in row.split(",")]
        return {"rps": float(cols[1]), "p50_us": float(cols[4]) * 1000, "p99_us": float(cols[6]) * 1000,
                "max_us": float(cols[7]) * 1000}

    def raw(self, layout: str) -> Dict[str, Any]:
        acq, rel = self.calls[layout]
        a, r = self.bench(acq), self.bench(rel)
        cycle = {"ops": 0, "ops_per_sec": 1.0 / (1.0 / a["rps"] + 1.0 / r["rps"]),
                 "p50_us": a["p50_us"] + r["p50_us"], "p99_us": a["p99_us"] + r["p99_us"],
                 "max_us": a["max_us"] + r["max_us"]}
        return {"one": cycle, "acquire": a, "release": r}

    def round(self, runner: Runner, rnd: int) -> None:
        for layout, query in self.LAYOUTS.items():
            if layout not in self.calls:
                self.calls[layout] = self.prepare(layout)
            url = runner.baton_url("redis", query)
            peer, label = f"floor-{layout}", f"redis-benchmark, the {layout} layout's scripts"
            steps = [("baton-rust", lambda url=url: {"one": runner.baton_side("rust", url)["one"]}),
                     ("peer", lambda layout=layout: self.raw(layout))]
            if rnd % 2 == 0:
                steps.reverse()
            for side, fn in steps:
                target = url if side == "baton-rust" else f"{self.host}:{self.port}"
                runner.record(rnd, peer, label, side, "redis", target, fn)


# ---------------------------------------------------------------- report

def read_rounds(path: Path) -> List[Dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def med(xs: List[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def metric(row: Dict[str, Any], scen: str, key: str) -> Optional[float]:
    v = row.get("scenarios", {}).get(scen, {}).get(key)
    return float(v) if v is not None else None


def groups(rows: List[Dict[str, Any]]) -> List[Tuple[str, str, List[Dict[str, Any]]]]:
    """(peer, baton side) pairs in first-seen order, with their rows (peer rows included)."""
    seen: List[Tuple[str, str]] = []
    for r in rows:
        if r["side"].startswith("baton-") and (r["peer"], r["side"]) not in seen:
            seen.append((r["peer"], r["side"]))
    return [(p, s, [r for r in rows if r["peer"] == p and r["side"] in (s, "peer")]) for p, s in seen]


def paired(rows: List[Dict[str, Any]], side: str, scen: str, key: str, inverse: bool = False) -> Dict[str, Any]:
    """Medians of each side, and the per-round ratios baton / peer (`inverse`: peer / baton)."""
    by: Dict[int, Dict[str, float]] = {}
    for r in rows:
        v = metric(r, scen, key)
        if v is not None and "error" not in r:
            by.setdefault(r["round"], {})[r["side"]] = v
    ratios = [(d["peer"] / d[side] if inverse else d[side] / d["peer"])
              for d in by.values() if d.get(side) and d.get("peer")]
    return {"baton": med([d[side] for d in by.values() if side in d]),
            "peer": med([d["peer"] for d in by.values() if "peer" in d]),
            "ratio": med(ratios), "lo": min(ratios) if ratios else None, "hi": max(ratios) if ratios else None,
            "n": len(ratios)}


def fmt_num(v: Optional[float]) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}".replace(",", " ")


def fmt_us(v: Optional[float]) -> str:
    if v is None:
        return "–"
    if v >= 1_000_000:
        return f"{v / 1e6:.3g} s"
    if v >= 1000:
        return f"{v / 1000:.3g} ms"
    return f"{v:.0f} µs"


def fmt_ratio(p: Dict[str, Any], lower: bool = False) -> str:
    """`**×1.50** (1.00–2.00)`; `lower`: `**227× lower** (180–300)`, for latencies."""
    if p["ratio"] is None:
        return "–"
    if lower:
        spread = f" ({p['lo']:.0f}–{p['hi']:.0f})" if p["n"] > 1 else ""
        return f"**{p['ratio']:.0f}× lower**{spread}" if p["ratio"] >= 10 else \
            f"**{p['ratio']:.2f}× lower**" + (f" ({p['lo']:.2f}–{p['hi']:.2f})" if p["n"] > 1 else "")
    if p["n"] > 1:
        return f"**×{p['ratio']:.2f}** ({p['lo']:.2f}–{p['hi']:.2f})"
    return f"**×{p['ratio']:.2f}**"


def summary_md(rows: List[Dict[str, Any]]) -> str:
    rounds = sorted({r["round"] for r in rows})
    loads = [r["loadavg"][0] for r in rows]
    busy = any(r.get("busy") for r in rows)
    pins = sorted({r.get("pin") or "" for r in rows})
    pin = {"same": "; servers and clients pinned to CPU 0 (--pin same)",
           "split": "; servers pinned to CPU 0, clients to the others (--pin split)"}.get(pins[0], "") \
        if len(pins) == 1 else f"; pinned: {', '.join(x or 'no' for x in pins)}"
    out = [f"{len(rounds)} round(s), {rows[0]['started'] if rows else '?'} – {rows[-1]['started'] if rows else '?'}; "
           f"load average (1 min) {min(loads, default=0):.1f}–{max(loads, default=0):.1f}"
           f"{'; one core kept busy (--busy)' if busy else ''}{pin}. Medians over rounds; ratio = baton / peer "
           "per round (median, range): > 1 is baton ahead; hand-off: how many times lower baton's p50 is.", ""]
    out += ["| baton (side) vs peer | 1 task: cycles/s | ratio | 64 tasks: cycles/s | ratio | hand-off p50 | ratio |",
            "|---|---|---|---|---|---|---|"]
    floors = []
    for peer, side, rs in groups(rows):
        if peer.startswith("floor-"):
            floors.append((peer, side, rs))
            continue
        label = next(r["label"] for r in rs)
        one, many = paired(rs, side, "one", "ops_per_sec"), paired(rs, side, "many", "ops_per_sec")
        ho = paired(rs, side, "handoff", "p50_us", inverse=True)
        out.append(f"| {side[6:]} vs {label} | {fmt_num(one['baton'])} / {fmt_num(one['peer'])} | {fmt_ratio(one)} "
                   f"| {fmt_num(many['baton'])} / {fmt_num(many['peer'])} | {fmt_ratio(many)} "
                   f"| {fmt_us(ho['baton'])} / {fmt_us(ho['peer'])} | {fmt_ratio(ho, lower=True)} |")
    errors = [r for r in rows if "error" in r]
    out += cpu_md(rows)
    if floors:
        out += ["", "Floor: baton's uncontended cycle (Rust, 1 task) against redis-benchmark (one client) running "
                "the same scripts with the same keys and arguments (acquire on a fresh name; release of one level "
                "of a name held many times over, a lower bound of the release).", "",
                "| layout | baton p50 | raw acquire + release p50 | ratio | baton cycles/s | raw cycles/s | ratio |",
                "|---|---|---|---|---|---|---|"]
        for peer, side, rs in floors:
            p50, rate = paired(rs, side, "one", "p50_us"), paired(rs, side, "one", "ops_per_sec")
            acq = med([v for v in (metric(r, "acquire", "p50_us") for r in rs) if v is not None])
            rel = med([v for v in (metric(r, "release", "p50_us") for r in rs) if v is not None])
            raw = f"{fmt_us(p50['peer'])} ({fmt_us(acq)} + {fmt_us(rel)})"
            out.append(f"| {peer[6:]} | {fmt_us(p50['baton'])} | {raw} | {fmt_ratio(p50)} "
                       f"| {fmt_num(rate['baton'])} | {fmt_num(rate['peer'])} | {fmt_ratio(rate)} |")
    if errors:
        out += ["", f"{len(errors)} side(s) failed: " + "; ".join(
            f"round {r['round']} {r['peer']} {r['side']}: {r['error'][:120]}" for r in errors)]
    return "\n".join(out) + "\n"


def cpu_md(rows: List[Dict[str, Any]]) -> List[str]:
    """With `--cpu`: the CPU time a cycle costs the client, the store's servers and the whole
    machine (the two include the kernel's work for them), and its wall time, medians over
    rounds; the machine's figure against 2 × wall says how near the run is to the cores' bound."""
    if not any("cpu" in v for r in rows for v in r.get("scenarios", {}).values()):
        return []
    out = ["", "CPU time per cycle (`--cpu`; µs, baton / peer, medians over rounds): the client's process, the "
           "store's servers, every CPU of the machine; wall: the cycle's share of the scenario's time "
           f"({os.cpu_count()} CPUs: a machine figure near {os.cpu_count()} × wall is CPU-bound).", "",
           "| baton (side) vs peer | 1 task: client | servers | machine | wall | 64 tasks: client | servers | machine "
           "| wall |", "|---|---|---|---|---|---|---|---|---|"]
    for peer, side, rs in groups(rows):
        if peer.startswith("floor-"):
            continue
        label = next(r["label"] for r in rs)
        cells = []
        for scen in ("one", "many"):
            for k in ("client_us", "servers_us", "machine_us", "wall_us"):
                def m(who: str) -> Optional[float]:
                    return med([r["scenarios"][scen]["cpu"][k] for r in rs if r["side"] == who and "error" not in r
                                and "cpu" in r["scenarios"].get(scen, {})])
                b, q = m(side), m("peer")
                cells.append(f"{fmt_num(b) if b is not None else '–'} / {fmt_num(q) if q is not None else '–'}")
        out.append(f"| {side[6:]} vs {label} | " + " | ".join(cells) + " |")
    return out


# ---------------------------------------------------------------- SVG

def esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(width: int, height: int, body: List[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">\n'
            f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")


BATON, PEER = "#2b6cb0", "#c05621"


def cycles_svg(rows: List[Dict[str, Any]]) -> str:
    """Two panels (1 task, 64 tasks): a pair of bars per peer, baton above the peer."""
    gs = [(p, s, rs) for p, s, rs in groups(rows) if not p.startswith("floor-")]
    left, bar, gap, panel_w = 300, 11, 12, 260
    height = 50 + len(gs) * (2 * bar + gap)
    body = []
    for i, (scen, title) in enumerate((("one", "1 task: cycles/s"), ("many", "64 tasks: cycles/s"))):
        x0 = left + i * (panel_w + 90)
        vals = [(paired(rs, s, scen, "ops_per_sec"), rs) for _, s, rs in gs]
        top = max([v for p, _ in vals for v in (p["baton"], p["peer"]) if v] or [1.0])
        body.append(f'<text x="{x0}" y="20" font-weight="bold">{esc(title)}</text>')
        for j, (p, _) in enumerate(vals):
            y = 35 + j * (2 * bar + gap)
            for k, (v, colour) in enumerate(((p["baton"], BATON), (p["peer"], PEER))):
                w = 0 if not v else panel_w * v / top
                body.append(f'<rect x="{x0}" y="{y + k * bar}" width="{w:.1f}" height="{bar - 1}" fill="{colour}"/>')
                body.append(f'<text x="{x0 + w + 4:.1f}" y="{y + k * bar + bar - 2}" font-size="10">'
                            f'{esc(fmt_num(v))}</text>')
    for j, (peer, side, rs) in enumerate(gs):
        y = 35 + j * (2 * bar + gap)
        label = next(r["label"] for r in rs)
        body.append(f'<text x="{left - 8}" y="{y + 9}" text-anchor="end" fill="{BATON}">baton ({esc(side[6:])})</text>')
        body.append(f'<text x="{left - 8}" y="{y + bar + 9}" text-anchor="end" fill="{PEER}">{esc(label)}</text>')
    return svg(left + 2 * (panel_w + 90), height, body)


def baton_name(r: Dict[str, Any]) -> str:
    """`baton (rust)`, `baton (python, scheme=simple)`: the side and the URL's options."""
    query = r.get("target", "").partition("?")[2]
    return f"baton ({r['side'][6:]}{', ' + query if query else ''})"


def latency_svg(rows: List[Dict[str, Any]], store: str) -> str:
    """Per client on `store`: the 1-task cycle's p50–p99 (bar) and max (tick), and the hand-off
    p50 (diamond), medians over rounds, on one log axis."""
    clients: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        if r["store"] != store or "error" in r or r["peer"].startswith("floor-"):
            continue
        name = baton_name(r) if r["side"].startswith("baton-") else r["label"]
        clients.setdefault(name, []).append(r)
    rows_out = []
    for name, rs in clients.items():
        def m(scen: str, key: str) -> Optional[float]:
            return med([v for v in (metric(r, scen, key) for r in rs) if v])
        rows_out.append((name, m("one", "p50_us"), m("one", "p99_us"), m("one", "max_us"), m("handoff", "p50_us")))
    left, w, rowh = 300, 520, 22
    height = 70 + len(rows_out) * rowh
    vals = [v for row in rows_out for v in row[1:] if v]
    lo, hi = (min(vals), max(vals)) if vals else (1.0, 10.0)
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    b = max(b, a + 1)

    def x(v: float) -> float:
        return left + w * (math.log10(v) - a) / (b - a)

    body = [f'<text x="10" y="18" font-weight="bold">{esc(store)}: 1-task cycle latency p50–p99 (bar), max (|), '
            f'hand-off p50 (◆); log scale</text>']
    for d in range(a, b + 1):
        xx = x(10.0 ** d)
        body.append(f'<line x1="{xx:.1f}" y1="30" x2="{xx:.1f}" y2="{height - 30}" stroke="#ddd"/>')
        body.append(f'<text x="{xx:.1f}" y="{height - 15}" text-anchor="middle">{esc(fmt_us(10.0 ** d))}</text>')
    for i, (name, p50, p99, mx, ho) in enumerate(rows_out):
        y = 40 + i * rowh
        colour = BATON if name.startswith("baton") else PEER
        body.append(f'<text x="{left - 8}" y="{y + 10}" text-anchor="end" fill="{colour}">{esc(name)}</text>')
        if p50 and p99:
            body.append(f'<rect x="{x(p50):.1f}" y="{y + 2}" width="{max(1.0, x(p99) - x(p50)):.1f}" height="10" '
                        f'fill="{colour}" opacity="0.6"/>')
            body.append(f'<line x1="{x(p50):.1f}" y1="{y}" x2="{x(p50):.1f}" y2="{y + 14}" stroke="{colour}" '
                        f'stroke-width="2"/>')
        if mx:
            body.append(f'<line x1="{x(mx):.1f}" y1="{y + 1}" x2="{x(mx):.1f}" y2="{y + 13}" stroke="{colour}"/>')
        if ho:
            body.append(f'<path d="M{x(ho):.1f},{y + 1} l5,6 l-5,6 l-5,-6 z" fill="none" stroke="{colour}"/>')
    return svg(left + w + 40, height, body)


def report(out: Path) -> List[Path]:
    rows = read_rounds(out / "rounds.jsonl")
    written = [out / "summary.md", out / "cycles.svg"]
    (out / "summary.md").write_text(summary_md(rows))
    (out / "cycles.svg").write_text(cycles_svg(rows))
    for store in sorted({r["store"] for r in rows}):
        p = out / f"latency-{store}.svg"
        p.write_text(latency_svg(rows, store))
        written.append(p)
    return written


def main(argv: Optional[List[str]] = None) -> int:
    global SIDE_CPUS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--peers", required=True)
    r.add_argument("--cli", required=True)
    r.add_argument("--python", default=sys.executable)
    r.add_argument("--redis", default="")
    r.add_argument("--redlock", default="")
    r.add_argument("--etcd", default="")
    r.add_argument("--zk", default="")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--duration", type=float, default=3.0)
    r.add_argument("--iterations", type=int, default=10_000)
    r.add_argument("--handoff-max", type=int, default=100)
    r.add_argument("--sides", default="rust")
    r.add_argument("--busy", action="store_true")
    r.add_argument("--pin", default="", choices=["", "same", "split"])
    r.add_argument("--side-cpus", default="")
    r.add_argument("--cpu", action="store_true")
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "run":
        SIDE_CPUS = a.side_cpus if a.pin else ""
        Runner(a).run()
    else:
        for f in report(Path(a.out)):
            print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
