//! Authentication: HS256 JWTs whose session must also be live in Redis.
//!
//! The algorithm is pinned: a token whose header names any other algorithm
//! (`none` included) is refused before its signature is even considered.
//! Every authenticated request checks the signature, the expiry AND the
//! session record, so logout and session clean-up take effect at once.

pub use crate::jwt::{Claims, Jwt, SCOPE_ADMIN, SCOPE_FIREHOSE, SCOPE_READ, SCOPE_WRITE};

use crate::error::ApiError;
use crate::model::now;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use std::collections::HashMap;

/// An authenticated caller: a valid token whose session is live.
#[derive(Debug, Clone)]
pub struct AuthUser {
    /// User id.
    pub uid: u64,
    /// Session id.
    pub sid: String,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// The user's login.
    pub login: String,
    /// Whether the user's account is private.
    pub private: bool,
    /// When the token expires (seconds since the epoch); a stream opened
    /// with it is closed then.
    pub expires: u64,
}

impl AuthUser {
    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// 403 unless the token grants `scope`.
    pub fn require(&self, scope: &str) -> Result<(), ApiError> {
        if self.has_scope(scope) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "This token lacks the {scope:?} scope."
            )))
        }
    }

    /// The caller a token names: its signature, expiry and live session
    /// checked (a token refreshed on a WebSocket, say).
    pub async fn from_token(state: &AppState, token: &str) -> Result<AuthUser, ApiError> {
        let claims = state.jwt.verify(token)?;
        let uid: u64 = claims
            .sub
            .parse()
            .map_err(|_| ApiError::unauthorized("The token's subject is not a user id."))?;
        let Some(session) = state.store.sessions().user(&claims.sid, uid, now()).await? else {
            return Err(ApiError::unauthorized(
                "The session has ended; log in again.",
            ));
        };
        Ok(AuthUser {
            uid,
            sid: claims.sid,
            scopes: claims.scopes,
            login: session.login,
            private: session.private,
            expires: claims.exp,
        })
    }
}

fn bearer(parts: &Parts) -> Result<Option<&str>, ApiError> {
    let Some(value) = parts.headers.get(axum::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("The Authorization header is not text."))?;
    match value.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(Some(token.trim()))
        }
        _ => Err(ApiError::unauthorized(
            "The Authorization header must be \"Bearer <token>\".",
        )),
    }
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        MaybeUser::from_request_parts(parts, state)
            .await?
            .0
            .ok_or_else(|| ApiError::unauthorized("A bearer token is required."))
    }
}

/// The caller of a public read: `None` without a token; a bad token is
/// still refused with 401.
#[derive(Debug, Clone)]
pub struct MaybeUser(pub Option<AuthUser>);

impl FromRequestParts<AppState> for MaybeUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        match bearer(parts)? {
            Some(token) => Ok(MaybeUser(Some(AuthUser::from_token(state, token).await?))),
            None => Ok(MaybeUser(None)),
        }
    }
}

/// The caller of a stream: the token comes from the Authorization header or,
/// for browsers' EventSource, from `?access_token=` (never logged).
#[derive(Debug, Clone)]
pub struct StreamUser(pub AuthUser);

impl FromRequestParts<AppState> for StreamUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(token) = bearer(parts)? {
            return Ok(StreamUser(AuthUser::from_token(state, token).await?));
        }
        let query: Query<HashMap<String, String>> = Query::try_from_uri(&parts.uri)
            .map_err(|_| ApiError::invalid("invalid_query", "The query string is malformed."))?;
        match query.get("access_token") {
            Some(token) if !token.is_empty() => {
                Ok(StreamUser(AuthUser::from_token(state, token).await?))
            }
            _ => Err(ApiError::unauthorized(
                "A bearer token or access_token is required.",
            )),
        }
    }
}
