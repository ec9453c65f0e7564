// The JavaScript-thread link (src/fast/here.rs): on a plain redis:// server a client's hot calls
// go over a connection of its own, named `baton-driven`, whose socket Node's loop watches.
// Checked against the server's own view (CLIENT LIST): the connection appears with the
// client, carries the scripts, goes with close(), is opened again after it is killed, and
// is not opened when BATON_NODE_DRIVEN_LINK=0.

import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';

import Redis from 'ioredis';

import { BatonError, connect } from 'baton-lock';

import { uniq } from './helpers.js';

const url = process.env.BATON_TEST_REDIS_URL;

interface Conn {
  id: string;
  cmd: string;
}

/** The server's `baton-driven` connections, by id. */
async function driven(admin: Redis): Promise<Map<string, Conn>> {
  const list = (await admin.call('CLIENT', 'LIST', 'TYPE', 'normal')) as string;
  const out = new Map<string, Conn>();
  for (const line of list.split('\n')) {
    const f = Object.fromEntries(line.split(' ').map((kv) => kv.split('=', 2) as [string, string]));
    if (f.name === 'baton-driven' && f.id) out.set(f.id, { id: f.id, cmd: f.cmd ?? '' });
  }
  return out;
}

/** Waits (at most `ms`, polling) until `check` holds; returns its last value. */
async function until<T>(ms: number, probe: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  const end = Date.now() + ms;
  let v = await probe();
  while (!check(v) && Date.now() < end) {
    await sleep(50);
    v = await probe();
  }
  return v;
}

/** The ids in `now` that are not in `before`. */
function added(before: Map<string, Conn>, now: Map<string, Conn>): string[] {
  return [...now.keys()].filter((id) => !before.has(id));
}

describe('JavaScript-thread link', { skip: url ? false : 'BATON_TEST_REDIS_URL is not set' }, () => {
  let admin: Redis;
  before(() => {
    admin = new Redis(url!, { lazyConnect: false, maxRetriesPerRequest: 1 });
  });
  after(() => admin.disconnect());

  it('is a connection of its own that carries the scripts and goes with close()', async () => {
    const seen = await driven(admin);
    const client = await connect(url!);
    const mine = added(seen, await driven(admin));
    assert.equal(mine.length, 1, 'one new baton-driven connection');
    const lock = client.lock(uniq('driven'));
    const g = await lock.acquire();
    await g.release();
    const conn = (await driven(admin)).get(mine[0]!);
    assert.equal(conn?.cmd, 'evalsha', 'the release script went over the link');
    await client.close();
    // Closing is immediate on the client's side; the server notices the close at once too,
    // but the bound is generous for a loaded machine.
    const left = await until(5000, () => driven(admin), (m) => !m.has(mine[0]!));
    assert.ok(!left.has(mine[0]!), 'the link closed with the client');
  });

  it('is opened again after the server drops it, and calls go on meanwhile', { timeout: 60_000 }, async () => {
    const seen = await driven(admin);
    const client = await connect(url!);
    try {
      const [first] = added(seen, await driven(admin));
      assert.ok(first, 'a link was opened');
      const lock = client.lock(uniq('killed'));
      let last = 0n;
      const cycle = async (): Promise<void> => {
        const g = await lock.acquire({ timeoutMs: 10_000 });
        assert.ok(g.token > last, `token ${g.token} > ${last}`);
        last = g.token;
        await g.release();
      };
      await cycle();
      await admin.call('CLIENT', 'KILL', 'ID', first);
      // The call that meets the dead link may fail with Connection (as one on a dropped
      // multiplexed connection does); none after it may.
      let failures = 0;
      for (let i = 0; i < 20; i++) {
        try {
          await cycle();
        } catch (e) {
          assert.ok(e instanceof BatonError && e.code === 'Connection', `only Connection errors: ${String(e)}`);
          failures++;
          assert.ok(i === 0 && failures === 1, 'at most the first call after the kill fails');
        }
      }
      // A new link comes 0.5 s after the failure was seen; bounded at 20 s for a loaded host.
      const now = await until(
        20_000,
        async () => {
          await cycle();
          return driven(admin);
        },
        (m) => added(seen, m).some((id) => id !== first),
      );
      const [second] = added(seen, now).filter((id) => id !== first);
      assert.ok(second, 'a new link was opened');
      await cycle();
      assert.equal((await driven(admin)).get(second)?.cmd, 'evalsha', 'calls went over the new link');
    } finally {
      await client.close();
    }
  });

  it('many calls at once share the link and napi runtime', async () => {
    const client = await connect(url!);
    try {
      const locks = Array.from({ length: 64 }, (_, i) => client.lock(uniq(`many-${i}`)));
      for (let round = 0; round < 3; round++) {
        const guards = await Promise.all(locks.map((l) => l.tryAcquire()));
        assert.ok(guards.every((g) => g !== null), 'every free lock granted');
        await Promise.all(guards.map((g) => g!.release()));
      }
      for (const l of locks) assert.equal((await l.inspect()).holders.length, 0);
    } finally {
      await client.close();
    }
  });

  it('is not opened with BATON_NODE_DRIVEN_LINK=0', async () => {
    const seen = await driven(admin);
    process.env.BATON_NODE_DRIVEN_LINK = '0';
    try {
      const client = await connect(url!);
      const g = await client.lock(uniq('off')).acquire();
      await g.release();
      assert.deepEqual(added(seen, await driven(admin)), []);
      await client.close();
    } finally {
      delete process.env.BATON_NODE_DRIVEN_LINK;
    }
  });
});
