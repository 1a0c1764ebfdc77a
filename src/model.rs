//! The public JSON shapes of the contract: `user` and `status`.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Home timelines keep this many newest entries.
pub const HOME_CAP: usize = 1000;

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
}

impl User {
    /// Builds a user from its Redis HASH; `None` when the HASH is empty.
    pub fn from_hash(h: &HashMap<String, String>) -> Option<User> {
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
            counts: Counts::from_hash(h),
        })
    }
}

/// Seconds since the epoch, with microseconds.
pub fn now() -> f64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_micros() as f64) / 1e6
}
