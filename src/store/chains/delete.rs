//! The delete chain: the mark, the likers' lists, the author, the indices,
//! the reposts, the tombstone, the homes, then the event.

use super::{unique_tags, Count};
use crate::model::Id;
use crate::model::{timeline_score, Event, Status, HOME_CAP};
use crate::store::chains::entry::Entry;
use crate::store::chains::finish::Finish;
use crate::store::chains::{count_reply, count_trend, repost_claim};
use crate::store::events::body;
use crate::store::fanout::FanoutKind;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A delete by `uid` of status `sid`.
/// (`Op::Delete`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeleteOp {
    /// The status.
    pub sid: u64,
    /// Who deletes it (only its author may).
    pub uid: u64,
    /// Whether the status was private.
    pub private: bool,
    /// Time of the delete.
    pub at: f64,
}

/// How long a deleted status's tombstone is kept, in seconds.
const TOMBSTONE_TTL: u64 = 86_400;

/// Which followers' homes a delete's run takes the status out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Homes {
    /// The first followers inline, the rest by queued fan-out tasks.
    Queued,
    /// None: the caller takes the status out of the homes itself (an
    /// account's deletion: [`Fanout::unhome_everywhere`](crate::store::fanout::Fanout::unhome_everywhere)), or it is too old
    /// to be in any (a home keeps its newest [`HOME_CAP`]).
    Skip,
}

/// [`DeleteOp::run`], reaching the followers' `homes` as asked.
pub(crate) async fn run_delete_reaching(
    store: &Store,
    entry: &Entry,
    op: &DeleteOp,
    homes: Homes,
) -> StoreResult<()> {
    let DeleteOp {
        sid,
        uid,
        private,
        at,
    } = *op;
    let mut conn = store.conn();
    let reply: Vec<String> = store
        .scripts
        .delete_mark
        .key(store.keys.status(sid))
        .arg(uid)
        .arg(entry.n)
        .invoke_async(&mut conn)
        .await?;
    match reply.first().map(String::as_str) {
        Some("ok") => {}
        Some("forbidden") => {
            store.outbox().finish(entry, Finish::default()).await?;
            return Err(StoreError::Forbidden(
                "Only the author may delete a status.".into(),
            ));
        }
        _ => {
            store.outbox().finish(entry, Finish::default()).await?;
            return Err(StoreError::NotFound("status"));
        }
    }
    let mut h: HashMap<String, String> = reply[1..]
        .chunks(2)
        .filter(|kv| kv.len() == 2)
        .map(|kv| (kv[0].clone(), kv[1].clone()))
        .collect();
    h.remove("deleted");
    store.caches.status.forget(sid);
    let group = h.get("group_id").and_then(|g| g.parse::<u64>().ok());
    let private = private || h.get("group_private").is_some_and(|v| v == "1");
    // Only the tombstone left: an earlier run did every step but the last.
    if let Some(status) = Status::from_hash(&h) {
        delete_steps(store, sid, uid, &status, &h, private, at).await?;
        let _: i64 = store
            .scripts
            .status_bury
            .key(store.keys.status(sid))
            .key(store.keys.likers(sid))
            .key(store.keys.like_seq(sid))
            .key(store.keys.reposters(sid))
            .arg(entry.n)
            .arg(TOMBSTONE_TTL)
            .invoke_async(&mut conn)
            .await?;
        let _: i64 = conn.del(store.keys.status_versions(sid)).await?;
    }
    store.caches.status.forget(sid);
    store.caches.counts.forget(sid);
    // A group's status was in no home.
    let tasks = match (group, homes) {
        (Some(_), _) | (None, Homes::Skip) => Vec::new(),
        (None, Homes::Queued) => {
            store
                .fanout()
                .inline(FanoutKind::Delete, sid, uid, at)
                .await?
        }
    };
    store
        .outbox()
        .finish(
            entry,
            Finish {
                events: vec![body(&Event::Delete {
                    at,
                    status_id: Id(sid),
                    uid: Id(uid),
                    private,
                    group_id: group.map(crate::model::Id),
                })],
                tasks,
                answer: None,
            },
        )
        .await?;
    Ok(())
}

/// The steps of a delete between the mark and the tombstone.
async fn delete_steps(
    store: &Store,
    sid: u64,
    uid: u64,
    status: &Status,
    h: &HashMap<String, String>,
    private: bool,
    at: f64,
) -> StoreResult<()> {
    let mut conn = store.conn();
    if let Some(gid) = status.group_id.map(Id::get) {
        store.groups().timeline_remove(gid, sid).await?;
        let _: () = conn.zrem(store.keys.user_group_statuses(uid), sid).await?;
    }
    let likers: Vec<u64> = conn.zrange(store.keys.likers(sid), 0, -1).await?;
    if !likers.is_empty() {
        let mut pipe = redis::pipe();
        for liker in &likers {
            pipe.zrem(store.keys.likes(*liker), sid).ignore();
        }
        let _: () = pipe.query_async(&mut conn).await?;
    }
    let _: i64 = store
        .scripts
        .author_delete
        .key(store.keys.user(uid))
        .key(store.keys.profile(uid))
        .key(store.keys.home(uid))
        .key(store.keys.deleted(uid))
        .arg(sid)
        .arg(at)
        .arg(HOME_CAP)
        .invoke_async(&mut conn)
        .await?;
    let parent = status.parent_id();
    if let Some(p) = parent {
        count_reply(store, p, sid, timeline_score(status.posted), Count::Out).await?;
        store.caches.counts.forget(p);
    }
    let mentioned: Vec<u64> = h
        .get("mention_uids")
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_default();
    let tags = unique_tags(&status.hashtags);
    let indexed: Vec<String> = mentioned
        .iter()
        .map(|m| store.keys.mentions(*m))
        .chain(tags.iter().map(|t| store.keys.tag(t)))
        .collect();
    if !indexed.is_empty() {
        let mut pipe = redis::pipe();
        for key in &indexed {
            pipe.zrem(key, sid).ignore();
        }
        let _: () = pipe.query_async(&mut conn).await?;
    }
    // Counted under its latest version's member (`chains::edit`), and
    // the version before it too: an edit under way may have replaced
    // the text but not yet counted the previous version out, and it
    // stops at the delete's mark.
    let edits = h.get("edits").and_then(|e| e.parse().ok()).unwrap_or(0);
    if !tags.is_empty() {
        count_trend(
            store,
            &super::edit::trend_member(sid, edits),
            status.posted,
            &tags,
            Count::Out,
        )
        .await?;
    }
    let previous: Vec<String> = h
        .get("edit_prev_hashtags")
        .filter(|_| edits > 0)
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default();
    if !previous.is_empty() {
        count_trend(
            store,
            &super::edit::trend_member(sid, edits - 1),
            status.posted,
            &unique_tags(&previous),
            Count::Out,
        )
        .await?;
    }
    if let Some(original) = status.original_id() {
        let _: Vec<String> = repost_claim(store, original, uid, sid, false).await?;
        store.caches.counts.forget(original);
    }
    // Reposts of a deleted status go with it, each a delete of its own.
    let reposts: HashMap<String, String> = conn.hgetall(store.keys.reposters(sid)).await?;
    for (reposter, repost) in reposts {
        if let (Ok(reposter), Ok(repost)) = (reposter.parse(), repost.parse()) {
            match Box::pin(store.statuses().delete(repost, reposter, private, at)).await {
                Ok(()) | Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

impl DeleteOp {
    /// A delete's steps: the mark (ownership checked), the likers' lists,
    /// the author's timelines, the parent's replies, the indices, the
    /// trending bucket, the repost mapping, the reposts of it, the
    /// tombstone, the first followers' homes; then its event.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<()> {
        run_delete_reaching(store, entry, self, Homes::Queued).await
    }
}
