//! Timelines: home, a hashtag's, a list's, an account's statuses, and the
//! caller's bookmarks and favourites, each read from our own timeline of
//! the same name and paged as Mastodon pages ([`super::paging`]).

use super::paging::{cursor_page, page, statuses, Window};
use super::render::many;
use super::reply::{error, ok, Reply};
use super::shared::{Ctx, Mastodon};
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use serde_json::Value;

/// A hashtag or list id as a path part: 404 unless it is one.
fn part(v: &str) -> Result<&str, super::reply::Refused> {
    let ok = !v.is_empty() && v.len() <= 100 && v.chars().all(|c| c.is_alphanumeric() || c == '_');
    if ok {
        Ok(v)
    } else {
        Err(error(StatusCode::NOT_FOUND, "Record not found"))
    }
}

/// Our timeline at `path`, paged as the request asks, as Mastodon statuses.
async fn timeline(m: &Mastodon, cx: &Ctx, path: &str, keep: impl Fn(&Value) -> bool) -> Reply {
    let window = Window::of(cx)?;
    let found = statuses(m, cx, path, "", window, keep).await?;
    Ok(page(cx, many(m, cx, found).await?))
}

/// `GET /api/v1/timelines/home`.
pub(super) async fn home(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    timeline(&m, &cx, "/api/v1/timelines/home", |_| true).await
}

/// `GET /api/v1/timelines/tag/{hashtag}` (`only_media`: nothing has media).
pub(super) async fn tag(cx: Ctx, Path(tag): Path<String>, State(m): State<Mastodon>) -> Reply {
    let tag = part(tag.trim_start_matches('#'))?;
    if cx.flag("only_media") {
        return Ok(page(&cx, Vec::new()));
    }
    timeline(&m, &cx, &format!("/api/v1/timelines/tag/{tag}"), |_| true).await
}

/// `GET /api/v1/timelines/list/{id}`.
pub(super) async fn list(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = part(&id)?;
    timeline(&m, &cx, &format!("/api/v1/timelines/list/{id}"), |_| true).await
}

/// `GET /api/v1/accounts/{id}/statuses`: `exclude_replies`,
/// `exclude_reblogs`, `tagged`; `pinned` and `only_media` are empty (no
/// pins, no media here).
pub(super) async fn account(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = super::shared::id_part(&id)?;
    if cx.flag("pinned") || cx.flag("only_media") {
        // Still 404 for an account the caller may not see.
        ok(m.inner
            .call(
                Method::GET,
                &format!("/api/v1/users/{id}"),
                &cx.caller,
                None,
            )
            .await)?;
        return Ok(page(&cx, Vec::new()));
    }
    let (no_replies, no_reblogs) = (cx.flag("exclude_replies"), cx.flag("exclude_reblogs"));
    let tagged = cx
        .param("tagged")
        .map(|t| t.trim_start_matches('#').to_lowercase());
    let read = timeline(&m, &cx, &format!("/api/v1/users/{id}/statuses"), move |s| {
        (!no_replies || s["reply_to"].is_null())
            && (!no_reblogs || s["repost_of"].is_null())
            && tagged.as_ref().is_none_or(|t| {
                s["hashtags"].as_array().is_some_and(|h| {
                    h.iter()
                        .any(|x| x.as_str().is_some_and(|x| x.to_lowercase() == *t))
                })
            })
    })
    .await;
    match read {
        // A private account's statuses, to one who does not follow it:
        // none, as Mastodon shows a locked account's to a stranger.
        Err(refused) if refused.status() == StatusCode::FORBIDDEN => Ok(page(&cx, Vec::new())),
        read => read,
    }
}

/// How one of our lists of statuses pages.
#[derive(Clone, Copy, PartialEq)]
enum Paging {
    /// By `cursor` (`next_cursor` in the answer).
    Cursor,
    /// By `page` number (our likes timeline): the next page while full.
    Numbered,
}

/// Our list of statuses at `path` (`{statuses, next_cursor}` or a plain
/// array), paged by `Link` with our cursor or page number as `max_id`.
async fn listed(m: &Mastodon, cx: &Ctx, path: &str, paging: Paging) -> Reply {
    listed_keeping(m, cx, path, paging, |_| true).await
}

/// [`listed`], keeping the statuses that pass `keep`.
async fn listed_keeping(
    m: &Mastodon,
    cx: &Ctx,
    path: &str,
    paging: Paging,
    keep: impl Fn(&Value) -> bool,
) -> Reply {
    let limit = cx
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(20)
        .clamp(1, 40);
    let mut url = format!("{path}?count={limit}");
    let at = cx.param("max_id").filter(|c| !c.is_empty());
    let number = at.and_then(|p| p.parse::<u64>().ok()).unwrap_or(1).max(1);
    match (paging, at) {
        (Paging::Cursor, Some(cursor)) => {
            url.push('&');
            url.push_str(&serde_urlencoded::to_string([("cursor", cursor)]).unwrap_or_default());
        }
        (Paging::Numbered, _) => url.push_str(&format!("&page={number}")),
        (Paging::Cursor, None) => {}
    }
    let answer = m.inner.call(Method::GET, &url, &cx.caller, None).await;
    if answer.status == StatusCode::BAD_REQUEST && at.is_some() {
        // A cursor that is not one of ours names no place: nothing there.
        return Ok(cursor_page(cx, Vec::new(), None));
    }
    let cursor = super::paging::next_cursor(&answer);
    let body = ok(answer)?;
    let list = match body {
        Value::Array(items) => items,
        mut other => match other["statuses"].take() {
            Value::Array(items) => items,
            _ => Vec::new(),
        },
    };
    let list: Vec<Value> = list.into_iter().filter(|s| keep(s)).collect();
    let next = match paging {
        Paging::Cursor => cursor,
        Paging::Numbered => (list.len() >= limit).then(|| (number + 1).to_string()),
    };
    Ok(cursor_page(cx, many(m, cx, list).await?, next.as_deref()))
}

/// `GET /api/v1/timelines/public`: every public status our history holds,
/// newest first, paged as the other timelines are (`max_id`, `since_id`,
/// `min_id` status ids; our public timeline read from a status id down);
/// `remote` and `only_media` are empty (no remote statuses, no media),
/// `local` is all of it. A `max_id` that is one of our cursors (the links
/// this listener gave before 2026-12-06) still pages from there; any other
/// that is no id names no place (an empty page).
pub(super) async fn public(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    if cx.flag("remote") || cx.flag("only_media") {
        // Nothing there; the caller is still checked.
        ok(m.inner
            .call(
                Method::GET,
                "/api/v1/timelines/public?count=1",
                &cx.caller,
                None,
            )
            .await)?;
        return Ok(page(&cx, Vec::new()));
    }
    if cx
        .param("max_id")
        .is_some_and(|c| !c.bytes().all(|b| b.is_ascii_digit()))
    {
        return listed(&m, &cx, "/api/v1/timelines/public", Paging::Cursor).await;
    }
    let window = Window::of(&cx)?;
    let pick = |mut answer: Value| match answer["statuses"].take() {
        Value::Array(items) => items,
        _ => Vec::new(),
    };
    let at = ("/api/v1/timelines/public", "");
    let found = super::paging::read(&m, &cx, at, window, |_| true, pick).await?;
    Ok(page(&cx, many(&m, &cx, found).await?))
}

/// `GET /api/v1/bookmarks`.
pub(super) async fn bookmarks(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    listed(&m, &cx, "/api/v1/bookmarks", Paging::Cursor).await
}

/// `GET /api/v1/favourites`: the caller's likes, newest first.
pub(super) async fn favourites(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let me = ok(m
        .inner
        .call(Method::GET, "/api/v1/me", &cx.caller, None)
        .await)?;
    let id = me["id"].as_str().unwrap_or_default().to_string();
    listed(
        &m,
        &cx,
        &format!("/api/v1/users/{id}/likes"),
        Paging::Numbered,
    )
    .await
}
