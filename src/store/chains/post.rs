//! Posting, both ways: the op a chained post records ([`PostOp`]) and its
//! chain (the repost mapping, the status, the author's timelines, the
//! indices, the first followers' homes, then the events); and a post on
//! one Redis in one atomic script, `post_whole.lua` (no outbox entry, no
//! chain: [`post_whole`]). Group statuses, replies to private
//! statuses, posts of authors past `--fanout-inline` followers, and every
//! post on a cluster take the chain. [`store::statuses`](crate::store::entities::statuses) chooses.

use super::{unique_tags, Count, INDEX_CAP, TREND_BUCKET_TTL};
use crate::model::Id;
use crate::model::{timeline_score, trims_homes, Event, Status, HOME_CAP};
use crate::store::chains::entry::Entry;
use crate::store::chains::finish::{Finish, IDEMPOTENCY_TTL};
use crate::store::chains::{count_reply, count_trend, repost_claim};
use crate::store::events::{body, Body};
use crate::store::fanout::FanoutKind;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::keys::trend_groups;
use crate::store::writes::posting::{PostOptions, Posted};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A post: the status HASH fields and how it is posted.
/// (`Op::Post`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostOp {
    /// The status's HASH fields.
    pub fields: HashMap<String, String>,
    /// Whether only followers (and user streams) may see it.
    pub private: bool,
    /// Mentioned users who may see it.
    pub mentioned: Vec<u64>,
    /// For a repost: tell the original's author.
    pub notify_original: bool,
    /// The author's idempotency key, if one was sent.
    pub idempotency_key: Option<String>,
}

/// How a post chain ended.
#[derive(Debug)]
pub(crate) enum PostEnd {
    /// Posted.
    Created,
    /// The user had reposted the original already: that repost.
    Reposted(u64),
    /// The original (of a repost) or the author is gone.
    Missing(&'static str),
}

/// Whether [`post_whole`] may take this post.
pub(crate) fn posts_whole(store: &Store, status: &Status) -> bool {
    !store.is_cluster()
        && (status.repost_of.is_none() || status.repost_of_uid.is_some())
        && status.group_id.is_none()
        && status.audience.is_none()
        && !status.group_private
}

/// Posts `status` whole. `None`: the author has more followers than
/// the inline fan-out reaches, nothing was written, and the caller
/// takes the chain. An Idempotency-Key used before gives
/// [`Whole::Duplicate`] with its first answer (which may be a chain's
/// `pending|` entry, for the caller to finish).
pub(crate) async fn post_whole(
    store: &Store,
    status: &Status,
    opts: &PostOptions<'_>,
    fields: &HashMap<String, String>,
) -> StoreResult<Option<Whole>> {
    let (sid, uid) = (status.id.get(), status.uid.get());
    let parent = status.parent_id();
    let original = status.original_id();
    let original_uid: Option<u64> = status.repost_of_uid.map(Id::get);
    let tags = unique_tags(&status.hashtags);
    let trending: &[String] = if opts.private { &[] } else { &tags };
    let indexed: Vec<String> = opts
        .mentioned
        .iter()
        .map(|m| store.keys.mentions(*m))
        .chain(tags.iter().map(|t| store.keys.tag(t)))
        .collect();
    let at = status.posted;
    let mut events = vec![body(&Event::Status {
        at,
        status: status.clone(),
        private: opts.private,
        audience: None,
    })];
    for &target in opts.mentioned {
        events.push(body(&Event::Mention {
            at,
            status: status.clone(),
            target: Id(target),
            private: opts.private,
        }));
    }
    if let Some(target) = original_uid.filter(|_| opts.notify_original) {
        events.push(body(&Event::Repost {
            at,
            status: status.clone(),
            target: Id(target),
            private: opts.private,
        }));
    }
    let minute = (at / 60.0) as u64;
    let mut inv = store.scripts.post_whole.prepare_invoke();
    inv.key(store.keys.status(sid))
        .key(store.keys.user(uid))
        .key(store.keys.profile(uid))
        .key(store.keys.home(uid))
        .key(store.keys.followers(uid))
        .key(store.keys.log_events(store.keys.log_shard(sid)));
    match parent {
        Some(p) => inv.key(store.keys.status(p)).key(store.keys.replies(p)),
        None => inv.key(store.keys.status(sid)).key(store.keys.status(sid)),
    };
    let idempotency = opts.idempotency_key.map(|k| store.keys.idempotency(uid, k));
    inv.key(idempotency.unwrap_or_else(|| store.keys.status(sid)));
    match original {
        Some(o) => inv.key(store.keys.status(o)).key(store.keys.reposters(o)),
        None => inv.key(store.keys.status(sid)).key(store.keys.status(sid)),
    };
    for key in &indexed {
        inv.key(key);
    }
    let groups = trend_groups(trending);
    for (p, _) in &groups {
        inv.key(store.keys.trend_bucket(*p, minute))
            .key(store.keys.trend_seen(*p, minute));
    }
    inv.arg(sid)
        .arg(at)
        .arg(uid)
        .arg(if trims_homes(sid) { HOME_CAP } else { 0 })
        .arg(INDEX_CAP)
        .arg(store.fanout_inline)
        .arg(store.log_shape().trim())
        .arg("PUBLISH")
        .arg(store.keys.home(0))
        .arg(store.keys.hide(0))
        .arg(if parent.is_some() { "1" } else { "0" })
        .arg(indexed.len())
        .arg(groups.len())
        .arg(TREND_BUCKET_TTL)
        .arg(fields.iter().filter(|(k, _)| *k != "id").count())
        .arg(events.len())
        .arg(original_uid.map_or(String::new(), |o| o.to_string()))
        .arg(store.keys.hidden_by(0));
    for (_, group) in &groups {
        inv.arg(group.len());
        for t in group {
            inv.arg(t);
        }
    }
    for (k, v) in fields.iter().filter(|(k, _)| *k != "id") {
        inv.arg(k).arg(v);
    }
    for e in &events {
        let k = store.keys.log_shard(e.key);
        inv.arg(k)
            .arg(store.keys.log_events(k))
            .arg(store.keys.log_channel(k))
            .arg(&e.json);
    }
    let answer = match opts.idempotency_key {
        Some(_) => {
            serde_json::to_string(status).map_err(|e| StoreError::Internal(e.to_string()))?
        }
        None => String::new(),
    };
    inv.arg(answer).arg(IDEMPOTENCY_TTL);
    let mut conn = store.conn();
    let reply: redis::Value = inv.invoke_async(&mut conn).await?;
    for id in parent.into_iter().chain(original) {
        store.caches.counts.forget(id);
    }
    if let Ok((word, first)) = redis::from_redis_value::<(String, String)>(reply.clone()) {
        match word.as_str() {
            "dup" => return Ok(Some(Whole::Duplicate(first))),
            "reposted" => {
                let id = first.parse().unwrap_or(0);
                return Ok(Some(Whole::Done(Posted::Reposted(id))));
            }
            _ => {}
        }
    }
    match redis::from_redis_value::<String>(reply) {
        Ok(word) if word == "chain" => Ok(None),
        Ok(word) if word == "nouser" => Err(StoreError::NotFound("user")),
        Ok(word) if word == "missing" => Err(StoreError::NotFound("status")),
        _ => Ok(Some(Whole::Done(Posted::Created))),
    }
}

/// What [`post_whole`] did.
pub(crate) enum Whole {
    /// The post is made (or refused).
    Done(Posted),
    /// Its Idempotency-Key was used before: the key's first value.
    Duplicate(String),
}

/// A post as its steps read it, worked out once from the op.
struct Posting<'a> {
    op: &'a PostOp,
    status: Status,
    sid: u64,
    uid: u64,
    /// Followers (or the audience, or the group's members) only.
    private: bool,
    /// A group's status goes to its group's timeline alone: no profile,
    /// home or follower's home.
    group: Option<u64>,
    parent: Option<u64>,
    original: Option<u64>,
    tags: Vec<String>,
}

impl<'a> Posting<'a> {
    fn of(op: &'a PostOp) -> StoreResult<Posting<'a>> {
        let status = Status::from_hash(&op.fields)
            .ok_or_else(|| StoreError::Internal("a post op without a status".into()))?;
        Ok(Posting {
            op,
            private: op.private || status.audience.is_some() || status.group_private,
            group: status.group_id.map(Id::get),
            sid: status.id.get(),
            uid: status.uid.get(),
            parent: status.parent_id(),
            original: status.original_id(),
            tags: unique_tags(&status.hashtags),
            status,
        })
    }

    /// The repost mapping, the status and the author's (or the group's)
    /// timelines; how the post ends early, if it does (the user reposted
    /// the original before; the original, the status or the author gone).
    async fn stored(&self, store: &Store) -> StoreResult<Option<PostEnd>> {
        let (sid, uid) = (self.sid, self.uid);
        if let Some(original) = self.original {
            let reply: Vec<String> = repost_claim(store, original, uid, sid, true).await?;
            match reply.first().map(String::as_str) {
                Some("reposted") => {
                    let first = reply.get(1).and_then(|id| id.parse().ok()).unwrap_or(0);
                    return Ok(Some(PostEnd::Reposted(first)));
                }
                Some("missing") => return Ok(Some(PostEnd::Missing("status"))),
                _ => {}
            }
        }
        let mut conn = store.conn();
        let mut inv = store.scripts.status_put.prepare_invoke();
        inv.key(store.keys.status(sid)).arg(sid);
        for (k, v) in &self.op.fields {
            if k != "id" {
                inv.arg(k).arg(v);
            }
        }
        let put: i64 = inv.invoke_async(&mut conn).await?;
        if put < 0 {
            // Deleted before its post finished: nothing more to do.
            return Ok(Some(PostEnd::Missing("status")));
        }
        let score = timeline_score(self.status.posted);
        match self.group {
            Some(gid) => {
                let _: () = conn
                    .zadd(store.keys.user_group_statuses(uid), sid, score)
                    .await?;
                store.groups().timeline_add(gid, sid, score).await?
            }
            None => {
                let posts: i64 = store
                    .scripts
                    .author_post
                    .key(store.keys.user(uid))
                    .key(store.keys.profile(uid))
                    .key(store.keys.home(uid))
                    .arg(sid)
                    .arg(score)
                    .arg(if trims_homes(sid) { HOME_CAP } else { 0 })
                    .invoke_async(&mut conn)
                    .await?;
                if posts < 0 {
                    return Ok(Some(PostEnd::Missing("user")));
                }
            }
        }
        Ok(None)
    }

    /// The parent's replies, the mentions' and hashtags' timelines, the
    /// trending bucket; the cached counts it changed forgotten.
    async fn indexed(&self, store: &Store) -> StoreResult<()> {
        let (sid, status) = (self.sid, &self.status);
        let score = timeline_score(status.posted);
        if let Some(p) = self.parent {
            // A reply in a private group to a status outside it is not
            // counted in that status's replies: the count would reveal
            // what the group hides.
            let counted = !status.group_private
                || store
                    .statuses()
                    .get_uncounted(p)
                    .await
                    .ok()
                    .and_then(|s| s.group_id)
                    == status.group_id;
            if counted {
                count_reply(store, p, sid, score, Count::In).await?;
            }
        }
        // A private group's statuses stay out of hashtag timelines (its
        // mentions reach members only: the caller chose `mentioned`).
        let public_tags: &[String] = if status.group_private {
            &[]
        } else {
            &self.tags
        };
        let indexed: Vec<String> = self
            .op
            .mentioned
            .iter()
            .map(|m| store.keys.mentions(*m))
            .chain(public_tags.iter().map(|t| store.keys.tag(t)))
            .collect();
        if !indexed.is_empty() {
            let mut pipe = redis::pipe();
            for key in &indexed {
                pipe.zadd(key, sid, score).ignore();
                pipe.zremrangebyrank(key, 0, -(INDEX_CAP as isize) - 1)
                    .ignore();
            }
            let mut conn = store.conn();
            let _: () = pipe.query_async(&mut conn).await?;
        }
        if !self.private && !self.tags.is_empty() {
            count_trend(
                store,
                &sid.to_string(),
                status.posted,
                &self.tags,
                Count::In,
            )
            .await?;
        }
        for id in self.parent.into_iter().chain(self.original) {
            store.caches.counts.forget(id);
        }
        Ok(())
    }

    /// The first followers' homes; the fan-out tasks left for workers.
    async fn fanned_out(&self, store: &Store) -> StoreResult<Vec<String>> {
        match self.group {
            Some(_) => Ok(Vec::new()),
            None => {
                store
                    .fanout()
                    .inline(FanoutKind::Post, self.sid, self.uid, self.status.posted)
                    .await
            }
        }
    }

    /// The status event, a mention event per mentioned user, and the
    /// repost event the original's author is told of.
    fn events(&self) -> Vec<Body> {
        let (status, private, at) = (&self.status, self.private, self.status.posted);
        let mut events = vec![body(&Event::Status {
            at,
            status: status.clone(),
            private,
            audience: status.audience,
        })];
        for &target in &self.op.mentioned {
            events.push(body(&Event::Mention {
                at,
                status: status.clone(),
                target: Id(target),
                private,
            }));
        }
        let original = status.repost_of_uid.map(Id::get);
        if let Some(target) = original.filter(|_| self.op.notify_original) {
            events.push(body(&Event::Repost {
                at,
                status: status.clone(),
                target: Id(target),
                private,
            }));
        }
        events
    }

    /// The answer kept under the idempotency key, if one was sent.
    fn answer(&self, store: &Store) -> StoreResult<Option<(String, String)>> {
        let Some(key) = &self.op.idempotency_key else {
            return Ok(None);
        };
        let status =
            serde_json::to_string(&self.status).map_err(|e| StoreError::Internal(e.to_string()))?;
        Ok(Some((store.keys.idempotency(self.uid, key), status)))
    }
}

impl PostOp {
    /// A post's steps: the repost mapping, the status, the author's
    /// timelines ([`Posting::stored`]), the parent's replies, the mentions
    /// and hashtag timelines, the trending bucket ([`Posting::indexed`]),
    /// the first followers' homes ([`Posting::fanned_out`]); then its
    /// events. A post that ends early finishes its entry with nothing.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<PostEnd> {
        let post = Posting::of(self)?;
        if let Some(end) = post.stored(store).await? {
            store.outbox().finish(entry, Finish::default()).await?;
            return Ok(end);
        }
        post.indexed(store).await?;
        let tasks = post.fanned_out(store).await?;
        let finish = Finish {
            events: post.events(),
            tasks,
            answer: post.answer(store)?,
        };
        store.outbox().finish(entry, finish).await?;
        Ok(PostEnd::Created)
    }
}
