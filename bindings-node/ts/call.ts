// Plumbing shared by the facade: error conversion, AbortSignal → native cancel token,
// and checks of option values JavaScript can get wrong at run time.

import { BatonError, invalid } from './errors.js';
import native from './native.js';
import type { CancelToken } from './native.js';

/**
 * A native call's promise with its errors turned into BatonError (a synchronous throw of
 * `run` rejects too). `then`, not an `async` wrapper: one promise and one microtask less
 * on every call (the hot calls' cost, BENCHMARKS.md).
 */
export function call<T>(run: () => Promise<T>): Promise<T> {
  let p: Promise<T>;
  try {
    p = run();
  } catch (e) {
    return Promise.reject(BatonError.from(e));
  }
  return p.then(undefined, rethrow);
}

function rethrow(e: unknown): never {
  throw BatonError.from(e);
}

/** Runs a synchronous native call, turning its errors into BatonError. */
export function callSync<T>(run: () => T): T {
  try {
    return run();
  } catch (e) {
    throw BatonError.from(e);
  }
}

/**
 * Runs a native wait that `signal` may abort. On abort the native future is dropped (the
 * core's waits are cancel-safe) and the call rejects with `signal.reason`, like `fetch`.
 * A grant that lands as the signal fires is given back with `undo`, so an aborted
 * acquire never leaves a hold.
 */
export function abortable<T>(
  signal: AbortSignal | undefined,
  run: (cancel: CancelToken | undefined) => Promise<T>,
  undo?: (value: T) => Promise<unknown>,
): Promise<T> {
  return signal === undefined ? call(() => run(undefined)) : abortableWith(signal, run, undo);
}

async function abortableWith<T>(
  signal: AbortSignal,
  run: (cancel: CancelToken | undefined) => Promise<T>,
  undo?: (value: T) => Promise<unknown>,
): Promise<T> {
  if (!(signal instanceof AbortSignal)) throw invalid('signal must be an AbortSignal');
  signal.throwIfAborted();
  const token = new native.CancelToken();
  const onAbort = (): void => token.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const value = await run(token);
    if (signal.aborted) {
      await undo?.(value).catch(() => undefined);
      throw signal.reason;
    }
    return value;
  } catch (e) {
    if (signal.aborted) throw signal.reason;
    throw BatonError.from(e);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** The options object itself: undefined/null for none, else it must be an object. */
export function opts<T extends object>(o: T | undefined | null, what: string): Partial<T> {
  if (o === undefined || o === null) return {};
  if (typeof o !== 'object') throw invalid(`${what} must be an object, got ${typeof o}`);
  return o;
}

/** An optional number option (milliseconds or a count). */
export function num(v: unknown, what: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number') throw invalid(`${what} must be a number, got ${typeof v}`);
  return v;
}

/** A required number argument. */
export function reqNum(v: unknown, what: string): number {
  const n = num(v, what);
  if (n === undefined) throw invalid(`${what} is required`);
  return n;
}

/** A string argument. */
export function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw invalid(`${what} must be a string, got ${typeof v}`);
  return v;
}
