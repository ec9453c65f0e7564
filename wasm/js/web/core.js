// The browser's module: instantiated here, from baton_wasm_bg.wasm next to this file,
// before the facade reads from it (top-level await), so `import` alone is enough.
import init, * as core from './baton_wasm_core.js';

await init({ module_or_path: new URL('baton_wasm_bg.wasm', import.meta.url) });

export default core;
