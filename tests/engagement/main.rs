//! The social features around statuses: likes, mentions, hashtags,
//! trending, replies and conversations, each with its privacy rules.

#[path = "../common/mod.rs"]
mod common;
mod likes;
mod privacy;
mod reposts;
mod trends;

use common::{ids, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// Makes the account of `token` private.
async fn make_private(app: &TestApp, token: &str) {
    let (status, _) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(token),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}
