//! Groups: create, list, join (a request for a private group), leave,
//! members with roles (add, set a role, remove), join requests (authorize,
//! reject), the group timeline and removing its statuses. Posting into a
//! group is `POST /api/v1/statuses` with `group_id` (`statuses.rs`).

pub(crate) mod members;
mod support;

use super::shared::extract::{detached, path_id, JsonBody};
use super::shared::openapi::{Auth, Op, Params, Reply, Typed};
use super::shared::paging::{json_page, paging, user_paging};
use super::shared::routes::Routes;
use super::shared::visibility::only_visible;
use crate::auth::{AuthUser, MaybeUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::model::GroupChange;
use crate::model::{now, Group, Membership, Status};
use crate::model::{GroupKind, GroupRole};
use crate::state::AppState;
use crate::store::entities::statuses::Timeline;
use crate::store::StoreError;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use members::{
    add, authorize, members, reject, remove, requests, set_role, ADD_OP, AUTHORIZE_OP, MEMBERS_OP,
    REJECT_OP, REMOVE_OP, REQUESTS_OP, ROLE_OP,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;
use support::{change, find, group_id, no_group, readable, room_for};

/// Longest group name, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 50;
/// Longest description, in characters.
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 500;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .schema(
            "NewGroup",
            json!({"type": "object", "required": ["name", "kind"], "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS, "pattern": super::shared::openapi::readable_pattern()},
                "description": {"type": ["string", "null"], "maxLength": MAX_DESCRIPTION_CHARS},
                "kind": {"type": "string", "enum": GroupKind::NAMES},
            }}),
        )
        .schema(
            "AddMember",
            json!({"type": "object", "required": ["user_id"], "properties": {
                "user_id": {"oneOf": [{"type": "string", "pattern": "^[0-9]{1,20}$"}, {"type": "integer", "minimum": 0}]},
            }}),
        )
        .schema(
            "SetRole",
            json!({"type": "object", "required": ["role"], "properties": {
                "role": {"type": "string", "enum": GroupRole::NAMES},
            }}),
        )
        .route(CREATE_OP, create)
        .route(LIST_OP, list)
        .route(SHOW_OP, show)
        .route(JOIN_OP, join)
        .route(LEAVE_OP, leave)
        .route(MEMBERS_OP, members)
        .route(ADD_OP, add)
        .route(ROLE_OP, set_role)
        .route(REMOVE_OP, remove)
        .route(REQUESTS_OP, requests)
        .route(AUTHORIZE_OP, authorize)
        .route(REJECT_OP, reject)
        .route(STATUSES_OP, statuses)
        .route(REMOVE_STATUS_OP, remove_status)
}

/// Body of `POST /api/v1/groups`.
#[derive(Debug, Deserialize)]
pub(crate) struct NewGroup {
    /// 1-50 characters.
    pub name: String,
    /// At most 500 characters.
    pub description: Option<String>,
    /// `public`, `private` or `announcement`.
    pub kind: String,
}

const CREATE_OP: Op = Op::post(
    "/api/v1/groups",
    "groups",
    "Create a group (you are its owner)",
)
.body("NewGroup")
.status(201)
.reply(Reply::Of(Typed::of::<Group>()))
.errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `POST /api/v1/groups`.
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: AuthUser,
    JsonBody(body): JsonBody<NewGroup>,
) -> ApiResult<Response> {
    auth.require(SCOPE_WRITE)?;
    let n = body.name.chars().count();
    if n == 0 || n > MAX_NAME_CHARS || crate::text::unreadable(&body.name).is_some() {
        return Err(ApiError::invalid(
            "invalid_name",
            format!("name must be 1 to {MAX_NAME_CHARS} characters."),
        ));
    }
    let description = body.description.unwrap_or_default();
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(ApiError::invalid(
            "invalid_description",
            format!("description must be at most {MAX_DESCRIPTION_CHARS} characters."),
        ));
    }
    let Some(kind) = GroupKind::parse(&body.kind) else {
        return Err(ApiError::invalid(
            "invalid_kind",
            "kind must be public, private or announcement.",
        ));
    };
    state.rate.write(auth.uid).await?;
    room_for(&state, auth.uid).await?;
    let store = state.store.clone();
    let uid = auth.uid;
    let gid = detached(async move {
        Ok(store
            .groups()
            .create(uid, &body.name, &description, kind)
            .await?)
    })
    .await?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    Ok((StatusCode::CREATED, Json(group)).into_response())
}

/// A page of groups.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct GroupPage {
    /// The caller's groups, oldest first.
    pub groups: Vec<Group>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

const LIST_OP: Op = Op::get(
    "/api/v1/groups",
    "groups",
    "Your groups (those you are in or asked to join)",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<GroupPage>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/groups`.
pub(crate) async fn list(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<GroupPage>> {
    let (cursor, count) = user_paging(&q)?;
    let (groups, next_cursor) = state.store.groups().page(auth.uid, &cursor, count).await?;
    Ok(Json(GroupPage {
        groups,
        next_cursor,
    }))
}

const SHOW_OP: Op = Op::get("/api/v1/groups/{id}", "groups", "A group, to anyone")
    .auth(Auth::Optional)
    .reply(Reply::Of(Typed::of::<Group>()))
    .errors(&[401, 404, 503]);

/// `GET /api/v1/groups/{id}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Group>> {
    let gid = group_id(&id)?;
    Ok(Json(find(&state, gid, viewer.map(|v| v.uid)).await?))
}

const JOIN_OP: Op = Op::post(
    "/api/v1/groups/{id}/join",
    "groups",
    "Join (a private group: ask to); idempotent",
)
.reply(Reply::Of(Typed::of::<Membership>()))
.errors(&[401, 403, 404, 429, 503]);

/// `POST /api/v1/groups/{id}/join`.
pub(crate) async fn join(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Membership>> {
    auth.require(SCOPE_WRITE)?;
    let gid = group_id(&id)?;
    state.rate.write(auth.uid).await?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    if group.role.is_none() && !group.requested {
        room_for(&state, auth.uid).await?;
    }
    change(&state, &group, auth.uid, auth.uid, GroupChange::Join).await
}

const LEAVE_OP: Op = Op::post(
    "/api/v1/groups/{id}/leave",
    "groups",
    "Leave (or cancel your request); idempotent; the last owner: 409",
)
.reply(Reply::Of(Typed::of::<Membership>()))
.errors(&[401, 403, 404, 409, 429, 503]);

/// `POST /api/v1/groups/{id}/leave`.
pub(crate) async fn leave(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Membership>> {
    auth.require(SCOPE_WRITE)?;
    let gid = group_id(&id)?;
    state.rate.write(auth.uid).await?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    change(&state, &group, auth.uid, auth.uid, GroupChange::Leave).await
}

const STATUSES_OP: Op = Op::get(
    "/api/v1/groups/{id}/statuses",
    "groups",
    "The group timeline, newest first (a private group's: members only)",
)
.auth(Auth::Optional)
.params(Params::Paging)
.reply(Reply::ListOf(Typed::of::<Status>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/groups/{id}/statuses`.
pub(crate) async fn statuses(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let gid = group_id(&id)?;
    let (page, count) = paging(&q)?;
    readable(&state, viewer.as_ref(), gid).await?;
    let shown = state
        .store
        .statuses()
        .timeline(Timeline::Group(gid), page, count)
        .await?;
    Ok(json_page(
        &only_visible(&state, viewer.as_ref(), shown).await?,
    ))
}

const REMOVE_STATUS_OP: Op = Op::delete(
    "/api/v1/groups/{id}/statuses/{sid}",
    "groups",
    "Remove a status of the group (its author, an owner or a moderator)",
)
.status(204)
.errors(&[401, 403, 404, 429, 503]);

/// `DELETE /api/v1/groups/{id}/statuses/{sid}`: as its author's delete.
pub(crate) async fn remove_status(
    State(state): State<AppState>,
    auth: AuthUser,
    Path((id, sid)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    auth.require(SCOPE_WRITE)?;
    let gid = group_id(&id)?;
    let sid = path_id(&sid, "status")?;
    state.rate.write(auth.uid).await?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    if group.kind == GroupKind::Private && group.role.is_none() {
        return Err(no_group());
    }
    let status = match state.store.statuses().get(sid).await {
        Ok(s) if s.group_id == Some(group.id) => s,
        Ok(_) | Err(StoreError::NotFound(_)) => {
            return Err(ApiError::not_found("No such status in this group."))
        }
        Err(e) => return Err(e.into()),
    };
    let author: u64 = status.uid.get();
    if author != auth.uid && !group.role.is_some_and(GroupRole::is_staff) {
        return Err(ApiError::forbidden(
            "Only its author, an owner or a moderator removes a group's status.",
        ));
    }
    let private = match state.store.users().get(author).await {
        Ok(u) => u.private,
        Err(StoreError::NotFound(_)) => false,
        Err(e) => return Err(e.into()),
    };
    let store = state.store.clone();
    detached(async move { Ok(store.statuses().delete(sid, author, private, now()).await?) })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
