//! `Fence` (fenced writes at the resource) and `fencedUpdate`. Tokens come in as decimal
//! strings (the facade takes `bigint | number`), so no value loses precision on the way.

use baton_bind::convert::token_text as token;
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

use crate::call;
use crate::errors::Answer;

/// A value written through a fence, with the token of its writer.
#[napi(object)]
pub struct Fenced {
    pub value: String,
    pub token: BigInt,
}

/// Fenced writes on a client's store.
#[napi]
pub struct Fence {
    inner: baton::Fence,
}

impl Fence {
    pub(crate) fn new(inner: baton::Fence) -> Fence {
        Fence { inner }
    }
}

#[napi]
impl Fence {
    /// Writes `value` under `key` unless a larger token was seen there; false when refused.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub async fn write(&self, key: String, value: String, token_text: String) -> napi::Result<Answer<bool>> {
        let fence = self.inner.clone();
        call::run(async move { fence.write(&key, &value, token(&token_text)?).await }).await
    }

    /// The value under `key` and the token of its writer, or null.
    #[napi(ts_return_type = "Promise<Fenced | null>")]
    pub async fn read(&self, key: String) -> napi::Result<Answer<Option<Fenced>>> {
        let fence = self.inner.clone();
        let answer = call::run(async move { fence.read(&key).await }).await?;
        Ok(answer.map(|f| f.map(|f| Fenced { value: f.value, token: BigInt::from(f.token.get()) })))
    }

    /// Runs a SQL `UPDATE` guarded by the token; the rows it changed.
    #[napi(ts_return_type = "Promise<number>")]
    pub async fn execute(&self, statement: String, token_text: String) -> napi::Result<Answer<f64>> {
        let fence = self.inner.clone();
        call::run(async move { fence.execute(&statement, token(&token_text)?).await.map(crate::convert::safe_number) })
            .await
    }
}

/// `statement` (one SQL `UPDATE`) guarded by the token.
#[napi(catch_unwind, ts_return_type = "string")]
pub fn fenced_update(statement: String, token_text: String) -> Answer<String> {
    Answer(token(&token_text).and_then(|t| baton::fenced_update(&statement, t)))
}
