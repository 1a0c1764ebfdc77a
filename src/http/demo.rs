//! `GET /api/v1/demo`: the demo's shared read-only token, for the page to
//! show the demo world to visitors who have not logged in. Only with
//! `firehose serve --demo`; 404 otherwise.

use super::shared::openapi::{Auth, Op, Reply};
use super::shared::routes::Routes;
use crate::demo::viewer::SCOPES;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

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
.reply(Reply::Inline(
    r#"{"type":"object","required":["token","user_id","login","scopes","expires_at"],"properties":{"token":{"type":"string"},"user_id":{"type":"string"},"login":{"type":"string"},"scopes":{"type":"array","items":{"type":"string"}},"expires_at":{"type":"integer"}}}"#,
))
.errors(&[404, 503]);

/// `GET /api/v1/demo`: the viewer's pass ([`demo::viewer`](crate::demo::viewer)), the same for
/// every caller until it is renewed.
pub(crate) async fn demo(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let Some(viewer) = state.demo.as_ref() else {
        return Err(ApiError::not_found(
            "The demo view is on only with `firehose serve --demo`.",
        ));
    };
    let pass = viewer
        .pass(&state.store, &state.jwt, &state.passwords)
        .await?;
    Ok(Json(json!({
        "token": pass.token,
        "user_id": pass.uid.to_string(),
        "login": pass.login,
        "scopes": SCOPES,
        "expires_at": pass.expires_at,
    })))
}
