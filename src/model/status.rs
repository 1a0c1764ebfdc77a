//! The public `status` object, its counts, and the Redis HASH it is
//! stored as.

use super::id::Id;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The public `status` object.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(from = "StatusJson")]
pub struct Status {
    /// Status id.
    #[schema(value_type = String)]
    pub id: Id,
    /// Author id.
    #[schema(value_type = String)]
    pub uid: Id,
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
    #[schema(value_type = Option<String>)]
    pub reply_to: Option<Id>,
    /// Author of the status this one replies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub reply_to_uid: Option<Id>,
    /// Hashtags in the message, without `#`, in order of appearance.
    pub hashtags: Vec<String>,
    /// Logins mentioned with `@` that belong to users, in order of appearance.
    pub mentions: Vec<String>,
    /// The status this one reposts (a repost's own message may be empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub repost_of: Option<Id>,
    /// Author of the reposted status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub repost_of_uid: Option<Id>,
    /// For a reply to a private account's status: that account. Then only
    /// who may see that account's statuses sees the reply (never in JSON).
    #[serde(skip)]
    pub audience: Option<Id>,
    /// The group it was posted in (then it is in that group's timeline
    /// only: no home, profile or user stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub group_id: Option<Id>,
    /// Whether that group is private: then only its members see it
    /// (never in JSON).
    #[serde(skip)]
    pub group_private: bool,
    /// When it was last edited (absent if never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_at: Option<f64>,
    /// Likes, reposts and replies it has (read at the time of the answer;
    /// always the last fields, see [`store::cache`](crate::store::cache)).
    #[serde(flatten)]
    pub counts: Counts,
}

/// A status as its JSON is read: the counts inline. Deserializing `Status`
/// itself would go through its `flatten`ed counts, which makes serde buffer
/// every field of the object before reading it (a history catch-up reads
/// one of these per event).
#[derive(Deserialize)]
struct StatusJson {
    id: Id,
    uid: Id,
    login: String,
    message: String,
    posted: f64,
    lat: Option<f64>,
    lon: Option<f64>,
    reply_to: Option<Id>,
    reply_to_uid: Option<Id>,
    hashtags: Vec<String>,
    mentions: Vec<String>,
    #[serde(default)]
    repost_of: Option<Id>,
    #[serde(default)]
    repost_of_uid: Option<Id>,
    #[serde(default)]
    group_id: Option<Id>,
    #[serde(default)]
    edited_at: Option<f64>,
    #[serde(default)]
    likes: u64,
    #[serde(default)]
    reposts: u64,
    #[serde(default)]
    replies: u64,
}

impl From<StatusJson> for Status {
    fn from(j: StatusJson) -> Status {
        Status {
            id: j.id,
            uid: j.uid,
            login: j.login,
            message: j.message,
            posted: j.posted,
            lat: j.lat,
            lon: j.lon,
            reply_to: j.reply_to,
            reply_to_uid: j.reply_to_uid,
            hashtags: j.hashtags,
            mentions: j.mentions,
            repost_of: j.repost_of,
            repost_of_uid: j.repost_of_uid,
            audience: None,
            group_id: j.group_id,
            group_private: false,
            edited_at: j.edited_at,
            counts: Counts {
                likes: j.likes,
                reposts: j.reposts,
                replies: j.replies,
            },
        }
    }
}

/// One version of a status's text: as posted, or as an edit left it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Version {
    /// The text.
    pub message: String,
    /// Its hashtags, lowercased, without `#`.
    pub hashtags: Vec<String>,
    /// The logins it mentions.
    pub mentions: Vec<String>,
    /// When it was posted or edited (seconds since the epoch).
    pub at: f64,
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
        self.reply_to.map(Id::get)
    }

    /// The id of the status this one reposts.
    pub fn original_id(&self) -> Option<u64> {
        self.repost_of.map(Id::get)
    }

    /// The HASH fields a status is stored as.
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        let mut f = vec![
            ("uid", self.uid.to_string()),
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
            f.push(("reply_to", r.to_string()));
        }
        if let Some(r) = &self.reply_to_uid {
            f.push(("reply_to_uid", r.to_string()));
        }
        if let Some(r) = &self.repost_of {
            f.push(("repost_of", r.to_string()));
        }
        if let Some(r) = &self.repost_of_uid {
            f.push(("repost_of_uid", r.to_string()));
        }
        if let Some(a) = &self.audience {
            f.push(("audience", a.to_string()));
        }
        if let Some(g) = &self.group_id {
            f.push(("group_id", g.to_string()));
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
        let id = |k: &str| h.get(k).and_then(|v| v.parse().ok());
        Some(Status {
            id: h.get("id")?.parse().ok()?,
            uid: h.get("uid")?.parse().ok()?,
            login: h.get("login").cloned().unwrap_or_default(),
            message: h.get("message").cloned().unwrap_or_default(),
            posted: h.get("posted").and_then(|v| v.parse().ok()).unwrap_or(0.0),
            lat: h.get("lat").and_then(|v| v.parse().ok()),
            lon: h.get("lon").and_then(|v| v.parse().ok()),
            reply_to: id("reply_to"),
            reply_to_uid: id("reply_to_uid"),
            hashtags: list("hashtags"),
            mentions: list("mentions"),
            repost_of: id("repost_of"),
            repost_of_uid: id("repost_of_uid"),
            audience: id("audience"),
            group_id: id("group_id"),
            group_private: h.get("group_private").is_some_and(|v| v == "1"),
            edited_at: h.get("edited_at").and_then(|v| v.parse().ok()),
            counts: Counts::from_hash(h),
        })
    }
}
