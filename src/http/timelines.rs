//! Timelines: the caller's home timeline and any user's profile timeline.

use super::path_id;
use super::statuses::can_see;
use crate::auth::{AuthUser, MaybeUser};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store::statuses::{Page, Shown, Timeline};
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
        .route("/api/v1/timelines/mentions", get(mentions))
        .route("/api/v1/timelines/tag/{tag}", get(tag))
}

/// Keeps the statuses `viewer` may see (a private author's only for the
/// author and their followers).
pub async fn only_visible(
    state: &AppState,
    viewer: Option<&AuthUser>,
    statuses: Vec<Shown>,
) -> ApiResult<Vec<Shown>> {
    let mut sees: HashMap<u64, bool> = HashMap::new();
    let mut kept = Vec::with_capacity(statuses.len());
    for item in statuses {
        let author: u64 = item.0.status.uid.parse().unwrap_or(0);
        let ok = match sees.get(&author) {
            Some(ok) => *ok,
            None => {
                let ok = can_see(state, viewer, author).await?;
                sees.insert(author, ok);
                ok
            }
        };
        let audience_ok = match item
            .0
            .status
            .audience
            .as_deref()
            .and_then(|p| p.parse::<u64>().ok())
        {
            None => true,
            Some(p) => match sees.get(&p) {
                Some(ok) => *ok,
                None => {
                    let ok = can_see(state, viewer, p).await?;
                    sees.insert(p, ok);
                    ok
                }
            },
        };
        if ok && audience_ok {
            kept.push(item);
        }
    }
    Ok(kept)
}

/// `GET /api/v1/timelines/mentions`: statuses mentioning the caller, newest first.
pub async fn mentions(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let (page, count) = paging(&q)?;
    let statuses = state
        .store
        .timeline(Timeline::Mentions(auth.uid), page, count)
        .await?;
    Ok(json_page(
        &only_visible(&state, Some(&auth), statuses).await?,
    ))
}

/// `GET /api/v1/timelines/tag/{tag}`: statuses carrying `#tag` (any case,
/// with or without the `#`), newest first.
pub async fn tag(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(tag): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let (page, count) = paging(&q)?;
    let tag = tag.trim_start_matches('#').to_lowercase();
    if tag.is_empty() || tag.chars().count() > crate::http::statuses::MAX_MESSAGE_CHARS {
        return Err(ApiError::invalid(
            "invalid_tag",
            "Give a hashtag, such as rust.",
        ));
    }
    let statuses = state
        .store
        .timeline(Timeline::Tag(tag), page, count)
        .await?;
    Ok(json_page(
        &only_visible(&state, viewer.as_ref(), statuses).await?,
    ))
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

/// A JSON array of statuses serialized but for their counts.
pub fn json_page(statuses: &[crate::store::statuses::Shown]) -> Response {
    let mut body = Vec::with_capacity(
        2 + statuses
            .iter()
            .map(|(s, _)| s.head.len() + 48)
            .sum::<usize>(),
    );
    body.push(b'[');
    for (i, (s, counts)) in statuses.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        s.write_json(*counts, &mut body);
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
    let statuses = state.store.home_page(auth.uid, page, count).await?;
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
