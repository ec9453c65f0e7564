// MultiLock handle.

import { abortable, call, num, opts } from './call.js';
import { MultiGuard } from './guard.js';
import { using } from './lock.js';
import type * as N from './native.js';
import type { AcquireOptions } from './types.js';

/**
 * Several locks taken all-or-nothing, in a canonical order so two multi-locks over the same
 * names cannot deadlock (`client.multiLock(names)`).
 */
export class MultiLock {
  readonly #native: N.MultiLock;

  private constructor(native: N.MultiLock) {
    this.#native = native;
  }

  /** @internal */
  static _wrap(native: N.MultiLock): MultiLock {
    return new MultiLock(native);
  }

  /** The names, in acquisition order (duplicates kept once). */
  get names(): readonly string[] {
    return this.#native.names;
  }

  /** Waits until every lock is held (at most `timeoutMs`, then `Timeout` with none held). */
  async acquire(options?: AcquireOptions): Promise<MultiGuard> {
    const o = opts(options, 'options');
    const g = await abortable(
      o.signal,
      (cancel) => this.#native.acquire(num(o.timeoutMs, 'timeoutMs'), cancel),
      (g) => g.dispose(),
    );
    return MultiGuard._wrap(g);
  }

  /** One attempt at each: null (and nothing held) if any is busy. */
  async tryAcquire(): Promise<MultiGuard | null> {
    const g = await call(() => this.#native.tryAcquire());
    return g ? MultiGuard._wrap(g) : null;
  }

  /** Acquires all, runs `fn(guard)`, releases all (see {@link Lock.using}). */
  async using<T>(fn: (guard: MultiGuard) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T> {
    return using(await this.acquire(options), fn);
  }
}
