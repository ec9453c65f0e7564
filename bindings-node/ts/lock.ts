// Lock, FairLock and RwLock handles.

import { abortable, call, num, opts } from './call.js';
import { LockGuard } from './guard.js';
import { inspection } from './inspect.js';
import type * as N from './native.js';
import type { AcquireOptions, Inspection } from './types.js';

/** Runs `fn` with `guard`, then releases it; a failure of `fn` wins over a failed release. */
export async function using<G extends { [Symbol.asyncDispose](): Promise<void> }, T>(
  guard: G,
  fn: (guard: G) => T | PromiseLike<T>,
): Promise<T> {
  let result: T;
  try {
    result = await fn(guard);
  } catch (e) {
    await guard[Symbol.asyncDispose]().catch(() => undefined);
    throw e;
  }
  await guard[Symbol.asyncDispose]();
  return result;
}

/** A re-entrant exclusive lock handle (`client.lock(name, options)`). Cheap; no store call until used. */
export class Lock {
  readonly #native: N.Lock | N.FairLock;

  // Kept in the typings (not marked internal): without it they would show a public
  // no-argument constructor, and handles must come from a client.
  protected constructor(native: N.Lock | N.FairLock) {
    this.#native = native;
  }

  /** @internal */
  static _wrap(native: N.Lock): Lock {
    return new Lock(native);
  }

  /** The name this handle locks. */
  get name(): string {
    return this.#native.name;
  }

  /** The owner id grants of this handle are held under (null for a handle with bad options). */
  get owner(): string | null {
    return this.#native.owner ?? null;
  }

  /**
   * Waits until the lock is granted: at most `timeoutMs` (then `Timeout`), until `signal`
   * aborts (then `signal.reason`, and nothing is held).
   */
  acquire(options?: AcquireOptions): Promise<LockGuard> {
    // `then`, not `async`/`await`: one promise and one microtask less on the hottest call.
    let signal: AbortSignal | undefined;
    try {
      signal = opts(options, 'options').signal;
    } catch (e) {
      return Promise.reject(e);
    }
    return abortable(
      signal,
      (cancel) => this.#native.acquire(num(options?.timeoutMs, 'timeoutMs'), cancel),
      (g) => g.dispose(),
    ).then(LockGuard._wrap);
  }

  /** One attempt, no waiting: null when someone else holds the lock. */
  async tryAcquire(): Promise<LockGuard | null> {
    const g = await call(() => this.#native.tryAcquire());
    return g ? LockGuard._wrap(g) : null;
  }

  /**
   * Acquires, runs `fn(guard)`, releases — for plain JavaScript, where `await using` is not
   * available. Resolves to what `fn` returns; rejects with `fn`'s error if it throws, else
   * with `LockLost` if the lease was lost meanwhile.
   */
  async using<T>(fn: (guard: LockGuard) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T> {
    return using(await this.acquire(options), fn);
  }

  /** Holders, waiters and the last token of this lock on the store. */
  async inspect(): Promise<Inspection> {
    return inspection(await call(() => this.#native.inspect()));
  }
}

/** A lock granted in request order (`client.fairLock(name)`); the same methods as {@link Lock}. */
export class FairLock extends Lock {
  /** @internal */
  static override _wrap(native: N.FairLock): FairLock {
    return new FairLock(native);
  }
}

/** A read-write lock handle: many readers or one writer (`client.rwLock(name)`). */
export class RwLock {
  readonly #native: N.RwLock;

  private constructor(native: N.RwLock) {
    this.#native = native;
  }

  /** @internal */
  static _wrap(native: N.RwLock): RwLock {
    return new RwLock(native);
  }

  /** The name. */
  get name(): string {
    return this.#native.name;
  }

  /** Waits for a shared (read) hold. */
  async read(options?: AcquireOptions): Promise<LockGuard> {
    const g = await abortable(
      opts(options, 'options').signal,
      (cancel) => this.#native.read(num(options?.timeoutMs, 'timeoutMs'), cancel),
      (g) => g.dispose(),
    );
    return LockGuard._wrap(g);
  }

  /** Waits for the exclusive (write) hold. A waiting writer turns new readers away. */
  async write(options?: AcquireOptions): Promise<LockGuard> {
    const g = await abortable(
      opts(options, 'options').signal,
      (cancel) => this.#native.write(num(options?.timeoutMs, 'timeoutMs'), cancel),
      (g) => g.dispose(),
    );
    return LockGuard._wrap(g);
  }

  /** One attempt at a read hold: null when a writer holds or waits. */
  async tryRead(): Promise<LockGuard | null> {
    const g = await call(() => this.#native.tryRead());
    return g ? LockGuard._wrap(g) : null;
  }

  /** One attempt at the write hold: null when busy. */
  async tryWrite(): Promise<LockGuard | null> {
    const g = await call(() => this.#native.tryWrite());
    return g ? LockGuard._wrap(g) : null;
  }

  /** Holders (readers and writer), waiting writers and the last token. */
  async inspect(): Promise<Inspection> {
    return inspection(await call(() => this.#native.inspect()));
  }
}
