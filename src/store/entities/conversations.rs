//! Conversations: direct (one per pair of users) and group, their messages,
//! unread counts and each user's list of them.
//!
//! A conversation's keys share the slot `{c<id>}` (its HASH, participants,
//! message ids, message bodies, unread counters); each user's list of
//! conversations is in the user's slot, the pair map of direct ones in the
//! lower id's. Sending is an outbox op (`chains/message.rs`) like a post: the
//! op is recorded before the message is stored, so a message whose send
//! answered (or whose request died after `op_begin`) is stored once and
//! announced once.

use crate::model::{Conversation, Message};
use crate::store::chains::message::MessageOp;
pub(crate) use crate::store::chains::message::Sent;
use crate::store::chains::payloads::NewConversation;
use crate::store::handle::Store;
use crate::store::outbox::{Begun, Op, Owed};
use crate::store::paging::{id_page, Cursor, IdPage, Page};
use crate::store::plumbing::error::{parse_id, StoreError, StoreResult};
use redis::AsyncCommands;
use std::collections::HashMap;

/// A message to send.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    /// The conversation (a fresh id when starting one).
    pub cid: u64,
    /// The sender and their login.
    pub uid: u64,
    /// The sender's login.
    pub login: &'a str,
    /// The text, checked.
    pub text: &'a str,
    /// Set when the message starts a conversation.
    pub start: Option<NewConversation>,
    /// The sender's `Idempotency-Key`, if any.
    pub idempotency_key: Option<&'a str>,
}

/// A conversation's HASH, participants and the viewer's unread count.
type ConvRow = (HashMap<String, String>, Vec<String>, Option<u64>);

/// Direct conversations and their messages (`Store::conversations`).
#[derive(Clone, Copy)]
pub struct Conversations<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Conversations<'_> {
    /// Sends a message (starting its conversation when `out.start` says
    /// so). With an idempotency key already used by this sender within a
    /// day, sends nothing and answers where the first went.
    pub async fn send(self, out: Outgoing<'_>) -> StoreResult<Sent> {
        // Message ids are status ids (time-ordered, no shared counter), so
        // `max_id` pages messages as it pages timelines.
        let (mid, at) = self.store.mint().snowflake().await?;
        let message = MessageOp {
            cid: out.cid,
            mid,
            uid: out.uid,
            login: out.login.to_string(),
            text: out.text.to_string(),
            at,
            start: out.start,
            idempotency_key: out.idempotency_key.map(String::from),
        };
        let op = Op::Message(message.clone());
        let key = out
            .idempotency_key
            .map(|k| self.store.keys.idempotency(out.uid, &format!("m:{k}")));
        let first = match self.store.outbox().begin(&op, key.as_deref()).await? {
            Begun::Started(owed) => return message.run(self.store, &owed.entry).await,
            Begun::Duplicate(first) => first,
        };
        let Some(pending) = first.strip_prefix("pending|") else {
            return serde_json::from_str(&first)
                .map_err(|_| StoreError::Internal("bad idempotent answer".into()));
        };
        // The first send is under way (or died): finish it (every step is
        // idempotent) and answer with it.
        let owed = Owed::decode_pending(pending, self.store.outbox().lease_deadline())
            .ok_or_else(|| StoreError::Internal("bad pending idempotency entry".into()))?;
        let Op::Message(first) = &owed.op else {
            return Err(StoreError::Internal(
                "idempotency key of a non-message".into(),
            ));
        };
        first.run(self.store, &owed.entry).await
    }

    /// Most conversations a user may be in.
    pub fn max_conversations(self) -> usize {
        self.store.limits.max_conversations
    }

    /// The direct conversation of a pair, if they have one.
    pub async fn direct_between(self, a: u64, b: u64) -> StoreResult<Option<u64>> {
        let (lo, hi) = (a.min(b), a.max(b));
        let mut conn = self.store.conn();
        Ok(conn.hget(self.store.keys.direct(lo), hi).await?)
    }

    /// How many conversations `uid` is listed in.
    pub async fn count(self, uid: u64) -> StoreResult<usize> {
        let mut conn = self.store.conn();
        Ok(conn.zcard(self.store.keys.user_convs(uid)).await?)
    }

    /// The participants of a conversation now; `None` if there is no such
    /// conversation.
    pub async fn members(self, cid: u64) -> StoreResult<Option<Vec<u64>>> {
        let mut conn = self.store.conn();
        let (exists, members): (bool, Vec<String>) = redis::pipe()
            .exists(self.store.keys.conv(cid))
            .zrange(self.store.keys.conv_members(cid), 0, -1)
            .query_async(&mut conn)
            .await?;
        if !exists {
            return Ok(None);
        }
        Ok(Some(
            members
                .iter()
                .map(|m| parse_id(m))
                .collect::<StoreResult<_>>()?,
        ))
    }

    /// Conversation `cid` as `viewer` sees it: `NotFound` unless the viewer
    /// is in it.
    pub async fn get(self, cid: u64, viewer: u64) -> StoreResult<Conversation> {
        let mut found = self.many(&[cid], viewer).await?;
        found
            .pop()
            .flatten()
            .ok_or(StoreError::NotFound("conversation"))
    }

    /// Conversations as `viewer` sees them, in order; `None` for those the
    /// viewer is not in (or that do not exist).
    async fn many(self, cids: &[u64], viewer: u64) -> StoreResult<Vec<Option<Conversation>>> {
        if cids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for &cid in cids {
            pipe.hgetall(self.store.keys.conv(cid))
                .zrange(self.store.keys.conv_members(cid), 0, -1)
                .hget(self.store.keys.conv_unread(cid), viewer);
        }
        let mut conn = self.store.conn();
        let rows: Vec<ConvRow> = pipe.query_async(&mut conn).await?;
        // The newest message of each, in a second round (its id is in the HASH).
        let mut pipe = redis::pipe();
        for (&cid, (h, _, _)) in cids.iter().zip(&rows) {
            pipe.hget(
                self.store.keys.conv_bodies(cid),
                h.get("last").cloned().unwrap_or_default(),
            );
        }
        let lasts: Vec<Option<String>> = pipe.query_async(&mut conn).await?;
        let mut out = Vec::with_capacity(cids.len());
        for ((h, members, unread), last) in rows.into_iter().zip(lasts) {
            let me = viewer.to_string();
            if h.is_empty() || !members.contains(&me) {
                out.push(None);
                continue;
            }
            let ids: Vec<u64> = members.iter().filter_map(|m| m.parse().ok()).collect();
            let num = |k: &str| h.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            out.push(Some(Conversation {
                id: h.get("id").and_then(|v| v.parse().ok()).unwrap_or_default(),
                kind: h.get("kind").cloned().unwrap_or_default(),
                title: h.get("title").filter(|t| !t.is_empty()).cloned(),
                participants: self.store.users().many(&ids).await?,
                created: num("created"),
                updated: num("updated"),
                last_message: last.and_then(|m| serde_json::from_str(&m).ok()),
                unread: unread.unwrap_or(0),
            }));
        }
        Ok(out)
    }

    /// A page of `viewer`'s conversations, newest activity first, and the
    /// cursor of the next page. Entries of conversations the viewer has
    /// left meanwhile (a send racing the leave) are dropped here.
    pub async fn page(
        self,
        viewer: u64,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<(Vec<Conversation>, Option<String>)> {
        let IdPage { ids, next_cursor } = id_page(
            self.store,
            &self.store.keys.user_convs(viewer),
            cursor,
            count,
        )
        .await?;
        let found = self.many(&ids, viewer).await?;
        let mut shown = Vec::with_capacity(found.len());
        let mut stale = Vec::new();
        for (cid, c) in ids.iter().zip(found) {
            match c {
                Some(c) => shown.push(c),
                None => stale.push(*cid),
            }
        }
        if !stale.is_empty() {
            let mut conn = self.store.conn();
            let _: () = conn.zrem(self.store.keys.user_convs(viewer), stale).await?;
        }
        Ok((shown, next_cursor))
    }

    /// A page of `cid`'s messages, newest first: `count` at or below a
    /// `max_id`, or the `page`-th `count`. The caller has checked that the
    /// viewer is in it.
    pub async fn messages(self, cid: u64, page: Page, count: usize) -> StoreResult<Vec<Message>> {
        let mut conn = self.store.conn();
        let (top, skip) = match page {
            Page::MaxId(m) => (m.to_string(), 0),
            Page::Number(n) => ("+inf".to_string(), (n - 1).saturating_mul(count as u64)),
        };
        let ids: Vec<String> = redis::cmd("ZREVRANGEBYSCORE")
            .arg(self.store.keys.conv_messages(cid))
            .arg(top)
            .arg("-inf")
            .arg("LIMIT")
            .arg(skip.min(i64::MAX as u64))
            .arg(count)
            .query_async(&mut conn)
            .await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let bodies: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(self.store.keys.conv_bodies(cid))
            .arg(&ids)
            .query_async(&mut conn)
            .await?;
        Ok(bodies
            .into_iter()
            .flatten()
            .filter_map(|b| serde_json::from_str(&b).ok())
            .collect())
    }

    /// Which of `viewer`'s `most` most recent conversations holds message
    /// `mid` (a reply by a client that names the message, not its
    /// conversation). One read of the list and one check a conversation,
    /// together; whether the viewer may still write there is the sender's
    /// check.
    pub async fn holding(self, viewer: u64, mid: u64, most: usize) -> StoreResult<Option<u64>> {
        let mut conn = self.store.conn();
        let cids: Vec<u64> = conn
            .zrevrange(
                self.store.keys.user_convs(viewer),
                0,
                most.max(1) as isize - 1,
            )
            .await?;
        let checks = cids.iter().map(|cid| {
            let mut conn = self.store.conn();
            let key = self.store.keys.conv_bodies(*cid);
            async move { conn.hexists::<_, _, bool>(key, mid).await }
        });
        let held = futures::future::join_all(checks).await;
        for (cid, held) in cids.into_iter().zip(held) {
            if held? {
                return Ok(Some(cid));
            }
        }
        Ok(None)
    }

    /// One message of a conversation.
    pub async fn message(self, cid: u64, mid: u64) -> StoreResult<Message> {
        let mut conn = self.store.conn();
        let body: Option<String> = conn.hget(self.store.keys.conv_bodies(cid), mid).await?;
        body.and_then(|b| serde_json::from_str(&b).ok())
            .ok_or(StoreError::NotFound("message"))
    }

    /// Marks `cid` read for `viewer`: `NotFound` unless they are in it.
    pub async fn mark_read(self, cid: u64, viewer: u64) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let done: i64 = self
            .store
            .scripts
            .conv_read
            .key(self.store.keys.conv_members(cid))
            .key(self.store.keys.conv_unread(cid))
            .arg(viewer)
            .invoke_async(&mut conn)
            .await?;
        if done == 0 {
            return Err(StoreError::NotFound("conversation"));
        }
        Ok(())
    }

    /// `viewer` leaves group conversation `cid`: `NotFound` unless they
    /// are in it, `Invalid` for a direct one.
    pub async fn leave(self, cid: u64, viewer: u64) -> StoreResult<()> {
        self.leave_as(cid, viewer, false).await
    }

    /// `viewer` leaves `cid`; `any`: a direct one too (a deleted account).
    pub(crate) async fn leave_as(self, cid: u64, viewer: u64, any: bool) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let outcome: String = self
            .store
            .scripts
            .conv_leave
            .key(self.store.keys.conv(cid))
            .key(self.store.keys.conv_members(cid))
            .key(self.store.keys.conv_unread(cid))
            .arg(viewer)
            .arg(if any { "1" } else { "0" })
            .invoke_async(&mut conn)
            .await?;
        match outcome.as_str() {
            "ok" => {
                // Then off the user's list (a crash between the two leaves
                // an entry that the list's next read drops).
                let _: () = conn.zrem(self.store.keys.user_convs(viewer), cid).await?;
                Ok(())
            }
            "direct" => Err(StoreError::Invalid(
                "direct_conversation",
                "A direct conversation cannot be left.".into(),
            )),
            _ => Err(StoreError::NotFound("conversation")),
        }
    }
}
