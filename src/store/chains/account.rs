//! Deleting an account: the account closes at once (marked deleted, its
//! names released, its sessions ended), then everything it holds is undone
//! as its own actions would undo it, each through its own chain, before its
//! keys go. The whole is one outbox op whose steps all read what is left,
//! so a process that dies half way leaves the rest to a worker, and a rerun
//! repeats nothing. A feature that gives a user something to hold (a group
//! membership, filter rules) adds its pass to [`DeleteAccountOp::run`].

use crate::model::GroupChange;
use crate::model::HOME_CAP;
use crate::store::chains::entry::Entry;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use futures::StreamExt;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// An account deleted (`chains/account.rs`): everything it holds
/// undone as its own actions would undo it.
/// (`Op::DeleteAccount`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeleteAccountOp {
    /// The user.
    pub uid: u64,
    /// Their login, as typed (reserved for a while).
    pub login: String,
    /// Their email, as typed (freed at once).
    pub email: String,
    /// Time of the deletion.
    pub at: f64,
}

/// Entries undone per round (then the op's lease is renewed).
const ROUND: isize = 100;
/// Chains run at once while an account is emptied.
const PARALLEL: usize = 8;

/// A chain whose target is already gone (or refused) is done as far as
/// the deletion is concerned.
pub(crate) fn settled(result: StoreResult<()>) -> StoreResult<()> {
    match result {
        Err(StoreError::NotFound(_) | StoreError::Forbidden(_) | StoreError::Conflict(..)) => {
            Ok(())
        }
        other => other,
    }
}

impl Store {
    /// The steps that make the account gone at once; idempotent.
    pub(crate) async fn close_account(
        &self,
        entry: &Entry,
        op: &DeleteAccountOp,
    ) -> StoreResult<()> {
        let DeleteAccountOp {
            uid,
            ref login,
            ref email,
            at,
        } = *op;
        let mut conn = self.conn();
        // Marked: the user is 404 and no new follow, like or message
        // reaches them from here on.
        let _: () = conn.hset(self.keys.user(uid), "deleted", entry.n).await?;
        let until = if self.limits.login_reservation == 0 {
            0
        } else {
            at as u64 + self.limits.login_reservation
        };
        // The email is free at once; the login stays reserved for a while,
        // so nobody takes a name others still know. Only values the user
        // still holds change.
        self.users().release_name(email, uid, None).await?;
        self.users()
            .release_name(login, uid, (until > 0).then_some(until))
            .await?;
        let sessions = self.sessions().all_of(uid).await?;
        self.sessions().close(&sessions, None).await?;
        let _: () = conn.del(self.keys.user_sessions(uid)).await?;
        Ok(())
    }

    /// The statuses whose deletes must reach the followers' homes: the
    /// newest [`HOME_CAP`] of the profile, and a round taken from it that a
    /// process died during.
    async fn homed_statuses(&self, uid: u64) -> StoreResult<HashSet<u64>> {
        let profile = self.keys.profile(uid);
        let mut conn = self.conn();
        let (newest, round): (Vec<u64>, Vec<u64>) = redis::pipe()
            .zrevrange(&profile, 0, HOME_CAP as isize - 1)
            .zrange(self.keys.undo_round_of(&profile), 0, -1)
            .query_async(&mut conn)
            .await?;
        Ok(newest.into_iter().chain(round).collect())
    }

    /// Undoes every member of the user's ZSET `key` with `undo`, a round at
    /// a time (newest first when `newest`), until none is left. A round is
    /// moved out of the set into the set's own round ZSET (`undo_take.lua`)
    /// and dropped only once every chain in it has run, so a process killed
    /// during a round leaves it whole for the rerun, which takes it up when
    /// it comes to that set again. Renews the op's lease
    /// after every round.
    async fn undo_each<F, Fut>(
        &self,
        entry: &Entry,
        key: &str,
        newest: bool,
        undo: F,
    ) -> StoreResult<()>
    where
        F: Fn(u64) -> Fut,
        Fut: std::future::Future<Output = StoreResult<()>>,
    {
        self.undo_rounds(entry, key, newest, |round| self.undo_all(round, &undo))
            .await
    }

    /// [`Store::undo_each`] with a round's work in one call, `each_round`.
    async fn undo_rounds<G, Fut>(
        &self,
        entry: &Entry,
        key: &str,
        newest: bool,
        each_round: G,
    ) -> StoreResult<()>
    where
        G: Fn(Vec<u64>) -> Fut,
        Fut: std::future::Future<Output = StoreResult<()>>,
    {
        let round_key = self.keys.undo_round_of(key);
        loop {
            let mut conn = self.conn();
            let round: Vec<u64> = self
                .scripts
                .undo_take
                .key(key)
                .key(&round_key)
                .arg(ROUND)
                .arg(if newest { "1" } else { "0" })
                .invoke_async(&mut conn)
                .await?;
            if round.is_empty() {
                return Ok(());
            }
            each_round(round).await?;
            let _: () = conn.del(&round_key).await?;
            self.outbox().extend(entry).await?;
        }
    }

    /// Runs `undo` on every member of a round, [`PARALLEL`] at a time.
    async fn undo_all<F, Fut>(&self, round: Vec<u64>, undo: &F) -> StoreResult<()>
    where
        F: Fn(u64) -> Fut,
        Fut: std::future::Future<Output = StoreResult<()>>,
    {
        let results: Vec<StoreResult<()>> = futures::stream::iter(round)
            .map(undo)
            .buffer_unordered(PARALLEL)
            .collect()
            .await;
        for r in results {
            settled(r)?;
        }
        Ok(())
    }
}

impl DeleteAccountOp {
    /// The whole deletion: closed (again: idempotent), emptied, its keys
    /// removed, the op retired.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<()> {
        let DeleteAccountOp { uid, at, .. } = *self;
        store.close_account(entry, self).await?;
        let private = {
            let mut conn = store.conn();
            let p: Option<String> = conn.hget(store.keys.user(uid), "private").await?;
            p.as_deref() == Some("1")
        };
        // The statuses first, while the follows stand, so that each delete
        // reaches every stream its author's delete would (followers' user
        // streams too). Newest first, so that what timelines show goes
        // first, a round at a time; then the round leaves the followers'
        // homes, one ZREM per home, before the next. Only the newest
        // HOME_CAP can be in a home (a home keeps its newest HOME_CAP).
        let homed = store.homed_statuses(uid).await?;
        let homed = &homed;
        let profile = store.keys.profile(uid);
        store
            .undo_rounds(entry, &profile, true, |round| async move {
                let delete = |sid| store.delete_for_account(sid, uid, private, at);
                store.undo_all(round.clone(), &delete).await?;
                let shown: Vec<u64> = round.into_iter().filter(|s| homed.contains(s)).collect();
                store.fanout().unhome_everywhere(uid, &shown).await
            })
            .await?;
        // Then what they posted in groups (in no home).
        let group_statuses = store.keys.user_group_statuses(uid);
        store
            .undo_each(entry, &group_statuses, true, |sid| {
                store.delete_for_account(sid, uid, private, at)
            })
            .await?;
        // Then the follows: the deletes above went where the author's own
        // would have.
        store
            .undo_each(entry, &store.keys.followers(uid), false, |f| async move {
                store.undo_follow(f, uid, at).await
            })
            .await?;
        store
            .undo_each(entry, &store.keys.following(uid), false, |t| async move {
                store.undo_follow(uid, t, at).await
            })
            .await?;
        store
            .undo_each(entry, &store.keys.requests(uid), false, |s| async move {
                store.follow_requests().withdraw(s, uid).await.map(|_| ())
            })
            .await?;
        store
            .undo_each(entry, &store.keys.requested(uid), false, |t| async move {
                store.follow_requests().withdraw(uid, t).await.map(|_| ())
            })
            .await?;
        store
            .undo_each(
                entry,
                &store.keys.user_groups(uid),
                false,
                |gid| async move {
                    store
                        .groups()
                        .change(gid, uid, uid, GroupChange::Purge, usize::MAX)
                        .await
                        .map(|_| ())
                },
            )
            .await?;
        store
            .undo_each(entry, &store.keys.likes(uid), true, |sid| async move {
                let status = store.statuses().get(sid).await?;
                let author: u64 = status.uid.parse().unwrap_or(0);
                let author_private = store
                    .users()
                    .get(author)
                    .await
                    .map(|u| u.private)
                    .unwrap_or(false);
                store
                    .likes()
                    .set(uid, sid, author, author_private, false)
                    .await
                    .map(|_| ())
            })
            .await?;
        store.undo_relations(uid, at).await?;
        store
            .undo_each(
                entry,
                &store.keys.user_convs(uid),
                false,
                |cid| async move { store.conversations().leave_as(cid, uid, true).await },
            )
            .await?;
        store.lists().drop_all(uid).await?;
        // What is left is the user's own keys, all in their slot.
        let k = &store.keys;
        let mut conn = store.conn();
        let _: () = redis::cmd("DEL")
            .arg(k.user(uid))
            .arg(k.secret(uid))
            .arg(k.home(uid))
            .arg(k.profile(uid))
            .arg(k.mentions(uid))
            .arg(k.likes(uid))
            .arg(k.following(uid))
            .arg(k.followers(uid))
            .arg(k.follow_applied(uid))
            .arg(k.follower_seq(uid))
            .arg(k.deleted(uid))
            .arg(k.requests(uid))
            .arg(k.requested(uid))
            .arg(k.hide(uid))
            .arg(k.hidden_by(uid))
            .arg(k.blocks(uid))
            .arg(k.mutes(uid))
            .arg(k.user_convs(uid))
            .arg(k.user_groups(uid))
            .arg(k.user_group_statuses(uid))
            .arg(k.direct(uid))
            .arg(k.stream_leases(uid))
            .arg(k.user_sessions(uid))
            .arg(k.live_sessions(uid))
            .arg(k.undo_round(uid))
            .arg(k.rules(uid))
            .arg(k.rule_values(uid))
            .arg(k.rule_order(uid))
            .arg(k.bookmarks(uid))
            .arg(k.lists(uid))
            .arg(k.notifications(uid))
            .arg(k.notification_data(uid))
            .arg(k.notification_keys(uid))
            .arg(k.notification_marker(uid))
            .arg(k.markers(uid))
            .query_async(&mut conn)
            .await?;
        store.outbox().finish_with(entry, Vec::new()).await
    }
}
