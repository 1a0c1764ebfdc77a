//! The live merge: the events heard on every shard's channel, handed on in
//! log order, each only once no shard can still make an event before it.
//!
//! Each shard has a floor: every event of the shard below it has been
//! heard. A message raises floors twice over: its first line (`~<floor>`,
//! `log_append.lua`) says that every later entry on its node has an id at
//! or above it, which raises the floor of every shard of that node (their
//! messages all come by one connection, in the order the node sent them),
//! and its entry says that every later entry of its shard has an id above
//! it (a shard's ids only grow). So on a busy node every message moves all
//! its shards on. A probe of a node (its time, asked on the connection the
//! messages come by, so that every message sent before the answer has
//! arrived) raises the floors of the shards it holds. An event is ready once it is below every floor:
//! then no shard can make one before it, and every process hands the
//! events on in the same order, the buffer's.
//!
//! A message also carries its shard's count of entries, and a probe each
//! shard's count: a message's that is not one more than the last heard, or
//! a probe's above it, means a message was missed (a connection lost and remade underneath),
//! and the merge says so ([`Missed`]) before it raises any floor past it,
//! so that the subscriber catches up from the buffer with nothing handed on
//! out of order.

use super::clocks::NodeClocks;
use super::id::EventId;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most events held waiting for a floor: past it, the merge is reset and
/// the subscriber catches up from the buffer (a node that stopped
/// answering holds every other shard's events back).
pub const MOST_PENDING: usize = 100_000;

/// A shard's message was missed: the merge must start again from the
/// buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missed(pub usize);

/// The merge's state.
#[derive(Debug)]
pub struct Merge {
    floors: Vec<EventId>,
    /// Each shard's count of entries as last heard (`None`: none yet).
    heard: Vec<Option<u64>>,
    pending: BTreeMap<EventId, String>,
    /// Each shard's node (an index into `members`).
    node_of: Vec<usize>,
    /// The newest event heard on any shard, handed on or waiting.
    newest: EventId,
    /// Each node's shards: a floor heard from one holds for all.
    members: Vec<Vec<usize>>,
    /// Told every node time heard (the commit-wait's bounds).
    clocks: Option<Arc<NodeClocks>>,
}

impl Merge {
    /// A merge of the shards whose nodes are `node_of` (shard `k` on node
    /// `node_of[k]`, nodes numbered from 0), with every floor at zero.
    pub fn new(node_of: Vec<usize>) -> Self {
        let shards = node_of.len();
        let nodes = node_of.iter().max().map_or(0, |n| n + 1);
        let mut members = vec![Vec::new(); nodes];
        for (k, &n) in node_of.iter().enumerate() {
            members[n].push(k);
        }
        Merge {
            floors: vec![EventId::ZERO; shards],
            heard: vec![None; shards],
            pending: BTreeMap::new(),
            node_of,
            members,
            newest: EventId::ZERO,
            clocks: None,
        }
    }

    /// Tells `clocks` (made afresh for these nodes) every node's time
    /// heard from here on.
    pub fn with_clocks(mut self, clocks: Arc<NodeClocks>) -> Self {
        clocks.reset(self.members.len());
        self.clocks = Some(clocks);
        self
    }

    /// The newest event heard on any shard (handed on or still waiting for
    /// its floor): every event at or below it was written before it was
    /// heard.
    pub fn newest(&self) -> EventId {
        self.newest
    }

    /// Node `node`'s time was `floor`: no shard of it can still make an
    /// event below it.
    pub fn timed(&mut self, node: usize, floor: EventId) {
        if let Some(clocks) = &self.clocks {
            clocks.heard(node, floor);
        }
        for k in self.members.get(node).cloned().unwrap_or_default() {
            self.raise(k, floor);
        }
    }

    /// A message of shard `k`: its floor line and its events. Events below
    /// what was already handed on are dropped (a message heard twice).
    pub fn heard(&mut self, k: usize, payload: &str, handed: EventId) -> Result<(), Missed> {
        for line in payload.split('\n') {
            if let Some(head) = line.strip_prefix('~') {
                let (floor, count) = head.split_once(' ').unwrap_or((head, ""));
                if let (Some(count), Some(known)) =
                    (count.parse::<u64>().ok(), self.heard.get_mut(k))
                {
                    if known.is_some_and(|h| h.checked_add(1) != Some(count)) {
                        return Err(Missed(k));
                    }
                    *known = Some(count);
                }
                if let (Some(floor), Some(&node)) = (EventId::parse(floor), self.node_of.get(k)) {
                    self.timed(node, floor);
                }
                continue;
            }
            let Some(id) = EventId::of_json(line) else {
                continue;
            };
            self.newest = self.newest.max(id);
            self.raise(k, EventId(id.0, id.1.saturating_add(1), 0));
            if id > handed {
                self.pending.insert(id, line.to_string());
            }
        }
        Ok(())
    }

    /// A probe of shard `k`: its node's time `floor` and its count of
    /// entries, which must be the last heard (else a message was missed).
    pub fn probed(
        &mut self,
        k: usize,
        floor: EventId,
        newest: Option<String>,
    ) -> Result<(), Missed> {
        // Messages sent after the probe ran may be heard before its answer
        // is read: a count at or below the last heard is in turn.
        let count = newest.and_then(|n| n.parse::<u64>().ok());
        match self.heard.get_mut(k) {
            Some(heard @ None) => *heard = count,
            Some(Some(h)) if count.is_some_and(|c| c > *h) => return Err(Missed(k)),
            _ => {}
        }
        if let (Some(clocks), Some(&node)) = (&self.clocks, self.node_of.get(k)) {
            clocks.heard(node, floor);
        }
        self.raise(k, floor);
        Ok(())
    }

    /// Shard `k` has no event below `floor` unheard.
    pub fn raise(&mut self, k: usize, floor: EventId) {
        if let Some(f) = self.floors.get_mut(k) {
            *f = (*f).max(floor);
        }
    }

    /// Takes out the events below every floor, in order.
    pub fn ready(&mut self) -> Vec<(EventId, String)> {
        let floor = self.floors.iter().min().copied().unwrap_or(EventId::ZERO);
        let later = self.pending.split_off(&floor);
        std::mem::replace(&mut self.pending, later)
            .into_iter()
            .collect()
    }

    /// The shards that hold the oldest waiting event back (their floors
    /// at or below it); none when nothing waits.
    pub fn holding_back(&self) -> Vec<usize> {
        let Some((&oldest, _)) = self.pending.first_key_value() else {
            return Vec::new();
        };
        (0..self.floors.len())
            .filter(|&k| self.floors[k] <= oldest)
            .collect()
    }

    /// The nodes of the shards that hold the oldest waiting event back.
    pub fn nodes_holding_back(&self) -> Vec<usize> {
        let mut nodes: Vec<usize> = self
            .holding_back()
            .into_iter()
            .filter_map(|k| self.node_of.get(k).copied())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// How many events wait.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const LOG_SHARDS: usize = 64;

    fn msg(floor: &str, ids: &[&str]) -> String {
        let mut lines = vec![format!("~{floor} ")];
        lines.extend(
            ids.iter()
                .map(|id| format!("{{\"id\":\"{id}\",\"type\":\"x\"}}")),
        );
        lines.join("\n")
    }

    #[test]
    fn an_event_waits_until_every_shard_is_past_it() {
        let mut m = Merge::new((0..LOG_SHARDS).collect());
        m.heard(3, &msg("10-1024", &["10-1027"]), EventId::ZERO)
            .unwrap();
        assert!(
            m.ready().is_empty(),
            "the other shards may still make one before it"
        );
        assert_eq!(m.holding_back().len(), LOG_SHARDS - 1, "all but shard 3");
        for k in 0..LOG_SHARDS {
            m.raise(k, EventId(10, 2048, 0));
        }
        let ready = m.ready();
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].0, EventId(10, 1027, 0));
        assert!(m.holding_back().is_empty());
    }

    #[test]
    fn events_of_every_shard_come_out_in_id_order_whatever_order_they_were_heard() {
        let mut m = Merge::new((0..LOG_SHARDS).collect());
        m.heard(5, &msg("20-0", &["20-5", "20-5.1"]), EventId::ZERO)
            .unwrap();
        m.heard(2, &msg("19-0", &["19-2"]), EventId::ZERO).unwrap();
        m.heard(7, &msg("20-1024", &["20-1031"]), EventId::ZERO)
            .unwrap();
        for k in 0..LOG_SHARDS {
            m.raise(k, EventId(21, 0, 0));
        }
        let ids: Vec<String> = m.ready().iter().map(|(id, _)| id.to_string()).collect();
        assert_eq!(ids, ["19-2", "20-5", "20-5.1", "20-1031"]);
    }

    #[test]
    fn what_was_handed_on_is_not_handed_on_again() {
        let mut m = Merge::new((0..LOG_SHARDS).collect());
        m.heard(1, &msg("5-0", &["5-1", "6-1"]), EventId(5, 1, 0))
            .unwrap();
        for k in 0..LOG_SHARDS {
            m.raise(k, EventId(7, 0, 0));
        }
        let ids: Vec<EventId> = m.ready().into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, [EventId(6, 1, 0)]);
    }

    #[test]
    fn on_one_node_a_floor_line_holds_for_every_shard() {
        let mut m = Merge::new(vec![0; LOG_SHARDS]);
        m.heard(4, &msg("40-0", &["40-4"]), EventId::ZERO).unwrap();
        m.heard(6, &msg("41-0", &[]), EventId::ZERO).unwrap();
        let ids: Vec<EventId> = m.ready().into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, [EventId(40, 4, 0)]);
    }

    #[test]
    fn a_floor_line_holds_for_every_shard_of_its_node_only() {
        // Shards 0..32 on node 0, 32..64 on node 1.
        let mut m = Merge::new((0..LOG_SHARDS).map(|k| k / 32).collect());
        m.heard(4, &msg("40-0", &["40-4"]), EventId::ZERO).unwrap();
        m.heard(6, &msg("41-0", &[]), EventId::ZERO).unwrap();
        assert!(m.ready().is_empty(), "node 1 may still make one before it");
        assert_eq!(m.nodes_holding_back(), [1]);
        m.timed(1, EventId(41, 0, 0));
        let ids: Vec<EventId> = m.ready().into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, [EventId(40, 4, 0)]);
    }

    #[test]
    fn a_shards_own_entry_raises_its_floor_past_it() {
        let mut m = Merge::new((0..LOG_SHARDS).collect());
        for k in 0..LOG_SHARDS {
            m.raise(k, EventId(30, 0, 0));
        }
        m.heard(9, &msg("29-0", &["30-9"]), EventId::ZERO).unwrap();
        assert_eq!(m.holding_back().len(), LOG_SHARDS - 1);
        assert!(!m.holding_back().contains(&9));
    }

    #[test]
    fn a_missed_message_is_told_before_any_floor_passes_it() {
        let mut m = Merge::new(vec![0; LOG_SHARDS]);
        m.heard(
            2,
            "~10-0 7\n{\"id\":\"10-2\",\"type\":\"x\"}",
            EventId::ZERO,
        )
        .unwrap();
        // The next message of shard 2 is its 8th entry: heard in turn.
        m.heard(
            2,
            "~11-0 8\n{\"id\":\"11-2\",\"type\":\"x\"}",
            EventId::ZERO,
        )
        .unwrap();
        // Its 10th, the 9th never heard: missed.
        let missed = m.heard(
            2,
            "~13-0 10\n{\"id\":\"13-2\",\"type\":\"x\"}",
            EventId::ZERO,
        );
        assert_eq!(missed, Err(Missed(2)));
        // A probe counting an entry never heard: missed too.
        assert_eq!(
            m.probed(2, EventId(20, 0, 0), Some("9".into())),
            Err(Missed(2))
        );
        assert_eq!(m.probed(2, EventId(20, 0, 0), Some("8".into())), Ok(()));
        // Below the last heard: messages after the probe came first.
        assert_eq!(m.probed(2, EventId(20, 0, 0), Some("7".into())), Ok(()));
        // A shard never heard takes the probe's word, then counts on from it.
        assert_eq!(m.probed(5, EventId(20, 0, 0), Some("3".into())), Ok(()));
        assert_eq!(m.probed(5, EventId(21, 0, 0), Some("3".into())), Ok(()));
        assert_eq!(
            m.heard(
                5,
                "~22-0 5\n{\"id\":\"22-5\",\"type\":\"x\"}",
                EventId::ZERO
            ),
            Err(Missed(5)),
            "its 4th entry was never heard"
        );
        // A message heard twice is a missed one too (the merge starts again).
        assert_eq!(
            m.heard(
                2,
                "~11-0 8\n{\"id\":\"11-2\",\"type\":\"x\"}",
                EventId::ZERO
            ),
            Err(Missed(2))
        );
    }
}
