//! Operations: health, readiness, metrics, the OpenAPI document, the API
//! reference and the browser page.

use crate::error::ApiError;
use crate::metrics::global as metrics;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(prometheus))
        .route("/openapi.json", get(openapi))
        .route("/docs", get(docs))
        .route("/", get(page))
}

/// `GET /healthz`: the process is up.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: 200 when Redis answers and the event subscription is up
/// (pinged every 2 s), 503 when either is not.
pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.store.ping().await.is_err() {
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
    Json(json!({"status": "ready", "redis": "ok", "events": "subscribed"})).into_response()
}

/// `GET /metrics`: the metrics in the text format a scraper reads (every
/// Prometheus reads both): OpenMetrics when the `Accept` header asks for
/// it, else labelled as Prometheus text 0.0.4.
pub async fn prometheus(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let m = metrics();
    let depth = state.store.fanout_depth().await.map(|d| d as f64);
    m.fanout_depth.set(depth.unwrap_or(-1.0));
    m.fanout_lag
        .set(state.store.fanout_lag().await.unwrap_or(-1.0));
    let sessions = state.store.session_count().await.map(|d| d as f64);
    m.sessions.set(sessions.unwrap_or(-1.0));
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

/// `GET /openapi.json`.
pub async fn openapi() -> Json<serde_json::Value> {
    Json(super::openapi::document())
}

/// `GET /docs`: a readable API reference rendered in the browser from /openapi.json.
pub async fn docs() -> Html<&'static str> {
    Html(include_str!("assets/docs.html"))
}

/// `GET /`: the browser page.
pub async fn page() -> Html<&'static str> {
    Html(include_str!("assets/index.html"))
}
