//! Answers in Mastodon's shapes: an entity as JSON, and errors as
//! `{"error": "<sentence>"}` with Mastodon's status codes (OAuth's as
//! `{"error": "<code>", "error_description": "<sentence>"}`).

use super::inner::Answer;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// A Mastodon answer: an entity, or an error.
pub(super) type Reply = Result<Response, Refused>;

/// An error answer (boxed: a result's error stays small).
pub(super) struct Refused(Box<Response>);

impl Refused {
    /// The answer's status.
    pub(super) fn status(&self) -> StatusCode {
        self.0.status()
    }
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        *self.0
    }
}

/// `value` as the JSON answer, `status`.
pub(super) fn entity(status: StatusCode, value: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        value.to_string(),
    )
        .into_response()
}

/// `{"error": sentence}` with `status`.
pub(super) fn error(status: StatusCode, sentence: &str) -> Refused {
    refused(status, json!({ "error": sentence }))
}

/// `value` as an error answer, `status`.
pub(super) fn refused(status: StatusCode, value: Value) -> Refused {
    Refused(Box::new(entity(status, value)))
}

/// Our API's error answer in Mastodon's shape: the same status, its
/// sentence (a 404 as Mastodon words it).
pub(super) fn from_ours(answer: &Answer) -> Refused {
    let sentence = match answer.status {
        StatusCode::NOT_FOUND => "Record not found",
        StatusCode::UNAUTHORIZED => "The access token is invalid",
        _ => answer.body["error"]["message"]
            .as_str()
            .unwrap_or("The request could not be completed."),
    };
    // Mastodon answers a request it understood but will not take (a text
    // too long, a limit reached) 422, where our API answers 400.
    let status = match answer.status {
        StatusCode::BAD_REQUEST => StatusCode::UNPROCESSABLE_ENTITY,
        s => s,
    };
    error(status, sentence)
}

/// Our API's answer if it succeeded, else its error in Mastodon's shape.
pub(super) fn ok(answer: Answer) -> Result<Value, Refused> {
    if answer.status.is_success() {
        Ok(answer.body)
    } else {
        Err(from_ours(&answer))
    }
}

/// The error every unknown path gets (as Mastodon answers one).
pub(super) async fn not_found() -> Refused {
    error(StatusCode::NOT_FOUND, "Record not found")
}

/// A store failure as an answer: 503, logged (never the error's text).
pub(super) fn unavailable(e: &crate::store::StoreError) -> Refused {
    tracing::warn!(error = %e, "mastodon: a store read failed");
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "The server cannot answer now; try again",
    )
}
