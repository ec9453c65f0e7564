// Native inspection objects → the public Inspection shape (nulls, not undefined).

import type * as N from './native.js';
import type { Holder, Inspection } from './types.js';

/** @internal */
export function inspection(i: N.Inspection): Inspection {
  return {
    name: i.name,
    kind: i.kind as Inspection['kind'],
    holders: i.holders.map(
      (h): Holder => ({
        owner: h.owner,
        mode: h.mode as Holder['mode'],
        count: h.count,
        token: h.token,
        leaseLeftMs: h.leaseLeftMs ?? null,
      }),
    ),
    waiters: i.waiters,
    lastToken: i.lastToken ?? null,
    count: i.count,
    permits: i.permits ?? null,
  };
}
