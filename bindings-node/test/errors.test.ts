// Errors: every kind reaches JavaScript as a BatonError with the right code; bad input
// rejects with InvalidArgument (or InvalidUrl) and a clear message; nothing crashes.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import * as baton from 'baton-lock';
import { BatonError, connect, errorCodes, type Client } from 'baton-lock';

import { rejectsWith, uniq } from './helpers.js';

describe('error codes', () => {
  it('every native kind maps to its code through _raise', async () => {
    assert.deepEqual(baton._nativeErrorKinds(), [...errorCodes]);
    for (const code of errorCodes) {
      const e = await rejectsWith(baton._raise(code), code);
      assert.equal(e.name, 'BatonError');
      assert.match(e.message, new RegExp(`raised by _raise\\("${code}"\\)`));
      assert.match(String(e.stack), /BatonError/);
    }
    await rejectsWith(baton._raise('NoSuchKind'), 'InvalidArgument');
  });

  it('a panic in native code rejects with Backend instead of crashing', async () => {
    const e = await rejectsWith(baton._panic(), 'Backend');
    assert.match(e.message, /deliberate panic/);
    await rejectsWith(baton._panic(), 'Backend'); // and the addon still works
  });

  it('BatonError is a real Error subclass', () => {
    const e = new BatonError('Timeout', 'x');
    assert.ok(e instanceof Error);
    assert.equal(Object.prototype.toString.call(e), '[object Error]');
    assert.equal(BatonError.from(e), e);
  });
});

describe('bad input', () => {
  let client: Client;
  before(async () => {
    client = await connect(`memory://errors-${uniq('x')}`);
  });
  after(() => client.close());

  it('bad URLs', async () => {
    await rejectsWith(connect('nope://x'), 'InvalidUrl');
    await rejectsWith(connect('not a url'), 'InvalidUrl');
    await rejectsWith(connect('memory://x?lease=soon'), 'InvalidArgument');
    await rejectsWith(connect(42 as unknown as string), 'InvalidArgument');
    const e = await rejectsWith(connect('sqlite:///nonexistent-dir/sub/x.db'), 'Connection');
    assert.ok(e.message.length > 0);
  });

  it('bad names and options reject on first use', async () => {
    await rejectsWith(client.lock('').acquire(), 'InvalidArgument');
    await rejectsWith(client.lock('x'.repeat(100_000)).tryAcquire(), 'InvalidArgument');
    for (const bad of [-1, 0, Number.NaN, Infinity, 1e15]) {
      const e = await rejectsWith(client.lock('a', { ttlMs: bad }).acquire(), 'InvalidArgument');
      assert.match(e.message, /ttlMs/);
    }
    await rejectsWith(client.lock('a', { leaseMs: 1000, renewMs: 2000 }).acquire(), 'InvalidArgument');
    await rejectsWith(client.lock('a', { owner: '' }).acquire(), 'InvalidArgument');
    await rejectsWith(client.fairLock('a', { queueTtlMs: -5 }).acquire(), 'InvalidArgument');
    await rejectsWith(client.rwLock('', {}).read(), 'InvalidArgument');
    const e = await rejectsWith(client.lock('a').acquire({ timeoutMs: -5 }), 'InvalidArgument');
    assert.match(e.message, /timeoutMs/);
    await rejectsWith(client.lock('a').acquire({ timeoutMs: 'soon' as unknown as number }), 'InvalidArgument');
    await rejectsWith(client.lock('a').acquire(5 as unknown as object), 'InvalidArgument');
  });

  it('bad counts', async () => {
    for (const permits of [0, -1, 1.5, Number.NaN, 2 ** 40]) {
      await rejectsWith(client.semaphore(uniq('s'), permits).acquire(), 'InvalidArgument');
      await rejectsWith(client.permitSemaphore(uniq('p'), permits).tryAcquire(), 'InvalidArgument');
    }
    const sem = client.semaphore(uniq('s'), 2);
    for (const count of [0, 3, -1, 0.5]) await rejectsWith(sem.acquire({ count }), 'InvalidArgument');
    const p = await sem.acquire({ count: 2 });
    await rejectsWith(p.releaseMany(3), 'InvalidArgument');
    await rejectsWith(p.releaseMany(0), 'InvalidArgument');
    await rejectsWith(p.extend(-1), 'InvalidArgument');
    await p.release();
    await rejectsWith(p.releaseMany(1), 'NotHeld');
    const latch = client.countDownLatch(uniq('l'));
    for (const count of [0, -3, 1.5, 2 ** 60]) await rejectsWith(latch.trySetCount(count), 'InvalidArgument');
    await rejectsWith(client.countDownLatch('').count(), 'InvalidArgument');
    await rejectsWith(client.multiLock([]).acquire(), 'InvalidArgument');
  });

  it('wrong types throw InvalidArgument from the synchronous factories', () => {
    const check = (f: () => unknown): void => {
      assert.throws(f, (e: unknown) => e instanceof BatonError && e.code === 'InvalidArgument');
    };
    check(() => client.lock(42 as unknown as string));
    check(() => client.lock('a', 'fast' as unknown as object));
    check(() => client.lock('a', { ttlMs: '5' as unknown as number }));
    check(() => client.semaphore('a', '3' as unknown as number));
    check(() => client.multiLock('ab' as unknown as string[]));
    check(() => client.multiLock([1, 2] as unknown as string[]));
  });

  it('a guard extend after release is NotHeld', async () => {
    const g = await client.lock(uniq('e')).acquire();
    await g.release();
    await rejectsWith(g.extend(1000), 'NotHeld');
  });
});
