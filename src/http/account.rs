//! The caller's account: changing the password, and taking everything it
//! holds away as NDJSON (its name, email and privacy are `PATCH
//! /api/v1/me`, in `users`).

use super::shared::extract::JsonBody;
use super::shared::openapi::{Op, Reply};
use super::shared::routes::Routes;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::rate_limits::ClientAddr;
use crate::state::AppState;
use crate::store::entities::statuses::Timeline;
use crate::store::paging::{Page, UserList};
use crate::store::Store;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(CHANGE_PASSWORD_OP, change_password)
        .route(DELETE_OP, destroy)
        .route(EXPORT_OP, export)
        .schema(
            "DeleteAccount",
            serde_json::json!({
                "type": "object", "required": ["password"],
                "properties": {"password": {"type": "string", "maxLength": 1024}},
            }),
        )
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
pub(crate) struct ChangePassword {
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

const CHANGE_PASSWORD_OP: Op = Op::post(
    "/api/v1/me/password",
    "users",
    "Change your password; every other session ends unless end_other_sessions is false",
)
.body("ChangePassword")
.status(204)
.errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `POST /api/v1/me/password`: checks the current password (argon2, under
/// the same admission bound and per-address rate limit as a login), stores
/// the new one's hash, and ends every other session (their streams get
/// `disconnect` `revoked` in every process) unless asked not to.
pub(crate) async fn change_password(
    State(state): State<AppState>,
    auth: AuthUser,
    client: Option<Extension<ClientAddr>>,
    JsonBody(body): JsonBody<ChangePassword>,
) -> ApiResult<StatusCode> {
    auth.require(SCOPE_WRITE)?;
    state.rate.login(client.map(|c| c.0 .0)).await?;
    if body.current_password.len() > 1024 {
        return Err(wrong_password());
    }
    crate::password::validate(&body.new_password)?;
    let hash = state.store.users().password_hash(auth.uid).await?;
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
    state
        .store
        .users()
        .set_password_hash(auth.uid, &new_hash)
        .await?;
    if body.end_other_sessions != Some(false) {
        state
            .store
            .sessions()
            .end_others(auth.uid, &auth.sid)
            .await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Body of `DELETE /api/v1/me`.
#[derive(Debug, Deserialize)]
pub(crate) struct DeleteAccount {
    /// The password now.
    pub password: String,
}

/// How long the request waits for the deletion to finish before it
/// answers and lets it go on in the background (a worker of any process
/// finishes it should this one die).
const DELETE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

const DELETE_OP: Op = Op::delete(
    "/api/v1/me",
    "users",
    "Delete your account: every session ends, the user is 404, their statuses, likes, reposts, follows, requests, relations and conversations are undone; the email is free at once, the login reserved for a while",
)
.body("DeleteAccount")
.status(204)
.errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `DELETE /api/v1/me`: checks the password (as a login does), closes the
/// account at once, then undoes what it holds (waiting for that up to
/// [`DELETE_WAIT`]; a larger account finishes in the background).
pub(crate) async fn destroy(
    State(state): State<AppState>,
    auth: AuthUser,
    client: Option<Extension<ClientAddr>>,
    JsonBody(body): JsonBody<DeleteAccount>,
) -> ApiResult<StatusCode> {
    auth.require(SCOPE_WRITE)?;
    state.rate.login(client.map(|c| c.0 .0)).await?;
    if body.password.len() > 1024 {
        return Err(wrong_password());
    }
    let hash = state.store.users().password_hash(auth.uid).await?;
    let admission = state.passwords.admit()?;
    if !state.passwords.verify(body.password, hash).await {
        return Err(wrong_password());
    }
    drop(admission);
    let store = state.store.clone();
    let uid = auth.uid;
    let owed =
        super::shared::extract::detached(async move { Ok(store.users().delete(uid).await?) })
            .await?;
    let store = state.store.clone();
    let rest = tokio::spawn(async move {
        if let Err(e) = store.outbox().complete(&owed).await {
            tracing::warn!(uid, error = %e, "account deletion interrupted; a worker will finish it");
        }
    });
    let _ = tokio::time::timeout(DELETE_WAIT, rest).await;
    tracing::info!(uid, "account deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// Entries read from Redis at a time while exporting.
const EXPORT_PAGE: usize = 200;

const EXPORT_OP: Op = Op::get(
    "/api/v1/me/export",
    "users",
    "Everything your account holds, as NDJSON: the user (with email), statuses, following, followers, likes, newest first within each",
)
.reply(Reply::Text("application/x-ndjson"))
.errors(&[401, 503]);

/// `GET /api/v1/me/export`: one JSON object a line, each with a `type`:
/// the `user` (with email), every `status` the user wrote, `following` and
/// `follower` (`{type, id, login}`) and `like` (`{type, status_id}`), newest
/// first within each type. Read from Redis a page at a time as the client
/// takes it, so an account of any size costs a page of memory.
pub(crate) async fn export(State(state): State<AppState>, auth: AuthUser) -> ApiResult<Response> {
    let mut user = state.store.users().get(auth.uid).await?;
    user.email = state.store.users().email(auth.uid).await?;
    let mut first = serde_json::to_value(&user).unwrap_or_default();
    first["type"] = "user".into();
    let mut head = first.to_string().into_bytes();
    head.push(b'\n');
    let export = Export {
        store: state.store.clone(),
        uid: auth.uid,
        part: Part::Statuses(u64::MAX),
    };
    let rest = futures::stream::unfold(export, |mut export| async move {
        let chunk = export.next_chunk().await?;
        Some((chunk, export))
    });
    let head = futures::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(head)) });
    let body = futures::StreamExt::chain(head, rest);
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

/// Where an export is.
enum Part {
    /// Statuses with ids up to this one.
    Statuses(u64),
    /// A list, from this offset.
    List(UserList, usize),
    Done,
}

struct Export {
    store: Store,
    uid: u64,
    part: Part,
}

impl Export {
    /// The next page's lines; `None` at the end. A Redis failure ends the
    /// body with an error, so the client sees a cut-off export, not a
    /// complete-looking one.
    async fn next_chunk(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        loop {
            let mut out = Vec::new();
            let step = match self.part {
                Part::Done => return None,
                Part::Statuses(max) => self.statuses(max, &mut out).await,
                Part::List(list, offset) => self.list(list, offset, &mut out).await,
            };
            if let Err(e) = step {
                self.part = Part::Done;
                return Some(Err(std::io::Error::other(e.to_string())));
            }
            if !out.is_empty() {
                return Some(Ok(Bytes::from(out)));
            }
        }
    }

    async fn statuses(
        &mut self,
        max: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), crate::store::StoreError> {
        let page = self
            .store
            .statuses()
            .timeline(Timeline::Profile(self.uid), Page::MaxId(max), EXPORT_PAGE)
            .await?;
        let last = page.last().map(|(s, _)| s.status.id.get());
        for (status, counts) in &page {
            out.extend_from_slice(br#"{"type":"status","#);
            let mut json = Vec::new();
            status.write_json(*counts, &mut json);
            out.extend_from_slice(json.get(1..).unwrap_or_default());
            out.push(b'\n');
        }
        self.part = match last {
            Some(last) if last > 0 && page.len() == EXPORT_PAGE => Part::Statuses(last - 1),
            _ => Part::List(UserList::Following, 0),
        };
        Ok(())
    }

    async fn list(
        &mut self,
        list: UserList,
        offset: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), crate::store::StoreError> {
        let ids = self
            .store
            .users()
            .list_newest(self.uid, list, offset, EXPORT_PAGE)
            .await?;
        match list {
            UserList::Likes => {
                for id in &ids {
                    let line = serde_json::json!({"type": "like", "status_id": id.to_string()});
                    out.extend_from_slice(line.to_string().as_bytes());
                    out.push(b'\n');
                }
            }
            UserList::Following | UserList::Followers => {
                let kind = if list == UserList::Following {
                    "following"
                } else {
                    "follower"
                };
                for user in self.store.users().many(&ids).await? {
                    let line =
                        serde_json::json!({"type": kind, "id": user.id, "login": user.login});
                    out.extend_from_slice(line.to_string().as_bytes());
                    out.push(b'\n');
                }
            }
        }
        self.part = if ids.len() == EXPORT_PAGE {
            Part::List(list, offset + EXPORT_PAGE)
        } else {
            match list {
                UserList::Following => Part::List(UserList::Followers, 0),
                UserList::Followers => Part::List(UserList::Likes, 0),
                UserList::Likes => Part::Done,
            }
        };
        Ok(())
    }
}
