//! Our own API, called from inside the process: a Mastodon request becomes
//! a request to the router every other client uses, with the caller's
//! token and address, so that every rule (sessions, scopes, limits,
//! privacy) is the one that API keeps.

use crate::rate_limits::ClientAddr;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use axum::Router;
use serde_json::Value;
use tower::ServiceExt;

/// Most bytes of an answer read back (our API's pages are far smaller).
const MOST_BYTES: usize = 16 << 20;

/// Our API's router.
#[derive(Clone)]
pub(super) struct Inner(pub(super) Router);

/// What our API answered.
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) body: Value,
}

/// Who calls: the bearer token (if any) and the client's address.
#[derive(Clone, Default)]
pub(super) struct Caller {
    pub(super) token: Option<String>,
    pub(super) client: Option<ClientAddr>,
    /// The request's `Idempotency-Key`, passed on to writes.
    pub(super) idempotency_key: Option<String>,
}

impl Caller {
    /// The caller of a Mastodon request: its `Authorization: Bearer`, or
    /// `access_token` in its query (as Mastodon accepts).
    pub(super) fn of(
        headers: &HeaderMap,
        query: Option<&str>,
        client: Option<ClientAddr>,
    ) -> Caller {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(|t| t.trim().to_string());
        let query_token = query.and_then(|q| {
            q.split('&').find_map(|pair| {
                pair.strip_prefix("access_token=")
                    .map(|t| t.to_string())
                    .filter(|t| !t.is_empty())
            })
        });
        let idempotency_key = headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Caller {
            token: bearer.or(query_token),
            client,
            idempotency_key,
        }
    }
}

impl Inner {
    /// Calls `method path` (with its query) as `caller`, with `body` as JSON.
    pub(super) async fn call(
        &self,
        method: Method,
        path: &str,
        caller: &Caller,
        body: Option<&Value>,
    ) -> Answer {
        let write = method != Method::GET;
        let mut req = Request::builder().method(method).uri(path);
        if let Some(token) = &caller.token {
            if let Ok(v) = HeaderValue::from_str(&format!("Bearer {token}")) {
                req = req.header(header::AUTHORIZATION, v);
            }
        }
        if write {
            if let Some(key) = &caller.idempotency_key {
                if let Ok(v) = HeaderValue::from_str(key) {
                    req = req.header("idempotency-key", v);
                }
            }
        }
        let body = match body {
            Some(v) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        let Ok(mut req) = req.body(body) else {
            return Answer {
                status: StatusCode::BAD_REQUEST,
                body: Value::Null,
            };
        };
        if let Some(client) = caller.client {
            req.extensions_mut().insert(client);
        }
        let Ok(res) = self.0.clone().oneshot(req).await;
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), MOST_BYTES)
            .await
            .unwrap_or_default();
        Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }
}
