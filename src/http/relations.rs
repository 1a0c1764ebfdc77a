//! Blocks and mutes: set and lift them, list them.

use super::shared::extract::{detached, path_id};
use super::shared::openapi::{Op, Params, Reply, Typed};
use super::shared::paging::{user_paging, UserPage};
use super::shared::routes::Routes;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::hides::Relation;
use crate::model::now;
use crate::state::AppState;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Serialize;
use std::collections::HashMap;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(BLOCK_OP, block)
        .route(UNBLOCK_OP, unblock)
        .route(MUTE_OP, mute)
        .route(UNMUTE_OP, unmute)
        .route(BLOCKS_OP, blocks)
        .route(MUTES_OP, mutes)
}

/// Answer of block and unblock.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Blocking {
    /// Whether the caller blocks the user now.
    pub blocking: bool,
}

/// Answer of mute and unmute.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Muting {
    /// Whether the caller mutes the user now.
    pub muting: bool,
}

/// Sets or lifts the caller's `kind` relation to the user `id`; whether it
/// holds now.
async fn set(
    state: AppState,
    auth: AuthUser,
    id: String,
    kind: Relation,
    on: bool,
) -> ApiResult<bool> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let target = path_id(&id, "user")?;
    let verb = match kind {
        Relation::Block => "block",
        Relation::Mute => "mute",
    };
    if target == auth.uid {
        return Err(ApiError::invalid(
            "invalid_target",
            format!("You cannot {verb} yourself."),
        ));
    }
    let store = state.store.clone();
    let uid = auth.uid;
    detached(async move { Ok(store.relations().set(uid, target, kind, on, now()).await?) }).await
}

const REPLY_BLOCKING: Reply = Reply::Of(Typed::of::<Blocking>());
const REPLY_MUTING: Reply = Reply::Of(Typed::of::<Muting>());

const BLOCK_OP: Op = Op::post(
    "/api/v1/users/{id}/block",
    "relations",
    "Block a user (idempotent): follows both ways and follow requests end; neither sees the other's statuses",
)
.reply(REPLY_BLOCKING)
.errors(&[400, 401, 403, 404, 429, 503]);

/// `POST /api/v1/users/{id}/block`.
pub(crate) async fn block(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Blocking>> {
    let blocking = set(state, auth, id, Relation::Block, true).await?;
    Ok(Json(Blocking { blocking }))
}

const UNBLOCK_OP: Op = Op::delete(
    "/api/v1/users/{id}/block",
    "relations",
    "Lift a block (idempotent); no follow comes back",
)
.reply(REPLY_BLOCKING)
.errors(&[400, 401, 403, 404, 429, 503]);

/// `DELETE /api/v1/users/{id}/block`.
pub(crate) async fn unblock(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Blocking>> {
    let blocking = set(state, auth, id, Relation::Block, false).await?;
    Ok(Json(Blocking { blocking }))
}

const MUTE_OP: Op = Op::post(
    "/api/v1/users/{id}/mute",
    "relations",
    "Mute a user (idempotent): their statuses and reposts leave your home, user stream and mentions",
)
.reply(REPLY_MUTING)
.errors(&[400, 401, 403, 404, 429, 503]);

/// `POST /api/v1/users/{id}/mute`.
pub(crate) async fn mute(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Muting>> {
    let muting = set(state, auth, id, Relation::Mute, true).await?;
    Ok(Json(Muting { muting }))
}

const UNMUTE_OP: Op = Op::delete(
    "/api/v1/users/{id}/mute",
    "relations",
    "Lift a mute (idempotent): a followed user's statuses come back to your home",
)
.reply(REPLY_MUTING)
.errors(&[400, 401, 403, 404, 429, 503]);

/// `DELETE /api/v1/users/{id}/mute`.
pub(crate) async fn unmute(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Muting>> {
    let muting = set(state, auth, id, Relation::Mute, false).await?;
    Ok(Json(Muting { muting }))
}

const BLOCKS_OP: Op = Op::get(
    "/api/v1/blocks",
    "relations",
    "Whom you block, newest block first",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<UserPage>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/blocks`.
pub(crate) async fn blocks(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<UserPage>> {
    list(state, auth, q, Relation::Block).await
}

const MUTES_OP: Op = Op::get(
    "/api/v1/mutes",
    "relations",
    "Whom you mute, newest mute first",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<UserPage>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/mutes`.
pub(crate) async fn mutes(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<UserPage>> {
    list(state, auth, q, Relation::Mute).await
}

async fn list(
    state: AppState,
    auth: AuthUser,
    q: HashMap<String, String>,
    kind: Relation,
) -> ApiResult<Json<UserPage>> {
    let (cursor, count) = user_paging(&q)?;
    let page = state
        .store
        .relations()
        .page(auth.uid, kind, &cursor, count)
        .await?;
    UserPage::of(&state, page).await
}
