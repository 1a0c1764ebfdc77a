//! The streams: firehose, sample, filter, user and the multiplexed WebSocket.
//!
//! Every stream path serves Server-Sent Events by default, NDJSON with
//! `Accept: application/x-ndjson`, and WebSocket on an upgrade request. The
//! transport code only formats what the connection's [`Feed`] hands out;
//! matching happens once per event in the hub. The bytes of plain streams
//! are `stream::wire`'s; the WebSocket protocol is [`ws`].

pub mod open;
pub mod ws;

use crate::error::ApiResult;
use crate::metrics::{global as metrics, inc};
use crate::state::AppState;
use crate::stream::limits::StreamGuard;
use crate::stream::wire::Encoder;
use crate::stream::Feed;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use open::{is_upgrade, plain_encoder, prepare, Kind, Opened};
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
    if is_upgrade(req.headers()) {
        return ws::upgrade(state, req, Some(kind)).await;
    }
    let (mut parts, _) = req.into_parts();
    let encoder = plain_encoder(&parts.headers);
    let Opened { feed, guard } = prepare(&state, &mut parts, kind, encoder.transport()).await?;
    Ok(body_response(feed, guard, encoder))
}

/// A plain stream served through hyper (a stream request that arrived on
/// an already-used keep-alive connection): the same batches as the raw path.
fn body_response(feed: Feed, guard: StreamGuard, mut encoder: Encoder) -> Response {
    let mut start = Vec::new();
    encoder.start(&mut start);
    let headers: Vec<_> = encoder.headers().collect();
    // The state: the feed, what to send first, and whether the body is done.
    let first = (!start.is_empty()).then(|| Bytes::from(start));
    let stream = futures::stream::unfold(
        (feed, guard, encoder, first, false),
        |(mut feed, guard, mut encoder, first, done)| async move {
            if let Some(first) = first {
                let state = (feed, guard, encoder, None, done);
                return Some((Ok::<Bytes, Infallible>(first), state));
            }
            if done {
                return None;
            }
            let mut buf = Vec::new();
            let done = match feed.next().await {
                Some(out) => {
                    let n = encoder.batch(&mut feed, &out, &mut buf);
                    inc(&metrics().events_sent, n);
                    false
                }
                None => {
                    encoder.finish(&mut buf);
                    true
                }
            };
            Some((Ok(Bytes::from(buf)), (feed, guard, encoder, None, done)))
        },
    );
    let mut response = Body::from_stream(stream).into_response();
    for (name, value) in headers {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
    response
}
