// Benchmarks of the Node binding, the scenarios of `baton bench` (cli/src/cmd/bench.rs)
// measured from JavaScript, plus the binding's per-call overhead against the Rust numbers.
//
//   node bench/bench.mjs [--iterations N] [--duration-ms MS] [--json] [URL…]
//
// Default URLs: memory:// and a fresh SQLite file. With target/release/baton built (or
// BATON_CLI pointing at a `baton` binary), the same scenarios also run through it for a
// side-by-side comparison. Run `npm run build` first.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { _noop, _noopSettled, connect } from 'baton-lock';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const iterations = Number(flag('--iterations', '10000'));
const durationMs = Number(flag('--duration-ms', '3000'));
const json = args.includes('--json') && args.splice(args.indexOf('--json'), 1);
const urls = args.length ? args : ['memory://', `sqlite://${join(mkdtempSync(join(tmpdir(), 'baton-bench-')), 'bench.db')}`];

const MANY = 64;
const SETTLE_MS = 1;

/** Latency samples (µs) → summary. */
function summary(name, tasks, samples, elapsedMs, rate = true) {
  const s = Float64Array.from(samples).sort();
  const q = (p) => (s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN);
  return {
    name,
    tasks,
    ops: s.length,
    ops_per_sec: rate ? (s.length / elapsedMs) * 1000 : null,
    p50_us: q(0.5),
    p99_us: q(0.99),
    max_us: s.length ? s[s.length - 1] : NaN,
  };
}

/** Runs `op` in a loop until the shared budget (count, time) is spent; returns µs samples. */
async function loop(budget, op) {
  const samples = [];
  while (budget.left > 0 && performance.now() < budget.until) {
    budget.left--;
    const t0 = performance.now();
    await op();
    samples.push((performance.now() - t0) * 1000);
  }
  return samples;
}

const budget = () => ({ left: iterations, until: performance.now() + durationMs });

async function uncontended(client, tasks) {
  const b = budget();
  const t0 = performance.now();
  const all = await Promise.all(
    Array.from({ length: tasks }, (_, i) => {
      const lock = client.lock(`bench/node/${tasks}/${i}`);
      return loop(b, async () => (await lock.acquire()).release());
    }),
  );
  return summary(`acquire+release, ${tasks} ${tasks === 1 ? 'task' : 'tasks, a name each'}`, tasks, all.flat(), performance.now() - t0);
}

async function handoff(client) {
  const holder = client.lock('bench/node/handoff');
  const waiter = client.lock('bench/node/handoff');
  const b = budget();
  const samples = [];
  const t0 = performance.now();
  while (b.left-- > 0 && performance.now() < b.until) {
    const held = await holder.acquire();
    const granted = waiter.acquire();
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const start = performance.now();
    await held.release();
    const g = await granted;
    samples.push((performance.now() - start) * 1000);
    await g.release();
  }
  return summary('release -> waiter granted, 2 handles on one name', 2, samples, performance.now() - t0, false);
}

/**
 * node-redlock (`redlock` on npm, over `ioredis`) on the same Redis server, with its
 * defaults (retryCount 10, retryDelay 200 ms, retryJitter 200 ms): the yardstick of the
 * issue. Null when the packages are not installed (they are devDependencies).
 */
async function redlockScenarios(url, client) {
  let Redlock, Redis;
  try {
    ({ default: Redlock } = await import('redlock'));
    ({ default: Redis } = await import('ioredis'));
  } catch {
    return null;
  }
  const redis = new Redis(url.split('?')[0]);
  const redlock = new Redlock([redis]);
  const out = [];
  try {
    let b = budget();
    let t0 = performance.now();
    const s = await loop(b, async () => (await redlock.acquire(['bench/node/redlock/1'], 30_000)).release());
    out.push(summary('node-redlock acquire+release, 1 task', 1, s, performance.now() - t0));
    b = budget();
    t0 = performance.now();
    const samples = [];
    // Each hand-off waits for one of node-redlock's retries (~200 ms): a bounded sample.
    while (b.left-- > 0 && performance.now() < b.until && samples.length < 100) {
      const held = await redlock.acquire(['bench/node/redlock/handoff'], 30_000);
      const granted = redlock.acquire(['bench/node/redlock/handoff'], 30_000);
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      const start = performance.now();
      await held.release();
      const g = await granted.then((l) => ((samples.push((performance.now() - start) * 1000)), l));
      await g.release();
    }
    out.push(summary('node-redlock release -> waiter granted', 2, samples, performance.now() - t0, false));
    // The same ttl handle with the JavaScript-thread link off (src/fast/here.rs): the calls on
    // napi's worker, as before that link existed. The variable is read at connect.
    process.env.BATON_NODE_DRIVEN_LINK = '0';
    const off = await connect(url).finally(() => delete process.env.BATON_NODE_DRIVEN_LINK);
    try {
      out.push(...(await paired(client, redlock, off)));
    } finally {
      await off.close();
    }
    // Throughput: MANY tasks on a name each, as baton's second row (no lock contended).
    b = budget();
    t0 = performance.now();
    const many = await Promise.all(
      Array.from({ length: MANY }, (_, i) =>
        loop(b, async () => (await redlock.acquire([`bench/node/redlock/${MANY}/${i}`], 30_000)).release()),
      ),
    );
    out.push(summary(`node-redlock acquire+release, ${MANY} tasks`, MANY, many.flat(), performance.now() - t0));
  } finally {
    redis.disconnect();
  }
  return out;
}

/**
 * The same lock semantics on both sides: a baton handle with a `ttlMs` lease (no watchdog)
 * against node-redlock's lock of the same length, taking turns in blocks of `BLOCK`
 * acquire+release cycles (the side going first rotating each round) so that both see the
 * same machine load; a default (watchdog) handle takes its turn too. Blocks, not single
 * cycles: baton's busy-poll window (`BATON_NODE_BUSY_POLL_US`, 200 µs) would otherwise
 * still spin through the start of node-redlock's turn and slow it. The rate of each is
 * 1 / its mean time.
 */
async function paired(client, redlock, off) {
  const ttl = 30_000;
  const BLOCK = 100;
  const lock = client.lock('bench/node/paired-ttl', { ttlMs: ttl });
  const watched = client.lock('bench/node/paired-watchdog');
  const offLock = off.lock('bench/node/paired-off', { ttlMs: ttl });
  const sides = [
    { name: `baton acquire+release, ttlMs ${ttl} (paired)`, op: async () => (await lock.acquire()).release(), s: [] },
    { name: 'baton acquire+release, watchdog (paired)', op: async () => (await watched.acquire()).release(), s: [] },
    {
      name: `node-redlock acquire+release, ${ttl} ms (paired)`,
      op: async () => (await redlock.acquire(['bench/node/redlock/paired'], ttl)).release(),
      s: [],
    },
    {
      name: `baton acquire+release, ttlMs ${ttl}, link off (paired)`,
      op: async () => (await offLock.acquire()).release(),
      s: [],
    },
  ];
  for (const side of sides) await side.op(); // warm-up: keys, scripts, connections
  const b = budget();
  for (let round = 0; b.left > 0 && performance.now() < b.until; round++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(round + k) % sides.length];
      for (let i = 0; i < BLOCK && b.left-- > 0; i++) {
        const t = performance.now();
        await side.op();
        side.s.push((performance.now() - t) * 1000);
      }
    }
  }
  // Busy time of each side alone: its rate is what it would do with the loop to itself.
  return sides.map((side) => summary(side.name, 1, side.s, side.s.reduce((a, x) => a + x, 0) / 1000));
}

async function bridge(name, call) {
  const b = budget();
  const t0 = performance.now();
  const s = await loop(b, call);
  return summary(name, 1, s, performance.now() - t0);
}

/** `baton bench --json` for comparison, when the CLI is built. */
function rust(url) {
  const cli = process.env.BATON_CLI ?? join(here, '..', '..', 'target', 'release', 'baton');
  if (!existsSync(cli)) return null;
  const args = ['bench', '--url', url, '--json', '--iterations', String(iterations), '--duration', `${durationMs}ms`];
  const out = execFileSync(cli, args, {
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

const fmt = (us) => (Number.isNaN(us) ? '-' : us >= 1000 ? `${(us / 1000).toFixed(2)}ms` : `${us.toFixed(1)}µs`);
const reports = [];
// napi's own async fn (a threadsafe function and two tasks per call) and `settle` (one
// shared threadsafe function), which acquire and release use.
const b0 = await bridge('empty native async call (napi async fn)', _noop);
const b1 = await bridge('empty native async call (acquire/release bridge)', _noopSettled);
for (const url of urls) {
  const client = await connect(url);
  const scenarios = [await uncontended(client, 1), await uncontended(client, MANY), await handoff(client)];
  const redlock = url.startsWith('redis://') ? await redlockScenarios(url, client) : null;
  await client.close();
  const cmp = rust(url.startsWith('sqlite://') ? url.replace(/\.db$/, '-rust.db') : url);
  reports.push({ url, scenarios, rust: cmp?.scenarios ?? null, redlock });
}

if (json) {
  console.log(JSON.stringify({ node: process.version, cpus: cpus().length, iterations, durationMs, bridge: b0, bridgeSettled: b1, reports }, null, 2));
} else {
  console.log(`baton (Node ${process.version}, ${cpus().length} cpus), at most ${iterations} ops or ${durationMs} ms per scenario`);
  for (const b of [b0, b1]) {
    console.log(`  ${b.name}: p50 ${fmt(b.p50_us)}, p99 ${fmt(b.p99_us)}, ${Math.round(b.ops_per_sec)} calls/s`);
  }
  console.log('');
  for (const r of reports) {
    console.log(`on ${r.url.replace(/\/\/.*bench\.db$/, '//…/bench.db')}`);
    console.log('  scenario                                          tasks  ops    ops/s    p50       p99       max       rust ops/s  rust p50');
    for (const [i, s] of r.scenarios.entries()) {
      const rs = r.rust?.[i];
      const cols = [
        s.name.padEnd(50),
        String(s.tasks).padEnd(6),
        String(s.ops).padEnd(6),
        (s.ops_per_sec === null ? '-' : String(Math.round(s.ops_per_sec))).padEnd(8),
        fmt(s.p50_us).padEnd(9),
        fmt(s.p99_us).padEnd(9),
        fmt(s.max_us).padEnd(9),
        (rs ? (rs.ops_per_sec && i < 2 ? String(Math.round(rs.ops_per_sec)) : '-') : 'n/a').padEnd(11),
        rs ? fmt(rs.p50_us) : 'n/a',
      ];
      console.log(`  ${cols.join(' ')}`);
    }
    const [one] = r.scenarios;
    const rs = r.rust?.[0];
    if (rs) {
      // acquire + release are two calls: the difference of the p50s, halved, is what one
      // call costs in the binding on top of the same call from Rust.
      console.log(`  per-call overhead vs Rust (p50 of 1 task, halved): ${fmt((one.p50_us - rs.p50_us) / 2)}`);
    }
    if (r.redlock) {
      const [rl1, rlh, pb, , pr, poff, rlMany] = r.redlock;
      const ho = r.scenarios[2];
      for (const s of r.redlock) {
        console.log(`  ${s.name.padEnd(50)} ${String(s.tasks).padEnd(6)} ${String(s.ops).padEnd(6)} ${(s.ops_per_sec === null ? '-' : String(Math.round(s.ops_per_sec))).padEnd(8)} ${fmt(s.p50_us).padEnd(9)} ${fmt(s.p99_us).padEnd(9)} ${fmt(s.max_us)}`);
      }
      console.log(
        `  vs node-redlock (baton's row: a watchdog lease, not paired): acquire+release ${Math.round(one.ops_per_sec)} vs ${Math.round(rl1.ops_per_sec)} ops/s (x${(one.ops_per_sec / rl1.ops_per_sec).toFixed(2)}),` +
          ` hand-off p50 ${fmt(ho.p50_us)} vs ${fmt(rlh.p50_us)} (x${Math.round(rlh.p50_us / ho.p50_us)} lower)`,
      );
      const bMany = r.scenarios[1];
      console.log(
        `  ${MANY} tasks, a name each (throughput): ${Math.round(bMany.ops_per_sec)} vs ${Math.round(rlMany.ops_per_sec)} ops/s` +
          ` (x${(bMany.ops_per_sec / rlMany.ops_per_sec).toFixed(2)}), p50 ${fmt(bMany.p50_us)} vs ${fmt(rlMany.p50_us)}`,
      );
      console.log(
        `  paired, a ${pb.name.match(/ttlMs (\d+)/)[1]} ms ttl lease on both sides: ${Math.round(pb.ops_per_sec)} vs` +
          ` ${Math.round(pr.ops_per_sec)} ops/s (x${(pb.ops_per_sec / pr.ops_per_sec).toFixed(2)}),` +
          ` p50 ${fmt(pb.p50_us)} vs ${fmt(pr.p50_us)}; link off ${Math.round(poff.ops_per_sec)} ops/s` +
          ` (x${(poff.ops_per_sec / pr.ops_per_sec).toFixed(2)}), p50 ${fmt(poff.p50_us)}`,
      );
    } else if (r.url.startsWith('redis://')) {
      console.log('  (node-redlock comparison skipped: npm install redlock ioredis)');
    }
    console.log('');
  }
}
