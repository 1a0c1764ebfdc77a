//! Relationships: follow and unfollow, block and unblock, mute and unmute,
//! follow requests (listed, authorized, rejected), each made by our own
//! `/api/v1/users/{id}/...` call and answered with the `Relationship` as
//! it stands after; `GET /api/v1/accounts/relationships` reads them.
//!
//! A relationship is read from the store as our read paths read it (who
//! follows whom, the follow requests, the hiding bits of [`crate::hides`]):
//! facts, not rules.

use super::render::{users_page, viewer};
use super::reply::{entity, error, ok, unavailable, Refused, Reply};
use super::shared::{Ctx, Mastodon};
use crate::hides::{BLOCKED_BY, BLOCKS, MUTES};
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

/// Most accounts one `relationships` request asks about.
const MOST_RELATIONSHIPS: usize = 80;

/// `me`'s relationship to `other`, as Mastodon's `Relationship`.
async fn relationship(m: &Mastodon, me: u64, other: u64) -> Result<Value, Refused> {
    let store = &m.app.store;
    let (following, followed_by, requested, requested_by, bits) = futures::join!(
        store.follows().is_following(me, other),
        store.follows().is_following(other, me),
        store.follows().requests().has_requested(me, other),
        store.follows().requests().has_requested(other, me),
        store.relations().bits(me, other),
    );
    let fail = |e: crate::store::StoreError| unavailable(&e);
    let bits = bits.map_err(fail)?;
    let following = following.map_err(fail)?;
    Ok(json!({
        "id": other.to_string(),
        "following": following,
        "showing_reblogs": following,
        "notifying": false,
        "languages": Value::Null,
        "followed_by": followed_by.map_err(fail)?,
        "blocking": bits & BLOCKS != 0,
        "blocked_by": bits & BLOCKED_BY != 0,
        "muting": bits & MUTES != 0,
        "muting_notifications": bits & MUTES != 0,
        "requested": requested.map_err(fail)?,
        "requested_by": requested_by.map_err(fail)?,
        "domain_blocking": false,
        "endorsed": false,
        "note": "",
    }))
}

/// The caller's id, or 401.
async fn me(m: &Mastodon, cx: &Ctx) -> Result<u64, Refused> {
    viewer(m, cx)
        .await
        .ok_or_else(|| error(StatusCode::UNAUTHORIZED, "The access token is invalid"))
}

/// `GET /api/v1/accounts/relationships?id[]=..`: one per account that
/// exists, in the order asked.
pub(super) async fn relationships(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let me = me(&m, &cx).await?;
    let mut ids: Vec<u64> = cx
        .params("id")
        .iter()
        .filter_map(|id| id.parse().ok())
        .collect();
    ids.dedup();
    ids.truncate(MOST_RELATIONSHIPS);
    let exist = m
        .app
        .store
        .users()
        .exist(&ids)
        .await
        .map_err(|e| unavailable(&e))?;
    let mut out = Vec::new();
    for (id, exists) in ids.into_iter().zip(exist) {
        if exists {
            out.push(relationship(&m, me, id).await?);
        }
    }
    Ok(entity(StatusCode::OK, Value::Array(out)))
}

/// Which of our calls an account action is.
#[derive(Clone, Copy)]
enum Action {
    Follow,
    Block,
    Mute,
}

/// `POST /api/v1/accounts/{id}/<action>` (`on`) or its undoing: our call,
/// then the relationship after.
async fn act(m: &Mastodon, cx: &Ctx, id: &str, action: Action, on: bool) -> Reply {
    let id = super::shared::id_part(id)?;
    let me = me(m, cx).await?;
    let what = match action {
        Action::Follow => "follow",
        Action::Block => "block",
        Action::Mute => "mute",
    };
    let method = if on { Method::POST } else { Method::DELETE };
    let answer = m
        .inner
        .call(
            method,
            &format!("/api/v1/users/{id}/{what}"),
            &cx.caller,
            None,
        )
        .await;
    // Following someone already followed is no error in Mastodon.
    if answer.status != StatusCode::CONFLICT || !matches!(action, Action::Follow) {
        ok(answer)?;
    }
    let other: u64 = id.parse().unwrap_or(0);
    Ok(entity(StatusCode::OK, relationship(m, me, other).await?))
}

macro_rules! actions {
    ($($name:ident => $action:ident, $on:expr;)*) => {$(
        pub(super) async fn $name(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
            act(&m, &cx, &id, Action::$action, $on).await
        }
    )*};
}

actions! {
    follow => Follow, true;
    unfollow => Follow, false;
    block => Block, true;
    unblock => Block, false;
    mute => Mute, true;
    unmute => Mute, false;
}

/// `GET /api/v1/follow_requests`: who asked to follow the caller.
pub(super) async fn requests(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    users_page(&m, &cx, "/api/v1/follow_requests").await
}

/// `GET /api/v1/blocks`, `/api/v1/mutes`.
pub(super) async fn blocks(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    users_page(&m, &cx, "/api/v1/blocks").await
}

pub(super) async fn mutes(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    users_page(&m, &cx, "/api/v1/mutes").await
}

/// `GET /api/v1/accounts/{id}/followers`, `following`.
pub(super) async fn followers(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = super::shared::id_part(&id)?;
    users_page(&m, &cx, &format!("/api/v1/users/{id}/followers")).await
}

pub(super) async fn following(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = super::shared::id_part(&id)?;
    users_page(&m, &cx, &format!("/api/v1/users/{id}/following")).await
}

/// `POST /api/v1/follow_requests/{id}/authorize` (`approve`) or `reject`.
async fn answer_request(m: &Mastodon, cx: &Ctx, id: &str, approve: bool) -> Reply {
    let id = super::shared::id_part(id)?;
    let me = me(m, cx).await?;
    let verb = if approve { "authorize" } else { "reject" };
    ok(m.inner
        .call(
            Method::POST,
            &format!("/api/v1/follow_requests/{id}/{verb}"),
            &cx.caller,
            None,
        )
        .await)?;
    let other: u64 = id.parse().unwrap_or(0);
    Ok(entity(StatusCode::OK, relationship(m, me, other).await?))
}

pub(super) async fn authorize(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    answer_request(&m, &cx, &id, true).await
}

pub(super) async fn reject(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    answer_request(&m, &cx, &id, false).await
}
