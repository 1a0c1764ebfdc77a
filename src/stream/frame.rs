//! Events as the streams carry them.

use bytes::Bytes;
use firehose_filters::{Event, StatusView};
use serde::Deserialize;
use std::fmt;
use std::sync::Arc;

/// A replay-buffer id (`<ms>-<seq>`), ordered like Redis orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct EventId(pub u64, pub u64);

impl EventId {
    /// `0-0`: before every event (a resume point asking for the whole buffer).
    pub const ZERO: EventId = EventId(0, 0);

    /// Parses `ms-seq` (or a bare `ms`).
    pub fn parse(s: &str) -> Option<EventId> {
        let s = s.trim();
        match s.split_once('-') {
            Some((ms, seq)) => Some(EventId(ms.parse().ok()?, seq.parse().ok()?)),
            None => Some(EventId(s.parse().ok()?, 0)),
        }
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

/// Whether resuming after `after` misses events the buffer no longer holds:
/// some entry newer than `after` was deleted, or entries were trimmed and
/// `after` is older than the oldest one kept. (A resume point that is exactly
/// the last trimmed entry is reported as a gap too: the buffer cannot tell.)
pub fn is_gap(after: EventId, info: &crate::store::events::BufferInfo) -> bool {
    let newer = |id: &Option<String>| {
        id.as_deref()
            .and_then(EventId::parse)
            .is_some_and(|id| id > after)
    };
    newer(&info.max_deleted) || (info.trimmed && newer(&info.first))
}

/// What routing needs from an event, owned.
#[derive(Debug, Clone)]
pub enum Routing {
    /// A status.
    Status {
        /// Status id.
        id: u64,
        /// Author.
        uid: u64,
        /// Text.
        message: String,
        /// `(lat, lon)`.
        coords: Option<(f64, f64)>,
        /// Author replied to.
        reply_to_uid: Option<u64>,
        /// Author reposted.
        repost_of_uid: Option<u64>,
        /// Private author.
        private: bool,
    },
    /// A delete.
    Delete {
        /// Status id.
        status_id: u64,
        /// Author.
        uid: u64,
        /// Private author.
        private: bool,
    },
    /// A follow or unfollow.
    Follow {
        /// Follower.
        source: u64,
        /// Followed.
        target: u64,
        /// Follow (true) or unfollow.
        following: bool,
    },
    /// A notice for some users' streams (like, mention, repost of their
    /// status, follow request).
    Notice {
        /// The users it is for.
        uids: Vec<u64>,
        /// About something private: never the firehose.
        private: bool,
    },
    /// Anything else (firehose only).
    Other,
}

impl Routing {
    /// The view the index routes on.
    pub fn event(&self) -> Event<'_> {
        match self {
            Routing::Status {
                id,
                uid,
                message,
                coords,
                reply_to_uid,
                repost_of_uid,
                private,
            } => Event::Status(StatusView {
                id: *id,
                uid: *uid,
                message,
                coords: *coords,
                reply_to_uid: *reply_to_uid,
                repost_of_uid: *repost_of_uid,
                private: *private,
            }),
            Routing::Delete {
                status_id,
                uid,
                private,
            } => Event::Delete {
                status_id: *status_id,
                uid: *uid,
                private: *private,
            },
            Routing::Follow {
                source,
                target,
                following,
            } => Event::Follow {
                source: *source,
                target: *target,
                following: *following,
            },
            Routing::Notice { uids, private } => Event::Notice {
                uids,
                public: !private,
            },
            Routing::Other => Event::Other,
        }
    }
}

/// One event, serialized once for every transport.
#[derive(Debug)]
pub struct Frame {
    /// Its id.
    pub id: EventId,
    /// Its type (`status`, `delete`, ...).
    pub kind: String,
    /// The JSON text (one NDJSON line without the newline, one WebSocket frame).
    pub json: Bytes,
    /// The whole SSE message.
    pub sse: Bytes,
    /// The NDJSON line with its newline.
    pub ndjson: Bytes,
    /// What routing looks at.
    pub routing: Routing,
}

#[derive(Deserialize)]
struct Wire {
    id: Option<String>,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    private: bool,
    status: Option<WireStatus>,
    status_id: Option<String>,
    uid: Option<String>,
    source: Option<String>,
    target: Option<String>,
    sid: Option<String>,
}

#[derive(Deserialize)]
struct WireStatus {
    id: String,
    uid: String,
    #[serde(default)]
    message: String,
    lat: Option<f64>,
    lon: Option<f64>,
    reply_to_uid: Option<String>,
    repost_of_uid: Option<String>,
}

/// What arrived on the events channel.
#[derive(Debug)]
pub enum Incoming {
    /// An event.
    Event(Arc<Frame>),
    /// A session ended: close its streams.
    SessionRevoked(String),
}

fn num(s: &Option<String>) -> Option<u64> {
    s.as_deref().and_then(|v| v.parse().ok())
}

/// Parses a published message; `None` for anything malformed.
pub fn parse(json: &str) -> Option<Incoming> {
    let wire: Wire = serde_json::from_str(json).ok()?;
    if wire.kind == "session_revoked" {
        return wire.sid.map(Incoming::SessionRevoked);
    }
    let id_text = wire.id.as_deref()?;
    let id = EventId::parse(id_text)?;
    let routing = match wire.kind.as_str() {
        "status" => {
            let s = wire.status.as_ref()?;
            Routing::Status {
                id: s.id.parse().ok()?,
                uid: s.uid.parse().ok()?,
                message: s.message.clone(),
                coords: s.lat.zip(s.lon),
                reply_to_uid: num(&s.reply_to_uid),
                repost_of_uid: num(&s.repost_of_uid),
                private: wire.private,
            }
        }
        "delete" => Routing::Delete {
            status_id: num(&wire.status_id)?,
            uid: num(&wire.uid)?,
            private: wire.private,
        },
        "follow" | "unfollow" => Routing::Follow {
            source: num(&wire.source)?,
            target: num(&wire.target)?,
            following: wire.kind == "follow",
        },
        // For the user named by `target` (the liked, mentioned or reposted
        // author); a follow request is for both users.
        "like" | "mention" | "repost" => Routing::Notice {
            uids: vec![num(&wire.target)?],
            private: wire.private,
        },
        "follow_request" => Routing::Notice {
            uids: vec![num(&wire.source)?, num(&wire.target)?],
            private: true,
        },
        _ => Routing::Other,
    };
    let sse = format!("id: {id_text}\nevent: {}\ndata: {json}\n\n", wire.kind);
    let ndjson = format!("{json}\n");
    Some(Incoming::Event(Arc::new(Frame {
        id,
        kind: wire.kind,
        json: Bytes::copy_from_slice(json.as_bytes()),
        sse: Bytes::from(sse),
        ndjson: Bytes::from(ndjson),
        routing,
    })))
}

/// A control event (`warning`, `disconnect`, `subscribed`, `error`, ...):
/// no id, so resume positions are not moved by it.
pub fn control(kind: &str, fields: serde_json::Value) -> String {
    let mut v = serde_json::json!({"type": kind, "at": crate::model::now()});
    if let (Some(obj), serde_json::Value::Object(extra)) = (v.as_object_mut(), fields) {
        obj.extend(extra);
    }
    v.to_string()
}
