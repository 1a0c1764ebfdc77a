//! The Mastodon-compatible API (`--mastodon-listen`, on a listener of its
//! own): the part of Mastodon's REST API that clients call to sign in and
//! read accounts, so that Mastodon client libraries and apps work against
//! this server unchanged.
//!
//! Every request is translated to this server's own API and called through
//! its router inside the process ([`inner`]), with the caller's token and
//! address: sessions, scopes, limits and what may be seen are the rules
//! that API keeps, in one place, never a second copy here. Each answer is
//! turned into Mastodon's entity ([`entities`]); errors are Mastodon's
//! `{"error": "..."}` ([`reply`]).
//!
//! Built so far: OAuth (`oauth`: applications, the password grant,
//! revocation, the server's metadata), the instance (`instance`), accounts
//! (`accounts`: the caller, by id, by `acct`). What Mastodon has and this
//! server does not (media, polls, push) answers 422 or 404 as Mastodon does;
//! every other path 404 (docs/api.md, *The Mastodon-compatible API*).

mod accounts;
mod apps;
mod authorize;
mod content;
mod entities;
mod form;
mod inner;
mod instance;
mod lists;
mod misc;
mod notifications;
mod oauth;
mod paging;
mod payloads;
mod relationships;
mod render;
mod reply;
mod shared;
mod statuses;
mod streaming;
mod streaming_ws;
mod timelines;

pub(crate) use shared::Mastodon;

use crate::state::AppState;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::{get, patch, post};
use axum::Router;

/// `POST /api/v1/media` and `/api/v2/media`: no media here.
async fn no_media() -> reply::Reply {
    Err(reply::error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Media uploads are not supported on this server",
    ))
}

/// The Mastodon API's router.
pub fn router(state: AppState) -> Router {
    let body_limit = state.cfg.body_limit;
    let m = Mastodon::new(state);
    let routes = Router::new()
        .route("/api/v1/instance", get(instance::v1))
        .route("/api/v2/instance", get(instance::v2))
        .route("/api/v1/apps", post(apps::create))
        .route(
            "/api/v1/apps/verify_credentials",
            get(apps::verify_credentials),
        )
        .route(
            "/oauth/authorize",
            get(authorize::show).post(authorize::submit),
        )
        .route("/oauth/token", post(oauth::token))
        .route("/oauth/revoke", post(oauth::revoke))
        .route(
            "/.well-known/oauth-authorization-server",
            get(oauth::metadata),
        )
        .route(
            "/api/v1/accounts/verify_credentials",
            get(accounts::verify_credentials),
        )
        .route(
            "/api/v1/accounts/update_credentials",
            patch(accounts::update_credentials),
        )
        .route("/api/v1/accounts/lookup", get(accounts::lookup))
        .route("/api/v1/accounts/search", get(accounts::search))
        .route(
            "/api/v1/accounts/relationships",
            get(relationships::relationships),
        )
        .route("/api/v1/accounts/{id}", get(accounts::show))
        .route("/api/v1/accounts/{id}/statuses", get(timelines::account))
        .route(
            "/api/v1/accounts/{id}/followers",
            get(relationships::followers),
        )
        .route(
            "/api/v1/accounts/{id}/following",
            get(relationships::following),
        )
        .route("/api/v1/accounts/{id}/follow", post(relationships::follow))
        .route(
            "/api/v1/accounts/{id}/unfollow",
            post(relationships::unfollow),
        )
        .route("/api/v1/accounts/{id}/block", post(relationships::block))
        .route(
            "/api/v1/accounts/{id}/unblock",
            post(relationships::unblock),
        )
        .route("/api/v1/accounts/{id}/mute", post(relationships::mute))
        .route("/api/v1/accounts/{id}/unmute", post(relationships::unmute))
        .route("/api/v1/follow_requests", get(relationships::requests))
        .route(
            "/api/v1/follow_requests/{id}/authorize",
            post(relationships::authorize),
        )
        .route(
            "/api/v1/follow_requests/{id}/reject",
            post(relationships::reject),
        )
        .route("/api/v1/blocks", get(relationships::blocks))
        .route("/api/v1/mutes", get(relationships::mutes))
        .route("/api/v1/statuses", post(statuses::create))
        .route(
            "/api/v1/statuses/{id}",
            get(statuses::show)
                .delete(statuses::destroy)
                .put(statuses::edit),
        )
        .route("/api/v1/statuses/{id}/source", get(statuses::source))
        .route("/api/v1/statuses/{id}/history", get(statuses::history))
        .route("/api/v1/statuses/{id}/context", get(statuses::context))
        .route("/api/v1/statuses/{id}/favourite", post(statuses::favourite))
        .route(
            "/api/v1/statuses/{id}/unfavourite",
            post(statuses::unfavourite),
        )
        .route("/api/v1/statuses/{id}/reblog", post(statuses::reblog))
        .route("/api/v1/statuses/{id}/unreblog", post(statuses::unreblog))
        .route("/api/v1/statuses/{id}/bookmark", post(statuses::bookmark))
        .route(
            "/api/v1/statuses/{id}/unbookmark",
            post(statuses::unbookmark),
        )
        .route(
            "/api/v1/statuses/{id}/favourited_by",
            get(statuses::favourited_by),
        )
        .route(
            "/api/v1/statuses/{id}/reblogged_by",
            get(statuses::reblogged_by),
        )
        .route("/api/v1/timelines/home", get(timelines::home))
        .route("/api/v1/timelines/tag/{tag}", get(timelines::tag))
        .route("/api/v1/timelines/list/{id}", get(timelines::list))
        .route("/api/v1/bookmarks", get(timelines::bookmarks))
        .route("/api/v1/favourites", get(timelines::favourites))
        .route("/api/v1/notifications", get(notifications::list))
        .route(
            "/api/v1/notifications/unread_count",
            get(notifications::unread_count),
        )
        .route("/api/v1/notifications/{id}", get(notifications::show))
        .route("/api/v2/notifications", get(notifications::grouped))
        .route("/api/v1/lists", get(lists::index).post(lists::create))
        .route(
            "/api/v1/lists/{id}",
            get(lists::show).put(lists::update).delete(lists::destroy),
        )
        .route(
            "/api/v1/lists/{id}/accounts",
            get(lists::accounts).post(lists::add).delete(lists::remove),
        )
        .route("/api/v1/trends/tags", get(misc::trends))
        .route("/api/v1/trends", get(misc::trends))
        .route("/api/v2/search", get(misc::search))
        .route(
            "/api/v1/markers",
            get(misc::markers).post(misc::set_markers),
        )
        .route("/api/v1/preferences", get(misc::preferences))
        .route("/api/v1/notifications/{id}/dismiss", post(misc::dismiss))
        .route("/api/v1/notifications/clear", post(misc::clear))
        .route("/api/v1/custom_emojis", get(misc::none))
        .route("/api/v1/filters", get(misc::none))
        .route("/api/v2/filters", get(misc::none))
        .route("/api/v1/announcements", get(misc::none))
        .route("/api/v1/followed_tags", get(misc::none))
        .route("/api/v1/featured_tags", get(misc::none))
        .route("/api/v1/domain_blocks", get(misc::none))
        .route("/api/v1/endorsements", get(misc::none))
        .route("/api/v2/suggestions", get(misc::none))
        .route("/api/v1/streaming", get(streaming_ws::socket))
        .route("/api/v1/streaming/health", get(streaming::health))
        .route("/api/v1/streaming/user", get(streaming::sse))
        .route("/api/v1/streaming/user/notification", get(streaming::sse))
        .route("/api/v1/streaming/public", get(streaming::sse))
        .route("/api/v1/streaming/public/local", get(streaming::sse))
        .route("/api/v1/streaming/hashtag", get(streaming::sse))
        .route("/api/v1/streaming/hashtag/local", get(streaming::sse))
        .route("/api/v1/streaming/list", get(streaming::sse))
        .route("/api/v1/media", post(no_media))
        .route("/api/v2/media", post(no_media))
        .fallback(reply::not_found)
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        .with_state(m);
    // A path with a trailing slash is the path without it, as Mastodon's
    // routes take it (Mastodon.py asks for `/api/v1/instance/`).
    Router::new().fallback_service(tower::ServiceExt::map_request(
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
    ))
}
