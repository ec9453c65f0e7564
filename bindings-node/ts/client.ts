// connect() and Client.

import { call, callSync, opts, reqNum, str } from './call.js';
import { invalid } from './errors.js';
import { Fence } from './fence.js';
import { inspection } from './inspect.js';
import { CountDownLatch } from './latch.js';
import { FairLock, Lock, RwLock } from './lock.js';
import { MultiLock } from './multi.js';
import native from './native.js';
import type * as N from './native.js';
import { PermitSemaphore, Semaphore } from './semaphore.js';
import type { Inspection, LockOptions } from './types.js';

/**
 * Connects to the store `url` names: `memory://[NAME]`, `sqlite:///abs/path.db`, and the
 * other schemes of this build (`redis://…`, `postgres://…`, `mysql://…`). Every URL takes
 * `?lease=30s&renew=10s&prefix=app1/`.
 */
export async function connect(url: string): Promise<Client> {
  return Client._wrap(await call(async () => native.connect(str(url, 'url'))));
}

/** The lock-family options in the shape the addon takes (types checked here). */
function lockOptions(o: LockOptions | undefined): N.LockOptions {
  const { ttlMs, leaseMs, renewMs, owner, queueTtlMs } = opts(o, 'options');
  if (owner !== undefined && owner !== null && typeof owner !== 'string') {
    throw invalid(`owner must be a string, got ${typeof owner}`);
  }
  for (const [k, v] of Object.entries({ ttlMs, leaseMs, renewMs, queueTtlMs })) {
    if (v !== undefined && v !== null && typeof v !== 'number') throw invalid(`${k} must be a number, got ${typeof v}`);
  }
  return { ttlMs, leaseMs, renewMs, owner, queueTtlMs };
}

/**
 * A connection to one store. Handles (`lock`, `semaphore`, …) are cheap and make no store
 * call until used; a bad name or option is reported by the handle's first call.
 */
export class Client implements AsyncDisposable {
  readonly #native: N.Client;

  private constructor(native: N.Client) {
    this.#native = native;
  }

  /** @internal */
  static _wrap(native: N.Client): Client {
    return new Client(native);
  }

  /** This client's id (the first part of every owner id it makes). */
  get id(): string {
    return this.#native.id;
  }

  /** The store URL, password redacted. */
  get url(): string {
    return this.#native.url;
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#native.isClosed;
  }

  /** A re-entrant exclusive lock handle. */
  lock(name: string, options?: LockOptions): Lock {
    return Lock._wrap(callSync(() => this.#native.lock(str(name, 'name'), lockOptions(options))));
  }

  /** A lock granted in request order. */
  fairLock(name: string, options?: LockOptions): FairLock {
    return FairLock._wrap(callSync(() => this.#native.fairLock(str(name, 'name'), lockOptions(options))));
  }

  /** A read-write lock handle. */
  rwLock(name: string, options?: LockOptions): RwLock {
    return RwLock._wrap(callSync(() => this.#native.rwLock(str(name, 'name'), lockOptions(options))));
  }

  /** A semaphore of `permits` permits (every client using the name must agree on it). */
  semaphore(name: string, permits: number, options?: LockOptions): Semaphore {
    return Semaphore._wrap(
      callSync(() => this.#native.semaphore(str(name, 'name'), reqNum(permits, 'permits'), lockOptions(options))),
    );
  }

  /** A semaphore whose permits have ids and leases of their own. */
  permitSemaphore(name: string, permits: number, options?: LockOptions): PermitSemaphore {
    return PermitSemaphore._wrap(
      callSync(() =>
        this.#native.permitSemaphore(str(name, 'name'), reqNum(permits, 'permits'), lockOptions(options)),
      ),
    );
  }

  /** A count-down latch handle. */
  countDownLatch(name: string): CountDownLatch {
    return CountDownLatch._wrap(callSync(() => this.#native.countDownLatch(str(name, 'name'))));
  }

  /** Fenced writes on this client's store (see `Fence`). */
  fence(): Fence {
    return Fence._wrap(callSync(() => this.#native.fence()));
  }

  /** A multi-lock over `names` on this store (all-or-nothing). */
  multiLock(names: Iterable<string>): MultiLock {
    return MultiLock._wrap(
      callSync(() => {
        if (names === null || typeof names !== 'object' || !(Symbol.iterator in names)) {
          throw invalid('names must be an iterable of strings');
        }
        return this.#native.multiLock(Array.from(names, (n) => str(n, 'every name')));
      }),
    );
  }

  /** Holder, hold count, lease left and last token of the lock `name`. */
  async inspect(name: string): Promise<Inspection> {
    return inspection(await call(async () => this.#native.inspect(str(name, 'name'))));
  }

  /**
   * Releases everything this client holds, stops renewals and closes the store connection.
   * Later calls on it or its handles reject with `Closed`. Idempotent.
   */
  close(): Promise<void> {
    return call(() => this.#native.close());
  }

  /** Closes the client: `await using client = await connect(url)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
