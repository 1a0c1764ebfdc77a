//! The hub's list streams: each routed by its list's members (a status's
//! or a delete's author), each holding its own copy of its list
//! ([`ListView`]) kept current from `list_changed` events (members) and
//! from follow events of its owner (whose private statuses it may get).

use crate::stream::frame::{Frame, ListChange};
use crate::stream::want::ListView;
use firehose_filters::{Event, SubId};
use std::collections::{HashMap, VecDeque};

/// List changes remembered for subscriptions whose members were read
/// before a change the dispatcher heard before their `Register`.
const CHANGE_LOG: usize = 1_024;

/// Every list stream.
#[derive(Default)]
pub(super) struct ListSubs {
    /// Subscriptions by member.
    by_member: HashMap<u64, Vec<SubId>>,
    /// Subscriptions by owner (for their follows).
    by_owner: HashMap<u64, Vec<SubId>>,
    /// Subscriptions by list.
    by_list: HashMap<u64, Vec<SubId>>,
    /// Each subscription's list.
    of: HashMap<SubId, ListView>,
    /// The latest changes heard.
    log: VecDeque<ListChange>,
}

fn push(map: &mut HashMap<u64, Vec<SubId>>, key: u64, sub: SubId) {
    map.entry(key).or_default().push(sub);
}

fn take(map: &mut HashMap<u64, Vec<SubId>>, key: u64, sub: SubId) {
    if let Some(list) = map.get_mut(&key) {
        list.retain(|s| *s != sub);
        if list.is_empty() {
            map.remove(&key);
        }
    }
}

impl ListSubs {
    /// Adds `sub`, a stream of `view`'s list, brought up to the changes
    /// heard since its members were read. Returns false when the list was
    /// deleted meanwhile (the caller ends the subscription).
    pub(super) fn add(&mut self, sub: SubId, mut view: ListView) -> bool {
        let id = view.id;
        for c in self.log.iter().filter(|c| c.list == id) {
            if c.version > view.version {
                if c.deleted {
                    return false;
                }
                apply(&mut view, c);
            }
        }
        for &m in &view.members {
            push(&mut self.by_member, m, sub);
        }
        push(&mut self.by_owner, view.owner, sub);
        push(&mut self.by_list, view.id, sub);
        self.of.insert(sub, view);
        true
    }

    /// Takes `sub` out (nothing if it is no list stream).
    pub(super) fn remove(&mut self, sub: SubId) {
        let Some(view) = self.of.remove(&sub) else {
            return;
        };
        for &m in &view.members {
            take(&mut self.by_member, m, sub);
        }
        take(&mut self.by_owner, view.owner, sub);
        take(&mut self.by_list, view.id, sub);
    }

    /// Appends the list streams that get `frame`; a follow or unfollow by
    /// an owner updates whom their streams' owner follows.
    pub(super) fn route(&mut self, frame: &Frame, out: &mut Vec<SubId>) {
        if self.of.is_empty() {
            return;
        }
        let event = frame.routing();
        let author = match event {
            Event::Status(ref s) => s.uid,
            Event::Delete { uid, .. } => uid,
            Event::Follow {
                source,
                target,
                following,
            } => {
                for sub in self.by_owner.get(&source).into_iter().flatten() {
                    if let Some(view) = self.of.get_mut(sub) {
                        if following {
                            view.following.insert(target);
                        } else if target != source {
                            view.following.remove(&target);
                        }
                    }
                }
                return;
            }
            _ => return,
        };
        for sub in self.by_member.get(&author).into_iter().flatten() {
            if self.of.get(sub).is_some_and(|v| v.wants(&event)) {
                out.push(*sub);
            }
        }
    }

    /// Applies a change heard on the channel; returns the subscriptions of
    /// a list deleted (the caller ends them).
    pub(super) fn changed(&mut self, change: ListChange) -> Vec<SubId> {
        let mut ended = Vec::new();
        let subs = self.by_list.get(&change.list).cloned().unwrap_or_default();
        for sub in subs {
            let Some(view) = self.of.get_mut(&sub) else {
                continue;
            };
            if view.version >= change.version {
                continue;
            }
            if change.deleted {
                ended.push(sub);
                continue;
            }
            apply(view, &change);
            for &m in &change.added {
                if !self.by_member.get(&m).is_some_and(|l| l.contains(&sub)) {
                    push(&mut self.by_member, m, sub);
                }
            }
            for &m in &change.removed {
                take(&mut self.by_member, m, sub);
            }
        }
        if self.log.len() >= CHANGE_LOG {
            self.log.pop_front();
        }
        self.log.push_back(change);
        ended
    }
}

/// `change` applied to `view`.
fn apply(view: &mut ListView, change: &ListChange) {
    view.members.extend(change.added.iter().copied());
    for m in &change.removed {
        view.members.remove(m);
    }
    view.version = change.version;
}
