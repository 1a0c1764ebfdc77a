//! The history on disk (`crate::history`): how far back it reaches.

use super::openapi::{Auth, Op, Params, Reply};
use super::routes::Routes;
use crate::auth::AuthUser;
use crate::history::Summary;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;

/// Routes of this resource, each with its OpenAPI operation.
pub fn routes() -> Routes {
    Routes::new()
        .route(SHOW_OP, show)
        .schema_of::<Summary>("HistorySummary")
}

const SHOW_OP: Op = Op {
    method: "get",
    path: "/api/v1/history",
    tag: "history",
    summary: "How far back this server's history of events reaches (oldest time and id, newest id, events, bytes on disk)",
    auth: Auth::Bearer,
    query: &[],
    body: None,
    status: 200,
    params: Params::None,
    reply: Reply::Schema("HistorySummary"),
    errors: &[401],
};

/// `GET /api/v1/history` (any token): the extent of the history this
/// process serves resumes from (empty with `--history 0`).
pub async fn show(State(state): State<AppState>, _auth: AuthUser) -> Json<Summary> {
    Json(
        state
            .history
            .as_ref()
            .map(|h| h.summary())
            .unwrap_or_default(),
    )
}
