// Node's module: wasm-bindgen's `nodejs` target instantiates baton_wasm_bg.wasm when loaded.
import core from './baton_wasm_core.cjs';

export default core;
