//! Accounts: the caller's (`verify_credentials`), one by id, one by its
//! `acct` (`lookup`), read through our own `GET /api/v1/me`,
//! `/api/v1/users/{id}` and `/api/v1/users/lookup`.

use super::entities::account;
use super::form::fields;
use super::inner::Caller;
use super::reply::{entity, error, ok, Reply};
use super::shared::{Ctx, Mastodon};
use crate::rate_limits::ClientAddr;
use axum::body::Bytes;
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::Extension;
use serde_json::json;
use serde_json::Value;
use std::collections::HashMap;

/// `GET /api/v1/accounts/verify_credentials`: the caller, with `source`.
pub(super) async fn verify_credentials(
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    State(m): State<Mastodon>,
    client: Option<Extension<ClientAddr>>,
) -> Reply {
    let caller = Caller::of(&headers, query.as_deref(), client.map(|c| c.0));
    let me = ok(m.inner.call(Method::GET, "/api/v1/me", &caller, None).await)?;
    let mut a = account(&me, &super::shared::base_url(&headers));
    let privacy = if me["private"].as_bool().unwrap_or(false) {
        "private"
    } else {
        "public"
    };
    a["source"] = json!({
        "privacy": privacy,
        "sensitive": false,
        "language": "",
        "note": "",
        "fields": [],
        "follow_requests_count": 0,
    });
    Ok(entity(StatusCode::OK, a))
}

/// `GET /api/v1/accounts/{id}`.
pub(super) async fn show(
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    State(m): State<Mastodon>,
    client: Option<Extension<ClientAddr>>,
) -> Reply {
    let id = super::shared::id_part(&id)?;
    let caller = Caller::of(&headers, query.as_deref(), client.map(|c| c.0));
    let user = ok(m
        .inner
        .call(Method::GET, &format!("/api/v1/users/{id}"), &caller, None)
        .await)?;
    Ok(entity(
        StatusCode::OK,
        account(&user, &super::shared::base_url(&headers)),
    ))
}

/// `GET /api/v1/accounts/lookup?acct=`: an account by its `acct` (here
/// its login; `login@this-host` too).
pub(super) async fn lookup(
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
    RawQuery(query): RawQuery,
    State(m): State<Mastodon>,
    client: Option<Extension<ClientAddr>>,
) -> Reply {
    let host = super::shared::host(&headers);
    let acct = q
        .get("acct")
        .map(|a| a.trim_start_matches('@'))
        .unwrap_or_default();
    let login = match acct.split_once('@') {
        Some((login, domain)) if domain.eq_ignore_ascii_case(&host) => login,
        Some(_) => return Err(error(StatusCode::NOT_FOUND, "Record not found")),
        None => acct,
    };
    if login.is_empty()
        || login.len() > 64
        || !login
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(error(StatusCode::NOT_FOUND, "Record not found"));
    }
    let caller = Caller::of(&headers, query.as_deref(), client.map(|c| c.0));
    let user = ok(m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/users/lookup?login={login}"),
            &caller,
            None,
        )
        .await)?;
    Ok(entity(
        StatusCode::OK,
        account(&user, &super::shared::base_url(&headers)),
    ))
}

/// `PATCH /api/v1/accounts/update_credentials`: `display_name` and
/// `locked` (a private account) change ours; a note, fields, an avatar or
/// a header are refused (this server keeps none).
pub(super) async fn update_credentials(
    cx: Ctx,
    headers: HeaderMap,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let f = fields(&headers, &body, None);
    let has = |k: &str| f.get(k).is_some_and(|v| !v.trim().is_empty());
    if has("note") || f.keys().any(|k| k.starts_with("fields_attributes")) {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Profile notes and fields are not supported on this server",
        ));
    }
    if has("avatar")
        || has("header")
        || headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("multipart/"))
    {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Avatars and headers are not supported on this server",
        ));
    }
    let mut change = serde_json::Map::new();
    if let Some(name) = f.get("display_name") {
        change.insert("name".into(), json!(name));
    }
    if let Some(locked) = f.get("locked") {
        change.insert(
            "private".into(),
            json!(matches!(locked.as_str(), "true" | "1")),
        );
    }
    if !change.is_empty() {
        ok(m.inner
            .call(
                Method::PATCH,
                "/api/v1/me",
                &cx.caller,
                Some(&Value::Object(change)),
            )
            .await)?;
    }
    verify_credentials(
        headers,
        axum::extract::RawQuery(None),
        State(m),
        cx.caller.client.map(Extension),
    )
    .await
}

/// `GET /api/v1/accounts/search?q=`: the account whose login is `q`
/// (`@login` or `login@this-host` too), then the caller's follows and
/// followers whose login or name starts with it (`limit` 1–80, 40,
/// after `offset`; `following=true`: only accounts the caller follows).
pub(super) async fn search(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let limit = cx
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(40)
        .clamp(1, 80);
    let offset = cx
        .param("offset")
        .and_then(|o| o.parse::<usize>().ok())
        .unwrap_or(0)
        .min(400);
    let q = cx.param("q").unwrap_or_default();
    let following = cx.flag("following");
    let found = super::render::search_accounts(&m, &cx, q, offset + limit, following).await?;
    Ok(entity(
        StatusCode::OK,
        Value::Array(found.into_iter().skip(offset).collect()),
    ))
}
