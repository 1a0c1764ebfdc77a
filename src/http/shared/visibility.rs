//! Who may see what: the visibility policy every read path and handler
//! applies. A private account's statuses, and replies to them, reach only
//! the author and approved followers; a user blocked by an author sees
//! none of the author's statuses nor reposts of them ([`crate::hides`]).

use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::hides;
use crate::model::GroupKind;
use crate::model::Id;
use crate::model::{Status, User};
use crate::state::AppState;
use crate::store::entities::statuses::Shown;
use crate::store::StoreError;
use crate::visibility::{Reach, Sight};

/// Whether `author` blocks `viewer` (then the author's statuses are 404 to
/// the viewer and their profile timeline too).
pub(crate) async fn blocked_by(
    state: &AppState,
    viewer: Option<&AuthUser>,
    author: u64,
) -> ApiResult<bool> {
    match viewer {
        Some(v) if v.uid != author => {
            Ok(state.store.relations().bits(v.uid, author).await? & hides::UNSEEABLE != 0)
        }
        _ => Ok(false),
    }
}

/// Whether `viewer` may see what `user` posts, as far as privacy goes: the
/// user themself, a public account, or a follower of a private one.
pub(crate) async fn privacy_allows_user(
    state: &AppState,
    viewer: Option<&AuthUser>,
    user: &User,
) -> ApiResult<bool> {
    let author: u64 = user.id.get();
    if !user.private || viewer.is_some_and(|v| v.uid == author) {
        return Ok(true);
    }
    match viewer {
        Some(v) => Ok(state.store.follows().is_following(v.uid, author).await?),
        None => Ok(false),
    }
}

/// Who a status is by, for relations: its author, and the author of the
/// status it reposts (0 when none).
fn actors(status: &Status) -> [u64; 2] {
    [
        status.uid.get(),
        status.repost_of_uid.map(Id::get).unwrap_or(0),
    ]
}

/// The status `sid` if `viewer` may see it; else 404, as if it did not
/// exist (a private account's statuses are not even acknowledged).
pub(crate) async fn visible(
    state: &AppState,
    viewer: Option<&AuthUser>,
    sid: u64,
) -> ApiResult<Status> {
    let status = state.store.statuses().get(sid).await.map_err(|e| match e {
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
pub(crate) async fn visible_with_author(
    state: &AppState,
    viewer: &AuthUser,
    sid: u64,
) -> ApiResult<(Status, User)> {
    let not_found = |e: StoreError| match e {
        StoreError::NotFound(_) => ApiError::not_found("No such status."),
        e => e.into(),
    };
    let status = state
        .store
        .statuses()
        .get_uncounted(sid)
        .await
        .map_err(not_found)?;
    let author_id: u64 = status.uid.get();
    let (author, bits) = state
        .store
        .relations()
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
pub(crate) async fn may_see(
    state: &AppState,
    viewer: Option<&AuthUser>,
    status: &Status,
) -> ApiResult<bool> {
    may_see_by(state, viewer, status, None).await
}

/// [`may_see`], with the author's account and whether they block the
/// viewer when those were read already. The judgement is
/// [`crate::visibility::Sight`]'s, the one stream replays apply.
async fn may_see_by(
    state: &AppState,
    viewer: Option<&AuthUser>,
    status: &Status,
    author_user: Option<(&User, bool)>,
) -> ApiResult<bool> {
    if let Some((_, true)) = author_user {
        return Ok(false);
    }
    let mut sight = Sight::of(state.store.clone(), viewer.map(|v| v.uid), Reach::Followers).await?;
    if let Some((user, _)) = author_user {
        sight.know(user);
    }
    Ok(sight.status(status).await?)
}

/// Whether `viewer` may read `gid`'s content: anyone a public or
/// announcement group's, members a private one's; `None` for no such group.
pub(crate) async fn may_read_group(
    state: &AppState,
    viewer: Option<&AuthUser>,
    gid: u64,
) -> ApiResult<Option<bool>> {
    let group = match state.store.groups().get(gid, viewer.map(|v| v.uid)).await {
        Ok(g) => g,
        Err(StoreError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(Some(
        group.kind != GroupKind::Private || group.role.is_some(),
    ))
}

/// Keeps the statuses `viewer` may see (a private author's only for the
/// author and their followers; none by someone who blocks the viewer, nor
/// reposts of them).
pub(crate) async fn only_visible(
    state: &AppState,
    viewer: Option<&AuthUser>,
    statuses: Vec<Shown>,
) -> ApiResult<Vec<Shown>> {
    only_visible_hiding(state, viewer, statuses, hides::UNSEEABLE).await
}

/// [`only_visible`], also dropping the statuses (and reposts of them) of
/// anyone `viewer` holds a relation with under `mask` (for the mentions
/// timeline, any block or mute: [`hides::FEED`]).
pub(crate) async fn only_visible_hiding(
    state: &AppState,
    viewer: Option<&AuthUser>,
    statuses: Vec<Shown>,
    mask: u8,
) -> ApiResult<Vec<Shown>> {
    if statuses.is_empty() {
        return Ok(statuses);
    }
    let mut sight = Sight::of(state.store.clone(), viewer.map(|v| v.uid), Reach::Followers).await?;
    let authors: Vec<u64> = statuses
        .iter()
        .flat_map(|item| actors(&item.0.status))
        .chain(
            statuses
                .iter()
                .flat_map(|item| {
                    let s = &item.0.status;
                    [s.audience.map(Id::get), s.reply_to_uid.map(Id::get)]
                })
                .flatten(),
        )
        .collect();
    sight.prefetch(&[], &authors).await?;
    let mut kept = Vec::with_capacity(statuses.len());
    for item in statuses {
        let status = &item.0.status;
        if sight.relations().hides_any(&actors(status), mask) {
            continue;
        }
        if sight.status(status).await? {
            kept.push(item);
        }
    }
    Ok(kept)
}
