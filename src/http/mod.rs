//! The HTTP API: one module per resource, each with its own `router()` and
//! handlers named by verb.

pub mod follows;
pub mod likes;
pub mod openapi;
pub mod ops;
pub mod paging;
pub mod routes;
pub mod sessions;
pub mod statuses;
pub mod stream;
pub mod timelines;
pub mod trends;
pub mod users;
pub mod visibility;

use crate::error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, MatchedPath, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::de::DeserializeOwned;
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
        .layer(axum::middleware::from_fn(observe))
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        .with_state(state)
}

/// Every route of the API with its OpenAPI operation, `/openapi.json`
/// (serving the document made of them all) included.
pub fn routes() -> routes::Routes {
    let routes = routes::Routes::new()
        .merge(users::routes())
        .merge(sessions::routes())
        .merge(statuses::routes())
        .merge(timelines::routes())
        .merge(follows::routes())
        .merge(likes::routes())
        .merge(trends::routes())
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

async fn not_found() -> ApiError {
    ApiError::not_found("No such endpoint.")
}

/// What every routed request goes through: its `x-request-id` (the
/// client's, or a new one) on the request and the response, a span that
/// log lines inside it carry (method, route, request id; the path only:
/// the query may hold an access_token), its latency by route, an error
/// line for a 5xx, and the contract's JSON shape for bare framework errors
/// (405, ...). One layer: each layer is a boxed future and a clone of its
/// service per request, which a cached read notices.
async fn observe(mut req: Request, next: Next) -> Response {
    let started = Instant::now();
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
    let status = response.status();
    let seconds = started.elapsed().as_secs_f64();
    crate::metrics::global().observe_http(route, method.as_str(), status.as_u16(), seconds);
    if status.is_server_error() {
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
    response
}

/// A JSON request body with contract-shaped errors: 415 unless the
/// Content-Type is `application/json` (or a `+json` type), 413 when too
/// large, 400 when it is not valid JSON of the expected shape.
pub struct JsonBody<T>(pub T);

/// Whether a Content-Type header names JSON (`application/json`, with or
/// without parameters, or an `application/*+json` type).
fn is_json_type(value: Option<&HeaderValue>) -> bool {
    let Some(essence) = value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
    else {
        return false;
    };
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        if !is_json_type(req.headers().get(header::CONTENT_TYPE)) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "Send the body as JSON with Content-Type: application/json.",
            ));
        }
        // A body trickled in slowly would hold the connection and its
        // task; it gets as long as a request head does.
        let timeout = state.cfg.request_timeout();
        let read = tokio::time::timeout(timeout, Bytes::from_request(req, state)).await;
        let Ok(read) = read else {
            return Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                "The request body was not complete in time.",
            ));
        };
        let bytes = read.map_err(|e| match e {
            BytesRejection::FailedToBufferBody(_)
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    "The request body is too large.",
                )
            }
            _ => ApiError::invalid("invalid_body", "The request body could not be read."),
        })?;
        if bytes.is_empty() {
            return Err(ApiError::invalid(
                "invalid_json",
                "A JSON body is required.",
            ));
        }
        // Every body is a JSON object (serde would also take an array for a
        // struct, field by position).
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ApiError::invalid(
                "invalid_json",
                "The JSON body must be an object.",
            ));
        }
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg);
            ApiError::invalid("invalid_json", format!("The JSON body is invalid: {msg}."))
        })
    }
}

/// Runs a write on a task of its own and waits for it. A client hanging up
/// drops the handler's future, which would otherwise cancel the write half
/// way (after its commit, before the work the commit implies); a spawned
/// task runs to the end whatever becomes of the request.
pub async fn detached<T, F>(write: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, ApiError>> + Send + 'static,
{
    tokio::spawn(write).await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "a detached write panicked");
        Err(ApiError::internal())
    })
}

/// Parses an id from a path segment; anything else is an unknown id (404).
pub fn path_id(raw: &str, what: &str) -> Result<u64, ApiError> {
    match raw.parse::<u64>() {
        Ok(id) if id > 0 && !raw.starts_with('+') => Ok(id),
        _ => Err(ApiError::not_found(format!("No such {what}."))),
    }
}

/// Longest id string accepted in a body (a u64 has at most 20 digits).
pub const MAX_ID_CHARS: usize = 20;

/// An id sent as a JSON string or number.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub enum JsonId {
    /// `"42"`.
    Text(String),
    /// `42`.
    Unsigned(u64),
    /// `-42`: a whole number, but no one's id.
    Signed(i64),
    /// `42.0` (a whole number, as JSON Schema counts) or `4.2` (not one).
    Float(f64),
}

impl JsonId {
    /// The id, if it is a positive integer.
    pub fn parse(&self) -> Option<u64> {
        match self {
            JsonId::Text(s) => s.trim().parse::<u64>().ok(),
            JsonId::Unsigned(n) => Some(*n),
            JsonId::Signed(_) => None,
            JsonId::Float(f) => (self.is_whole() && *f >= 1.0 && *f < 18_446_744_073_709_551_616.0)
                .then_some(*f as u64),
        }
        .filter(|id| *id > 0)
    }

    /// Whether it is a string of at most [`MAX_ID_CHARS`] characters or a
    /// whole number (not `4.2`).
    pub fn is_whole(&self) -> bool {
        match self {
            JsonId::Float(f) => f.is_finite() && f.fract() == 0.0,
            JsonId::Text(s) => s.chars().count() <= MAX_ID_CHARS,
            _ => true,
        }
    }

    /// The id as the client wrote it, for echoing back.
    pub fn raw(&self) -> String {
        match self {
            JsonId::Text(s) => s.clone(),
            JsonId::Unsigned(n) => n.to_string(),
            JsonId::Signed(n) => n.to_string(),
            JsonId::Float(f) => f.to_string(),
        }
    }
}

/// 400 unless every query parameter is one of `allowed` (the OpenAPI
/// document lists them; a misspelt one should not be silently ignored).
pub fn known_params(
    q: &std::collections::HashMap<String, String>,
    allowed: &[&str],
) -> Result<(), ApiError> {
    match q.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(ApiError::invalid(
            "invalid_query",
            format!(
                "Unknown query parameter {k:?}; this call takes {}.",
                allowed.join(", ")
            ),
        )),
    }
}

/// `Cache-Control: no-store` for responses carrying tokens or private data.
pub fn no_store() -> (header::HeaderName, HeaderValue) {
    (header::CACHE_CONTROL, HeaderValue::from_static("no-store"))
}
