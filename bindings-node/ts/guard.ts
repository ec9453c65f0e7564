// Guards: what a granted acquire returns. Each releases on `release()`, on
// `await using` scope exit (Symbol.asyncDispose), or — if simply dropped — in the
// background once garbage-collected (the lease then also ends on its own).

import { BatonError } from './errors.js';
import { call, reqNum } from './call.js';
import type * as N from './native.js';

type NativeGuard = N.LockGuard | N.Permit | N.MultiGuard;

/** What every guard shares: the lost signal, release and `await using` support. */
export abstract class Guard implements AsyncDisposable {
  readonly #native: NativeGuard;
  #controller: AbortController | undefined;

  /** @internal */
  protected constructor(native: NativeGuard) {
    this.#native = native;
  }

  /** How messages name what this guard holds. */
  protected abstract describe(): string;

  /**
   * Aborted when the lease is lost (renewal refused or failing past the lease, ttl expired,
   * client closed), with a `LockLost` BatonError as its reason. Never aborted by a normal
   * release. Watching it does not keep the process alive.
   */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      // The callback is rooted by the native side until the grant ends, so it must not
      // capture the guard (that would keep the guard, and its hold, from being collected).
      const message = `the lease on ${this.describe()} was lost`;
      const abort = (): void => {
        if (!controller.signal.aborted) controller.abort(new BatonError('LockLost', message));
      };
      this.#native.onLost(abort);
      if (this.#native.isLost) abort();
    }
    return this.#controller.signal;
  }

  /** Whether the lease is known to be lost. */
  get lost(): boolean {
    return this.#native.isLost;
  }

  /** Whether `release()` was called (or the guard was disposed). */
  get released(): boolean {
    return this.#native.released;
  }

  /**
   * Releases. Rejects with `LockLost` if the lease had been lost (whatever the guard
   * protected is suspect), `NotHeld` if this guard was released already.
   */
  release(): Promise<void> {
    return call(() => this.#native.release());
  }

  /** Releases unless released already: what `await using` calls on scope exit. */
  [Symbol.asyncDispose](): Promise<void> {
    return call(() => this.#native.dispose());
  }
}

/** A held lock (or read/write hold of a read-write lock). */
export class LockGuard extends Guard {
  readonly #native: N.LockGuard;
  // Read from the native guard on first use: a guard that is only released (the common
  // case) costs no native calls for them.
  #token: bigint | undefined;
  #name: string | undefined;
  #owner: string | undefined;

  private constructor(native: N.LockGuard) {
    super(native);
    this.#native = native;
  }

  /** The fencing token of this grant: pass it to the resource you protect. */
  get token(): bigint {
    return (this.#token ??= this.#native.token);
  }

  /** The name held. */
  get name(): string {
    return (this.#name ??= this.#native.name);
  }

  /** The owner id the grant is held under. */
  get owner(): string {
    return (this.#owner ??= this.#native.owner);
  }

  /** @internal */
  static _wrap(native: N.LockGuard): LockGuard {
    return new LockGuard(native);
  }

  protected describe(): string {
    return `\`${this.name}\` (token ${this.token})`;
  }

  /** Sets the lease to `leaseMs` from now (for ttl locks; a watchdog lease keeps renewing after). */
  extend(leaseMs: number): Promise<void> {
    return call(async () => this.#native.extend(reqNum(leaseMs, 'leaseMs')));
  }
}

/** Permits held from a semaphore or permit semaphore. */
export class Permit extends Guard {
  /** The fencing token of this grant. */
  readonly token: bigint;
  /** The permit id (what a permit semaphore releases it by). */
  readonly id: string;
  /** The semaphore's name. */
  readonly name: string;
  readonly #native: N.Permit;

  private constructor(native: N.Permit) {
    super(native);
    this.#native = native;
    this.token = native.token;
    this.id = native.id;
    this.name = native.name;
  }

  /** @internal */
  static _wrap(native: N.Permit): Permit {
    return new Permit(native);
  }

  protected describe(): string {
    return `permit \`${this.id}\` of \`${this.name}\``;
  }

  /** How many permits this still holds (0 once released). */
  get count(): number {
    return this.#native.count;
  }

  /** Gives `n` permits back and keeps the rest. */
  releaseMany(n: number): Promise<void> {
    return call(async () => this.#native.releaseMany(reqNum(n, 'n')));
  }

  /** Sets the lease to `leaseMs` from now. */
  extend(leaseMs: number): Promise<void> {
    return call(async () => this.#native.extend(reqNum(leaseMs, 'leaseMs')));
  }
}

/** Every lock of a multi-lock, held. */
export class MultiGuard extends Guard {
  /** One fencing token per lock, in acquisition order. */
  readonly tokens: readonly bigint[];
  /** The names held, in acquisition order. */
  readonly names: readonly string[];

  private constructor(native: N.MultiGuard) {
    super(native);
    this.tokens = Object.freeze(native.tokens);
    this.names = Object.freeze(native.names);
  }

  /** @internal */
  static _wrap(native: N.MultiGuard): MultiGuard {
    return new MultiGuard(native);
  }

  protected describe(): string {
    return `the multi-lock over ${this.names.join(', ')}`;
  }
}
