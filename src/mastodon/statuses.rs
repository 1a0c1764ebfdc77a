//! Statuses: post (`status`, `in_reply_to_id`, `Idempotency-Key`), read,
//! delete, edit and its history, the source, the context, favourite,
//! reblog and bookmark (and their undoing), who favourited and reblogged,
//! each through our own `/api/v1/statuses/...`, answered as Mastodon's
//! `Status` (a favourite answers the status as it is after it).
//!
//! Visibility is an account's here (a private account's statuses reach its
//! followers): a post asking for the visibility its account has is taken,
//! any other (`unlisted`, `direct`, `private` from a public account) is
//! refused, as media, polls, content warnings and scheduling are (422),
//! never silently posted otherwise.

use super::entities::{account, iso8601};
use super::form::fields;
use super::paging::{cursor_page, Window};
use super::render::{accounts, fetch, one};
use super::reply::{entity, error, ok, unavailable, Reply};
use super::shared::{id_part, Ctx, Mastodon};
use crate::auth::AuthUser;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use serde_json::{json, Value};

/// Most accounts a `favourited_by` / `reblogged_by` page holds.
const MOST_ACCOUNTS: usize = 80;

/// Why a post's fields cannot be posted here (`None`: they can).
fn unsupported(f: &std::collections::HashMap<String, String>, private: bool) -> Option<String> {
    let has = |k: &str| f.get(k).is_some_and(|v| !v.trim().is_empty());
    if has("media_ids") {
        return Some("Media attachments are not supported on this server".into());
    }
    if f.keys().any(|k| k.starts_with("poll")) {
        return Some("Polls are not supported on this server".into());
    }
    if has("spoiler_text") {
        return Some("Content warnings are not supported on this server".into());
    }
    if has("scheduled_at") {
        return Some("Scheduled statuses are not supported on this server".into());
    }
    let own = if private { "private" } else { "public" };
    match f.get("visibility").map(String::as_str) {
        None | Some("") => None,
        Some(v) if v == own => None,
        Some(v) => Some(format!(
            "Visibility {v:?} is not available: statuses here take their account's visibility ({own})"
        )),
    }
}

/// The caller of a write, or 401 in Mastodon's shape.
async fn writer(m: &Mastodon, cx: &Ctx) -> Result<AuthUser, super::reply::Refused> {
    let token = cx.caller.token.as_deref().unwrap_or_default();
    AuthUser::from_token(&m.app, token)
        .await
        .map_err(|_| error(StatusCode::UNAUTHORIZED, "The access token is invalid"))
}

/// `POST /api/v1/statuses` (a form or JSON).
pub(super) async fn create(
    cx: Ctx,
    headers: HeaderMap,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let me = writer(&m, &cx).await?;
    let f = fields(&headers, &body, None);
    if f.get("visibility").map(String::as_str) == Some("direct") {
        let mut plain = f.clone();
        plain.remove("visibility");
        if let Some(why) = unsupported(&plain, me.private) {
            return Err(error(StatusCode::UNPROCESSABLE_ENTITY, &why));
        }
        let text = f.get("status").map_or("", String::as_str);
        if let Some(reply_to) = plain.get("in_reply_to_id").filter(|r| !r.is_empty()) {
            return reply_direct(&m, &cx, me.uid, reply_to, text).await;
        }
        return post_direct(&m, &cx, text).await;
    }
    if let Some(why) = unsupported(&f, me.private) {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, &why));
    }
    let mut ours = json!({ "message": f.get("status").cloned().unwrap_or_default() });
    if let Some(reply_to) = f.get("in_reply_to_id").filter(|v| !v.is_empty()) {
        ours["reply_to"] = json!(reply_to);
    }
    let posted = ok(m
        .inner
        .call(Method::POST, "/api/v1/statuses", &cx.caller, Some(&ours))
        .await)?;
    Ok(entity(StatusCode::OK, one(&m, &cx, posted).await?))
}

/// `GET /api/v1/statuses/{id}`: a status, or a message of the caller's
/// conversations as a `direct` status.
pub(super) async fn show(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    match fetch(&m, &cx, id).await {
        Err(e) if e.status() == StatusCode::NOT_FOUND => {
            match super::render::message_thread(&m, &cx, id).await? {
                Some(thread) => Ok(entity(StatusCode::OK, thread.status)),
                None => Err(e),
            }
        }
        found => Ok(entity(StatusCode::OK, found?)),
    }
}

/// `DELETE /api/v1/statuses/{id}`: the status as it was, with its `text`
/// (as Mastodon answers, for "delete and redraft").
pub(super) async fn destroy(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    let path = format!("/api/v1/statuses/{id}");
    let ours = ok(m.inner.call(Method::GET, &path, &cx.caller, None).await)?;
    let mut was = one(&m, &cx, ours.clone()).await?;
    ok(m.inner.call(Method::DELETE, &path, &cx.caller, None).await)?;
    was["text"] = ours["message"].clone();
    Ok(entity(StatusCode::OK, was))
}

/// `PUT /api/v1/statuses/{id}`: an edit (`status`).
pub(super) async fn edit(
    cx: Ctx,
    headers: HeaderMap,
    Path(id): Path<String>,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let id = id_part(&id)?;
    let me = writer(&m, &cx).await?;
    let f = fields(&headers, &body, None);
    if let Some(why) = unsupported(&f, me.private) {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, &why));
    }
    let change = json!({ "message": f.get("status").cloned().unwrap_or_default() });
    let edited = ok(m
        .inner
        .call(
            Method::PATCH,
            &format!("/api/v1/statuses/{id}"),
            &cx.caller,
            Some(&change),
        )
        .await)?;
    Ok(entity(StatusCode::OK, one(&m, &cx, edited).await?))
}

/// `GET /api/v1/statuses/{id}/source`: the text as written.
pub(super) async fn source(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    let ours = ok(m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/statuses/{id}"),
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(
        StatusCode::OK,
        json!({ "id": id, "text": ours["message"], "spoiler_text": "" }),
    ))
}

/// `GET /api/v1/statuses/{id}/history`: each version as a `StatusEdit`,
/// oldest first.
pub(super) async fn history(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    let now = fetch(&m, &cx, id).await?;
    let versions = ok(m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/statuses/{id}/history"),
            &cx.caller,
            None,
        )
        .await)?;
    let edits: Vec<Value> = versions["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .map(|v| {
                    let links = super::entities::Links {
                        base: &cx.base,
                        mentions: &strings(&v["mentions"]),
                        tags: &strings(&v["hashtags"]),
                    };
                    json!({
                        "content": super::entities::html(v["message"].as_str().unwrap_or_default(), &links),
                        "spoiler_text": "",
                        "sensitive": false,
                        "created_at": iso8601(v["at"].as_f64().unwrap_or(0.0)),
                        "account": now["account"],
                        "poll": Value::Null,
                        "media_attachments": [],
                        "emojis": [],
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(entity(StatusCode::OK, Value::Array(edits)))
}

/// A JSON array of strings as strings.
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `GET /api/v1/statuses/{id}/context`: ancestors and descendants, oldest
/// first (the first 200 descendants, as our context's largest page).
pub(super) async fn context(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    let answer = m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/statuses/{id}/context?count=200"),
            &cx.caller,
            None,
        )
        .await;
    if answer.status == StatusCode::NOT_FOUND {
        // A message: its conversation, before and after it.
        if let Some(thread) = super::render::message_thread(&m, &cx, id).await? {
            return Ok(entity(
                StatusCode::OK,
                json!({ "ancestors": thread.before, "descendants": thread.after }),
            ));
        }
    }
    let ours = ok(answer)?;
    let list = |k: &str| ours[k].as_array().cloned().unwrap_or_default();
    let ancestors = super::render::many(&m, &cx, list("ancestors")).await?;
    let descendants = super::render::many(&m, &cx, list("descendants")).await?;
    Ok(entity(
        StatusCode::OK,
        json!({ "ancestors": ancestors, "descendants": descendants }),
    ))
}

/// Which of our calls a mark is made by.
#[derive(Clone, Copy)]
pub(super) enum Mark {
    Favourite,
    Bookmark,
}

/// `POST /api/v1/statuses/{id}/favourite`, `bookmark` (`on`) and their
/// undoing: the status as it is after.
async fn mark(m: &Mastodon, cx: &Ctx, id: &str, mark: Mark, on: bool) -> Reply {
    let id = id_part(id)?;
    let what = match mark {
        Mark::Favourite => "like",
        Mark::Bookmark => "bookmark",
    };
    let method = if on { Method::POST } else { Method::DELETE };
    ok(m.inner
        .call(
            method,
            &format!("/api/v1/statuses/{id}/{what}"),
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(StatusCode::OK, fetch(m, cx, id).await?))
}

pub(super) async fn favourite(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    mark(&m, &cx, &id, Mark::Favourite, true).await
}

pub(super) async fn unfavourite(
    cx: Ctx,
    Path(id): Path<String>,
    State(m): State<Mastodon>,
) -> Reply {
    mark(&m, &cx, &id, Mark::Favourite, false).await
}

pub(super) async fn bookmark(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    mark(&m, &cx, &id, Mark::Bookmark, true).await
}

pub(super) async fn unbookmark(
    cx: Ctx,
    Path(id): Path<String>,
    State(m): State<Mastodon>,
) -> Reply {
    mark(&m, &cx, &id, Mark::Bookmark, false).await
}

/// `POST /api/v1/statuses/{id}/reblog`: the reblog (a status whose
/// `reblog` is the original).
pub(super) async fn reblog(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    let repost = ok(m
        .inner
        .call(
            Method::POST,
            &format!("/api/v1/statuses/{id}/repost"),
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(StatusCode::OK, one(&m, &cx, repost).await?))
}

/// `POST /api/v1/statuses/{id}/unreblog`: the original, as it is after.
pub(super) async fn unreblog(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    ok(m.inner
        .call(
            Method::DELETE,
            &format!("/api/v1/statuses/{id}/repost"),
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(StatusCode::OK, fetch(&m, &cx, id).await?))
}

/// `GET /api/v1/statuses/{id}/favourited_by`: accounts, paged by `Link`.
pub(super) async fn favourited_by(
    cx: Ctx,
    Path(id): Path<String>,
    State(m): State<Mastodon>,
) -> Reply {
    let id = id_part(&id)?;
    let limit = cx
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(40)
        .clamp(1, MOST_ACCOUNTS);
    let mut path = format!("/api/v1/statuses/{id}/liked_by?count={limit}");
    if let Some(cursor) = cx.param("max_id").filter(|c| !c.is_empty()) {
        path.push('&');
        path.push_str(&serde_urlencoded::to_string([("cursor", cursor)]).unwrap_or_default());
    }
    let answer = m.inner.call(Method::GET, &path, &cx.caller, None).await;
    if answer.status == StatusCode::BAD_REQUEST && cx.param("max_id").is_some() {
        // A cursor that is not one of ours names no place: nothing there.
        return Ok(cursor_page(&cx, Vec::new(), None));
    }
    let next = super::paging::next_cursor(&answer);
    let page = ok(answer)?;
    Ok(cursor_page(
        &cx,
        accounts(&page["users"], &cx),
        next.as_deref(),
    ))
}

/// Reposts of one status read for `reblogged_by` (a status reposted by
/// more is paged over the first this many read).
const MOST_REPOSTS_READ: usize = 5_000;

/// `GET /api/v1/statuses/{id}/reblogged_by`: who reposted it (those whose
/// accounts stand), newest repost first, for whoever may see the status;
/// paged as Mastodon pages it (`limit` 1–80, 40; `max_id`, `since_id`,
/// `min_id` by the reposts' ids, a `Link` with them).
pub(super) async fn reblogged_by(
    cx: Ctx,
    Path(id): Path<String>,
    State(m): State<Mastodon>,
) -> Reply {
    let id = id_part(&id)?;
    fetch(&m, &cx, id).await?;
    let window = Window::up_to(&cx, 40, MOST_ACCOUNTS)?;
    let sid: u64 = id.parse().unwrap_or(0);
    let reposts = m
        .app
        .store
        .reposts()
        .reposters(sid, MOST_REPOSTS_READ)
        .await
        .map_err(|e| unavailable(&e))?;
    let (upper, lower) = (
        window.max_id.unwrap_or(u64::MAX),
        window.since_id.or(window.min_id).unwrap_or(0),
    );
    let mut inside: Vec<(u64, u64)> = reposts
        .into_iter()
        .filter(|(_, repost)| *repost < upper && *repost > lower)
        .collect();
    if window.since_id.is_none() && window.min_id.is_some() {
        // The ones just above `min_id`: the oldest of those above it.
        let skip = inside.len().saturating_sub(window.limit);
        inside.drain(..skip);
    }
    inside.truncate(window.limit);
    let uids: Vec<u64> = inside.iter().map(|(uid, _)| *uid).collect();
    let users = m
        .app
        .store
        .users()
        .many(&uids)
        .await
        .map_err(|e| unavailable(&e))?;
    let by_uid: std::collections::HashMap<String, Value> = users
        .iter()
        .filter_map(|u| Some((u.id.to_string(), serde_json::to_value(u).ok()?)))
        .collect();
    // Each account under its repost's id, for the page's links.
    let listed: Vec<(u64, Value)> = inside
        .iter()
        .filter_map(|(uid, repost)| {
            let user = by_uid.get(&uid.to_string())?;
            Some((*repost, account(user, &cx.base)))
        })
        .collect();
    let links = super::paging::links_by(
        &cx,
        listed.first().map(|(r, _)| r.to_string()),
        listed.last().map(|(r, _)| r.to_string()),
    );
    let list = listed.into_iter().map(|(_, a)| a).collect();
    Ok(super::paging::with_link(
        entity(StatusCode::OK, Value::Array(list)),
        links,
    ))
}

/// A direct status in reply to `reply_to`: a message to the conversation
/// that holds that message (one of the caller's
/// [`super::render::RECENT_CONVERSATIONS`] most recent), as a Mastodon client replies in
/// a conversation; anything else is no message of theirs to answer (422).
async fn reply_direct(m: &Mastodon, cx: &Ctx, uid: u64, reply_to: &str, text: &str) -> Reply {
    let held = super::render::conversation_of(m, uid, reply_to).await?;
    let Some(cid) = held else {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "A direct reply answers a message of one of your conversations",
        ));
    };
    let sent = ok(m
        .inner
        .call(
            Method::POST,
            &format!("/api/v1/conversations/{cid}/messages"),
            &cx.caller,
            Some(&json!({ "text": text })),
        )
        .await)?;
    let people = super::render::participants(m, cx, cid)
        .await?
        .ok_or_else(|| error(StatusCode::NOT_FOUND, "Record not found"))?;
    Ok(entity(
        StatusCode::OK,
        super::render::message_status(&sent, &people, &cx.base),
    ))
}

/// A status posted with `visibility: direct`: a message to the users its
/// text mentions (our `POST /api/v1/conversations`: a pair's one direct
/// conversation, or a new group one for more), answered as the status it
/// is there.
pub(super) async fn post_direct(m: &Mastodon, cx: &Ctx, text: &str) -> Reply {
    let uid = writer(m, cx).await?.uid;
    let mut ids: Vec<String> = Vec::new();
    for (_, sigil, word) in crate::text::spans(text) {
        if sigil != '@' {
            continue;
        }
        if let Some(a) = super::render::find(m, cx, word).await? {
            let id = a["id"].as_str().unwrap_or_default().to_string();
            if id != uid.to_string() && !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    if ids.is_empty() {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "A direct status must mention the users it is for",
        ));
    }
    let made = ok(m
        .inner
        .call(
            Method::POST,
            "/api/v1/conversations",
            &cx.caller,
            Some(&json!({ "participants": ids, "text": text })),
        )
        .await)?;
    let people: Vec<Value> = made["participants"].as_array().cloned().unwrap_or_default();
    match &made["last_message"] {
        Value::Null => Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "The message was not found after it was sent; try again",
        )),
        msg => Ok(entity(
            StatusCode::OK,
            super::render::message_status(msg, &people, &cx.base),
        )),
    }
}
