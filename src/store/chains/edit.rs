//! The edit chain: the status's new version (`status_edit.lua`, in its
//! slot: the checks, the fields and the version history at once), then the
//! indices of the old text left and those of the new one entered (hashtag
//! timelines, mentions, the trending counts), then the `update` event.
//! Recorded in the outbox first, so a process killed mid-way leaves the
//! rest to a worker: the version is written once (the op number is kept
//! with it) and every later step is idempotent.

use super::{unique_tags, Count, INDEX_CAP};
use crate::model::{timeline_score, Event, IdString, Status, Version};
use crate::store::chains::count_trend;
use crate::store::chains::entry::Entry;
use crate::store::chains::finish::Finish;
use crate::store::events::body;
use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// An edit of status `sid` by `uid` (`chains/edit.rs`).
/// (`Op::Edit`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditOp {
    /// The status.
    pub sid: u64,
    /// Who edits it (only its author may).
    pub uid: u64,
    /// The new text.
    pub message: String,
    /// Its hashtags.
    pub hashtags: Vec<String>,
    /// The logins it mentions that belong to users.
    pub mentions: Vec<String>,
    /// Mentioned users who may see it (its mentions timelines).
    pub mentioned: Vec<u64>,
    /// Whether the author's account is private.
    pub private: bool,
    /// Time of the edit.
    pub at: f64,
    /// The author's idempotency key (`edit:<sid>:<key>`), if one was sent.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// How long after posting a status may be edited, in seconds.
pub const EDIT_WINDOW: f64 = 3600.0;
/// Most edits of one status.
pub const MAX_EDITS: u64 = 10;

/// Why an edit was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditRefused {
    /// No such status (or it is being deleted).
    Missing,
    /// The editor is not its author.
    NotAuthor,
    /// It is a repost (no text of its own).
    Repost,
    /// Posted more than [`EDIT_WINDOW`] ago.
    Window,
    /// Edited [`MAX_EDITS`] times already.
    Limit,
}

/// What an edit's run came to.
#[derive(Debug)]
pub enum Edited {
    /// The status as edited.
    Done(Box<Status>),
    /// Refused; nothing changed.
    Refused(EditRefused),
}

/// The trending member a status is counted under after `edits` edits:
/// each version its own, so a version's count in and the previous one's
/// count out are each idempotent.
pub(crate) fn trend_member(sid: u64, edits: u64) -> String {
    match edits {
        0 => sid.to_string(),
        n => format!("{sid}.e{n}"),
    }
}

/// The hashtag timelines and mentions the old text was in, left, and
/// those of the new one, entered.
async fn edit_indices(
    store: &Store,
    sid: u64,
    status: &Status,
    (old_tags, old_mentioned): (&[String], &[u64]),
    (new_tags, mentioned): (&[String], &[u64]),
) -> StoreResult<()> {
    let score = timeline_score(status.posted);
    let (old_tags, new_tags) = if status.group_private {
        (Vec::new(), Vec::new())
    } else {
        (unique_tags(old_tags), unique_tags(new_tags))
    };
    let mut pipe = redis::pipe();
    for t in old_tags.iter().filter(|t| !new_tags.contains(t)) {
        pipe.zrem(store.keys.tag(t), sid).ignore();
    }
    for m in old_mentioned.iter().filter(|m| !mentioned.contains(m)) {
        pipe.zrem(store.keys.mentions(*m), sid).ignore();
    }
    let entered: Vec<String> = new_tags
        .iter()
        .filter(|t| !old_tags.contains(t))
        .map(|t| store.keys.tag(t))
        .chain(
            mentioned
                .iter()
                .filter(|m| !old_mentioned.contains(m))
                .map(|m| store.keys.mentions(*m)),
        )
        .collect();
    for key in &entered {
        pipe.zadd(key, sid, score).ignore();
        pipe.zremrangebyrank(key, 0, -(INDEX_CAP as isize) - 1)
            .ignore();
    }
    if !pipe.is_empty() {
        let mut conn = store.conn();
        let _: () = pipe.query_async(&mut conn).await?;
    }
    Ok(())
}

impl EditOp {
    /// Runs an edit's steps.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<Edited> {
        let EditOp {
            sid,
            uid,
            message,
            hashtags,
            mentions,
            mentioned,
            private,
            at,
            idempotency_key,
        } = self;
        let (sid, uid, at) = (*sid, *uid, *at);
        let version = serde_json::to_string(&Version {
            message: message.clone(),
            hashtags: hashtags.clone(),
            mentions: mentions.clone(),
            at,
        })
        .unwrap_or_default();
        let mut conn = store.conn();
        let reply: Vec<String> = store
            .scripts
            .status_edit
            .key(store.keys.status(sid))
            .key(store.keys.status_versions(sid))
            .arg(uid)
            .arg(entry.n)
            .arg(message)
            .arg(serde_json::to_string(hashtags).unwrap_or_default())
            .arg(serde_json::to_string(mentions).unwrap_or_default())
            .arg(serde_json::to_string(mentioned).unwrap_or_default())
            .arg(at)
            .arg(EDIT_WINDOW)
            .arg(MAX_EDITS)
            .arg(version)
            .invoke_async(&mut conn)
            .await?;
        let refused = match reply.first().map(String::as_str) {
            Some("ok" | "again") => None,
            Some("forbidden") => Some(EditRefused::NotAuthor),
            Some("repost") => Some(EditRefused::Repost),
            Some("window") => Some(EditRefused::Window),
            Some("limit") => Some(EditRefused::Limit),
            _ => Some(EditRefused::Missing),
        };
        if let Some(why) = refused {
            store.outbox().finish(entry, Finish::default()).await?;
            return Ok(Edited::Refused(why));
        }
        store.caches.status.forget(sid);
        let previous = reply.get(1).cloned().unwrap_or_default();
        let old_tags: Vec<String> = reply
            .get(2)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let old_mentioned: Vec<u64> = reply
            .get(3)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let edits: u64 = reply.get(4).and_then(|n| n.parse().ok()).unwrap_or(1);
        let h: HashMap<String, String> = conn.hgetall(store.keys.status(sid)).await?;
        let Some(status) = Status::from_hash(&h).filter(|_| !h.contains_key("deleted")) else {
            // Deleted meanwhile: the delete took it out of every index.
            store.outbox().finish(entry, Finish::default()).await?;
            return Ok(Edited::Refused(EditRefused::Missing));
        };
        edit_indices(
            store,
            sid,
            &status,
            (&old_tags, &old_mentioned),
            (&status.hashtags, mentioned),
        )
        .await?;
        // Judged now: a reply to an account made private since is for
        // that account's followers, as if posted after.
        let audience = store.statuses().audience_now(&status).await?;
        let public = !*private && audience.is_none() && !status.group_private;
        let (old_unique, new_unique) = (unique_tags(&old_tags), unique_tags(hashtags));
        // Counted out under the version's member, in under the new one's.
        count_trend(
            store,
            &trend_member(sid, edits - 1),
            status.posted,
            &old_unique,
            Count::Out,
        )
        .await?;
        if public && !new_unique.is_empty() {
            count_trend(
                store,
                &trend_member(sid, edits),
                status.posted,
                &new_unique,
                Count::In,
            )
            .await?;
        }
        store.caches.status.forget(sid);
        // A delete that marked the status meanwhile took out what it saw;
        // what this edit put in after that goes too, and no update is sent.
        let gone: (bool, bool) = redis::pipe()
            .hexists(store.keys.status(sid), "uid")
            .hexists(store.keys.status(sid), "deleted")
            .query_async(&mut conn)
            .await?;
        if !gone.0 || gone.1 {
            edit_indices(
                store,
                sid,
                &status,
                (&status.hashtags, mentioned),
                (&[], &[]),
            )
            .await?;
            count_trend(
                store,
                &trend_member(sid, edits),
                status.posted,
                &new_unique,
                Count::Out,
            )
            .await?;
            store.outbox().finish(entry, Finish::default()).await?;
            return Ok(Edited::Refused(EditRefused::Missing));
        }
        // Private as its status event is: to public streams a reply to a
        // private account is as private as that account's own statuses.
        let mut events = vec![body(&Event::Update {
            at,
            status: status.clone(),
            private: !public,
            audience: audience.map(IdString),
            previous,
        })];
        // Those the edit mentions first are told, as a post tells them.
        for &target in mentioned.iter().filter(|m| !old_mentioned.contains(m)) {
            events.push(body(&Event::Mention {
                at,
                status: status.clone(),
                target,
                private: !public,
            }));
        }
        let answer = idempotency_key
            .as_deref()
            .map(|k| (store.keys.idempotency(uid, k), "edited".to_string()));
        store
            .outbox()
            .finish(
                entry,
                Finish {
                    events,
                    answer,
                    ..Finish::default()
                },
            )
            .await?;
        Ok(Edited::Done(Box::new(status)))
    }
}
