//! An event's id, a position in the whole log, and the events of a
//! buffer entry with their ids.

use std::fmt;

/// An event's id: its buffer entry's id (`<ms>-<seq>`) and its place in
/// the entry, ordered like the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct EventId(pub u64, pub u64, pub u32);

impl EventId {
    /// `0-0`: before every event (a resume point asking for the whole buffer).
    pub const ZERO: EventId = EventId(0, 0, 0);

    /// Parses `ms-seq.n`, `ms-seq` (n = 0) or a bare `ms`.
    pub fn parse(s: &str) -> Option<EventId> {
        let s = s.trim();
        let (entry, n) = match s.split_once('.') {
            Some((entry, n)) => (entry, n.parse().ok()?),
            None => (s, 0),
        };
        match entry.split_once('-') {
            Some((ms, seq)) => Some(EventId(ms.parse().ok()?, seq.parse().ok()?, n)),
            None if n == 0 => Some(EventId(entry.parse().ok()?, 0, 0)),
            None => None,
        }
    }

    /// The id a published event's JSON leads with (`{"id":"<id>",...`).
    pub fn of_json(line: &str) -> Option<EventId> {
        let rest = line.strip_prefix("{\"id\":\"")?;
        EventId::parse(&rest[..rest.find('"')?])
    }

    /// Its entry's id, as Redis writes it.
    pub fn entry(&self) -> String {
        format!("{}-{}", self.0, self.1)
    }

    /// The last event its entry could hold: after it, the next entry.
    pub fn last_of_entry(&self) -> EventId {
        EventId(self.0, self.1, u32::MAX)
    }

    /// The last position before this one: a read after it starts at this
    /// event (which need not exist: a read after a position takes what
    /// follows).
    pub fn just_before(&self) -> EventId {
        match *self {
            EventId(ms, seq, n) if n > 0 => EventId(ms, seq, n - 1),
            EventId(ms, seq, _) if seq > 0 => EventId(ms, seq - 1, u32::MAX),
            EventId(ms, _, _) if ms > 0 => EventId(ms - 1, u64::MAX, u32::MAX),
            _ => EventId::ZERO,
        }
    }

    /// Whether this is the first event of the entry right after `other`'s
    /// (the next sequence number of the same millisecond): no entry can lie
    /// between the two, so a reader holding all of `other`'s entry misses
    /// nothing by going on here.
    pub fn starts_entry_after(&self, other: EventId) -> bool {
        self.0 == other.0 && other.1.checked_add(1) == Some(self.1) && self.2 == 0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.2 {
            0 => write!(f, "{}-{}", self.0, self.1),
            n => write!(f, "{}-{}.{n}", self.0, self.1),
        }
    }
}

/// A page of the buffer: its events (id, published JSON), and whether more
/// entries may lie beyond it.
#[derive(Debug, Default)]
pub struct EventPage {
    /// The events, in the order read.
    pub events: Vec<(EventId, String)>,
    /// Whether the read stopped short of what is known.
    pub more: bool,
    /// Whether a shard had dropped events after the read's start before
    /// they were read (trimmed, or deleted): the page is not all there was.
    pub lost: bool,
}

/// The published JSON of an event: `{"id":"<eid>", ...body}`.
pub fn with_id(eid: &str, body: &str) -> String {
    let rest = body.strip_prefix('{').unwrap_or(body);
    let sep = if rest.starts_with('}') { "" } else { "," };
    format!("{{\"id\":\"{eid}\"{sep}{rest}")
}

/// The events of one buffer entry (its id and its fields, as XRANGE gives
/// them), in order, with their ids and published JSON (none for an entry
/// with an id Redis would not give). The one place an event's id is made
/// from its entry's.
pub fn entry((id, fields): (String, Vec<String>)) -> Vec<(EventId, String)> {
    let Some(first) = EventId::parse(&id) else {
        return Vec::new();
    };
    // Every pair counts, so that a copy made by the upgrade from the
    // layout before keeps each event's place (`-`: another shard's).
    fields
        .chunks(2)
        .enumerate()
        .filter(|(_, kv)| kv.len() == 2 && kv[0] == "e")
        .map(|(n, kv)| {
            let id = EventId(first.0, first.1, n as u32);
            (id, with_id(&id.to_string(), &kv[1]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::EventId;

    #[test]
    fn only_the_next_sequence_of_the_same_millisecond_starts_the_next_entry() {
        let at = |s: &str| EventId::parse(s).unwrap();
        assert!(at("5-1").starts_entry_after(at("5-0")));
        assert!(at("5-1").starts_entry_after(at("5-0.3")));
        assert!(
            !at("5-2").starts_entry_after(at("5-0")),
            "5-1 may have been trimmed"
        );
        assert!(
            !at("6-0").starts_entry_after(at("5-0")),
            "5-1 may have existed"
        );
        assert!(!at("5-1.1").starts_entry_after(at("5-0")));
    }

    #[test]
    fn ids_of_a_batch_entry_order_between_its_neighbours_and_read_back() {
        let ids = ["7-0", "7-0.1", "7-0.12", "7-1", "8"];
        let parsed: Vec<EventId> = ids.iter().map(|s| EventId::parse(s).unwrap()).collect();
        assert!(parsed.windows(2).all(|w| w[0] < w[1]), "{parsed:?}");
        assert_eq!(parsed[1], EventId(7, 0, 1));
        assert_eq!(parsed[1].to_string(), "7-0.1");
        assert_eq!(parsed[1].entry(), "7-0");
        assert_eq!(
            parsed[0].to_string(),
            "7-0",
            "an entry's first event is the entry"
        );
        assert!(parsed[2] < parsed[1].last_of_entry() && parsed[3] > parsed[1].last_of_entry());
        for bad in ["7-0.", "7-0.x", "7.1", "7-x", "", "7-0.1.2"] {
            assert_eq!(EventId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn just_before_is_the_greatest_position_below_every_kind_of_id() {
        let at = |s: &str| EventId::parse(s).unwrap();
        for (id, before) in [
            ("7-3.2", EventId(7, 3, 1)),
            ("7-3", EventId(7, 2, u32::MAX)),
            ("7-0", EventId(6, u64::MAX, u32::MAX)),
            ("0-0", EventId::ZERO),
        ] {
            assert_eq!(at(id).just_before(), before, "{id}");
            assert!(at(id) == EventId::ZERO || at(id).just_before() < at(id));
        }
        // Nothing lies between: the entry before ends below it.
        assert!(at("7-2.9") < at("7-3").just_before());
    }
}
