//! Test and benchmark hooks (underscored names, hidden in the facade), as the Node addon's.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::call::promise;

/// Rejects with an error of the kind named `kind`, through the path of every real error.
#[wasm_bindgen(js_name = "_raise")]
pub fn raise(kind: String) -> Promise {
    promise(async move { Err::<JsValue, _>(baton_bind::kind::raised(&kind)) })
}

/// The core's error kind names, in declaration order.
#[wasm_bindgen(js_name = "_errorKinds")]
pub fn error_kinds() -> Vec<String> {
    baton_bind::kind::names().into_iter().map(str::to_owned).collect()
}

/// A panic inside a call: it must reject with `Backend` (and the module is broken after).
#[wasm_bindgen(js_name = "_panic")]
pub fn panic_hook() -> Promise {
    promise::<JsValue, _>(async { panic!("a deliberate panic from _panic()") })
}

/// One call that does nothing (the bridge's own cost).
#[wasm_bindgen(js_name = "_noop")]
pub fn noop() -> Promise {
    promise(async { Ok(JsValue::UNDEFINED) })
}

/// The same through the acquire/release bridge (one bridge here).
#[wasm_bindgen(js_name = "_noopSettled")]
pub fn noop_settled() -> Promise {
    noop()
}
