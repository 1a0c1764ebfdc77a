//! The WebSocket protocol of the streams: a stream path upgraded (the same
//! JSON as SSE data, one text message per event) and the multiplexed socket
//! at `/api/v1/stream`, whose clients subscribe and unsubscribe named
//! streams with control messages, rate-limited; pings and the pong deadline.

use super::{is_upgrade, new_feed};
use crate::app::AppState;
use crate::auth::{AuthUser, StreamUser, SCOPE_FIREHOSE};
use crate::error::ApiError;
use crate::http::JsonId;
use crate::metrics::{global as metrics, inc};
use crate::stream::feed::{Replay, MAX_COUNT};
use crate::stream::frame::control;
use crate::stream::limits::StreamGuard;
use crate::stream::wire;
use crate::stream::{EventId, Feed, Out};
use axum::body::Bytes;
use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request, State};
use axum::response::{IntoResponse, Response};
use firehose_filters::{parse_rate, FilterSpec, Rule};
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::json;
use std::time::{Duration, Instant};

/// `GET /api/v1/stream` (WebSocket): subscribe and unsubscribe with control messages.
pub async fn multiplexed(State(state): State<AppState>, req: Request) -> Response {
    let run = async {
        let (mut parts, _) = req.into_parts();
        let StreamUser(auth) = StreamUser::from_request_parts(&mut parts, &state).await?;
        if !is_upgrade(&parts.headers) {
            return Err(ApiError::invalid(
                "upgrade_required",
                "This endpoint speaks WebSocket only.",
            ));
        }
        let up = WebSocketUpgrade::from_request_parts(&mut parts, &state)
            .await
            .map_err(|e| ApiError::invalid("invalid_upgrade", e.body_text()))?;
        let guard = state
            .limits
            .acquire(
                auth.uid,
                state.cfg.max_streams_per_user,
                "multiplexed",
                "websocket",
            )
            .await?;
        let feed = new_feed(&state, &auth);
        let keepalive = Duration::from_secs(state.cfg.keepalive_secs.max(1));
        Ok(up
            .max_message_size(1 << 20)
            .on_upgrade(move |socket| ws_loop(socket, feed, guard, Some((state, auth)), keepalive)))
    };
    run.await.unwrap_or_else(|e: ApiError| e.into_response())
}

/// A control message of the multiplexed WebSocket.
#[derive(Debug, Deserialize)]
struct ControlMsg {
    #[serde(rename = "type")]
    kind: String,
    stream: Option<String>,
    #[serde(default)]
    follow: Vec<JsonId>,
    #[serde(default)]
    track: Vec<String>,
    #[serde(default)]
    locations: Vec<Loc>,
    rate: Option<f64>,
    last_event_id: Option<String>,
    count: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Loc {
    Box(Vec<f64>),
    Coord(f64),
}

fn ws_error(code: &str, message: String, stream: Option<&str>) -> String {
    control(
        "error",
        json!({"code": code, "message": message, "stream": stream}),
    )
}

fn stream_name(s: &str) -> Option<&'static str> {
    ["filter", "user", "sample", "firehose"]
        .into_iter()
        .find(|n| *n == s)
}

async fn handle_control(feed: &mut Feed, state: &AppState, auth: &AuthUser, text: &str) {
    let msg: ControlMsg = match serde_json::from_str(text) {
        Ok(m) => m,
        Err(e) => {
            feed.push_control(ws_error(
                "invalid_message",
                format!("The control message is not valid JSON: {e}."),
                None,
            ));
            return;
        }
    };
    let Some(name) = msg.stream.as_deref().and_then(stream_name) else {
        feed.push_control(ws_error(
            "invalid_stream",
            "stream must be one of filter, user, sample, firehose.".into(),
            msg.stream.as_deref(),
        ));
        return;
    };
    match msg.kind.as_str() {
        "subscribe" => {
            let rule = match name {
                "firehose" => {
                    if let Err(e) = auth.require(SCOPE_FIREHOSE) {
                        feed.push_control(ws_error(e.code, e.message, Some(name)));
                        return;
                    }
                    Ok(Rule::Firehose)
                }
                "sample" => parse_rate(msg.rate.map(|r| r.to_string()).as_deref())
                    .map(|rate| Rule::Sample { rate }),
                "user" => match state.store.following_ids(auth.uid).await {
                    Ok(following) => Ok(Rule::User {
                        uid: auth.uid,
                        following,
                    }),
                    Err(_) => {
                        feed.push_control(ws_error(
                            "unavailable",
                            "The data store is unreachable; try again.".into(),
                            Some(name),
                        ));
                        return;
                    }
                },
                _ => {
                    let ids: Vec<String> = msg.follow.iter().map(JsonId::raw).collect();
                    let mut coords = Vec::new();
                    let mut bad_box = false;
                    for loc in &msg.locations {
                        match loc {
                            Loc::Box(b) if b.len() == 4 => coords.extend_from_slice(b),
                            Loc::Box(_) => bad_box = true,
                            Loc::Coord(c) => coords.push(*c),
                        }
                    }
                    if bad_box {
                        feed.push_control(ws_error(
                            "invalid_filter",
                            "locations: each box is four numbers sw_lon,sw_lat,ne_lon,ne_lat"
                                .into(),
                            Some(name),
                        ));
                        return;
                    }
                    FilterSpec::from_parts(
                        ids.iter().map(String::as_str),
                        msg.track.iter().map(String::as_str),
                        &coords,
                    )
                    .map(Rule::Filter)
                }
            };
            let rule = match rule {
                Ok(r) => r,
                Err(e) => {
                    feed.push_control(ws_error("invalid_filter", e.to_string(), Some(name)));
                    return;
                }
            };
            let replay = match (msg.last_event_id.as_deref().map(EventId::parse), msg.count) {
                (Some(Some(id)), _) => Replay::After(id),
                (Some(None), _) => Replay::Unservable,
                (None, Some(n)) if n > MAX_COUNT => {
                    feed.push_control(ws_error(
                        "invalid_count",
                        format!("count must be at most {MAX_COUNT}."),
                        Some(name),
                    ));
                    return;
                }
                (None, Some(n)) if n > 0 => Replay::Newest(n),
                _ => Replay::None,
            };
            // Confirm first, so the replayed events follow the confirmation.
            feed.push_control(control("subscribed", json!({"stream": name})));
            if feed.subscribe(name, rule, replay).await.is_err() {
                feed.unsubscribe(name);
                feed.push_control(ws_error(
                    "unavailable",
                    "The data store is unreachable; try again.".into(),
                    Some(name),
                ));
            }
        }
        "unsubscribe" => {
            if feed.unsubscribe(name) {
                feed.push_control(control("unsubscribed", json!({"stream": name})));
            } else {
                feed.push_control(ws_error(
                    "not_subscribed",
                    format!("There is no {name} subscription."),
                    Some(name),
                ));
            }
        }
        other => feed.push_control(ws_error(
            "invalid_message",
            format!("Unknown control message type {other:?}."),
            None,
        )),
    }
}

/// The text frame for one output, or `None` for a keep-alive.
fn ws_text(out: &Out, multiplexed: bool) -> Option<Utf8Bytes> {
    match out {
        Out::Event(f, stream) if multiplexed => {
            let json = std::str::from_utf8(&f.json).unwrap_or("{}");
            let rest = json.strip_prefix('{').unwrap_or(json);
            Some(Utf8Bytes::from(format!("{{\"stream\":\"{stream}\",{rest}")))
        }
        Out::Event(f, _) => Utf8Bytes::try_from(f.json.clone()).ok(),
        Out::Control(json) => Some(Utf8Bytes::from(json.to_string())),
        Out::Keepalive => None,
    }
}

/// Control messages a multiplexed socket may send a second (bursts of twice
/// that); beyond it they are ignored with an `error` event, so a client
/// cannot keep the server replaying and re-registering.
const CONTROL_PER_SEC: u32 = 10;

pub(super) async fn ws_loop(
    socket: WebSocket,
    mut feed: Feed,
    _guard: StreamGuard,
    control_of: Option<(AppState, AuthUser)>,
    keepalive: Duration,
) {
    let multiplexed = control_of.is_some();
    let (mut tx, mut rx) = socket.split();
    let mut last_pong = Instant::now();
    let mut control_budget =
        crate::limits::Bucket::new(CONTROL_PER_SEC as f64, CONTROL_PER_SEC as f64 * 2.0);
    loop {
        tokio::select! {
            out = feed.next() => {
                let Some(out) = out else { break };
                if let Out::Keepalive = out {
                    // A pong is due after each ping; two missed ones close the socket.
                    let limit = keepalive * 3;
                    if last_pong.elapsed() > limit {
                        let bye = feed.end("timeout", "No pong arrived in time.");
                        if let Some(text) = ws_text(&bye, multiplexed) {
                            let _ = tx.send(Message::Text(text)).await;
                        }
                        break;
                    }
                    if tx.send(Message::Ping(Bytes::from_static(b"fh"))).await.is_err() {
                        break;
                    }
                    continue;
                }
                let mut n = u64::from(matches!(out, Out::Event(..)));
                let mut ok = match ws_text(&out, multiplexed) {
                    Some(text) => tx.feed(Message::Text(text)).await.is_ok(),
                    None => true,
                };
                let mut batched = 0;
                while ok && batched < wire::MAX_BATCH {
                    let Some(out) = feed.try_next() else { break };
                    batched += 1;
                    n += u64::from(matches!(out, Out::Event(..)));
                    if let Some(text) = ws_text(&out, multiplexed) {
                        ok = tx.feed(Message::Text(text)).await.is_ok();
                    }
                }
                inc(&metrics().events_sent, n);
                if !ok || tx.flush().await.is_err() {
                    break;
                }
            }
            msg = rx.next() => match msg {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                Some(Ok(Message::Pong(_))) => last_pong = Instant::now(),
                Some(Ok(Message::Text(text))) => {
                    last_pong = Instant::now();
                    if let Some((state, auth)) = &control_of {
                        if control_budget.take() {
                            handle_control(&mut feed, state, auth, text.as_str()).await;
                        } else {
                            feed.push_control(ws_error(
                                "rate_limited",
                                format!("At most {CONTROL_PER_SEC} control messages a second; this one was ignored."),
                                None,
                            ));
                        }
                    }
                }
                Some(Ok(_)) => last_pong = Instant::now(),
            },
        }
    }
    if feed.is_ended() {
        // The closing handshake: send Close, then let the peer answer (and
        // read what was sent before it) for a moment before dropping the socket.
        let _ = tx.send(Message::Close(None)).await;
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while let Some(Ok(msg)) = rx.next().await {
                if matches!(msg, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }
}
