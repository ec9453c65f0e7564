#!/usr/bin/env python3
"""The rounds of `benches/peers/bench-peers` (``run``) and their report (``report``).

  run.py run --out DIR --peers a,b --cli PATH --redis H:P --redlock H:P,… --etcd H:P --zk H:P
             [--rounds N] [--duration S] [--iterations N] [--handoff-max K] [--sides rust,python,node]
  run.py report --out DIR

``run`` appends one JSON line per side per round to DIR/rounds.jsonl; ``report`` (report.py)
reads it and writes DIR/summary.md and DIR/*.svg; ``--cpu`` samples CPU time (cpu.py). Only
the standard library. Each peer is a file benches/peers/peers.d/NAME.sh (see
benches/peers/bench-peers); `floor` is built in: redis-benchmark replaying the exact scripts
of a baton cycle.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu import CpuSampler, cpu_per_op, listening_pids  # noqa: E402
from report import report  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
PEERS_DIR = ROOT / "benches" / "peers" / "peers.d"
SCENARIOS = ("one", "many", "handoff")
RUN_TIMEOUT = 600  # seconds, any single side of a round


# ---------------------------------------------------------------- peers

def peer_meta(name: str) -> Dict[str, str]:
    """PEER_* variables of benches/peers/peers.d/NAME.sh."""
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


# The servers whose CPU time `--cpu` reads for the side being run (none: `--cpu` is off), and the
# sampler of the last side run.
CPU_SERVERS: Optional[List[int]] = None
LAST_SAMPLER: Optional[CpuSampler] = None



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

