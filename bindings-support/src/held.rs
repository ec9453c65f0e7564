//! A host guard object's contents: the [`Cell`] of its grant plus a snapshot of the grant's
//! fields, read once so that the host's getters never wait on the cell.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use baton::Result;

use crate::cell::{Cell, CoreGuard};

/// A guard cell and the data read from the grant when it was made.
pub struct Held<G, D> {
    pub cell: Arc<Cell<G>>,
    pub data: D,
}

impl<G: CoreGuard, D> Held<G, D> {
    /// `guard` in a cell named `what` in messages, beside `data`.
    pub fn new(guard: G, what: String, data: D) -> Held<G, D> {
        Held { cell: Cell::new(guard, what), data }
    }
}

/// A permit grant's token, id and semaphore name, and its count, which `release_many`
/// keeps in step.
pub struct PermitData {
    pub token: u64,
    pub id: String,
    pub name: String,
    count: Arc<AtomicU32>,
}

impl PermitData {
    /// The count as last known: at the grant, or after the last `release_many`.
    pub fn count(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }
}

/// The permits of a semaphore (or one permit of a permit semaphore) behind a host object.
pub type HeldPermit = Held<baton::Permit, PermitData>;

impl Held<baton::Permit, PermitData> {
    /// Reads `p`'s fields and puts it in a cell.
    pub fn permit(p: baton::Permit) -> HeldPermit {
        let data = PermitData {
            token: p.token().get(),
            id: p.id().to_owned(),
            name: p.name().to_owned(),
            count: Arc::new(AtomicU32::new(p.count())),
        };
        Held::new(p, format!("permit `{}` of `{}`", data.id, data.name), data)
    }

    /// Permits still held: 0 once released through this guard.
    pub fn count(&self) -> u32 {
        if self.cell.is_released() { 0 } else { self.data.count() }
    }

    /// Gives `n` permits back and keeps the rest, the count in step. What it needs is
    /// taken now, so the future may outlive the borrow (a host call's promise); `n` is the
    /// host number's conversion, whose error the future returns.
    pub fn release_many(&self, n: Result<u32>) -> impl Future<Output = Result<()>> + Send + 'static {
        let (cell, count) = (self.cell.clone(), self.data.count.clone());
        async move {
            let n = n?;
            let mut p = cell.held_mut().await?;
            let out = p.release_many(n).await;
            count.store(p.count(), Ordering::Release);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton::ErrorKind;

    #[tokio::test]
    async fn release_many_keeps_the_count_in_step() {
        let client = baton::Client::connect("memory://bind-held").await.unwrap();
        let sem = client.semaphore("s", 3);
        let held = Held::permit(sem.acquire_many(3).await.unwrap());
        assert_eq!((held.count(), held.data.name.as_str(), held.data.id.is_empty()), (3, "s", false));
        held.release_many(Ok(2)).await.unwrap();
        assert_eq!((held.count(), sem.available().await.unwrap()), (1, 2));
        let e = held.release_many(Err(baton::Error::new(ErrorKind::InvalidArgument, "n"))).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        held.cell.clone().release(true).await.unwrap();
        assert_eq!((held.count(), held.data.count()), (0, 1));
        assert_eq!(held.release_many(Ok(1)).await.unwrap_err().kind(), ErrorKind::NotHeld);
    }
}
