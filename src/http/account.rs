//! The caller's account: changing the password (the rest of the account,
//! its name, login, email and privacy, is `PATCH /api/v1/me` in `users`).

use super::extract::JsonBody;
use super::openapi::{Auth, Op, Params, Reply};
use super::routes::Routes;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::rate_limits::ClientAddr;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;
use serde::Deserialize;

/// Routes of this resource, each with its OpenAPI operation.
pub fn routes() -> Routes {
    Routes::new()
        .route(CHANGE_PASSWORD_OP, change_password)
        .schema(
            "ChangePassword",
            serde_json::json!({
                "type": "object", "required": ["current_password", "new_password"],
                "properties": {
                    "current_password": {"type": "string", "maxLength": 1024},
                    "new_password": {"type": "string", "minLength": 8, "maxLength": crate::password::MAX_CHARS},
                    "end_other_sessions": {"type": ["boolean", "null"],
                        "description": "End every other session of the user (default true)."},
                },
            }),
        )
}

/// Body of `POST /api/v1/me/password`.
#[derive(Debug, Deserialize)]
pub struct ChangePassword {
    /// The password now.
    pub current_password: String,
    /// The password from now on.
    pub new_password: String,
    /// Whether every other session ends (default true).
    pub end_other_sessions: Option<bool>,
}

/// 403 `wrong_password`.
fn wrong_password() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "wrong_password",
        "The current password is wrong.",
    )
}

const CHANGE_PASSWORD_OP: Op = Op {
    method: "post",
    path: "/api/v1/me/password",
    tag: "users",
    summary: "Change your password; every other session ends unless end_other_sessions is false",
    auth: Auth::Bearer,
    query: &[],
    body: Some("ChangePassword"),
    status: 204,
    params: Params::None,
    reply: Reply::Empty,
    errors: &[400, 401, 403, 408, 413, 415, 429, 503],
};
/// `POST /api/v1/me/password`: checks the current password (argon2, under
/// the same admission bound and per-address rate limit as a login), stores
/// the new one's hash, and ends every other session (their streams get
/// `disconnect` `revoked` in every process) unless asked not to.
pub async fn change_password(
    State(state): State<AppState>,
    auth: AuthUser,
    client: Option<Extension<ClientAddr>>,
    JsonBody(body): JsonBody<ChangePassword>,
) -> ApiResult<StatusCode> {
    auth.require(SCOPE_WRITE)?;
    state.rate.login(client.map(|c| c.0 .0))?;
    if body.current_password.len() > 1024 {
        return Err(wrong_password());
    }
    crate::password::validate(&body.new_password)?;
    let hash = state.store.password_hash(auth.uid).await?;
    let admission = state.passwords.admit()?;
    let verified = state.passwords.verify(body.current_password, hash).await;
    if !verified {
        return Err(wrong_password());
    }
    let new_hash = state
        .passwords
        .hash(body.new_password)
        .await
        .ok_or_else(ApiError::internal)?;
    drop(admission);
    state.store.set_password_hash(auth.uid, &new_hash).await?;
    if body.end_other_sessions != Some(false) {
        state.store.end_other_sessions(auth.uid, &auth.sid).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}
