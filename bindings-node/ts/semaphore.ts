// Semaphore and PermitSemaphore handles.

import { abortable, call, num, opts, reqNum, str } from './call.js';
import { Permit } from './guard.js';
import { inspection } from './inspect.js';
import { using } from './lock.js';
import type * as N from './native.js';
import type { Inspection, PermitAcquireOptions, SemaphoreAcquireOptions, SemaphoreTryOptions } from './types.js';

/** A semaphore of N permits with leased permits (`client.semaphore(name, permits)`). */
export class Semaphore {
  readonly #native: N.Semaphore;

  private constructor(native: N.Semaphore) {
    this.#native = native;
  }

  /** @internal */
  static _wrap(native: N.Semaphore): Semaphore {
    return new Semaphore(native);
  }

  /** The name. */
  get name(): string {
    return this.#native.name;
  }

  /** The total number of permits this handle was created with. */
  get permits(): number {
    return this.#native.permits;
  }

  /** Waits for `count` permits (default 1) at once; `timeoutMs` and `signal` as for locks. */
  async acquire(options?: SemaphoreAcquireOptions): Promise<Permit> {
    const o = opts(options, 'options');
    const p = await abortable(
      o.signal,
      (cancel) => this.#native.acquire(num(o.count, 'count'), num(o.timeoutMs, 'timeoutMs'), cancel),
      (p) => p.dispose(),
    );
    return Permit._wrap(p);
  }

  /** One attempt at `count` permits (default 1): null when not enough are free. */
  async tryAcquire(options?: SemaphoreTryOptions): Promise<Permit | null> {
    const p = await call(async () => this.#native.tryAcquire(num(opts(options, 'options').count, 'count')));
    return p ? Permit._wrap(p) : null;
  }

  /** Acquires, runs `fn(permit)`, releases (see {@link Lock.using}). */
  async using<T>(fn: (permit: Permit) => T | PromiseLike<T>, options?: SemaphoreAcquireOptions): Promise<T> {
    return using(await this.acquire(options), fn);
  }

  /** Permits free right now. */
  available(): Promise<number> {
    return call(() => this.#native.available());
  }

  /** Current permit holders and the last token. */
  async inspect(): Promise<Inspection> {
    return inspection(await call(() => this.#native.inspect()));
  }
}

/**
 * A semaphore whose permits carry ids and leases of their own; any process may release a
 * permit by id (`client.permitSemaphore(name, permits)`).
 */
export class PermitSemaphore {
  readonly #native: N.PermitSemaphore;

  private constructor(native: N.PermitSemaphore) {
    this.#native = native;
  }

  /** @internal */
  static _wrap(native: N.PermitSemaphore): PermitSemaphore {
    return new PermitSemaphore(native);
  }

  /** The name. */
  get name(): string {
    return this.#native.name;
  }

  /**
   * Waits for a permit, held under the handle's lease or, with `leaseMs`, expiring that long
   * after the grant unless extended (`timeoutMs` and `leaseMs` cannot be combined yet).
   */
  async acquire(options?: PermitAcquireOptions): Promise<Permit> {
    const o = opts(options, 'options');
    const p = await abortable(
      o.signal,
      (cancel) => this.#native.acquire(num(o.timeoutMs, 'timeoutMs'), num(o.leaseMs, 'leaseMs'), cancel),
      (p) => p.dispose(),
    );
    return Permit._wrap(p);
  }

  /** One attempt: null when no permit is free. */
  async tryAcquire(): Promise<Permit | null> {
    const p = await call(() => this.#native.tryAcquire());
    return p ? Permit._wrap(p) : null;
  }

  /** Releases the permit `id`, whoever acquired it (`NotHeld` if no live permit has it). */
  release(id: string): Promise<void> {
    return call(async () => this.#native.release(str(id, 'id')));
  }

  /** Sets permit `id`'s lease to `leaseMs` from now (`NotHeld` if no live permit has it). */
  updateLease(id: string, leaseMs: number): Promise<void> {
    return call(async () => this.#native.updateLease(str(id, 'id'), reqNum(leaseMs, 'leaseMs')));
  }

  /** Permits free right now. */
  available(): Promise<number> {
    return call(() => this.#native.available());
  }

  /** Live permits (ids, lease left) and the last token. */
  async inspect(): Promise<Inspection> {
    return inspection(await call(() => this.#native.inspect()));
  }
}
