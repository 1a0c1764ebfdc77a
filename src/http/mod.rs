//! The HTTP API: one module per resource, each with its own `routes()` (every
//! handler registered with its OpenAPI operation) and handlers named by verb;
//! what they share in `shared` (`extract`: bodies, ids, query
//! parameters; `paging`, `visibility`, `routes`, `openapi`, `cors`). This module
//! holds the router and its one middleware layer.

pub(crate) mod account;
pub(crate) mod admin;
pub(crate) mod bookmarks;
pub(crate) mod conversations;
pub(crate) mod demo;
pub(crate) mod edits;
pub(crate) mod follows;
pub(crate) mod groups;
pub(crate) mod history;
pub(crate) mod likes;
pub(crate) mod lists;
pub(crate) mod notifications;
pub(crate) mod ops;
pub(crate) mod relations;
pub(crate) mod reports;
pub(crate) mod rules;
pub(crate) mod sessions;
pub(crate) mod shared;
pub(crate) mod statuses;
pub(crate) mod stream;
pub(crate) mod timelines;
pub(crate) mod trends;
pub(crate) mod users;

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{MatchedPath, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use shared::{cors, openapi};
use std::time::Instant;
use tracing::Instrument;

/// The request id header, set on every request and response.
const X_REQUEST_ID: header::HeaderName = header::HeaderName::from_static("x-request-id");

/// The whole application router.
pub fn router(state: AppState) -> Router {
    let body_limit = state.cfg.body_limit;
    routes()
        .into_router()
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), observe))
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        .with_state(state)
}

/// Every route of the API with its OpenAPI operation, `/openapi.json`
/// (serving the document made of them all) included.
pub fn routes() -> shared::routes::Routes {
    let routes = shared::routes::Routes::new()
        .merge(users::routes())
        .merge(account::routes())
        .merge(sessions::routes())
        .merge(statuses::routes())
        .merge(edits::routes())
        .merge(timelines::routes())
        .merge(follows::routes())
        .merge(likes::routes())
        .merge(bookmarks::routes())
        .merge(lists::routes())
        .merge(notifications::routes())
        .merge(groups::routes())
        .merge(reports::routes())
        .merge(admin::routes())
        .merge(relations::routes())
        .merge(conversations::routes())
        .merge(rules::routes())
        .merge(trends::routes())
        .merge(history::routes())
        .merge(demo::routes())
        .merge(stream::routes())
        .merge(ops::routes());
    let mut all = routes.ops().to_vec();
    all.push(ops::OPENAPI_OP);
    let document = axum::body::Bytes::from(openapi::document(&all, routes.schemas()).to_string());
    routes.route(ops::OPENAPI_OP, move || {
        let document = document.clone();
        async move { ops::openapi(document) }
    })
}

/// A request id: 128 bits written as a UUID, a random half drawn once per
/// process and a counter, so that unlike a v4 UUID a request costs no read
/// of the kernel's random source. Unique per process and, with 64 random
/// bits, across the processes sharing a Redis.
fn new_request_id() -> HeaderValue {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static PROCESS: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // std's hasher keys are random per process: a hash of nothing with
    // fresh keys is 64 random bits without a dependency.
    let process = *PROCESS.get_or_init(|| {
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let text = uuid_text((u128::from(process) << 64) | u128::from(n));
    // Hex digits and dashes: always a valid header value.
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("-"))
}

/// `bits` as a UUID's text (8-4-4-4-12 lowercase hex digits).
fn uuid_text(bits: u128) -> String {
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        bits >> 96,
        (bits >> 80) & 0xffff,
        (bits >> 64) & 0xffff,
        (bits >> 48) & 0xffff,
        bits & 0xffff_ffff_ffff
    )
}

/// A method that may change something: its success waits for the
/// replicas (`--redis-wait-replicas`).
fn is_write(method: &axum::http::Method) -> bool {
    !matches!(
        *method,
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    )
}

async fn not_found() -> ApiError {
    ApiError::not_found("No such endpoint.")
}

/// What every routed request goes through: its `x-request-id` (the
/// client's, or a new one) on the request and the response, a span that
/// log lines inside it carry (method, route, request id; the path only:
/// the query may hold an access_token), a successful write's wait for the
/// replicas (`--redis-wait-replicas`), its latency by route, an error
/// line for a 5xx, and the contract's JSON shape for bare framework errors
/// (405, ...). One layer: each layer is a boxed future and a clone of its
/// service per request, which a cached read notices.
async fn observe(
    axum::extract::State(state): axum::extract::State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    if req.headers().len() > crate::error::MAX_HEADER_FIELDS {
        return ApiError::too_many_fields().into_response();
    }
    let cors = cors::allow(&state.cfg.cors_origins, req.headers().get(header::ORIGIN));
    // A CORS preflight is answered here, before routing (which knows no
    // OPTIONS): what a page from an allowed origin may send.
    if req.method() == axum::http::Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        let mut response = StatusCode::NO_CONTENT.into_response();
        let h = response.headers_mut();
        h.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        if let Some(allow) = cors {
            cors::decorate(h, allow);
            h.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static(cors::ALLOW_METHODS),
            );
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(cors::ALLOW_HEADERS),
            );
            h.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static(cors::MAX_AGE),
            );
        }
        return response;
    }
    // A matched path is an Arc: kept without copying.
    let route = req.extensions().get::<MatchedPath>().cloned();
    let route = route.as_ref().map_or("unmatched", |r| r.as_str());
    let method = req.method().clone();
    let request_id = match req.headers().get(X_REQUEST_ID) {
        Some(id) => id.clone(),
        None => {
            let id = new_request_id();
            req.headers_mut().insert(X_REQUEST_ID, id.clone());
            id
        }
    };
    let span = tracing::info_span!(
        "http",
        method = method.as_str(),
        route,
        request_id = request_id.to_str().unwrap_or("")
    );
    let mut response = next.run(req).instrument(span.clone()).await;
    if is_write(&method)
        && response.status().is_success()
        && state.store.server().waits_for_replicas()
    {
        if let Err(e) = state.store.server().confirm_replicated().await {
            response = ApiError::from(e).into_response();
        }
    }
    let status = response.status();
    let seconds = started.elapsed().as_secs_f64();
    crate::metrics::global().observe_http(route, method.as_str(), status.as_u16(), seconds);
    if status.is_server_error() && route == ops::READINESS {
        // A readiness probe's 503 is its answer, not a fault: a balancer
        // asks every few seconds while a server starts or Redis is away
        // (which is logged where it is found).
        span.in_scope(|| tracing::info!(status = status.as_u16(), "not ready"));
    } else if status.is_server_error() {
        span.in_scope(|| {
            tracing::error!(
                status = status.as_u16(),
                latency_ms = seconds * 1e3,
                "response failed"
            )
        });
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let bare = status.is_client_error() && !is_json;
    if bare {
        let err = match status {
            StatusCode::METHOD_NOT_ALLOWED => ApiError::new(
                status,
                "method_not_allowed",
                "This method is not allowed here.",
            ),
            StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::new(status, "body_too_large", "The request body is too large.")
            }
            _ => ApiError::new(status, "bad_request", "The request could not be handled."),
        };
        let mut r = err.into_response();
        if let Some(allow) = response.headers().get(header::ALLOW) {
            r.headers_mut().insert(header::ALLOW, allow.clone());
        }
        response = r;
    }
    response.headers_mut().insert(X_REQUEST_ID, request_id);
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Some(allow) = cors {
        cors::decorate(response.headers_mut(), allow);
    }
    response
}
