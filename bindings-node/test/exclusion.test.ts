// Mutual exclusion across processes (child_process) and threads (worker_threads) that
// share nothing but the store URL: no lost update, tokens strictly increasing.

import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';

import { connect } from 'baton-lock';

import { label, sqliteUrl, storeUrls, tempDir, uniq } from './helpers.js';

const WORKER = join(__dirname, 'fixtures', 'counter-worker.js');

/** The per-URL stores the cross-process test runs on (memory:// is per process). */
function sharedUrls(): string[] {
  return storeUrls('exclusion').filter((u) => !u.startsWith('memory://'));
}

function files(tag: string): { counter: string; journal: string } {
  const dir = tempDir(tag);
  const counter = join(dir, 'counter');
  const journal = join(dir, 'journal');
  writeFileSync(counter, '0');
  writeFileSync(journal, '');
  return { counter, journal };
}

function check(counter: string, journal: string, total: number): void {
  assert.equal(Number(readFileSync(counter, 'utf8')), total, 'no lost update');
  const tokens = readFileSync(journal, 'utf8').trim().split('\n').map(BigInt);
  assert.equal(tokens.length, total);
  for (let i = 1; i < tokens.length; i++) {
    assert.ok(tokens[i]! > tokens[i - 1]!, `token ${i}: ${tokens[i]} > ${tokens[i - 1]}`);
  }
}

function runProcess(args: string[], env?: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = fork(WORKER, args, {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ...env },
    });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`worker exited with ${code ?? signal}`)),
    );
  });
}

function runThread(data: object): Promise<void> {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { workerData: data });
    let done = false;
    w.on('message', (m) => (done = m === 'done'));
    w.on('error', reject);
    w.on('exit', (code) => (code === 0 && done ? resolve() : reject(new Error(`thread exited with ${code}`))));
  });
}

describe('mutual exclusion', () => {
  for (const url of sharedUrls()) {
    // 8 processes × 100 turns; a cross-process hand-off on SQLite is found by polling
    // (2–50 ms), so the 800 turns take ~10–40 s; the bound is four times that.
    it(`8 processes × 100 acquisitions on ${label(url)}`, { timeout: 180_000 }, async () => {
      const { counter, journal } = files('procs');
      const name = uniq('counter');
      const iterations = 100;
      await Promise.all(
        Array.from({ length: 8 }, () => runProcess([url, name, counter, journal, String(iterations)])),
      );
      check(counter, journal, 8 * iterations);
    });
  }

  // The busy-poll window (src/fast/busy.rs) changes only how napi's worker waits: off, the
  // default, a wide one and an unreadable value (the default) side by side keep exclusion.
  const busyUrl = sqliteUrl('busy');
  it(`processes with busy-polling off, default and wide on ${label(busyUrl)}`, { timeout: 180_000 }, async () => {
    const { counter, journal } = files('busy');
    const name = uniq('counter');
    const iterations = 50;
    const windows = ['0', '200', '5000', 'not-a-number'];
    await Promise.all(
      windows.map((w) => runProcess([busyUrl, name, counter, journal, String(iterations)], { BATON_NODE_BUSY_POLL_US: w })),
    );
    check(counter, journal, windows.length * iterations);
  });

  for (const url of [...sharedUrls(), `memory://threads-${uniq('m')}`]) {
    it(`4 worker threads × 50 acquisitions on ${label(url)}`, { timeout: 120_000 }, async () => {
      const { counter, journal } = files('threads');
      const job = { url, name: uniq('counter'), counter, journal, iterations: 50 };
      // A memory:// store lives while some client of the process uses it: this one keeps
      // it (and its tokens) alive even if a thread finishes before the next connects.
      const keeper = await connect(url);
      try {
        await Promise.all(Array.from({ length: 4 }, () => runThread(job)));
      } finally {
        await keeper.close();
      }
      check(counter, journal, 4 * job.iterations);
    });
  }
});
