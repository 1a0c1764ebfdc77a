//! Every subscription in the hub, filed by what routes an event to it: the
//! compiled index of filters, the partitioned firehose, group and list
//! streams, subscriptions with filter rules. One place adds a subscription
//! to each of them and takes it out of each, so none keeps one the others
//! forgot.

use super::conn::ClientConn;
use super::groups::GroupSubs;
use super::lists::ListSubs;
use super::rules::RuleSubs;
use super::split::SplitFirehose;
use crate::stream::frame::Frame;
use crate::stream::want::{part_of, Part, Want};
use firehose_filters::{Index, SubId};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// A subscription: its connection and the stream it is of.
pub(super) struct SubEntry {
    pub(super) conn: Arc<ClientConn>,
    pub(super) stream: &'static str,
}

/// Copies of an event made for subscriptions with rules (each with its
/// `matching_rules`), and who gets each.
pub(super) type Copies = Vec<(Arc<Frame>, Vec<SubId>)>;

/// What adding a subscription asks of the dispatcher.
pub(super) struct Added {
    /// Its user's rules changed after they were read: read them again.
    pub(super) reload_rules: bool,
    /// Its list was deleted before it was filed: end it.
    pub(super) list_gone: bool,
}

/// Every subscription here and the routes to it.
#[derive(Default)]
pub(super) struct Routes {
    index: Index,
    entries: FxHashMap<SubId, SubEntry>,
    /// Each connection's subscriptions.
    by_conn: FxHashMap<u64, Vec<SubId>>,
    /// The partitioned subscriptions' partitions, outside the split
    /// firehose (empty: no stream here is split, and routing pays one check
    /// per event for the feature).
    parted: FxHashMap<SubId, Part>,
    /// The partitions of the firehose, filed by partition.
    split: SplitFirehose,
    /// Subscriptions with filter rules.
    pub(super) rules: RuleSubs,
    /// Group streams.
    pub(super) groups: GroupSubs,
    /// List streams.
    pub(super) lists: ListSubs,
}

impl Routes {
    /// Files `conn`'s subscription `sub` to `stream`, wanting `want`.
    pub(super) fn add(
        &mut self,
        conn: Arc<ClientConn>,
        sub: SubId,
        want: Want,
        stream: &'static str,
    ) -> Added {
        let indexed = want.indexed();
        let Want {
            rule,
            rules,
            group,
            part,
            list,
        } = want;
        match part {
            Some(part) if indexed && rules.is_none() && SplitFirehose::takes(&rule) => {
                self.split.add(sub, part);
            }
            _ => {
                if let Some(part) = part {
                    self.parted.insert(sub, part);
                }
                if indexed {
                    self.index.insert(sub, rule);
                }
            }
        }
        let reload_rules = rules.is_some_and(|set| self.rules.add(sub, conn.uid, set));
        if let Some(gid) = group {
            self.groups.add(sub, gid, conn.uid);
        }
        let list_gone = list.is_some_and(|view| !self.lists.add(sub, (*view).clone()));
        self.by_conn.entry(conn.id).or_default().push(sub);
        self.entries.insert(sub, SubEntry { conn, stream });
        Added {
            reload_rules,
            list_gone,
        }
    }

    /// Subscription `sub`, if it is here.
    pub(super) fn get(&self, sub: &SubId) -> Option<&SubEntry> {
        self.entries.get(sub)
    }

    /// Every subscription here.
    pub(super) fn entries(&self) -> impl Iterator<Item = &SubEntry> {
        self.entries.values()
    }

    /// Whether connection `conn` has a subscription here.
    pub(super) fn has_conn(&self, conn: u64) -> bool {
        self.by_conn.contains_key(&conn)
    }

    /// Takes `sub` out of every route.
    pub(super) fn remove(&mut self, sub: SubId) -> Option<SubEntry> {
        let entry = self.unfile(sub)?;
        if let Some(list) = self.by_conn.get_mut(&entry.conn.id) {
            list.retain(|s| *s != sub);
            if list.is_empty() {
                self.by_conn.remove(&entry.conn.id);
            }
        }
        Some(entry)
    }

    /// Takes every subscription of connection `conn` out of every route.
    pub(super) fn remove_conn(&mut self, conn: u64) -> Vec<SubEntry> {
        let subs = self.by_conn.remove(&conn).unwrap_or_default();
        subs.into_iter()
            .filter_map(|sub| self.unfile(sub))
            .collect()
    }

    /// Takes `sub` out of every route but its connection's list.
    fn unfile(&mut self, sub: SubId) -> Option<SubEntry> {
        self.parted.remove(&sub);
        self.split.remove(sub);
        self.index.remove(sub);
        self.rules.remove(sub);
        self.groups.remove(sub);
        self.lists.remove(sub);
        self.entries.remove(&sub)
    }

    /// Collects into `out` (cleared first) the subscriptions `frame`
    /// reaches, but for those with rules, which get the copies answered
    /// (see [`RuleSubs::route`]).
    pub(super) fn route(&mut self, frame: &Frame, out: &mut Vec<SubId>) -> Copies {
        let routing = frame.routing();
        self.index.route(&routing, out);
        self.split.route(&routing, frame.partition_key(), out);
        self.groups.route(frame, out);
        self.lists.route(frame, out);
        self.rules.route(frame, out)
    }

    /// [`Routes::route`] for each of `frames`, into `outs` (one list each),
    /// the main index asked once for all of them.
    pub(super) fn route_batch(
        &mut self,
        frames: &[Arc<Frame>],
        outs: &mut Vec<Vec<SubId>>,
    ) -> Vec<Copies> {
        let events: Vec<_> = frames.iter().map(|f| f.routing()).collect();
        self.index.route_batch(&events, outs);
        for ((frame, out), routing) in frames.iter().zip(outs.iter_mut()).zip(&events) {
            self.split.route(routing, frame.partition_key(), out);
        }
        drop(events);
        frames
            .iter()
            .zip(outs.iter_mut())
            .map(|(frame, out)| {
                self.groups.route(frame, out);
                self.lists.route(frame, out);
                self.rules.route(frame, out)
            })
            .collect()
    }

    /// The routes that depend on a status's text only (the index, the
    /// split firehose, rules), into `out` (cleared first): where an edited
    /// status newly goes.
    pub(super) fn route_text(&mut self, frame: &Frame, out: &mut Vec<SubId>) -> Copies {
        let routing = frame.routing();
        self.index.route(&routing, out);
        self.split.route(&routing, frame.partition_key(), out);
        self.rules.route(frame, out)
    }

    /// Drops from `out` the partitioned subscriptions `frame` is not in.
    pub(super) fn drop_other_parts(&self, frame: &Frame, out: &mut Vec<SubId>) {
        if self.parted.is_empty() {
            return;
        }
        // The event's share under each split, worked out once per split.
        let key = frame.partition_key();
        let mut share = [u8::MAX; 33];
        out.retain(|sub| {
            self.parted.get(sub).is_none_or(|p| {
                let of = usize::from(p.of.min(32));
                if share[of] == u8::MAX {
                    share[of] = part_of(key, p.of);
                }
                share[of] == p.index
            })
        });
    }
}
