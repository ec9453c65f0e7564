// A Node holder: takes one name `n` times and records every ask, grant and release in the
// shared history (one appended line per event, tests/xlang/xlang/history.py). holder.mjs
// loads `baton-lock` with `import`, holder.cjs with `require`; both call run().
//
//   node holder.mjs url=… name=… kind=lock|read|write|permit|fair id=node1 n=3 hold_ms=40 \
//       history=… [via=baton|node-redlock] [permits=2] [lease_ms=15000]
'use strict';
const fs = require('node:fs');

const WAIT_MS = 90_000; // one acquire's bound

function record(path, event) {
  const t = process.hrtime.bigint(); // uv_hrtime: CLOCK_MONOTONIC, as the other languages
  const line = JSON.stringify({ t: 0, ...event }).replace('"t":0', `"t":${t}`) + '\n';
  const fd = fs.openSync(path, 'a');
  try {
    fs.writeSync(fd, line);
  } finally {
    fs.closeSync(fd);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Records "ready", then waits (bounded) for the driver's go file: all holders start together.
async function barrier(path, event) {
  record(path, { ev: 'ready', ...event });
  const deadline = Date.now() + 120_000;
  while (!fs.existsSync(`${path}.go`)) {
    if (Date.now() > deadline) throw new Error(`no ${path}.go within 120 s`);
    await sleep(10);
  }
}

async function batonHolds(baton, a, kind) {
  const client = await baton.connect(a.url);
  const w = { timeoutMs: WAIT_MS };
  let acquire;
  if (kind === 'lock') acquire = () => client.lock(a.name).acquire(w);
  else if (kind === 'fair') acquire = () => client.fairLock(a.name).acquire(w);
  else if (kind === 'read') acquire = () => client.rwLock(a.name).read(w);
  else if (kind === 'write') acquire = () => client.rwLock(a.name).write(w);
  else if (kind === 'permit') acquire = () => client.semaphore(a.name, Number(a.permits)).acquire(w);
  else if (kind === 'pes') acquire = () => client.permitSemaphore(a.name, Number(a.permits)).acquire(w);
  else throw new Error(`unknown kind ${kind}`);
  return {
    async take() {
      const g = await acquire();
      return { release: () => g.release(), token: g.token === undefined ? null : Number(g.token), owner: g.owner ?? null };
    },
    close: () => client.close(),
  };
}

function nodeRedlock(a) {
  // node-redlock (npm `redlock`) over ioredis: one client per Redis URL, `?scheme=simple`'s
  // layout on one server, its Redlock quorum over the redlock:// nodes.
  const { default: Redlock } = require('redlock');
  const Redis = require('ioredis');
  const rest = a.url.split('://')[1];
  const hosts = rest.split('?')[0].replace(/\/.*$/, '').split(',');
  const clients = hosts.map((h) => new Redis(`redis://${h}`, { lazyConnect: false }));
  // Retries every 50 ms (+ up to 20 ms jitter): node-redlock polls, it does not listen.
  const redlock = new Redlock(clients, { retryCount: Math.ceil(WAIT_MS / 50), retryDelay: 50, retryJitter: 20 });
  // Its client errors and lost races arrive as 'error' events: an unheard one would throw.
  redlock.on('error', () => {});
  const lease = Number(a.lease_ms ?? 15000);
  return {
    async take() {
      const lock = await redlock.acquire([a.name], lease);
      return { release: () => lock.release(), token: null, owner: lock.value };
    },
    close: async () => {
      for (const c of clients) c.disconnect();
    },
  };
}

async function run(baton, argv) {
  const a = Object.fromEntries(argv.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)]));
  const n = Number(a.n ?? 3);
  const hold = Number(a.hold_ms ?? 40);
  const via = a.via ?? 'baton';
  const kind = a.kind ?? 'lock';
  const ev = { id: a.id, lang: a.lang ?? 'node', via, mode: { fair: 'lock', pes: 'permit' }[kind] ?? kind };
  const h = via === 'node-redlock' ? nodeRedlock(a) : await batonHolds(baton, a, kind);
  await barrier(a.history, ev);
  for (let i = 0; i < n; i++) {
    record(a.history, { ev: 'ask', ...ev });
    const g = await h.take();
    record(a.history, { ev: 'grant', token: g.token, owner: g.owner, ...ev });
    await sleep(hold);
    record(a.history, { ev: 'release', ...ev });
    await g.release();
  }
  await h.close();
}

module.exports = { run };
