//! The streams: firehose, sample, filter, user and the multiplexed WebSocket.
//!
//! Every stream path serves Server-Sent Events by default, NDJSON with
//! `Accept: application/x-ndjson`, and WebSocket on an upgrade request. The
//! transport code only formats what the connection's [`Feed`] hands out;
//! matching happens once per event in the hub. The bytes of plain streams
//! are `stream::wire`'s; the WebSocket protocol is [`ws`].

mod ws;

use crate::app::AppState;
use crate::auth::{AuthUser, StreamUser, SCOPE_FIREHOSE};
use crate::error::{ApiError, ApiResult};
use crate::metrics::{global as metrics, inc};
use crate::stream::feed::{Replay, MAX_COUNT};
use crate::stream::limits::StreamGuard;
use crate::stream::wire::{self, Encoding};
use crate::stream::{EventId, Feed};
use axum::body::{Body, Bytes};
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::BytesMut;
use firehose_filters::{parse_filter, parse_rate, Rule};
use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/stream/firehose", get(firehose))
        .route("/api/v1/stream/sample", get(sample))
        .route("/api/v1/stream/filter", get(filter))
        .route("/api/v1/stream/user", get(user))
        .route("/api/v1/stream", get(ws::multiplexed))
}

#[derive(Clone, Copy)]
enum Kind {
    Firehose,
    Sample,
    Filter,
    User,
}

enum Transport {
    Sse,
    Ndjson,
    Ws(WebSocketUpgrade),
}

impl Transport {
    fn name(&self) -> &'static str {
        match self {
            Transport::Sse => "sse",
            Transport::Ndjson => "ndjson",
            Transport::Ws(_) => "websocket",
        }
    }
}

/// `GET /api/v1/stream/firehose`: every public event (scope `firehose`).
pub async fn firehose(State(state): State<AppState>, req: Request) -> Response {
    open(state, req, Kind::Firehose)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// `GET /api/v1/stream/sample?rate=`: the same sample of public statuses for every client at one rate.
pub async fn sample(State(state): State<AppState>, req: Request) -> Response {
    open(state, req, Kind::Sample)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// `GET /api/v1/stream/filter?follow=&track=&locations=`.
pub async fn filter(State(state): State<AppState>, req: Request) -> Response {
    open(state, req, Kind::Filter)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// `GET /api/v1/stream/user`: what the caller's home timeline gets, plus follows of and by them.
pub async fn user(State(state): State<AppState>, req: Request) -> Response {
    open(state, req, Kind::User)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

fn wants_ndjson(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/x-ndjson"))
}

fn replay_of(headers: &HeaderMap, q: &HashMap<String, String>) -> ApiResult<Replay> {
    // The header wins: a browser's EventSource sends it, newer than whatever
    // last_event_id the page put in the URL when it first connected.
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| q.get("last_event_id").cloned());
    if let Some(last) = last.filter(|s| !s.trim().is_empty()) {
        return Ok(EventId::parse(last.trim()).map_or(Replay::Unservable, Replay::After));
    }
    match q.get("count") {
        None => Ok(Replay::None),
        Some(c) => match c.parse::<usize>() {
            Ok(0) => Ok(Replay::None),
            Ok(n) if n <= MAX_COUNT => Ok(Replay::Newest(n)),
            _ => Err(ApiError::invalid(
                "invalid_count",
                format!("count must be a whole number from 0 to {MAX_COUNT}."),
            )),
        },
    }
}

fn filter_error(e: firehose_filters::ParseError) -> ApiError {
    ApiError::invalid("invalid_filter", e.to_string())
}

async fn rule_of(
    state: &AppState,
    auth: &AuthUser,
    kind: Kind,
    q: &HashMap<String, String>,
) -> ApiResult<(&'static str, Rule)> {
    Ok(match kind {
        Kind::Firehose => {
            auth.require(SCOPE_FIREHOSE)?;
            ("firehose", Rule::Firehose)
        }
        Kind::Sample => {
            let rate = parse_rate(q.get("rate").map(String::as_str)).map_err(filter_error)?;
            ("sample", Rule::Sample { rate })
        }
        Kind::Filter => {
            let spec = parse_filter(
                q.get("follow").map(String::as_str),
                q.get("track").map(String::as_str),
                q.get("locations").map(String::as_str),
            )
            .map_err(filter_error)?;
            ("filter", Rule::Filter(spec))
        }
        Kind::User => {
            let following = state.store.following_ids(auth.uid).await?;
            (
                "user",
                Rule::User {
                    uid: auth.uid,
                    following,
                },
            )
        }
    })
}

/// A stream request accepted: its feed (already subscribed, replay queued)
/// and its slot in the per-user limit.
pub struct Opened {
    /// The connection's feed.
    pub feed: Feed,
    /// Released when the stream ends.
    pub guard: StreamGuard,
}

/// Authenticates, parses the filter and resume parameters, takes a stream
/// slot and subscribes: everything before the first byte of the response.
async fn prepare(
    state: &AppState,
    parts: &mut Parts,
    kind: Kind,
    transport: &'static str,
) -> ApiResult<Opened> {
    let StreamUser(auth) = StreamUser::from_request_parts(parts, state).await?;
    let Query(q): Query<HashMap<String, String>> = Query::try_from_uri(&parts.uri)
        .map_err(|_| ApiError::invalid("invalid_query", "The query string is malformed."))?;
    let (name, rule) = rule_of(state, &auth, kind, &q).await?;
    let replay = replay_of(&parts.headers, &q)?;
    let guard = state
        .limits
        .acquire(auth.uid, state.cfg.max_streams_per_user, name, transport)
        .await?;
    let mut feed = new_feed(state, &auth);
    feed.subscribe(name, rule, replay).await?;
    tracing::info!(uid = auth.uid, stream = name, transport, "stream opened");
    Ok(Opened { feed, guard })
}

/// For a plain (non-WebSocket) GET of a stream path: the opened stream and
/// whether it is SSE (else NDJSON). `None` when the request is not one.
/// Used by the server's raw stream path, which writes the response itself.
pub async fn open_plain(
    state: &AppState,
    parts: &mut Parts,
) -> Option<ApiResult<(Opened, Encoding)>> {
    let kind = match parts.uri.path() {
        "/api/v1/stream/firehose" => Kind::Firehose,
        "/api/v1/stream/sample" => Kind::Sample,
        "/api/v1/stream/filter" => Kind::Filter,
        "/api/v1/stream/user" => Kind::User,
        _ => return None,
    };
    if parts.method != axum::http::Method::GET || is_upgrade(&parts.headers) {
        return None;
    }
    let (encoding, transport) = if wants_ndjson(&parts.headers) {
        (Encoding::Ndjson, "ndjson")
    } else {
        (Encoding::Sse, "sse")
    };
    Some(
        prepare(state, parts, kind, transport)
            .await
            .map(|o| (o, encoding)),
    )
}

async fn open(state: AppState, req: Request, kind: Kind) -> ApiResult<Response> {
    let (mut parts, _) = req.into_parts();
    let transport = if is_upgrade(&parts.headers) {
        let up = WebSocketUpgrade::from_request_parts(&mut parts, &state)
            .await
            .map_err(|e| ApiError::invalid("invalid_upgrade", e.body_text()))?;
        Transport::Ws(up)
    } else if wants_ndjson(&parts.headers) {
        Transport::Ndjson
    } else {
        Transport::Sse
    };
    let Opened { feed, guard } = prepare(&state, &mut parts, kind, transport.name()).await?;
    let keepalive = Duration::from_secs(state.cfg.keepalive_secs.max(1));
    Ok(match transport {
        Transport::Sse => body_response(feed, guard, Encoding::Sse),
        Transport::Ndjson => body_response(feed, guard, Encoding::Ndjson),
        Transport::Ws(up) => up
            .max_message_size(1 << 20)
            .on_upgrade(move |socket| ws::ws_loop(socket, feed, guard, None, keepalive)),
    })
}

fn new_feed(state: &AppState, auth: &AuthUser) -> Feed {
    Feed::new(
        state.hub.clone(),
        state.store.clone(),
        auth.uid,
        auth.sid.clone(),
        auth.expires,
        state.cfg.stream_queue,
        Duration::from_secs(state.cfg.keepalive_secs.max(1)),
        state.shutdown.clone(),
    )
}

fn body_response(feed: Feed, guard: StreamGuard, encoding: Encoding) -> Response {
    let first = (!encoding.preamble().is_empty())
        .then(|| Bytes::from_static(encoding.preamble().as_bytes()));
    let stream = futures::stream::unfold(
        (feed, guard, first),
        move |(mut feed, guard, first)| async move {
            if let Some(first) = first {
                return Some((Ok::<Bytes, Infallible>(first), (feed, guard, None)));
            }
            let out = feed.next().await?;
            let mut chunks = Vec::new();
            let n = wire::batch(&mut feed, &out, encoding, &mut chunks);
            inc(&metrics().events_sent, n);
            let chunk = if chunks.len() == 1 {
                chunks.pop().unwrap_or_default()
            } else {
                let mut buf = BytesMut::with_capacity(chunks.iter().map(Bytes::len).sum());
                for c in &chunks {
                    buf.extend_from_slice(c);
                }
                buf.freeze()
            };
            Some((Ok(chunk), (feed, guard, None)))
        },
    );
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(encoding.content_type()),
    );
    for (name, value) in wire::HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
