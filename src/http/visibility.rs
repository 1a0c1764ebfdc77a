//! Who may see what: the visibility policy every read path and handler
//! applies. A private account's statuses, and replies to them, reach only
//! the author and approved followers; a user blocked by an author sees
//! none of the author's statuses nor reposts of them (`crate::hides`).

use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::hides::{self, Hides};
use crate::model::{Status, User};
use crate::state::AppState;
use crate::store::statuses::Shown;
use crate::store::StoreError;
use std::collections::HashMap;

/// Whether `author` blocks `viewer` (then the author's statuses are 404 to
/// the viewer and their profile timeline too).
pub async fn blocked_by(
    state: &AppState,
    viewer: Option<&AuthUser>,
    author: u64,
) -> ApiResult<bool> {
    match viewer {
        Some(v) if v.uid != author => {
            Ok(state.store.relation_bits(v.uid, author).await? & hides::UNSEEABLE != 0)
        }
        _ => Ok(false),
    }
}

/// Whether `viewer` may see what `author` posts: not if the author blocks
/// the viewer; else everyone for public accounts, the author and followers
/// for private ones.
pub async fn can_see(state: &AppState, viewer: Option<&AuthUser>, author: u64) -> ApiResult<bool> {
    if blocked_by(state, viewer, author).await? {
        return Ok(false);
    }
    privacy_allows(state, viewer, author).await
}

/// The privacy half of [`can_see`]: public account, the author, or a follower.
async fn privacy_allows(
    state: &AppState,
    viewer: Option<&AuthUser>,
    author: u64,
) -> ApiResult<bool> {
    if viewer.is_some_and(|v| v.uid == author) {
        return Ok(true);
    }
    match state.store.user(author).await {
        Ok(user) => privacy_allows_user(state, viewer, &user).await,
        // An account being deleted: its statuses are on their way out.
        Err(StoreError::NotFound(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// [`privacy_allows`] for a user already read: the user themself, a public
/// account, or a follower of a private one.
pub async fn privacy_allows_user(
    state: &AppState,
    viewer: Option<&AuthUser>,
    user: &User,
) -> ApiResult<bool> {
    let author: u64 = user.id.parse().unwrap_or(0);
    if !user.private || viewer.is_some_and(|v| v.uid == author) {
        return Ok(true);
    }
    match viewer {
        Some(v) => Ok(state.store.is_following(v.uid, author).await?),
        None => Ok(false),
    }
}

/// Who a status is by, for relations: its author, and the author of the
/// status it reposts (0 when none).
fn actors(status: &Status) -> [u64; 2] {
    [
        status.uid.parse().unwrap_or(0),
        id_of(&status.repost_of_uid).unwrap_or(0),
    ]
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

/// [`visible`], with the author's account (read once: a writer that
/// needs it, a like for its event's privacy, does not read it again). The
/// status comes without fresh counts, and the author's account with the
/// viewer's relation to them in one round trip.
pub async fn visible_with_author(
    state: &AppState,
    viewer: &AuthUser,
    sid: u64,
) -> ApiResult<(Status, User)> {
    let not_found = |e: StoreError| match e {
        StoreError::NotFound(_) => ApiError::not_found("No such status."),
        e => e.into(),
    };
    let status = state.store.status_uncounted(sid).await.map_err(not_found)?;
    let author_id: u64 = status.uid.parse().unwrap_or(0);
    let (author, bits) = state
        .store
        .user_with_relation(author_id, viewer.uid)
        .await
        .map_err(not_found)?;
    let blocked = viewer.uid != author_id && bits & hides::UNSEEABLE != 0;
    if !may_see_by(state, Some(viewer), &status, Some((&author, blocked))).await? {
        return Err(ApiError::not_found("No such status."));
    }
    Ok((status, author))
}

/// Whether `viewer` may see `status`: its author's statuses; for a reply
/// to a private account's status, that account's too; for a repost, the
/// reposted author must not block the viewer.
pub async fn may_see(
    state: &AppState,
    viewer: Option<&AuthUser>,
    status: &Status,
) -> ApiResult<bool> {
    may_see_by(state, viewer, status, None).await
}

/// [`may_see`], with the author's account and whether they block the
/// viewer when those were read already.
async fn may_see_by(
    state: &AppState,
    viewer: Option<&AuthUser>,
    status: &Status,
    author_user: Option<(&User, bool)>,
) -> ApiResult<bool> {
    let author: u64 = status.uid.parse().unwrap_or(0);
    let seen = match author_user {
        Some((user, blocked)) => !blocked && privacy_allows_user(state, viewer, user).await?,
        None => can_see(state, viewer, author).await?,
    };
    if !seen {
        return Ok(false);
    }
    if let Some(original) = id_of(&status.repost_of_uid) {
        if blocked_by(state, viewer, original).await? || state.store.suspended().contains(original)
        {
            return Ok(false);
        }
    }
    if !in_group(state, viewer, status).await? {
        return Ok(false);
    }
    match id_of(&status.audience) {
        Some(p) => can_see(state, viewer, p).await,
        None => Ok(true),
    }
}

/// Whether `viewer` may read `gid`'s content: anyone a public or
/// announcement group's, members a private one's; `None` for no such group.
pub async fn may_read_group(
    state: &AppState,
    viewer: Option<&AuthUser>,
    gid: u64,
) -> ApiResult<Option<bool>> {
    let group = match state.store.group(gid, viewer.map(|v| v.uid)).await {
        Ok(g) => g,
        Err(StoreError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(Some(group.kind != "private" || group.role.is_some()))
}

/// The group half of [`may_see`]: a private group's status only for its
/// members.
async fn in_group(state: &AppState, viewer: Option<&AuthUser>, status: &Status) -> ApiResult<bool> {
    if !status.group_private {
        return Ok(true);
    }
    let (Some(v), Some(gid)) = (viewer, id_of(&status.group_id)) else {
        return Ok(false);
    };
    Ok(state
        .store
        .group_standing(gid, v.uid)
        .await?
        .is_some_and(|s| s.role.is_some()))
}

/// Drops the statuses, and reposts of statuses, of anyone `viewer` holds
/// a relation with under `mask` (no privacy check: for a timeline whose
/// author the caller was already allowed to see).
pub async fn without_hidden(
    state: &AppState,
    viewer: Option<&AuthUser>,
    mut statuses: Vec<Shown>,
    mask: u8,
) -> ApiResult<Vec<Shown>> {
    // A suspended author's statuses leave every timeline (this process's
    // set, kept by the hub; the author's own HASH answers other reads).
    let suspended = state.store.suspended();
    if !suspended.is_empty() {
        statuses.retain(|item| !suspended.any(&actors(&item.0.status)));
    }
    let Some(v) = viewer else {
        return Ok(statuses);
    };
    if statuses.is_empty() {
        return Ok(statuses);
    }
    let relations = state.store.hides(v.uid).await?;
    if !relations.is_empty() {
        statuses.retain(|item| !relations.hides_any(&actors(&item.0.status), mask));
    }
    Ok(statuses)
}

fn id_of(field: &Option<String>) -> Option<u64> {
    field.as_deref().and_then(|p| p.parse::<u64>().ok())
}

/// Keeps the statuses `viewer` may see (a private author's only for the
/// author and their followers; none by someone who blocks the viewer, nor
/// reposts of them).
pub async fn only_visible(
    state: &AppState,
    viewer: Option<&AuthUser>,
    statuses: Vec<Shown>,
) -> ApiResult<Vec<Shown>> {
    only_visible_hiding(state, viewer, statuses, hides::UNSEEABLE).await
}

/// [`only_visible`], also dropping the statuses (and reposts of them) of
/// anyone `viewer` holds a relation with under `mask` (for the mentions
/// timeline, any block or mute: `hides::FEED`).
pub async fn only_visible_hiding(
    state: &AppState,
    viewer: Option<&AuthUser>,
    statuses: Vec<Shown>,
    mask: u8,
) -> ApiResult<Vec<Shown>> {
    let relations = match viewer {
        Some(v) if !statuses.is_empty() => state.store.hides(v.uid).await?,
        _ => Hides::default(),
    };
    let mut sees: HashMap<u64, bool> = HashMap::new();
    let mut groups: HashMap<u64, bool> = HashMap::new();
    let mut kept = Vec::with_capacity(statuses.len());
    for item in statuses {
        let status = &item.0.status;
        let by = actors(status);
        if relations.hides_any(&by, mask) || state.store.suspended().any(&by) {
            continue;
        }
        let author = by[0];
        let mut ok = true;
        for who in std::iter::once(author).chain(id_of(&status.audience)) {
            let allowed = match sees.get(&who) {
                Some(allowed) => *allowed,
                None => {
                    let allowed = relations.bits(who) & hides::UNSEEABLE == 0
                        && privacy_allows(state, viewer, who).await?;
                    sees.insert(who, allowed);
                    allowed
                }
            };
            ok &= allowed;
        }
        if ok && status.group_private {
            let gid = id_of(&status.group_id).unwrap_or(0);
            ok = match groups.get(&gid) {
                Some(member) => *member,
                None => {
                    let member = in_group(state, viewer, status).await?;
                    groups.insert(gid, member);
                    member
                }
            };
        }
        if ok {
            kept.push(item);
        }
    }
    Ok(kept)
}
