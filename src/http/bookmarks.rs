//! Bookmarks: a user's private list of statuses ([`store::bookmarks`](crate::store::entities::bookmarks)).

use super::shared::extract::{detached, path_id};
use super::shared::openapi::{Op, Params, Reply, Typed};
use super::shared::paging::{raw_statuses, user_paging, StatusPage};
use super::shared::routes::Routes;
use super::shared::visibility::{only_visible, visible};
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::ApiResult;
use crate::state::AppState;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Serialize;
use std::collections::HashMap;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(CREATE_OP, create)
        .route(DESTROY_OP, destroy)
        .route(LIST_OP, list)
}

/// Answer of bookmark and unbookmark.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Bookmarked {
    /// Whether the caller has the status bookmarked now.
    pub bookmarked: bool,
}

const REPLY_BOOKMARKED: Reply = Reply::Of(Typed::of::<Bookmarked>());

const CREATE_OP: Op = Op::post(
    "/api/v1/statuses/{id}/bookmark",
    "bookmarks",
    "Bookmark a status (idempotent; at most 10,000 bookmarks, then 400 too_many_bookmarks)",
)
.reply(REPLY_BOOKMARKED)
.errors(&[400, 401, 403, 404, 429, 503]);

/// Bookmarks status `id` for the caller (`on`: only one they may see) or
/// removes the bookmark; answers `{bookmarked}`.
async fn set(state: AppState, auth: AuthUser, id: String, on: bool) -> ApiResult<Json<Bookmarked>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let sid = path_id(&id, "status")?;
    if on {
        visible(&state, Some(&auth), sid).await?;
    }
    let store = state.store.clone();
    let uid = auth.uid;
    let on = detached(async move { Ok(store.bookmarks().set(uid, sid, on).await?) }).await?;
    Ok(Json(Bookmarked { bookmarked: on }))
}

/// `POST /api/v1/statuses/{id}/bookmark`: a status the caller may see.
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Bookmarked>> {
    set(state, auth, id, true).await
}

const DESTROY_OP: Op = Op::delete(
    "/api/v1/statuses/{id}/bookmark",
    "bookmarks",
    "Remove a bookmark (idempotent; any status id, one since deleted or hidden too)",
)
.reply(REPLY_BOOKMARKED)
.errors(&[400, 401, 403, 404, 429, 503]);

/// `DELETE /api/v1/statuses/{id}/bookmark`: touches only the caller's own
/// bookmarks, so any status id answers `{bookmarked: false}` (one gone or
/// hidden since included) and tells nothing about the status.
pub(crate) async fn destroy(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Bookmarked>> {
    set(state, auth, id, false).await
}

const LIST_OP: Op = Op::get(
    "/api/v1/bookmarks",
    "bookmarks",
    "Your bookmarks, newest bookmark first; statuses since deleted or no longer visible drop out",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<StatusPage>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/bookmarks`: a page of the caller's bookmarks, each judged
/// now; those of statuses gone are forgotten on the way.
pub(crate) async fn list(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<StatusPage>> {
    let (cursor, count) = user_paging(&q)?;
    let page = state
        .store
        .bookmarks()
        .page(auth.uid, &cursor, count)
        .await?;
    let found = state.store.statuses().many(&page.ids).await?;
    let gone: Vec<u64> = found
        .iter()
        .filter(|(_, s)| s.is_none())
        .map(|(sid, _)| *sid)
        .collect();
    state.store.bookmarks().forget_all(auth.uid, &gone).await?;
    let shown = state
        .store
        .statuses()
        .shown(found.into_iter().filter_map(|(_, s)| s).collect())
        .await?;
    let shown = only_visible(&state, Some(&auth), shown).await?;
    Ok(Json(StatusPage {
        statuses: raw_statuses(&shown)?,
        next_cursor: page.next_cursor,
    }))
}
