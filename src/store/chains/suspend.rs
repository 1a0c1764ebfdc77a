//! The suspension chain: the flag, the set the hubs load, the event, the
//! sessions, the audit entry ([`store::moderation`](crate::store::entities::moderation) starts it).

use crate::model::Event;
use crate::model::Id;
use crate::store::chains::entry::Entry;
use crate::store::chains::finish::Finish;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::settings::Pauses;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

/// An account suspended (`on`) or its suspension lifted by an admin
/// ([`store::moderation`](crate::store::entities::moderation)): the flag, the set the hubs load, the
/// sessions, the audit entry (when `audit`), then the event.
/// (`Op::Suspend`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuspendOp {
    /// The user.
    pub uid: u64,
    /// Suspend (true) or lift.
    pub on: bool,
    /// The admin.
    pub admin: u64,
    /// The id of the audit entry the change is (none when a report's
    /// resolution records it).
    pub audit: Option<u64>,
    /// Audit entries kept.
    pub keep: usize,
}

impl SuspendOp {
    /// A suspension's steps (idempotent: a rerun finishes what a dead one
    /// began and records nothing twice).
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<bool> {
        let SuspendOp {
            uid,
            on,
            admin,
            audit,
            keep,
        } = *self;
        let mut conn = store.conn();
        let changed: i64 = store
            .scripts
            .user_suspend
            .key(store.keys.user(uid))
            .arg(if on { "1" } else { "0" })
            .arg(entry.n)
            .invoke_async(&mut conn)
            .await?;
        if changed < 0 {
            store.outbox().finish(entry, Finish::default()).await?;
            return Err(StoreError::NotFound("user"));
        }
        Pauses::hold(store.pauses.suspend).await;
        if on {
            let _: () = conn.sadd(store.keys.suspended(), uid).await?;
        } else {
            let _: () = conn.srem(store.keys.suspended(), uid).await?;
        }
        store.caches.suspended.set(uid, on);
        // The event before the sessions end, so that every hub ends the
        // user's streams with `suspended` (not `revoked`); a rerun emits it
        // again, which changes nothing.
        let event = crate::store::events::body(&Event::Suspended { uid: Id(uid), on });
        store.events().emit(&event).await?;
        if on {
            let sessions = store.sessions().all_of(uid).await?;
            store.sessions().close(&sessions, None).await?;
        }
        if let (1, Some(id)) = (changed, audit) {
            let action = if on { "suspend_user" } else { "unsuspend_user" };
            store
                .moderation()
                .audit_put(id, admin, action, uid, None, keep)
                .await?;
        }
        store.outbox().finish_with(entry, Vec::new()).await?;
        Ok(changed == 1)
    }
}
