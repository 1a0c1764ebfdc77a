//! An outbox entry's record: the write it stands for ([`Op`], with its
//! payload, which decides its partition), the entry as a run holds it
//! ([`Owed`]), and recording it ([`Outbox::begin`]: the chains record the
//! ops they start, so this sits beside them).

use super::entry::Entry;
use super::finish::{Outbox, IDEMPOTENCY_TTL};
use crate::store::chains::delete::DeleteOp;
use crate::store::chains::edit::EditOp;
use crate::store::chains::end_sessions::EndSessionsOp;
use crate::store::chains::follow::FollowOp;
use crate::store::chains::like::LikeOp;
use crate::store::chains::message::MessageOp;
use crate::store::chains::payloads::DeleteAccountOp;
use crate::store::chains::post::PostOp;
use crate::store::chains::relate::RelateOp;
use crate::store::chains::rename::RenameOp;
use crate::store::chains::request::RequestOp;
use crate::store::chains::signup::UserOp;
use crate::store::chains::suspend::SuspendOp;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::keys::{like_part, pair_part, user_part, OUTBOX_PARTS};
use serde::{Deserialize, Serialize};

/// A write that spans slots, as recorded in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A sign-up, under the snowflake id it took.
    User(UserOp),
    /// A post: the status HASH fields and how it is posted.
    Post(PostOp),
    /// A delete by `uid` of status `sid`.
    Delete(DeleteOp),
    /// A follow or unfollow.
    Follow(FollowOp),
    /// A like or unlike.
    Like(LikeOp),
    /// A follow request asked (`ask`) or withdrawn (rejected, cancelled,
    /// authorized).
    Request(RequestOp),
    /// A block or mute set or lifted ([`store::relations`](crate::store::entities::relations)).
    Relate(RelateOp),
    /// A message sent (and, for its first message, the conversation
    /// started): [`store::conversations`](crate::store::entities::conversations).
    Message(MessageOp),
    /// An account deleted (`chains/account.rs`): everything it holds
    /// undone as its own actions would undo it.
    DeleteAccount(DeleteAccountOp),
    /// An account suspended (`on`) or its suspension lifted by an admin
    /// ([`store::moderation`](crate::store::entities::moderation)): the flag, the set the hubs load, the
    /// sessions, the audit entry (when `audit`), then the event.
    Suspend(SuspendOp),
    /// Sessions ended ([`store::sessions`](crate::store::entities::sessions)): at their authority, then in the
    /// index with their revocation.
    EndSessions(EndSessionsOp),
    /// An edit of status `sid` by `uid` (`chains/edit.rs`).
    Edit(EditOp),
    /// A login or email change.
    Rename(RenameOp),
}

impl Op {
    /// Runs the op's chain for its outbox `entry`, as its own type's
    /// `run` does (`PostOp::run`, ...), its answer dropped: what a worker
    /// finishing a dead request's write needs.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<()> {
        match self {
            Op::User(op) => op.run(store, entry).await,
            Op::Post(op) => op.run(store, entry).await.map(|_| ()),
            Op::Delete(op) => op.run(store, entry).await,
            Op::Edit(op) => op.run(store, entry).await.map(|_| ()),
            Op::Follow(op) => op.run(store, entry).await.map(|_| ()),
            Op::Like(op) => op.run(store, entry).await.map(|_| ()),
            Op::Request(op) => op.run(store, entry).await.map(|_| ()),
            Op::Rename(op) => op.run(store, entry).await,
            Op::Relate(op) => op.run(store, entry).await.map(|_| ()),
            Op::Message(op) => op.run(store, entry).await.map(|_| ()),
            Op::DeleteAccount(op) => op.run(store, entry).await,
            Op::Suspend(op) => op.run(store, entry).await.map(|_| ()),
            Op::EndSessions(op) => op.run(store, entry).await.map(|_| ()),
        }
    }

    /// The outbox partition of this op. Ops whose numbers are compared
    /// with each other share one: every change between two users, a
    /// user's likes of one status. A user's own writes (a sign-up
    /// included) go to the user's, where their idempotency keys live.
    pub fn part(&self) -> usize {
        match self {
            Op::Follow(FollowOp { source, target, .. })
            | Op::Request(RequestOp { source, target, .. })
            | Op::Relate(RelateOp { source, target, .. }) => pair_part(*source, *target),
            Op::Like(LikeOp { uid, sid, .. }) => like_part(*uid, *sid),
            Op::Post(PostOp { fields, .. }) => {
                user_part(fields.get("uid").and_then(|u| u.parse().ok()).unwrap_or(0))
            }
            Op::Delete(DeleteOp { uid, .. })
            | Op::Edit(EditOp { uid, .. })
            | Op::Message(MessageOp { uid, .. })
            | Op::DeleteAccount(DeleteAccountOp { uid, .. })
            | Op::Suspend(SuspendOp { uid, .. })
            | Op::Rename(RenameOp { uid, .. })
            | Op::User(UserOp { uid, .. }) => user_part(*uid),
            Op::EndSessions(EndSessionsOp { sessions, .. }) => {
                user_part(sessions.first().map_or(0, |(uid, _)| *uid))
            }
        }
    }
}

/// An outbox entry with the write it records.
#[derive(Debug, Clone)]
pub struct Owed {
    /// The entry: member, number, partition, lease.
    pub entry: Entry,
    /// The write.
    pub op: Op,
}

impl Owed {
    /// Parses a member of outbox `part`.
    pub fn decode_in(member: &str, part: usize) -> Option<Owed> {
        let (n, op) = parse(member)?;
        Some(Owed::of(member, n, op, part, f64::INFINITY))
    }

    /// The entry an idempotency key's `pending|<member>` value names, in
    /// its op's partition. The run that finishes it
    /// holds no claim, so it runs as if it held one ending at `deadline`
    /// (a lease from when the value was read, before the entry could be
    /// retired): it emits only within that lease and its grace, as a
    /// claimed run does.
    pub fn decode_pending(member: &str, deadline: f64) -> Option<Owed> {
        let (n, op) = parse(member)?;
        let part = op.part();
        Some(Owed::of(member, n, op, part, deadline))
    }

    fn of(member: &str, n: u64, op: Op, part: usize, deadline: f64) -> Owed {
        Owed {
            entry: Entry {
                member: member.to_string(),
                n,
                part,
                deadline,
            },
            op,
        }
    }

    /// This entry with the lease that ends at `deadline`.
    pub fn leased(mut self, deadline: f64) -> Owed {
        self.entry.deadline = deadline;
        self
    }
}

/// An outbox member's number and op (`<n>|<op JSON>`).
fn parse(member: &str) -> Option<(u64, Op)> {
    let (n, json) = member.split_once('|')?;
    Some((n.parse().ok()?, serde_json::from_str(json).ok()?))
}

/// What `op_begin` answered.
pub(crate) enum Begun {
    /// Recorded: run the chain.
    Started(Box<Owed>),
    /// The idempotency key was used: the first answer, or the entry of the
    /// first write still under way.
    Duplicate(String),
}

impl Outbox<'_> {
    /// Records `op` in its outbox (with an idempotency key, which lives in
    /// the op's partition: claims it too).
    pub(crate) async fn begin(self, op: &Op, idempotency: Option<&str>) -> StoreResult<Begun> {
        let json = serde_json::to_string(op).map_err(|e| StoreError::Internal(e.to_string()))?;
        let part = op.part();
        let outbox = self.store.keys.part_outbox(part);
        let counter = self.store.keys.part_next_op(part);
        let deadline = self.lease_deadline();
        let mut conn = self.store.conn();
        let mut inv = self.store.scripts.op_begin.prepare_invoke();
        inv.key(&outbox).key(&counter);
        match idempotency {
            Some(key) => inv.key(key),
            None => inv.key(&counter),
        };
        let reply: (String, String) = inv
            .arg(json)
            .arg(deadline)
            .arg(if idempotency.is_some() { "1" } else { "0" })
            .arg(IDEMPOTENCY_TTL)
            .arg(OUTBOX_PARTS)
            .arg(part)
            .invoke_async(&mut conn)
            .await?;
        match reply.0.as_str() {
            "ok" => Owed::decode_in(&reply.1, part)
                .map(|owed| Begun::Started(Box::new(owed.leased(deadline))))
                .ok_or_else(|| StoreError::Internal("op_begin gave a bad member".into())),
            _ => Ok(Begun::Duplicate(reply.1)),
        }
    }

    /// Begins and runs a write that needs no idempotency key.
    pub(crate) async fn start(self, op: Op) -> StoreResult<Owed> {
        match self.begin(&op, None).await? {
            Begun::Started(owed) => Ok(*owed),
            Begun::Duplicate(_) => Err(StoreError::Internal("op_begin without a key".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::plumbing::conn::slot;
    use crate::store::plumbing::keys::{Keys, OUTBOX_PARTS};

    #[test]
    fn partitions_lie_one_in_each_equal_range_of_slots() {
        let keys = Keys::new("fh");
        let width = 16384 / OUTBOX_PARTS as u16;
        for k in 0..OUTBOX_PARTS {
            let outbox = keys.part_outbox(k);
            let s = slot(outbox.as_bytes());
            assert_eq!(usize::from(s / width), k, "{outbox} in slot {s}");
            // Every key of a partition shares its slot.
            assert_eq!(slot(keys.part_next_op(k).as_bytes()), s);
            assert_eq!(slot(keys.part_retired(k).as_bytes()), s);
        }
    }

    #[test]
    fn a_pair_has_one_partition_whichever_side_acts_and_pairs_spread_evenly() {
        let mut seen = [0usize; OUTBOX_PARTS];
        for a in 1..=100u64 {
            for b in 1..=100u64 {
                assert_eq!(pair_part(a, b), pair_part(b, a));
                seen[pair_part(a, b)] += 1;
            }
        }
        let mean = 10_000 / OUTBOX_PARTS;
        for (k, n) in seen.iter().enumerate() {
            assert!(
                n * 10 > mean * 8 && n * 10 < mean * 12,
                "partition {k}: {n} pairs (mean {mean})"
            );
        }
    }

    #[test]
    fn every_write_is_partitioned_and_compared_ones_together() {
        let follow = Op::Follow(FollowOp {
            source: 3,
            target: 9,
            follow: true,
            at: 0.0,
        });
        let block = Op::Relate(RelateOp {
            source: 9,
            target: 3,
            kind: crate::hides::Relation::Block,
            on: true,
            at: 0.0,
        });
        assert_eq!(follow.part(), block.part(), "one pair, one partition");
        let like = Op::Like(LikeOp {
            uid: 3,
            sid: 77,
            author: 9,
            private: false,
            like: true,
            at: 0.0,
        });
        assert_eq!(like.part(), like_part(3, 77));
        let delete = Op::Delete(DeleteOp {
            sid: 77,
            uid: 9,
            private: false,
            at: 0.0,
        });
        assert_eq!(delete.part(), user_part(9), "a user's own writes");
        let signup = Op::User(UserOp {
            uid: 5,
            login: "l".into(),
            name: "n".into(),
            email: "e@x.io".into(),
            password: String::new(),
            at: 0.0,
        });
        assert_eq!(
            signup.part(),
            user_part(5),
            "a sign-up is the user's own write"
        );
        let owed = Owed::decode_in(
            "4101|{\"op\":\"follow\",\"source\":3,\"target\":9,\"follow\":true,\"at\":0.0}",
            follow.part(),
        )
        .unwrap();
        assert_eq!(
            (owed.entry.n, owed.entry.part, owed.op),
            (4101, follow.part(), follow)
        );
    }
}
