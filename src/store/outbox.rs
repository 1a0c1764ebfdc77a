//! Writes that span slots, as chains of single-slot steps driven from the
//! outbox.
//!
//! Every write that touches more than one slot (a sign-up, a post, a delete,
//! a follow, a like, a follow request) runs the same way:
//!
//! 1. `op_begin.lua` records the whole write as an [`Op`] in the outbox
//!    ZSET (`{g}`), scored by a lease deadline, and numbers it (the number
//!    is also the sequence that orders follow and like changes). A sign-up
//!    records it in `claim_names.lua`, with the names it claims.
//! 2. The steps run one slot at a time (`status_put.lua` on the status,
//!    `author_post.lua` on the author, `replies_count.lua` on the parent,
//!    `trend.lua` on `{trends}`, the fan-out on each follower, ...). Each is
//!    idempotent, so running it twice changes nothing more.
//! 3. `op_finish.lua` retires the entry and, only in the call that retired
//!    it, emits the write's events, queues its fan-out ranges and keeps the
//!    answer under its idempotency key.
//!
//! A request runs the chain itself. If it dies (or its client hangs up and
//! the task is dropped), the entry's lease runs out and a worker's sweeper
//! claims it and runs the same chain ([`Store::complete_op`]): a crash
//! between steps is finished later, and a retry repeats nothing. Events go
//! out last, so a client that gets an event can read what it refers to.

use super::events::body;
use super::fanout::FanoutKind;
use super::statuses::{unique_tags, INDEX_CAP, TREND_BUCKET_TTL};
use super::{parse_id, Store, StoreError, StoreResult};
use crate::model::{now, Event, Status, User, HOME_CAP};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How long a deleted status's tombstone is kept, in seconds.
const TOMBSTONE_TTL: u64 = 86_400;

/// A write that spans slots, as recorded in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A sign-up whose names are claimed (`uid` first: `claim_names.lua`
    /// fills it in).
    User {
        /// The new user's id.
        uid: u64,
        /// Login as typed.
        login: String,
        /// Display name.
        name: String,
        /// Email as typed.
        email: String,
        /// The argon2id PHC string (kept in Redis only, never logged).
        password: String,
        /// Sign-up time.
        at: f64,
    },
    /// A post: the status HASH fields and how it is posted.
    Post {
        /// The status's HASH fields.
        fields: HashMap<String, String>,
        /// Whether only followers (and user streams) may see it.
        private: bool,
        /// Mentioned users who may see it.
        mentioned: Vec<u64>,
        /// For a repost: tell the original's author.
        notify_original: bool,
        /// The author's idempotency key, if one was sent.
        idempotency_key: Option<String>,
    },
    /// A delete by `uid` of status `sid`.
    Delete {
        /// The status.
        sid: u64,
        /// Who deletes it (only its author may).
        uid: u64,
        /// Whether the status was private.
        private: bool,
        /// Time of the delete.
        at: f64,
    },
    /// A follow or unfollow.
    Follow {
        /// The follower.
        source: u64,
        /// The followee.
        target: u64,
        /// Follow (true) or unfollow.
        follow: bool,
        /// Time of the change.
        at: f64,
    },
    /// A like or unlike.
    Like {
        /// Who likes.
        uid: u64,
        /// The status.
        sid: u64,
        /// Its author (for the event).
        author: u64,
        /// Whether the status is private (for the event).
        private: bool,
        /// Like (true) or unlike.
        like: bool,
        /// Time of the change.
        at: f64,
    },
    /// A follow request asked (`ask`) or withdrawn (rejected, cancelled,
    /// authorized).
    Request {
        /// Who asks.
        source: u64,
        /// The private account.
        target: u64,
        /// Asked (true) or dropped.
        ask: bool,
        /// Time of the change.
        at: f64,
    },
}

/// An outbox entry: its member, its number and its op.
#[derive(Debug, Clone)]
pub struct Owed {
    /// The outbox member, `<n>|<op JSON>`.
    pub member: String,
    /// The op number.
    pub n: u64,
    /// The write.
    pub op: Op,
}

impl Owed {
    /// Parses an outbox member.
    pub fn decode(member: &str) -> Option<Owed> {
        let (n, json) = member.split_once('|')?;
        Some(Owed {
            member: member.to_string(),
            n: n.parse().ok()?,
            op: serde_json::from_str(json).ok()?,
        })
    }

    /// The op number of an outbox member, for logs (the op itself may hold
    /// a password hash).
    pub fn number(member: &str) -> &str {
        member.split_once('|').map_or("?", |(n, _)| n)
    }
}

/// What `op_begin` answered.
pub(crate) enum Begun {
    /// Recorded: run the chain.
    Started(Owed),
    /// The idempotency key was used: the first answer, or the entry of the
    /// first write still under way.
    Duplicate(String),
}

/// What finishing a write gives back.
#[derive(Debug, Default)]
pub(crate) struct Finish {
    /// Event bodies (JSON without `id`), emitted in order.
    pub events: Vec<String>,
    /// Fan-out tasks to queue.
    pub tasks: Vec<String>,
    /// The answer kept under the idempotency key.
    pub answer: Option<(String, String)>,
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

/// Whether a status is counted into an index (posted) or out of it (deleted).
#[derive(Debug, Clone, Copy)]
enum Count {
    In,
    Out,
}

impl Count {
    /// The scripts' argument: `1` counts in, `0` out.
    fn flag(self) -> &'static str {
        match self {
            Count::In => "1",
            Count::Out => "0",
        }
    }
}

impl Store {
    /// Records `op` in the outbox (with an idempotency key: claims it too).
    pub(crate) async fn begin_op(&self, op: &Op, idempotency: Option<&str>) -> StoreResult<Begun> {
        let json = serde_json::to_string(op).map_err(|e| StoreError::Internal(e.to_string()))?;
        let mut conn = self.conn();
        let mut inv = self.scripts.op_begin.prepare_invoke();
        inv.key(self.keys.outbox()).key(self.keys.next_op());
        match idempotency {
            Some(key) => inv.key(key),
            None => inv.key(self.keys.next_op()),
        };
        let reply: (String, String) = inv
            .arg(json)
            .arg(self.lease_deadline())
            .arg(if idempotency.is_some() { "1" } else { "0" })
            .arg(super::statuses::IDEMPOTENCY_TTL)
            .invoke_async(&mut conn)
            .await?;
        match reply.0.as_str() {
            "ok" => Owed::decode(&reply.1)
                .map(Begun::Started)
                .ok_or_else(|| StoreError::Internal("op_begin gave a bad member".into())),
            _ => Ok(Begun::Duplicate(reply.1)),
        }
    }

    /// Retires an outbox entry; only if this call retired it, emits the
    /// events, queues the tasks and keeps the answer. Returns the first
    /// event's id when it did.
    pub(crate) async fn finish_op(&self, owed: &Owed, f: Finish) -> StoreResult<Option<String>> {
        let mut conn = self.conn();
        let mut inv = self.scripts.op_finish.prepare_invoke();
        inv.key(self.keys.outbox())
            .key(self.keys.events())
            .key(self.keys.fanout());
        match &f.answer {
            Some((key, _)) => inv.key(key),
            None => inv.key(self.keys.outbox()),
        };
        inv.arg(&owed.member)
            .arg(self.replay_maxlen)
            .arg(self.keys.channel())
            .arg(f.events.len());
        for e in &f.events {
            inv.arg(e);
        }
        inv.arg(f.tasks.len());
        for t in &f.tasks {
            inv.arg(t);
        }
        inv.arg(f.answer.as_ref().map_or("", |(_, a)| a.as_str()));
        let (retired, eid): (i64, String) = inv.invoke_async(&mut conn).await?;
        Ok((retired == 1).then_some(eid))
    }

    /// Retires an entry emitting these events (no fan-out, no answer).
    async fn finish_with(&self, owed: &Owed, events: Vec<String>) -> StoreResult<()> {
        self.finish_op(
            owed,
            Finish {
                events,
                ..Finish::default()
            },
        )
        .await?;
        Ok(())
    }

    /// Runs an outbox entry's chain to its end. Safe to run more than once
    /// for the same entry, concurrently too (every step is idempotent and
    /// only the call that retires the entry emits and queues).
    pub async fn complete_op(&self, owed: &Owed) -> StoreResult<()> {
        let result = match &owed.op {
            Op::User { .. } => self.run_user(owed).await.map(|_| ()),
            Op::Post { .. } => self.run_post(owed).await.map(|_| ()),
            Op::Delete { .. } => self.run_delete(owed).await.map(|_| ()),
            Op::Follow { .. } => self.run_follow(owed).await.map(|_| ()),
            Op::Like { .. } => self.run_like(owed).await.map(|_| ()),
            Op::Request { .. } => self.run_request(owed).await.map(|_| ()),
        };
        match result {
            Err(StoreError::NotFound(_) | StoreError::Forbidden(_) | StoreError::Conflict(..)) => {
                Ok(())
            }
            other => other,
        }
    }

    /// A sign-up's remaining steps: the user's keys (fields set only if
    /// absent, so a late second run never resets counters), then the event.
    pub(crate) async fn run_user(&self, owed: &Owed) -> StoreResult<()> {
        let Op::User {
            uid,
            login,
            name,
            email,
            password,
            at,
        } = &owed.op
        else {
            return Err(StoreError::Internal("not a sign-up".into()));
        };
        let mut conn = self.conn();
        let user = self.keys.user(*uid);
        let secret = self.keys.secret(*uid);
        let mut pipe = redis::pipe();
        for (k, v) in [
            ("id", uid.to_string()),
            ("login", login.clone()),
            ("name", name.clone()),
            ("followers", "0".into()),
            ("following", "0".into()),
            ("posts", "0".into()),
            ("signup", at.to_string()),
        ] {
            pipe.hset_nx(&user, k, v).ignore();
        }
        pipe.hset_nx(&secret, "email", email).ignore();
        pipe.hset_nx(&secret, "password", password).ignore();
        let _: () = pipe.query_async(&mut conn).await?;
        let user = User {
            id: uid.to_string(),
            login: login.clone(),
            name: name.clone(),
            followers: 0,
            following: 0,
            posts: 0,
            signup: *at,
            private: false,
            email: None,
        };
        self.finish_with(owed, vec![body(&Event::User { at: *at, user })])
            .await?;
        Ok(())
    }

    /// A post's steps: the repost mapping, the status, the author's
    /// timelines, the parent's replies, the mentions and hashtag timelines,
    /// the trending bucket, the first followers' homes; then its events.
    pub(crate) async fn run_post(&self, owed: &Owed) -> StoreResult<PostEnd> {
        let Op::Post {
            fields,
            private,
            mentioned,
            notify_original,
            idempotency_key,
        } = &owed.op
        else {
            return Err(StoreError::Internal("not a post".into()));
        };
        let status = Status::from_hash(fields)
            .ok_or_else(|| StoreError::Internal("a post op without a status".into()))?;
        let private = *private || status.audience.is_some();
        let sid = parse_id(&status.id)?;
        let uid = parse_id(&status.uid)?;
        let parent = status
            .reply_to
            .as_deref()
            .and_then(|p| p.parse::<u64>().ok());
        let original = status
            .repost_of
            .as_deref()
            .and_then(|p| p.parse::<u64>().ok());
        let tags = unique_tags(&status.hashtags);
        let mut conn = self.conn();
        let quit = |end: PostEnd| async move {
            self.finish_op(owed, Finish::default()).await?;
            Ok(end)
        };
        if let Some(original) = original {
            let reply: Vec<String> = self
                .scripts
                .repost_claim
                .key(self.keys.status(original))
                .key(self.keys.reposters(original))
                .arg("1")
                .arg(uid)
                .arg(sid)
                .invoke_async(&mut conn)
                .await?;
            match reply.first().map(String::as_str) {
                Some("reposted") => {
                    let first = reply.get(1).and_then(|id| id.parse().ok()).unwrap_or(0);
                    return quit(PostEnd::Reposted(first)).await;
                }
                Some("missing") => return quit(PostEnd::Missing("status")).await,
                _ => {}
            }
        }
        let mut inv = self.scripts.status_put.prepare_invoke();
        inv.key(self.keys.status(sid)).arg(sid);
        for (k, v) in fields {
            if k != "id" {
                inv.arg(k).arg(v);
            }
        }
        let put: i64 = inv.invoke_async(&mut conn).await?;
        if put < 0 {
            // Deleted before its post finished: nothing more to do.
            return quit(PostEnd::Missing("status")).await;
        }
        let posts: i64 = self
            .scripts
            .author_post
            .key(self.keys.user(uid))
            .key(self.keys.profile(uid))
            .key(self.keys.home(uid))
            .arg(sid)
            .arg(status.posted)
            .arg(HOME_CAP)
            .invoke_async(&mut conn)
            .await?;
        if posts < 0 {
            return quit(PostEnd::Missing("user")).await;
        }
        if let Some(p) = parent {
            self.count_reply(p, sid, status.posted, Count::In).await?;
        }
        let indexed: Vec<String> = mentioned
            .iter()
            .map(|m| self.keys.mentions(*m))
            .chain(tags.iter().map(|t| self.keys.tag(t)))
            .collect();
        if !indexed.is_empty() {
            let mut pipe = redis::pipe();
            for key in &indexed {
                pipe.zadd(key, sid, status.posted).ignore();
                pipe.zremrangebyrank(key, 0, -(INDEX_CAP as isize) - 1)
                    .ignore();
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
        if !private && !tags.is_empty() {
            self.count_trend(sid, status.posted, &tags, Count::In)
                .await?;
        }
        for id in parent.into_iter().chain(original) {
            self.counts_cache.forget(id);
        }
        let tasks = self
            .fanout_inline(FanoutKind::Post, sid, uid, status.posted)
            .await?;
        let at = status.posted;
        let mut events = vec![body(&Event::Status {
            at,
            status: status.clone(),
            private,
        })];
        for &target in mentioned {
            events.push(body(&Event::Mention {
                at,
                status: status.clone(),
                target,
                private,
            }));
        }
        let original = status.repost_of_uid.as_deref().and_then(|t| t.parse().ok());
        if let Some(target) = original.filter(|_| *notify_original) {
            events.push(body(&Event::Repost {
                at,
                status: status.clone(),
                target,
                private,
            }));
        }
        let answer = match idempotency_key {
            Some(key) => Some((
                self.keys.idempotency(uid, key),
                serde_json::to_string(&status).map_err(|e| StoreError::Internal(e.to_string()))?,
            )),
            None => None,
        };
        self.finish_op(
            owed,
            Finish {
                events,
                tasks,
                answer,
            },
        )
        .await?;
        Ok(PostEnd::Created)
    }

    /// A reply enters or leaves its parent's replies.
    async fn count_reply(
        &self,
        parent: u64,
        sid: u64,
        posted: f64,
        count: Count,
    ) -> StoreResult<()> {
        let mut conn = self.conn();
        let _: i64 = self
            .scripts
            .replies_count
            .key(self.keys.status(parent))
            .key(self.keys.replies(parent))
            .arg(count.flag())
            .arg(sid)
            .arg(posted)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// A public status's hashtags counted in (or out of) its minute's
    /// trending bucket, once.
    async fn count_trend(
        &self,
        sid: u64,
        posted: f64,
        tags: &[String],
        count: Count,
    ) -> StoreResult<()> {
        let minute = (posted / 60.0) as u64;
        let mut conn = self.conn();
        let mut inv = self.scripts.trend.prepare_invoke();
        inv.key(self.keys.trend_bucket(minute))
            .key(self.keys.trend_seen(minute))
            .arg(count.flag())
            .arg(sid)
            .arg(TREND_BUCKET_TTL);
        for t in tags {
            inv.arg(t);
        }
        let _: i64 = inv.invoke_async(&mut conn).await?;
        Ok(())
    }

    /// A delete's steps: the mark (ownership checked), the likers' lists,
    /// the author's timelines, the parent's replies, the indices, the
    /// trending bucket, the repost mapping, the reposts of it, the
    /// tombstone, the first followers' homes; then its event.
    pub(crate) async fn run_delete(&self, owed: &Owed) -> StoreResult<()> {
        let Op::Delete {
            sid,
            uid,
            private,
            at,
        } = owed.op
        else {
            return Err(StoreError::Internal("not a delete".into()));
        };
        let mut conn = self.conn();
        let reply: Vec<String> = self
            .scripts
            .delete_mark
            .key(self.keys.status(sid))
            .arg(uid)
            .arg(owed.n)
            .invoke_async(&mut conn)
            .await?;
        match reply.first().map(String::as_str) {
            Some("ok") => {}
            Some("forbidden") => {
                self.finish_op(owed, Finish::default()).await?;
                return Err(StoreError::Forbidden(
                    "Only the author may delete a status.".into(),
                ));
            }
            _ => {
                self.finish_op(owed, Finish::default()).await?;
                return Err(StoreError::NotFound("status"));
            }
        }
        let mut h: HashMap<String, String> = reply[1..]
            .chunks(2)
            .filter(|kv| kv.len() == 2)
            .map(|kv| (kv[0].clone(), kv[1].clone()))
            .collect();
        h.remove("deleted");
        self.cache.forget(sid);
        // Only the tombstone left: an earlier run did every step but the last.
        if let Some(status) = Status::from_hash(&h) {
            self.delete_steps(sid, uid, &status, &h, private, at)
                .await?;
            let _: i64 = self
                .scripts
                .status_bury
                .key(self.keys.status(sid))
                .key(self.keys.likers(sid))
                .key(self.keys.like_seq(sid))
                .key(self.keys.reposters(sid))
                .arg(owed.n)
                .arg(TOMBSTONE_TTL)
                .invoke_async(&mut conn)
                .await?;
        }
        self.cache.forget(sid);
        self.counts_cache.forget(sid);
        let tasks = self.fanout_inline(FanoutKind::Delete, sid, uid, at).await?;
        self.finish_op(
            owed,
            Finish {
                events: vec![body(&Event::Delete {
                    at,
                    status_id: sid,
                    uid,
                    private,
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
        &self,
        sid: u64,
        uid: u64,
        status: &Status,
        h: &HashMap<String, String>,
        private: bool,
        at: f64,
    ) -> StoreResult<()> {
        let mut conn = self.conn();
        let likers: Vec<u64> = conn.zrange(self.keys.likers(sid), 0, -1).await?;
        if !likers.is_empty() {
            let mut pipe = redis::pipe();
            for liker in &likers {
                pipe.zrem(self.keys.likes(*liker), sid).ignore();
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
        let _: i64 = self
            .scripts
            .author_delete
            .key(self.keys.user(uid))
            .key(self.keys.profile(uid))
            .key(self.keys.home(uid))
            .key(self.keys.deleted(uid))
            .arg(sid)
            .arg(at)
            .arg(HOME_CAP)
            .invoke_async(&mut conn)
            .await?;
        let parent = status
            .reply_to
            .as_deref()
            .and_then(|p| p.parse::<u64>().ok());
        if let Some(p) = parent {
            self.count_reply(p, sid, status.posted, Count::Out).await?;
            self.counts_cache.forget(p);
        }
        let mentioned: Vec<u64> = h
            .get("mention_uids")
            .and_then(|m| serde_json::from_str(m).ok())
            .unwrap_or_default();
        let tags = unique_tags(&status.hashtags);
        let indexed: Vec<String> = mentioned
            .iter()
            .map(|m| self.keys.mentions(*m))
            .chain(tags.iter().map(|t| self.keys.tag(t)))
            .collect();
        if !indexed.is_empty() {
            let mut pipe = redis::pipe();
            for key in &indexed {
                pipe.zrem(key, sid).ignore();
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
        if !tags.is_empty() {
            self.count_trend(sid, status.posted, &tags, Count::Out)
                .await?;
        }
        if let Some(original) = status
            .repost_of
            .as_deref()
            .and_then(|p| p.parse::<u64>().ok())
        {
            let _: Vec<String> = self
                .scripts
                .repost_claim
                .key(self.keys.status(original))
                .key(self.keys.reposters(original))
                .arg("0")
                .arg(uid)
                .arg(sid)
                .invoke_async(&mut conn)
                .await?;
            self.counts_cache.forget(original);
        }
        // Reposts of a deleted status go with it, each a delete of its own.
        let reposts: HashMap<String, String> = conn.hgetall(self.keys.reposters(sid)).await?;
        for (reposter, repost) in reposts {
            if let (Ok(reposter), Ok(repost)) = (reposter.parse(), repost.parse()) {
                match Box::pin(self.delete_status(repost, reposter, private, at)).await {
                    Ok(()) | Err(StoreError::NotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// A follow change's steps: the follower's `following` (the authority),
    /// the followee's `followers`, the follower's home; then its event when
    /// it changed anything. Returns whether it did.
    pub(crate) async fn run_follow(&self, owed: &Owed) -> StoreResult<bool> {
        let Op::Follow {
            source,
            target,
            follow,
            at,
        } = owed.op
        else {
            return Err(StoreError::Internal("not a follow".into()));
        };
        let mut conn = self.conn();
        let (changed, applied, _count): (i64, i64, i64) = self
            .scripts
            .follow_source
            .key(self.keys.following(source))
            .key(self.keys.user(source))
            .key(self.keys.follow_applied(source))
            .arg(target)
            .arg(if follow { "1" } else { "0" })
            .arg(at)
            .arg(owed.n)
            .invoke_async(&mut conn)
            .await?;
        if applied == 1 {
            self.follow_steps(source, target, follow, owed.n as i64, at)
                .await?;
        }
        let events = if changed == 1 {
            let event = if follow {
                Event::Follow { at, source, target }
            } else {
                Event::Unfollow { at, source, target }
            };
            vec![body(&event)]
        } else {
            Vec::new()
        };
        self.finish_with(owed, events).await?;
        Ok(changed == 1)
    }

    /// A like change's steps: the status's likers (the authority), the
    /// user's list of likes made to agree with it; then the like event.
    /// Returns whether it changed and the likes now.
    pub(crate) async fn run_like(&self, owed: &Owed) -> StoreResult<(bool, u64)> {
        let Op::Like {
            uid,
            sid,
            author,
            private,
            like,
            at,
        } = owed.op
        else {
            return Err(StoreError::Internal("not a like".into()));
        };
        let mut conn = self.conn();
        let reply: redis::Value = self
            .scripts
            .like
            .key(self.keys.status(sid))
            .key(self.keys.likers(sid))
            .key(self.keys.like_seq(sid))
            .arg(uid)
            .arg(owed.n)
            .arg(at)
            .arg(if like { "1" } else { "0" })
            .invoke_async(&mut conn)
            .await?;
        self.counts_cache.forget(sid);
        let Ok((changed, likes)) = redis::from_redis_value::<(i64, u64)>(reply) else {
            self.finish_op(owed, Finish::default()).await?;
            return Err(StoreError::NotFound("status"));
        };
        // The user's list follows the likers set: written, then checked
        // again, so a like and an unlike racing leave it as the set says.
        for _ in 0..2 {
            let since: Option<f64> = conn.zscore(self.keys.likers(sid), uid).await?;
            let _: () = match since {
                Some(t) => conn.zadd(self.keys.likes(uid), sid, t).await?,
                None => conn.zrem(self.keys.likes(uid), sid).await?,
            };
            let again: Option<f64> = conn.zscore(self.keys.likers(sid), uid).await?;
            if again.is_some() == since.is_some() {
                break;
            }
        }
        let mut events = Vec::new();
        if changed == 1 && like {
            events.push(body(&Event::Like {
                at,
                status_id: sid,
                source: uid,
                target: author,
                private,
            }));
        }
        self.finish_with(owed, events).await?;
        Ok((changed == 1, likes))
    }

    /// A follow request's steps: the private account's incoming requests,
    /// the asker's outgoing ones; then, for a new request, its event.
    /// Returns whether the incoming set changed.
    pub(crate) async fn run_request(&self, owed: &Owed) -> StoreResult<bool> {
        let Op::Request {
            source,
            target,
            ask,
            at,
        } = owed.op
        else {
            return Err(StoreError::Internal("not a follow request".into()));
        };
        let mut conn = self.conn();
        let changed: i64 = if ask {
            let added: i64 = redis::cmd("ZADD")
                .arg(self.keys.requests(target))
                .arg("NX")
                .arg(at)
                .arg(source)
                .query_async(&mut conn)
                .await?;
            let _: i64 = redis::cmd("ZADD")
                .arg(self.keys.requested(source))
                .arg("NX")
                .arg(at)
                .arg(target)
                .query_async(&mut conn)
                .await?;
            added
        } else {
            let removed: i64 = conn.zrem(self.keys.requests(target), source).await?;
            let _: i64 = conn.zrem(self.keys.requested(source), target).await?;
            removed
        };
        let events = if ask && changed == 1 {
            vec![body(&Event::FollowRequest {
                at,
                source,
                target,
                private: true,
            })]
        } else {
            Vec::new()
        };
        self.finish_with(owed, events).await?;
        Ok(changed == 1)
    }

    /// Begins and runs a write that needs no idempotency key.
    pub(crate) async fn start_op(&self, op: Op) -> StoreResult<Owed> {
        match self.begin_op(&op, None).await? {
            Begun::Started(owed) => Ok(owed),
            Begun::Duplicate(_) => Err(StoreError::Internal("op_begin without a key".into())),
        }
    }

    /// Claims outbox entries whose lease ran out, for a worker to complete:
    /// each as its raw member and, when it parses, the entry.
    pub async fn claim_ops(&self, most: usize) -> StoreResult<Vec<(String, Option<Owed>)>> {
        let mut conn = self.conn();
        let members: Vec<String> = self
            .scripts
            .outbox_claim
            .key(self.keys.outbox())
            .arg(now())
            .arg(self.lease_deadline())
            .arg(most)
            .invoke_async(&mut conn)
            .await?;
        Ok(members
            .into_iter()
            .map(|m| {
                let owed = Owed::decode(&m);
                (m, owed)
            })
            .collect())
    }

    /// Drops an outbox entry that cannot be parsed (written by a foreign
    /// version), so it is not claimed for ever.
    pub async fn drop_op(&self, member: &str) -> StoreResult<()> {
        let mut conn = self.conn();
        let _: () = conn.zrem(self.keys.outbox(), member).await?;
        Ok(())
    }

    /// Entries in the outbox (work owed by committed writes).
    pub async fn outbox_depth(&self) -> StoreResult<u64> {
        let mut conn = self.conn();
        Ok(conn.zcard(self.keys.outbox()).await?)
    }
}
