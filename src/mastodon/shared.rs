//! What the Mastodon API's handlers share: the application's state with our
//! own API's router ([`Mastodon`]), and the address clients reach it by.

use super::inner::Inner;
use crate::state::AppState;
use axum::http::{header, HeaderMap};

/// The handlers' state: the application's, and our own API to call.
#[derive(Clone)]
pub(crate) struct Mastodon {
    pub(super) app: AppState,
    pub(super) inner: Inner,
}

impl Mastodon {
    pub(super) fn new(app: AppState) -> Mastodon {
        Mastodon {
            inner: Inner(crate::http::router(app.clone())),
            app,
        }
    }
}

/// The host a request names (`Host`): the instance's domain.
pub(super) fn host(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && h.len() <= 253)
        .unwrap_or("localhost")
        .to_string()
}

/// The URL clients reach this listener by: `https://` behind a proxy that
/// says so (`X-Forwarded-Proto: https`), else `http://` (the listener
/// speaks plain HTTP), and the host.
pub(super) fn base_url(headers: &HeaderMap) -> String {
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.eq_ignore_ascii_case("https"));
    format!(
        "{}://{}",
        if https { "https" } else { "http" },
        host(headers)
    )
}

/// The streaming URL that goes with [`base_url`] (`wss://` or `ws://`).
pub(super) fn streaming_url(headers: &HeaderMap) -> String {
    let base = base_url(headers);
    match base.strip_prefix("https://") {
        Some(rest) => format!("wss://{rest}"),
        None => format!("ws://{}", base.trim_start_matches("http://")),
    }
}
