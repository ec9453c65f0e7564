// Shared by the test files: the store URLs every behaviour test runs on, unique names,
// and bounded waiting.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';

import { BatonError, connect, type BatonErrorCode, type Client } from 'baton-lock';

/**
 * Two clients on `url` for the enclosing `describe`, handed to `set` once connected (before
 * its tests) and closed after them: the holder's side and a waiter's in another client.
 */
export function clientPair(url: string, set: (client: Client, other: Client) => void): void {
  let pair: [Client, Client] | undefined;
  before(async () => {
    pair = [await connect(url), await connect(url)];
    set(...pair);
  });
  after(async () => {
    for (const c of pair ?? []) await c.close();
  });
}

/** A fresh directory under the system temp dir. */
export function tempDir(tag: string): string {
  return mkdtempSync(join(tmpdir(), `baton-node-${tag}-`));
}

/**
 * Every store the suite runs on: an in-process store and a SQLite file always, plus the
 * whitespace-separated URLs of `BATON_TEST_URLS` (cluster URLs hold commas themselves).
 */
export function storeUrls(tag: string): string[] {
  return [`memory://node-${tag}-${randomUUID()}`, `sqlite://${join(tempDir(tag), 'baton.db')}`, ...urlList('BATON_TEST_URLS')];
}

/**
 * The variants (`BATON_TEST_VARIANT_URLS`: another topology, transport or TLS of a store
 * that `storeUrls` reaches already, where the core's behaviour suite runs every check):
 * test/variants.test.ts runs a round of every primitive on them.
 */
export function variantUrls(): string[] {
  return urlList('BATON_TEST_VARIANT_URLS');
}

function urlList(variable: string): string[] {
  return (process.env[variable] ?? '').split(/\s+/).filter(Boolean);
}

/**
 * Why the store of `url` has no fair locks and no count-down latches (`Unsupported` there,
 * checked by the core's own suite), as a test's `skip` option; false where it has them.
 */
export function noFairOrLatch(url: string): string | false {
  return url.startsWith('redlock://')
    ? 'redlock:// has no fair locks or count-down latches (Unsupported; see core/tests/redis/redlock.rs)'
    : false;
}

/** A SQLite URL in a fresh directory. */
export function sqliteUrl(tag: string): string {
  return `sqlite://${join(tempDir(tag), 'baton.db')}`;
}

/** A name no other run uses (stores like Redis outlive the test process). */
export function uniq(name: string): string {
  return `${name}-${randomUUID().slice(0, 8)}`;
}

/** The URL as a test label, without a password. */
export function label(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

/** Asserts that `p` rejects with a BatonError of `code`; returns it. */
export async function rejectsWith(p: Promise<unknown>, code: BatonErrorCode): Promise<BatonError> {
  let caught: unknown;
  await assert.rejects(p, (e: unknown) => {
    caught = e;
    return true;
  });
  assert.ok(caught instanceof BatonError, `expected a BatonError, got ${String(caught)}`);
  assert.ok(caught instanceof Error);
  assert.equal(caught.code, code, `expected code ${code}, got ${caught.code}: ${caught.message}`);
  return caught;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 20 ms until it is true; fails after `limitMs`. */
export async function eventually(what: string, limitMs: number, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) assert.fail(`not within ${limitMs} ms: ${what}`);
    await sleep(20);
  }
}

/** Resolves to true if `p` settles within `ms`, false otherwise. */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
