//! Partitioned firehose subscriptions (`partition=k&partitions=N`), filed
//! by partition outside the main index: an event's partition is worked out
//! once per split size and only that partition's subscriptions are added
//! to its route. Filed in the index, every partition's subscriptions would
//! be routed every event and all but one partition's dropped again, a
//! lookup each.

use super::super::want::{part_of, Part};
use firehose_filters::{Event, Rule, SubId};
use rustc_hash::FxHashMap;

#[derive(Default)]
pub(super) struct SplitFirehose {
    /// By split size (`of`): each partition's subscriptions.
    splits: Vec<(u8, Vec<Vec<SubId>>)>,
    /// Where each subscription is filed.
    parts: FxHashMap<SubId, Part>,
}

impl SplitFirehose {
    /// Whether a partitioned subscription with `rule` is filed here rather
    /// than in the index: a partition of the firehose.
    pub(super) fn takes(rule: &Rule) -> bool {
        matches!(rule, Rule::Firehose)
    }

    pub(super) fn add(&mut self, sub: SubId, part: Part) {
        let of = part.of.max(1);
        let at = match self.splits.iter().position(|(o, _)| *o == of) {
            Some(at) => at,
            None => {
                self.splits.push((of, vec![Vec::new(); usize::from(of)]));
                self.splits.len() - 1
            }
        };
        let bucket = usize::from(part.index.min(of - 1));
        self.splits[at].1[bucket].push(sub);
        self.parts.insert(sub, part);
    }

    pub(super) fn remove(&mut self, sub: SubId) {
        let Some(part) = self.parts.remove(&sub) else {
            return;
        };
        let of = part.of.max(1);
        if let Some(at) = self.splits.iter().position(|(o, _)| *o == of) {
            let bucket = &mut self.splits[at].1[usize::from(part.index.min(of - 1))];
            bucket.retain(|s| *s != sub);
            if self.splits[at].1.iter().all(Vec::is_empty) {
                self.splits.swap_remove(at);
            }
        }
    }

    /// Adds to `out` the subscriptions whose partition holds `event`
    /// (partition key `key`), if the firehose gets it.
    pub(super) fn route(&self, event: &Event<'_>, key: u64, out: &mut Vec<SubId>) {
        if self.splits.is_empty() || !Rule::Firehose.matches(event) {
            return;
        }
        for (of, parts) in &self.splits {
            out.extend_from_slice(&parts[usize::from(part_of(key, *of))]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_reaches_one_partition_of_each_split_and_removals_leave_none() {
        let mut split = SplitFirehose::default();
        for (sub, (index, of)) in [(0, 4), (1, 4), (2, 4), (3, 4), (0, 2), (1, 2)]
            .into_iter()
            .enumerate()
        {
            split.add(sub as SubId, Part { index, of });
        }
        for key in 0..1000u64 {
            let mut out = Vec::new();
            split.route(&Event::Other, key, &mut out);
            assert_eq!(out.len(), 2, "one partition of each split");
            assert_eq!(out[0], SubId::from(part_of(key, 4)));
            assert_eq!(out[1], 4 + SubId::from(part_of(key, 2)));
        }
        for sub in 0..6 {
            split.remove(sub);
        }
        assert!(split.splits.is_empty() && split.parts.is_empty());
    }
}
