//! An outbox entry's record: the write it stands for ([`Op`], with its
//! payload, which decides its partition) and the entry as a run holds it
//! ([`Owed`]).

use crate::store::plumbing::keys::{like_part, pair_part, user_part};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A write that spans slots, as recorded in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// A sign-up (`uid` first: versions before 2026-11-27 filled it in
    /// in the `{g}` outbox's entry).
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
        kind: crate::hides::Relation,
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
        start: Option<crate::store::outbox::payloads::NewConversation>,
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
    /// An edit of status `sid` by `uid` (`chains/edit.rs`).
    Edit {
        /// The status.
        sid: u64,
        /// Who edits it (only its author may).
        uid: u64,
        /// The new text.
        message: String,
        /// Its hashtags.
        hashtags: Vec<String>,
        /// The logins it mentions that belong to users.
        mentions: Vec<String>,
        /// Mentioned users who may see it (its mentions timelines).
        mentioned: Vec<u64>,
        /// Whether the author's account is private.
        private: bool,
        /// Time of the edit.
        at: f64,
        /// The author's idempotency key (`edit:<sid>:<key>`), if one was sent.
        #[serde(default)]
        idempotency_key: Option<String>,
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

impl Op {
    /// The outbox partition of this op. Ops whose numbers are compared
    /// with each other share one: every change between two users, a
    /// user's likes of one status. A user's own writes (a sign-up
    /// included) go to the user's, where their idempotency keys live.
    /// (`None`, the `{g}` outbox, is where versions before 2026-11-27 kept
    /// sign-ups, taking the user id from a counter with the entry: entries
    /// left there are still claimed and finished from there.)
    pub fn part(&self) -> Option<usize> {
        match self {
            Op::Follow { source, target, .. }
            | Op::Request { source, target, .. }
            | Op::Relate { source, target, .. } => Some(pair_part(*source, *target)),
            Op::Like { uid, sid, .. } => Some(like_part(*uid, *sid)),
            Op::Post { fields, .. } => Some(user_part(
                fields.get("uid").and_then(|u| u.parse().ok()).unwrap_or(0),
            )),
            Op::Delete { uid, .. }
            | Op::Edit { uid, .. }
            | Op::Message { uid, .. }
            | Op::DeleteAccount { uid, .. }
            | Op::Suspend { uid, .. }
            | Op::Rename { uid, .. }
            | Op::User { uid, .. } => Some(user_part(*uid)),
            Op::EndSessions { sessions, .. } => {
                Some(user_part(sessions.first().map_or(0, |(uid, _)| *uid)))
            }
        }
    }
}

/// An outbox entry: its member, its number, its op and where it is.
#[derive(Debug, Clone)]
pub struct Owed {
    /// The outbox member, `<n>|<op JSON>`.
    pub member: String,
    /// The op number.
    pub n: u64,
    /// The write.
    pub op: Op,
    /// Its outbox partition (`None`: the `{g}` outbox).
    pub part: Option<usize>,
    /// When this run's lease on the entry ends (as this process took it;
    /// infinite when not known).
    pub deadline: f64,
}

impl Owed {
    /// Parses a member of the `{g}` outbox.
    pub fn decode(member: &str) -> Option<Owed> {
        Owed::decode_in(member, None)
    }

    /// Parses a member of outbox `part`.
    pub fn decode_in(member: &str, part: Option<usize>) -> Option<Owed> {
        let (n, json) = member.split_once('|')?;
        Some(Owed {
            member: member.to_string(),
            n: n.parse().ok()?,
            op: serde_json::from_str(json).ok()?,
            part,
            deadline: f64::INFINITY,
        })
    }

    /// The entry an idempotency key's `pending|<member>` value names: in
    /// the `{g}` outbox for a key where the first layout kept them
    /// (`legacy`), else in its op's partition. The run that finishes it
    /// holds no claim, so it runs as if it held one ending at `deadline`
    /// (a lease from when the value was read, before the entry could be
    /// retired): it emits only within that lease and its grace, as a
    /// claimed run does.
    pub fn decode_pending(member: &str, legacy: bool, deadline: f64) -> Option<Owed> {
        let owed = Owed::decode(member)?;
        let part = if legacy { None } else { owed.op.part() };
        Some(Owed {
            part,
            deadline,
            ..owed
        })
    }

    /// The op number of an outbox member, for logs (the op itself may hold
    /// a password hash).
    pub fn number(member: &str) -> &str {
        member.split_once('|').map_or("?", |(n, _)| n)
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
    fn every_write_but_a_sign_up_is_partitioned_and_compared_ones_together() {
        let follow = Op::Follow {
            source: 3,
            target: 9,
            follow: true,
            at: 0.0,
        };
        let block = Op::Relate {
            source: 9,
            target: 3,
            kind: crate::hides::Relation::Block,
            on: true,
            at: 0.0,
        };
        assert_eq!(follow.part(), block.part(), "one pair, one partition");
        let like = Op::Like {
            uid: 3,
            sid: 77,
            author: 9,
            private: false,
            like: true,
            at: 0.0,
        };
        assert_eq!(like.part(), Some(like_part(3, 77)));
        let delete = Op::Delete {
            sid: 77,
            uid: 9,
            private: false,
            at: 0.0,
        };
        assert_eq!(delete.part(), Some(user_part(9)), "a user's own writes");
        let signup = Op::User {
            uid: 5,
            login: "l".into(),
            name: "n".into(),
            email: "e@x.io".into(),
            password: String::new(),
            at: 0.0,
        };
        assert_eq!(
            signup.part(),
            Some(user_part(5)),
            "a sign-up is the user's own write"
        );
        let owed = Owed::decode_in(
            "4101|{\"op\":\"follow\",\"source\":3,\"target\":9,\"follow\":true,\"at\":0.0}",
            follow.part(),
        )
        .unwrap();
        assert_eq!((owed.n, owed.part, owed.op), (4101, follow.part(), follow));
    }
}
