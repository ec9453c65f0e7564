"""Unit tests of the peer benchmark's report (report.py: summary table, SVG plots), its CPU
sampler (cpu.py) and its MONITOR parsing (run.py), on a recorded sample:
`python3 -m unittest discover -s benches/peers/lib`."""

import shutil
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cpu  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402

SAMPLE = HERE / "testdata" / "bench-peers-rounds.jsonl"
SVG = "{http://www.w3.org/2000/svg}"


class Report(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-peers-test-"))
        shutil.copy(SAMPLE, self.dir / "rounds.jsonl")
        self.written = report.report(self.dir)

    def tearDown(self) -> None:
        shutil.rmtree(self.dir)

    def test_writes_summary_and_one_latency_plot_per_store(self) -> None:
        names = sorted(p.name for p in self.written)
        self.assertEqual(names, ["cycles.svg", "latency-etcd.svg", "latency-redis.svg", "summary.md"])

    def test_summary_medians_and_paired_ratios(self) -> None:
        md = (self.dir / "summary.md").read_text()
        # redsync rounds: 8000/4000, 9000/6000, 7000/7000 → ratios 2.0, 1.5, 1.0.
        row = next(x for x in md.splitlines() if x.startswith("| rust vs redsync"))
        self.assertIn("8 000 / 6 000", row)
        self.assertIn("**×1.50** (1.00–2.00)", row)
        self.assertIn("400 µs / 130 ms | **325× lower** (325–325)", row)
        etcd = next(x for x in md.splitlines() if x.startswith("| rust vs etcd"))
        self.assertIn("**×0.80** (0.80–0.80)", etcd)
        self.assertIn("3 round(s)", md)
        self.assertIn("load average (1 min) 4.0–6.0", md)

    def test_summary_names_the_placement(self) -> None:
        md = (self.dir / "summary.md").read_text()
        self.assertNotIn("pinned", md)  # the sample's rounds carry no "pin"
        rows = report.read_rounds(self.dir / "rounds.jsonl")
        for r in rows:
            r["pin"] = "split"
        self.assertIn("servers pinned to CPU 0, clients to the others (--pin split)", report.summary_md(rows))
        rows[0]["pin"] = "same"
        self.assertIn("pinned: same, split", report.summary_md(rows))

    def test_pinned_sides_run_under_taskset(self) -> None:
        saved = run.SIDE_CPUS
        try:
            run.SIDE_CPUS = ""
            self.assertEqual(run.pinned(["baton", "bench"]), ["baton", "bench"])
            run.SIDE_CPUS = "1-3"
            self.assertEqual(run.pinned(["baton", "bench"]), ["taskset", "-c", "1-3", "baton", "bench"])
        finally:
            run.SIDE_CPUS = saved

    def test_floor_table_and_failures(self) -> None:
        md = (self.dir / "summary.md").read_text()
        floor = next(x for x in md.splitlines() if x.startswith("| simple |"))
        self.assertIn("120 µs | 100 µs (55 µs + 45 µs) | **×1.20**", floor)
        self.assertIn("1 side(s) failed: round 3 redisson peer: java exited 1: boom", md)

    def test_plots_are_svg_with_a_bar_per_side(self) -> None:
        root = ET.parse(self.dir / "cycles.svg").getroot()
        self.assertEqual(root.tag, f"{SVG}svg")
        bars = [r for r in root.iter(f"{SVG}rect") if r.get("fill") in (report.BATON, report.PEER)]
        self.assertEqual(len(bars), 2 * 2 * 2)  # 2 peers × (baton, peer) × (1 task, 64 tasks)
        widths = [float(r.get("width", 0)) for r in bars]
        self.assertTrue(all(w > 0 for w in widths))
        texts = " ".join(t.text or "" for t in ET.parse(self.dir / "latency-redis.svg").getroot().iter(f"{SVG}text"))
        self.assertIn("baton (rust, scheme=simple)", texts)
        self.assertIn("redsync 4.18", texts)


class Cpu(unittest.TestCase):
    def test_window_interpolates_between_samples(self) -> None:
        s = cpu.CpuSampler(0, [])
        tck = cpu.CLK_TCK
        # (time, machine, servers, side) in clock ticks: one second of each, at 2, 1 and 0.5 CPUs.
        s.samples = [(10.0, 0, 0, 0), (11.0, 2 * tck, tck, tck // 2), (12.0, 4 * tck, 2 * tck, tck)]
        m, sv, sd = s.window(10.5, 11.5) or (0, 0, 0)
        self.assertAlmostEqual(m, 2.0)
        self.assertAlmostEqual(sv, 1.0)
        self.assertAlmostEqual(sd, 0.5)
        self.assertIsNone(s.window(9.0, 11.0))  # before the first sample: unknown, not zero
        per = cpu.cpu_per_op(s, {"ops": 1000, "t0_unix": 10.0, "t1_unix": 12.0})
        self.assertEqual(per, {"client_us": 1000.0, "servers_us": 2000.0, "machine_us": 4000.0, "wall_us": 2000.0})

    def test_a_side_that_burns_cpu_is_measured(self) -> None:
        # The side spins on its own CPU time (not the wall clock) for 0.6 s and reports that window;
        # whatever the load, its process's CPU time over the window is about 0.6 s.
        burn = ("import json, time; t0 = time.time(); c = time.process_time()\n"
                "while time.process_time() - c < 0.6: pass\n"
                "print(json.dumps({'scenarios': {'one': {'ops': 600, 't0_unix': t0, 't1_unix': time.time()}}}))")
        saved = run.CPU_SERVERS
        try:
            run.CPU_SERVERS = []
            out = run.run_json([sys.executable, "-c", burn])
            per = cpu.cpu_per_op(run.LAST_SAMPLER, out["scenarios"]["one"])
        finally:
            run.CPU_SERVERS = saved
        assert per is not None
        # 1 000 µs of CPU per "op"; the ticks are 10 ms and the ends interpolated: ±10 %.
        self.assertGreater(per["client_us"], 900)
        self.assertLess(per["client_us"], 1100)
        self.assertGreaterEqual(per["machine_us"], per["client_us"] * 0.9)
        self.assertEqual(per["servers_us"], 0)

    def test_summary_has_a_cpu_table_only_with_cpu_figures(self) -> None:
        rows = report.read_rounds(SAMPLE)
        self.assertNotIn("CPU time per cycle", report.summary_md(rows))
        for r in rows:
            for k, scen in r.get("scenarios", {}).items():
                base = 100.0 if r["side"].startswith("baton-") else 150.0
                scen["cpu"] = {"client_us": base, "servers_us": 2 * base, "machine_us": 3 * base, "wall_us": base}
        md = report.summary_md(rows)
        self.assertIn("CPU time per cycle", md)
        row = next(x for x in md.splitlines() if x.startswith("| rust vs redsync") and "100 / 150" in x)
        self.assertIn("| 100 / 150 | 200 / 300 | 300 / 450 | 100 / 150 |", row)


class Monitor(unittest.TestCase):
    LINES = [
        'OK',
        '1795629411.096131 [0 127.0.0.1:55640] "EVALSHA" "bac" "3" "bench/uncontended-1/0" '
        '"tok:{bench/uncontended-1/0}" "{bench/uncontended-1/0}:baton" "h:1" "30000"',
        '1795629411.096173 [0 lua] "GET" "bench/uncontended-1/0"',
        '1795629411.096594 [0 127.0.0.1:55640] "EVALSHA" "4ca" "2" "bench/uncontended-1/0" '
        '"{bench/uncontended-1/0}:baton" "h:1" "1" "chan:{bench/uncontended-1/0}"',
        '1795629411.098469 [0 127.0.0.1:55640] "EVALSHA" "bac" "3" "bench/uncontended-64/0" "a" "b" "h:2" "30000"',
    ]

    def test_last_cycle_skips_script_commands_and_other_names(self) -> None:
        acq, rel = run.last_cycle(self.LINES, "uncontended-1/")
        self.assertEqual(acq[:4], ["EVALSHA", "bac", "3", "bench/uncontended-1/0"])
        self.assertEqual(rel[-1], "chan:{bench/uncontended-1/0}")
        self.assertIsNone(run.monitor_args(self.LINES[2]))

    def test_escapes_are_decoded(self) -> None:
        args = run.monitor_args('1.5 [0 127.0.0.1:1] "SET" "a\\"b" "x\\\\y"')
        self.assertEqual(args, ["SET", 'a"b', "x\\y"])


if __name__ == "__main__":
    unittest.main()
