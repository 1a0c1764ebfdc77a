//! Users: sign-up, profiles, lookup by any unique field.

use super::shared::extract::{no_store, path_id, JsonBody};
use super::shared::openapi::{Auth, Op, Params, Reply, Typed};
use super::shared::routes::Routes;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::model::{now, User};
use crate::rate_limits::ClientAddr;
use crate::state::AppState;
use crate::store::entities::profile::ProfileChange;
use crate::store::entities::users::NewUser;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Extension;
use axum::Json;
use regex::Regex;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Longest accepted email, in characters.
pub(crate) const MAX_EMAIL_CHARS: usize = 254;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(CREATE_OP, create)
        .route(LOOKUP_OP, lookup)
        .route(SHOW_OP, show)
        .route(ME_OP, me)
        .route(UPDATE_ME_OP, update_me)
        .schema("CreateUser", create_user_schema())
        .schema("UpdateMe", update_me_schema())
}

/// A display name's schema: 1-50 characters, not only white space, no
/// control characters (what [`validate_name`] enforces).
fn name_schema() -> serde_json::Value {
    use super::shared::openapi::{CC, FMT, WS};
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": 50,
        "pattern": format!("^[^{CC}]*[^{CC}{WS}{FMT}][^{CC}]*$"),
        "description": "1-50 characters, not only white space, no control characters."})
}

/// `CreateUser` with the constraints the validators enforce (schemathesis
/// holds the two together in the test suite).
fn create_user_schema() -> serde_json::Value {
    use super::shared::openapi::{CC, WS};
    serde_json::json!({
        "type": "object", "required": ["login", "name", "email", "password"],
        "properties": {
            "login": {"type": "string", "minLength": 3, "maxLength": 30,
                "pattern": "^[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*$",
                "description": "3-30 of [A-Za-z0-9_], not all digits, unique ignoring case."},
            "name": name_schema(),
            "email": {"type": "string", "maxLength": MAX_EMAIL_CHARS,
                "pattern": format!("^[^@{WS}{CC}][^{WS}{CC}]*@[^{WS}{CC}]*[^@{WS}{CC}]$"),
                "description": "An address with @ (not first or last), no white space; unique ignoring case."},
            "password": {"type": "string", "minLength": 8, "maxLength": crate::password::MAX_CHARS},
        },
    })
}

/// `UpdateMe`: every field optional (null as absent).
fn update_me_schema() -> serde_json::Value {
    use super::shared::openapi::{CC, WS};
    let mut name = name_schema();
    name["type"] = serde_json::json!(["string", "null"]);
    serde_json::json!({
        "type": "object", "additionalProperties": false,
        "properties": {
            "login": {"type": ["string", "null"], "minLength": 3, "maxLength": 30,
                "pattern": "^[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*$",
                "description": "A new login: the sign-up rules; 409 when another user holds it as a login or email, ignoring case."},
            "email": {"type": ["string", "null"], "maxLength": MAX_EMAIL_CHARS,
                "pattern": format!("^[^@{WS}{CC}][^{WS}{CC}]*@[^{WS}{CC}]*[^@{WS}{CC}]$"),
                "description": "A new email: the sign-up rules; 409 when taken likewise."},
            "name": name,
            "private": {"type": ["boolean", "null"], "description": "Statuses reach followers only."},
            "dm_policy": {"enum": ["everyone", "following", null],
                "description": "Who may start a conversation with you: everyone, or those you follow."},
        },
    })
}

/// Body of `POST /api/v1/users`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct CreateUser {
    /// 3-30 of `[A-Za-z0-9_]`, not all digits, unique ignoring case.
    pub login: String,
    /// 1-50 characters.
    pub name: String,
    /// Contains `@`, unique ignoring case.
    pub email: String,
    /// At least 8 characters.
    pub password: String,
}

fn login_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[A-Za-z0-9_]{3,30}$").expect("valid regex"))
}

/// Checks a login against the contract's rules.
pub(crate) fn validate_login(login: &str) -> ApiResult<()> {
    if !login_re().is_match(login) {
        return Err(ApiError::invalid(
            "invalid_login",
            "login must be 3 to 30 letters, digits or underscores.",
        ));
    }
    if login.chars().all(|c| c.is_ascii_digit()) {
        return Err(ApiError::invalid(
            "invalid_login",
            "login must not be all digits.",
        ));
    }
    Ok(())
}

/// Checks a display name: 1-50 characters, not only white space.
pub(crate) fn validate_name(name: &str) -> ApiResult<()> {
    let n = name.chars().count();
    if n == 0 || n > 50 || crate::text::unreadable(name).is_some() {
        return Err(ApiError::invalid(
            "invalid_name",
            "name must be 1 to 50 characters.",
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "invalid_name",
            "name must not contain control characters.",
        ));
    }
    Ok(())
}

fn validate_email(email: &str) -> ApiResult<()> {
    let ok = email.contains('@')
        && email.chars().count() <= MAX_EMAIL_CHARS
        && !email.starts_with('@')
        && !email.ends_with('@')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if !ok {
        return Err(ApiError::invalid(
            "invalid_email",
            "email must be an address containing @.",
        ));
    }
    Ok(())
}

const CREATE_OP: Op = Op::post("/api/v1/users", "users", "Sign up")
    .auth(Auth::None)
    .body("CreateUser")
    .status(201)
    .reply(Reply::Of(Typed::of::<User>()))
    .errors(&[400, 408, 409, 413, 415, 429, 503]);

/// `POST /api/v1/users`: sign up.
pub(crate) async fn create(
    State(state): State<AppState>,
    client: Option<Extension<ClientAddr>>,
    JsonBody(body): JsonBody<CreateUser>,
) -> ApiResult<(StatusCode, Json<User>)> {
    state.rate.signup(client.map(|c| c.0 .0)).await?;
    validate_login(&body.login)?;
    validate_email(&body.email)?;
    crate::password::validate(&body.password)?;
    validate_name(&body.name)?;
    // Cheap early answers; the create script re-checks atomically.
    if state.store.users().is_taken(&body.login).await? {
        return Err(ApiError::conflict(
            "login_taken",
            "That login is already taken.",
        ));
    }
    if state.store.users().is_taken(&body.email).await? {
        return Err(ApiError::conflict(
            "email_taken",
            "That email is already registered.",
        ));
    }
    let _admission = state.passwords.admit()?;
    let hash = state
        .passwords
        .hash(body.password)
        .await
        .ok_or_else(ApiError::internal)?;
    let user = state
        .store
        .users()
        .create(
            &NewUser {
                login: &body.login,
                name: &body.name,
                email: &body.email,
                password_hash: &hash,
            },
            now(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(user)))
}

const SHOW_OP: Op = Op::get("/api/v1/users/{id}", "users", "A user")
    .auth(Auth::Optional)
    .reply(Reply::Of(Typed::of::<User>()))
    .errors(&[401, 404, 503]);

/// `GET /api/v1/users/{id}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<User>> {
    let uid = path_id(&id, "user")?;
    Ok(Json(state.store.users().get(uid).await?))
}

const LOOKUP_OP: Op = Op::get(
    "/api/v1/users/lookup",
    "users",
    "Find a user by exactly one of login, email or any unique field; email= and any= count against a limit of 30 a minute per user",
)
.params(Params::Lookup)
.reply(Reply::Of(Typed::of::<User>()))
.errors(&[400, 401, 404, 429, 503]);

/// `GET /api/v1/users/lookup?login=|email=|any=`.
pub(crate) async fn lookup(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<User>> {
    super::shared::extract::known_params(&q, &["login", "email", "any"])?;
    let given: Vec<(&str, &String)> = ["login", "email", "any"]
        .iter()
        .filter_map(|k| q.get(*k).map(|v| (*k, v)))
        .collect();
    let [(field, value)] = given.as_slice() else {
        return Err(ApiError::invalid(
            "invalid_query",
            "Give exactly one of login, email or any.",
        ));
    };
    if *field != "login" {
        state.rate.lookup(auth.uid).await?;
    }
    // Logins never hold '@' and emails always do, so the shared index tells
    // them apart by the value alone.
    let wrong_kind = match *field {
        "login" => value.contains('@'),
        "email" => !value.contains('@'),
        _ => false,
    };
    let found = if wrong_kind || value.is_empty() {
        None
    } else {
        state.store.users().lookup(value).await?
    };
    let Some(uid) = found else {
        return Err(ApiError::not_found("No user has that value."));
    };
    Ok(Json(state.store.users().get(uid).await?))
}

const ME_OP: Op = Op::get("/api/v1/me", "users", "The caller, with email")
    .reply(Reply::Of(Typed::of::<User>()))
    .errors(&[401, 503]);

/// `GET /api/v1/me`: the caller, with the email.
pub(crate) async fn me(
    State(state): State<AppState>,
    auth: AuthUser,
) -> ApiResult<(
    [(axum::http::HeaderName, axum::http::HeaderValue); 1],
    Json<User>,
)> {
    let mut user = state.store.users().get(auth.uid).await?;
    user.email = state.store.users().email(auth.uid).await?;
    user.dm_policy = Some(state.store.users().dm_policy(auth.uid).await?);
    Ok(([no_store()], Json(user)))
}

/// Body of `PATCH /api/v1/me`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateMe {
    /// New login (the sign-up rules; unique ignoring case among every login
    /// and email; the old one is free at once).
    pub login: Option<String>,
    /// New email (the sign-up rules; unique likewise).
    pub email: Option<String>,
    /// New display name.
    pub name: Option<String>,
    /// Who may start a conversation with you: `everyone` or `following`.
    pub dm_policy: Option<String>,
    /// Make the account private (statuses reach followers only) or public.
    pub private: Option<bool>,
}

const UPDATE_ME_OP: Op = Op::patch(
    "/api/v1/me",
    "users",
    "Change your login, email, name or the private flag",
)
.body("UpdateMe")
.reply(Reply::Of(Typed::of::<User>()))
.errors(&[400, 401, 403, 408, 409, 413, 415, 429, 503]);

/// `PATCH /api/v1/me`: checks each value as sign-up does, then changes
/// the account ([`store::profile`](crate::store::entities::profile)).
pub(crate) async fn update_me(
    State(state): State<AppState>,
    auth: AuthUser,
    JsonBody(body): JsonBody<UpdateMe>,
) -> ApiResult<Json<User>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    if let Some(name) = &body.name {
        validate_name(name)?;
    }
    if let Some(login) = &body.login {
        validate_login(login)?;
    }
    if let Some(email) = &body.email {
        validate_email(email)?;
    }
    if let Some(policy) = &body.dm_policy {
        if !["everyone", "following"].contains(&policy.as_str()) {
            return Err(ApiError::invalid(
                "invalid_dm_policy",
                "dm_policy must be everyone or following.",
            ));
        }
    }
    let change = ProfileChange {
        login: body.login.as_deref(),
        email: body.email.as_deref(),
        name: body.name.as_deref(),
        private: body.private,
        dm_policy: body.dm_policy.as_deref(),
    };
    let user = state.store.users().change(auth.uid, &change).await?;
    Ok(Json(user))
}
