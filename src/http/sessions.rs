//! Sessions: log in (a JWT bound to a Redis session), log out, inspect.

use super::shared::extract::{no_store, JsonBody};
use super::shared::openapi::{Auth, Op, Reply, Typed};
use super::shared::routes::Routes;
use crate::auth::{AuthUser, SCOPE_FIREHOSE, SCOPE_READ, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::model::{now, User};
use crate::rate_limits::ClientAddr;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::Extension;
use axum::Json;
use serde::{Deserialize, Serialize};

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(CREATE_OP, create)
        .route(DESTROY_OP, destroy)
        .route(SHOW_OP, show)
        .route(LIST_OP, list)
        .route(END_OP, end)
        .schema(
            "Login",
            serde_json::json!({
                "type": "object", "required": ["identifier", "password"],
                "properties": {
                    "identifier": {"type": "string", "description": "Login or email, any case."},
                    "password": {"type": "string"},
                },
            }),
        )
}

/// Body of `POST /api/v1/sessions`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct Login {
    /// Login or email, any case.
    pub identifier: String,
    /// The password.
    pub password: String,
}

/// Answer of `POST /api/v1/sessions`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct LoginReply {
    /// Bearer token (HS256 JWT).
    pub token: String,
    /// Expiry of the token, seconds since the epoch.
    pub expires_at: u64,
    /// The logged-in user.
    pub user: User,
}

type NoStore = [(HeaderName, HeaderValue); 1];

const CREATE_OP: Op = Op::post("/api/v1/sessions", "sessions", "Log in with login or email")
    .auth(Auth::None)
    .body("Login")
    .status(201)
    .reply(Reply::Of(Typed::of::<LoginReply>()))
    .errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `POST /api/v1/sessions`: log in with login or email and password.
pub(crate) async fn create(
    State(state): State<AppState>,
    client: Option<Extension<ClientAddr>>,
    JsonBody(body): JsonBody<Login>,
) -> ApiResult<(StatusCode, NoStore, Json<LoginReply>)> {
    state.rate.login(client.map(|c| c.0 .0)).await?;
    let bad = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
            "The identifier or password is wrong.",
        )
    };
    if body.identifier.is_empty() || body.identifier.len() > 254 || body.password.len() > 1024 {
        return Err(bad());
    }
    let uid = state.store.users().lookup(&body.identifier).await?;
    if let Some(uid) = uid {
        state.rate.guesses_left(uid).await?;
    }
    let hash = match uid {
        Some(uid) => state.store.users().password_hash(uid).await?,
        None => None,
    };
    let admission = state.passwords.admit()?;
    let verified = state.passwords.verify(body.password, hash).await;
    drop(admission);
    let (Some(uid), true) = (uid, verified) else {
        if let Some(uid) = uid {
            state.rate.guess_failed(uid).await;
        }
        return Err(bad());
    };
    let account = state.store.users().login_account(uid).await?;
    if account.suspended {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "suspended",
            "This account is suspended.",
        ));
    }
    // Deleted between the password check and now.
    let user = account.user.ok_or_else(bad)?;
    let mut scopes = vec![SCOPE_READ, SCOPE_WRITE];
    if account.firehose {
        scopes.push(SCOPE_FIREHOSE);
    }
    let sid = state.store.sessions().create(uid, now()).await?;
    let (token, expires_at) = state.jwt.mint(uid, &sid, &scopes, state.cfg.token_ttl);
    Ok((
        StatusCode::CREATED,
        [no_store()],
        Json(LoginReply {
            token,
            expires_at,
            user,
        }),
    ))
}

const DESTROY_OP: Op = Op::delete(
    "/api/v1/sessions/current",
    "sessions",
    "Log out: the token stops working and its streams close",
)
.status(204)
.errors(&[401, 403, 503]);

/// The demo's shared viewer (`serve --demo`) has one session for every
/// visitor: none of them may end it for the others (403).
fn shared_viewer(state: &AppState, auth: &AuthUser) -> ApiResult<()> {
    if state.is_demo_viewer(auth.uid) {
        return Err(ApiError::forbidden(
            "The demo viewer's session is shared by every visitor; it cannot be ended.",
        ));
    }
    Ok(())
}

/// `DELETE /api/v1/sessions/current`: log out; the token stops working and
/// streams opened with it are closed.
pub(crate) async fn destroy(
    State(state): State<AppState>,
    auth: AuthUser,
) -> ApiResult<StatusCode> {
    shared_viewer(&state, &auth)?;
    state.store.sessions().end(auth.uid, &auth.sid).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Answer of `GET /api/v1/sessions/current`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SessionInfo {
    /// The user id.
    pub uid: String,
    /// Scopes of the token.
    pub scopes: Vec<String>,
    /// Statuses viewed in this session, most recent first (at most 25).
    pub viewed: Vec<String>,
}

const SHOW_OP: Op = Op::get(
    "/api/v1/sessions/current",
    "sessions",
    "The current session: scopes and recently viewed statuses",
)
.reply(Reply::Of(Typed::of::<SessionInfo>()))
.errors(&[401, 503]);

/// `GET /api/v1/sessions/current`: the session's scopes and viewed statuses.
pub(crate) async fn show(
    State(state): State<AppState>,
    auth: AuthUser,
) -> ApiResult<Json<SessionInfo>> {
    let viewed = state.store.sessions().viewed(auth.uid, &auth.sid).await?;
    Ok(Json(SessionInfo {
        uid: auth.uid.to_string(),
        scopes: auth.scopes.clone(),
        viewed: viewed.iter().map(u64::to_string).collect(),
    }))
}

/// One live session, as `GET /api/v1/sessions` lists it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SessionListed {
    /// The session id (what `DELETE /api/v1/sessions/{id}` takes).
    pub id: String,
    /// When it was created (seconds since the epoch).
    pub created: f64,
    /// When it was last used.
    pub last_seen: f64,
    /// Whether it is the session of the token that asks.
    pub current: bool,
}

/// Answer of `GET /api/v1/sessions`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SessionList {
    /// The caller's live sessions, newest first.
    pub sessions: Vec<SessionListed>,
}

const LIST_OP: Op = Op::get(
    "/api/v1/sessions",
    "sessions",
    "Your live sessions, newest first (which one is current, when each was created and last seen)",
)
.reply(Reply::Of(Typed::of::<SessionList>()))
.errors(&[401, 503]);

/// `GET /api/v1/sessions`: the caller's live sessions, newest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    auth: AuthUser,
) -> ApiResult<(NoStore, Json<SessionList>)> {
    let sessions = state
        .store
        .sessions()
        .of_user(auth.uid)
        .await?
        .into_iter()
        .map(|s| SessionListed {
            current: s.id == auth.sid,
            id: s.id,
            created: s.created,
            last_seen: s.last_seen,
        })
        .collect();
    Ok(([no_store()], Json(SessionList { sessions })))
}

const END_OP: Op = Op::delete(
    "/api/v1/sessions/{id}",
    "sessions",
    "End one of your sessions in every process: its token answers 401, its streams get disconnect revoked",
)
.status(204)
.errors(&[401, 403, 404, 503]);

/// `DELETE /api/v1/sessions/{id}`: ends one of the caller's sessions; 404
/// for an id that is not one of them.
pub(crate) async fn end(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    shared_viewer(&state, &auth)?;
    let known = id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !known || !state.store.sessions().end_of_user(auth.uid, &id).await? {
        return Err(ApiError::not_found("No such session."));
    }
    Ok(StatusCode::NO_CONTENT)
}
