//! Mastodon's paging over our timelines: `limit`, `max_id` (exclusive),
//! `since_id` and `min_id` (the newest, or the oldest, statuses newer than
//! an id), answered newest first with a `Link` header naming the next
//! (`max_id`) and previous (`min_id`) pages, as Mastodon pages.
//!
//! Our timelines page newest first by an inclusive `max_id`; a Mastodon
//! page is read from them a page at a time until it is full, the timeline
//! ends, or the lower bound is reached (at most [`MOST_READS`] reads, so a
//! `min_id` far below a long timeline costs a bounded amount).

use super::inner::Answer;
use super::reply::{error, ok, Refused};
use super::shared::{Ctx, Mastodon};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

/// Mastodon's default page and largest page.
const DEFAULT_LIMIT: usize = 20;
const MOST_LIMIT: usize = 40;

/// Our largest page, read when looking for a `min_id` from above.
const OUR_PAGE: usize = 200;

/// Most pages of ours one Mastodon page reads.
const MOST_READS: usize = 5;

/// A Mastodon page's bounds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    pub(super) limit: usize,
    pub(super) max_id: Option<u64>,
    pub(super) since_id: Option<u64>,
    pub(super) min_id: Option<u64>,
}

/// An id bound of the query: absent, or a number (anything else: 400, as
/// Mastodon's answer to an id it cannot read).
fn bound(cx: &Ctx, name: &str) -> Result<Option<u64>, Refused> {
    match cx.param(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        // Past the largest id: the largest (every id is below it).
        Some(v) if v.len() <= 20 && v.bytes().all(|b| b.is_ascii_digit()) => {
            Ok(Some(v.parse().unwrap_or(u64::MAX)))
        }
        Some(_) => Err(error(
            StatusCode::BAD_REQUEST,
            &format!("{name} must be a status id"),
        )),
    }
}

impl Window {
    /// The window a request asks for (`limit` clamped to 1–40, as Mastodon
    /// clamps it).
    pub(super) fn of(cx: &Ctx) -> Result<Window, Refused> {
        Window::up_to(cx, DEFAULT_LIMIT, MOST_LIMIT)
    }

    /// The window a request asks for, `limit` `default` and at most `most`.
    pub(super) fn up_to(cx: &Ctx, default: usize, most: usize) -> Result<Window, Refused> {
        let limit = cx
            .param("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .unwrap_or(default)
            .clamp(1, most);
        Ok(Window {
            limit,
            max_id: bound(cx, "max_id")?,
            since_id: bound(cx, "since_id")?,
            min_id: bound(cx, "min_id")?,
        })
    }
}

/// The statuses of our timeline at `path` (its own query in `query`,
/// without paging) that fall in `window` and pass `keep`, newest first.
pub(super) async fn statuses(
    m: &Mastodon,
    cx: &Ctx,
    path: &str,
    query: &str,
    window: Window,
    keep: impl Fn(&Value) -> bool,
) -> Result<Vec<Value>, Refused> {
    read(m, cx, (path, query), window, keep, |page| match page {
        Value::Array(items) => items,
        _ => Vec::new(),
    })
    .await
}

/// The items of our list at `at` (a path and its own query, without
/// paging; `pick` takes the items out of an answer) that fall in `window`
/// and pass `keep`, newest first.
pub(super) async fn read(
    m: &Mastodon,
    cx: &Ctx,
    at: (&str, &str),
    window: Window,
    keep: impl Fn(&Value) -> bool,
    pick: impl Fn(Value) -> Vec<Value>,
) -> Result<Vec<Value>, Refused> {
    let (path, query) = at;
    // Exclusive bounds: above `lower`, below `upper`.
    let lower = window.since_id.or(window.min_id).unwrap_or(0);
    let oldest_first = window.since_id.is_none() && window.min_id.is_some();
    let mut upper = window.max_id.unwrap_or(u64::MAX);
    let count = if oldest_first {
        OUR_PAGE
    } else {
        window.limit.max(1)
    };
    let mut found: Vec<Value> = Vec::new();
    if upper <= lower.saturating_add(1) {
        // Nothing can be in the window; the caller is still checked.
        let sep = if query.is_empty() { "" } else { "&" };
        let url = format!("{path}?{query}{sep}count=1");
        ok(m.inner.call(Method::GET, &url, &cx.caller, None).await)?;
    }
    for _ in 0..MOST_READS {
        if upper <= lower.saturating_add(1) {
            break;
        }
        let sep = if query.is_empty() { "" } else { "&" };
        let url = format!("{path}?{query}{sep}count={count}&max_id={}", upper - 1);
        let page = pick(ok(m.inner.call(Method::GET, &url, &cx.caller, None).await)?);
        let Some(last) = page.last().and_then(|s| super::shared::id_of(s, "id")) else {
            break;
        };
        let mut reached = false;
        for s in page {
            match super::shared::id_of(&s, "id") {
                Some(id) if id > lower => {
                    if keep(&s) {
                        found.push(s);
                    }
                }
                _ => reached = true,
            }
        }
        upper = last;
        if reached || (!oldest_first && found.len() >= window.limit) {
            break;
        }
    }
    if oldest_first {
        let skip = found.len().saturating_sub(window.limit);
        found.drain(..skip);
    } else {
        found.truncate(window.limit);
    }
    Ok(found)
}

/// `items` (entities with string `id`s, newest first) as a Mastodon page:
/// the JSON array and a `Link` header to the next and previous pages, the
/// request's other query fields kept.
pub(super) fn page(cx: &Ctx, items: Vec<Value>) -> Response {
    let id = |v: Option<&Value>| v.and_then(|v| v["id"].as_str()).map(str::to_string);
    let links = links_by(cx, id(items.first()), id(items.last()));
    with_link(
        super::reply::entity(StatusCode::OK, Value::Array(items)),
        links,
    )
}

/// The `Link` header of a page whose items are ordered by ids from
/// `first` (newest) to `last`: the next page below `last`, the previous
/// above `first` (none for an empty page).
pub(super) fn links_by(cx: &Ctx, first: Option<String>, last: Option<String>) -> Option<String> {
    let (first, last) = (first?, last?);
    Some(format!(
        "<{}>; rel=\"next\", <{}>; rel=\"prev\"",
        link(cx, "max_id", &last),
        link(cx, "min_id", &first)
    ))
}

/// `items` as a page whose next page starts at our `cursor` (lists of
/// accounts page by our cursors: `max_id` carries it back).
pub(super) fn cursor_page(cx: &Ctx, items: Vec<Value>, cursor: Option<&str>) -> Response {
    let cursor = cursor.filter(|_| !items.is_empty());
    with_next(
        cx,
        super::reply::entity(StatusCode::OK, Value::Array(items)),
        cursor,
    )
}

/// `res` with a `Link` to the next page, at our `cursor` (none: the last).
pub(super) fn with_next(cx: &Ctx, res: Response, cursor: Option<&str>) -> Response {
    let links = cursor
        .filter(|c| !c.is_empty())
        .map(|c| format!("<{}>; rel=\"next\"", link(cx, "max_id", c)));
    with_link(res, links)
}

/// Our answer's `next_cursor`, for [`cursor_page`].
pub(super) fn next_cursor(answer: &Answer) -> Option<String> {
    answer.body["next_cursor"].as_str().map(str::to_string)
}

pub(super) fn with_link(mut res: Response, links: Option<String>) -> Response {
    if let Some(v) = links.and_then(|l| HeaderValue::from_str(&l).ok()) {
        res.headers_mut().insert(header::LINK, v);
    }
    res
}

/// This request's URL with `name=value` in place of its paging fields.
fn link(cx: &Ctx, name: &str, value: &str) -> String {
    let mut pairs: Vec<(&str, &str)> = cx
        .params
        .iter()
        .filter(|(k, _)| !["max_id", "min_id", "since_id", "access_token"].contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.push((name, value));
    let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
    format!("{}{}?{query}", cx.base, cx.path)
}
