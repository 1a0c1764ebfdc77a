//! The edit chain: the status's new version (`status_edit.lua`, in its
//! slot: the checks, the fields and the version history at once), then the
//! indices of the old text left and those of the new one entered (hashtag
//! timelines, mentions, the trending counts), then the `update` event.
//! Recorded in the outbox first, so a process killed mid-way leaves the
//! rest to a worker: the version is written once (the op number is kept
//! with it) and every later step is idempotent.

use super::{unique_tags, Count, INDEX_CAP};
use crate::model::{timeline_score, Event, Id, Status, Version};
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

/// What `status_edit.lua` answered of an edit it applied.
struct Applied {
    /// The text before the edit (the `update` event carries it).
    previous: String,
    /// The hashtags and mentioned users before the edit.
    old_tags: Vec<String>,
    old_mentioned: Vec<u64>,
    /// Edits so far, this one included.
    edits: u64,
}

impl EditOp {
    /// Runs an edit's steps: the new version applied
    /// ([`EditOp::apply`]), the indices and trending buckets moved from the
    /// old text to the new ([`EditOp::reindex`]), all of it taken back if a
    /// delete came meanwhile ([`EditOp::undo_if_deleted`]); then the
    /// `update` event and a mention event for each user mentioned first.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<Edited> {
        let refused = |why| async move {
            store.outbox().finish(entry, Finish::default()).await?;
            Ok(Edited::Refused(why))
        };
        let applied = match self.apply(store, entry).await? {
            Ok(applied) => applied,
            Err(why) => return refused(why).await,
        };
        let mut conn = store.conn();
        let h: HashMap<String, String> = conn.hgetall(store.keys.status(self.sid)).await?;
        let Some(status) = Status::from_hash(&h).filter(|_| !h.contains_key("deleted")) else {
            // Deleted meanwhile: the delete took it out of every index.
            return refused(EditRefused::Missing).await;
        };
        // Judged now: a reply to an account made private since is for
        // that account's followers, as if posted after.
        let audience = store.statuses().audience_now(&status).await?;
        let public = !self.private && audience.is_none() && !status.group_private;
        self.reindex(store, &status, &applied, public).await?;
        if self.undo_if_deleted(store, &status, &applied).await? {
            return refused(EditRefused::Missing).await;
        }
        let (at, private) = (self.at, !public);
        // Private as its status event is: to public streams a reply to a
        // private account is as private as that account's own statuses.
        let mut events = vec![body(&Event::Update {
            at,
            status: status.clone(),
            private,
            audience: audience.map(Id),
            previous: applied.previous,
        })];
        // Those the edit mentions first are told, as a post tells them.
        let first_mentioned = self
            .mentioned
            .iter()
            .filter(|m| !applied.old_mentioned.contains(m));
        for &target in first_mentioned {
            events.push(body(&Event::Mention {
                at,
                status: status.clone(),
                target: Id(target),
                private,
            }));
        }
        let answer = self
            .idempotency_key
            .as_deref()
            .map(|k| (store.keys.idempotency(self.uid, k), "edited".to_string()));
        let finish = Finish {
            events,
            answer,
            ..Finish::default()
        };
        store.outbox().finish(entry, finish).await?;
        Ok(Edited::Done(Box::new(status)))
    }

    /// `status_edit.lua`: the new version, if its author may make it now
    /// (again for a rerun of this op: `again`).
    async fn apply(
        &self,
        store: &Store,
        entry: &Entry,
    ) -> StoreResult<Result<Applied, EditRefused>> {
        let (sid, at) = (self.sid, self.at);
        let version = serde_json::to_string(&Version {
            message: self.message.clone(),
            hashtags: self.hashtags.clone(),
            mentions: self.mentions.clone(),
            at,
        })
        .unwrap_or_default();
        let mut conn = store.conn();
        let reply: Vec<String> = store
            .scripts
            .status_edit
            .key(store.keys.status(sid))
            .key(store.keys.status_versions(sid))
            .arg(self.uid)
            .arg(entry.n)
            .arg(&self.message)
            .arg(serde_json::to_string(&self.hashtags).unwrap_or_default())
            .arg(serde_json::to_string(&self.mentions).unwrap_or_default())
            .arg(serde_json::to_string(&self.mentioned).unwrap_or_default())
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
            return Ok(Err(why));
        }
        store.caches.status.forget(sid);
        let old_tags: Vec<String> = reply
            .get(2)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let old_mentioned: Vec<u64> = reply
            .get(3)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        Ok(Ok(Applied {
            previous: reply.get(1).cloned().unwrap_or_default(),
            old_tags,
            old_mentioned,
            edits: reply.get(4).and_then(|n| n.parse().ok()).unwrap_or(1),
        }))
    }

    /// The mention and hashtag timelines moved from the old text to the
    /// new, the trending buckets counted out under the old version's
    /// member and (when public) in under the new one's.
    async fn reindex(
        &self,
        store: &Store,
        status: &Status,
        applied: &Applied,
        public: bool,
    ) -> StoreResult<()> {
        let sid = self.sid;
        edit_indices(
            store,
            sid,
            status,
            (&applied.old_tags, &applied.old_mentioned),
            (&status.hashtags, &self.mentioned),
        )
        .await?;
        let (old_unique, new_unique) =
            (unique_tags(&applied.old_tags), unique_tags(&self.hashtags));
        let edits = applied.edits;
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
        Ok(())
    }

    /// A delete that marked the status meanwhile took out what it saw;
    /// what this edit put in after that goes too, and no update is sent.
    /// True when it did.
    async fn undo_if_deleted(
        &self,
        store: &Store,
        status: &Status,
        applied: &Applied,
    ) -> StoreResult<bool> {
        let sid = self.sid;
        let mut conn = store.conn();
        let gone: (bool, bool) = redis::pipe()
            .hexists(store.keys.status(sid), "uid")
            .hexists(store.keys.status(sid), "deleted")
            .query_async(&mut conn)
            .await?;
        if gone.0 && !gone.1 {
            return Ok(false);
        }
        edit_indices(
            store,
            sid,
            status,
            (&status.hashtags, &self.mentioned),
            (&[], &[]),
        )
        .await?;
        let new_unique = unique_tags(&self.hashtags);
        count_trend(
            store,
            &trend_member(sid, applied.edits),
            status.posted,
            &new_unique,
            Count::Out,
        )
        .await?;
        Ok(true)
    }
}
