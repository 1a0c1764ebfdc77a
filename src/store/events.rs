//! Events: emitting them (XADD to the replay buffer + PUBLISH, atomically) and
//! reading the buffer back for resume.
//!
//! An event is stored in the buffer as its JSON body without the `id` field
//! (the id comes from the entry); [`with_id`] splices the id in, giving the
//! exact JSON that was published. An entry holds one event (field `e`), or
//! the events of a batch of writes (`e` once per event, in order: the group
//! commit of `store::emitter`, one XADD for the batch). The first event of
//! entry `<ms>-<seq>` has that id; the n-th after it `<ms>-<seq>.<n>`
//! ([`EventId`]), so ids order as the buffer does and an id written before
//! batches existed names the same event.

use super::plumbing::conn::Target;
use super::plumbing::error::StoreResult;
use super::plumbing::handle::Store;
use crate::model::Event;
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
    /// Whether the read stopped at its count of entries.
    pub more: bool,
}

/// The published JSON of an event: `{"id":"<eid>", ...body}`.
pub fn with_id(eid: &str, body: &str) -> String {
    let rest = body.strip_prefix('{').unwrap_or(body);
    let sep = if rest.starts_with('}') { "" } else { "," };
    format!("{{\"id\":\"{eid}\"{sep}{rest}")
}

/// The buffer body of an event (its JSON without the `id`).
pub fn body(event: &Event) -> String {
    // Serializing these types cannot fail: no map has non-string keys.
    serde_json::to_string(event).unwrap_or_default()
}

/// The process's subscription to the event channel
/// ([`Events::subscribe`]): its messages, and the pings that show it
/// is alive, in two halves so that a task can wait on both at once.
pub struct EventSubscription {
    /// Each published event's JSON.
    pub messages: EventMessages,
    /// Pings on the subscription's connection.
    pub pinger: EventPinger,
}

impl EventSubscription {
    pub(crate) fn new(pubsub: redis::aio::PubSub) -> EventSubscription {
        let (sink, stream) = pubsub.split();
        EventSubscription {
            messages: EventMessages(stream),
            pinger: EventPinger(sink),
        }
    }
}

/// The messages half of an [`EventSubscription`].
pub struct EventMessages(redis::aio::PubSubStream);

impl EventMessages {
    /// The next message's payload (`Some(None)` for one that is not text);
    /// `None` once the connection is lost.
    pub async fn next(&mut self) -> Option<Option<String>> {
        use futures::StreamExt;
        let msg = self.0.next().await?;
        Some(msg.get_payload::<String>().ok())
    }
}

/// The ping half of an [`EventSubscription`].
pub struct EventPinger(redis::aio::PubSubSink);

impl EventPinger {
    /// PING on the subscription's connection: a connection that died
    /// without a FIN, or a Redis that stopped answering, fails or hangs.
    pub async fn ping(&mut self) -> StoreResult<()> {
        self.0.ping::<redis::Value>().await?;
        Ok(())
    }
}

/// The event buffer and channel (`Store::events`).
#[derive(Clone, Copy)]
pub struct Events<'a> {
    store: &'a Store,
}

impl Store {
    /// The event buffer and channel.
    pub fn events(&self) -> Events<'_> {
        Events { store: self }
    }
}

impl Events<'_> {
    /// A pub/sub connection of its own, subscribed to the event channel.
    ///
    /// On a cluster, the events are published by scripts on the node that
    /// owns the `{g}` slot, and a PUBLISH there reaches subscribers on every
    /// node (over the cluster bus); the subscription is made on that owner,
    /// found with CLUSTER SLOTS through the seeds in turn, so events arrive
    /// without the extra hop (and in the order they were published). A new
    /// subscription after a failover finds the new owner.
    pub async fn subscribe(self) -> StoreResult<EventSubscription> {
        let client = match &self.store.target {
            Target::Single(client) => client.clone(),
            Target::Cluster(nodes) => self.store.slot_owner(nodes).await?,
        };
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(self.store.keys.channel()).await?;
        Ok(EventSubscription::new(pubsub))
    }

    /// Appends an event to the buffer and publishes it in one atomic step.
    pub async fn emit(self, body: &str) -> StoreResult<String> {
        let mut conn = self.store.conn();
        let eid: String = self
            .store
            .scripts
            .emit
            .key(self.store.keys.events())
            .arg(self.store.replay_maxlen)
            .arg(self.store.keys.channel())
            .arg(body)
            .invoke_async(&mut conn)
            .await?;
        Ok(eid)
    }

    /// Emits `bodies` as one buffer entry and one published message
    /// (at most [`MOST_EVENTS`](super::emitter::MOST_EVENTS) at a time:
    /// larger batches go out in several).
    pub async fn emit_many(self, bodies: &[String]) -> StoreResult<()> {
        for chunk in bodies.chunks(super::writes::emitter::MOST_EVENTS) {
            let mut conn = self.store.conn();
            let mut inv = self.store.scripts.emit_many.prepare_invoke();
            inv.key(self.store.keys.events())
                .arg(self.store.replay_maxlen)
                .arg(self.store.keys.channel());
            for b in chunk {
                inv.arg(b);
            }
            let _: String = inv.invoke_async(&mut conn).await?;
        }
        Ok(())
    }

    /// The events strictly after `after`, oldest first, from at most
    /// `count` entries (so at least `count` events when `more`).
    pub async fn after(self, after: EventId, count: usize) -> StoreResult<EventPage> {
        // From `after`'s own entry: its later events come first. One entry
        // more than asked, since that one may hold nothing after `after`.
        self.read_entries(true, after.entry(), count + 1, |id| *id > after)
            .await
    }

    /// For the history's archiver: the events after `after` from at most
    /// `count` entries, and whether `after`'s own entry is still held (when
    /// it is not, the buffer may have dropped events after it unread).
    pub async fn following(self, after: EventId, count: usize) -> StoreResult<(EventPage, bool)> {
        let mut conn = self.store.conn();
        let from = if after == EventId::ZERO {
            "-".to_string()
        } else {
            after.entry()
        };
        let rows: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
            .arg(self.store.keys.events())
            .arg(&from)
            .arg("+")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut conn)
            .await?;
        let held = rows.first().is_some_and(|(id, _)| *id == from);
        let more = rows.len() == count;
        let events = rows
            .into_iter()
            .flat_map(entry)
            .filter(|(id, _)| *id > after)
            .collect();
        Ok((EventPage { events, more }, held))
    }

    /// The events of up to `count` entries older than `before`'s entry
    /// (`None`: the newest entries), newest first.
    pub async fn before(self, before: Option<EventId>, count: usize) -> StoreResult<EventPage> {
        let end = before.map_or("+".to_string(), |id| format!("({}", id.entry()));
        self.read_entries(false, end, count, |_| true).await
    }

    /// Up to `count` entries from `from` on (XRANGE towards the newest, or
    /// XREVRANGE towards the oldest), their events in that order as `keep`
    /// keeps them; `more` when the read stopped at `count`. Entries holding
    /// no event (none of this server's writing) are passed over, so that a
    /// page that says `more` has moved.
    async fn read_entries(
        self,
        forward: bool,
        mut from: String,
        count: usize,
        keep: impl Fn(&EventId) -> bool,
    ) -> StoreResult<EventPage> {
        let mut conn = self.store.conn();
        let (cmd, to) = if forward {
            ("XRANGE", "+")
        } else {
            ("XREVRANGE", "-")
        };
        loop {
            let rows: Vec<(String, Vec<String>)> = redis::cmd(cmd)
                .arg(self.store.keys.events())
                .arg(&from)
                .arg(to)
                .arg("COUNT")
                .arg(count)
                .query_async(&mut conn)
                .await?;
            let more = rows.len() == count;
            let last = rows.last().map(|(id, _)| id.clone());
            let events: Vec<_> = rows
                .into_iter()
                .flat_map(|row| {
                    let mut events = entry(row);
                    if !forward {
                        events.reverse();
                    }
                    events
                })
                .filter(|(id, _)| keep(id))
                .collect();
            match last {
                Some(last) if more && events.is_empty() => from = format!("({last}"),
                _ => return Ok(EventPage { events, more }),
            }
        }
    }

    /// The name of this store's event stream, made at first use: a
    /// process's history on disk copies one store's events, and one that
    /// finds another name in its directory starts afresh.
    pub async fn stream_name(self) -> StoreResult<String> {
        let mut conn = self.store.conn();
        let fresh = format!("{:032x}", rand::random::<u128>());
        let key = self.store.keys.event_stream_name();
        let _: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(&fresh)
            .arg("NX")
            .query_async(&mut conn)
            .await?;
        let name: Option<String> = redis::cmd("GET").arg(&key).query_async(&mut conn).await?;
        Ok(name.unwrap_or(fresh))
    }

    /// The id of the newest event in the buffer, if any.
    pub async fn newest_id(self) -> StoreResult<Option<EventId>> {
        Ok(self
            .store
            .events()
            .before(None, 1)
            .await?
            .events
            .into_iter()
            .next()
            .map(|(id, _)| id))
    }
}

/// The events of one buffer entry (its id and its fields, as XRANGE gives
/// them), in order, with their ids and published JSON (none for an entry
/// with an id Redis would not give). The one place an event's id is made
/// from its entry's.
pub fn entry((id, fields): (String, Vec<String>)) -> Vec<(EventId, String)> {
    let Some(first) = EventId::parse(&id) else {
        return Vec::new();
    };
    fields
        .chunks(2)
        .filter(|kv| kv.len() == 2 && kv[0] == "e")
        .enumerate()
        .map(|(n, kv)| {
            let id = EventId(first.0, first.1, n as u32);
            (id, with_id(&id.to_string(), &kv[1]))
        })
        .collect()
}

/// What the replay buffer can tell about lost history.
#[derive(Debug, Clone, Default)]
pub struct BufferInfo {
    /// The oldest id still held.
    pub first: Option<String>,
    /// Whether trimming ever dropped entries (more were added than are held).
    pub trimmed: bool,
    /// The highest id removed by XDEL, if any (`max-deleted-entry-id`).
    pub max_deleted: Option<String>,
}

impl Events<'_> {
    /// The buffer's oldest id and whether anything was trimmed or deleted, so
    /// that a resume point older than the buffer can be told apart.
    pub async fn buffer_info(self) -> StoreResult<BufferInfo> {
        let mut conn = self.store.conn();
        let info: redis::RedisResult<redis::Value> = redis::cmd("XINFO")
            .arg("STREAM")
            .arg(self.store.keys.events())
            .query_async(&mut conn)
            .await;
        let info = match info {
            Ok(v) => v,
            // No such key yet: nothing was ever lost.
            Err(e) if e.code() == Some("ERR") => return Ok(BufferInfo::default()),
            Err(e) => return Err(e.into()),
        };
        let pairs: Vec<(String, redis::Value)> = match info {
            redis::Value::Map(m) => m
                .into_iter()
                .filter_map(|(k, v)| redis::from_redis_value::<String>(k).ok().map(|k| (k, v)))
                .collect(),
            redis::Value::Array(items) => items
                .chunks(2)
                .filter_map(|kv| {
                    let k = redis::from_redis_value::<String>(kv.first()?.clone()).ok()?;
                    Some((k, kv.get(1)?.clone()))
                })
                .collect(),
            _ => Vec::new(),
        };
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let text = |name: &str| get(name).and_then(|v| redis::from_redis_value::<String>(v).ok());
        let int = |name: &str| {
            get(name)
                .and_then(|v| redis::from_redis_value::<u64>(v).ok())
                .unwrap_or(0)
        };
        Ok(BufferInfo {
            first: text("recorded-first-entry-id").filter(|id| id != "0-0"),
            trimmed: int("entries-added") > int("length"),
            max_deleted: text("max-deleted-entry-id").filter(|id| id != "0-0"),
        })
    }
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
