//! The authorization-code grant with PKCE, as Mastodon's apps sign in: a
//! sign-in page (`GET /oauth/authorize`), its form (`POST
//! /oauth/authorize`: the login checked by our own `POST
//! /api/v1/sessions`, rate limits and all), the code sent to a redirect
//! URI the application registered (or shown, for
//! `urn:ietf:wg:oauth:2.0:oob`), and the code redeemed at `POST
//! /oauth/token` for the session's token: once, within 10 minutes, by the
//! application it was made for, with the same redirect URI and, when the
//! page was asked with a `code_challenge` (S256), the verifier that hashes
//! to it. A code redeemed wrongly ends its session.
//!
//! Nothing is sent to a URI before it is checked: a request naming an
//! unknown application or an unregistered URI gets a page saying so.

use super::apps::{known_scopes, App, OOB};
use super::entities::escape;
use super::form::fields;
use super::inner::Caller;
use super::shared::{Ctx, Mastodon};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How long a code may wait to be redeemed.
const CODE_TTL_SECS: u64 = 600;

/// What a code grants, kept until it is redeemed.
#[derive(Serialize, Deserialize)]
pub(super) struct Grant {
    pub(super) token: String,
    pub(super) client_id: String,
    pub(super) redirect_uri: String,
    pub(super) challenge: Option<String>,
    pub(super) scope: String,
}

/// A sign-in request's fields, checked.
struct Asked {
    client_id: String,
    app: App,
    redirect_uri: String,
    scope: String,
    state: Option<String>,
    challenge: Option<String>,
}

/// An HTML page with `status`.
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title>\
         <style>body{{font:16px system-ui;max-width:26rem;margin:3rem auto;padding:0 1rem}}\
         input{{display:block;width:100%;margin:.3rem 0 1rem;padding:.5rem;font:inherit}}\
         button{{padding:.5rem 1.2rem;font:inherit}}code{{font-size:1.3rem}}</style></head>\
         <body><h1>{title}</h1>{body}</body></html>",
        title = escape(title),
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response()
}

/// The fields as a sign-in request, or the page saying what is wrong.
fn asked(f: &HashMap<String, String>) -> Result<Asked, Box<Response>> {
    let bad = |why: &str| {
        Box::new(page(
            StatusCode::BAD_REQUEST,
            "Cannot sign in",
            &format!("<p>{}</p>", escape(why)),
        ))
    };
    let field = |k: &str| f.get(k).map(String::as_str).unwrap_or_default();
    let client_id = field("client_id");
    let app = App::of(client_id).ok_or_else(|| bad("The application is not registered here."))?;
    let redirect_uri = field("redirect_uri");
    if !app.allows(redirect_uri) {
        return Err(bad(
            "The redirect URI is not one the application registered.",
        ));
    }
    if field("response_type") != "code" {
        return Err(bad("Only response_type=code is supported."));
    }
    let scope = match field("scope").trim() {
        "" => "read".to_string(),
        s => s.replace('+', " "),
    };
    if !known_scopes(&scope) {
        return Err(bad("The requested scope is invalid."));
    }
    let challenge = f.get("code_challenge").filter(|c| !c.is_empty()).cloned();
    if challenge.is_some() && !matches!(field("code_challenge_method"), "S256" | "") {
        return Err(bad("Only the S256 code challenge method is supported."));
    }
    if challenge
        .as_ref()
        .is_some_and(|c| c.len() < 43 || c.len() > 128)
    {
        return Err(bad("The code challenge must be 43 to 128 characters."));
    }
    Ok(Asked {
        client_id: client_id.to_string(),
        app,
        redirect_uri: redirect_uri.to_string(),
        scope,
        state: f.get("state").cloned(),
        challenge,
    })
}

/// The sign-in form for `asked`, with `note` above it.
fn form(asked: &Asked, note: &str, status: StatusCode) -> Response {
    let hidden = |k: &str, v: &str| {
        format!(
            "<input type=\"hidden\" name=\"{k}\" value=\"{}\">",
            escape(v)
        )
    };
    let mut fields = hidden("client_id", &asked.client_id)
        + &hidden("redirect_uri", &asked.redirect_uri)
        + &hidden("response_type", "code")
        + &hidden("scope", &asked.scope);
    if let Some(state) = &asked.state {
        fields += &hidden("state", state);
    }
    if let Some(c) = &asked.challenge {
        fields += &hidden("code_challenge", c);
        fields += &hidden("code_challenge_method", "S256");
    }
    let body = format!(
        "<p><b>{app}</b> asks to use your account ({scope}).</p>{note}\
         <form method=\"post\" action=\"/oauth/authorize\">{fields}\
         <label>Login or email<input name=\"username\" autocomplete=\"username\" required></label>\
         <label>Password<input name=\"password\" type=\"password\" autocomplete=\"current-password\" required></label>\
         <button type=\"submit\">Authorize</button></form>",
        app = escape(&asked.app.name),
        scope = escape(&asked.scope),
    );
    page(status, "Sign in", &body)
}

/// `GET /oauth/authorize`: the sign-in page.
pub(super) async fn show(cx: Ctx) -> Response {
    let f: HashMap<String, String> = cx.params.iter().cloned().collect();
    match asked(&f) {
        Ok(asked) => form(&asked, "", StatusCode::OK),
        Err(page) => *page,
    }
}

/// `POST /oauth/authorize`: the login, then the code sent (or shown).
pub(super) async fn submit(
    cx: Ctx,
    headers: HeaderMap,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Response {
    let f = fields(&headers, &body, None);
    let asked = match asked(&f) {
        Ok(asked) => asked,
        Err(page) => return *page,
    };
    let field = |k: &str| f.get(k).map(String::as_str).unwrap_or_default();
    let login = serde_json::json!({"identifier": field("username"), "password": field("password")});
    let caller = Caller {
        token: None,
        client: cx.caller.client,
        idempotency_key: None,
    };
    let answer = m
        .inner
        .call(Method::POST, "/api/v1/sessions", &caller, Some(&login))
        .await;
    let Some(token) = answer.body["token"]
        .as_str()
        .filter(|_| answer.status.is_success())
    else {
        let (status, note) = match answer.status {
            StatusCode::TOO_MANY_REQUESTS => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts; wait a moment.",
            ),
            s if s.is_server_error() => (
                StatusCode::SERVICE_UNAVAILABLE,
                "The server cannot sign you in now; try again.",
            ),
            _ => (StatusCode::UNAUTHORIZED, "Wrong login or password."),
        };
        return form(&asked, &format!("<p role=\"alert\">{note}</p>"), status);
    };
    let code = format!("{:032x}", rand::random::<u128>());
    let grant = Grant {
        token: token.to_string(),
        client_id: asked.client_id.clone(),
        redirect_uri: asked.redirect_uri.clone(),
        challenge: asked.challenge.clone(),
        scope: asked.scope.clone(),
    };
    let kept = m
        .app
        .store
        .sessions()
        .put_oauth_code(
            &code,
            &serde_json::to_string(&grant).unwrap_or_default(),
            CODE_TTL_SECS,
        )
        .await;
    if kept.is_err() {
        return page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again",
            "<p>The server cannot sign you in now; try again.</p>",
        );
    }
    if asked.redirect_uri == OOB {
        return page(
            StatusCode::OK,
            "Authorization code",
            &format!(
                "<p>Copy this code into the application:</p><p><code id=\"code\">{code}</code></p>"
            ),
        );
    }
    let mut pairs = vec![("code", code.as_str())];
    if let Some(state) = &asked.state {
        pairs.push(("state", state));
    }
    let sep = if asked.redirect_uri.contains('?') {
        '&'
    } else {
        '?'
    };
    let to = format!(
        "{}{sep}{}",
        asked.redirect_uri,
        serde_urlencoded::to_string(&pairs).unwrap_or_default()
    );
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// Why a code cannot be redeemed by these fields (`None`: it can).
pub(super) fn refuse(grant: &Grant, f: &HashMap<String, String>) -> Option<&'static str> {
    let field = |k: &str| f.get(k).map(String::as_str).unwrap_or_default();
    if grant.client_id != field("client_id") {
        return Some("The code was made for another application.");
    }
    if grant.redirect_uri != field("redirect_uri") {
        return Some("The redirect URI is not the one the code was sent to.");
    }
    if let Some(challenge) = &grant.challenge {
        let digest = ring::digest::digest(&ring::digest::SHA256, field("code_verifier").as_bytes());
        let hashed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
        if hashed != *challenge {
            return Some("The code verifier does not match the code challenge.");
        }
    }
    None
}
