//! What an event is emitted as: its JSON and the key of its shard of the
//! log.

use crate::model::Event;

/// The buffer body of an event (its JSON without the `id`).
pub fn body(event: &Event) -> Body {
    Body {
        key: event.partition_key(),
        // Serializing these types cannot fail: no map has non-string keys.
        json: serde_json::to_string(event).unwrap_or_default(),
    }
}

/// An event to emit: its buffer body and what its shard of the log is
/// chosen by (`Keys::log_shard`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    /// Its partition key ([`model::Event::partition_key`](crate::model::Event::partition_key)).
    pub key: u64,
    /// Its JSON without the `id`.
    pub json: String,
}

impl Body {
    /// An event's body given as JSON (its key read from it; an event this
    /// build cannot read goes with the events of no one).
    pub fn from_json(json: impl Into<String>) -> Body {
        let json = json.into();
        let key = Event::from_json(&json).map_or(0, |e| e.partition_key());
        Body { key, json }
    }
}
