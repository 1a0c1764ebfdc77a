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
use crate::store::chains::payloads::DeleteAccountOp;
use crate::store::chains::undo::{delete_for_account, settled, undo_follow, undo_relations};
use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;
use futures::StreamExt;
use redis::AsyncCommands;
use std::collections::HashSet;

/// Entries undone per round (then the op's lease is renewed).
const ROUND: isize = 100;
/// Chains run at once while an account is emptied.
const PARALLEL: usize = 8;

/// The steps that make the account gone at once; idempotent.
pub(crate) async fn close_account(
    store: &Store,
    entry: &Entry,
    op: &DeleteAccountOp,
) -> StoreResult<()> {
    let DeleteAccountOp {
        uid,
        ref login,
        ref email,
        at,
    } = *op;
    let mut conn = store.conn();
    // Marked: the user is 404 and no new follow, like or message
    // reaches them from here on.
    let _: () = conn.hset(store.keys.user(uid), "deleted", entry.n).await?;
    let until = if store.limits.login_reservation == 0 {
        0
    } else {
        at as u64 + store.limits.login_reservation
    };
    // The email is free at once; the login stays reserved for a while,
    // so nobody takes a name others still know. Only values the user
    // still holds change.
    store.users().release_name(email, uid, None).await?;
    store
        .users()
        .release_name(login, uid, (until > 0).then_some(until))
        .await?;
    let sessions = store.sessions().all_of(uid).await?;
    store.sessions().close(&sessions, None).await?;
    let _: () = conn.del(store.keys.user_sessions(uid)).await?;
    Ok(())
}

/// The statuses whose deletes must reach the followers' homes: the
/// newest [`HOME_CAP`] of the profile, and a round taken from it that a
/// process died during.
async fn homed_statuses(store: &Store, uid: u64) -> StoreResult<HashSet<u64>> {
    let profile = store.keys.profile(uid);
    let mut conn = store.conn();
    let (newest, round): (Vec<u64>, Vec<u64>) = redis::pipe()
        .zrevrange(&profile, 0, HOME_CAP as isize - 1)
        .zrange(store.keys.undo_round_of(&profile), 0, -1)
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
    store: &Store,
    entry: &Entry,
    key: &str,
    newest: bool,
    undo: F,
) -> StoreResult<()>
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = StoreResult<()>>,
{
    undo_rounds(store, entry, key, newest, |round| undo_all(round, &undo)).await
}

/// [`undo_each`] with a round's work in one call, `each_round`.
async fn undo_rounds<G, Fut>(
    store: &Store,
    entry: &Entry,
    key: &str,
    newest: bool,
    each_round: G,
) -> StoreResult<()>
where
    G: Fn(Vec<u64>) -> Fut,
    Fut: std::future::Future<Output = StoreResult<()>>,
{
    let round_key = store.keys.undo_round_of(key);
    loop {
        let mut conn = store.conn();
        let round: Vec<u64> = store
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
        store.outbox().extend(entry).await?;
    }
}

/// Runs `undo` on every member of a round, [`PARALLEL`] at a time.
async fn undo_all<F, Fut>(round: Vec<u64>, undo: &F) -> StoreResult<()>
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

impl DeleteAccountOp {
    /// The whole deletion: closed (again: idempotent), its statuses
    /// deleted ([`DeleteAccountOp::delete_statuses`]), what it holds with
    /// others undone ([`DeleteAccountOp::undo_ties`]), its keys removed
    /// ([`DeleteAccountOp::remove_keys`]), the op retired.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<()> {
        close_account(store, entry, self).await?;
        self.delete_statuses(store, entry).await?;
        self.undo_ties(store, entry).await?;
        self.remove_keys(store).await?;
        store.outbox().finish_with(entry, Vec::new()).await
    }

    /// The statuses first, while the follows stand, so that each delete
    /// reaches every stream its author's delete would (followers' user
    /// streams too). Newest first, so that what timelines show goes first,
    /// a round at a time; then the round leaves the followers' homes, one
    /// ZREM per home, before the next. Only the newest HOME_CAP can be in
    /// a home (a home keeps its newest HOME_CAP). Then what they posted in
    /// groups (in no home).
    async fn delete_statuses(&self, store: &Store, entry: &Entry) -> StoreResult<()> {
        let DeleteAccountOp { uid, at, .. } = *self;
        let private = {
            let mut conn = store.conn();
            let p: Option<String> = conn.hget(store.keys.user(uid), "private").await?;
            p.as_deref() == Some("1")
        };
        let homed = homed_statuses(store, uid).await?;
        let homed = &homed;
        let profile = store.keys.profile(uid);
        undo_rounds(store, entry, &profile, true, |round| async move {
            let delete = |sid| delete_for_account(store, sid, uid, private, at);
            undo_all(round.clone(), &delete).await?;
            let shown: Vec<u64> = round.into_iter().filter(|s| homed.contains(s)).collect();
            store.fanout().unhome_everywhere(uid, &shown).await
        })
        .await?;
        let group_statuses = store.keys.user_group_statuses(uid);
        undo_each(store, entry, &group_statuses, true, |sid| {
            delete_for_account(store, sid, uid, private, at)
        })
        .await
    }

    /// Then what the account holds with others, each undone as its own
    /// action would undo it: follows both ways (the deletes above went
    /// where the author's own would have), follow requests both ways,
    /// group memberships, likes, blocks and mutes, conversations, lists.
    async fn undo_ties(&self, store: &Store, entry: &Entry) -> StoreResult<()> {
        let DeleteAccountOp { uid, at, .. } = *self;
        let keys = &store.keys;
        undo_each(store, entry, &keys.followers(uid), false, |f| async move {
            undo_follow(store, f, uid, at).await
        })
        .await?;
        undo_each(store, entry, &keys.following(uid), false, |t| async move {
            undo_follow(store, uid, t, at).await
        })
        .await?;
        undo_each(store, entry, &keys.requests(uid), false, |s| async move {
            store
                .follows()
                .requests()
                .withdraw(s, uid)
                .await
                .map(|_| ())
        })
        .await?;
        undo_each(store, entry, &keys.requested(uid), false, |t| async move {
            store
                .follows()
                .requests()
                .withdraw(uid, t)
                .await
                .map(|_| ())
        })
        .await?;
        undo_each(
            store,
            entry,
            &keys.user_groups(uid),
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
        undo_each(store, entry, &keys.likes(uid), true, |sid| async move {
            let status = store.statuses().get(sid).await?;
            let author: u64 = status.uid.get();
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
        undo_relations(store, uid, at).await?;
        undo_each(
            store,
            entry,
            &keys.user_convs(uid),
            false,
            |cid| async move { store.conversations().leave_as(cid, uid, true).await },
        )
        .await?;
        store.lists().drop_all(uid).await
    }

    /// What is left is the user's own keys, all in their slot.
    async fn remove_keys(&self, store: &Store) -> StoreResult<()> {
        let uid = self.uid;
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
        Ok(())
    }
}
