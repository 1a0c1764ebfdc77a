//! The instance: `GET /api/v1/instance` and `GET /api/v2/instance`, what a
//! client reads first (its version, limits and where to stream).

use super::reply::{entity, Reply};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

/// The Mastodon version this API follows, and ours, as Mastodon-compatible
/// servers say it (clients read the first number for what they may call).
pub(super) const VERSION: &str = concat!(
    "4.3.0 (compatible; firehose ",
    env!("CARGO_PKG_VERSION"),
    ")"
);

/// What statuses and the rest may hold here.
fn configuration(streaming: &str) -> Value {
    json!({
        "urls": { "streaming": streaming },
        "accounts": { "max_featured_tags": 0, "max_pinned_statuses": 0 },
        "statuses": {
            "max_characters": crate::http::shared::status_text::MAX_MESSAGE_CHARS,
            "max_media_attachments": 0,
            "characters_reserved_per_url": 23,
        },
        "media_attachments": {
            "supported_mime_types": [],
            "image_size_limit": 0,
            "image_matrix_limit": 0,
            "video_size_limit": 0,
            "video_frame_rate_limit": 0,
            "video_matrix_limit": 0,
        },
        "polls": {
            "max_options": 0,
            "max_characters_per_option": 0,
            "min_expiration": 0,
            "max_expiration": 0,
        },
        "translation": { "enabled": false },
    })
}

/// `GET /api/v1/instance`.
pub(super) async fn v1(headers: HeaderMap) -> Reply {
    let host = super::shared::host(&headers);
    // The network keeps no count of users or statuses: 0, as a server that
    // does not publish them answers.
    let users = 0;
    Ok(entity(
        StatusCode::OK,
        json!({
            "uri": host,
            "title": "firehose",
            "short_description": "A Twitter-like network with a streaming firehose.",
            "description": "A Twitter-like network with a streaming firehose.",
            "email": "",
            "version": VERSION,
            "urls": { "streaming_api": super::shared::streaming_url(&headers) },
            "stats": { "user_count": users, "status_count": 0, "domain_count": 0 },
            "thumbnail": Value::Null,
            "languages": ["en"],
            "registrations": false,
            "approval_required": false,
            "invites_enabled": false,
            "configuration": configuration(&super::shared::streaming_url(&headers)),
            "contact_account": Value::Null,
            "rules": [],
        }),
    ))
}

/// `GET /api/v2/instance`.
pub(super) async fn v2(headers: HeaderMap) -> Reply {
    let host = super::shared::host(&headers);
    let users = 0;
    Ok(entity(
        StatusCode::OK,
        json!({
            "domain": host,
            "title": "firehose",
            "version": VERSION,
            "source_url": "https://github.com/firehose/firehose",
            "description": "A Twitter-like network with a streaming firehose.",
            "usage": { "users": { "active_month": users } },
            "thumbnail": { "url": format!("{}/favicon.ico", super::shared::base_url(&headers)) },
            "icon": [],
            "languages": ["en"],
            "configuration": configuration(&super::shared::streaming_url(&headers)),
            "registrations": { "enabled": false, "approval_required": false, "message": Value::Null },
            "api_versions": { "mastodon": 2 },
            "contact": { "email": "", "account": Value::Null },
            "rules": [],
        }),
    ))
}
