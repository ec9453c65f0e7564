"""The report of `benches/peers/bench-peers`: DIR/rounds.jsonl → DIR/summary.md (the paired
medians and per-round ratios, the CPU and floor tables) and hand-written SVG plots."""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple


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

