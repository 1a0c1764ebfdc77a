//! Conversations as Mastodon shows direct statuses: our conversations
//! (`/api/v1/conversations`: direct for a pair, group for more) read as
//! Mastodon's `Conversation` (`accounts` the others in it, `unread`,
//! `last_status` its newest message as a `direct` status), marked read,
//! left. (A status posted with `visibility: direct` is a message to the
//! users it mentions: `statuses::post_direct`; the `direct` stream's
//! `conversation` events are our `direct_message`s: `streaming`; both make
//! their entities with `render`.)
//!
//! A message is not a status here: it is in no timeline and cannot be
//! favourited or reblogged; its id reads (`GET /api/v1/statuses/:id`, its
//! `/context`: the conversation before and after it) only for the members
//! of its conversation, as a `direct` status (`render::message_thread`).

use super::render::{conversation, viewer};
use super::reply::{entity, error, ok, Refused, Reply};
use super::shared::{id_part, Ctx, Mastodon};
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

/// The caller's id, or 401.
async fn me(m: &Mastodon, cx: &Ctx) -> Result<u64, Refused> {
    viewer(m, cx)
        .await
        .ok_or_else(|| error(StatusCode::UNAUTHORIZED, "The access token is invalid"))
}

/// `GET /api/v1/conversations`: newest activity first, paged by `Link`
/// with our cursor as `max_id`.
pub(super) async fn index(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let uid = me(&m, &cx).await?;
    let limit = cx
        .param("limit")
        .and_then(|l| l.parse::<i64>().ok())
        .unwrap_or(20)
        .clamp(1, 40);
    let mut url = format!("/api/v1/conversations?count={limit}");
    let at = cx.param("max_id").filter(|c| !c.is_empty());
    if let Some(cursor) = at {
        url.push('&');
        url.push_str(&serde_urlencoded::to_string([("cursor", cursor)]).unwrap_or_default());
    }
    let answer = m.inner.call(Method::GET, &url, &cx.caller, None).await;
    if answer.status == StatusCode::BAD_REQUEST && at.is_some() {
        // A cursor that is not one of ours names no place: nothing there.
        return Ok(super::paging::cursor_page(&cx, Vec::new(), None));
    }
    let next = super::paging::next_cursor(&answer);
    let body = ok(answer)?;
    let list: Vec<Value> = body["conversations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| conversation(c, uid, &cx.base))
        .collect();
    Ok(super::paging::cursor_page(&cx, list, next.as_deref()))
}

/// `POST /api/v1/conversations/{id}/read`.
pub(super) async fn read(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    let uid = me(&m, &cx).await?;
    let ours = ok(m
        .inner
        .call(
            Method::POST,
            &format!("/api/v1/conversations/{id}/read"),
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(StatusCode::OK, conversation(&ours, uid, &cx.base)))
}

/// `DELETE /api/v1/conversations/{id}`: a group conversation is left; a
/// pair's direct one stays (422: this server keeps it while both are).
pub(super) async fn remove(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    me(&m, &cx).await?;
    ok(m.inner
        .call(
            Method::POST,
            &format!("/api/v1/conversations/{id}/leave"),
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(StatusCode::OK, json!({})))
}
