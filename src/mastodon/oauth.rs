//! OAuth 2 as Mastodon does it: applications registered (`POST
//! /api/v1/apps`), tokens granted (`POST /oauth/token`: the `password`
//! grant; an access token is a session of this server, made by our own
//! `POST /api/v1/sessions`, so it is listed, ended by logout or a password
//! change, and limited like any login), revoked (`POST /oauth/revoke`: the
//! session ends), and the server's metadata (RFC 8414).
//!
//! An application is not stored: its client secret is a token naming its
//! client id, signed with a key of its own (`Jwt::app_secret`), so any
//! process checks it and registering one holds nothing on the server.

use super::form::fields;
use super::inner::Caller;
use super::reply::{entity, error, refused, Refused, Reply};
use super::shared::Mastodon;
use crate::rate_limits::ClientAddr;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::Extension;
use serde_json::json;
use std::collections::HashMap;

/// The scopes a token may ask for (Mastodon's, and their `read:...` parts).
const SCOPES: [&str; 4] = ["read", "write", "follow", "push"];

/// Longest client name, redirect URI list and website kept in an answer.
const MOST_TEXT: usize = 2_000;

/// Whether every scope of `scopes` (space-separated) is one we know.
fn known_scopes(scopes: &str) -> bool {
    scopes.split_whitespace().all(|s| match s.split_once(':') {
        None => SCOPES.contains(&s),
        Some((top, part)) => ["read", "write", "admin"].contains(&top) && !part.is_empty(),
    })
}

/// An OAuth error (`{"error": code, "error_description": sentence}`).
fn oauth_error(status: StatusCode, code: &str, sentence: &str) -> Refused {
    refused(
        status,
        json!({ "error": code, "error_description": sentence }),
    )
}

/// A field's text (empty when it is not there).
fn text<'a>(f: &'a HashMap<String, String>, k: &str) -> &'a str {
    f.get(k).map_or("", String::as_str)
}

/// The fields of an OAuth request whose `client_id` and `client_secret`
/// are an application's (`None`: they are not).
fn from_client(
    m: &Mastodon,
    headers: &HeaderMap,
    body: &[u8],
    query: Option<&str>,
) -> Option<HashMap<String, String>> {
    let f = fields(headers, body, query);
    m.app
        .jwt
        .is_app_secret(text(&f, "client_id"), text(&f, "client_secret"))
        .then_some(f)
}

/// `POST /api/v1/apps`: registers an application.
pub(super) async fn create_app(
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let f = fields(&headers, &body, query.as_deref());
    let name = f.get("client_name").map(|s| s.trim()).unwrap_or_default();
    let redirect = f.get("redirect_uris").map(|s| s.trim()).unwrap_or_default();
    if name.is_empty() || name.len() > MOST_TEXT {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation failed: Application name can't be blank",
        ));
    }
    if redirect.is_empty() || redirect.len() > MOST_TEXT {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation failed: Redirect URI can't be blank",
        ));
    }
    let scopes = f.get("scopes").map_or("read", |s| s.trim());
    if !known_scopes(scopes) {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation failed: Scopes are invalid",
        ));
    }
    let website = f
        .get("website")
        .filter(|w| !w.is_empty() && w.len() <= MOST_TEXT);
    let client_id = format!("{:032x}", rand::random::<u128>());
    let secret = m.app.jwt.app_secret(&client_id);
    let uris: Vec<&str> = redirect.split_whitespace().collect();
    Ok(entity(
        StatusCode::OK,
        json!({
            "id": client_id[..16].to_string(),
            "name": name,
            "website": website,
            "scopes": scopes.split_whitespace().collect::<Vec<_>>(),
            "redirect_uri": redirect,
            "redirect_uris": uris,
            "client_id": client_id,
            "client_secret": secret,
            "client_secret_expires_at": 0,
            "vapid_key": "",
        }),
    ))
}

/// `POST /oauth/token`: a token for a user, by the `password` grant.
pub(super) async fn token(
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    State(m): State<Mastodon>,
    client: Option<Extension<ClientAddr>>,
    body: Bytes,
) -> Reply {
    let Some(f) = from_client(&m, &headers, &body, query.as_deref()) else {
        return Err(oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.",
        ));
    };
    let field = |k: &str| text(&f, k);
    let scope = match field("scope").trim() {
        "" => "read",
        s => s,
    };
    if !known_scopes(scope) {
        return Err(oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            "The requested scope is invalid, unknown, or malformed.",
        ));
    }
    match field("grant_type") {
        "password" => {}
        "authorization_code" | "client_credentials" => {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "This server grants tokens by password only so far.",
            ))
        }
        _ => {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "The authorization grant type is not supported by the authorization server.",
            ))
        }
    }
    let caller = Caller {
        token: None,
        client: client.map(|c| c.0),
        idempotency_key: None,
    };
    let login = json!({"identifier": field("username"), "password": field("password")});
    let answer = m
        .inner
        .call(Method::POST, "/api/v1/sessions", &caller, Some(&login))
        .await;
    match answer.status {
        StatusCode::CREATED => Ok(entity(
            StatusCode::OK,
            json!({
                "access_token": answer.body["token"],
                "token_type": "Bearer",
                "scope": scope,
                "created_at": crate::model::now() as u64,
            }),
        )),
        StatusCode::UNAUTHORIZED | StatusCode::BAD_REQUEST | StatusCode::FORBIDDEN => {
            Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.",
            ))
        }
        _ => Err(super::reply::from_ours(&answer)),
    }
}

/// `POST /oauth/revoke`: the token's session ends (its streams close).
pub(super) async fn revoke(
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    State(m): State<Mastodon>,
    client: Option<Extension<ClientAddr>>,
    body: Bytes,
) -> Reply {
    let Some(f) = from_client(&m, &headers, &body, query.as_deref()) else {
        return Err(oauth_error(
            StatusCode::FORBIDDEN,
            "unauthorized_client",
            "You are not authorized to revoke this token",
        ));
    };
    let field = |k: &str| text(&f, k);
    let caller = Caller {
        token: Some(field("token").to_string()),
        client: client.map(|c| c.0),
        idempotency_key: None,
    };
    // A token that is not one (or already ended) is revoked as well.
    let _ = m
        .inner
        .call(Method::DELETE, "/api/v1/sessions/current", &caller, None)
        .await;
    Ok(entity(StatusCode::OK, json!({})))
}

/// `GET /.well-known/oauth-authorization-server`: the server's metadata.
pub(super) async fn metadata(headers: HeaderMap) -> Reply {
    let base = super::shared::base_url(&headers);
    Ok(entity(
        StatusCode::OK,
        json!({
            "issuer": format!("{base}/"),
            "service_documentation": "https://docs.joinmastodon.org/",
            "token_endpoint": format!("{base}/oauth/token"),
            "revocation_endpoint": format!("{base}/oauth/revoke"),
            "app_registration_endpoint": format!("{base}/api/v1/apps"),
            "scopes_supported": SCOPES,
            // The authorization code grant (its sign-in page) is not built:
            // no authorization endpoint and no response type is offered.
            "response_types_supported": [],
            "grant_types_supported": ["password"],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
        }),
    ))
}
