//! What the Mastodon API's handlers share: the application's state with our
//! own API's router ([`Mastodon`]), and the address clients reach it by.

use super::inner::{Caller, Inner};
use crate::rate_limits::ClientAddr;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

/// The handlers' state: the application's, and our own API to call.
#[derive(Clone)]
pub(crate) struct Mastodon {
    pub(super) app: AppState,
    pub(super) inner: Inner,
    /// Streamed events' payloads for a second host name.
    pub(super) payloads: Arc<Payloads>,
    /// This API's OpenAPI document.
    pub(super) openapi: Arc<String>,
}

impl Mastodon {
    pub(super) fn new(app: AppState, openapi: String) -> Mastodon {
        Mastodon {
            inner: Inner(crate::http::router(app.clone())),
            app,
            payloads: Default::default(),
            openapi: Arc::new(openapi),
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

/// What every handler knows of its request: the caller (token, address,
/// `Idempotency-Key`), the server's URL as the client reached it, the path
/// and the query's fields (`id[]` and the like as repeated `id`).
pub(super) struct Ctx {
    pub(super) caller: Caller,
    /// An application's own token (the client-credentials grant), taken
    /// out of `caller`: our API reads for no user then.
    pub(super) app_token: Option<String>,
    pub(super) base: String,
    pub(super) path: String,
    pub(super) params: Vec<(String, String)>,
}

/// Most query fields read from one request.
const MOST_PARAMS: usize = 64;

impl FromRequestParts<Mastodon> for Ctx {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, m: &Mastodon) -> Result<Ctx, Infallible> {
        let query = parts.uri.query();
        let client = parts.extensions.get::<ClientAddr>().copied();
        let params = query
            .and_then(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).ok())
            .unwrap_or_default()
            .into_iter()
            .take(MOST_PARAMS)
            .map(|(k, v)| (k.trim_end_matches("[]").to_string(), v))
            .collect();
        let mut caller = Caller::of(&parts.headers, query, client);
        let app_token = caller
            .token
            .take_if(|t| m.app.jwt.app_of_token(t).is_some());
        Ok(Ctx {
            caller,
            app_token,
            base: base_url(&parts.headers),
            path: parts.uri.path().to_string(),
            params,
        })
    }
}

impl Ctx {
    /// A context of our own making (a stream's event made into Mastodon's):
    /// `caller` (`Default`: no one in particular) reaching us at `base`.
    pub(super) fn inside(caller: Caller, base: &str) -> Ctx {
        Ctx {
            caller,
            app_token: None,
            base: base.to_string(),
            path: String::new(),
            params: Vec::new(),
        }
    }

    /// The query field `name` (its first value).
    pub(super) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of the query field `name` (`id[]=1&id[]=2`).
    pub(super) fn params(&self, name: &str) -> Vec<&str> {
        self.params
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Whether the query field `name` is true (`true` or `1`).
    pub(super) fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1"))
    }
}

/// `id` if it is an id of ours (a number), else 404 as Mastodon answers
/// for a record it does not have.
pub(super) fn id_part(id: &str) -> Result<&str, super::reply::Refused> {
    if !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit()) {
        Ok(id)
    } else {
        Err(super::reply::error(
            axum::http::StatusCode::NOT_FOUND,
            "Record not found",
        ))
    }
}

/// A numeric id field of our JSON.
pub(super) fn id_of(v: &serde_json::Value, field: &str) -> Option<u64> {
    v[field].as_str().and_then(|s| s.parse().ok())
}

// Streamed events' payloads for a second host name. An event's payload
// is kept on the event itself (`Frame::translated`) for the URL base the
// first connection had; a connection that reached the listener by another
// name (rare: one instance, one name) has its own made here, at most
// [`MOST_PAYLOADS`], the oldest made forgotten first.

/// Payloads kept for other connections.
const MOST_PAYLOADS: usize = 4_096;

/// A Mastodon event: its name, its payload (a JSON text) and the whole
/// SSE message that carries it (with our event's `id`).
#[derive(Clone, Debug)]
pub(super) struct Said {
    pub(super) name: &'static str,
    pub(super) payload: Arc<str>,
    pub(super) sse: bytes::Bytes,
}

impl Said {
    /// `name` with `payload`, for the event `id`.
    pub(super) fn new(id: &str, name: &'static str, payload: String) -> Said {
        let mut sse = Vec::with_capacity(payload.len() + id.len() + 32);
        for part in ["id: ", id, "\nevent: ", name, "\ndata: ", &payload, "\n\n"] {
            sse.extend_from_slice(part.as_bytes());
        }
        Said {
            name,
            payload: Arc::from(payload),
            sse: sse.into(),
        }
    }
}

/// One event's payload, made once: the first connection to need it makes
/// it, the others wait for that.
pub(super) type Cell = Arc<tokio::sync::OnceCell<Option<Said>>>;

/// Payloads by key (URL base and event), and the keys in the order made.
type Kept = (HashMap<String, Cell>, VecDeque<String>);

/// The payloads kept (`Mastodon::payloads`).
#[derive(Default)]
pub(crate) struct Payloads(Mutex<Kept>);

impl Payloads {
    /// The cell of `key`'s payload (a new one if it is not kept),
    /// forgetting the oldest past the bound.
    pub(super) fn cell(&self, key: String) -> Cell {
        let Ok(mut kept) = self.0.lock() else {
            return Cell::default();
        };
        let (map, order) = &mut *kept;
        if let Some(cell) = map.get(&key) {
            return cell.clone();
        }
        let cell = Cell::default();
        map.insert(key.clone(), cell.clone());
        order.push_back(key);
        while order.len() > MOST_PAYLOADS {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
        cell
    }
}
