//! Writes that span slots, as chains of single-slot steps driven from the
//! outbox.
//!
//! Every write that touches more than one slot (a sign-up, a post, a delete,
//! a follow, a like, a follow request) runs the same way:
//!
//! 1. `op_begin.lua` records the whole write as an [`Op`] in the outbox
//!    ZSET (`{g}`), scored by a lease deadline, and numbers it (the number
//!    is also the sequence that orders follow and like changes). A sign-up
//!    records it in `signup_begin.lua`, with the user id it takes.
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

use super::{Store, StoreError, StoreResult};
use crate::model::now;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How long an `Idempotency-Key` of `POST /api/v1/statuses` is remembered, in seconds.
pub const IDEMPOTENCY_TTL: u64 = 24 * 3600;

/// A write that spans slots, as recorded in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A sign-up (`uid` first: `signup_begin.lua` fills it in).
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
    /// A block or mute set or lifted (`store::relations`).
    Relate {
        /// Who blocks or mutes.
        source: u64,
        /// Whom.
        target: u64,
        /// `block` or `mute`.
        kind: crate::store::relations::Relation,
        /// Set (true) or lifted.
        on: bool,
        /// Time of the change.
        at: f64,
    },
    /// A message sent (and, for its first message, the conversation
    /// started): `store::conversations`.
    Message {
        /// The conversation (for a new direct one, the id proposed: the
        /// pair's claim decides).
        cid: u64,
        /// The message id.
        mid: u64,
        /// The sender.
        uid: u64,
        /// The sender's login.
        login: String,
        /// The text.
        text: String,
        /// When it was sent.
        at: f64,
        /// Set when the message starts a conversation.
        start: Option<crate::store::conversations::NewConversation>,
        /// The sender's idempotency key, if one was sent.
        idempotency_key: Option<String>,
    },
    /// An account deleted (`chains/account.rs`): everything it holds
    /// undone as its own actions would undo it.
    DeleteAccount {
        /// The user.
        uid: u64,
        /// Their login, as typed (reserved for a while).
        login: String,
        /// Their email, as typed (freed at once).
        email: String,
        /// Time of the deletion.
        at: f64,
    },
    /// An account suspended (`on`) or its suspension lifted by an admin
    /// (`store::moderation`): the flag, the set the hubs load, the
    /// sessions, the audit entry (when `audit`), then the event.
    Suspend {
        /// The user.
        uid: u64,
        /// Suspend (true) or lift.
        on: bool,
        /// The admin.
        admin: u64,
        /// The id of the audit entry the change is (none when a report's
        /// resolution records it).
        audit: Option<u64>,
        /// Audit entries kept.
        keep: usize,
    },
    /// Sessions ended (`store::sessions`): at their authority, then in the
    /// index with their revocation.
    EndSessions {
        /// Each session's user and id.
        sessions: Vec<(u64, String)>,
        /// For the idle clean-up: end only those not seen since.
        cutoff: Option<f64>,
    },
    /// A login or email change.
    Rename {
        /// The user.
        uid: u64,
        /// `login` or `email`.
        field: String,
        /// The value before, as typed.
        old: String,
        /// The value after, as typed.
        new: String,
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
            .arg(IDEMPOTENCY_TTL)
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
    pub(crate) async fn finish_with(&self, owed: &Owed, events: Vec<String>) -> StoreResult<()> {
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
            Op::Rename { .. } => self.run_rename(owed).await,
            Op::Relate { .. } => self.run_relate(owed).await.map(|_| ()),
            Op::Message { .. } => self.run_message(owed).await.map(|_| ()),
            Op::DeleteAccount { .. } => self.run_account_delete(owed).await,
            Op::Suspend { .. } => self.run_suspend(owed).await.map(|_| ()),
            Op::EndSessions { .. } => self.run_end_sessions(owed).await.map(|_| ()),
        };
        match result {
            Err(
                StoreError::NotFound(_)
                | StoreError::Forbidden(_)
                | StoreError::Conflict(..)
                | StoreError::Limit(..),
            ) => Ok(()),
            other => other,
        }
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

    /// Pushes an entry's lease out again (a long chain, an account's
    /// deletion, renews it as it goes, so no worker takes it over while
    /// it runs).
    pub(crate) async fn extend_op(&self, owed: &Owed) -> StoreResult<()> {
        let mut conn = self.conn();
        let _: i64 = redis::cmd("ZADD")
            .arg(self.keys.outbox())
            .arg("XX")
            .arg(self.lease_deadline())
            .arg(&owed.member)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Seconds since the oldest outbox entry began (its lease deadline
    /// less the lease), 0 when the outbox is empty.
    pub async fn outbox_age(&self) -> StoreResult<f64> {
        let mut conn = self.conn();
        let oldest: Vec<(String, f64)> = conn.zrange_withscores(self.keys.outbox(), 0, 0).await?;
        Ok(oldest.first().map_or(0.0, |(_, deadline)| {
            (now() - (deadline - self.outbox_lease)).max(0.0)
        }))
    }

    /// Entries in the outbox (work owed by committed writes).
    pub async fn outbox_depth(&self) -> StoreResult<u64> {
        let mut conn = self.conn();
        Ok(conn.zcard(self.keys.outbox()).await?)
    }
}
