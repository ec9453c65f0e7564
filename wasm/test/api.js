// The JavaScript API of the browser package, checked the way a page uses it: the Node
// package's names and behaviour (BatonError codes, AbortSignal, guard.signal, await using),
// on the store of ?url=. Results go to window.__result for run.mjs.
import init, { connect, fencedUpdate, BatonError, errorCodes, _raise, _panic } from '../pkg/baton_wasm.js';

const url = new URLSearchParams(location.search).get('url') ?? 'memory://api';
const run = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const name = (what) => `wasm-api/${run}/${what}`;
const out = document.getElementById('log');
const result = { passed: 0, failed: 0, failures: [] };

async function check(what, fn) {
  try {
    await fn();
    result.passed++;
    out.textContent += `ok   ${what}\n`;
  } catch (e) {
    result.failed++;
    result.failures.push(`${what}: ${e?.stack ?? e}`);
    out.textContent += `FAIL ${what}: ${e}\n`;
  }
}
function assert(ok, msg) {
  if (!ok) throw new Error(msg);
}
async function rejects(p, code) {
  try {
    await p;
  } catch (e) {
    assert(e instanceof BatonError, `not a BatonError: ${e}`);
    assert(e.code === code, `code ${e.code}, expected ${code}: ${e.message}`);
    return e;
  }
  throw new Error(`did not reject (expected ${code})`);
}
function throws(fn, code) {
  try {
    fn();
  } catch (e) {
    assert(e instanceof BatonError && e.code === code, `expected ${code}, got ${e}`);
    return;
  }
  throw new Error(`did not throw (expected ${code})`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

await init();
const client = await connect(url);

await check('lock: acquire, token is a bigint, busy for others, release', async () => {
  const lock = client.lock(name('l'));
  const g = await lock.acquire({ timeoutMs: 5000 });
  assert(typeof g.token === 'bigint', `token ${typeof g.token}`);
  assert((await client.lock(name('l')).tryAcquire()) === null, 'tryAcquire: null when busy');
  await rejects(client.lock(name('l')).acquire({ timeoutMs: 100 }), 'Timeout');
  await g.release();
  const next = await client.lock(name('l')).acquire();
  assert(next.token > g.token, 'tokens grow');
  await next.release();
  await rejects(next.release(), 'NotHeld');
});

await check('using(fn) and await using release', async () => {
  const lock = client.lock(name('u'), { ttlMs: 10_000 });
  const t = await lock.using(async (guard) => guard.token, { timeoutMs: 5000 });
  assert(typeof t === 'bigint', 'using returns the callback value');
  {
    await using guard = await lock.acquire();
    assert(!guard.released, 'held inside the scope');
  }
  const again = await lock.tryAcquire();
  assert(again !== null, 'released at the end of the await using scope');
  await again[Symbol.asyncDispose]();
});

await check('an AbortSignal cancels a wait; nothing stays held', async () => {
  const g = await client.lock(name('a')).acquire();
  const ctl = new AbortController();
  const waiting = client.lock(name('a')).acquire({ signal: ctl.signal });
  setTimeout(() => ctl.abort(new Error('stop')), 100);
  let reason;
  await waiting.catch((e) => (reason = e));
  assert(reason?.message === 'stop', `rejects with the signal's reason: ${reason}`);
  await g.release();
  const free = await client.lock(name('a')).tryAcquire();
  assert(free !== null, 'the aborted waiter holds nothing');
  await free.release();
  await client.lock(name('a')).acquire({ signal: AbortSignal.timeout(50) }).then((g) => g.release());
});

await check('guard.signal aborts when the lease is lost (ttl)', async () => {
  const g = await client.lock(name('ttl'), { ttlMs: 1000 }).acquire();
  const signal = g.signal;
  assert(signal instanceof AbortSignal && !signal.aborted, 'a live signal');
  const lost = new Promise((r) => signal.addEventListener('abort', r, { once: true }));
  await Promise.race([lost, sleep(15_000)]);
  assert(signal.aborted, 'aborted after the ttl');
  assert(signal.reason instanceof BatonError && signal.reason.code === 'LockLost', `${signal.reason}`);
  await rejects(g.release(), 'LockLost');
});

await check('fair lock, rw lock, semaphore, latch, inspect', async () => {
  const f = await client.fairLock(name('f')).acquire();
  await f.release();
  const rw = client.rwLock(name('rw'));
  const r = await rw.read();
  assert((await client.rwLock(name('rw')).tryRead()) !== null, 'reads share');
  assert((await client.rwLock(name('rw')).tryWrite()) === null, 'no write while read');
  await r.release();
  const sem = client.semaphore(name('s'), 3);
  const p = await sem.acquire({ count: 2 });
  assert((await sem.available()) === 1, 'one permit left');
  await p.release();
  const latch = client.countDownLatch(name('c'));
  assert(await latch.trySetCount(1), 'count set');
  const opened = latch.wait({ timeoutMs: 5000 });
  await latch.countDown();
  await opened;
  const g = await client.lock(name('i')).acquire();
  const info = await client.inspect(name('i'));
  assert(info.holders.length === 1 && info.lastToken === g.token, JSON.stringify(info, (_, v) => String(v)));
  await g.release();
});

await check("fence: a paused holder's late write is refused by the store", async () => {
  const other = await connect(url);
  try {
    const [sale, stock] = [name('fence-sale'), name('fence-stock')];
    const old = await client.lock(sale, { ttlMs: 1000 }).acquire({ timeoutMs: 5000 });
    assert((await client.fence().write(stock, '9', old.token)) === true, 'the holder writes');
    // `client` stops here (a long task, a frozen tab) until its lease is gone; `other` takes over.
    const next = await other.lock(sale).acquire({ timeoutMs: 20000 });
    assert(next.token > old.token, 'tokens grow');
    assert((await other.fence().write(stock, '8', next.token)) === true, 'the new holder writes');
    assert((await client.fence().write(stock, '7', old.token)) === false, 'the late write is refused');
    const got = await other.fence().read(stock);
    assert(got?.value === '8' && got?.token === next.token, `read ${got?.value} ${got?.token}`);
    assert((await other.fence().read(name('fence-absent'))) === null, 'nothing written: null');
    await next.release();
    await rejects(old.release(), 'LockLost');
    await rejects(other.fence().execute('UPDATE stock SET n = 1', next.token), 'Unsupported');
    const sql = fencedUpdate('UPDATE stock SET n = n - 1 WHERE item = ?', 7n);
    assert(sql === 'UPDATE stock SET n = n - 1, fence = 7 WHERE (item = ?) AND fence <= 7', sql);
    throws(() => fencedUpdate('DELETE FROM stock', 1n), 'InvalidArgument');
  } finally {
    await other.close();
  }
});

await check('every error kind of the core reaches JavaScript as its BatonError code', async () => {
  assert(errorCodes.length === 9 && errorCodes.includes('LockLost'), `${errorCodes}`);
  for (const code of errorCodes) await rejects(_raise(code), code);
});

await check('bad input is a BatonError, never a trap', async () => {
  await rejects(connect('nope://x'), 'InvalidUrl');
  await rejects(connect(42), 'InvalidArgument');
  await rejects(client.lock('').acquire(), 'InvalidArgument');
  await rejects(client.lock('x'.repeat(100_000)).tryAcquire(), 'InvalidArgument');
  await rejects(client.lock(name('z'), { ttlMs: 0 }).tryAcquire(), 'InvalidArgument');
  await rejects(client.lock(name('n'), { ttlMs: -5 }).tryAcquire(), 'InvalidArgument');
  await rejects(client.lock(name('t')).acquire({ timeoutMs: -1 }), 'InvalidArgument');
  await rejects(client.lock(name('t')).acquire({ timeoutMs: 'soon' }), 'InvalidArgument');
  throws(() => client.lock(7), 'InvalidArgument');
  await rejects(client.semaphore(name('s0'), 0).acquire(), 'InvalidArgument');
  await rejects(client.lock(name('t')).acquire({ signal: 'no' }), 'InvalidArgument');
});

await check('close: later calls reject with Closed', async () => {
  const c = await connect(url);
  await c.close();
  assert(c.closed, 'closed');
  await rejects(c.lock(name('closed')).tryAcquire(), 'Closed');
});

// Last: a panic breaks the instance (wasm32 has no unwinding), so nothing may follow it.
await check('a Rust panic becomes a Backend BatonError, and later calls reject too', async () => {
  const e = await rejects(_panic(), 'Backend');
  assert(e.message.includes('deliberate panic'), e.message);
  await rejects(client.lock(name('after-panic')).tryAcquire(), 'Backend');
});

window.__result = result;
