//! Who may write to whom: the rules a new conversation and a message pass
//! before anything is stored. Every other participant exists; no block
//! stands between them and the sender; for a new conversation each
//! consents (their `dm_policy` is `everyone`, or they follow the sender)
//! and no one is at the bound of conversations. A direct pair's existing
//! conversation is written into instead of starting another. The answer
//! is a typed [`Refusal`], which the API turns into its errors.

use crate::hides;
use crate::store::chains::payloads::NewConversation;
use crate::store::entities::conversations::{Conversations, Outgoing, Sent};
use crate::store::plumbing::error::StoreResult;

/// Why a conversation may not start, or a message not be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No user has this id.
    NoSuchUser(u64),
    /// A block (either way) stands between the sender and this user.
    Blocked(u64),
    /// This user takes messages only from those they follow.
    OnlyFromFollowed(u64),
    /// The sender is in the most conversations allowed (this many).
    SenderAtLimit(usize),
    /// This user is in the most conversations allowed (this many).
    AtLimit(u64, usize),
}

/// Where the first message of a conversation goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// The direct conversation the pair already has.
    Existing(u64),
    /// A new conversation.
    New,
}

/// A conversation to open: who writes, to whom, and what.
#[derive(Debug, Clone)]
pub struct Start<'a> {
    /// The sender.
    pub uid: u64,
    /// The sender's login.
    pub login: &'a str,
    /// The other participants, each once, not the sender (one: direct).
    pub others: &'a [u64],
    /// A group conversation's title.
    pub title: Option<String>,
    /// The first message, checked.
    pub text: &'a str,
    /// The sender's `Idempotency-Key`, if any.
    pub idempotency_key: Option<&'a str>,
}

impl Conversations<'_> {
    /// Where `uid`'s first message to `others` goes, or why it may not be
    /// sent: every other participant must exist with no block between
    /// them and `uid`; a new conversation (any but a direct pair's that
    /// exists) must also have everyone's consent and room.
    pub async fn opening(self, uid: u64, others: &[u64]) -> StoreResult<Result<Opening, Refusal>> {
        for &other in others {
            if !self.store.users().exists(other).await? {
                return Ok(Err(Refusal::NoSuchUser(other)));
            }
        }
        // The sender's relations hold blocks both ways.
        let relations = self.store.relations().hides(uid).await?;
        if let Some(&other) = others
            .iter()
            .find(|o| relations.bits(**o) & hides::BLOCK_EITHER != 0)
        {
            return Ok(Err(Refusal::Blocked(other)));
        }
        if let [other] = others {
            if let Some(cid) = self
                .store
                .conversations()
                .direct_between(uid, *other)
                .await?
            {
                return Ok(Ok(Opening::Existing(cid)));
            }
        }
        Ok(self.consent(uid, others).await?.map(|()| Opening::New))
    }

    /// Whether every other participant consents to a new conversation
    /// with `uid`, and no one (the sender included) is at the bound.
    async fn consent(self, uid: u64, others: &[u64]) -> StoreResult<Result<(), Refusal>> {
        let conversations = self.store.conversations();
        let cap = conversations.max_conversations();
        if conversations.count(uid).await? >= cap {
            return Ok(Err(Refusal::SenderAtLimit(cap)));
        }
        for &other in others {
            if self.store.users().dm_policy(other).await? == "following"
                && !self.store.follows().is_following(other, uid).await?
            {
                return Ok(Err(Refusal::OnlyFromFollowed(other)));
            }
            if conversations.count(other).await? >= cap {
                return Ok(Err(Refusal::AtLimit(other, cap)));
            }
        }
        Ok(Ok(()))
    }

    /// Sends the first message where [`opening`](Conversations::opening) said:
    /// into the existing direct conversation, or starting a new one (a
    /// fresh id; direct for one other participant, else a group). True
    /// with it when this call started the conversation (a retry with the
    /// same idempotency key answers where the first went, and false).
    pub async fn open(self, start: Start<'_>, opening: Opening) -> StoreResult<(Sent, bool)> {
        let (cid, new) = match opening {
            Opening::Existing(cid) => (cid, None),
            Opening::New => {
                let mut members = vec![start.uid];
                members.extend(start.others);
                let (cid, _) = self.store.mint().snowflake().await?;
                let kind = if start.others.len() == 1 {
                    "direct"
                } else {
                    "group"
                };
                let new = NewConversation {
                    kind: kind.into(),
                    title: start.title,
                    members,
                };
                (cid, Some(new))
            }
        };
        let starts = new.is_some();
        let sent = self
            .store
            .conversations()
            .send(Outgoing {
                cid,
                uid: start.uid,
                login: start.login,
                text: start.text,
                start: new,
                idempotency_key: start.idempotency_key,
            })
            .await?;
        let started = starts && sent.conversation_id == cid;
        Ok((sent, started))
    }

    /// Whether `uid` may send into conversation `cid` of `members` (them
    /// among them): in a direct conversation a block either way stops it.
    pub async fn may_send(
        self,
        uid: u64,
        cid: u64,
        members: &[u64],
    ) -> StoreResult<Option<Refusal>> {
        let [a, b] = members else { return Ok(None) };
        if self.store.conversations().direct_between(*a, *b).await? != Some(cid) {
            return Ok(None);
        }
        let other = if *a == uid { *b } else { *a };
        let blocked = self.store.relations().bits(uid, other).await? & hides::BLOCK_EITHER != 0;
        Ok(blocked.then_some(Refusal::Blocked(other)))
    }
}
