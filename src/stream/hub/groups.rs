//! The hub's group streams: each group's subscribers, routed by the group
//! a status (or a delete's status) carries, and dropped for a user who
//! leaves a private group.

use crate::stream::frame::Frame;
use firehose_filters::SubId;
use std::collections::HashMap;

/// Every group stream, by group.
#[derive(Default)]
pub(super) struct GroupSubs {
    by_group: HashMap<u64, Vec<SubId>>,
    /// Each subscription's group and user.
    of: HashMap<SubId, (u64, u64)>,
}

impl GroupSubs {
    /// Adds `uid`'s subscription `sub` to `gid`.
    pub(super) fn add(&mut self, sub: SubId, gid: u64, uid: u64) {
        self.by_group.entry(gid).or_default().push(sub);
        self.of.insert(sub, (gid, uid));
    }

    /// Takes `sub` out (nothing if it is no group stream).
    pub(super) fn remove(&mut self, sub: SubId) {
        let Some((gid, _)) = self.of.remove(&sub) else {
            return;
        };
        if let Some(list) = self.by_group.get_mut(&gid) {
            list.retain(|s| *s != sub);
            if list.is_empty() {
                self.by_group.remove(&gid);
            }
        }
    }

    /// Appends the subscribers of `frame`'s group (if it has one).
    pub(super) fn route(&self, frame: &Frame, out: &mut Vec<SubId>) {
        if self.of.is_empty() {
            return;
        }
        if let Some(list) = frame.group().and_then(|g| self.by_group.get(&g)) {
            out.extend_from_slice(list);
        }
    }

    /// `uid`'s subscriptions to `gid` (the caller removes them).
    pub(super) fn left(&self, gid: u64, uid: u64) -> Vec<SubId> {
        self.by_group
            .get(&gid)
            .into_iter()
            .flatten()
            .filter(|s| self.of.get(s).is_some_and(|(_, u)| *u == uid))
            .copied()
            .collect()
    }
}
