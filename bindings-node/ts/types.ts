// Plain option and result types of the public API.

/** Options of a lock-family handle (`client.lock(name, options)`); durations in milliseconds. */
export interface LockOptions {
  /** Explicit lease: the grant expires this long after acquire unless extended; no watchdog. */
  ttlMs?: number;
  /** Watchdog lease, renewed in the background while the guard lives (default: the client's, 30 s). */
  leaseMs?: number;
  /** Watchdog renewal period (default: a third of the lease, at most 10 s). */
  renewMs?: number;
  /** Binds reentrancy to this owner id instead of the handle. */
  owner?: string;
  /** How long a fair-lock waiter keeps its place without refreshing it (default 5 s). */
  queueTtlMs?: number;
}

/** Options of a wait. */
export interface AcquireOptions {
  /** Wait at most this long, then reject with `Timeout`. Default: wait until granted. */
  timeoutMs?: number;
  /** Aborting it cancels the wait (nothing stays held) and rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** Options of `semaphore.acquire`. */
export interface SemaphoreAcquireOptions extends AcquireOptions {
  /** How many permits to take at once (default 1). */
  count?: number;
}

/** Options of `semaphore.tryAcquire`. */
export interface SemaphoreTryOptions {
  /** How many permits to take at once (default 1). */
  count?: number;
}

/** Options of `permitSemaphore.acquire`. */
export interface PermitAcquireOptions extends AcquireOptions {
  /** A fixed lease for this permit instead of the handle's (watchdog by default). */
  leaseMs?: number;
}

/** Options of `countDownLatch.wait`. */
export type WaitOptions = AcquireOptions;

/** A snapshot of one name on a store: who holds it, who waits, the last token. */
export interface Inspection {
  /** The name inspected. */
  name: string;
  /** The primitive family. */
  kind: 'lock' | 'rwlock' | 'semaphore' | 'latch';
  /** Current holders (several for read locks and semaphores). */
  holders: Holder[];
  /** Waiters the store knows about (fair-lock queue, waiting writers), in order. */
  waiters: string[];
  /** The last fencing token granted on this name, null if none ever was. */
  lastToken: bigint | null;
  /** The count-down latch value (0 for other primitives). */
  count: number;
  /**
   * A semaphore's size as its holders recorded it, while any permit is held (a handle of
   * another size is refused until every permit is back); null otherwise.
   */
  permits: number | null;
}

/** One holder in an {@link Inspection}. */
export interface Holder {
  /** The owner id. */
  owner: string;
  /** How it holds the name. */
  mode: 'exclusive' | 'read' | 'write' | 'permits';
  /** Hold count for locks (re-entries), number of permits for semaphores. */
  count: number;
  /** The token of this grant. */
  token: bigint;
  /** Time left on the lease in milliseconds, null when the store does not report it. */
  leaseLeftMs: number | null;
}
