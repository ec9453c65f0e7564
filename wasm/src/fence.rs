//! `Fence` (fenced writes at the resource) and `fencedUpdate`, as the Node addon has them:
//! tokens come in as decimal strings, a read is `{ value, token }` or `null`.

use baton_bind::convert::token_text as token;
use js_sys::{BigInt, Promise};
use wasm_bindgen::prelude::*;

use crate::call::{js_error, promise};
use crate::convert::safe_number;
use crate::inspect::object;

/// Fenced writes on a client's store.
#[wasm_bindgen]
pub struct Fence {
    inner: baton::Fence,
}

impl Fence {
    pub(crate) fn new(inner: baton::Fence) -> Fence {
        Fence { inner }
    }
}

#[wasm_bindgen]
impl Fence {
    /// Writes `value` under `key` unless a larger token was seen there; false when refused.
    pub fn write(&self, key: String, value: String, token_text: String) -> Promise {
        let fence = self.inner.clone();
        promise(async move { fence.write(&key, &value, token(&token_text)?).await })
    }

    /// `{ value, token }` of the last write under `key`, or null.
    pub fn read(&self, key: String) -> Promise {
        let fence = self.inner.clone();
        promise(async move {
            let got = fence.read(&key).await?;
            Ok(got.map_or(JsValue::NULL, |f| {
                object(&[("value", f.value.into()), ("token", BigInt::from(f.token.get()).into())])
            }))
        })
    }

    /// Runs a SQL `UPDATE` guarded by the token (SQL stores only: `Unsupported` here).
    pub fn execute(&self, statement: String, token_text: String) -> Promise {
        let fence = self.inner.clone();
        promise(async move { fence.execute(&statement, token(&token_text)?).await.map(safe_number) })
    }
}

/// `statement` (one SQL `UPDATE`) guarded by the token.
#[wasm_bindgen(js_name = fencedUpdate)]
pub fn fenced_update(statement: String, token_text: String) -> Result<String, JsValue> {
    token(&token_text).and_then(|t| baton::fenced_update(&statement, t)).map_err(|e| js_error(&e))
}
