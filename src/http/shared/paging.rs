//! Paging parameters and paged answers, shared by every list: `count`,
//! `page` and `max_id` on timelines, `count` and `cursor` on lists of users.

use crate::error::{ApiError, ApiResult};
use crate::model::{Status, User};
use crate::state::AppState;
use crate::store::entities::follows::{Cursor, IdPage};
use crate::store::entities::statuses::{Page, Shown};
use crate::store::StoreError;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::HashMap;

/// A whole number written in decimal digits only (no sign, no spaces), as
/// the OpenAPI document's integer parameters say.
pub(crate) fn uint(raw: &str) -> Option<u64> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

/// Parses `count`: 1-200, `default` when absent.
pub(crate) fn count_param(q: &HashMap<String, String>, default: usize) -> ApiResult<usize> {
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
pub(crate) fn paging(q: &HashMap<String, String>) -> ApiResult<(Page, usize)> {
    crate::http::shared::extract::known_params(q, &["count", "page", "max_id"])?;
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
pub(crate) fn json_page(statuses: &[Shown]) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        statuses_json(statuses),
    )
        .into_response()
}

/// The JSON array of statuses (each serialized but for its counts).
pub(crate) fn statuses_json(statuses: &[Shown]) -> Vec<u8> {
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
    body
}

/// Parses the paging of a list of users: `cursor` (default 0) and `count`
/// (1-200, default 20); no other parameter.
pub(crate) fn user_paging(q: &HashMap<String, String>) -> ApiResult<(Cursor, usize)> {
    crate::http::shared::extract::known_params(q, &["count", "cursor"])?;
    let count = count_param(q, 20)?;
    let cursor = match q.get("cursor").map(String::as_str) {
        None => Cursor::Start,
        Some(c) => Cursor::parse(c).ok_or_else(|| {
            ApiError::invalid("invalid_cursor", "cursor must come from next_cursor.")
        })?,
    };
    Ok((cursor, count))
}

/// Statuses as one JSON array, each serialized once as stored
/// ([`statuses_json`]): a field of a typed reply that documents itself as
/// an array of `Status`.
pub(crate) fn raw_statuses(statuses: &[Shown]) -> ApiResult<Box<RawValue>> {
    String::from_utf8(statuses_json(statuses))
        .map_err(|e| e.to_string())
        .and_then(|json| RawValue::from_string(json).map_err(|e| e.to_string()))
        .map_err(|e| ApiError::from(StoreError::Internal(format!("statuses: {e}"))))
}

/// A page of statuses.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct StatusPage {
    /// The statuses, as the caller may see them now ([`raw_statuses`]).
    #[schema(value_type = Vec<Status>)]
    pub statuses: Box<RawValue>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A page of users.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct UserPage {
    /// Users, oldest follow first.
    pub users: Vec<User>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

impl UserPage {
    /// The users of a page of ids.
    pub(crate) async fn of(state: &AppState, page: IdPage) -> ApiResult<Json<UserPage>> {
        Ok(Json(UserPage {
            users: state.store.users().many(&page.ids).await?,
            next_cursor: page.next_cursor,
        }))
    }
}

/// The order of a home or hashtag timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Newest first.
    Latest,
    /// Ranked ([`store::ranking`](crate::store::entities::ranking)), paged by `page` only.
    Top,
}

/// Takes `order` (`latest`, the default, or `top`) out of the query.
pub(crate) fn order(q: &mut HashMap<String, String>) -> ApiResult<Order> {
    match q.remove("order").as_deref() {
        None | Some("latest") => Ok(Order::Latest),
        Some("top") => {
            if q.contains_key("max_id") {
                return Err(ApiError::invalid(
                    "invalid_query",
                    "order=top pages with count and page, not max_id.",
                ));
            }
            Ok(Order::Top)
        }
        Some(_) => Err(ApiError::invalid(
            "invalid_order",
            "order must be latest or top.",
        )),
    }
}

/// A ranked page as JSON: each status with its counts and its `score`.
pub(crate) fn ranked_json(entries: Vec<crate::store::entities::ranking::RankedEntry>) -> Response {
    let list: Vec<serde_json::Value> = entries
        .into_iter()
        .map(|(status, counts, score)| {
            let mut v = serde_json::to_value(status.with_counts(counts)).unwrap_or_default();
            v["score"] = serde_json::json!(score);
            v
        })
        .collect();
    axum::Json(list).into_response()
}
