//! What the group handlers share: finding a group, answering a refusal,
//! changing a membership and the per-user group bound.

use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::http::shared::extract::{detached, path_id};
use crate::http::shared::visibility::may_read_group;
use crate::model::GroupChange;
use crate::model::GroupKind;
use crate::model::Id;
use crate::model::{Group, Membership};
use crate::state::AppState;
use crate::store::entities::groups::{Refused, Standing};
use crate::store::StoreError;
use axum::http::StatusCode;
use axum::Json;

pub(super) fn group_id(raw: &str) -> ApiResult<u64> {
    path_id(raw, "group")
}

pub(super) fn no_group() -> ApiError {
    ApiError::not_found("No such group.")
}

/// The group as `viewer` sees it, or 404.
pub(super) async fn find(state: &AppState, gid: u64, viewer: Option<u64>) -> ApiResult<Group> {
    state
        .store
        .groups()
        .get(gid, viewer)
        .await
        .map_err(|e| match e {
            StoreError::NotFound(_) => no_group(),
            e => e.into(),
        })
}

/// A refused change, in the contract's terms.
pub(super) fn refused(r: Refused) -> ApiError {
    match r {
        Refused::Missing => no_group(),
        Refused::Forbidden => ApiError::forbidden("Your role in this group does not allow that."),
        Refused::NotMember => ApiError::not_found("That user is not a member of the group."),
        Refused::NoRequest => ApiError::not_found("That user has no pending request."),
        Refused::LastOwner => ApiError::conflict(
            "last_owner",
            "A group keeps at least one owner: make another member an owner first.",
        ),
        Refused::Full => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "group_full",
            "The group has as many members as it may.",
        )
        .retry_after(3600),
    }
}

pub(super) fn membership(gid: u64, uid: u64, s: &Standing) -> Json<Membership> {
    Json(Membership {
        group_id: Id(gid),
        user_id: Id(uid),
        member: s.role.is_some(),
        role: s.role,
        requested: s.requested,
    })
}

/// Applies a change, telling every stream when it ends a member's
/// reading of a private group.
pub(super) async fn change(
    state: &AppState,
    group: &Group,
    actor: u64,
    target: u64,
    what: GroupChange,
) -> ApiResult<Json<Membership>> {
    let gid: u64 = group.id.get();
    let store = state.store.clone();
    let max = state.cfg.max_group_members;
    let outcome =
        detached(async move { Ok(store.groups().change(gid, actor, target, what, max).await?) })
            .await?;
    let standing = outcome.map_err(refused)?;
    if group.kind == GroupKind::Private && standing.role.is_none() {
        state.store.groups().announce_left(gid, target).await?;
    }
    Ok(membership(gid, target, &standing))
}

/// Whether `uid` may be in one more group.
pub(super) async fn room_for(state: &AppState, uid: u64) -> ApiResult<()> {
    if state.store.groups().count(uid).await? >= state.cfg.max_groups_per_user {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "group_limit",
            format!(
                "A user is in at most {} groups; leave one first.",
                state.cfg.max_groups_per_user
            ),
        )
        .retry_after(3600));
    }
    Ok(())
}

/// The group, when `viewer` may read its content (404 otherwise, as if
/// it did not exist).
pub(super) async fn readable(
    state: &AppState,
    viewer: Option<&AuthUser>,
    gid: u64,
) -> ApiResult<()> {
    match may_read_group(state, viewer, gid).await? {
        Some(true) => Ok(()),
        _ => Err(no_group()),
    }
}
