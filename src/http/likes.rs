//! Likes: like and unlike a status, who likes it, what a user likes.

use super::shared::extract::{detached, path_id};
use super::shared::openapi::{Auth, Op, Params, Reply, Typed};
use super::shared::paging::{json_page, paging, user_paging, UserPage};
use super::shared::routes::Routes;
use super::shared::visibility::{only_visible, visible, visible_with_author};
use crate::auth::{AuthUser, MaybeUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::model::Status;
use crate::state::AppState;
use crate::store::entities::statuses::Timeline;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Json;
use serde::Serialize;
use std::collections::HashMap;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(CREATE_OP, create)
        .route(DESTROY_OP, destroy)
        .route(LIKED_BY_OP, liked_by)
        .route(USER_LIKES_OP, user_likes)
}

/// Answer of like and unlike.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct LikeReply {
    /// Whether the caller likes the status now.
    pub liked: bool,
    /// How many users like it.
    pub likes: u64,
}

async fn set(
    state: AppState,
    auth: AuthUser,
    id: String,
    like: bool,
) -> ApiResult<Json<LikeReply>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let sid = path_id(&id, "status")?;
    let (status, author_user) = visible_with_author(&state, &auth, sid).await?;
    let author: u64 = status.uid.get();
    let private = author_user.private;
    let store = state.store.clone();
    let (_, likes) = detached(async move {
        Ok(store
            .likes()
            .set(auth.uid, sid, author, private, like)
            .await?)
    })
    .await?;
    Ok(Json(LikeReply { liked: like, likes }))
}

const CREATE_OP: Op = Op::post(
    "/api/v1/statuses/{id}/like",
    "likes",
    "Like a status (idempotent)",
)
.reply(Reply::Of(Typed::of::<LikeReply>()))
.errors(&[401, 403, 404, 429, 503]);

/// `POST /api/v1/statuses/{id}/like`: idempotent.
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<LikeReply>> {
    set(state, auth, id, true).await
}

const DESTROY_OP: Op = Op::delete(
    "/api/v1/statuses/{id}/like",
    "likes",
    "Stop liking a status (idempotent)",
)
.reply(Reply::Of(Typed::of::<LikeReply>()))
.errors(&[401, 403, 404, 429, 503]);

/// `DELETE /api/v1/statuses/{id}/like`: idempotent.
pub(crate) async fn destroy(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<LikeReply>> {
    set(state, auth, id, false).await
}

const LIKED_BY_OP: Op = Op::get(
    "/api/v1/statuses/{id}/liked_by",
    "likes",
    "Who likes a status, oldest like first",
)
.auth(Auth::Optional)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<UserPage>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/statuses/{id}/liked_by`: users, oldest like first.
pub(crate) async fn liked_by(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<UserPage>> {
    let sid = path_id(&id, "status")?;
    let (cursor, count) = user_paging(&q)?;
    visible(&state, viewer.as_ref(), sid).await?;
    let page = state.store.likes().likers(sid, &cursor, count).await?;
    UserPage::of(&state, page).await
}

const USER_LIKES_OP: Op = Op::get(
    "/api/v1/users/{id}/likes",
    "likes",
    "Statuses a user likes, newest like first",
)
.auth(Auth::Optional)
.params(Params::Paging)
.reply(Reply::ListOf(Typed::of::<Status>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/users/{id}/likes`: the statuses a user likes, newest like
/// first (those the caller may see).
pub(crate) async fn user_likes(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let uid = path_id(&id, "user")?;
    let (page, count) = paging(&q)?;
    if !state.store.users().exists(uid).await? {
        return Err(ApiError::not_found("No such user."));
    }
    let statuses = state
        .store
        .statuses()
        .timeline(Timeline::Likes(uid), page, count)
        .await?;
    Ok(json_page(
        &only_visible(&state, viewer.as_ref(), statuses).await?,
    ))
}
