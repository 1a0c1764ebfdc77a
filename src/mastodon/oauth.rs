//! OAuth 2 as Mastodon does it: tokens granted (`POST /oauth/token`: the
//! `password`, `authorization_code` (with PKCE, `authorize`) and
//! `client_credentials` grants; a user's access token is a session of this
//! server, made by our own `POST /api/v1/sessions`, so it is listed, ended
//! by logout or a password change, and limited like any login; an
//! application's own token reads as no user), revoked (`POST
//! /oauth/revoke`: the session ends), and the server's metadata (RFC
//! 8414). Applications are `apps`.

use super::apps::{known_scopes, SCOPES};
use super::authorize::{refuse, Grant};
use super::form::fields;
use super::inner::Caller;
use super::reply::{entity, refused, Refused, Reply};
use super::shared::Mastodon;
use crate::rate_limits::ClientAddr;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use axum::Extension;
use serde_json::json;
use std::collections::HashMap;

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
/// (in the fields, or as HTTP Basic credentials) are an application's
/// (`None`: they are not).
fn from_client(
    m: &Mastodon,
    headers: &HeaderMap,
    body: &[u8],
    query: Option<&str>,
) -> Option<HashMap<String, String>> {
    let mut f = fields(headers, body, query);
    let basic = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| {
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b.trim()).ok()
        })
        .and_then(|raw| String::from_utf8(raw).ok());
    if let Some((id, secret)) = basic.as_deref().and_then(|b| b.split_once(':')) {
        let decode = |v: &str| {
            serde_urlencoded::from_str::<Vec<(String, String)>>(&format!("v={v}"))
                .ok()
                .and_then(|mut p| p.pop())
                .map_or_else(|| v.to_string(), |(_, v)| v)
        };
        f.insert("client_id".into(), decode(id));
        f.insert("client_secret".into(), decode(secret));
    }
    m.app
        .jwt
        .is_app_secret(text(&f, "client_id"), text(&f, "client_secret"))
        .then_some(f)
}

/// `POST /oauth/token`: a token, by the `password`, `authorization_code`
/// or `client_credentials` grant.
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
        "authorization_code" => return redeem(&m, &f).await,
        "client_credentials" => {
            return Ok(granted(&m.app.jwt.app_token(field("client_id")), scope))
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
        StatusCode::CREATED => Ok(granted(
            answer.body["token"].as_str().unwrap_or_default(),
            scope,
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

/// A token granted, as OAuth answers it.
fn granted(token: &str, scope: &str) -> Response {
    entity(
        StatusCode::OK,
        json!({
            "access_token": token,
            "token_type": "Bearer",
            "scope": scope,
            "created_at": crate::model::now() as u64,
        }),
    )
}

/// The `authorization_code` grant: the code's session token, once, to the
/// application it was made for (`authorize::refuse`); a code redeemed
/// wrongly is spent and its session ended.
async fn redeem(m: &Mastodon, f: &HashMap<String, String>) -> Reply {
    let invalid = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
    let code = text(f, "code");
    if code.is_empty() || code.len() > 64 {
        return Err(invalid("The authorization code is missing or malformed."));
    }
    let taken = m
        .app
        .store
        .sessions()
        .take_oauth_code(code)
        .await
        .map_err(|e| super::reply::unavailable(&e))?;
    let Some(grant) = taken.and_then(|g| serde_json::from_str::<Grant>(&g).ok()) else {
        return Err(invalid(
            "The authorization code is invalid, expired or already used.",
        ));
    };
    if let Some(why) = refuse(&grant, f) {
        let caller = Caller {
            token: Some(grant.token),
            ..Caller::default()
        };
        let _ = m
            .inner
            .call(Method::DELETE, "/api/v1/sessions/current", &caller, None)
            .await;
        return Err(invalid(why));
    }
    Ok(granted(&grant.token, &grant.scope))
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
            "authorization_endpoint": format!("{base}/oauth/authorize"),
            "scopes_supported": SCOPES,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["authorization_code", "password", "client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        }),
    ))
}
