//! The public `user` object and the Redis HASH it is read from.

use super::id::Id;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The public `user` object. Email and password hash are never here.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct User {
    /// User id (a string of digits).
    #[schema(value_type = String)]
    pub id: Id,
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
            id: h.get("id")?.parse().ok()?,
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
