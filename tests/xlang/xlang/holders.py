"""How the driver starts a holder of each language and client (command lines only).

The tools come from the environment the suite (scripts/suites/80-xlang.sh) prepares:

    BATON_CLI              the `baton` binary (Rust: `baton run NAME -- CMD`)
    BATON_XLANG_PYTHON     a venv's python with the wheel `baton-lock` and redis-py installed
    BATON_XLANG_NODE_DIR   a folder with `baton-lock` (from the tarball), redlock and ioredis
                           installed, and holders/node/*.{mjs,cjs} copied in
    BATON_XLANG_GO         the Go holder (holders/go: redsync, concurrency.Mutex)
    BATON_XLANG_JAVA_CP    the Redisson holder's classpath (holders/java/redisson)
    BATON_XLANG_JAVA_BATON_CP  the JVM baton holder's classpath (holders/java/baton, against
                           the installed jar dev.baton:baton)
    BATON_XLANG_CURATOR_CP the Curator holder's classpath (holders/java/curator, against
                           tests/curator's dependencies)
    ETCDCTL                etcdctl (default: from PATH)
    BATON_XLANG_WASM_PKG   the browser holder's wasm package (default: wasm/pkg); Chromium
                           from CHROMIUM (default: /usr/bin/chromium)
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .history import load, record

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOLDERS = os.path.join(HERE, "holders")
RUN_TIMEOUT_S = 150  # one holder process, all its rounds


@dataclass
class Holder:
    """One holder: `lang` and `via` (its client), `kind` (lock, fair, read, write, permit)."""

    id: str
    lang: str
    via: str = "baton"
    kind: str = "lock"
    extra: Dict[str, str] = field(default_factory=dict)


def env_tool(name: str) -> str:
    v = os.environ.get(name)
    if not v:
        raise SystemExit(f"xlang: {name} is not set (scripts/suites/80-xlang.sh sets it)")
    return v


def args(h: Holder, url: str, name: str, history: str, n: int, hold_ms: int) -> List[str]:
    kv = {"url": url, "name": name, "kind": h.kind, "id": h.id, "n": n, "hold_ms": hold_ms,
          "history": history, "via": h.via, "lang": h.lang, **h.extra}
    return [f"{k}={v}" for k, v in kv.items()]


def command(h: Holder, url: str, name: str, history: str, n: int, hold_ms: int) -> List[str]:
    a = args(h, url, name, history, n, hold_ms)
    if h.lang == "python":
        return [env_tool("BATON_XLANG_PYTHON"), os.path.join(HOLDERS, "py_holder.py"), *a]
    if h.lang == "node":
        node_dir = env_tool("BATON_XLANG_NODE_DIR")
        entry = "holder.cjs" if h.extra.get("module") == "cjs" else "holder.mjs"
        return ["node", os.path.join(node_dir, entry), *a]
    if h.lang == "browser":
        return ["node", os.path.join(HOLDERS, "browser", "holder.mjs"), *a]
    if h.lang == "go":
        return [env_tool("BATON_XLANG_GO"), *a]
    if h.lang == "java" and h.via == "curator":
        return ["java", "-cp", env_tool("BATON_XLANG_CURATOR_CP"), "CuratorHolder", *a]
    if h.lang == "java" and h.via == "baton":
        return ["java", "-cp", env_tool("BATON_XLANG_JAVA_BATON_CP"), "BatonHolder", *a]
    if h.lang == "java":
        return ["java", "-cp", env_tool("BATON_XLANG_JAVA_CP"), "RedissonHolder", *a]
    raise SystemExit(f"xlang: no holder for {h.lang}")


def cli_round(h: Holder, url: str, name: str, history: str, hold_ms: int) -> List[str]:
    """One hold through a lock-running CLI: `baton run` or `etcdctl lock`, the stamp inside."""
    stamp = [sys.executable, os.path.join(HOLDERS, "stamp.py"), f"history={history}", f"id={h.id}",
             f"lang={h.lang}", f"via={h.via}", f"hold_ms={hold_ms}"]
    if h.via == "baton-cli":
        return [env_tool("BATON_CLI"), "--url", url, "run", name, "--", *stamp]
    if h.via == "etcdctl":
        endpoints = url.split("://", 1)[1].split("?", 1)[0]
        return [os.environ.get("ETCDCTL", "etcdctl"), f"--endpoints={endpoints}", "lock", name, *stamp]
    raise SystemExit(f"xlang: no CLI round for {h.via}")


class Running:
    """Holders running side by side; `wait` collects every failure."""

    def __init__(self) -> None:
        self.failures: List[str] = []
        self._threads: List[threading.Thread] = []
        self._lock = threading.Lock()
        self._processes = 0  # holders that connect once and record "ready"
        self._go = threading.Event()

    def start(self, h: Holder, url: str, name: str, history: str, n: int, hold_ms: int) -> None:
        if h.via in ("baton-cli", "etcdctl"):
            target = self._cli_rounds
        else:
            target = self._process
            self._processes += 1
        t = threading.Thread(target=target, args=(h, url, name, history, n, hold_ms), daemon=True)
        t.start()
        self._threads.append(t)

    def _process(self, h: Holder, url: str, name: str, history: str, n: int, hold_ms: int) -> None:
        self._run(h, command(h, url, name, history, n, hold_ms))

    def go(self, history: str, timeout: float = 120.0) -> None:
        """Once every holder process has connected ("ready"; JVMs take seconds), lets all
        of them start: the go file for the processes, an event for the CLI rounds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.failures:
            ready = {e["id"] for e in load(history) if e["ev"] == "ready"}
            if len(ready) >= self._processes:
                break
            time.sleep(0.05)
        open(history + ".go", "w").close()
        self._go.set()

    def _cli_rounds(self, h: Holder, url: str, name: str, history: str, n: int, hold_ms: int) -> None:
        self._go.wait(RUN_TIMEOUT_S)
        for _ in range(n):
            record(history, ev="ask", id=h.id, lang=h.lang, via=h.via, mode="lock")
            if not self._run(h, cli_round(h, url, name, history, hold_ms)):
                return

    def _run(self, h: Holder, cmd: List[str]) -> bool:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._fail(f"{h.id} ({h.lang}/{h.via}) still running after {RUN_TIMEOUT_S}s")
            return False
        if p.returncode != 0:
            tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
            self._fail(f"{h.id} ({h.lang}/{h.via}) exited {p.returncode}: {' | '.join(tail)}")
            return False
        return True

    def _fail(self, msg: str) -> None:
        with self._lock:
            self.failures.append(msg)

    def wait(self, timeout: Optional[float] = None) -> List[str]:
        for t in self._threads:
            t.join(timeout if timeout is not None else RUN_TIMEOUT_S * 3)
            if t.is_alive():
                self._fail("a holder thread did not finish")
        return self.failures
