//! Blocks and mutes: set and lift them, list them.

use super::shared::extract::{detached, path_id};
use super::shared::openapi::{Op, Params, Reply};
use super::shared::paging::{user_paging, UserPage};
use super::shared::routes::Routes;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::hides::Relation;
use crate::model::now;
use crate::state::AppState;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde_json::{json, Value};
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

/// Sets or lifts the caller's `kind` relation to the user `id`; answers
/// `{<field>: holds}`.
async fn set(
    state: AppState,
    auth: AuthUser,
    id: String,
    kind: Relation,
    on: bool,
) -> ApiResult<Json<Value>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let target = path_id(&id, "user")?;
    let (field, verb) = match kind {
        Relation::Block => ("blocking", "block"),
        Relation::Mute => ("muting", "mute"),
    };
    if target == auth.uid {
        return Err(ApiError::invalid(
            "invalid_target",
            format!("You cannot {verb} yourself."),
        ));
    }
    let store = state.store.clone();
    let uid = auth.uid;
    let holds =
        detached(async move { Ok(store.relations().set(uid, target, kind, on, now()).await?) })
            .await?;
    Ok(Json(json!({ field: holds })))
}

const REPLY_BLOCKING: Reply = Reply::Inline(
    r#"{"type":"object","required":["blocking"],"properties":{"blocking":{"type":"boolean"}}}"#,
);
const REPLY_MUTING: Reply = Reply::Inline(
    r#"{"type":"object","required":["muting"],"properties":{"muting":{"type":"boolean"}}}"#,
);

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
) -> ApiResult<Json<Value>> {
    set(state, auth, id, Relation::Block, true).await
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
) -> ApiResult<Json<Value>> {
    set(state, auth, id, Relation::Block, false).await
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
) -> ApiResult<Json<Value>> {
    set(state, auth, id, Relation::Mute, true).await
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
) -> ApiResult<Json<Value>> {
    set(state, auth, id, Relation::Mute, false).await
}

const BLOCKS_OP: Op = Op::get(
    "/api/v1/blocks",
    "relations",
    "Whom you block, newest block first",
)
.params(Params::FollowPaging)
.reply(Reply::Schema("UserPage"))
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
.reply(Reply::Schema("UserPage"))
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
