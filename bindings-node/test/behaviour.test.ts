// The behaviour suite: every primitive through the public facade, on every store URL
// (memory://, sqlite://, and BATON_TEST_URLS).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { BatonError, connect, type Client } from 'baton-lock';

import { clientPair, eventually, label, noFairOrLatch, rejectsWith, settlesWithin, sleep, storeUrls, uniq } from './helpers.js';

const T = { timeout: 60_000 };

for (const url of storeUrls('behaviour')) {
  describe(`behaviour on ${label(url)}`, () => {
    const skipFair = { ...T, skip: noFairOrLatch(url) };
    let client: Client;
    let other: Client;
    clientPair(url, (a, b) => {
      client = a;
      other = b;
    });

    describe('lock', () => {
      it('excludes, hands over with a larger token, and tryAcquire is null when busy', T, async () => {
        const name = uniq('lock');
        const a = client.lock(name);
        const b = other.lock(name);
        assert.equal(a.name, name);
        const g = await a.acquire();
        assert.equal(typeof g.token, 'bigint');
        assert.equal(g.name, name);
        assert.equal(await b.tryAcquire(), null);
        await rejectsWith(b.acquire({ timeoutMs: 100 }), 'Timeout');
        const waiting = b.acquire({ timeoutMs: 20_000 });
        await g.release();
        const next = await waiting;
        assert.ok(next.token > g.token, `${next.token} > ${g.token}`);
        assert.equal(g.released, true);
        await next.release();
      });

      it('re-enters on one handle with the same token, and by a shared owner id', T, async () => {
        const name = uniq('reenter');
        const lock = client.lock(name);
        const g1 = await lock.acquire();
        const g2 = await lock.acquire({ timeoutMs: 1000 });
        assert.equal(g1.token, g2.token);
        const i = await client.inspect(name);
        assert.equal(i.holders.length, 1);
        assert.equal(i.holders[0]!.count, 2);
        await g2.release();
        await g1.release();
        const owner = uniq('job');
        const x = await client.lock(name, { owner }).acquire();
        const y = await other.lock(name, { owner }).acquire({ timeoutMs: 1000 });
        assert.equal(x.owner, owner);
        assert.equal(x.token, y.token);
        await y.release();
        await x.release();
      });

      it('rejects a second release with NotHeld and a lost lease with LockLost', T, async () => {
        const g = await client.lock(uniq('twice')).acquire();
        await g.release();
        await rejectsWith(g.release(), 'NotHeld');
        await g[Symbol.asyncDispose](); // disposing a released guard is a no-op
        const ttl = await client.lock(uniq('ttl'), { ttlMs: 200 }).acquire();
        await eventually('the ttl lease is lost', 10_000, () => ttl.lost);
        await rejectsWith(ttl.release(), 'LockLost');
      });

      it('keeps a ttl lease alive with extend', T, async () => {
        const name = uniq('extend');
        const g = await client.lock(name, { ttlMs: 400 }).acquire();
        for (let i = 0; i < 4; i++) {
          await sleep(150);
          await g.extend(400);
        }
        assert.equal(g.lost, false);
        assert.equal(await other.lock(name).tryAcquire(), null);
        const left = (await client.inspect(name)).holders[0]!.leaseLeftMs;
        assert.ok(left === null || (left > 0 && left <= 400), `lease left ${left}`);
        await g.release();
      });

      it('inspects holders and the last token', T, async () => {
        const name = uniq('inspect');
        const empty = await client.inspect(name);
        assert.deepEqual([empty.holders, empty.lastToken], [[], null]);
        const lock = client.lock(name);
        const g = await lock.acquire();
        const i = await lock.inspect();
        assert.equal(i.name, name);
        assert.equal(i.kind, 'lock');
        assert.equal(i.holders[0]!.owner, lock.owner);
        assert.equal(i.holders[0]!.mode, 'exclusive');
        assert.equal(i.holders[0]!.token, g.token);
        assert.equal(i.lastToken, g.token);
        await g.release();
        assert.equal((await client.inspect(name)).holders.length, 0);
      });

      it('using() releases after the callback, also when it throws', T, async () => {
        const lock = client.lock(uniq('using'));
        const token = await lock.using(async (g) => {
          assert.equal(await other.lock(lock.name).tryAcquire(), null);
          return g.token;
        });
        assert.equal(typeof token, 'bigint');
        const boom = new Error('boom');
        await assert.rejects(lock.using(() => Promise.reject(boom)), (e) => e === boom);
        const g = await other.lock(lock.name).tryAcquire();
        assert.ok(g, 'free again after the failing callback');
        await g.release();
      });
    });

    describe('await using', () => {
      it('releases at the end of the scope', T, async () => {
        const name = uniq('scope');
        {
          await using g = await client.lock(name).acquire();
          assert.equal(await other.lock(name).tryAcquire(), null);
          assert.equal(g.released, false);
        }
        const again = await other.lock(name).tryAcquire();
        assert.ok(again, 'released on scope exit');
        await again.release();
      });

      it('releases when the scope throws', T, async () => {
        const name = uniq('scope-throw');
        let seen: LockGuardLike | undefined;
        await assert.rejects(
          (async () => {
            await using g = await client.lock(name).acquire();
            seen = g;
            throw new Error('inside');
          })(),
          /inside/,
        );
        assert.equal(seen?.released, true);
        const again = await other.lock(name).tryAcquire();
        assert.ok(again, 'released after the throw');
        await again.release();
      });

      it('closes a client at the end of the scope', T, async () => {
        let c: Client | undefined;
        {
          await using scoped = await connect(url);
          c = scoped;
        }
        assert.equal(c.closed, true);
      });
    });

    describe('abort', () => {
      it('an aborted acquire rejects with the reason and leaves no hold or queue place', skipFair, async () => {
        const name = uniq('abort');
        const holder = await client.lock(name).acquire();
        const ac = new AbortController();
        const waiting = other.lock(name).acquire({ signal: ac.signal });
        await sleep(50);
        ac.abort();
        await assert.rejects(waiting, (e: unknown) => e instanceof Error && e.name === 'AbortError');
        const custom = new AbortController();
        const reason = new Error('changed my mind');
        const second = other.fairLock(name).acquire({ signal: custom.signal, timeoutMs: 10_000 });
        custom.abort(reason);
        await assert.rejects(second, (e) => e === reason);
        await holder.release();
        // The aborted fair waiter's queue place is given back in the background, as for a
        // dropped Rust future; an attempt of it still in flight at the abort may take the
        // place once more and give it back after (on MySQL, with its slower round trips,
        // that shows): within a few seconds nothing is left and the lock can be taken.
        await eventually('no holder and no queue place left, and the lock free', 5_000, async () => {
          const i = await client.inspect(name);
          if (i.holders.length > 0 || i.waiters.length > 0) return false;
          const g = await client.lock(name).tryAcquire();
          await g?.release();
          return g !== null;
        });
      });

      it('an already aborted signal rejects at once', T, async () => {
        const reason = new Error('early');
        await assert.rejects(client.lock(uniq('pre')).acquire({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
      });

      it('aborts every kind of wait', skipFair, async () => {
        const ac = new AbortController();
        const name = uniq('every');
        const g = await client.lock(name).acquire();
        const rw = client.rwLock(uniq('rw'));
        const w = await rw.write();
        const sem = client.semaphore(uniq('sem'), 1);
        const p = await sem.acquire();
        const psem = client.permitSemaphore(uniq('psem'), 1);
        const pp = await psem.acquire();
        const latch = client.countDownLatch(uniq('latch'));
        assert.equal(await latch.trySetCount(1), true);
        const waits = [
          other.fairLock(name).acquire({ signal: ac.signal }),
          other.rwLock(rw.name).read({ signal: ac.signal }),
          other.rwLock(rw.name).write({ signal: ac.signal }),
          other.semaphore(sem.name, 1).acquire({ signal: ac.signal }),
          other.permitSemaphore(psem.name, 1).acquire({ signal: ac.signal }),
          other.countDownLatch(latch.name).wait({ signal: ac.signal }),
          other.multiLock([name, uniq('free')]).acquire({ signal: ac.signal }),
        ];
        await sleep(50);
        ac.abort();
        for (const r of await Promise.allSettled(waits)) {
          assert.equal(r.status, 'rejected');
          assert.equal((r as PromiseRejectedResult).reason.name, 'AbortError');
        }
        await Promise.all([g.release(), w.release(), p.release(), pp.release(), latch.countDown()]);
      });

      it('rejects a signal that is not an AbortSignal', T, async () => {
        const bad = { aborted: false } as unknown as AbortSignal;
        await rejectsWith(client.lock(uniq('bad')).acquire({ signal: bad }), 'InvalidArgument');
      });
    });

    describe('guard.signal', () => {
      it('aborts when a ttl lease expires, with a LockLost reason', T, async () => {
        const g = await client.lock(uniq('lost'), { ttlMs: 300 }).acquire();
        const signal = g.signal;
        assert.equal(signal.aborted, false);
        assert.equal(g.signal, signal, 'one signal per guard');
        const fired = new Promise<unknown>((r) => signal.addEventListener('abort', () => r(signal.reason)));
        assert.ok(await settlesWithin(fired, 10_000), 'aborted within 10 s of a 300 ms ttl');
        const reason = await fired;
        assert.ok(reason instanceof BatonError);
        assert.equal(reason.code, 'LockLost');
        assert.equal(g.lost, true);
      });

      it('is aborted at once when read after the loss', T, async () => {
        const g = await client.lock(uniq('late'), { ttlMs: 100 }).acquire();
        await eventually('lost', 10_000, () => g.lost);
        assert.equal(g.signal.aborted, true);
      });

      it('is not aborted by a normal release', T, async () => {
        const g = await client.lock(uniq('kept')).acquire();
        const signal = g.signal;
        await g.release();
        await sleep(100);
        assert.equal(signal.aborted, false);
      });

      it('aborts when the client closes', T, async () => {
        const c = await connect(url);
        const g = await c.lock(uniq('closing')).acquire();
        const signal = g.signal;
        await c.close();
        await eventually('aborted on close', 10_000, () => signal.aborted);
        await rejectsWith(c.lock(uniq('after')).tryAcquire(), 'Closed');
      });
    });

    describe('fairLock', skipFair, () => {
      it('grants in request order', T, async () => {
        const name = uniq('fair');
        const first = await client.fairLock(name).acquire();
        const order: number[] = [];
        const waiters = [0, 1, 2].map(async (i) => {
          await sleep(i * 100);
          const g = await other.fairLock(name).acquire({ timeoutMs: 30_000 });
          order.push(i);
          await g.release();
        });
        await eventually('three queued', 10_000, async () => (await client.inspect(name)).waiters.length === 3);
        await first.release();
        await Promise.all(waiters);
        assert.deepEqual(order, [0, 1, 2]);
      });
    });

    describe('rwLock', () => {
      it('shares reads, excludes writes, and lets the writer read', T, async () => {
        const name = uniq('rw');
        const a = client.rwLock(name);
        const b = other.rwLock(name);
        const r1 = await a.read();
        const r2 = await b.read({ timeoutMs: 1000 });
        // A third owner: b itself holds a read, and a reader's upgrade is refused outright.
        const c = other.rwLock(name);
        assert.equal(await c.tryWrite(), null);
        await rejectsWith(c.write({ timeoutMs: 100 }), 'Timeout');
        await rejectsWith(b.tryWrite(), 'InvalidArgument');
        await r1.release();
        await r2.release();
        const w = await a.write();
        assert.equal(await b.tryRead(), null);
        const down = await a.read({ timeoutMs: 1000 });
        const i = await a.inspect();
        assert.equal(i.kind, 'rwlock');
        assert.deepEqual(i.holders.map((h) => h.mode).sort(), ['read', 'write']);
        await w.release();
        await down.release();
        const w2 = await b.tryWrite();
        assert.ok(w2);
        assert.ok(w2.token > w.token);
        await w2.release();
      });
    });

    describe('semaphore', () => {
      it('counts permits, many at once, and gives some back', T, async () => {
        const name = uniq('sem');
        const sem = client.semaphore(name, 3);
        assert.equal(sem.permits, 3);
        const two = await sem.acquire({ count: 2 });
        assert.equal(two.count, 2);
        assert.equal(await sem.available(), 1);
        assert.equal(await other.semaphore(name, 3).tryAcquire({ count: 2 }), null);
        const one = await other.semaphore(name, 3).acquire({ timeoutMs: 1000 });
        await rejectsWith(sem.acquire({ timeoutMs: 100 }), 'Timeout');
        await two.releaseMany(1);
        assert.equal(two.count, 1);
        assert.equal(await sem.available(), 1);
        const i = await sem.inspect();
        assert.equal(i.kind, 'semaphore');
        assert.equal(i.holders.reduce((n, h) => n + h.count, 0), 2);
        await two.release();
        assert.equal(two.count, 0);
        await one.release();
        assert.equal(await sem.available(), 3);
        await rejectsWith(sem.acquire({ count: 4 }), 'InvalidArgument');
        assert.equal(await sem.using(async (p) => p.count), 1);
      });

      it('has one size while permits are held', T, async () => {
        const name = uniq('sem-size');
        const three = client.semaphore(name, 3);
        const five = other.semaphore(name, 5);
        const p = await three.acquire();
        assert.equal((await three.inspect()).permits, 3);
        await rejectsWith(five.tryAcquire(), 'InvalidArgument');
        await rejectsWith(five.available(), 'InvalidArgument');
        await p.release();
        assert.equal((await five.inspect()).permits, null);
        const q = await five.acquire({ timeoutMs: 10000 });
        assert.equal((await five.inspect()).permits, 5);
        await q.release();
      });
    });

    describe('permitSemaphore', () => {
      it('hands out ids that any handle can release or re-lease', T, async () => {
        const name = uniq('psem');
        const sem = client.permitSemaphore(name, 2);
        const p = await sem.acquire({ leaseMs: 60_000 });
        assert.match(p.id, /^[0-9a-f]{32}$/);
        const q = await sem.acquire({ timeoutMs: 1000 });
        assert.equal(await sem.tryAcquire(), null);
        assert.equal(await sem.available(), 0);
        const elsewhere = other.permitSemaphore(name, 2);
        await elsewhere.updateLease(p.id, 30_000);
        await elsewhere.release(p.id);
        assert.equal(await sem.available(), 1);
        await rejectsWith(elsewhere.release(p.id), 'NotHeld');
        await rejectsWith(elsewhere.updateLease(p.id, 1000), 'NotHeld');
        await q.release();
        await rejectsWith(sem.acquire({ timeoutMs: 100, leaseMs: 100 }), 'InvalidArgument');
        const short = await sem.acquire({ leaseMs: 150 });
        await eventually('the permit lease ends', 10_000, async () => (await sem.available()) === 2);
        await rejectsWith(short.release(), 'LockLost');
      });
    });

    describe('countDownLatch', skipFair, () => {
      it('opens at zero, waking waiters', T, async () => {
        const name = uniq('latch');
        const latch = client.countDownLatch(name);
        assert.equal(latch.name, name);
        assert.equal(await latch.trySetCount(2), true);
        assert.equal(await latch.trySetCount(5), false);
        assert.equal(await latch.count(), 2);
        await rejectsWith(latch.wait({ timeoutMs: 100 }), 'Timeout');
        const waiting = other.countDownLatch(name).wait({ timeoutMs: 20_000 });
        assert.equal(await latch.countDown(), 1);
        assert.equal(await other.countDownLatch(name).countDown(), 0);
        await waiting;
        assert.equal(await latch.countDown(), 0);
        await latch.wait();
      });
    });

    describe('multiLock', () => {
      it('takes all or nothing', T, async () => {
        const [a, b] = [uniq('a'), uniq('b')];
        const multi = client.multiLock([b, a, b]);
        assert.deepEqual([...multi.names].sort(), [a, b].sort());
        const g = await multi.acquire({ timeoutMs: 5000 });
        assert.equal(g.tokens.length, 2);
        assert.equal(await other.lock(a).tryAcquire(), null);
        await g.release();
        const hold = await other.lock(b).acquire();
        assert.equal(await client.multiLock([a, b]).tryAcquire(), null);
        const freeA = await other.lock(a).tryAcquire();
        assert.ok(freeA, 'a was given back');
        await freeA.release();
        await rejectsWith(client.multiLock([a, b]).acquire({ timeoutMs: 100 }), 'Timeout');
        await hold.release();
        const n = await client.multiLock([a, b]).using((mg) => mg.names.length);
        assert.equal(n, 2);
      });
    });

    describe('client', () => {
      it('reports Closed after close, on handles and guards', T, async () => {
        const c = await connect(url);
        assert.match(c.id, /^[0-9a-f-]{36}$/);
        assert.equal(c.closed, false);
        const lock = c.lock(uniq('closed'));
        const g = await lock.acquire();
        await c.close();
        await c.close();
        assert.equal(c.closed, true);
        await rejectsWith(lock.acquire(), 'Closed');
        await rejectsWith(g.release(), 'Closed');
        await rejectsWith(c.inspect('x'), 'Closed');
        await rejectsWith(c.countDownLatch('x').count(), 'Closed');
      });
    });
  });
}

interface LockGuardLike {
  released: boolean;
}
