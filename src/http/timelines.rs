//! Timelines: the caller's home timeline and any user's profile timeline.

use super::path_id;
use super::statuses::can_see;
use crate::app::AppState;
use crate::auth::{AuthUser, MaybeUser};
use crate::error::{ApiError, ApiResult};
use crate::store::statuses::{Page, Timeline};
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::collections::HashMap;

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/timelines/home", get(home))
        .route("/api/v1/users/{id}/statuses", get(profile))
}

/// A whole number written in decimal digits only (no sign, no spaces), as
/// the OpenAPI document's integer parameters say.
pub fn uint(raw: &str) -> Option<u64> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

/// Parses `count`: 1-200, `default` when absent.
pub fn count_param(q: &HashMap<String, String>, default: usize) -> ApiResult<usize> {
    match q.get("count") {
        None => Ok(default),
        Some(c) => match uint(c) {
            Some(n) if (1..=200).contains(&n) => Ok(n as usize),
            _ => Err(ApiError::invalid(
                "invalid_count",
                "count must be a whole number from 1 to 200.",
            )),
        },
    }
}

/// Parses `count` (1-200, default 30) and `page` (>= 1) or `max_id`.
pub fn paging(q: &HashMap<String, String>) -> ApiResult<(Page, usize)> {
    super::known_params(q, &["count", "page", "max_id"])?;
    let count = count_param(q, 30)?;
    let page = match (q.get("page"), q.get("max_id")) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "invalid_query",
                "Give page or max_id, not both.",
            ));
        }
        (Some(p), None) => match uint(p) {
            Some(n) if n >= 1 => Page::Number(n),
            _ => {
                return Err(ApiError::invalid(
                    "invalid_page",
                    "page must be a whole number of at least 1.",
                ))
            }
        },
        (None, Some(m)) => match uint(m) {
            Some(n) => Page::MaxId(n),
            _ => {
                return Err(ApiError::invalid(
                    "invalid_max_id",
                    "max_id must be a status id.",
                ))
            }
        },
        (None, None) => Page::Number(1),
    };
    Ok((page, count))
}

/// A JSON array of already serialized statuses.
pub fn json_page(statuses: &[std::sync::Arc<crate::store::cache::CachedStatus>]) -> Response {
    let mut body = Vec::with_capacity(2 + statuses.iter().map(|s| s.json.len() + 1).sum::<usize>());
    body.push(b'[');
    for (i, s) in statuses.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&s.json);
    }
    body.push(b']');
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// `GET /api/v1/timelines/home`: newest first.
pub async fn home(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let (page, count) = paging(&q)?;
    let statuses = state
        .store
        .timeline(Timeline::Home(auth.uid), page, count)
        .await?;
    Ok(json_page(&statuses))
}

/// `GET /api/v1/users/{id}/statuses`: a user's own statuses, newest first.
pub async fn profile(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let uid = path_id(&id, "user")?;
    let (page, count) = paging(&q)?;
    if !can_see(&state, viewer.as_ref(), uid).await? {
        return Err(ApiError::forbidden(
            "This account's statuses are visible to its followers only.",
        ));
    }
    let statuses = state
        .store
        .timeline(Timeline::Profile(uid), page, count)
        .await?;
    Ok(json_page(&statuses))
}
