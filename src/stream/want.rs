//! What one subscription wants: its rule in the main index (firehose,
//! sample, filter, user), its filter rules (search, ad-hoc `rules`), or a
//! group's statuses; and [`Want::judge`], one subscription's check of an
//! event for a replay (the same answers the hub's routing gives).

use super::frame::Frame;
use super::rule_set::{filter_part, RuleSet};
use firehose_filters::{Event, FilterSpec, Rule};
use std::sync::Arc;

/// The subscription name of group `gid`'s stream: `group` and the group,
/// as the multiplexed socket writes them after `"stream":` (so its events
/// read `"stream":"group","group":"G"`).
pub fn group_stream(gid: u64) -> &'static str {
    keyed_stream("group", gid)
}

/// Whether `name` is a group stream's.
pub fn is_group_stream(name: &str) -> bool {
    name.starts_with("group\"")
}

/// The subscription name of list `lid`'s stream (`"stream":"list","list":"L"`).
pub fn list_stream(lid: u64) -> &'static str {
    keyed_stream("list", lid)
}

/// Whether `name` is a list stream's.
pub fn is_list_stream(name: &str) -> bool {
    name.starts_with("list\"")
}

/// `kind` and `id` as a subscription name. Interned: one small string per
/// group or list ever streamed by this process, kept for its life.
fn keyed_stream(kind: &'static str, id: u64) -> &'static str {
    type Names = std::sync::Mutex<std::collections::HashMap<(&'static str, u64), &'static str>>;
    static NAMES: std::sync::OnceLock<Names> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(Default::default);
    let mut names = names
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    names
        .entry((kind, id))
        .or_insert_with(|| Box::leak(format!("{kind}\",\"{kind}\":\"{id}").into_boxed_str()))
}

/// A list stream's view of its list: the members, and whom the owner
/// follows (a private member's statuses, and replies to a private
/// account, only for a follower), as read when it opened. The hub keeps
/// its own copy current ([`crate::stream::hub`]); a replay judges by this.
#[derive(Debug, Clone, Default)]
pub struct ListView {
    /// The list.
    pub id: u64,
    /// Its owner.
    pub owner: u64,
    /// Its version when read.
    pub version: u64,
    /// Its members.
    pub members: rustc_hash::FxHashSet<u64>,
    /// Whom the owner follows.
    pub following: rustc_hash::FxHashSet<u64>,
}

impl ListView {
    /// Whether the owner sees what `author` posts privately.
    fn sees_private(&self, author: u64) -> bool {
        author == self.owner || self.following.contains(&author)
    }

    /// Whether the list's stream gets `event`: a member's status (not a
    /// group's; a private one if the owner follows them; a reply to a
    /// private account if the owner is or follows it) and a member's
    /// delete.
    pub fn wants(&self, event: &Event<'_>) -> bool {
        match *event {
            Event::Status(ref s) => {
                !s.grouped
                    && self.members.contains(&s.uid)
                    && (!s.private || self.sees_private(s.uid))
                    && s.audience.is_none_or(|a| self.sees_private(a))
            }
            Event::Delete {
                uid,
                private,
                grouped,
                ..
            } => !grouped && self.members.contains(&uid) && (!private || self.sees_private(uid)),
            _ => false,
        }
    }
}

/// Most partitions a stream splits into.
pub const MAX_PARTITIONS: u8 = 32;

/// One of `of` partitions of a stream (`index` from 0): the events whose
/// [`Frame::partition_key`] hashes to it, so consumers of every partition
/// get each event exactly once between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// This partition, 0 to `of - 1`.
    pub index: u8,
    /// How many partitions.
    pub of: u8,
}

impl Part {
    /// Whether `frame` falls in this partition.
    pub fn holds(self, frame: &Frame) -> bool {
        part_of(frame.partition_key(), self.of) == self.index
    }
}

/// The partition of `key` among `of`: the key mixed (splitmix64's
/// finalizer), so ids made in sequence spread evenly.
pub fn part_of(key: u64, of: u8) -> u8 {
    (crate::model::spread(key) % u64::from(of.max(1))) as u8
}

/// What a subscription wants.
#[derive(Debug, Clone)]
pub struct Want {
    /// Its rule in the main index (an empty filter when it has none).
    pub rule: Rule,
    /// Its filter rules.
    pub rules: Option<Arc<RuleSet>>,
    /// The group whose statuses (and their deletes) it gets.
    pub group: Option<u64>,
    /// The partition it is, when the stream is split.
    pub part: Option<Part>,
    /// The list whose members' statuses (and their deletes) it gets.
    pub list: Option<Arc<ListView>>,
}

impl Want {
    /// A subscription routed by the main index alone.
    pub fn rule(rule: Rule) -> Want {
        Want {
            rule,
            rules: None,
            group: None,
            part: None,
            list: None,
        }
    }

    /// A subscription with filter rules (and, for a filter stream, its
    /// follow, track and locations in `rule`).
    pub fn rules(rule: Rule, rules: Arc<RuleSet>) -> Want {
        Want {
            rule,
            rules: Some(rules),
            group: None,
            part: None,
            list: None,
        }
    }

    /// A group stream.
    pub fn group(gid: u64) -> Want {
        Want {
            rule: Rule::Filter(FilterSpec::default()),
            rules: None,
            group: Some(gid),
            part: None,
            list: None,
        }
    }

    /// A list stream.
    pub fn list(view: ListView) -> Want {
        Want {
            rule: Rule::Filter(FilterSpec::default()),
            rules: None,
            group: None,
            part: None,
            list: Some(Arc::new(view)),
        }
    }

    /// Whether the main index routes it.
    pub fn indexed(&self) -> bool {
        self.group.is_none()
            && self.list.is_none()
            && (self.rules.is_none() || filter_part(&self.rule))
    }

    /// What it delivers of `frame`, if anything: the frame itself, or for
    /// one with rules its copy carrying `matching_rules` (a public status
    /// matching a rule or the subscription's own filter; every public
    /// delete as it is); for a group stream the group's statuses and
    /// deletes.
    pub fn judge(&mut self, frame: &Arc<Frame>) -> Option<Arc<Frame>> {
        if self.part.is_some_and(|p| !p.holds(frame)) {
            return None;
        }
        if let Some(views) = frame.update_views() {
            // An update for a stream that had the status; else the edited
            // status, for one that the new text alone reaches.
            return match self.judge_plain(&views.before) {
                Some(_) => Some(frame.clone()),
                None => self.judge_plain(&views.after),
            };
        }
        self.judge_plain(frame)
    }

    /// [`Want::judge`] of any event but an update.
    fn judge_plain(&mut self, frame: &Arc<Frame>) -> Option<Arc<Frame>> {
        if let Some(gid) = self.group {
            return (frame.group() == Some(gid)).then(|| frame.clone());
        }
        if let Some(view) = &self.list {
            return view.wants(&frame.routing()).then(|| frame.clone());
        }
        let Some(set) = self.rules.as_deref() else {
            return self.rule.matches(&frame.routing()).then(|| frame.clone());
        };
        match frame.routing() {
            Event::Delete { private: false, .. } => Some(frame.clone()),
            Event::Status(s) if !s.private => {
                let hit = filter_part(&self.rule) && self.rule.matches(&frame.routing());
                let positions = set.matching(frame);
                (hit || !positions.is_empty())
                    .then(|| frame.with_matching_rules(&set.matching_json(&positions)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::part_of;
    use crate::store::plumbing::keys::Keys;

    /// A partition of `n` (where `n` divides the log's shards) is exactly
    /// the shards `j % n == k`: what lets its catch-up read only those
    /// (`Events::after_in`).
    #[test]
    fn a_partition_is_the_shards_of_its_residue() {
        for shards in [64, 32, 8] {
            let keys = Keys::new("fh").with_log_shards(shards);
            for of in [2u8, 4, 8] {
                for key in (0..20_000u64).chain([u64::MAX, 1 << 52]) {
                    let shard = keys.log_shard(key);
                    assert_eq!(
                        (shard % usize::from(of)) as u8,
                        part_of(key, of),
                        "key {key}: shard {shard} of {shards}, {of} partitions"
                    );
                }
            }
        }
    }
}
