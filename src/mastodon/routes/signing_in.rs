//! The routes of signing in, the instance, accounts and relationships.

use super::build::{get_, post_, r, Route, CURSOR};
use crate::mastodon::accounts;
use crate::mastodon::apps;
use crate::mastodon::authorize;
use crate::mastodon::instance;
use crate::mastodon::oauth;
use crate::mastodon::relationships;
use crate::mastodon::schema::{Doc, P};
use crate::mastodon::timelines;
use axum::routing::{get, patch, post};

/// These routes.
pub(super) fn routes() -> Vec<Route> {
    vec![
        r(
            "/api/v1/instance",
            get(instance::v1),
            &[get_("The server (v1)", "InstanceV1").open().codes(&[])],
        ),
        r(
            "/api/v2/instance",
            get(instance::v2),
            &[get_("The server (v2)", "InstanceV2").open().codes(&[])],
        ),
        r(
            "/api/v1/apps",
            post(apps::create),
            &[post_("Register an application", "Application")
                .open()
                .body(
                    &[
                        ("client_name", P::Text(1, 2000)),
                        ("redirect_uris", P::Uris),
                        ("scopes", P::Scopes),
                        ("website", P::Str),
                    ],
                    &["client_name", "redirect_uris"],
                )
                .codes(&[422])],
        ),
        r(
            "/api/v1/apps/verify_credentials",
            get(apps::verify_credentials),
            &[get_("The application an app token names", "Application").codes(&[401])],
        ),
        r(
            "/oauth/authorize",
            get(authorize::show).post(authorize::submit),
            &[
                get_("The sign-in page", "html")
                    .open()
                    .query(&[
                        ("response_type", P::Str),
                        ("client_id", P::Str),
                        ("redirect_uri", P::Str),
                        ("scope", P::Str),
                        ("state", P::Str),
                        ("code_challenge", P::Str),
                        ("code_challenge_method", P::Str),
                    ])
                    .codes(&[400]),
                post_("The sign-in form: the code sent or shown", "html")
                    .open()
                    .body(
                        &[
                            ("response_type", P::Str),
                            ("client_id", P::Str),
                            ("redirect_uri", P::Str),
                            ("scope", P::Str),
                            ("state", P::Str),
                            ("code_challenge", P::Str),
                            ("code_challenge_method", P::Str),
                            ("username", P::Str),
                            ("password", P::Str),
                        ],
                        &[],
                    )
                    .codes(&[302, 400, 401, 429, 503]),
            ],
        ),
        r(
            "/oauth/token",
            post(oauth::token),
            &[post_(
                "A token (password, authorization_code, client_credentials)",
                "Token",
            )
            .open()
            .body(
                &[
                    (
                        "grant_type",
                        P::Of(&["password", "authorization_code", "client_credentials"]),
                    ),
                    ("client_id", P::Str),
                    ("client_secret", P::Str),
                    ("username", P::Str),
                    ("password", P::Str),
                    ("code", P::Str),
                    ("code_verifier", P::Str),
                    ("redirect_uri", P::Str),
                    ("scope", P::Str),
                ],
                &["grant_type", "client_id", "client_secret"],
            )
            .codes(&[400, 401, 429, 503])],
        ),
        r(
            "/oauth/revoke",
            post(oauth::revoke),
            &[post_("End a token's session", "Empty")
                .open()
                .body(
                    &[
                        ("client_id", P::Str),
                        ("client_secret", P::Str),
                        ("token", P::Str),
                    ],
                    &["client_id", "client_secret", "token"],
                )
                .codes(&[403])],
        ),
        r(
            "/.well-known/oauth-authorization-server",
            get(oauth::metadata),
            &[get_("The OAuth server's metadata", "OAuthMetadata")
                .open()
                .codes(&[])],
        ),
        r(
            "/api/v1/accounts/verify_credentials",
            get(accounts::verify_credentials),
            &[get_("The caller's account, with source", "Account").codes(&[401])],
        ),
        r(
            "/api/v1/accounts/update_credentials",
            patch(accounts::update_credentials),
            &[
                Doc::new("patch", "Change display name or locked", "Account").body(
                    &[
                        ("display_name", P::Name),
                        ("locked", P::Bool),
                        ("note", P::Blank),
                    ],
                    &[],
                ),
            ],
        ),
        r(
            "/api/v1/accounts/lookup",
            get(accounts::lookup),
            &[get_("An account by acct", "Account")
                .open()
                .query(&[("acct", P::Str)])
                .codes(&[401, 404])],
        ),
        r(
            "/api/v1/accounts/search",
            get(accounts::search),
            &[get_("The account whose login is q, then the caller's follows and followers whose login or name starts with q", "Accounts")
                .open()
                .query(&[("q", P::Str), ("limit", P::Int), ("following", P::Bool), ("resolve", P::Bool), ("offset", P::Int)])
                .codes(&[401])],
        ),
        r(
            "/api/v1/accounts/relationships",
            get(relationships::relationships),
            &[get_("Relationships to accounts", "Relationships")
                .query(&[("id[]", P::Ids)])
                .codes(&[401, 503])],
        ),
        r(
            "/api/v1/accounts/{id}",
            get(accounts::show),
            &[get_("An account", "Account").open().codes(&[401, 404])],
        ),
        r(
            "/api/v1/accounts/{id}/statuses",
            get(timelines::account),
            &[get_("An account's statuses", "Statuses")
                .open()
                .query(&[
                    ("max_id", P::Id),
                    ("since_id", P::Id),
                    ("min_id", P::Id),
                    ("limit", P::Int),
                    ("exclude_replies", P::Bool),
                    ("exclude_reblogs", P::Bool),
                    ("pinned", P::Bool),
                    ("only_media", P::Bool),
                    ("tagged", P::Str),
                ])
                .codes(&[400, 401, 404])],
        ),
        r(
            "/api/v1/accounts/{id}/followers",
            get(relationships::followers),
            &[get_("Followers", "Accounts")
                .open()
                .query(CURSOR)
                .codes(&[400, 401, 404])],
        ),
        r(
            "/api/v1/accounts/{id}/following",
            get(relationships::following),
            &[get_("Followed accounts", "Accounts")
                .open()
                .query(CURSOR)
                .codes(&[400, 401, 404])],
        ),
        r(
            "/api/v1/accounts/{id}/follow",
            post(relationships::follow),
            &[
                post_("Follow (a request to a locked account)", "Relationship")
                    .codes(&[401, 403, 404, 422, 429]),
            ],
        ),
        r(
            "/api/v1/accounts/{id}/unfollow",
            post(relationships::unfollow),
            &[post_("Unfollow", "Relationship").codes(&[401, 403, 404, 422])],
        ),
        r(
            "/api/v1/accounts/{id}/block",
            post(relationships::block),
            &[post_("Block", "Relationship").codes(&[401, 404, 422, 429])],
        ),
        r(
            "/api/v1/accounts/{id}/unblock",
            post(relationships::unblock),
            &[post_("Unblock", "Relationship").codes(&[401, 404, 422])],
        ),
        r(
            "/api/v1/accounts/{id}/mute",
            post(relationships::mute),
            &[post_("Mute", "Relationship").codes(&[401, 404, 422, 429])],
        ),
        r(
            "/api/v1/accounts/{id}/unmute",
            post(relationships::unmute),
            &[post_("Unmute", "Relationship").codes(&[401, 404, 422])],
        ),
        r(
            "/api/v1/follow_requests",
            get(relationships::requests),
            &[get_("Who asked to follow the caller", "Accounts")
                .query(CURSOR)
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/follow_requests/{id}/authorize",
            post(relationships::authorize),
            &[post_("Accept a follow request", "Relationship")],
        ),
        r(
            "/api/v1/follow_requests/{id}/reject",
            post(relationships::reject),
            &[post_("Reject a follow request", "Relationship")],
        ),
        r(
            "/api/v1/blocks",
            get(relationships::blocks),
            &[get_("Blocked accounts", "Accounts")
                .query(CURSOR)
                .codes(&[400, 401])],
        ),
        r(
            "/api/v1/mutes",
            get(relationships::mutes),
            &[get_("Muted accounts", "Accounts")
                .query(CURSOR)
                .codes(&[400, 401])],
        ),
    ]
}
