//! A group's members and join requests: the member list, adding a member,
//! setting a role, removing one, and authorizing or rejecting requests.

use super::support::{change, find, group_id, readable, refused, room_for};
use crate::auth::{AuthUser, MaybeUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::hides;
use crate::http::shared::extract::{path_id, JsonBody, JsonId};
use crate::http::shared::openapi::{Auth, Op, Params, Reply, Typed};
use crate::http::shared::paging::user_paging;
use crate::model::GroupChange;
use crate::model::Membership;
use crate::model::{GroupRole, User};
use crate::state::AppState;
use crate::store::entities::groups::Refused;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub(super) const MEMBERS_OP: Op = Op::get(
    "/api/v1/groups/{id}/members",
    "groups",
    "Members, each with their role (a private group's: members only)",
)
.auth(Auth::Optional)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<MemberPage>()))
.errors(&[400, 401, 404, 503]);

/// A page of a group's members or of its join requests.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct MemberPage {
    /// Oldest first.
    pub users: Vec<Member>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A user with their role in the group (null: asked to join).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Member {
    /// The user.
    #[serde(flatten)]
    pub user: User,
    /// Their role; null for a join request.
    pub role: Option<GroupRole>,
}

/// A page of users with their roles.
async fn member_page(
    state: &AppState,
    rows: Vec<(u64, Option<GroupRole>)>,
    next_cursor: Option<String>,
) -> ApiResult<Json<MemberPage>> {
    let ids: Vec<u64> = rows.iter().map(|(id, _)| *id).collect();
    let users = state.store.users().many(&ids).await?;
    let roles: HashMap<u64, Option<GroupRole>> = rows.into_iter().collect();
    let users = users
        .into_iter()
        .map(|user| {
            let id: u64 = user.id.get();
            let role = roles.get(&id).copied().flatten();
            Member { user, role }
        })
        .collect();
    Ok(Json(MemberPage { users, next_cursor }))
}

/// `GET /api/v1/groups/{id}/members`.
pub(crate) async fn members(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<MemberPage>> {
    let gid = group_id(&id)?;
    let (cursor, count) = user_paging(&q)?;
    readable(&state, viewer.as_ref(), gid).await?;
    let (rows, next) = state
        .store
        .groups()
        .member_page(gid, false, &cursor, count)
        .await?;
    member_page(&state, rows, next).await
}

/// Body of `POST /api/v1/groups/{id}/members`.
#[derive(Debug, Deserialize)]
pub(crate) struct AddMember {
    /// Who to add.
    pub user_id: JsonId,
}

pub(super) const ADD_OP: Op = Op::post(
    "/api/v1/groups/{id}/members",
    "groups",
    "Add a user as a member (owners, moderators); idempotent",
)
.body("AddMember")
.reply(Reply::Of(Typed::of::<Membership>()))
.errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `POST /api/v1/groups/{id}/members`.
pub(crate) async fn add(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AddMember>,
) -> ApiResult<Json<Membership>> {
    auth.require(SCOPE_WRITE)?;
    let gid = group_id(&id)?;
    let target = body
        .user_id
        .parse()
        .filter(|id| *id > 0)
        .ok_or_else(|| ApiError::not_found("No such user."))?;
    state.rate.write(auth.uid).await?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    if !group.role.is_some_and(GroupRole::is_staff) {
        return Err(refused(Refused::Forbidden));
    }
    if !state.store.users().exists(target).await? {
        return Err(ApiError::not_found("No such user."));
    }
    // Someone who blocks the caller cannot be added by them.
    if state.store.relations().bits(auth.uid, target).await? & hides::BLOCKED_BY != 0 {
        return Err(ApiError::forbidden("That user blocks you."));
    }
    let current = state.store.groups().standing(gid, target).await?;
    if current.is_some_and(|s| s.role.is_none() && !s.requested) {
        room_for(&state, target).await?;
    }
    change(&state, &group, auth.uid, target, GroupChange::Add).await
}

/// Body of `PATCH /api/v1/groups/{id}/members/{uid}`.
#[derive(Debug, Deserialize)]
pub(crate) struct SetRole {
    /// `owner`, `moderator` or `member`.
    pub role: String,
}

pub(super) const ROLE_OP: Op = Op::patch(
    "/api/v1/groups/{id}/members/{uid}",
    "groups",
    "Set a member's role (owners only); the last owner: 409",
)
.body("SetRole")
.reply(Reply::Of(Typed::of::<Membership>()))
.errors(&[400, 401, 403, 404, 408, 409, 413, 415, 429, 503]);

/// `PATCH /api/v1/groups/{id}/members/{uid}`.
pub(crate) async fn set_role(
    State(state): State<AppState>,
    auth: AuthUser,
    Path((id, uid)): Path<(String, String)>,
    JsonBody(body): JsonBody<SetRole>,
) -> ApiResult<Json<Membership>> {
    auth.require(SCOPE_WRITE)?;
    let gid = group_id(&id)?;
    let target = path_id(&uid, "member")?;
    let Some(role) = GroupRole::parse(&body.role) else {
        return Err(ApiError::invalid(
            "invalid_role",
            "role must be owner, moderator or member.",
        ));
    };
    state.rate.write(auth.uid).await?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    change(&state, &group, auth.uid, target, GroupChange::Role(role)).await
}

pub(super) const REMOVE_OP: Op = Op::delete(
    "/api/v1/groups/{id}/members/{uid}",
    "groups",
    "Remove a member (owners; moderators remove members only); the last owner: 409",
)
.reply(Reply::Of(Typed::of::<Membership>()))
.errors(&[401, 403, 404, 409, 429, 503]);

/// `DELETE /api/v1/groups/{id}/members/{uid}`.
pub(crate) async fn remove(
    State(state): State<AppState>,
    auth: AuthUser,
    Path((id, uid)): Path<(String, String)>,
) -> ApiResult<Json<Membership>> {
    auth.require(SCOPE_WRITE)?;
    let gid = group_id(&id)?;
    let target = path_id(&uid, "member")?;
    state.rate.write(auth.uid).await?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    change(&state, &group, auth.uid, target, GroupChange::Remove).await
}

pub(super) const REQUESTS_OP: Op = Op::get(
    "/api/v1/groups/{id}/requests",
    "groups",
    "Pending join requests, oldest first (owners, moderators)",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<MemberPage>()))
.errors(&[400, 401, 403, 404, 503]);

/// `GET /api/v1/groups/{id}/requests`.
pub(crate) async fn requests(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<MemberPage>> {
    let gid = group_id(&id)?;
    let (cursor, count) = user_paging(&q)?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    if !group.role.is_some_and(GroupRole::is_staff) {
        return Err(refused(Refused::Forbidden));
    }
    let (rows, next) = state
        .store
        .groups()
        .member_page(gid, true, &cursor, count)
        .await?;
    member_page(&state, rows, next).await
}

pub(super) const AUTHORIZE_OP: Op = Op::post(
    "/api/v1/groups/{id}/requests/{uid}/authorize",
    "groups",
    "Accept a join request (owners, moderators); 404 if none",
)
.reply(Reply::Of(Typed::of::<Membership>()))
.errors(&[401, 403, 404, 429, 503]);

/// `POST /api/v1/groups/{id}/requests/{uid}/authorize`.
pub(crate) async fn authorize(
    State(state): State<AppState>,
    auth: AuthUser,
    Path((id, uid)): Path<(String, String)>,
) -> ApiResult<Json<Membership>> {
    decide(state, auth, &id, &uid, GroupChange::Authorize).await
}

pub(super) const REJECT_OP: Op = Op::post(
    "/api/v1/groups/{id}/requests/{uid}/reject",
    "groups",
    "Refuse a join request (owners, moderators); 404 if none",
)
.reply(Reply::Of(Typed::of::<Membership>()))
.errors(&[401, 403, 404, 429, 503]);

/// `POST /api/v1/groups/{id}/requests/{uid}/reject`.
pub(crate) async fn reject(
    State(state): State<AppState>,
    auth: AuthUser,
    Path((id, uid)): Path<(String, String)>,
) -> ApiResult<Json<Membership>> {
    decide(state, auth, &id, &uid, GroupChange::Reject).await
}

async fn decide(
    state: AppState,
    auth: AuthUser,
    id: &str,
    uid: &str,
    what: GroupChange,
) -> ApiResult<Json<Membership>> {
    auth.require(SCOPE_WRITE)?;
    let gid = group_id(id)?;
    let target = path_id(uid, "request")?;
    state.rate.write(auth.uid).await?;
    let group = find(&state, gid, Some(auth.uid)).await?;
    change(&state, &group, auth.uid, target, what).await
}
