// baton for Node: distributed locks, semaphores and latches with fencing tokens over the
// store you already run. Every call returns a Promise; nothing blocks the event loop.

import { BatonError } from './errors.js';
import native from './native.js';

export { Client, connect } from './client.js';
export { BatonError, errorCodes } from './errors.js';
export type { BatonErrorCode } from './errors.js';
export { Guard, LockGuard, MultiGuard, Permit } from './guard.js';
export { Fence, fencedUpdate } from './fence.js';
export type { Fenced } from './fence.js';
export { CountDownLatch } from './latch.js';
export { FairLock, Lock, RwLock } from './lock.js';
export { MultiLock } from './multi.js';
export { PermitSemaphore, Semaphore } from './semaphore.js';
export type {
  AcquireOptions,
  Holder,
  Inspection,
  LockOptions,
  PermitAcquireOptions,
  SemaphoreAcquireOptions,
  SemaphoreTryOptions,
  WaitOptions,
} from './types.js';

/**
 * Test hook: rejects with the BatonError of kind `code`, through the same native path as
 * every real error.
 * @hidden
 */
export async function _raise(code: string): Promise<never> {
  try {
    await native._raise(code);
  } catch (e) {
    throw BatonError.from(e);
  }
  throw new BatonError('Backend', `_raise(${code}) did not reject`);
}

/**
 * Test hook: the error kinds the native core knows, in its declaration order.
 * @hidden
 */
export function _nativeErrorKinds(): string[] {
  return native._errorKinds();
}

/**
 * Test hook: a panic inside a native call, which must reject with `Backend`.
 * @hidden
 */
export async function _panic(): Promise<never> {
  try {
    await native._panic();
  } catch (e) {
    throw BatonError.from(e);
  }
  throw new BatonError('Backend', '_panic() did not reject');
}

/**
 * Benchmark hook: one native async call that does nothing (the binding's own cost).
 * @hidden
 */
export function _noop(): Promise<void> {
  return native._noop();
}

/**
 * Benchmark hook: the same through the promise bridge of acquire and release.
 * @hidden
 */
export function _noopSettled(): Promise<void> {
  return native._noopSettled();
}
