//! The users with subscriptions here and their hiding relations
//! ([`crate::hides`]): what the dispatcher asks before delivering an event
//! caused by someone a viewer blocked or muted, or who blocked them. Kept
//! current by the relation changes heard on the channel, with no Redis
//! round trip per delivery.

use crate::hides::{self, Change, Hides};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Relation changes remembered for subscriptions whose snapshot was read
/// before a change that the dispatcher heard before their `Register`.
pub(super) const RELATION_LOG: usize = 16_384;

/// What of a viewer's relations hides an event on a stream: on the user
/// stream (their home's) any relation, on every other stream being blocked
/// by whoever caused it.
pub(crate) fn hide_mask(stream: &str) -> u8 {
    if stream == "user" || crate::stream::want::is_list_stream(stream) {
        hides::FEED
    } else {
        hides::UNSEEABLE
    }
}

/// A user with subscriptions here: their relations and how many
/// subscriptions they hold.
struct Viewer {
    hides: Hides,
    subs: usize,
}

#[derive(Default)]
pub(super) struct Viewers {
    by_uid: FxHashMap<u64, Viewer>,
    /// How many viewers have a relation that hides anyone: while none
    /// does, deliveries skip the check.
    hiding: usize,
    /// The latest relation changes heard (at most [`RELATION_LOG`]).
    log: VecDeque<Change>,
}

impl Viewers {
    /// A subscription of `uid` arrives with the relations read for it.
    pub(super) fn add(&mut self, uid: u64, snapshot: Hides) {
        let viewer = self.by_uid.entry(uid).or_insert_with(|| Viewer {
            hides: Hides::default(),
            subs: 0,
        });
        let was = !viewer.hides.is_empty();
        if viewer.subs == 0 || snapshot.base() > viewer.hides.base() {
            viewer.hides = snapshot;
            // Changes heard before this arrived, newer than the snapshot.
            for c in self.log.iter().filter(|c| c.uid == uid) {
                viewer.hides.apply(c.other.get(), c.bits, c.seq);
            }
        }
        viewer.subs += 1;
        let now = !viewer.hides.is_empty();
        Self::count(&mut self.hiding, was, now);
    }

    /// A subscription of `uid` ended.
    pub(super) fn drop_one(&mut self, uid: u64) {
        let Some(viewer) = self.by_uid.get_mut(&uid) else {
            return;
        };
        viewer.subs -= 1;
        if viewer.subs == 0 {
            let was = !viewer.hides.is_empty();
            self.by_uid.remove(&uid);
            Self::count(&mut self.hiding, was, false);
        }
    }

    /// Relation changes heard: applied to the viewers they concern, and
    /// remembered for subscriptions still on their way.
    pub(super) fn apply(&mut self, changes: Vec<Change>) {
        for c in changes {
            if let Some(viewer) = self.by_uid.get_mut(&c.uid.get()) {
                let was = !viewer.hides.is_empty();
                viewer.hides.apply(c.other.get(), c.bits, c.seq);
                let now = !viewer.hides.is_empty();
                Self::count(&mut self.hiding, was, now);
            }
            if self.log.len() >= RELATION_LOG {
                self.log.pop_front();
            }
            self.log.push_back(c);
        }
    }

    /// Whether no viewer hides anyone (then nothing needs checking).
    pub(super) fn none_hiding(&self) -> bool {
        self.hiding == 0
    }

    /// Whether `uid`'s relations hide an event caused by `actors` on
    /// `stream`.
    pub(super) fn hides(&self, uid: u64, actors: &[u64], stream: &str) -> bool {
        self.by_uid
            .get(&uid)
            .is_some_and(|v| v.hides.hides_any(actors, hide_mask(stream)))
    }

    fn count(hiding: &mut usize, was: bool, now: bool) {
        match (was, now) {
            (false, true) => *hiding += 1,
            (true, false) => *hiding -= 1,
            _ => {}
        }
    }
}
