//! Events as the streams carry them.

mod control;
mod forms;

use super::deflate::Deflated;
use crate::model;
use crate::model::Id;
use bytes::Bytes;
pub use control::{Control, ControlFrame, DisconnectCode, WarningCode};
use firehose_filters::rules::RuleStatus;
use firehose_filters::{Event, StatusView};
use serde::Deserialize;
use std::sync::{Arc, OnceLock};

pub use crate::store::events::EventId;

/// Events parsed and judged between two turns given to other tasks on
/// every path that parses many at once (replays, history searches): a
/// page judged in one go held an async thread for milliseconds, which the
/// live streams waited behind.
pub const PARSE_TURN: usize = 64;

/// Whether resuming after `after` misses events the buffer no longer holds:
/// some entry newer than `after` was deleted, or entries were trimmed and
/// `after` is older than the oldest one kept. (A resume point that is exactly
/// the last trimmed entry is reported as a gap too: the buffer cannot tell.)
pub fn is_gap(after: EventId, info: &crate::store::events::BufferInfo) -> bool {
    info.lost_after(after)
}

/// One event, serialized once for every transport.
#[derive(Debug)]
pub struct Frame {
    /// Its id.
    pub id: EventId,
    /// The event.
    pub event: model::Event,
    /// The JSON text (one NDJSON line without the newline, one WebSocket frame).
    pub json: Bytes,
    /// The whole SSE message.
    pub sse: Bytes,
    /// The NDJSON line with its newline.
    pub ndjson: Bytes,
    /// Status ids, authors and the users a notice is for, as routing reads them.
    ids: Ids,
    /// Its outputs deflated, each the first time a compressed connection
    /// needs it, then shared by all of them (see [`Frame::deflated`]).
    deflated: [OnceLock<Deflated>; DEFLATED_FORMS],
    /// Its WebSocket messages compressed with the zstd dictionary (the
    /// plain one and the six multiplexed forms), each the first time a
    /// `compress=zstd` socket needs it; boxed, so a frame no such socket
    /// sees pays one pointer for them.
    zstd: OnceLock<Box<[OnceLock<Bytes>; ZSTD_FORMS]>>,
    /// For an `update`: the status as it was and as it is, as `status`
    /// frames with this id (made when first routed).
    views: OnceLock<Option<UpdateViews>>,
    /// Its SSE message and its NDJSON line, each framed as one HTTP chunk,
    /// made the first time a chunked stream needs it and shared by all of
    /// them (see [`Frame::chunk`]).
    chunks: [OnceLock<Bytes>; 2],
    /// This event in another API's framing (the Mastodon listener's), made
    /// by the first of that API's connections to need it while the others
    /// wait, then shared; one cell for the event and its copies with
    /// `matching_rules`, which that framing does not carry.
    pub translated: Arc<tokio::sync::OnceCell<Arc<dyn std::any::Any + Send + Sync>>>,
}

/// An `update` seen as the `status` events it stands between.
#[derive(Debug)]
pub struct UpdateViews {
    /// The status with its previous text: who it reaches had the status.
    pub before: Arc<Frame>,
    /// The status as edited: what a stream that matches only the new text
    /// gets instead of the update.
    pub after: Arc<Frame>,
}

/// The encodings of one event a compressed connection may need: the SSE
/// message, the NDJSON line, the JSON (a WebSocket message) and the
/// multiplexed message of each of the six stream kinds (a group status
/// belongs to one group, so one group form).
pub const DEFLATED_FORMS: usize = 9;

/// The WebSocket forms of [`DEFLATED_FORMS`] (the last seven): those a
/// `compress=zstd` socket may need.
pub const ZSTD_FORMS: usize = DEFLATED_FORMS - 2;

/// A status's id, author and the authors it replies to or reposts.
#[derive(Debug, Clone, Copy)]
struct StatusIds {
    id: u64,
    uid: u64,
    reply_to_uid: Option<u64>,
    repost_of_uid: Option<u64>,
}

/// The numbers routing needs that the public shapes carry as strings,
/// parsed once.
#[derive(Debug, Default, Clone)]
struct Ids {
    /// A status's.
    status: Option<StatusIds>,
    /// The users whose user streams get a notice.
    notified: Vec<u64>,
    /// Who caused the event (an author, the author reposted, a liker):
    /// a viewer whose relations hide one of them does not get it.
    actors: [u64; 2],
}

impl Frame {
    /// The users who caused the event (none: 0), for the hub's check of
    /// each viewer's relations ([`crate::hides`]).
    pub fn actors(&self) -> &[u64] {
        match self.ids.actors {
            [0, _] => &[],
            [_, 0] => &self.ids.actors[..1],
            _ => &self.ids.actors,
        }
    }

    /// Whether it is a follow or an unfollow (which move a user stream's
    /// follows on).
    pub fn is_follow(&self) -> bool {
        matches!(
            self.event,
            model::Event::Follow { .. } | model::Event::Unfollow { .. }
        )
    }

    /// The view the index routes on.
    pub fn routing(&self) -> Event<'_> {
        use model::Event as E;
        match &self.event {
            E::Status {
                status,
                private,
                audience,
                ..
            }
            | E::Update {
                status,
                private,
                audience,
                ..
            } => {
                // `parse` made every status frame with its ids.
                let ids = self.ids.status.unwrap_or(StatusIds {
                    id: 0,
                    uid: 0,
                    reply_to_uid: None,
                    repost_of_uid: None,
                });
                Event::Status(StatusView {
                    id: ids.id,
                    uid: ids.uid,
                    message: &status.message,
                    coords: status.lat.zip(status.lon),
                    reply_to_uid: ids.reply_to_uid,
                    repost_of_uid: ids.repost_of_uid,
                    private: *private,
                    grouped: status.group_id.is_some(),
                    audience: audience.map(|a| a.0),
                })
            }
            E::Delete {
                status_id,
                uid,
                private,
                group_id,
                ..
            } => Event::Delete {
                status_id: status_id.get(),
                uid: uid.get(),
                private: *private,
                grouped: group_id.is_some(),
            },
            E::Follow { source, target, .. } => Event::Follow {
                source: source.get(),
                target: target.get(),
                following: true,
            },
            E::Unfollow { source, target, .. } => Event::Follow {
                source: source.get(),
                target: target.get(),
                following: false,
            },
            E::Mention { private, .. } | E::Repost { private, .. } | E::Like { private, .. } => {
                Event::Notice {
                    uids: &self.ids.notified,
                    public: !private,
                }
            }
            // A request concerns a private account, a message its
            // conversation: never the firehose.
            E::FollowRequest { .. }
            | E::DirectMessage { .. }
            | E::Notification { .. }
            | E::NotificationRemoved { .. } => Event::Notice {
                uids: &self.ids.notified,
                public: false,
            },
            // For the notifier only.
            E::Unlike { .. } | E::GroupRequest { .. } | E::ReportResolved { .. } => Event::Notice {
                uids: &[],
                public: false,
            },
            E::User { .. }
            | E::SessionRevoked { .. }
            | E::Relation { .. }
            | E::StatusesChanged { .. }
            | E::RulesChanged { .. }
            | E::GroupLeft { .. }
            | E::ListChanged { .. }
            | E::Suspended { .. }
            | E::Unknown => Event::Other,
        }
    }

    /// What a partitioned stream splits this event by
    /// ([`model::Event::partition_key`]).
    pub fn partition_key(&self) -> u64 {
        self.event.partition_key()
    }

    /// The id of the status this event carries, if it carries one.
    pub fn status_id(&self) -> Option<u64> {
        self.ids.status.map(|s| s.id)
    }

    /// A public status as filter rules read it; `None` for any other
    /// event (a private account's status, a reply to one, a delete, ...).
    pub fn rule_status(&self) -> Option<RuleStatus> {
        let model::Event::Status {
            status,
            private: false,
            ..
        } = &self.event
        else {
            return None;
        };
        let ids = self.ids.status?;
        Some(RuleStatus {
            id: ids.id,
            uid: ids.uid,
            message: status.message.clone(),
            hashtags: status.hashtags.iter().map(|t| t.to_lowercase()).collect(),
            mentions: status.mentions.iter().map(|m| m.to_lowercase()).collect(),
            reply_to_uid: ids.reply_to_uid,
            is_reply: status.reply_to.is_some(),
            repost_of_uid: ids.repost_of_uid,
            coords: status.lat.zip(status.lon),
        })
    }

    /// This event with `"matching_rules": <rules>` (a JSON array) added:
    /// a search or rule-filtered stream's own copy, encoded for it alone.
    pub fn with_matching_rules(&self, rules: &str) -> Arc<Frame> {
        let splice = |json: &[u8]| {
            let body = json.strip_suffix(b"}").unwrap_or(json);
            let mut out = Vec::with_capacity(body.len() + rules.len() + 20);
            out.extend_from_slice(body);
            out.extend_from_slice(b",\"matching_rules\":");
            out.extend_from_slice(rules.as_bytes());
            out.push(b'}');
            out
        };
        let json = splice(&self.json);
        let kind = self.event.kind().unwrap_or("status");
        let mut sse = Vec::with_capacity(json.len() + 64);
        sse.extend_from_slice(format!("id: {}\nevent: {kind}\ndata: ", self.id).as_bytes());
        sse.extend_from_slice(&json);
        sse.extend_from_slice(b"\n\n");
        let mut ndjson = json.clone();
        ndjson.push(b'\n');
        Arc::new(Frame {
            id: self.id,
            event: self.event.clone(),
            json: Bytes::from(json),
            sse: Bytes::from(sse),
            ndjson: Bytes::from(ndjson),
            ids: self.ids.clone(),
            deflated: Default::default(),
            zstd: OnceLock::new(),
            views: OnceLock::new(),
            chunks: Default::default(),
            translated: self.translated.clone(),
        })
    }

    /// The group of a status event or of a delete's status.
    pub fn group(&self) -> Option<u64> {
        match &self.event {
            model::Event::Status { status, .. } | model::Event::Update { status, .. } => {
                status.group_id.map(Id::get)
            }
            model::Event::Delete { group_id, .. } => group_id.map(|g| g.0),
            _ => None,
        }
    }

    /// For an `update`: the status before and after, as `status` frames
    /// with this event's id (routed as those would be).
    pub fn update_views(&self) -> Option<&UpdateViews> {
        let model::Event::Update {
            at,
            status,
            private,
            audience,
            previous,
        } = &self.event
        else {
            return None;
        };
        self.views
            .get_or_init(|| {
                let id = self.id.to_string();
                let view = |status: model::Status| {
                    let event = model::Event::Status {
                        at: *at,
                        status,
                        private: *private,
                        audience: *audience,
                    };
                    let mut json = serde_json::to_value(&event).ok()?;
                    json.as_object_mut()?
                        .insert("id".into(), serde_json::Value::String(id.clone()));
                    match parse(&json.to_string())? {
                        Incoming::Event(frame) => Some(frame),
                        _ => None,
                    }
                };
                let mut before = status.clone();
                before.message = previous.clone();
                before.hashtags = crate::text::hashtags(previous);
                before.mentions = crate::text::mentions(previous);
                before.edited_at = None;
                Some(UpdateViews {
                    before: view(before)?,
                    after: view(status.clone())?,
                })
            })
            .as_ref()
    }

    /// This event carrying `status` (its version now) in place of the one
    /// it was made with, keeping the counts it had: for a replay.
    pub fn with_status(&self, mut status: model::Status) -> Option<Arc<Frame>> {
        use model::Event as E;
        let mut event = self.event.clone();
        match &mut event {
            E::Status { status: s, .. }
            | E::Update { status: s, .. }
            | E::Mention { status: s, .. }
            | E::Repost { status: s, .. } => {
                status.counts = s.counts;
                *s = status;
            }
            _ => return None,
        }
        let mut json = serde_json::to_value(&event).ok()?;
        let fields = json.as_object_mut()?;
        fields.insert("id".into(), serde_json::Value::String(self.id.to_string()));
        // A rule stream's copy keeps its rules.
        if let Ok(serde_json::Value::Object(mut had)) = serde_json::from_slice(&self.json) {
            if let Some(rules) = had.remove("matching_rules") {
                fields.insert("matching_rules".into(), rules);
            }
        }
        match parse(&json.to_string())? {
            Incoming::Event(frame) => Some(frame),
            _ => None,
        }
    }

    /// Whether this is an `update`.
    pub fn is_update(&self) -> bool {
        matches!(self.event, model::Event::Update { .. })
    }

    /// The status a `delete` event removes.
    pub fn deleted_status(&self) -> Option<u64> {
        match self.event {
            model::Event::Delete { status_id, .. } => Some(status_id.get()),
            _ => None,
        }
    }
}

/// What arrived on the events channel.
#[derive(Debug)]
pub enum Incoming {
    /// An event.
    Event(Arc<Frame>),
    /// A session ended: close its streams.
    SessionRevoked(String),
    /// Relations that hide content changed.
    Relation(Vec<crate::hides::Change>),
    /// Statuses changed in place: out of the status cache.
    StatusesChanged(Vec<u64>),
    /// A user's filter rules changed (their version after the change).
    RulesChanged(u64, u64),
    /// A member left a private group (group, user).
    GroupLeft(u64, u64),
    /// A list's members changed, or it was deleted.
    ListChanged(ListChange),
    /// An account was suspended (true) or the suspension lifted.
    Suspended(u64, bool),
}

/// A change of a list's members (or its delete), as the hubs apply it.
#[derive(Debug, Clone)]
pub struct ListChange {
    /// The list's owner.
    pub owner: u64,
    /// The list.
    pub list: u64,
    /// The list's version after the change.
    pub version: u64,
    /// New members.
    pub added: Vec<u64>,
    /// Former members.
    pub removed: Vec<u64>,
    /// The list was deleted.
    pub deleted: bool,
}

/// The buffer id of a published event (no event has a field `id` of its
/// own, so the event parses from the same text with it ignored).
#[derive(Deserialize)]
struct IdOnly<'a> {
    #[serde(borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
}

/// The buffer id a published event carries: spliced in first (as
/// [`store::events`](crate::store::events) does) it is read off the front; else parsed.
fn published_id(json: &str) -> Option<String> {
    if let Some(rest) = json.strip_prefix("{\"id\":\"") {
        let end = rest.find('"')?;
        if !rest[..end].contains('\\') {
            return Some(rest[..end].to_string());
        }
    }
    serde_json::from_str::<IdOnly<'_>>(json)
        .ok()?
        .id
        .map(|id| id.into_owned())
}

/// Only the `type` of a published event (for one this build does not know).
#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
}

/// The numbers of a status.
fn status_ids(status: &model::Status) -> StatusIds {
    StatusIds {
        id: status.id.get(),
        uid: status.uid.get(),
        reply_to_uid: status.reply_to_uid.map(Id::get),
        repost_of_uid: status.repost_of_uid.map(Id::get),
    }
}

/// Parses a published message; `None` for anything malformed.
pub fn parse(json: &str) -> Option<Incoming> {
    use model::Event as E;
    // Parsed straight, not flattened into a wrapper: serde would buffer
    // the whole event twice on its way to the tagged enum.
    let event = model::Event::from_json(json).ok()?;
    let event = match event {
        E::SessionRevoked { sid } => return Some(Incoming::SessionRevoked(sid)),
        E::Relation { changes, .. } => return Some(Incoming::Relation(changes)),
        E::StatusesChanged { ids } => {
            return Some(Incoming::StatusesChanged(ids.iter().map(|i| i.0).collect()))
        }
        E::RulesChanged { uid, version } => {
            return Some(Incoming::RulesChanged(uid.get(), version))
        }
        E::GroupLeft { group_id, uid } => {
            return Some(Incoming::GroupLeft(group_id.get(), uid.get()))
        }
        E::ListChanged {
            owner,
            list_id,
            version,
            added,
            removed,
            deleted,
        } => {
            return Some(Incoming::ListChanged(ListChange {
                owner: owner.get(),
                list: list_id.get(),
                version,
                added: added.iter().map(|i| i.0).collect(),
                removed: removed.iter().map(|i| i.0).collect(),
                deleted,
            }))
        }
        E::Suspended { uid, on } => return Some(Incoming::Suspended(uid.get(), on)),
        event => event,
    };
    let id_text = published_id(json)?;
    let id = EventId::parse(&id_text)?;
    let ids = match &event {
        E::Status { status, .. } | E::Update { status, .. } => {
            let s = status_ids(status);
            Ids {
                status: Some(s),
                notified: Vec::new(),
                actors: [s.uid, s.repost_of_uid.unwrap_or(0)],
            }
        }
        // For the user named by `target` (the liked, mentioned or reposted
        // author); a follow request is for both users.
        E::Mention { target, status, .. } | E::Repost { target, status, .. } => Ids {
            status: None,
            notified: vec![target.get()],
            actors: [status.uid.get(), 0],
        },
        E::Like { target, source, .. } => Ids {
            status: None,
            notified: vec![target.get()],
            actors: [source.get(), 0],
        },
        E::FollowRequest { source, target, .. } => Ids {
            status: None,
            notified: vec![source.get(), target.get()],
            actors: [source.get(), 0],
        },
        // Every participant's user stream; no actor, since neither blocks
        // (which close a direct conversation at sending) nor mutes touch
        // conversations.
        E::Notification {
            uid, notification, ..
        } => Ids {
            status: None,
            notified: vec![uid.get()],
            actors: [notification.account.id.get(), 0],
        },
        E::NotificationRemoved { uid, .. } => Ids {
            status: None,
            notified: vec![uid.get()],
            actors: [0, 0],
        },
        E::DirectMessage { participants, .. } => Ids {
            status: None,
            notified: participants.iter().map(|p| p.0).collect(),
            actors: [0, 0],
        },
        _ => Ids::default(),
    };
    let kind = match event.kind() {
        Some(kind) => std::borrow::Cow::Borrowed(kind),
        None => serde_json::from_str::<TypeOnly<'_>>(json).ok()?.kind,
    };
    // One buffer holds all three forms: the SSE message, whose data line is
    // the JSON followed by the NDJSON line's newline.
    let head = ["id: ", &id_text, "\nevent: ", &kind, "\ndata: "];
    let at = head.iter().map(|p| p.len()).sum::<usize>();
    let mut all = Vec::with_capacity(at + json.len() + 2);
    for part in head {
        all.extend_from_slice(part.as_bytes());
    }
    all.extend_from_slice(json.as_bytes());
    all.extend_from_slice(b"\n\n");
    let sse = Bytes::from(all);
    Some(Incoming::Event(Arc::new(Frame {
        id,
        event,
        json: sse.slice(at..at + json.len()),
        ndjson: sse.slice(at..at + json.len() + 1),
        sse,
        ids,
        deflated: Default::default(),
        zstd: OnceLock::new(),
        views: OnceLock::new(),
        chunks: Default::default(),
        translated: Default::default(),
    })))
}
