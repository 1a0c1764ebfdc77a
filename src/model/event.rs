//! The events the streams carry: one schema, published by the store and
//! parsed by the streams.

use serde::{Deserialize, Serialize};

use super::id::Id;
use super::social::{Message, Notification};
use super::status::Status;
use super::user::User;

/// An event as it is published on the events channel and kept in the replay
/// buffer (without its `id`, which is the buffer entry's id; see
/// [`store::events`](crate::store::events)). The one schema of every event: the store serializes it,
/// the streams parse it, and clients read it (`type` names the variant).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A status was posted (a repost is a status with `repost_of`).
    Status {
        /// When it was posted.
        at: f64,
        /// The status, counts included.
        status: Status,
        /// The author's account is private: only user streams of followers see it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
        /// For a reply to a private account's status: that account. Only
        /// user streams of its followers (and its own) get the reply.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        audience: Option<Id>,
    },
    /// A status was edited: its new version, to every stream that got
    /// the status (the hub routes it by `previous`, the text it had); a
    /// stream that matches only the new text gets it as a `status`.
    Update {
        /// When it was edited.
        at: f64,
        /// The status as edited (counts as they were).
        status: Status,
        /// The author's account is private.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
        /// For a reply to a private account's status: that account.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        audience: Option<Id>,
        /// The text before the edit.
        #[serde(default)]
        previous: String,
    },
    /// A status was deleted.
    Delete {
        /// When.
        at: f64,
        /// The deleted status.
        status_id: Id,
        /// Its author.
        uid: Id,
        /// The author's account (or the status's group) is private.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
        /// The group the status was posted in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group_id: Option<Id>,
    },
    /// `source` started following `target`.
    Follow {
        /// When.
        at: f64,
        /// The follower.
        source: Id,
        /// The followed user.
        target: Id,
    },
    /// `source` stopped following `target`.
    Unfollow {
        /// When.
        at: f64,
        /// The former follower.
        source: Id,
        /// The user no longer followed.
        target: Id,
    },
    /// A user signed up.
    User {
        /// When.
        at: f64,
        /// The new user.
        user: User,
    },
    /// `target` was mentioned in `status`.
    Mention {
        /// When the status was posted.
        at: f64,
        /// The status mentioning them.
        status: Status,
        /// The mentioned user.
        target: Id,
        /// The author's account is private.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
    },
    /// `status` reposts a status by `target`.
    Repost {
        /// When the repost was posted.
        at: f64,
        /// The repost.
        status: Status,
        /// The author of the reposted status.
        target: Id,
        /// The reposter's account is private.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
    },
    /// `source` liked `target`'s status `status_id`.
    Like {
        /// When.
        at: f64,
        /// The liked status.
        status_id: Id,
        /// Who liked it.
        source: Id,
        /// Its author.
        target: Id,
        /// The status is a private account's.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
    },
    /// `source` asked to follow the private account `target`.
    FollowRequest {
        /// When.
        at: f64,
        /// Who asks.
        source: Id,
        /// The private account.
        target: Id,
        /// Always true: a request concerns a private account.
        private: bool,
    },
    /// A message was sent in a conversation: on the user streams of its
    /// participants only (never a public stream).
    DirectMessage {
        /// When it was sent.
        at: f64,
        /// The message.
        message: Message,
        /// Who was in the conversation when it was sent (the user streams
        /// that get it).
        participants: Vec<Id>,
    },
    /// A notification for `uid`: on their user streams only.
    Notification {
        /// When.
        at: f64,
        /// Whose.
        uid: Id,
        /// The notification.
        notification: Box<Notification>,
    },
    /// A notification of `uid`'s taken away (a like, repost or follow undone).
    NotificationRemoved {
        /// When.
        at: f64,
        /// Whose.
        uid: Id,
        /// The notification.
        notification_id: String,
    },
    /// `source` stopped liking `target`'s status: for the notifier, which
    /// takes the like's notification away. Reaches no stream.
    Unlike {
        /// When.
        at: f64,
        /// The status.
        status_id: Id,
        /// Who liked it.
        source: Id,
        /// Its author.
        target: Id,
    },
    /// `source` asked to join the private group `group_id` (their request
    /// made at `at`): for the notifier, which tells the group's owners and
    /// moderators. Reaches no stream.
    GroupRequest {
        /// When the request was made (the same for every retry of it).
        at: f64,
        /// The group.
        group_id: Id,
        /// Who asks.
        source: Id,
    },
    /// An admin resolved `reporter`'s report: for the notifier, which
    /// tells the reporter. Reaches no stream.
    ReportResolved {
        /// When it was resolved.
        at: f64,
        /// The report.
        report_id: Id,
        /// Who reported.
        reporter: Id,
        /// The admin who resolved it.
        admin: Id,
    },
    /// Statuses changed in place (their author's new login): every hub
    /// drops them from its process's cache. Internal: never sent to a client.
    StatusesChanged {
        /// The statuses.
        ids: Vec<Id>,
    },
    /// An account was suspended (`on`) or its suspension lifted: every hub
    /// ends its streams and stops delivering its events while it lasts.
    /// Internal: never sent to a client.
    Suspended {
        /// The user.
        uid: Id,
        /// Suspended (true) or lifted (false).
        on: bool,
    },
    /// A member left (or was removed from) a private group: every hub ends
    /// their group streams of it. Internal: never sent to a client.
    GroupLeft {
        /// The group.
        group_id: Id,
        /// The former member.
        uid: Id,
    },
    /// A list's members changed, or the list was deleted: every hub
    /// updates its streams of that list (a deleted list's end). Internal:
    /// never sent to a client.
    ListChanged {
        /// The list's owner.
        owner: Id,
        /// The list.
        list_id: Id,
        /// The list's version after the change (it only grows).
        version: u64,
        /// Users who became members.
        #[serde(default)]
        added: Vec<Id>,
        /// Users who are members no more.
        #[serde(default)]
        removed: Vec<Id>,
        /// The list was deleted.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        deleted: bool,
    },
    /// A user's filter rules changed: every hub reloads them for that
    /// user's open search streams. Internal: never sent to a client.
    RulesChanged {
        /// Whose rules.
        uid: Id,
        /// The rules' version after the change (it only grows).
        version: u64,
    },
    /// Relations that hide content changed (a block, an unblock, a mute,
    /// an unmute): the hubs update the copies they hold for connected
    /// users. Internal, like `session_revoked`: never sent to a client.
    Relation {
        /// When.
        at: f64,
        /// Each side's change.
        changes: Vec<crate::hides::Change>,
    },
    /// A session ended: the streams opened with it close. Internal: it is
    /// on the channel and in the buffer (so catch-up applies missed ones),
    /// never sent to a client. Published by `drop_sessions.lua`.
    SessionRevoked {
        /// The session.
        sid: String,
    },
    /// A type this build does not know (published by a newer one during a
    /// rolling deploy): it reaches the firehose only.
    #[serde(other)]
    Unknown,
}

/// A partition key mixed (splitmix64's finalizer), so that ids made in
/// sequence spread evenly: a partitioned stream's part is this modulo its
/// parts, the event log's shard this modulo its shards, so that where the
/// parts divide the shards a part is a set of whole shards. Stable across
/// versions: stored order depends on it.
pub fn spread(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Event {
    /// Parses an event's JSON. A status, the event a replay reads most of,
    /// is read straight into its fields when its `type` leads the object
    /// (after the `id` the buffer splices in), as every event published
    /// does: reading the internally tagged enum makes serde buffer the
    /// whole object before it knows the variant.
    pub fn from_json(json: &str) -> serde_json::Result<Event> {
        if kind_at_front(json) == Some("status") {
            if let Ok(s) = serde_json::from_str::<StatusEvent>(json) {
                return Ok(Event::Status {
                    at: s.at,
                    status: s.status,
                    private: s.private,
                    audience: s.audience,
                });
            }
        }
        serde_json::from_str(json)
    }

    /// What a partitioned stream and the event log split this event by:
    /// a status's own events (the status, its updates, its delete) by the
    /// status's id, every other event by the user who caused it; 0 for
    /// events of no one (they all fall in one part).
    pub fn partition_key(&self) -> u64 {
        use Event as E;
        match self {
            E::Status { status, .. } | E::Update { status, .. } => status.id.get(),
            E::Delete { status_id, .. } => status_id.get(),
            E::Follow { source, .. }
            | E::Unfollow { source, .. }
            | E::Like { source, .. }
            | E::Unlike { source, .. }
            | E::GroupRequest { source, .. }
            | E::FollowRequest { source, .. } => source.get(),
            E::Mention { status, .. } | E::Repost { status, .. } => status.uid.get(),
            E::User { user, .. } => user.id.get(),
            E::DirectMessage { message, .. } => message.uid.get(),
            E::Notification { uid, .. }
            | E::NotificationRemoved { uid, .. }
            | E::Suspended { uid, .. }
            | E::GroupLeft { uid, .. }
            | E::RulesChanged { uid, .. } => uid.get(),
            E::ListChanged { owner, .. } => owner.get(),
            E::ReportResolved { admin, .. } => admin.get(),
            _ => 0,
        }
    }

    /// The `type` it is published with (`None` for [`Event::Unknown`]).
    pub fn kind(&self) -> Option<&'static str> {
        Some(match self {
            Event::Status { .. } => "status",
            Event::Delete { .. } => "delete",
            Event::Update { .. } => "update",
            Event::Notification { .. } => "notification",
            Event::NotificationRemoved { .. } => "notification_removed",
            Event::Unlike { .. } => "unlike",
            Event::GroupRequest { .. } => "group_request",
            Event::ReportResolved { .. } => "report_resolved",
            Event::Follow { .. } => "follow",
            Event::Unfollow { .. } => "unfollow",
            Event::User { .. } => "user",
            Event::Mention { .. } => "mention",
            Event::Repost { .. } => "repost",
            Event::Like { .. } => "like",
            Event::FollowRequest { .. } => "follow_request",
            Event::SessionRevoked { .. } => "session_revoked",
            Event::Relation { .. } => "relation",
            Event::DirectMessage { .. } => "direct_message",
            Event::StatusesChanged { .. } => "statuses_changed",
            Event::RulesChanged { .. } => "rules_changed",
            Event::GroupLeft { .. } => "group_left",
            Event::ListChanged { .. } => "list_changed",
            Event::Suspended { .. } => "suspended",
            Event::Unknown => return None,
        })
    }
}

/// The fields of [`Event::Status`], read without the enum's buffering.
#[derive(Deserialize)]
struct StatusEvent {
    at: f64,
    status: Status,
    #[serde(default)]
    private: bool,
    #[serde(default)]
    audience: Option<Id>,
}

/// The `type` of an event's JSON when it is the object's first field, or
/// its second after an `id` (as the buffer splices it).
fn kind_at_front(json: &str) -> Option<&str> {
    let rest = json.strip_prefix('{')?;
    let rest = match rest.strip_prefix("\"id\":\"") {
        Some(id) => id[id.find('"')? + 1..].strip_prefix(',')?,
        None => rest,
    };
    let rest = rest.strip_prefix("\"type\":\"")?;
    Some(&rest[..rest.find('"')?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::status::Counts;

    fn status() -> Status {
        Status {
            id: Id(77),
            uid: Id(5),
            login: "ada".into(),
            message: "hi #rust \"quoted\"".into(),
            posted: 1.5,
            lat: Some(52.5),
            lon: Some(13.4),
            reply_to: Some(Id(70)),
            reply_to_uid: Some(Id(6)),
            hashtags: vec!["rust".into()],
            mentions: vec![],
            repost_of: None,
            repost_of_uid: None,
            audience: None,
            group_id: None,
            group_private: false,
            edited_at: Some(2.0),
            counts: Counts {
                likes: 3,
                reposts: 1,
                replies: 2,
            },
        }
    }

    #[test]
    fn a_status_event_read_straight_equals_the_tagged_enums_reading() {
        for (private, audience) in [(false, None), (true, Some(Id(6)))] {
            let event = Event::Status {
                at: 1.5,
                status: status(),
                private,
                audience,
            };
            let json = serde_json::to_string(&event).unwrap();
            let spliced = format!("{{\"id\":\"1-0.2\",{}", &json[1..]);
            assert_eq!(kind_at_front(&spliced), Some("status"));
            assert_eq!(kind_at_front(&json), Some("status"));
            for text in [&json, &spliced] {
                let generic: Event = serde_json::from_str(text).unwrap();
                assert_eq!(Event::from_json(text).unwrap(), generic);
                assert_eq!(generic, event);
            }
        }
        // Not a status, or `type` not at the front: the enum reads it.
        let other = r#"{"at":1,"type":"status","status":{"id":"1"}}"#;
        assert_eq!(kind_at_front(other), None);
        assert!(Event::from_json(other).is_err());
        let delete = r#"{"id":"1-0","type":"delete","at":1,"status_id":"7","uid":"5"}"#;
        assert_eq!(kind_at_front(delete), Some("delete"));
        assert!(matches!(
            Event::from_json(delete).unwrap(),
            Event::Delete {
                status_id: Id(7),
                ..
            }
        ));
    }
}
