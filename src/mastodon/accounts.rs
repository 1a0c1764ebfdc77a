//! Accounts: the caller's (`verify_credentials`), one by id, one by its
//! `acct` (`lookup`), read through our own `GET /api/v1/me`,
//! `/api/v1/users/{id}` and `/api/v1/users/lookup`.

use super::entities::account;
use super::inner::Caller;
use super::reply::{entity, error, ok, Reply};
use super::shared::Mastodon;
use crate::rate_limits::ClientAddr;
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::Extension;
use serde_json::json;
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

/// Whether `id` is an account id (a number).
fn is_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit())
}

/// `GET /api/v1/accounts/{id}`.
pub(super) async fn show(
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    State(m): State<Mastodon>,
    client: Option<Extension<ClientAddr>>,
) -> Reply {
    if !is_id(&id) {
        return Err(error(StatusCode::NOT_FOUND, "Record not found"));
    }
    let caller = Caller::of(&headers, query.as_deref(), client.map(|c| c.0));
    let user = ok(m
        .inner
        .call(Method::GET, &format!("/api/v1/users/{id}"), &caller, None)
        .await)?;
    Ok(entity(
        StatusCode::OK,
        account(&user, &super::shared::host(&headers)),
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
