//! `ApiError`: the one error type that becomes an HTTP response.
//!
//! Every error body has the contract's shape
//! `{"error": {"code": "<snake_case>", "message": "<sentence>"}}`. Server-side
//! failures are logged once here and never leak their internals.

use crate::store::StoreError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// Most header fields a request may have (hyper's own default): past it,
/// 431 in the contract's shape, whether the request is a connection's
/// first (`serve`) or a kept-alive one (the router's layer).
pub(crate) const MAX_HEADER_FIELDS: usize = 100;

/// An error answered to a client.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable snake_case code.
    pub code: &'static str,
    /// Human sentence.
    pub message: String,
    /// Seconds for a `Retry-After` header (429 and 503 answers).
    pub retry_after: Option<u64>,
    /// Fields beside `code` and `message` (an invalid rule's `rule` and
    /// `column`).
    pub detail: serde_json::Map<String, serde_json::Value>,
}

impl ApiError {
    /// An error with the given status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
            detail: serde_json::Map::new(),
        }
    }

    /// Adds a field to the error object.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.detail.insert(key.to_string(), value.into());
        self
    }
    /// 400 for invalid input.
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
    /// 401.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }
    /// 403.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }
    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }
    /// 409.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }
    /// 429, with `Retry-After: 1` unless [`ApiError::retry_after`] says more.
    pub fn too_many(message: impl Into<String>) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message).retry_after(1)
    }

    /// Sets the `Retry-After` seconds.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }
    /// 431: more than [`MAX_HEADER_FIELDS`] header fields.
    pub fn too_many_fields() -> Self {
        ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!("The request has more than {MAX_HEADER_FIELDS} header fields."),
        )
    }

    /// 503: Redis cannot be reached.
    pub fn unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "The data store is unreachable right now; try again shortly.",
        )
    }
    /// 503: Redis is reachable but full (out of memory): it refuses writes.
    pub fn store_full() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_full",
            "The data store is full (out of memory) and refuses writes; try again later.",
        )
        .retry_after(5)
    }
    /// 500: a server fault (never caused by client input).
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "The server failed to handle the request.",
        )
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(obj) = error.as_object_mut() {
            obj.extend(self.detail.clone());
        }
        json!({ "error": error })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ApiError::not_found(format!("No such {what}.")),
            StoreError::Conflict(code, msg) => ApiError::conflict(code, msg),
            StoreError::Forbidden(msg) => ApiError::forbidden(msg),
            StoreError::Invalid(code, msg) => ApiError::invalid(code, msg),
            StoreError::Limit(code, msg) => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, code, msg).retry_after(3600)
            }
            StoreError::Unavailable(msg) if msg.contains(OOM) => {
                tracing::warn!(error = %msg, "redis refuses writes: out of memory");
                ApiError::store_full()
            }
            StoreError::Unavailable(msg) => {
                tracing::warn!(error = %msg, "store unavailable");
                ApiError::unavailable()
            }
            StoreError::Redis(err) if is_out_of_memory(&err) => {
                tracing::warn!(error = %err, "redis refuses writes: out of memory");
                ApiError::store_full()
            }
            StoreError::Redis(err) => {
                tracing::warn!(error = %err, "redis unavailable");
                ApiError::unavailable()
            }
            StoreError::Internal(msg) => {
                tracing::error!(error = %msg, "internal error");
                ApiError::internal()
            }
        }
    }
}

/// What Redis says when it refuses a write for lack of memory.
const OOM: &str = "command not allowed when used memory";

/// Whether Redis refused a command for lack of memory (`OOM`, also when a
/// script's write was refused).
fn is_out_of_memory(err: &redis::RedisError) -> bool {
    err.code() == Some("OOM") || err.to_string().contains(OOM)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        crate::metrics::global().count_error(self.status.as_u16());
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

/// `Result` of handlers.
pub(crate) type ApiResult<T> = Result<T, ApiError>;
