//! Who may see what: the visibility policy every read path and handler
//! applies (a private account's statuses, and replies to them, reach only
//! the author and approved followers).

use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::model::Status;
use crate::state::AppState;
use crate::store::statuses::Shown;
use crate::store::StoreError;
use std::collections::HashMap;

/// Whether `viewer` may see what `author` posts: everyone for public
/// accounts; the author and followers for private ones.
pub async fn can_see(state: &AppState, viewer: Option<&AuthUser>, author: u64) -> ApiResult<bool> {
    if viewer.is_some_and(|v| v.uid == author) {
        return Ok(true);
    }
    let user = state.store.user(author).await?;
    if !user.private {
        return Ok(true);
    }
    match viewer {
        Some(v) => Ok(state.store.is_following(v.uid, author).await?),
        None => Ok(false),
    }
}

/// The status `sid` if `viewer` may see it; else 404, as if it did not
/// exist (a private account's statuses are not even acknowledged).
pub async fn visible(state: &AppState, viewer: Option<&AuthUser>, sid: u64) -> ApiResult<Status> {
    let status = state.store.status(sid).await.map_err(|e| match e {
        StoreError::NotFound(_) => ApiError::not_found("No such status."),
        e => e.into(),
    })?;
    if !may_see(state, viewer, &status).await? {
        return Err(ApiError::not_found("No such status."));
    }
    Ok(status)
}

/// Whether `viewer` may see `status`: its author's statuses, and for a reply
/// to a private account's status, that account's too.
pub async fn may_see(
    state: &AppState,
    viewer: Option<&AuthUser>,
    status: &Status,
) -> ApiResult<bool> {
    let author: u64 = status.uid.parse().unwrap_or(0);
    if !can_see(state, viewer, author).await? {
        return Ok(false);
    }
    match status
        .audience
        .as_deref()
        .and_then(|p| p.parse::<u64>().ok())
    {
        Some(p) => can_see(state, viewer, p).await,
        None => Ok(true),
    }
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
