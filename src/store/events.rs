//! Events: emitting them (XADD to the replay buffer + PUBLISH, atomically) and
//! reading the buffer back for resume.
//!
//! An event is stored in the buffer as its JSON body without the `id` field
//! (the entry id is the event id); [`with_id`] splices the id in, giving the
//! exact JSON that was published.

use super::{Store, StoreResult};
use crate::model::Event;

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
/// ([`Store::subscribe_events`]): its messages, and the pings that show it
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

impl Store {
    /// Appends an event to the buffer and publishes it in one atomic step.
    pub async fn emit(&self, body: &str) -> StoreResult<String> {
        let mut conn = self.conn();
        let eid: String = self
            .scripts
            .emit
            .key(self.keys.events())
            .arg(self.replay_maxlen)
            .arg(self.keys.channel())
            .arg(body)
            .invoke_async(&mut conn)
            .await?;
        Ok(eid)
    }

    /// Up to `count` events strictly after `after`, oldest first, as
    /// `(event id, published JSON)`.
    pub async fn events_after(
        &self,
        after: &str,
        count: usize,
    ) -> StoreResult<Vec<(String, String)>> {
        let mut conn = self.conn();
        let rows: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
            .arg(self.keys.events())
            .arg(format!("({after}"))
            .arg("+")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut conn)
            .await?;
        Ok(rows.into_iter().filter_map(entry).collect())
    }

    /// Up to `count` newest events at or before `before` ("+" for the
    /// newest), newest first.
    pub async fn events_before(
        &self,
        before: &str,
        count: usize,
    ) -> StoreResult<Vec<(String, String)>> {
        let mut conn = self.conn();
        let rows: Vec<(String, Vec<String>)> = redis::cmd("XREVRANGE")
            .arg(self.keys.events())
            .arg(before)
            .arg("-")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut conn)
            .await?;
        Ok(rows.into_iter().filter_map(entry).collect())
    }

    /// The id of the newest event in the buffer, if any.
    pub async fn newest_event_id(&self) -> StoreResult<Option<String>> {
        Ok(self
            .events_before("+", 1)
            .await?
            .into_iter()
            .next()
            .map(|(id, _)| id))
    }
}

fn entry((id, fields): (String, Vec<String>)) -> Option<(String, String)> {
    let body = fields
        .chunks(2)
        .find(|kv| kv.len() == 2 && kv[0] == "e")
        .map(|kv| kv[1].clone())?;
    let json = with_id(&id, &body);
    Some((id, json))
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

impl Store {
    /// The buffer's oldest id and whether anything was trimmed or deleted, so
    /// that a resume point older than the buffer can be told apart.
    pub async fn buffer_info(&self) -> StoreResult<BufferInfo> {
        let mut conn = self.conn();
        let info: redis::RedisResult<redis::Value> = redis::cmd("XINFO")
            .arg("STREAM")
            .arg(self.keys.events())
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
