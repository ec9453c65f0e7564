// The wasm-bindgen module of this package, instantiated (see core.js).
import type * as core from './baton_wasm_core.js';
declare const native: typeof core;
export default native;
