//! Trending hashtags over a sliding window.

use super::shared::openapi::{Auth, Op, Params, Reply, Typed};
use super::shared::paging::uint;
use super::shared::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::{Query, State};
use axum::Json;
use serde::Serialize;
use std::collections::HashMap;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new().route(TAGS_OP, tags)
}

/// One trending hashtag.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Trend {
    /// The hashtag, lowercased, without `#`.
    pub tag: String,
    /// Public statuses carrying it in the window.
    pub count: u64,
}

const TAGS_OP: Op = Op::get(
    "/api/v1/trends/tags",
    "trends",
    "The most used hashtags of public statuses in a sliding window",
)
.auth(Auth::None)
.params(Params::Trends)
.reply(Reply::ListOf(Typed::of::<Trend>()))
.errors(&[400, 503]);

/// `GET /api/v1/trends/tags?window=3600&limit=10`: the most used hashtags of
/// public statuses in the last `window` seconds (60-86400, default 3600),
/// counted in per-minute buckets; `limit` 1-100 (default 10).
pub(crate) async fn tags(
    State(state): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<Trend>>> {
    super::shared::extract::known_params(&q, &["window", "limit"])?;
    let window = match q.get("window") {
        None => 3600,
        Some(w) => uint(w)
            .filter(|w| (60..=86_400).contains(w))
            .ok_or_else(|| {
                ApiError::invalid("invalid_window", "window must be 60 to 86400 seconds.")
            })?,
    };
    let limit = match q.get("limit") {
        None => 10,
        Some(l) => uint(l)
            .filter(|l| (1..=100).contains(l))
            .ok_or_else(|| ApiError::invalid("invalid_limit", "limit must be 1 to 100."))?,
    };
    let top = state
        .store
        .statuses()
        .trending(window, limit as usize)
        .await?;
    Ok(Json(
        top.into_iter()
            .map(|(tag, count)| Trend { tag, count })
            .collect(),
    ))
}
