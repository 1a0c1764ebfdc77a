//! The public JSON shapes of the contract: `user`, `status`, and the events
//! the streams carry ([`Event`]).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Home timelines keep this many newest entries: no read shows more.
pub const HOME_CAP: usize = 1000;

/// A post trims the homes it enters back to [`HOME_CAP`] one time in this
/// many ([`trims_homes`]); in between, a home may hold a few entries past
/// the cap, which every read leaves out.
pub const HOME_TRIM_EVERY: u64 = 8;

/// Whether the post of status `sid` trims the homes it enters (its own
/// author's and its followers'): one status in [`HOME_TRIM_EVERY`], chosen
/// by a hash of the id, so that a trim (a `ZREMRANGEBYRANK` per home, which
/// removes nothing until a home is full) is not paid on every insert. A
/// home's excess is the inserts since its last trimming one, each of which
/// trims with probability 1/8 independently of the home: 7 on average,
/// more than 200 with probability (7/8)^200 < 10^-11.
pub fn trims_homes(sid: u64) -> bool {
    sid.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61 == 0
}

/// A status's score in the timelines of statuses (homes, profiles,
/// mentions, hashtags, replies, groups): the whole second of its `posted`.
/// Statuses of one second tie, and Redis orders ties by member, which for
/// snowflake ids is their order (`store::ids`), so a timeline is in
/// `posted` order all the same; a whole number costs a small ZSET's
/// inserts a fraction of what a fraction does (`post_whole.lua` says why).
/// The scripts that write timelines keep the same score.
pub fn timeline_score(posted: f64) -> u64 {
    posted.floor().max(0.0) as u64
}

/// The public `user` object. Email and password hash are never here.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct User {
    /// User id (a string of digits).
    pub id: String,
    /// Login as typed at sign-up.
    pub login: String,
    /// Display name.
    pub name: String,
    /// Number of followers.
    pub followers: u64,
    /// Number of users followed.
    pub following: u64,
    /// Number of statuses posted.
    pub posts: u64,
    /// Sign-up time, seconds since the epoch.
    pub signup: f64,
    /// Whether the account is private (its statuses reach followers only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
    /// Only in `GET /api/v1/me`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Who may start a conversation with the user: `everyone` (the default)
    /// or `following` (those the user follows). Only in `GET /api/v1/me`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dm_policy: Option<String>,
    /// Whether an admin suspended the account. Only on admin paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<bool>,
}

impl User {
    /// Builds a user from its Redis HASH; `None` when the HASH is empty,
    /// the account is being deleted or is suspended (then it is 404 to
    /// everyone but admins).
    pub fn from_hash(h: &HashMap<String, String>) -> Option<User> {
        if h.get("suspended").is_some_and(|v| v == "1") {
            return None;
        }
        User::from_hash_any(h)
    }

    /// [`User::from_hash`], suspended accounts too (admin paths), with
    /// `suspended` set.
    pub fn from_hash_admin(h: &HashMap<String, String>) -> Option<User> {
        let mut user = User::from_hash_any(h)?;
        user.suspended = Some(h.get("suspended").is_some_and(|v| v == "1"));
        Some(user)
    }

    fn from_hash_any(h: &HashMap<String, String>) -> Option<User> {
        if h.contains_key("deleted") {
            return None;
        }
        let num = |k: &str| h.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Some(User {
            id: h.get("id")?.clone(),
            login: h.get("login")?.clone(),
            name: h.get("name").cloned().unwrap_or_default(),
            followers: num("followers"),
            following: num("following"),
            posts: num("posts"),
            signup: h.get("signup").and_then(|v| v.parse().ok()).unwrap_or(0.0),
            private: h.get("private").map(|v| v == "1").unwrap_or(false),
            email: None,
            dm_policy: None,
            suspended: None,
        })
    }
}

/// The public `status` object.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Status {
    /// Status id.
    pub id: String,
    /// Author id.
    pub uid: String,
    /// Author login.
    pub login: String,
    /// The text, 1-280 characters.
    pub message: String,
    /// Posting time, seconds since the epoch.
    pub posted: f64,
    /// Latitude, with `lon`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat: Option<f64>,
    /// Longitude, with `lat`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lon: Option<f64>,
    /// The status this one replies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// Author of the status this one replies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_uid: Option<String>,
    /// Hashtags in the message, without `#`, in order of appearance.
    pub hashtags: Vec<String>,
    /// Logins mentioned with `@` that belong to users, in order of appearance.
    pub mentions: Vec<String>,
    /// The status this one reposts (a repost's own message may be empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repost_of: Option<String>,
    /// Author of the reposted status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repost_of_uid: Option<String>,
    /// For a reply to a private account's status: that account. Then only
    /// who may see that account's statuses sees the reply (never in JSON).
    #[serde(skip)]
    pub audience: Option<String>,
    /// The group it was posted in (then it is in that group's timeline
    /// only: no home, profile or user stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// Whether that group is private: then only its members see it
    /// (never in JSON).
    #[serde(skip)]
    pub group_private: bool,
    /// When it was last edited (absent if never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_at: Option<f64>,
    /// Likes, reposts and replies it has (read at the time of the answer;
    /// always the last fields, see `store::cache`).
    #[serde(flatten)]
    pub counts: Counts,
}

/// How many likes, reposts and replies a status has.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Counts {
    /// Users who like it.
    #[serde(default)]
    pub likes: u64,
    /// Users who reposted it.
    #[serde(default)]
    pub reposts: u64,
    /// Replies to it.
    #[serde(default)]
    pub replies: u64,
}

impl Counts {
    /// From the `likes`, `reposts`, `replies` fields of a status HASH.
    pub fn from_hash(h: &HashMap<String, String>) -> Counts {
        let num = |k: &str| h.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Counts {
            likes: num("likes"),
            reposts: num("reposts"),
            replies: num("replies"),
        }
    }
}

impl Status {
    /// The id of the status this one replies to.
    pub fn parent_id(&self) -> Option<u64> {
        self.reply_to.as_deref().and_then(|p| p.parse().ok())
    }

    /// The id of the status this one reposts.
    pub fn original_id(&self) -> Option<u64> {
        self.repost_of.as_deref().and_then(|p| p.parse().ok())
    }

    /// The HASH fields a status is stored as.
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        let mut f = vec![
            ("uid", self.uid.clone()),
            ("login", self.login.clone()),
            ("message", self.message.clone()),
            ("posted", self.posted.to_string()),
            (
                "hashtags",
                serde_json::to_string(&self.hashtags).unwrap_or_default(),
            ),
            (
                "mentions",
                serde_json::to_string(&self.mentions).unwrap_or_default(),
            ),
        ];
        if let (Some(lat), Some(lon)) = (self.lat, self.lon) {
            f.push(("lat", lat.to_string()));
            f.push(("lon", lon.to_string()));
        }
        if let Some(r) = &self.reply_to {
            f.push(("reply_to", r.clone()));
        }
        if let Some(r) = &self.reply_to_uid {
            f.push(("reply_to_uid", r.clone()));
        }
        if let Some(r) = &self.repost_of {
            f.push(("repost_of", r.clone()));
        }
        if let Some(r) = &self.repost_of_uid {
            f.push(("repost_of_uid", r.clone()));
        }
        if let Some(a) = &self.audience {
            f.push(("audience", a.clone()));
        }
        if let Some(g) = &self.group_id {
            f.push(("group_id", g.clone()));
            if self.group_private {
                f.push(("group_private", "1".into()));
            }
        }
        f
    }

    /// Builds a status from its Redis HASH; `None` when the HASH is empty
    /// or the status is being (or has been) deleted.
    pub fn from_hash(h: &HashMap<String, String>) -> Option<Status> {
        if h.contains_key("deleted") {
            return None;
        }
        let list = |k: &str| {
            h.get(k)
                .and_then(|v| serde_json::from_str(v).ok())
                .unwrap_or_default()
        };
        Some(Status {
            id: h.get("id")?.clone(),
            uid: h.get("uid")?.clone(),
            login: h.get("login").cloned().unwrap_or_default(),
            message: h.get("message").cloned().unwrap_or_default(),
            posted: h.get("posted").and_then(|v| v.parse().ok()).unwrap_or(0.0),
            lat: h.get("lat").and_then(|v| v.parse().ok()),
            lon: h.get("lon").and_then(|v| v.parse().ok()),
            reply_to: h.get("reply_to").cloned(),
            reply_to_uid: h.get("reply_to_uid").cloned(),
            hashtags: list("hashtags"),
            mentions: list("mentions"),
            repost_of: h.get("repost_of").cloned(),
            repost_of_uid: h.get("repost_of_uid").cloned(),
            audience: h.get("audience").cloned(),
            group_id: h.get("group_id").cloned(),
            group_private: h.get("group_private").is_some_and(|v| v == "1"),
            edited_at: h.get("edited_at").and_then(|v| v.parse().ok()),
            counts: Counts::from_hash(h),
        })
    }
}

/// A notification, as its user reads it (`GET /api/v1/notifications`, the
/// `notification` event).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Notification {
    /// Notification id (time-ordered, as status ids are).
    pub id: String,
    /// `follow`, `follow_request`, `like`, `repost`, `mention`, `reply`,
    /// `group_request` or `report_resolved`.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it happened, seconds since the epoch.
    pub at: f64,
    /// Who did it.
    pub account: User,
    /// The status it is about (liked, reposted, mentioning or replying).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// For a `group_request`: the group asked to join.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// For a `report_resolved`: the report (its `account` the admin who
    /// resolved it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_id: Option<String>,
}

/// A message of a conversation (`direct_message` events carry it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Message {
    /// Message id (time-ordered, as status ids are).
    pub id: String,
    /// The conversation.
    pub conversation_id: String,
    /// The sender.
    pub uid: String,
    /// The sender's login when it was sent.
    pub login: String,
    /// 1-1000 characters.
    pub text: String,
    /// When it was sent, seconds since the epoch.
    pub sent: f64,
}

/// A group as one user sees it.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Group {
    /// Group id.
    pub id: String,
    /// 1-50 characters.
    pub name: String,
    /// At most 500 characters.
    pub description: String,
    /// `public`, `private` or `announcement`.
    pub kind: String,
    /// How many members it has.
    pub members: u64,
    /// An owner's id (the creator while an owner).
    pub owner: Option<String>,
    /// When it was created.
    pub created: f64,
    /// The caller's role (`owner`, `moderator`, `member`), or null.
    pub role: Option<String>,
    /// Whether the caller's join request is pending.
    pub requested: bool,
}

/// A user's membership of a group.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Membership {
    /// The group.
    pub group_id: String,
    /// The user.
    pub user_id: String,
    /// Whether they are a member.
    pub member: bool,
    /// Their role, or null.
    pub role: Option<String>,
    /// Whether their join request is pending.
    pub requested: bool,
}

/// A report of abuse or spam.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Report {
    /// Report id.
    pub id: String,
    /// Who reported.
    pub reporter: String,
    /// The user reported (for a status, its author).
    pub user_id: String,
    /// The status reported; null for a user report.
    pub status_id: Option<String>,
    /// `spam`, `abuse`, `illegal` or `other`.
    pub reason: String,
    /// The reporter's words, or null.
    pub comment: Option<String>,
    /// `open` or `resolved`.
    pub state: String,
    /// When it was filed.
    pub created: f64,
    /// The resolution's action (`none`, `remove_status`, `suspend_user`);
    /// null while open.
    pub action: Option<String>,
    /// The admin who resolved it; null while open.
    pub resolved_by: Option<String>,
    /// When; null while open.
    pub resolved_at: Option<f64>,
    /// The admin's note, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One audit entry: a change an admin made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct AuditAction {
    /// Entry id.
    pub id: String,
    /// When.
    pub at: f64,
    /// The admin's user id.
    pub admin: String,
    /// `dismiss_report`, `remove_status`, `suspend_user` or `unsuspend_user`.
    pub action: String,
    /// The status or user acted on.
    pub target: String,
    /// The report it resolved, else null.
    pub report: Option<String>,
}

/// A conversation as one participant sees it.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Conversation {
    /// Conversation id.
    pub id: String,
    /// `direct` (a pair of users) or `group`.
    pub kind: String,
    /// A group's title; null for a direct conversation.
    pub title: Option<String>,
    /// Everyone in it now, the caller included.
    pub participants: Vec<User>,
    /// When it was started.
    pub created: f64,
    /// When its newest message was sent.
    pub updated: f64,
    /// Its newest message.
    pub last_message: Option<Message>,
    /// Messages by others after the caller's last read.
    pub unread: u64,
}

/// Seconds since the epoch, with microseconds.
pub fn now() -> f64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_micros() as f64) / 1e6
}

/// An event as it is published on the events channel and kept in the replay
/// buffer (without its `id`, which is the buffer entry's id; see
/// `store::events`). The one schema of every event: the store serializes it,
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
        audience: Option<IdString>,
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
        audience: Option<IdString>,
        /// The text before the edit.
        #[serde(default)]
        previous: String,
    },
    /// A status was deleted.
    Delete {
        /// When.
        at: f64,
        /// The deleted status.
        #[serde(with = "id_string")]
        status_id: u64,
        /// Its author.
        #[serde(with = "id_string")]
        uid: u64,
        /// The author's account (or the status's group) is private.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
        /// The group the status was posted in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group_id: Option<IdString>,
    },
    /// `source` started following `target`.
    Follow {
        /// When.
        at: f64,
        /// The follower.
        #[serde(with = "id_string")]
        source: u64,
        /// The followed user.
        #[serde(with = "id_string")]
        target: u64,
    },
    /// `source` stopped following `target`.
    Unfollow {
        /// When.
        at: f64,
        /// The former follower.
        #[serde(with = "id_string")]
        source: u64,
        /// The user no longer followed.
        #[serde(with = "id_string")]
        target: u64,
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
        #[serde(with = "id_string")]
        target: u64,
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
        #[serde(with = "id_string")]
        target: u64,
        /// The reposter's account is private.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
    },
    /// `source` liked `target`'s status `status_id`.
    Like {
        /// When.
        at: f64,
        /// The liked status.
        #[serde(with = "id_string")]
        status_id: u64,
        /// Who liked it.
        #[serde(with = "id_string")]
        source: u64,
        /// Its author.
        #[serde(with = "id_string")]
        target: u64,
        /// The status is a private account's.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
    },
    /// `source` asked to follow the private account `target`.
    FollowRequest {
        /// When.
        at: f64,
        /// Who asks.
        #[serde(with = "id_string")]
        source: u64,
        /// The private account.
        #[serde(with = "id_string")]
        target: u64,
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
        participants: Vec<IdString>,
    },
    /// A notification for `uid`: on their user streams only.
    Notification {
        /// When.
        at: f64,
        /// Whose.
        #[serde(with = "id_string")]
        uid: u64,
        /// The notification.
        notification: Box<Notification>,
    },
    /// A notification of `uid`'s taken away (a like, repost or follow undone).
    NotificationRemoved {
        /// When.
        at: f64,
        /// Whose.
        #[serde(with = "id_string")]
        uid: u64,
        /// The notification.
        notification_id: String,
    },
    /// `source` stopped liking `target`'s status: for the notifier, which
    /// takes the like's notification away. Reaches no stream.
    Unlike {
        /// When.
        at: f64,
        /// The status.
        #[serde(with = "id_string")]
        status_id: u64,
        /// Who liked it.
        #[serde(with = "id_string")]
        source: u64,
        /// Its author.
        #[serde(with = "id_string")]
        target: u64,
    },
    /// `source` asked to join the private group `group_id` (their request
    /// made at `at`): for the notifier, which tells the group's owners and
    /// moderators. Reaches no stream.
    GroupRequest {
        /// When the request was made (the same for every retry of it).
        at: f64,
        /// The group.
        #[serde(with = "id_string")]
        group_id: u64,
        /// Who asks.
        #[serde(with = "id_string")]
        source: u64,
    },
    /// An admin resolved `reporter`'s report: for the notifier, which
    /// tells the reporter. Reaches no stream.
    ReportResolved {
        /// When it was resolved.
        at: f64,
        /// The report.
        report_id: String,
        /// Who reported.
        #[serde(with = "id_string")]
        reporter: u64,
        /// The admin who resolved it.
        #[serde(with = "id_string")]
        admin: u64,
    },
    /// Statuses changed in place (their author's new login): every hub
    /// drops them from its process's cache. Internal: never sent to a client.
    StatusesChanged {
        /// The statuses.
        ids: Vec<IdString>,
    },
    /// An account was suspended (`on`) or its suspension lifted: every hub
    /// ends its streams and stops delivering its events while it lasts.
    /// Internal: never sent to a client.
    Suspended {
        /// The user.
        #[serde(with = "id_string")]
        uid: u64,
        /// Suspended (true) or lifted (false).
        on: bool,
    },
    /// A member left (or was removed from) a private group: every hub ends
    /// their group streams of it. Internal: never sent to a client.
    GroupLeft {
        /// The group.
        #[serde(with = "id_string")]
        group_id: u64,
        /// The former member.
        #[serde(with = "id_string")]
        uid: u64,
    },
    /// A list's members changed, or the list was deleted: every hub
    /// updates its streams of that list (a deleted list's end). Internal:
    /// never sent to a client.
    ListChanged {
        /// The list's owner.
        #[serde(with = "id_string")]
        owner: u64,
        /// The list.
        #[serde(with = "id_string")]
        list_id: u64,
        /// The list's version after the change (it only grows).
        version: u64,
        /// Users who became members.
        #[serde(default)]
        added: Vec<IdString>,
        /// Users who are members no more.
        #[serde(default)]
        removed: Vec<IdString>,
        /// The list was deleted.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        deleted: bool,
    },
    /// A user's filter rules changed: every hub reloads them for that
    /// user's open search streams. Internal: never sent to a client.
    RulesChanged {
        /// Whose rules.
        #[serde(with = "id_string")]
        uid: u64,
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

impl Event {
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

/// A user id that is a JSON string and a number in Rust.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct IdString(#[serde(with = "id_string")] pub u64);

/// Ids are JSON strings in every public shape (they outgrow a double's
/// 53 bits), numbers in Rust.
pub(crate) mod id_string {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(id)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        text.parse().map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids as one process issues them (`store::ids`: ms << 12 | instance
    /// << 6 | sequence), a few a millisecond or one a second apart: about
    /// one in eight trims, and never a long run without one.
    #[test]
    fn one_post_in_eight_trims_the_homes_whatever_the_ids_spacing() {
        for (step_ms, per_ms) in [(1u64, 1u64), (1, 5), (1000, 1), (7, 64)] {
            let ids: Vec<u64> = (0..4000u64)
                .map(|i| ((1 << 40) + (i / per_ms) * step_ms) << 12 | (3 << 6) | (i % per_ms))
                .collect();
            let trims = ids.iter().filter(|&&id| trims_homes(id)).count();
            assert!(
                (400..=600).contains(&trims),
                "{trims} of 4000 trim at {step_ms} ms, {per_ms}"
            );
            let longest = ids
                .split(|&id| trims_homes(id))
                .map(|run| run.len())
                .max()
                .unwrap();
            assert!(longest < 120, "{longest} inserts in a row without a trim");
        }
    }
}
