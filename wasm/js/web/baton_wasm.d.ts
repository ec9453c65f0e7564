// baton on WebAssembly: the same API as the Node package `baton-lock`.
/** Resolves when the module is ready (it is, once imported). */
export default function init(): Promise<unknown>;
export * from './facade/index.js';
