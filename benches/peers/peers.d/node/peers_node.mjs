// The Node sides of `benches/peers/bench-peers`: node-redlock 4 (over ioredis, one node or
// Redlock over several) and baton's Node binding, timed in the three scenarios of
// `baton bench` and printed as one JSON object, the shape every side of the bench prints:
//
//   node peers_node.mjs --side node-redlock|baton --modules DIR --target URL_OR_ENDPOINTS
//       [--duration-ms MS] [--iterations N] [--handoff-max K]
//
// node-redlock: --modules is the folder whose node_modules hold redlock and ioredis, and
// --target a comma-separated host:port list. baton: --modules is bindings-node (built),
// --target a store URL.

import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i < 0 ? dflt : argv[i + 1];
};
const side = opt('--side');
const modules = opt('--modules');
const target = opt('--target');
const durationMs = Number(opt('--duration-ms', '3000'));
const iterations = Number(opt('--iterations', '10000'));
const handoffMax = Number(opt('--handoff-max', '100'));
const MANY = 64;
const SETTLE_MS = 10; // the holder lets the waiter park before releasing, as `baton bench` does
const TTL = 30_000; // node-redlock's lease, as baton's watchdog lease

/** `t0` (performance.now() at the timed part's start) also gives its wall-clock window, for `bench-peers --cpu`. */
function summary(samples, t0, rate) {
  const s = Float64Array.from(samples).sort();
  const q = (p) => (s.length ? s[Math.floor(p * (s.length - 1))] : 0);
  const elapsedMs = performance.now() - t0;
  const unix = (t) => (performance.timeOrigin + t) / 1000;
  return {
    ops: s.length,
    ops_per_sec: rate && elapsedMs ? (s.length / elapsedMs) * 1000 : null,
    p50_us: q(0.5),
    p99_us: q(0.99),
    max_us: q(1),
    t0_unix: unix(t0),
    t1_unix: unix(t0 + elapsedMs),
  };
}

/** `tasks` loops at once, a name each, until `iterations` cycles in all or the duration. */
async function uncontended(makeCycle, tasks) {
  const cycles = Array.from({ length: tasks }, (_, i) => makeCycle(`bench/peer-node/${tasks}-${Date.now()}/${i}`));
  for (const c of cycles) await c(); // warm-up: connections, scripts
  let left = iterations;
  const t0 = performance.now();
  const until = t0 + durationMs;
  const all = await Promise.all(
    cycles.map(async (cycle) => {
      const s = [];
      while (left-- > 0 && performance.now() < until) {
        const t = performance.now();
        await cycle();
        s.push((performance.now() - t) * 1000);
      }
      return s;
    }),
  );
  return summary(all.flat(), t0, true);
}

/** Two handles on one name: from the holder's release call to the waiter's grant. */
async function handoff(take, give, most) {
  const name = `bench/peer-node/handoff-${Date.now()}`;
  let held = await take(name, 0);
  let turn = 1;
  const samples = [];
  const t0 = performance.now();
  const until = t0 + durationMs;
  while (samples.length < most && performance.now() < until) {
    let at = 0;
    const granted = take(name, turn).then((g) => ((at = performance.now()), g));
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const start = performance.now();
    await give(held);
    held = await granted;
    samples.push((at - start) * 1000);
    turn = 1 - turn;
  }
  const s = summary(samples, t0, false);
  await give(held);
  return s;
}

async function nodeRedlock() {
  const require = createRequire(join(modules, 'package.json'));
  const Redlock = require('redlock');
  const Redis = require('ioredis');
  const clients = target.split(',').map((ep) => {
    const [host, port] = ep.split(':');
    return new Redis({ host, port: Number(port) });
  });
  // Its defaults: retryCount 10, retryDelay 200 ms, retryJitter 200 ms.
  const redlock = new Redlock(clients);
  try {
    const make = (name) => async () => (await redlock.lock(name, TTL)).unlock();
    return {
      one: await uncontended(make, 1),
      many: await uncontended(make, MANY),
      handoff: await handoff((name) => redlock.lock(name, TTL), (l) => l.unlock(), handoffMax),
    };
  } finally {
    for (const c of clients) c.disconnect();
  }
}

async function batonNode() {
  const { connect } = await import(pathToFileURL(join(modules, 'dist', 'index.js')).href);
  const client = await connect(target);
  const handles = new Map();
  const handle = (name, i) => {
    const k = `${name}#${i}`;
    if (!handles.has(k)) handles.set(k, client.lock(name));
    return handles.get(k);
  };
  try {
    const make = (name) => {
      const lock = client.lock(name);
      return async () => (await lock.acquire()).release();
    };
    return {
      one: await uncontended(make, 1),
      many: await uncontended(make, MANY),
      handoff: await handoff((name, i) => handle(name, i).acquire({ timeoutMs: 30_000 }), (g) => g.release(), iterations),
    };
  } finally {
    await client.close();
  }
}

const scenarios = side === 'baton' ? await batonNode() : await nodeRedlock();
console.log(JSON.stringify({ scenarios }));
