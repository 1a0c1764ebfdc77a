//! The routes of statuses, timelines, notifications, lists, markers,
//! search, trends, the streams and the document itself.

use super::build::{get_, post_, r, Route, CURSOR, LIST, PAGE};
use crate::mastodon::conversations;
use crate::mastodon::lists;
use crate::mastodon::misc;
use crate::mastodon::notifications;
use crate::mastodon::schema::{Doc, P};
use crate::mastodon::statuses;
use crate::mastodon::streaming;
use crate::mastodon::streaming::ws as streaming_ws;
use crate::mastodon::timelines;
use axum::routing::{delete, get, post};

/// These routes.
pub(super) fn routes() -> Vec<Route> {
    let status_post: &[(&str, P)] = &[
        ("status", P::Text(1, 280)),
        ("in_reply_to_id", P::Id),
        ("visibility", P::Of(&["public", "private", "direct"])),
        ("spoiler_text", P::Blank),
        ("sensitive", P::Bool),
        ("language", P::Str),
    ];
    vec![
        r(
            "/api/v1/statuses",
            post(statuses::create),
            &[post_("Post a status", "Status")
                .body(status_post, &["status"])
                .codes(&[401, 403, 404, 422, 429, 503])],
        ),
        r(
            "/api/v1/statuses/{id}",
            get(statuses::show)
                .delete(statuses::destroy)
                .put(statuses::edit),
            &[
                get_("A status", "Status").open().codes(&[401, 404]),
                Doc::new("delete", "Delete a status: it, with its text", "Status")
                    .codes(&[401, 403, 404]),
                Doc::new("put", "Edit a status", "Status")
                    .body(status_post, &["status"])
                    .codes(&[401, 403, 404, 422, 429]),
            ],
        ),
        r(
            "/api/v1/statuses/{id}/source",
            get(statuses::source),
            &[get_("A status's text", "StatusSource").codes(&[401, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/history",
            get(statuses::history),
            &[get_("A status's versions", "StatusEdits")
                .open()
                .codes(&[401, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/context",
            get(statuses::context),
            &[get_("Ancestors and descendants", "Context")
                .open()
                .codes(&[401, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/favourite",
            post(statuses::favourite),
            &[post_("Favourite", "Status").codes(&[401, 403, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/unfavourite",
            post(statuses::unfavourite),
            &[post_("Undo a favourite", "Status").codes(&[401, 403, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/reblog",
            post(statuses::reblog),
            &[post_("Reblog", "Status").codes(&[401, 403, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/unreblog",
            post(statuses::unreblog),
            &[post_("Undo a reblog", "Status").codes(&[401, 403, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/bookmark",
            post(statuses::bookmark),
            &[post_("Bookmark", "Status").codes(&[401, 403, 404, 422])],
        ),
        r(
            "/api/v1/statuses/{id}/unbookmark",
            post(statuses::unbookmark),
            &[post_("Undo a bookmark", "Status").codes(&[401, 403, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/favourited_by",
            get(statuses::favourited_by),
            &[get_("Who favourited", "Accounts")
                .open()
                .query(CURSOR)
                .codes(&[400, 401, 404])],
        ),
        r(
            "/api/v1/statuses/{id}/reblogged_by",
            get(statuses::reblogged_by),
            &[get_("Who reblogged, newest first", "Accounts")
                .open()
                .query(PAGE)
                .codes(&[400, 401, 404, 503])],
        ),
        r(
            "/api/v1/timelines/home",
            get(timelines::home),
            &[get_("The home timeline", "Statuses")
                .query(PAGE)
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/timelines/public",
            get(timelines::public),
            &[get_(
                "The public timeline (every public status the history holds)",
                "Statuses",
            )
            .query(&[
                ("max_id", P::Str),
                ("since_id", P::Id),
                ("min_id", P::Id),
                ("limit", P::Int),
                ("local", P::Bool),
                ("remote", P::Bool),
                ("only_media", P::Bool),
            ])
            .codes(&[400, 401, 503])],
        ),
        r(
            "/api/v1/timelines/tag/{tag}",
            get(timelines::tag),
            &[get_("A hashtag's timeline", "Statuses")
                .open()
                .query(&[
                    ("max_id", P::Id),
                    ("since_id", P::Id),
                    ("min_id", P::Id),
                    ("limit", P::Int),
                    ("only_media", P::Bool),
                ])
                .codes(&[400, 401, 404])],
        ),
        r(
            "/api/v1/timelines/list/{id}",
            get(timelines::list),
            &[get_("A list's timeline", "Statuses")
                .query(PAGE)
                .codes(&[400, 401, 404])],
        ),
        r(
            "/api/v1/bookmarks",
            get(timelines::bookmarks),
            &[get_("The caller's bookmarks", "Statuses")
                .query(CURSOR)
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/favourites",
            get(timelines::favourites),
            &[get_("The caller's favourites", "Statuses")
                .query(CURSOR)
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/notifications",
            get(notifications::list),
            &[get_("Notifications", "Notifications")
                .query(&[
                    ("max_id", P::Id),
                    ("since_id", P::Id),
                    ("min_id", P::Id),
                    ("limit", P::Int),
                    ("types[]", P::Strs),
                    ("exclude_types[]", P::Strs),
                    ("account_id", P::Id),
                ])
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/notifications/unread_count",
            get(notifications::unread_count),
            &[get_("Unread notifications", "Count").codes(&[401])],
        ),
        r(
            "/api/v1/notifications/clear",
            post(misc::clear),
            &[post_("Clear every notification", "Empty").codes(&[401, 503])],
        ),
        r(
            "/api/v1/notifications/{id}",
            get(notifications::show),
            &[get_("A notification", "Notification").codes(&[401, 404])],
        ),
        r(
            "/api/v1/notifications/{id}/dismiss",
            post(misc::dismiss),
            &[post_("Dismiss a notification", "Empty").codes(&[401, 404, 503])],
        ),
        r(
            "/api/v2/notifications",
            get(notifications::grouped),
            &[get_("Grouped notifications", "GroupedNotifications")
                .query(&[
                    ("max_id", P::Str),
                    ("limit", P::Int),
                    ("types[]", P::Strs),
                    ("exclude_types[]", P::Strs),
                ])
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/lists",
            get(lists::index).post(lists::create),
            &[
                get_("The caller's lists", "Lists").codes(&[401]),
                post_("Make a list", "List")
                    .body(LIST, &["title"])
                    .codes(&[401, 422]),
            ],
        ),
        r(
            "/api/v1/lists/{id}",
            get(lists::show).put(lists::update).delete(lists::destroy),
            &[
                get_("A list", "List"),
                Doc::new("put", "Rename a list", "List").body(LIST, &["title"]),
                Doc::new("delete", "Delete a list", "Empty"),
            ],
        ),
        r(
            "/api/v1/lists/{id}/accounts",
            get(lists::accounts).post(lists::add).delete(lists::remove),
            &[
                get_("A list's accounts", "Accounts")
                    .query(CURSOR)
                    .codes(&[400, 401, 404]),
                post_("Add accounts", "Empty")
                    .body(&[("account_ids", P::Ids)], &["account_ids"])
                    .codes(&[401, 404, 422, 429]),
                Doc::new("delete", "Remove accounts", "Empty")
                    .body(&[("account_ids", P::Ids)], &["account_ids"]),
            ],
        ),
        r(
            "/api/v1/trends/tags",
            get(misc::trends),
            &[get_("Trending hashtags", "Tags")
                .open()
                .query(&[("limit", P::Int)])
                .codes(&[401])],
        ),
        r(
            "/api/v1/trends",
            get(misc::trends),
            &[get_("Trending hashtags", "Tags")
                .open()
                .query(&[("limit", P::Int)])
                .codes(&[401])],
        ),
        r(
            "/api/v2/search",
            get(misc::search),
            &[get_("Accounts, hashtags and statuses", "Search")
                .open()
                .query(&[
                    ("q", P::Str),
                    ("type", P::Str),
                    ("limit", P::Int),
                    ("resolve", P::Bool),
                    ("following", P::Bool),
                ])
                .codes(&[401, 503])],
        ),
        r(
            "/api/v1/markers",
            get(misc::markers).post(misc::set_markers),
            &[
                get_("Read markers", "Markers")
                    .query(&[("timeline[]", P::Strs)])
                    .codes(&[401, 503]),
                post_("Set read markers", "Markers")
                    .body(&[("home", P::Marker), ("notifications", P::Marker)], &[])
                    .codes(&[401, 422, 503]),
            ],
        ),
        r(
            "/api/v1/preferences",
            get(misc::preferences),
            &[get_("Posting and reading preferences", "Preferences").codes(&[401])],
        ),
        r(
            "/api/v1/custom_emojis",
            get(misc::none),
            &[get_("Custom emojis (none)", "EmptyList").open().codes(&[])],
        ),
        r(
            "/api/v1/filters",
            get(misc::none),
            &[get_("Filters (none)", "EmptyList").open().codes(&[])],
        ),
        r(
            "/api/v2/filters",
            get(misc::none),
            &[get_("Filters (none)", "EmptyList").open().codes(&[])],
        ),
        r(
            "/api/v1/announcements",
            get(misc::none),
            &[get_("Announcements (none)", "EmptyList").open().codes(&[])],
        ),
        r(
            "/api/v1/followed_tags",
            get(misc::none),
            &[get_("Followed hashtags (none)", "EmptyList")
                .open()
                .codes(&[])],
        ),
        r(
            "/api/v1/featured_tags",
            get(misc::none),
            &[get_("Featured hashtags (none)", "EmptyList")
                .open()
                .codes(&[])],
        ),
        r(
            "/api/v1/domain_blocks",
            get(misc::none),
            &[get_("Domain blocks (none)", "EmptyList").open().codes(&[])],
        ),
        r(
            "/api/v1/endorsements",
            get(misc::none),
            &[get_("Endorsements (none)", "EmptyList").open().codes(&[])],
        ),
        r(
            "/api/v2/suggestions",
            get(misc::none),
            &[get_("Suggestions (none)", "EmptyList").open().codes(&[])],
        ),
        r(
            "/api/v1/media",
            post(misc::no_media),
            &[post_("Media uploads (none here)", "Error")
                .open()
                .codes(&[422])],
        ),
        r(
            "/api/v2/media",
            post(misc::no_media),
            &[post_("Media uploads (none here)", "Error")
                .open()
                .codes(&[422])],
        ),
        r(
            "/api/v1/streaming",
            get(streaming_ws::socket),
            &[get_("The streaming WebSocket", "stream")
                .query(&[
                    ("stream", P::Str),
                    ("tag", P::Str),
                    ("list", P::Id),
                    ("access_token", P::Str),
                ])
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/streaming/health",
            get(streaming::health),
            &[get_("The streaming API is up", "text").open().codes(&[])],
        ),
        r(
            "/api/v1/streaming/user",
            get(streaming::sse),
            &[sse("The caller's home and notifications")],
        ),
        r(
            "/api/v1/streaming/user/notification",
            get(streaming::sse),
            &[sse("The caller's notifications")],
        ),
        r(
            "/api/v1/streaming/public",
            get(streaming::sse),
            &[sse("Every public status")],
        ),
        r(
            "/api/v1/streaming/public/local",
            get(streaming::sse),
            &[sse("Every public status (all are local)")],
        ),
        r(
            "/api/v1/streaming/hashtag",
            get(streaming::sse),
            &[sse("A hashtag's statuses (tag=)")],
        ),
        r(
            "/api/v1/streaming/hashtag/local",
            get(streaming::sse),
            &[sse("A hashtag's statuses (tag=)")],
        ),
        r(
            "/api/v1/streaming/direct",
            get(streaming::sse),
            &[sse("The caller's conversations")],
        ),
        r(
            "/api/v1/conversations",
            get(conversations::index),
            &[get_("The caller's conversations", "Conversations")
                .query(CURSOR)
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/conversations/{id}",
            delete(conversations::remove),
            &[Doc::new("delete", "Leave a group conversation", "Empty").codes(&[401, 404, 422])],
        ),
        r(
            "/api/v1/conversations/{id}/read",
            post(conversations::read),
            &[post_("Mark a conversation read", "Conversation").codes(&[401, 404])],
        ),
        r(
            "/api/v1/streaming/list",
            get(streaming::sse),
            &[sse("A list's statuses (list=)")],
        ),
        r(
            "/openapi.json",
            get(misc::openapi),
            &[get_("This document", "object").open().codes(&[])],
        ),
    ]
}

/// An SSE stream's document.
const fn sse(summary: &'static str) -> Doc {
    get_(summary, "stream")
        .query(&[
            ("tag", P::Str),
            ("list", P::Id),
            ("last_event_id", P::Str),
            ("access_token", P::Str),
        ])
        .codes(&[401, 403, 404, 429])
}
