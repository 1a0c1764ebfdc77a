//! Operations: health, readiness, metrics, the OpenAPI document, the API
//! reference and the browser page.

use super::shared::openapi::{Auth, Op, Reply, Typed};
use super::shared::routes::Routes;
use crate::error::ApiError;
use crate::metrics::global as metrics;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde::Serialize;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(HEALTHZ_OP, healthz)
        .route(READYZ_OP, readyz)
        .route(PROMETHEUS_OP, prometheus)
        .route(DOCS_OP, docs)
        .route(PAGE_OP, page)
        .route(PAGE_JS_OP, page_js)
        .route(PAGE_CSS_OP, page_css)
        .route(DASHBOARD_JS_OP, dashboard_js)
        .route(COAST_JS_OP, coast_js)
        .route(DOCS_JS_OP, docs_js)
        .route(DOCS_CSS_OP, docs_css)
}

/// The page's and `/docs`' policy: their own scripts, styles and
/// connections only (no inline code: the scripts and styles are files of
/// their own), nothing framing them.
pub(crate) const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

/// An HTML page with its policy.
fn html(body: &'static str) -> Response {
    ([(header::CONTENT_SECURITY_POLICY, CSP)], Html(body)).into_response()
}

/// A static asset of the page or `/docs`.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

macro_rules! asset_op {
    ($name:ident, $path:literal, $summary:literal, $type:literal) => {
        const $name: Op = Op::get($path, "operations", $summary)
            .auth(Auth::None)
            .reply(Reply::Text($type));
    };
}

asset_op!(
    PAGE_JS_OP,
    "/assets/page.js",
    "The browser page's script",
    "text/javascript"
);
asset_op!(
    PAGE_CSS_OP,
    "/assets/page.css",
    "The browser page's styles",
    "text/css"
);
asset_op!(
    DASHBOARD_JS_OP,
    "/assets/dashboard.js",
    "The browser page's dashboard (chart, map, filter)",
    "text/javascript"
);
asset_op!(
    COAST_JS_OP,
    "/assets/coast.js",
    "The dashboard's world map: Natural Earth 1:110m land",
    "text/javascript"
);
asset_op!(
    DOCS_JS_OP,
    "/assets/docs.js",
    "The API reference's script",
    "text/javascript"
);
asset_op!(
    DOCS_CSS_OP,
    "/assets/docs.css",
    "The API reference's styles",
    "text/css"
);

/// `GET /assets/page.js`.
pub(crate) async fn page_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/page.js"),
    )
}

/// `GET /assets/page.css`.
pub(crate) async fn page_css() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/page.css"))
}

/// `GET /assets/dashboard.js`.
pub(crate) async fn dashboard_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/dashboard.js"),
    )
}

/// `GET /assets/coast.js`.
pub(crate) async fn coast_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/coast.js"),
    )
}

/// `GET /assets/docs.js`.
pub(crate) async fn docs_js() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/docs.js"),
    )
}

/// `GET /assets/docs.css`.
pub(crate) async fn docs_css() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/docs.css"))
}

const HEALTHZ_OP: Op = Op::get("/healthz", "operations", "The process is up")
    .auth(Auth::None)
    .reply(Reply::Of(Typed::of::<Health>()));

/// Answer of `GET /healthz`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Health {
    /// `ok`.
    pub status: &'static str,
}

/// `GET /healthz`: the process is up.
pub(crate) async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// The readiness probe's path.
pub(crate) const READINESS: &str = "/readyz";

const READYZ_OP: Op = Op::get(READINESS, "operations", "Redis is reachable (503 if not)")
    .auth(Auth::None)
    .reply(Reply::Of(Typed::of::<Ready>()))
    .errors(&[503]);

/// Answer of `GET /readyz` when ready.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Ready {
    /// `ready`.
    pub status: &'static str,
    /// `ok`: Redis answers.
    pub redis: &'static str,
    /// `subscribed`: the event subscription is up.
    pub events: &'static str,
    /// With a shared history only: whether its object store answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_store: Option<Reachable>,
}

/// Whether a shared history's object store answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Reachable {
    /// It answers.
    Ok,
    /// It does not (the process serves from its disk and buffer).
    Unreachable,
}

/// `GET /readyz`: 200 when Redis answers and the event subscription is up
/// (pinged every 2 s), 503 when either is not. With a shared history,
/// `history_store` says whether its object store answers (the process
/// serves either way: from its disk and the buffer while it does not).
pub(crate) async fn readyz(State(state): State<AppState>) -> Response {
    if state.store.server().ping().await.is_err() {
        return ApiError::unavailable().into_response();
    }
    if !state.hub.is_subscribed() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "The event subscription to Redis is down; streams are catching up.",
        )
        .into_response();
    }
    let history_store =
        state
            .history
            .as_ref()
            .and_then(|h| h.tier())
            .map(|tier| match tier.remote().health().0 {
                true => Reachable::Ok,
                false => Reachable::Unreachable,
            });
    Json(Ready {
        status: "ready",
        redis: "ok",
        events: "subscribed",
        history_store,
    })
    .into_response()
}

const PROMETHEUS_OP: Op = Op::get("/metrics", "operations", "Prometheus metrics")
    .auth(Auth::None)
    .reply(Reply::Text("text/plain; version=0.0.4"));

/// `GET /metrics`: the metrics in the text format a scraper reads (every
/// Prometheus reads both): OpenMetrics when the `Accept` header asks for
/// it, else labelled as Prometheus text 0.0.4.
pub(crate) async fn prometheus(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let m = metrics();
    let depth = state.store.fanout().depth().await.map(|d| d as f64);
    m.fanout_depth.set(depth.unwrap_or(-1.0));
    m.fanout_lag
        .set(state.store.fanout().lag().await.unwrap_or(-1.0));
    let sessions = state.store.sessions().count().await.map(|d| d as f64);
    m.sessions.set(sessions.unwrap_or(-1.0));
    let outbox = state.store.outbox().depth().await.map(|d| d as f64);
    m.outbox_depth.set(outbox.unwrap_or(-1.0));
    m.outbox_age
        .set(state.store.outbox().age().await.unwrap_or(-1.0));
    let started = std::time::Instant::now();
    let ping = state
        .store
        .server()
        .ping()
        .await
        .map(|_| started.elapsed().as_secs_f64());
    m.redis_ping.set(ping.unwrap_or(-1.0));
    if let Some(history) = &state.history {
        let summary = history.summary();
        let (writable, write_errors, damaged) = history.health();
        m.history_bytes.set(summary.bytes as f64);
        m.history_events.set(summary.events as f64);
        m.history_oldest.set(summary.oldest.unwrap_or(0.0));
        m.history_writable.set(if writable { 1.0 } else { 0.0 });
        m.history_write_errors.set(write_errors as f64);
        m.history_damaged_blocks.set(damaged as f64);
        if let Some(tier) = history.tier() {
            let (reachable, errors) = tier.remote().health();
            m.history_store_reachable
                .set(if reachable { 1.0 } else { 0.0 });
            m.history_store_errors.set(errors as f64);
            m.history_store_cache_bytes.set(tier.cache_bytes() as f64);
        }
    }
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let content_type = if openmetrics {
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    } else {
        "text/plain; version=0.0.4; charset=utf-8"
    };
    ([(header::CONTENT_TYPE, content_type)], m.render()).into_response()
}

/// `/openapi.json`, registered by [`http::routes`](crate::http::routes) with the document of
/// every other route.
pub(crate) const OPENAPI_OP: Op = Op::get("/openapi.json", "operations", "This document")
    .auth(Auth::None)
    .reply(Reply::Inline(r#"{"type":"object"}"#));

/// `GET /openapi.json`: `document`, made once from every route.
pub(crate) fn openapi(document: axum::body::Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], document).into_response()
}

const DOCS_OP: Op = Op::get(
    "/docs",
    "operations",
    "A readable API reference built from this document",
)
.auth(Auth::None)
.reply(Reply::Text("text/html"));

/// `GET /docs`: a readable API reference rendered in the browser from /openapi.json.
pub(crate) async fn docs() -> Response {
    html(include_str!("assets/docs.html"))
}

const PAGE_OP: Op = Op::get(
    "/",
    "operations",
    "The browser page: sign up, post, follow and watch a live stream",
)
.auth(Auth::None)
.reply(Reply::Text("text/html"));

/// `GET /`: the browser page.
pub(crate) async fn page() -> Response {
    html(include_str!("assets/index.html"))
}
