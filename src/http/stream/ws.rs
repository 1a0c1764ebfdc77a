//! The WebSocket protocol of the streams: a stream path upgraded (the same
//! JSON as SSE data, one text message per event) and the multiplexed socket
//! at `/api/v1/stream`, whose clients subscribe and unsubscribe named
//! streams with control messages, rate-limited; pings and the pong deadline.

use super::open::{is_upgrade, keepalive, new_feed, Ask, Kind};
use crate::auth::{AuthUser, StreamUser};
use crate::error::ApiError;
use crate::http::JsonId;
use crate::metrics::{global as metrics, inc};
use crate::state::AppState;
use crate::stream::frame::Control;
use crate::stream::limits::StreamGuard;
use crate::stream::wire::{self, Transport};
use crate::stream::{Feed, Out};
use axum::body::Bytes;
use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request, State};
use axum::response::{IntoResponse, Response};
use firehose_filters::box_shape_error;
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use std::time::Duration;
use tokio::time::Instant;

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
                Transport::Multiplexed.name(),
            )
            .await?;
        let feed = new_feed(&state, &auth);
        let keepalive = keepalive(&state);
        Ok(up
            .max_message_size(MAX_MESSAGE)
            .read_buffer_size(READ_BUFFER)
            .on_upgrade(move |socket| ws_loop(socket, feed, guard, Some((state, auth)), keepalive)))
    };
    run.await.unwrap_or_else(|e: ApiError| e.into_response())
}

/// A control message of the multiplexed WebSocket. Its stream parameters
/// are the query string's, as JSON: arrays instead of comma lists.
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
    rate: Option<Scalar>,
    last_event_id: Option<String>,
    count: Option<Scalar>,
}

/// A box (`[sw_lon, sw_lat, ne_lon, ne_lat]`) or one number of a flat list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Loc {
    Box(Vec<f64>),
    Coord(f64),
}

/// A number, or a string holding one: read as the query string's text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Number(serde_json::Number),
    Text(String),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Scalar::Number(n) => n.to_string(),
            Scalar::Text(s) => s.clone(),
        }
    }
}

impl ControlMsg {
    /// The stream parameters, read as [`Ask::from_query`] reads a URL's.
    fn ask(&self) -> Ask {
        let mut coords = Vec::new();
        let mut shaped = true;
        for loc in &self.locations {
            match loc {
                Loc::Box(b) => {
                    shaped &= b.len() == 4;
                    coords.extend_from_slice(b);
                }
                Loc::Coord(c) => coords.push(*c),
            }
        }
        Ask {
            follow: self.follow.iter().map(JsonId::raw).collect(),
            track: self.track.clone(),
            locations: if shaped {
                Ok(coords)
            } else {
                Err(box_shape_error())
            },
            rate: self.rate.as_ref().map(Scalar::text),
            last_event_id: self.last_event_id.clone(),
            count: self.count.as_ref().map(Scalar::text),
        }
    }
}

fn ws_error(code: &'static str, message: String, stream: Option<&str>) -> Control {
    Control::Error {
        code,
        message,
        stream: stream.map(str::to_string),
    }
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
    let Some(kind) = msg.stream.as_deref().and_then(Kind::named) else {
        feed.push_control(ws_error(
            "invalid_stream",
            "stream must be one of filter, user, sample, firehose.".into(),
            msg.stream.as_deref(),
        ));
        return;
    };
    let name = kind.name();
    match msg.kind.as_str() {
        "subscribe" => {
            let (rule, replay) = match msg.ask().resolve(state, auth, kind).await {
                Ok(asked) => asked,
                Err(e) => {
                    feed.push_control(ws_error(e.code, e.message, Some(name)));
                    return;
                }
            };
            // Confirm first, so the replayed events follow the confirmation.
            feed.push_control(Control::Subscribed { stream: name });
            if feed.subscribe(name, rule, replay).await.is_err() {
                feed.unsubscribe(name);
                let e = ApiError::unavailable();
                feed.push_control(ws_error(e.code, e.message, Some(name)));
            }
        }
        "unsubscribe" => {
            if feed.unsubscribe(name) {
                feed.push_control(Control::Unsubscribed { stream: name });
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

/// A text message of encoded output (JSON, so valid UTF-8).
fn text(bytes: Bytes) -> Option<Message> {
    Utf8Bytes::try_from(bytes).ok().map(Message::Text)
}

/// The largest message a client may send (a subscribe with 5,000 follow
/// ids and 400 phrases fits).
pub(super) const MAX_MESSAGE: usize = 1 << 20;

/// What a socket's read buffer starts with. Clients send little (control
/// messages, pongs), and the buffer grows for a larger message (a test
/// sends a 60 KB subscribe), so an idle socket holds 512 bytes here instead
/// of tungstenite's default 128 KiB (idle memory per socket: 145 → 12–14 KiB).
pub(super) const READ_BUFFER: usize = 512;

/// Whether the peer has answered no ping for three keep-alive periods
/// (pings go out every period, so two were missed).
fn pong_overdue(last_pong: Instant, keepalive: Duration) -> bool {
    last_pong.elapsed() > keepalive * 3
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
    let transport = match control_of {
        Some(_) => Transport::Multiplexed,
        None => Transport::WebSocket,
    };
    let (mut tx, mut rx) = socket.split();
    let mut last_pong = Instant::now();
    let mut control_budget =
        crate::limits::Bucket::new(CONTROL_PER_SEC as f64, CONTROL_PER_SEC as f64 * 2.0);
    let mut chunks = Vec::new();
    loop {
        tokio::select! {
            out = feed.next() => {
                let Some(out) = out else { break };
                if let Out::Keepalive = out {
                    // A pong is due after each ping; two missed ones close the socket.
                    if pong_overdue(last_pong, keepalive) {
                        let bye = feed.end("timeout", "No pong arrived in time.");
                        if let Some(msg) = transport.encode(&bye).and_then(text) {
                            let _ = tx.send(msg).await;
                        }
                        break;
                    }
                    if tx.send(Message::Ping(Bytes::from_static(b"fh"))).await.is_err() {
                        break;
                    }
                    continue;
                }
                let n = wire::batch(&mut feed, &out, transport, &mut chunks);
                let mut ok = true;
                for msg in chunks.drain(..).filter_map(text) {
                    if ok {
                        ok = tx.feed(msg).await.is_ok();
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
                            // Boxed: subscribing (Redis round trips, the
                            // replay) is a large future, which inline would
                            // size every socket's task for its whole life.
                            Box::pin(handle_control(&mut feed, state, auth, text.as_str())).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Pings go out every keep-alive period; the socket closes once three
    /// periods pass without a pong (two pings unanswered), not before.
    #[tokio::test(start_paused = true)]
    async fn a_pong_is_overdue_only_after_three_periods_without_one() {
        let period = Duration::from_secs(20);
        let last_pong = Instant::now();
        tokio::time::advance(period * 2).await;
        assert!(!pong_overdue(last_pong, period));
        tokio::time::advance(period).await;
        assert!(!pong_overdue(last_pong, period), "exactly three periods");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(pong_overdue(last_pong, period));
    }
}
