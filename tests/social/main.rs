//! The social core over real HTTP against a real Redis, one module per
//! resource as in `src/http/`: users, sessions, statuses, timelines,
//! follows and fan-out, and the service as a whole (failures, errors,
//! shutdown).

#[path = "../common/mod.rs"]
mod common;

mod account;
mod bookmarks;
mod conversations;
mod edits;
mod follows;
mod groups;
mod lists;
mod moderation;
mod notifications;
mod relations;
mod service;
mod sessions;
mod statuses;
mod timelines;
mod users;

use reqwest::StatusCode;
use serde_json::Value;

/// Asserts an error answer: its status and the contract's error shape.
fn assert_error(status: StatusCode, body: &Value, expected: StatusCode) {
    assert_eq!(status, expected, "body: {body}");
    assert!(body["error"]["code"].is_string(), "error shape: {body}");
    assert!(body["error"]["message"].is_string(), "error shape: {body}");
}
