//! `GET /api/v1/demo`: the demo's shared read-only token, for the page to
//! show the demo world to visitors who have not logged in. Only with
//! `firehose serve --demo`; 404 otherwise.

use super::shared::openapi::{Auth, Op, Reply, Typed};
use super::shared::routes::Routes;
use crate::demo::viewer::SCOPES;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde::Serialize;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new().route(DEMO_OP, demo)
}

const DEMO_OP: Op = Op::get(
    "/api/v1/demo",
    "operations",
    "With `serve --demo` only: a shared read-only token (scopes read and firehose) for watching the demo world; 404 without --demo",
)
.auth(Auth::None)
.reply(Reply::Of(Typed::of::<DemoPass>()))
.errors(&[404, 503]);

/// Answer of `GET /api/v1/demo`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct DemoPass {
    /// A JWT of the demo's viewer.
    pub token: String,
    /// The viewer's user id.
    pub user_id: String,
    /// The viewer's login.
    pub login: String,
    /// The token's scopes.
    pub scopes: Vec<String>,
    /// When the token expires (seconds since the epoch).
    pub expires_at: u64,
}

/// `GET /api/v1/demo`: the viewer's pass ([`demo::viewer`](crate::demo::viewer)), the same for
/// every caller until it is renewed.
pub(crate) async fn demo(State(state): State<AppState>) -> ApiResult<Json<DemoPass>> {
    let Some(viewer) = state.demo.as_ref() else {
        return Err(ApiError::not_found(
            "The demo view is on only with `firehose serve --demo`.",
        ));
    };
    let pass = viewer
        .pass(&state.store, &state.jwt, &state.passwords)
        .await?;
    Ok(Json(DemoPass {
        token: pass.token,
        user_id: pass.uid.to_string(),
        login: pass.login,
        scopes: SCOPES.iter().map(|s| s.to_string()).collect(),
        expires_at: pass.expires_at,
    }))
}
