//! OAuth applications: registered (`POST /api/v1/apps`) without anything
//! stored. An application's `client_id` carries what the server must know
//! of it later (its name and redirect URIs, base64url JSON behind `fh1.`),
//! and its secret is a token naming that id, signed with a key of its own
//! (`Jwt::app_secret`): so any process checks both, a sign-in page sends
//! a code only to a URI the application registered, and registering holds
//! nothing on the server.

use super::form::fields;
use super::reply::{entity, error, Reply};
use super::shared::{Ctx, Mastodon};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The scopes a token may ask for (Mastodon's, and their `read:...` parts).
pub(super) const SCOPES: [&str; 4] = ["read", "write", "follow", "push"];

/// Longest application name kept (longer ones are cut).
const MOST_NAME: usize = 100;

/// Longest list of redirect URIs (their bytes).
const MOST_URIS: usize = 1_000;

/// Longest website kept in an answer.
const MOST_WEBSITE: usize = 2_000;

/// The redirect URI that shows the code instead of sending it.
pub(super) const OOB: &str = "urn:ietf:wg:oauth:2.0:oob";

/// What a client id carries.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub(super) struct App {
    /// The application's name.
    #[serde(rename = "n")]
    pub(super) name: String,
    /// Its redirect URIs.
    #[serde(rename = "r")]
    pub(super) uris: Vec<String>,
    /// Random: two registrations of one app are two clients.
    #[serde(rename = "k")]
    key: String,
}

impl App {
    /// The client id of a new registration.
    fn register(name: &str, uris: &[&str]) -> (App, String) {
        let app = App {
            name: name.chars().take(MOST_NAME).collect(),
            uris: uris.iter().map(|u| u.to_string()).collect(),
            key: format!("{:016x}", rand::random::<u64>()),
        };
        let json = serde_json::to_vec(&app).unwrap_or_default();
        let id = format!(
            "fh1.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
        );
        (app, id)
    }

    /// What `client_id` carries, if it is one of ours (its secret still to
    /// be checked where it matters).
    pub(super) fn of(client_id: &str) -> Option<App> {
        let raw = client_id.strip_prefix("fh1.")?;
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(raw)
            .ok()?;
        serde_json::from_slice(&json).ok()
    }

    /// Whether `uri` is one the application registered.
    pub(super) fn allows(&self, uri: &str) -> bool {
        self.uris.iter().any(|u| u == uri)
    }
}

/// Whether every scope of `scopes` (space-separated) is one we know.
pub(super) fn known_scopes(scopes: &str) -> bool {
    scopes.split_whitespace().all(|s| match s.split_once(':') {
        None => SCOPES.contains(&s),
        Some((top, part)) => ["read", "write", "admin"].contains(&top) && !part.is_empty(),
    })
}

/// `POST /api/v1/apps`: registers an application.
pub(super) async fn create(
    cx: Ctx,
    headers: HeaderMap,
    State(m): State<Mastodon>,
    body: Bytes,
) -> Reply {
    let query = serde_urlencoded::to_string(&cx.params).unwrap_or_default();
    let f = fields(&headers, &body, Some(&query));
    let name = f.get("client_name").map(|s| s.trim()).unwrap_or_default();
    let redirect = f.get("redirect_uris").map(|s| s.trim()).unwrap_or_default();
    if name.is_empty() || name.len() > MOST_WEBSITE {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation failed: Application name can't be blank",
        ));
    }
    if redirect.is_empty() || redirect.len() > MOST_URIS {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation failed: Redirect URI can't be blank, and at most 1000 characters",
        ));
    }
    let uris: Vec<&str> = redirect.split_whitespace().collect();
    if !super::schema::are_uris(redirect) {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation failed: Redirect URI must be an absolute URI",
        ));
    }
    let scopes = f.get("scopes").map_or("read", |s| s.trim());
    if !known_scopes(scopes) || !super::schema::are_scopes(scopes) {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation failed: Scopes are invalid",
        ));
    }
    let website = f
        .get("website")
        .filter(|w| !w.is_empty() && w.len() <= MOST_WEBSITE);
    let (app, client_id) = App::register(name, &uris);
    let secret = m.app.jwt.app_secret(&client_id);
    Ok(entity(
        StatusCode::OK,
        json!({
            "id": app.key,
            "name": app.name,
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

/// `GET /api/v1/apps/verify_credentials`: the application an app token
/// (the client-credentials grant) names.
pub(super) async fn verify_credentials(cx: Ctx, State(m): State<Mastodon>) -> Reply {
    let app = cx
        .caller
        .token
        .as_deref()
        .or(cx.app_token.as_deref())
        .and_then(|t| m.app.jwt.app_of_token(t))
        .and_then(|id| App::of(&id));
    match app {
        Some(app) => Ok(entity(
            StatusCode::OK,
            json!({ "name": app.name, "website": null, "scopes": ["read"], "redirect_uris": app.uris, "vapid_key": "" }),
        )),
        None => Err(error(
            StatusCode::UNAUTHORIZED,
            "The access token is not an application's",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_id_carries_its_name_and_uris() {
        let (app, id) = App::register("my app", &["https://x.example/cb", OOB]);
        assert_eq!(App::of(&id), Some(app));
        let back = App::of(&id).unwrap();
        assert!(back.allows("https://x.example/cb") && back.allows(OOB));
        assert!(!back.allows("https://evil.example/cb"));
        assert!(id.starts_with("fh1.") && !id.contains(' '));
        assert_eq!(App::of("0123456789abcdef"), None);
        assert_eq!(App::of("fh1.%%%"), None);
    }
}
