// Fenced writes at the resource (client.fence(), fencedUpdate): a holder paused past its
// lease wakes up with an old token, and the store itself refuses its late write.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { connect, fencedUpdate } from 'baton-lock';

import { label, rejectsWith, storeUrls, uniq } from './helpers.js';

/** Stores without fenced writes: their fence calls reject with Unsupported. */
function noFence(url: string): boolean {
  return url.startsWith('redlock://');
}

for (const url of storeUrls('fence')) {
  describe(`fence on ${label(url)}`, () => {
    it("refuses a paused holder's late write", async () => {
      const [a, b] = [await connect(url), await connect(url)];
      try {
        const [name, key] = [uniq('fence-sale'), uniq('fence-stock')];
        if (noFence(url)) {
          await rejectsWith(a.fence().write(key, '1', 1n), 'Unsupported');
          return;
        }
        const old = await a.lock(name, { ttlMs: 2000 }).acquire({ timeoutMs: 10_000 });
        assert.equal(await a.fence().write(key, '9', old.token), true);
        // `a` stops here (a GC pause, SIGSTOP) until its lease is gone; `b` takes over.
        const next = await b.lock(name).acquire({ timeoutMs: 30_000 });
        assert.ok(next.token > old.token);
        assert.equal(await b.fence().write(key, '8', next.token), true);
        assert.equal(await b.fence().write(key, '7', next.token), true); // one grant, many writes
        assert.equal(await a.fence().write(key, '8', old.token), false); // refused
        assert.deepEqual(await b.fence().read(key), { value: '7', token: next.token });
        assert.equal(await b.fence().read(uniq('absent')), null);
        await next.release();
        await rejectsWith(old.release(), 'LockLost');
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
}

describe('fencedUpdate', () => {
  it("guards the caller's UPDATE", () => {
    assert.equal(
      fencedUpdate('UPDATE stock SET n = n - 1 WHERE item = $1', 7n),
      'UPDATE stock SET n = n - 1, fence = 7 WHERE (item = $1) AND fence <= 7',
    );
    assert.equal(fencedUpdate('UPDATE t SET a = 1', 3), 'UPDATE t SET a = 1, fence = 3 WHERE fence <= 3');
  });

  it('refuses what it cannot guard', () => {
    assert.throws(() => fencedUpdate('DELETE FROM t', 1n), { code: 'InvalidArgument' });
    assert.throws(() => fencedUpdate('UPDATE t SET a = 1', -1), { code: 'InvalidArgument' });
  });

  it('runs through fence().execute on a SQL store only', async () => {
    const c = await connect('memory://');
    try {
      await rejectsWith(c.fence().execute('UPDATE t SET a = 1', 1n), 'Unsupported');
    } finally {
      await c.close();
    }
  });
});
