//! The relations between two users that hide content (blocks either way,
//! mutes), as one user's map of other users to bits: what read paths and
//! streams consult. Pure data; [`store::relations`](crate::store::entities::relations) reads and writes it in
//! Redis, the hub keeps a copy per connected user current from
//! `relation` events.

use crate::model::id::Id;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The user blocks the other.
pub(crate) const BLOCKS: u8 = 1;
/// The other blocks the user.
pub(crate) const BLOCKED_BY: u8 = 2;
/// The user mutes the other.
pub(crate) const MUTES: u8 = 4;
/// Either block.
pub(crate) const BLOCK_EITHER: u8 = BLOCKS | BLOCKED_BY;
/// What keeps another user's statuses off a home timeline, a user stream
/// and the mentions: any relation.
pub(crate) const FEED: u8 = BLOCKS | BLOCKED_BY | MUTES;
/// What makes another user's statuses 404 and keeps them off every public
/// stream: being blocked by their author.
pub(crate) const UNSEEABLE: u8 = BLOCKED_BY;

/// One change of a pair: from `seq` on, `bits` is what `uid` holds about
/// `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Change {
    /// The user whose map changed.
    pub uid: Id,
    /// The other user.
    pub other: Id,
    /// The relation bits now.
    pub bits: u8,
    /// The user's change counter after the change.
    pub seq: u64,
}

/// One user's hiding relations: other user -> bits (zero entries dropped),
/// with the sequence numbers that order changes heard late.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hides {
    /// The counter when the snapshot was read: changes at or below it are in.
    base: u64,
    /// Other user -> (bits, seq of the pair's last change).
    pairs: FxHashMap<u64, (u8, u64)>,
}

impl Hides {
    /// A snapshot read at counter `base` holding `pairs` (other, bits, seq).
    pub fn new(base: u64, pairs: impl IntoIterator<Item = (u64, u8, u64)>) -> Hides {
        Hides {
            base,
            pairs: pairs
                .into_iter()
                .filter(|(_, bits, _)| *bits != 0)
                .map(|(other, bits, seq)| (other, (bits, seq)))
                .collect(),
        }
    }

    /// Reads a `hide` HASH (`<other>` -> `<bits>:<seq>`, `seq` -> counter;
    /// other fields are bookkeeping).
    pub fn from_hash(fields: &[(String, String)]) -> Hides {
        let mut base = 0;
        let mut pairs = Vec::new();
        for (k, v) in fields {
            if k == "seq" {
                base = v.parse().unwrap_or(0);
            } else if let Ok(other) = k.parse::<u64>() {
                if let Some((bits, seq)) = parse_pair(v) {
                    pairs.push((other, bits, seq));
                }
            }
        }
        Hides::new(base, pairs)
    }

    /// Applies a change heard after the snapshot: only if it is newer than
    /// both the snapshot and the pair's last change. Returns whether it did.
    pub fn apply(&mut self, other: u64, bits: u8, seq: u64) -> bool {
        if seq <= self.base {
            return false;
        }
        if let Some((_, at)) = self.pairs.get(&other) {
            if *at >= seq {
                return false;
            }
        }
        if bits == 0 {
            // A cleared pair stays as a tombstone (bits 0) so that an older
            // change heard later cannot bring it back.
            self.pairs.insert(other, (0, seq));
        } else {
            self.pairs.insert(other, (bits, seq));
        }
        true
    }

    /// The bits held about `other`.
    pub fn bits(&self, other: u64) -> u8 {
        self.pairs.get(&other).map_or(0, |(bits, _)| *bits)
    }

    /// Whether any of `uids` is hidden under `mask`.
    pub fn hides_any(&self, uids: &[u64], mask: u8) -> bool {
        !self.pairs.is_empty() && uids.iter().any(|u| self.bits(*u) & mask != 0)
    }

    /// Whether no relation hides anyone.
    pub fn is_empty(&self) -> bool {
        self.pairs.values().all(|(bits, _)| *bits == 0)
    }

    /// The other users held with any bit of `mask`.
    pub fn others(&self, mask: u8) -> impl Iterator<Item = u64> + '_ {
        self.pairs
            .iter()
            .filter(move |(_, (bits, _))| bits & mask != 0)
            .map(|(other, _)| *other)
    }

    /// The newer of two snapshots of one user (by their counters).
    pub fn newer(self, other: Hides) -> Hides {
        if other.base > self.base {
            other
        } else {
            self
        }
    }

    /// The snapshot's counter.
    pub fn base(&self) -> u64 {
        self.base
    }
}

/// `<bits>:<seq>`.
pub(crate) fn parse_pair(v: &str) -> Option<(u8, u64)> {
    let (bits, seq) = v.split_once(':')?;
    Some((bits.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_apply_in_sequence_whatever_order_they_are_heard_in() {
        let mut h = Hides::from_hash(&[
            ("seq".into(), "5".into()),
            ("7".into(), "1:5".into()),
            ("8".into(), "0:3".into()),
            ("o1:7".into(), "99".into()),
        ]);
        assert_eq!(h.bits(7), BLOCKS);
        assert_eq!(h.bits(8), 0);
        // At or below the snapshot: already in it.
        assert!(!h.apply(9, BLOCKS, 5));
        // Newer: applied; then an older change of the same pair is not.
        assert!(h.apply(7, 0, 7));
        assert!(!h.apply(7, BLOCKS, 6));
        assert_eq!(h.bits(7), 0);
        assert!(h.apply(9, MUTES, 6));
        assert!(h.hides_any(&[1, 9], FEED));
        assert!(!h.hides_any(&[1, 9], UNSEEABLE));
        assert!(!h.is_empty());
        assert!(h.apply(9, 0, 8));
        assert!(h.is_empty());
    }
}

/// A relation a user sets on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// Neither sees the other; follows both ways end.
    Block,
    /// The other's statuses stay off the user's home, user stream and
    /// mentions.
    Mute,
}

impl Relation {
    /// The bit it sets on the source's side.
    pub(crate) fn bit(self) -> u8 {
        match self {
            Relation::Block => BLOCKS,
            Relation::Mute => MUTES,
        }
    }
}
