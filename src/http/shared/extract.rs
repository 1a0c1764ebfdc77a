//! What handlers read requests with: the JSON body extractor (contract-
//! shaped 400/408/413/415), ids from paths and bodies, the allowed query
//! parameters, and running a write on a task of its own.

use crate::error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use serde::de::DeserializeOwned;

/// A JSON request body with contract-shaped errors: 415 unless the
/// Content-Type is `application/json` (or a `+json` type), 413 when too
/// large, 400 when it is not valid JSON of the expected shape.
pub(crate) struct JsonBody<T>(pub T);

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
pub(crate) async fn detached<T, F>(write: F) -> Result<T, ApiError>
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
pub(crate) fn path_id(raw: &str, what: &str) -> Result<u64, ApiError> {
    match raw.parse::<u64>() {
        Ok(id) if id > 0 && !raw.starts_with('+') => Ok(id),
        _ => Err(ApiError::not_found(format!("No such {what}."))),
    }
}

/// Longest id string accepted in a body (a u64 has at most 20 digits).
pub(crate) const MAX_ID_CHARS: usize = 20;

/// An id sent as a JSON string or number.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub(crate) enum JsonId {
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
    pub(crate) fn parse(&self) -> Option<u64> {
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
    pub(crate) fn is_whole(&self) -> bool {
        match self {
            JsonId::Float(f) => f.is_finite() && f.fract() == 0.0,
            JsonId::Text(s) => s.chars().count() <= MAX_ID_CHARS,
            _ => true,
        }
    }

    /// The id as the client wrote it, for echoing back.
    pub(crate) fn raw(&self) -> String {
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
pub(crate) fn known_params(
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
pub(crate) fn no_store() -> (header::HeaderName, HeaderValue) {
    (header::CACHE_CONTROL, HeaderValue::from_static("no-store"))
}

/// Longest `Idempotency-Key`, in bytes.
pub(crate) const MAX_IDEMPOTENCY_KEY: usize = 64;

/// The `Idempotency-Key` header, if any: 1-64 visible ASCII characters.
pub(crate) fn idempotency_key(headers: &axum::http::HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(raw) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = raw.to_str().unwrap_or("");
    let valid = !key.is_empty()
        && key.len() <= MAX_IDEMPOTENCY_KEY
        && key.bytes().all(|b| b.is_ascii_graphic());
    if !valid {
        return Err(ApiError::invalid(
            "invalid_idempotency_key",
            "Idempotency-Key must be 1 to 64 visible ASCII characters.",
        ));
    }
    Ok(Some(key.to_string()))
}

/// The client's address, as the accept loop found it.
pub(crate) fn client_addr(parts: &axum::http::request::Parts) -> Option<std::net::IpAddr> {
    parts
        .extensions
        .get::<crate::rate_limits::ClientAddr>()
        .map(|c| c.0)
}
