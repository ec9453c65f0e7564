// baton on WebAssembly: the same API as the Node package `baton-lock` (its facade, over the
// wasm module). The entry of both packages `scripts/package wasm` builds: wasm/pkg
// (browsers, `<script type="module">`) and wasm/pkg-node (Node ≥ 20).
//
//   import init, { connect } from './baton_wasm.js';
//   await init();
//   const client = await connect('etcd+http://127.0.0.1:2379');   // or 'memory://'
//
// The module is instantiated when it is imported; `init()` is kept for the usual
// wasm-bindgen pattern and resolves at once.
import core from './core.js';

/** Resolves when the module is ready (it is, once imported). */
export default async function init() {
  return core;
}

export * from './facade/index.js';
