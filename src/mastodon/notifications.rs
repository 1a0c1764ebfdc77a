//! Notifications: the plain list (`/api/v1/notifications`, paged as
//! Mastodon pages, `types[]` and `exclude_types[]`), one by id, and the
//! grouped list (`/api/v2/notifications`), read from our own
//! `/api/v1/notifications` so that what the caller may see is judged there.
//!
//! Our types as Mastodon's: `like` is `favourite`, `repost` is `reblog`, a
//! `reply` (which mentions its reader) is a `mention`; `follow`,
//! `follow_request` and `mention` keep their names. Our `group_request`
//! and `report_resolved` have no Mastodon type and are left out.

use super::entities::{account, iso8601};
use super::paging::{page, read, Window};
use super::render::{made, many, theirs, TYPES};
use super::reply::{entity, error, ok, Reply};
use super::shared::{Ctx, Mastodon};
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

/// Our types the request asks for (`types[]` less `exclude_types[]`),
/// joined for our `types=` (`None`: it excludes every one).
fn our_types(cx: &Ctx) -> Option<String> {
    let wanted = cx.params("types");
    let excluded = cx.params("exclude_types");
    let kept: Vec<&str> = TYPES
        .iter()
        .filter(|(_, t)| wanted.is_empty() || wanted.contains(t))
        .filter(|(_, t)| !excluded.contains(t))
        .map(|(o, _)| *o)
        .collect();
    (!kept.is_empty()).then(|| kept.join(","))
}

/// Our notifications' page in an answer.
fn pick(mut body: Value) -> Vec<Value> {
    match body["notifications"].take() {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}

/// `GET /api/v1/notifications`: newest first, at most 80 a page.
pub(super) async fn list(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let window = Window::up_to(&cx, 40, 80)?;
    let Some(types) = our_types(&cx) else {
        return Ok(page(&cx, Vec::new()));
    };
    let account = cx.param("account_id").map(str::to_string);
    let query = format!("types={types}");
    let found = read(
        &m,
        &cx,
        ("/api/v1/notifications", &query),
        window,
        |n| {
            account
                .as_deref()
                .is_none_or(|a| n["account"]["id"].as_str() == Some(a))
        },
        pick,
    )
    .await?;
    Ok(page(&cx, made(&m, &cx, found).await?))
}

/// `GET /api/v1/notifications/{id}`.
pub(super) async fn show(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let Ok(n) = id.parse::<u64>() else {
        return Err(error(StatusCode::NOT_FOUND, "Record not found"));
    };
    let body = ok(m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/notifications?count=1&max_id={n}"),
            &cx.caller,
            None,
        )
        .await)?;
    let found: Vec<Value> = pick(body)
        .into_iter()
        .filter(|x| x["id"].as_str() == Some(id.as_str()))
        .collect();
    made(&m, &cx, found)
        .await?
        .pop()
        .map(|n| entity(StatusCode::OK, n))
        .ok_or_else(|| error(StatusCode::NOT_FOUND, "Record not found"))
}

/// `GET /api/v2/notifications`: grouped as our grouped list groups (the
/// likes of a status, its reblogs, the follows), the accounts and
/// statuses they name given once beside them.
pub(super) async fn grouped(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let limit = cx
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(40)
        .clamp(1, 80);
    let Some(types) = our_types(&cx) else {
        return Ok(entity(
            StatusCode::OK,
            json!({ "accounts": [], "statuses": [], "notification_groups": [] }),
        ));
    };
    let mut url = format!("/api/v1/notifications?grouped=true&count={limit}&types={types}");
    if let Some(cursor) = cx.param("max_id").filter(|c| !c.is_empty()) {
        url.push('&');
        url.push_str(&serde_urlencoded::to_string([("cursor", cursor)]).unwrap_or_default());
    }
    let answer = m.inner.call(Method::GET, &url, &cx.caller, None).await;
    if answer.status == StatusCode::BAD_REQUEST && cx.param("max_id").is_some() {
        // A cursor that is not one of ours names no place: nothing there.
        return Ok(entity(
            StatusCode::OK,
            json!({ "accounts": [], "statuses": [], "notification_groups": [] }),
        ));
    }
    let next = super::paging::next_cursor(&answer);
    let groups = pick(ok(answer)?);
    let statuses: Vec<Value> = groups
        .iter()
        .filter(|g| g["status"].is_object())
        .map(|g| g["status"].clone())
        .collect();
    let statuses = many(&m, &cx, statuses).await?;
    let mut accounts: Vec<Value> = Vec::new();
    let mut out = Vec::new();
    for g in &groups {
        let Some(kind) = g["type"].as_str().and_then(theirs) else {
            continue;
        };
        let status_id = g["status"]["id"].as_str();
        if status_id.is_some_and(|s| !statuses.iter().any(|x| x["id"].as_str() == Some(s))) {
            continue;
        }
        let mut sample = Vec::new();
        for a in g["accounts"].as_array().into_iter().flatten() {
            let Some(aid) = a["id"].as_str() else {
                continue;
            };
            sample.push(aid.to_string());
            if !accounts.iter().any(|x| x["id"].as_str() == Some(aid)) {
                accounts.push(account(a, &cx.base));
            }
        }
        let id = g["id"].as_str().unwrap_or_default();
        let key = match (kind, status_id) {
            ("favourite" | "reblog", Some(s)) => format!("{kind}-{s}"),
            ("follow", _) => "follow".to_string(),
            _ => format!("ungrouped-{id}"),
        };
        out.push(json!({
            "group_key": key,
            "notifications_count": g["count"].as_u64().unwrap_or(1),
            "type": kind,
            "most_recent_notification_id": id,
            "page_min_id": id,
            "page_max_id": id,
            "latest_page_notification_at": iso8601(g["latest_at"].as_f64().unwrap_or(0.0)),
            "sample_account_ids": sample,
            "status_id": status_id,
        }));
    }
    let res = entity(
        StatusCode::OK,
        json!({ "accounts": accounts, "statuses": statuses, "notification_groups": out }),
    );
    Ok(super::paging::with_next(&cx, res, next.as_deref()))
}

/// `GET /api/v1/notifications/unread_count`: those newer than the read
/// marker.
pub(super) async fn unread_count(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let body = ok(m
        .inner
        .call(
            Method::GET,
            "/api/v1/notifications/unread",
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(StatusCode::OK, json!({ "count": body["count"] })))
}
