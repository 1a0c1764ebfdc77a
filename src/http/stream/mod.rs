//! The streams: firehose, sample, filter, user, search and the multiplexed
//! WebSocket.
//!
//! Every stream path serves Server-Sent Events by default, NDJSON with
//! `Accept: application/x-ndjson`, and WebSocket on an upgrade request. The
//! transport code only formats what the connection's [`Feed`] hands out;
//! matching happens once per event in the hub. The bytes of plain streams
//! are [`stream::wire`](crate::stream::wire)'s; the WebSocket protocol is [`ws_codec`](crate::stream::ws_codec).

pub(crate) mod dictionary;
pub(crate) mod open;
pub(crate) mod ws_session;

use crate::error::ApiResult;
use crate::http::shared::openapi::{Auth, Op, Reply, PARTED, RESUME};
use crate::http::shared::routes::Routes;
use crate::metrics::{global as metrics, inc};
use crate::state::AppState;
use crate::stream::stream_limits::StreamGuard;
use crate::stream::wire::Encoder;
use crate::stream::Feed;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use open::{is_upgrade, plain_encoder, prepare, Kind, Opened};
use std::convert::Infallible;

/// OpenAPI: `ws_session::multiplexed`.
const MULTIPLEXED_OP: Op = Op::get(
    "/api/v1/stream",
    "streams",
    "Multiplexed WebSocket: subscribe/unsubscribe control messages",
)
.auth(Auth::Stream)
.query(&[
        (
            "access_token",
            "The JWT, for clients that cannot set headers.",
        ),
        (
            "compress",
            "zstd: each event as one binary message, a zstd frame made with the dictionary at /api/v1/stream/zstd-dictionary.",
        ),
    ]).status(101).reply(Reply::Stream).errors(&[400, 401, 403, 429, 503]);

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(FIREHOSE_OP, firehose)
        .route(SAMPLE_OP, sample)
        .route(FILTER_OP, filter)
        .route(USER_OP, user)
        .route(SEARCH_OP, search)
        .route(GROUP_OP, group)
        .route(LIST_OP, list)
        .route(MULTIPLEXED_OP, ws_session::multiplexed)
        .route(dictionary::DICTIONARY_OP, dictionary::dictionary)
}

const FIREHOSE_OP: Op = Op::get(
    "/api/v1/stream/firehose",
    "streams",
    "Every public event (scope firehose). SSE, NDJSON (Accept: application/x-ndjson) or WebSocket",
)
.auth(Auth::Stream)
.query(PARTED)
.reply(Reply::Stream)
.errors(&[400, 401, 403, 429, 503]);

/// `GET /api/v1/stream/firehose`: every public event (scope `firehose`).
pub(crate) async fn firehose(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::Firehose).await
}

const SAMPLE_OP: Op = Op::get(
    "/api/v1/stream/sample",
    "streams",
    "A sample of public statuses, the same for every client at one rate",
)
.auth(Auth::Stream)
.query(&[
    ("rate", "Fraction in (0, 1], default 0.01."),
    (
        "access_token",
        "The JWT, for clients that cannot set headers.",
    ),
    ("last_event_id", "Resume after this id."),
    ("count", "Replay the newest N first."),
    (
        "since",
        "Open at the first buffered event at or after this time.",
    ),
    ("partition", "This consumer's partition, 1 to partitions."),
    (
        "partitions",
        "How many partitions the sample is split into (1-32).",
    ),
])
.reply(Reply::Stream)
.errors(&[400, 401, 403, 429, 503]);

/// `GET /api/v1/stream/sample?rate=`: the same sample of public statuses for every client at one rate.
pub(crate) async fn sample(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::Sample).await
}

const FILTER_OP: Op = Op::get(
    "/api/v1/stream/filter",
    "streams",
    "Public statuses matching follow, track, locations or ad-hoc rules",
)
.auth(Auth::Stream)
.query(&[
    ("follow", "Comma-separated user ids (<= 5000)."),
    ("track", "Comma-separated phrases (<= 400, each <= 60 bytes)."),
    (
        "locations",
        "sw_lon,sw_lat,ne_lon,ne_lat groups (<= 25 boxes); sw_lon > ne_lon crosses the antimeridian.",
    ),
    (
        "rules",
        "A JSON array of 1-100 filter rules, each {value, tag?} or a string; events then carry matching_rules.",
    ),
    ("access_token", "The JWT, for clients that cannot set headers."),
    ("last_event_id", "Resume after this id."),
    ("count", "Replay the newest N first."),
    ("since", "Open at the first buffered event at or after this time."),
])
.reply(Reply::Stream)
.errors(&[400, 401, 403, 429, 503]);

/// `GET /api/v1/stream/filter?follow=&track=&locations=`.
pub(crate) async fn filter(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::Filter).await
}

const USER_OP: Op = Op::get(
    "/api/v1/stream/user",
    "streams",
    "What your home timeline gets, plus follows of and by you",
)
.auth(Auth::Stream)
.query(RESUME)
.reply(Reply::Stream)
.errors(&[400, 401, 403, 429, 503]);

/// `GET /api/v1/stream/user`: what the caller's home timeline gets, plus follows of and by them.
pub(crate) async fn user(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::User).await
}

const SEARCH_OP: Op = Op::get(
    "/api/v1/stream/search",
    "streams",
    "Public statuses matching any of your filter rules, each with matching_rules",
)
.auth(Auth::Stream)
.query(PARTED)
.reply(Reply::Stream)
.errors(&[400, 401, 403, 429, 503]);

/// `GET /api/v1/stream/search`: public statuses matching the caller's rules.
pub(crate) async fn search(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::Search).await
}

const GROUP_OP: Op = Op::get(
    "/api/v1/stream/group",
    "streams",
    "A group's status and delete events (those who may read the group)",
)
.auth(Auth::Stream)
.query(&[
    ("id", "The group (required)."),
    (
        "access_token",
        "The JWT, for clients that cannot set headers.",
    ),
    ("last_event_id", "Resume after this id."),
    ("count", "Replay the newest N first."),
    (
        "since",
        "Open at the first buffered event at or after this time.",
    ),
])
.reply(Reply::Stream)
.errors(&[400, 401, 403, 404, 429, 503]);

/// `GET /api/v1/stream/group?id=G`: a group's statuses and their deletes.
pub(crate) async fn group(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::Group).await
}

const LIST_OP: Op = Op::get(
    "/api/v1/stream/list",
    "streams",
    "Statuses of a list's members as they are posted, and their deletes (the list's owner only)",
)
.auth(Auth::Stream)
.query(&[
    ("id", "The list (required)."),
    (
        "access_token",
        "The JWT, for clients that cannot set headers.",
    ),
    ("last_event_id", "Resume after this id."),
    ("count", "Replay the newest N first."),
    (
        "since",
        "Open at the first buffered event at or after this time.",
    ),
])
.reply(Reply::Stream)
.errors(&[400, 401, 403, 404, 429, 503]);

/// `GET /api/v1/stream/list?id=L`: the statuses of a list's members and
/// their deletes.
pub(crate) async fn list(State(state): State<AppState>, req: Request) -> Response {
    serve(state, req, Kind::List).await
}

async fn serve(state: AppState, req: Request, kind: Kind) -> Response {
    open(state, req, kind)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn open(state: AppState, req: Request, kind: Kind) -> ApiResult<Response> {
    if is_upgrade(req.headers()) {
        return ws_session::upgrade(state, req, Some(kind)).await;
    }
    let (mut parts, _) = req.into_parts();
    let encoder = plain_encoder(&parts.headers, state.cfg.max_zstd_streams);
    let Opened { feed, guard, .. } = prepare(&state, &mut parts, kind, encoder.transport()).await?;
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
                    let n = encoder.batch(|| feed.try_next(), &out, &mut buf);
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
