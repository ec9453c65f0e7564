// Fenced writes at the resource: Fence (client.fence()) and fencedUpdate.

import { call, callSync, str } from './call.js';
import { invalid } from './errors.js';
import native from './native.js';
import type * as N from './native.js';

/** A value written through a fence, with the token its writer held. */
export interface Fenced {
  value: string;
  token: bigint;
}

/** A fencing token as the addon takes it: a decimal string (no precision lost). */
function tokenText(t: unknown): string {
  if (typeof t === 'bigint' && t >= 0n) return t.toString();
  if (typeof t === 'number' && Number.isSafeInteger(t) && t >= 0) return t.toString();
  throw invalid(`token must be a bigint or a safe whole number ≥ 0, got ${typeof t === 'object' ? 'an object' : String(t)}`);
}

/**
 * Fenced writes on a client's store (`client.fence()`): the store itself refuses a write
 * whose token is below one it has seen for the key, so a holder paused past its lease
 * cannot overwrite what a later holder wrote.
 */
export class Fence {
  readonly #native: N.Fence;

  private constructor(native: N.Fence) {
    this.#native = native;
  }

  /** @internal */
  static _wrap(native: N.Fence): Fence {
    return new Fence(native);
  }

  /** Writes `value` under `key` unless a larger token was seen there; false when refused. */
  write(key: string, value: string, token: bigint | number): Promise<boolean> {
    return call(async () => this.#native.write(str(key, 'key'), str(value, 'value'), tokenText(token)));
  }

  /** The value under `key` and the token of its writer, or null. */
  read(key: string): Promise<Fenced | null> {
    return call(async () => this.#native.read(str(key, 'key')));
  }

  /** Runs a SQL `UPDATE` guarded by `token` (see `fencedUpdate`); resolves to the rows it changed. */
  execute(statement: string, token: bigint | number): Promise<number> {
    return call(async () => this.#native.execute(str(statement, 'statement'), tokenText(token)));
  }
}

/**
 * `statement` (one SQL `UPDATE`) guarded by `token`: `fence = token` in its SET list and
 * `fence <= token` in its WHERE clause. Run the result with your own driver.
 */
export function fencedUpdate(statement: string, token: bigint | number): string {
  return callSync(() => native.fencedUpdate(str(statement, 'statement'), tokenText(token)));
}
