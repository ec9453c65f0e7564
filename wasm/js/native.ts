// The wasm module in place of the Node addon: wasm/src exports the same classes and
// functions as bindings-node/src, so the Node package's facade (bindings-node/ts, every
// file but this one) runs over it unchanged. `../core.js` is the module of the target:
// the browser's (instantiated from baton_wasm_bg.wasm next to it) or Node's.

import native from '../core.js';

export default native;
export type * from '../baton_wasm_core.js';

/** Options of a lock-family handle, as wasm/src/convert.rs reads them. */
export interface LockOptions {
  ttlMs?: number | undefined | null;
  leaseMs?: number | undefined | null;
  renewMs?: number | undefined | null;
  owner?: string | undefined | null;
  queueTtlMs?: number | undefined | null;
}

/** One holder, as wasm/src/inspect.rs builds it. */
export interface Holder {
  owner: string;
  mode: string;
  count: number;
  token: bigint;
  leaseLeftMs: number | null;
}

/** An inspection, as wasm/src/inspect.rs builds it. */
export interface Inspection {
  name: string;
  kind: string;
  holders: Holder[];
  waiters: string[];
  lastToken: bigint | null;
  count: number;
  permits: number | null;
}
