//! The streams over real SSE, NDJSON and WebSocket connections against a
//! real Redis: each stream and filter, resume, slow clients, auth, limits.

mod backpressure;
#[path = "../common/mod.rs"]
mod common;
mod edits;
mod framing;
mod history;
mod history_now;
mod kinds;
mod lagging;
mod lifecycle;
mod lists;
mod partitions;
mod privacy;
mod refresh;
mod resume;
mod rules;
mod seen_now;
mod shards;
mod shared_history;
mod websocket;
mod zstd;

use common::{ws_connect, ws_next, ws_send, Msg, StreamClient, TestApp, Unchunk};
use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use websocket::read_head;

const SHORT: Duration = Duration::from_millis(400);

/// A user with a firehose token and an ordinary token.
async fn firehose_user(app: &TestApp, login: &str) -> (String, String, String) {
    let (id, token) = app.user(login).await;
    let fh = app
        .operator_token(&id, &["read", "write", "firehose"])
        .await;
    (id, token, fh)
}

fn status_message(m: &Msg) -> &str {
    m.data["status"]["message"].as_str().unwrap_or("")
}
