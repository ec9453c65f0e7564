// Type-checked (tsc --noEmit --strict), never run: uses every public name of the package
// as the README and the doc comments use it, so a change to the typings that breaks callers
// fails the build.

import {
  BatonError,
  Client,
  CountDownLatch,
  FairLock,
  Guard,
  Lock,
  LockGuard,
  MultiGuard,
  MultiLock,
  Permit,
  PermitSemaphore,
  RwLock,
  Semaphore,
  connect,
  errorCodes,
  type AcquireOptions,
  type BatonErrorCode,
  type Holder,
  type Inspection,
  type LockOptions,
  type PermitAcquireOptions,
  type SemaphoreAcquireOptions,
  type SemaphoreTryOptions,
  type WaitOptions,
} from 'baton-lock';
import * as baton from 'baton-lock';

export async function sample(url: string): Promise<void> {
  const client: Client = await connect(url);
  const id: string = client.id;
  const redacted: string = client.url;
  const closed: boolean = client.closed;

  const options: LockOptions = { ttlMs: 10_000, leaseMs: 30_000, renewMs: 10_000, owner: 'job-7', queueTtlMs: 5_000 };
  const wait: AcquireOptions = { timeoutMs: 5_000, signal: new AbortController().signal };
  const lock: Lock = client.lock('orders/42', options);
  const name: string = lock.name;
  const owner: string | null = lock.owner;
  const guard: LockGuard = await lock.acquire(wait);
  const token: bigint = guard.token;
  const signal: AbortSignal = guard.signal;
  const flags: [boolean, boolean, string, string] = [guard.lost, guard.released, guard.name, guard.owner];
  await guard.extend(10_000);
  await guard.release();
  const maybe: LockGuard | null = await lock.tryAcquire();
  await maybe?.release();
  const n: number = await lock.using(async (g: LockGuard) => Number(g.token), { timeoutMs: 1 });
  const asGuard: Guard = guard;
  await asGuard[Symbol.asyncDispose]();
  const disposable: AsyncDisposable = guard;

  const fair: FairLock = client.fairLock('jobs', { owner: 'x' });
  const fairAsLock: Lock = fair;
  await (await fair.acquire()).release();

  const rw: RwLock = client.rwLock('doc/7');
  const r: LockGuard = await rw.read({ timeoutMs: 1 });
  const w: LockGuard | null = await rw.tryWrite();
  await Promise.all([rw.write(), rw.tryRead(), rw.inspect(), r.release(), w?.release()]);

  const sem: Semaphore = client.semaphore('parking', 3, { leaseMs: 60_000 });
  const semOptions: SemaphoreAcquireOptions = { count: 2, timeoutMs: 1, signal };
  const tryOptions: SemaphoreTryOptions = { count: 1 };
  const permit: Permit = await sem.acquire(semOptions);
  const p2: Permit | null = await sem.tryAcquire(tryOptions);
  const counts: [number, number, string, string, bigint] = [sem.permits, permit.count, permit.id, permit.name, permit.token];
  await permit.releaseMany(1);
  await permit.extend(1_000);
  await permit.release();
  await p2?.release();
  const free: number = await sem.available();
  await sem.using(async (p: Permit) => p.count);

  const psem: PermitSemaphore = client.permitSemaphore('exports', 5);
  const pOptions: PermitAcquireOptions = { leaseMs: 60_000, signal };
  const lease: Permit = await psem.acquire(pOptions);
  await psem.updateLease(lease.id, 30_000);
  await psem.release(lease.id);
  const none: Permit | null = await psem.tryAcquire();
  const pfree: number = await psem.available();

  const latch: CountDownLatch = client.countDownLatch('boot');
  const set: boolean = await latch.trySetCount(3);
  const left: number = await latch.countDown();
  const count: number = await latch.count();
  const waitOptions: WaitOptions = { timeoutMs: 10_000 };
  await latch.wait(waitOptions);

  const multi: MultiLock = client.multiLock(new Set(['a', 'b', 'c']));
  const names: readonly string[] = multi.names;
  const all: MultiGuard = await multi.acquire({ timeoutMs: 1 });
  const tokens: readonly bigint[] = all.tokens;
  await all.release();
  const maybeAll: MultiGuard | null = await multi.tryAcquire();
  await multi.using(async (g: MultiGuard) => g.names);

  const info: Inspection = await client.inspect('orders/42');
  const holder: Holder | undefined = info.holders[0];
  const last: bigint | null = info.lastToken;
  const lockInfo: Inspection = await lock.inspect();
  const semInfo: Inspection = await sem.inspect();
  const pInfo: Inspection = await psem.inspect();
  const kinds: Inspection['kind'][] = ['lock', 'rwlock', 'semaphore', 'latch'];
  const left2: number | null | undefined = holder?.leaseLeftMs;

  try {
    await lock.acquire({ timeoutMs: 1 });
  } catch (e) {
    if (e instanceof BatonError) {
      const code: BatonErrorCode = e.code;
      const all9: readonly BatonErrorCode[] = errorCodes;
      const err: Error = e;
      switch (code) {
        case 'InvalidArgument':
        case 'InvalidUrl':
        case 'Timeout':
        case 'NotHeld':
        case 'LockLost':
        case 'Connection':
        case 'Backend':
        case 'Closed':
        case 'Unsupported':
          void [all9, err];
          break;
        default: {
          const exhaustive: never = code;
          void exhaustive;
        }
      }
    }
  }
  const made: BatonError = BatonError.from(new Error('x'));
  await baton._raise('Timeout').catch(() => undefined);

  await client.close();
  await client[Symbol.asyncDispose]();
  void [id, redacted, closed, name, owner, token, flags, n, disposable, fairAsLock, counts, free, none, pfree];
  void [set, left, count, names, tokens, maybeAll, last, lockInfo, semInfo, pInfo, kinds, left2, made];
}

// Wrong uses the typings must reject.
export async function misuse(client: Client): Promise<void> {
  // @ts-expect-error: durations are numbers of milliseconds
  client.lock('a', { ttlMs: '10s' });
  // @ts-expect-error: no such option
  await client.lock('a').acquire({ timeout: 5 });
  // @ts-expect-error: the token is a bigint
  const t: number = (await client.lock('a').acquire()).token;
  // @ts-expect-error: codes are a closed set
  const c: BatonErrorCode = 'Nope';
  // @ts-expect-error: handles come from a client
  new Lock();
  void [t, c];
}
