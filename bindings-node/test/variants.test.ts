// A round of every primitive on the variants (BATON_TEST_VARIANT_URLS: a Redis Cluster or
// Sentinel, etcd's gateway, an etcd cluster, TLS, a ZooKeeper ensemble). Each reaches a
// store that behaviour.test.ts covers through another URL, by a topology or transport
// below the store interface this package calls; the core's behaviour suite runs every
// check on each (core/tests/<store>.rs). Here: grants, waits woken across clients, tokens.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { type Client } from 'baton-lock';

import { clientPair, label, rejectsWith, uniq, variantUrls } from './helpers.js';

const T = { timeout: 60_000 };

for (const url of variantUrls()) {
  describe(`a round of every primitive on ${label(url)}`, () => {
    let client: Client;
    let other: Client;
    clientPair(url, (a, b) => {
      client = a;
      other = b;
    });

    it('lock: a waiter in another client is woken by the release, with a larger token', T, async () => {
      const name = uniq('v-lock');
      const g = await client.lock(name).acquire({ timeoutMs: 10_000 });
      assert.equal(await other.lock(name).tryAcquire(), null);
      const waiting = other.lock(name).acquire({ timeoutMs: 20_000 });
      await g.release();
      const next = await waiting;
      assert.ok(next.token > g.token, `${next.token} > ${g.token}`);
      assert.equal((await client.inspect(name)).holders.length, 1);
      await next.release();
    });

    it('fair lock, read-write lock, multi-lock', T, async () => {
      const fair = uniq('v-fair');
      await client.fairLock(fair).using(async () => assert.equal(await other.fairLock(fair).tryAcquire(), null));
      const rw = uniq('v-rw');
      const r = await client.rwLock(rw).read();
      const r2 = await other.rwLock(rw).read({ timeoutMs: 5000 });
      const w = other.rwLock(rw).write({ timeoutMs: 20_000 }); // woken once both reads are back
      await r2.release();
      await r.release();
      await (await w).release();
      const [a, b] = [uniq('v-a'), uniq('v-b')];
      const all = await client.multiLock([a, b]).acquire();
      assert.equal(await other.lock(b).tryAcquire(), null);
      await all.release();
      await (await other.lock(b).acquire({ timeoutMs: 5000 })).release();
    });

    it('semaphore, permit semaphore, count-down latch', T, async () => {
      const sem = uniq('v-sem');
      const two = await client.semaphore(sem, 2).acquire({ count: 2 });
      const waiting = other.semaphore(sem, 2).acquire({ timeoutMs: 20_000 });
      await two.releaseMany(1);
      const one = await waiting;
      assert.equal(await client.semaphore(sem, 2).available(), 0);
      await two.release();
      await one.release();
      const psem = client.permitSemaphore(uniq('v-psem'), 1);
      const p = await psem.acquire({ leaseMs: 60_000 });
      assert.equal(await psem.tryAcquire(), null);
      await psem.release(p.id);
      const latch = uniq('v-latch');
      assert.equal(await client.countDownLatch(latch).trySetCount(1), true);
      const opened = other.countDownLatch(latch).wait({ timeoutMs: 20_000 });
      await rejectsWith(client.countDownLatch(latch).wait({ timeoutMs: 100 }), 'Timeout');
      assert.equal(await client.countDownLatch(latch).countDown(), 0);
      await opened;
    });

    it('fence: a late write with an older token is refused', T, async () => {
      const [name, key] = [uniq('v-sale'), uniq('v-stock')];
      const old = await client.lock(name).acquire();
      await old.release();
      const next = await other.lock(name).acquire();
      assert.equal(await other.fence().write(key, 'new', next.token), true);
      assert.equal(await client.fence().write(key, 'old', old.token), false);
      assert.deepEqual(await client.fence().read(key), { value: 'new', token: next.token });
      await next.release();
    });
  });
}
