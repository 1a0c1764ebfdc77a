//! The streams: firehose, sample, filter, user and the multiplexed WebSocket.
//!
//! Every stream path serves Server-Sent Events by default, NDJSON with
//! `Accept: application/x-ndjson`, and WebSocket on an upgrade request. The
//! transport code only formats what the connection's [`Feed`] hands out;
//! matching happens once per event in the hub. The bytes of plain streams
//! are `stream::wire`'s; the WebSocket protocol is [`ws`].

pub mod open;
mod ws;

use crate::error::{ApiError, ApiResult};
use crate::metrics::{global as metrics, inc};
use crate::state::AppState;
use crate::stream::limits::StreamGuard;
use crate::stream::wire::{self, Transport};
use crate::stream::Feed;
use axum::body::{Body, Bytes};
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use open::{is_upgrade, keepalive, plain_transport, prepare, Kind, Opened};
use std::convert::Infallible;

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/stream/firehose", get(firehose))
        .route("/api/v1/stream/sample", get(sample))
        .route("/api/v1/stream/filter", get(filter))
        .route("/api/v1/stream/user", get(user))
        .route("/api/v1/stream", get(ws::multiplexed))
}

/// `GET /api/v1/stream/firehose`: every public event (scope `firehose`).
pub async fn firehose(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::Firehose).await
}

/// `GET /api/v1/stream/sample?rate=`: the same sample of public statuses for every client at one rate.
pub async fn sample(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::Sample).await
}

/// `GET /api/v1/stream/filter?follow=&track=&locations=`.
pub async fn filter(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::Filter).await
}

/// `GET /api/v1/stream/user`: what the caller's home timeline gets, plus follows of and by them.
pub async fn user(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::User).await
}

async fn serve(state: AppState, req: Request, kind: Kind) -> Response {
    open(state, req, kind)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn open(state: AppState, req: Request, kind: Kind) -> ApiResult<Response> {
    let (mut parts, _) = req.into_parts();
    let upgrade = if is_upgrade(&parts.headers) {
        let up = WebSocketUpgrade::from_request_parts(&mut parts, &state)
            .await
            .map_err(|e| ApiError::invalid("invalid_upgrade", e.body_text()))?;
        Some(up)
    } else {
        None
    };
    let transport = match upgrade {
        Some(_) => Transport::WebSocket,
        None => plain_transport(&parts.headers),
    };
    let Opened { feed, guard } = prepare(&state, &mut parts, kind, transport).await?;
    let keepalive = keepalive(&state);
    Ok(match upgrade {
        None => body_response(feed, guard, transport),
        Some(up) => up
            .max_message_size(ws::MAX_MESSAGE)
            .read_buffer_size(ws::READ_BUFFER)
            .on_upgrade(move |socket| ws::ws_loop(socket, feed, guard, None, keepalive)),
    })
}

/// A plain stream served through hyper (a stream request that arrived on
/// an already-used keep-alive connection): the same batches as the raw path.
fn body_response(feed: Feed, guard: StreamGuard, transport: Transport) -> Response {
    let first = (!transport.preamble().is_empty())
        .then(|| Bytes::from_static(transport.preamble().as_bytes()));
    let stream = futures::stream::unfold(
        (feed, guard, first, Vec::new()),
        move |(mut feed, guard, first, mut chunks)| async move {
            if let Some(first) = first {
                return Some((Ok::<Bytes, Infallible>(first), (feed, guard, None, chunks)));
            }
            let out = feed.next().await?;
            let n = wire::batch(&mut feed, &out, transport, &mut chunks);
            inc(&metrics().events_sent, n);
            let chunk = wire::concat(&mut chunks);
            chunks.clear();
            Some((Ok(chunk), (feed, guard, None, chunks)))
        },
    );
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(transport.content_type()),
    );
    for (name, value) in wire::HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
