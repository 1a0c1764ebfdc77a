//! The follow-request chain: the private account's incoming requests,
//! the requester's outgoing ones, then the event.

use crate::model::Event;
use crate::model::Id;
use crate::store::chains::entry::Entry;
use crate::store::events::body;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

/// A follow request asked (`ask`) or withdrawn (rejected, cancelled,
/// authorized).
/// (`Op::Request`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestOp {
    /// Who asks.
    pub source: u64,
    /// The private account.
    pub target: u64,
    /// Asked (true) or dropped.
    pub ask: bool,
    /// Time of the change.
    pub at: f64,
}

impl RequestOp {
    /// A follow request's steps: the private account's incoming requests,
    /// the asker's outgoing ones; then, for a new request, its event.
    /// Returns whether the incoming set changed.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<bool> {
        let RequestOp {
            source,
            target,
            ask,
            at,
        } = *self;
        let mut conn = store.conn();
        let changed: i64 = if ask {
            let added: i64 = store
                .scripts
                .request_add
                .key(store.keys.requests(target))
                .key(store.keys.hide(target))
                .arg(at)
                .arg(source)
                .invoke_async(&mut conn)
                .await?;
            let mine: i64 = store
                .scripts
                .request_add
                .key(store.keys.requested(source))
                .key(store.keys.hide(source))
                .arg(at)
                .arg(target)
                .invoke_async(&mut conn)
                .await?;
            if added == -1 || mine == -1 {
                // A block stands between them: nothing of the request stays.
                let _: i64 = conn.zrem(store.keys.requests(target), source).await?;
                let _: i64 = conn.zrem(store.keys.requested(source), target).await?;
                store.outbox().finish_with(entry, Vec::new()).await?;
                return Err(StoreError::follow_blocked());
            }
            added
        } else {
            let removed: i64 = conn.zrem(store.keys.requests(target), source).await?;
            let _: i64 = conn.zrem(store.keys.requested(source), target).await?;
            removed
        };
        let events = if ask && changed == 1 {
            vec![body(&Event::FollowRequest {
                at,
                source: Id(source),
                target: Id(target),
                private: true,
            })]
        } else {
            Vec::new()
        };
        store.outbox().finish_with(entry, events).await?;
        Ok(changed == 1)
    }
}
