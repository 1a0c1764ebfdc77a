//! Lists: the caller's lists (`GET`/`POST /api/v1/lists`, one by id,
//! renamed by `PUT`, deleted) and their accounts (`GET`/`POST`/`DELETE
//! /api/v1/lists/{id}/accounts` with `account_ids[]`), through our own
//! `/api/v1/lists`. Our lists have no replies policy and are never
//! exclusive: `replies_policy` reads `list`, `exclusive` false, and asking
//! for anything else is refused (422).

use super::form::fields;
use super::render::users_page;
use super::reply::{entity, error, ok, Reply};
use super::shared::{id_part, Ctx, Mastodon};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Our list as Mastodon's `List`.
fn list(ours: &Value) -> Value {
    json!({
        "id": ours["id"],
        "title": ours["title"],
        "replies_policy": "list",
        "exclusive": false,
    })
}

/// A list's fields (`title`, `replies_policy`, `exclusive`) as our change.
fn change(f: &HashMap<String, String>) -> Result<Value, super::reply::Refused> {
    if f.get("replies_policy").is_some_and(|p| p != "list") {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Replies policies other than list are not supported on this server",
        ));
    }
    if f.get("exclusive")
        .is_some_and(|e| matches!(e.as_str(), "true" | "1"))
    {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Exclusive lists are not supported on this server",
        ));
    }
    Ok(json!({ "title": f.get("title").cloned().unwrap_or_default() }))
}

/// `GET /api/v1/lists`.
pub(super) async fn index(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let ours = ok(m
        .inner
        .call(Method::GET, "/api/v1/lists", &cx.caller, None)
        .await)?;
    let lists: Vec<Value> = ours["lists"]
        .as_array()
        .into_iter()
        .flatten()
        .map(list)
        .collect();
    Ok(entity(StatusCode::OK, Value::Array(lists)))
}

/// `POST /api/v1/lists` (`title`).
pub(super) async fn create(
    cx: Ctx,
    headers: HeaderMap,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let body = change(&fields(&headers, &body, None))?;
    let made = ok(m
        .inner
        .call(Method::POST, "/api/v1/lists", &cx.caller, Some(&body))
        .await)?;
    Ok(entity(StatusCode::OK, list(&made)))
}

/// `GET /api/v1/lists/{id}`.
pub(super) async fn show(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    let ours = ok(m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/lists/{id}"),
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(StatusCode::OK, list(&ours)))
}

/// `PUT /api/v1/lists/{id}` (`title`).
pub(super) async fn update(
    cx: Ctx,
    headers: HeaderMap,
    Path(id): Path<String>,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let id = id_part(&id)?;
    let body = change(&fields(&headers, &body, None))?;
    let ours = ok(m
        .inner
        .call(
            Method::PATCH,
            &format!("/api/v1/lists/{id}"),
            &cx.caller,
            Some(&body),
        )
        .await)?;
    Ok(entity(StatusCode::OK, list(&ours)))
}

/// `DELETE /api/v1/lists/{id}`.
pub(super) async fn destroy(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    ok(m.inner
        .call(
            Method::DELETE,
            &format!("/api/v1/lists/{id}"),
            &cx.caller,
            None,
        )
        .await)?;
    Ok(entity(StatusCode::OK, json!({})))
}

/// `GET /api/v1/lists/{id}/accounts`: the members, paged by `Link`.
pub(super) async fn accounts(cx: Ctx, Path(id): Path<String>, State(m): State<Mastodon>) -> Reply {
    let id = id_part(&id)?;
    users_page(&m, &cx, &format!("/api/v1/lists/{id}/members")).await
}

/// `POST` (`add`) or `DELETE /api/v1/lists/{id}/accounts` with
/// `account_ids[]`: an account the caller may not add (unknown, or one who
/// blocks them) makes the call 404, as Mastodon answers; the others are
/// added.
async fn members(
    m: &Mastodon,
    cx: &Ctx,
    id: &str,
    f: &HashMap<String, String>,
    add: bool,
) -> Reply {
    let id = id_part(id)?;
    let ids: Vec<&str> = f
        .get("account_ids")
        .map(|v| v.split_whitespace().collect())
        .unwrap_or_default();
    if ids.is_empty() || ids.len() > 100 {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "account_ids must name 1 to 100 accounts",
        ));
    }
    let method = if add { Method::POST } else { Method::DELETE };
    let answer = ok(m
        .inner
        .call(
            method,
            &format!("/api/v1/lists/{id}/members"),
            &cx.caller,
            Some(&json!({ "ids": ids })),
        )
        .await)?;
    if add
        && answer["results"]
            .as_object()
            .is_some_and(|r| r.values().any(|v| v == false))
    {
        return Err(error(
            StatusCode::NOT_FOUND,
            "Record not found: an account cannot be added",
        ));
    }
    Ok(entity(StatusCode::OK, json!({})))
}

pub(super) async fn add(
    cx: Ctx,
    headers: HeaderMap,
    Path(id): Path<String>,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let query = serde_urlencoded::to_string(&cx.params).unwrap_or_default();
    members(&m, &cx, &id, &fields(&headers, &body, Some(&query)), true).await
}

pub(super) async fn remove(
    cx: Ctx,
    headers: HeaderMap,
    Path(id): Path<String>,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let query = serde_urlencoded::to_string(&cx.params).unwrap_or_default();
    members(&m, &cx, &id, &fields(&headers, &body, Some(&query)), false).await
}
