//! The rename chain: the new login or email is claimed (`name_claim.lua`,
//! in the value's slot) and the old one freed, then the user's own keys show
//! it (the user HASH's `login`, or the secret HASH's `email`), and for a
//! login every status the user wrote (`status_login.lua`, each in its slot;
//! `statuses_changed` events make every hub drop the old copies). Recorded in
//! the outbox first, so a process that dies between the two steps leaves
//! the second to a worker, and never a name the index gave away still shown
//! by its old owner.

use crate::model::{Event, Id};
use crate::store::chains::entry::Entry;
use crate::store::events::body;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use futures::StreamExt;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

/// A login or email change.
/// (`Op::Rename`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenameOp {
    /// The user.
    pub uid: u64,
    /// `login` or `email`.
    pub field: String,
    /// The value before, as typed.
    pub old: String,
    /// The value after, as typed.
    pub new: String,
}

/// Statuses read per page while a login change relabels them.
const RELABEL_PAGE: isize = 500;
/// Status ids per `statuses_changed` event.
const RELABEL_EVENT: usize = 500;

/// Writes `login` into every status of `uid`'s (a page of the profile
/// at a time) and forgets them in this process's cache; returns their ids.
async fn relabel_statuses(store: &Store, uid: u64, login: &str) -> StoreResult<Vec<u64>> {
    let mut all = Vec::new();
    let mut start = 0isize;
    loop {
        let mut conn = store.conn();
        let page: Vec<u64> = conn
            .zrange(store.keys.profile(uid), start, start + RELABEL_PAGE - 1)
            .await?;
        if page.is_empty() {
            break;
        }
        start += page.len() as isize;
        let written: Vec<StoreResult<i64>> = futures::stream::iter(page.iter().copied())
            .map(|sid| async move {
                let mut conn = store.conn();
                Ok(store
                    .scripts
                    .status_login
                    .key(store.keys.status(sid))
                    .arg(uid)
                    .arg(login)
                    .invoke_async(&mut conn)
                    .await?)
            })
            .buffer_unordered(32)
            .collect()
            .await;
        for w in written {
            w?;
        }
        for sid in &page {
            store.caches.status.forget(*sid);
        }
        all.extend(page);
    }
    Ok(all)
}

impl RenameOp {
    /// Runs a rename's steps; `Conflict` when the new value is taken.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<()> {
        let RenameOp {
            uid,
            field,
            old,
            new,
        } = self;
        let mut conn = store.conn();
        // The new value is taken before the old is freed, so the user
        // always holds one of them (a rerun finds the new one theirs).
        let claimed = store.users().claim_name(new, *uid).await?;
        if claimed && old.to_lowercase() != new.to_lowercase() {
            store.users().release_name(old, *uid, None).await?;
        }
        if !claimed {
            store.outbox().finish_with(entry, Vec::new()).await?;
            let (code, what) = if field == "login" {
                ("login_taken", "That login")
            } else {
                ("email_taken", "That email")
            };
            return Err(StoreError::Conflict(
                code,
                format!("{what} is taken (logins and emails are unique ignoring case)."),
            ));
        }
        let _: () = if field == "login" {
            conn.hset(store.keys.user(*uid), "login", new).await?
        } else {
            conn.hset(store.keys.secret(*uid), "email", new).await?
        };
        // Requests of this process carry the new login at once (others
        // within the session cache's second).
        store.caches.sessions.forget_user(*uid);
        let mut events = Vec::new();
        if field == "login" {
            // Every status the user wrote shows the new login from now on;
            // the hubs of every process drop the old copies from their caches.
            for ids in relabel_statuses(store, *uid, new)
                .await?
                .chunks(RELABEL_EVENT)
            {
                events.push(body(&Event::StatusesChanged {
                    ids: ids.iter().copied().map(Id).collect(),
                }));
            }
        }
        store.outbox().finish_with(entry, events).await
    }
}
