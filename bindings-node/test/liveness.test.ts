// The event loop stays live while acquires wait, and a process holding guards (and
// watching their signals) still exits on its own.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';

import { connect } from 'baton-lock';

import { label, sleep, sqliteUrl, uniq } from './helpers.js';

describe('event loop', () => {
  for (const url of [`memory://live-${uniq('m')}`, sqliteUrl('live')]) {
    it(`a 10 ms setInterval keeps ticking while 200 acquires wait on ${label(url)}`, { timeout: 120_000 }, async () => {
      const client = await connect(url);
      const name = uniq('busy');
      const holder = await client.lock(name).acquire();
      const gaps: number[] = [];
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        gaps.push(now - last);
        last = now;
      }, 10);
      // 200 waiters, each its own owner.
      const waits = Array.from({ length: 200 }, () => client.lock(name).acquire({ timeoutMs: 60_000 }));
      await sleep(1000);
      const whileWaiting = gaps.splice(0);
      // Hand the lock down the line: every waiter gets it once.
      const released = holder.release();
      const done = waits.map(async (p) => (await p).release());
      await released;
      await Promise.all(done);
      clearInterval(timer);
      await client.close();
      // ~100 ticks are due in 1 s; a 2-core machine shared with builds may delay some,
      // so the bounds are loose: a blocked loop would show no ticks at all.
      assert.ok(whileWaiting.length >= 40, `${whileWaiting.length} ticks in 1 s while waiting`);
      const worst = Math.max(...whileWaiting);
      assert.ok(worst < 500, `longest gap between ticks ${worst.toFixed(1)} ms`);
    });
  }
});

describe('process exit', () => {
  for (const url of [`memory://exit`, sqliteUrl('exit')]) {
    it(`a script holding guards and watching their signals exits on ${label(url)}`, { timeout: 60_000 }, async () => {
      const script = join(__dirname, 'fixtures', 'hold-and-exit.js');
      const started = Date.now();
      const out = await new Promise<string>((resolve, reject) => {
        // If the process stayed alive, this 30 s kill would fail the test.
        execFile(process.execPath, [script, url], { timeout: 30_000 }, (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
        );
      });
      assert.match(out, /^held \d+/);
      assert.ok(Date.now() - started < 30_000);
    });
  }

  it('a pending acquire is rejected at once when its client closes', { timeout: 30_000 }, async () => {
    const client = await connect(`memory://close-${uniq('m')}`);
    const holder = await client.lock('x').acquire();
    // Observed from the start: the rejection may come before close() resolves.
    const waiting = client.lock('x').acquire().then(
      () => null,
      (e: unknown) => e,
    );
    await sleep(50);
    await client.close();
    assert.equal(((await waiting) as { code?: string } | null)?.code, 'Closed');
    await assert.rejects(holder.release(), (e: unknown) => (e as { code?: string }).code === 'Closed');
  });
});
