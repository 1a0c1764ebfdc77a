//! The Mastodon-compatible API (`--mastodon-listen`, on a listener of its
//! own): the part of Mastodon's REST and streaming API that clients call to
//! sign in, read, write and stream, so that Mastodon client libraries and
//! apps work against this server unchanged.
//!
//! Every request is translated to this server's own API and called through
//! its router inside the process ([`inner`]), with the caller's token and
//! address: sessions, scopes, limits and what may be seen are the rules
//! that API keeps, in one place, never a second copy here. Each answer is
//! turned into Mastodon's entity ([`entities`]); errors are Mastodon's
//! `{"error": "..."}` ([`reply`]).
//!
//! Every route and its OpenAPI document are in [`routes`]: sign-in
//! (`apps`, `authorize`, `oauth`), the instance, accounts and
//! relationships, statuses, timelines (paged by `Link`: [`paging`]),
//! notifications, lists, markers, search and trends (`misc`), and the
//! streams ([`streaming`], [`streaming::ws`]: ours, opened as ours are, in
//! Mastodon's framing). What Mastodon has and this server does not (media,
//! polls, push) answers 422 or 404 as Mastodon does; every
//! other path 404 (docs/api.md, *The Mastodon-compatible API*).

mod accounts;
mod apps;
mod authorize;
mod conversations;
mod entities;
mod form;
mod inner;
mod instance;
mod lists;
mod misc;
mod notifications;
mod oauth;
mod openapi;
mod paging;
mod relationships;
mod render;
mod reply;
mod routes;
mod schema;
mod shared;
mod statuses;
mod streaming;
mod timelines;

pub(crate) use shared::Mastodon;

use crate::state::AppState;
use axum::body::Body;
use axum::http::Request;
use axum::Router;

/// The Mastodon API's router.
/// The listener's router, and its SSE streams on the raw socket.
pub(crate) fn listener(state: AppState) -> (Router, crate::serve::RawStreams) {
    let (router, m) = router_of(state);
    let opener = streaming::raw::Opener::new(m);
    (router, crate::serve::RawStreams::Other(opener))
}

/// The router, and the state its handlers share.
fn router_of(state: AppState) -> (Router, Mastodon) {
    let body_limit = state.cfg.body_limit;
    let table = routes::table();
    let documented: Vec<(&'static str, Vec<schema::Doc>)> =
        table.iter().map(|r| (r.path, r.docs.clone())).collect();
    let m = Mastodon::new(state, openapi::document(&documented).to_string());
    let mut routes = Router::new();
    let mut docs = schema::Docs::new();
    for route in table {
        for doc in &route.docs {
            docs.insert((doc.method.to_string(), route.path), *doc);
        }
        routes = routes.route(route.path, route.router);
    }
    let routes = routes
        .route_layer(axum::middleware::from_fn_with_state(
            std::sync::Arc::new(docs),
            schema::gate,
        ))
        .fallback(reply::not_found)
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        .with_state(m.clone());
    // A path with a trailing slash is the path without it, as Mastodon's
    // routes take it (Mastodon.py asks for `/api/v1/instance/`).
    let router = Router::new().fallback_service(tower::ServiceExt::map_request(
        routes,
        |mut req: Request<Body>| {
            let path = req.uri().path();
            if path.len() > 1 && path.ends_with('/') {
                let trimmed = path.trim_end_matches('/');
                let fixed = match req.uri().query() {
                    Some(q) => format!("{trimmed}?{q}"),
                    None => trimmed.to_string(),
                };
                if let Ok(uri) = fixed.parse() {
                    *req.uri_mut() = uri;
                }
            }
            req
        },
    ));
    (router, m)
}
