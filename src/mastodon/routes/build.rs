//! What the route tables are written with: a route (a path, its methods'
//! handlers and their documents), and the documents' common parts.

use crate::mastodon::schema::{Doc, P};
use crate::mastodon::shared::Mastodon;
use axum::routing::MethodRouter;

pub(super) const fn get_(summary: &'static str, reply: &'static str) -> Doc {
    Doc::new("get", summary, reply)
}
pub(super) const fn post_(summary: &'static str, reply: &'static str) -> Doc {
    Doc::new("post", summary, reply)
}

/// Mastodon's paging of a timeline.
pub(super) const PAGE: &[(&str, P)] = &[
    ("max_id", P::Id),
    ("since_id", P::Id),
    ("min_id", P::Id),
    ("limit", P::Int),
];
/// A list's fields.
pub(super) const LIST: &[(&str, P)] = &[
    ("title", P::Text(1, 50)),
    ("replies_policy", P::Of(&["list"])),
    ("exclusive", P::False),
];
/// Paging by our cursor (carried back as `max_id`).
pub(super) const CURSOR: &[(&str, P)] = &[("max_id", P::Str), ("limit", P::Int)];

/// A route: its path, its methods' handlers and their documents.
pub(crate) struct Route {
    pub(crate) path: &'static str,
    pub(crate) router: MethodRouter<Mastodon>,
    pub(crate) docs: Vec<Doc>,
}

pub(super) fn r(path: &'static str, router: MethodRouter<Mastodon>, docs: &[Doc]) -> Route {
    Route {
        path,
        router,
        docs: docs.to_vec(),
    }
}
