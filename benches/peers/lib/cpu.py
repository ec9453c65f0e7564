"""CPU time of a benchmark side (`benches/peers/bench-peers --cpu`): a thread sampling /proc
for the side's process tree, the store's servers and the whole machine, and the µs per
operation of a scenario's wall-clock window. Linux only (/proc, `ss`)."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

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



def cpu_per_op(sampler: CpuSampler, scen: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """µs of CPU per operation of one scenario: the side's, the servers', the machine's."""
    w = sampler.window(scen.get("t0_unix") or 0.0, scen.get("t1_unix") or 0.0) if scen.get("ops") else None
    if not w:
        return None
    m, sv, sd = (1e6 * x / scen["ops"] for x in w)
    wall = 1e6 * (scen["t1_unix"] - scen["t0_unix"]) / scen["ops"]
    return {"client_us": round(sd, 1), "servers_us": round(sv, 1), "machine_us": round(m, 1), "wall_us": round(wall, 1)}

