//! The message chain: for a new direct conversation the pair's claim, then
//! the message stored in its conversation (which a first message creates),
//! each participant's list of conversations, then the `direct_message`
//! event and the idempotent answer.

use crate::model::{Event, Id, Message};
use crate::store::chains::entry::Entry;
use crate::store::chains::finish::Finish;
use crate::store::events::body;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use serde::{Deserialize, Serialize};

/// A message sent (and, for its first message, the conversation
/// started): [`store::conversations`](crate::store::entities::conversations).
/// (`Op::Message`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageOp {
    /// The conversation (for a new direct one, the id proposed: the
    /// pair's claim decides).
    pub cid: u64,
    /// The message id.
    pub mid: u64,
    /// The sender.
    pub uid: u64,
    /// The sender's login.
    pub login: String,
    /// The text.
    pub text: String,
    /// When it was sent.
    pub at: f64,
    /// Set when the message starts a conversation.
    pub start: Option<crate::store::chains::payloads::NewConversation>,
    /// The sender's idempotency key, if one was sent.
    pub idempotency_key: Option<String>,
}

/// A message sent: where it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sent {
    /// The conversation (for a direct pair, the pair's one).
    pub conversation_id: u64,
    /// The message.
    pub message_id: u64,
}

impl MessageOp {
    /// A message's steps: its conversation settled
    /// ([`MessageOp::conversation`]), the message stored
    /// ([`MessageOp::store_in`]), each participant's list of conversations;
    /// then its event. Returns where it went.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<Sent> {
        let cid = self.conversation(store).await?;
        let message = Message {
            id: Id(self.mid),
            conversation_id: Id(cid),
            uid: Id(self.uid),
            login: self.login.clone(),
            text: self.text.clone(),
            sent: self.at,
        };
        let members = match self.store_in(store, cid, &message).await? {
            Ok(members) => members,
            Err(refused) => {
                store.outbox().finish_with(entry, Vec::new()).await?;
                return Err(refused);
            }
        };
        // Each participant's list, newest activity first (scores are minus
        // the time; LT keeps the newest).
        let mut pipe = redis::pipe();
        for m in &members {
            pipe.cmd("ZADD")
                .arg(store.keys.user_convs(*m))
                .arg("LT")
                .arg(-self.at)
                .arg(cid)
                .ignore();
        }
        let mut conn = store.conn();
        let _: () = pipe.query_async(&mut conn).await?;
        let sent = Sent {
            conversation_id: cid,
            message_id: self.mid,
        };
        let answer = match &self.idempotency_key {
            Some(key) => Some((
                store.keys.idempotency(self.uid, &format!("m:{key}")),
                serde_json::to_string(&sent).map_err(|e| StoreError::Internal(e.to_string()))?,
            )),
            None => None,
        };
        let event = Event::DirectMessage {
            at: self.at,
            message,
            participants: members.into_iter().map(Id).collect(),
        };
        let finish = Finish {
            events: vec![body(&event)],
            tasks: Vec::new(),
            answer,
        };
        store.outbox().finish(entry, finish).await?;
        Ok(sent)
    }

    /// The conversation the message goes to. A direct pair has one: the
    /// first claim wins, and a message proposing another goes into the
    /// winner's.
    async fn conversation(&self, store: &Store) -> StoreResult<u64> {
        let Some(new) = self.start.as_ref().filter(|n| n.kind == "direct") else {
            return Ok(self.cid);
        };
        let (lo, hi) = match new.members.as_slice() {
            [a, b] => (*a.min(b), *a.max(b)),
            _ => return Err(StoreError::Internal("a direct pair of two".into())),
        };
        let mut conn = store.conn();
        let won: u64 = store
            .scripts
            .direct_claim
            .key(store.keys.direct(lo))
            .arg(hi)
            .arg(self.cid)
            .invoke_async(&mut conn)
            .await?;
        Ok(won)
    }

    /// `conv_send.lua`: the message in conversation `cid` (started with
    /// it when the op starts one); its participants, or why it was
    /// refused (the conversation full, or gone).
    async fn store_in(
        &self,
        store: &Store,
        cid: u64,
        message: &Message,
    ) -> StoreResult<Result<Vec<u64>, StoreError>> {
        let json =
            serde_json::to_string(message).map_err(|e| StoreError::Internal(e.to_string()))?;
        let mut inv = store.scripts.conv_send.prepare_invoke();
        inv.key(store.keys.conv(cid))
            .key(store.keys.conv_members(cid))
            .key(store.keys.conv_messages(cid))
            .key(store.keys.conv_bodies(cid))
            .key(store.keys.conv_unread(cid))
            .arg(self.mid)
            .arg(self.uid)
            .arg(&json)
            .arg(self.at)
            .arg(store.limits.max_conversation_messages);
        match &self.start {
            Some(new) => {
                inv.arg("1")
                    .arg(cid)
                    .arg(&new.kind)
                    .arg(new.title.as_deref().unwrap_or(""));
                for m in &new.members {
                    inv.arg(m);
                }
            }
            None => {
                inv.arg("0");
            }
        }
        let mut conn = store.conn();
        let reply: Vec<String> = inv.invoke_async(&mut conn).await?;
        Ok(match reply.first().map(String::as_str) {
            Some("ok" | "again") => Ok(reply[1..].iter().filter_map(|m| m.parse().ok()).collect()),
            Some("full") => Err(StoreError::Limit(
                "conversation_full",
                format!(
                    "This conversation holds its most messages ({}); start another.",
                    store.limits.max_conversation_messages
                ),
            )),
            _ => Err(StoreError::NotFound("conversation")),
        })
    }
}
