//! Conversations: start one (direct or group), list them, page and send
//! messages, mark read, leave.

use super::shared::extract::idempotency_key;
use super::shared::extract::{detached, path_id, JsonBody, JsonId};
use super::shared::openapi::{Op, Params, Reply, Typed};
use super::shared::paging::{paging, user_paging};
use super::shared::routes::Routes;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::model::{Conversation, Message};
use crate::state::AppState;
use crate::store::entities::conversations::{Outgoing, Sent};
use crate::store::entities::messaging::{Refusal, Start};
use crate::store::StoreError;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Longest message, in characters (Unicode scalar values).
pub(crate) const MAX_TEXT_CHARS: usize = 1000;
/// Longest group title, in characters.
pub(crate) const MAX_TITLE_CHARS: usize = 100;
/// Most other participants of a group conversation.
pub(crate) const MAX_OTHERS: usize = 50;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .schema("NewConversationBody", new_conversation_schema())
        .schema("MessageBody", message_body_schema())
        .route(CREATE_OP, create)
        .route(LIST_OP, list)
        .route(SHOW_OP, show)
        .route(MESSAGES_OP, messages)
        .route(SEND_OP, send)
        .route(READ_OP, read)
        .route(LEAVE_OP, leave)
}

/// The schema of a message's text.
fn text_schema() -> serde_json::Value {
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS,
        "pattern": super::shared::openapi::readable_pattern(),
        "description": "1-1000 characters (Unicode scalar values), not only white space."})
}

fn new_conversation_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object", "required": ["participants", "text"],
        "properties": {
            "participants": {"type": "array", "minItems": 1, "maxItems": MAX_OTHERS,
                "items": {"oneOf": [{"type": "string", "pattern": "^[0-9]{1,20}$"},
                                    {"type": "integer", "minimum": 0}]},
                "description": "The other participants (not the caller; repeats count once): one makes a direct conversation, 2-50 a group one."},
            "text": text_schema(),
            "title": {"type": ["string", "null"], "minLength": 1, "maxLength": MAX_TITLE_CHARS,
                "pattern": super::shared::openapi::readable_pattern(),
                "description": "A group conversation's title (400 on a direct one)."},
        },
    })
}

fn message_body_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "required": ["text"], "properties": {"text": text_schema()}})
}

/// Body of `POST /api/v1/conversations`.
#[derive(Debug, Deserialize)]
pub(crate) struct NewConversationBody {
    /// The other participants' ids: one makes a direct conversation, 2-50
    /// a group one (repeats count once).
    pub participants: Vec<JsonId>,
    /// The first message, 1-1000 characters, not only white space.
    pub text: String,
    /// A group's title, 1-100 characters (not for a direct one).
    pub title: Option<String>,
}

/// Body of `POST /api/v1/conversations/{id}/messages`.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageBody {
    /// 1-1000 characters, not only white space.
    pub text: String,
}

/// A page of conversations.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ConversationPage {
    /// Newest activity first.
    pub conversations: Vec<Conversation>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A message's text: 1-1000 characters, not only white space.
fn check_text(text: &str) -> ApiResult<()> {
    let n = text.chars().count();
    if n == 0 || n > MAX_TEXT_CHARS || crate::text::unreadable(text).is_some() {
        return Err(ApiError::invalid(
            "invalid_text",
            format!("text must be 1 to {MAX_TEXT_CHARS} characters, hold a visible character and no control characters but new lines and tabs."),
        ));
    }
    Ok(())
}

/// A conversation id from the path: 404 for anything that is not one.
fn conversation_id(raw: &str) -> ApiResult<u64> {
    path_id(raw, "conversation")
}

/// A store answer on a conversation, with "not found" in the contract's
/// words.
fn not_found(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound(_) => ApiError::not_found("No such conversation."),
        e => e.into(),
    }
}

const CREATE_OP: Op = Op::post(
    "/api/v1/conversations",
    "conversations",
    "Start a conversation with its first message (200 with the existing one for a direct pair that has one)",
)
.body("NewConversationBody")
.status(201)
.reply(Reply::Of(Typed::of::<Conversation>()))
.errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `POST /api/v1/conversations`.
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: AuthUser,
    headers: HeaderMap,
    JsonBody(body): JsonBody<NewConversationBody>,
) -> ApiResult<Response> {
    auth.require(SCOPE_WRITE)?;
    let idem = idempotency_key(&headers)?;
    check_text(&body.text)?;
    let others = participants(&body.participants, auth.uid)?;
    let title = title(body.title.as_deref(), others.len() == 1)?;
    state.rate.write(auth.uid).await?;
    let opening = state
        .store
        .conversations()
        .opening(auth.uid, &others)
        .await?
        .map_err(refused)?;
    let me = state.store.users().get(auth.uid).await?;
    let store = state.store.clone();
    let uid = auth.uid;
    let (sent, started) = detached(async move {
        let start = Start {
            uid,
            login: &me.login,
            others: &others,
            title,
            text: &body.text,
            idempotency_key: idem.as_deref(),
        };
        Ok(store.conversations().open(start, opening).await?)
    })
    .await?;
    let conversation = state
        .store
        .conversations()
        .get(sent.conversation_id, auth.uid)
        .await
        .map_err(not_found)?;
    let status = match started {
        true => StatusCode::CREATED,
        false => StatusCode::OK,
    };
    Ok((status, Json(conversation)).into_response())
}

/// The other participants named: user ids, each once, 1 to
/// [`MAX_OTHERS`], not the caller.
fn participants(named: &[JsonId], uid: u64) -> ApiResult<Vec<u64>> {
    let mut others: Vec<u64> = Vec::new();
    for p in named {
        // Digits that name no user (0 among them) are an unknown user
        // (404 later), not a malformed id.
        let zero = match p {
            JsonId::Text(s) => !s.is_empty() && s.bytes().all(|b| b == b'0'),
            JsonId::Unsigned(n) => *n == 0,
            _ => false,
        };
        let id = p.parse().or(zero.then_some(0)).ok_or_else(|| {
            ApiError::invalid(
                "invalid_participants",
                "participants must be user ids (strings of digits).",
            )
        })?;
        if !others.contains(&id) {
            others.push(id);
        }
    }
    if others.is_empty() || others.len() > MAX_OTHERS || others.contains(&uid) {
        return Err(ApiError::invalid(
            "invalid_participants",
            format!("Name 1 to {MAX_OTHERS} other users; not yourself."),
        ));
    }
    Ok(others)
}

/// A group conversation's title: none for a direct one, else 1 to
/// [`MAX_TITLE_CHARS`] readable characters if given.
fn title(title: Option<&str>, direct: bool) -> ApiResult<Option<String>> {
    match title {
        None => Ok(None),
        Some(_) if direct => Err(ApiError::invalid(
            "invalid_title",
            "A direct conversation has no title.",
        )),
        Some(t) => {
            let n = t.chars().count();
            if n == 0 || n > MAX_TITLE_CHARS || crate::text::unreadable(t).is_some() {
                return Err(ApiError::invalid(
                    "invalid_title",
                    format!("title must be 1 to {MAX_TITLE_CHARS} characters."),
                ));
            }
            Ok(Some(t.to_string()))
        }
    }
}

/// The API's error for a refusal of [`store::messaging`](crate::store::entities::messaging).
fn refused(refusal: Refusal) -> ApiError {
    let at_limit = |message: String| {
        ApiError::new(StatusCode::TOO_MANY_REQUESTS, "conversation_limit", message)
            .retry_after(3600)
    };
    match refusal {
        Refusal::NoSuchUser(other) => ApiError::not_found(format!("No such user: {other}.")),
        Refusal::Blocked(other) => ApiError::forbidden(format!(
            "You cannot message {other}: a block stands between you."
        )),
        Refusal::OnlyFromFollowed(other) => ApiError::forbidden(format!(
            "User {other} takes messages only from those they follow."
        )),
        Refusal::SenderAtLimit(cap) => at_limit(format!(
            "You are in {cap} conversations, the most allowed; leave one first."
        )),
        Refusal::AtLimit(other, cap) => at_limit(format!(
            "User {other} is in {cap} conversations, the most allowed."
        )),
    }
}

const LIST_OP: Op = Op::get(
    "/api/v1/conversations",
    "conversations",
    "Your conversations, newest activity first, with unread counts",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<ConversationPage>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/conversations`.
pub(crate) async fn list(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<ConversationPage>> {
    let (cursor, count) = user_paging(&q)?;
    let (conversations, next_cursor) = state
        .store
        .conversations()
        .page(auth.uid, &cursor, count)
        .await?;
    Ok(Json(ConversationPage {
        conversations,
        next_cursor,
    }))
}

const SHOW_OP: Op = Op::get(
    "/api/v1/conversations/{id}",
    "conversations",
    "A conversation you are in",
)
.reply(Reply::Of(Typed::of::<Conversation>()))
.errors(&[401, 404, 503]);

/// `GET /api/v1/conversations/{id}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Conversation>> {
    let cid = conversation_id(&id)?;
    Ok(Json(
        state
            .store
            .conversations()
            .get(cid, auth.uid)
            .await
            .map_err(not_found)?,
    ))
}

/// The participants of `cid` if `uid` is one of them; else 404.
async fn members_with(state: &AppState, cid: u64, uid: u64) -> ApiResult<Vec<u64>> {
    match state.store.conversations().members(cid).await? {
        Some(members) if members.contains(&uid) => Ok(members),
        _ => Err(ApiError::not_found("No such conversation.")),
    }
}

const MESSAGES_OP: Op = Op::get(
    "/api/v1/conversations/{id}/messages",
    "conversations",
    "A conversation's messages, newest first",
)
.params(Params::Paging)
.reply(Reply::ListOf(Typed::of::<Message>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/conversations/{id}/messages`.
pub(crate) async fn messages(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<Message>>> {
    let (page, count) = paging(&q)?;
    let cid = conversation_id(&id)?;
    members_with(&state, cid, auth.uid).await?;
    Ok(Json(
        state
            .store
            .conversations()
            .messages(cid, page, count)
            .await?,
    ))
}

const SEND_OP: Op = Op::post(
    "/api/v1/conversations/{id}/messages",
    "conversations",
    "Send a message (honours Idempotency-Key, as posts do)",
)
.body("MessageBody")
.status(201)
.reply(Reply::Of(Typed::of::<Message>()))
.errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `POST /api/v1/conversations/{id}/messages`.
pub(crate) async fn send(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<MessageBody>,
) -> ApiResult<(StatusCode, Json<Message>)> {
    auth.require(SCOPE_WRITE)?;
    let cid = conversation_id(&id)?;
    let idem = idempotency_key(&headers)?;
    check_text(&body.text)?;
    let members = members_with(&state, cid, auth.uid).await?;
    state.rate.write(auth.uid).await?;
    if let Some(refusal) = state
        .store
        .conversations()
        .may_send(auth.uid, cid, &members)
        .await?
    {
        return Err(match refusal {
            Refusal::Blocked(_) => {
                ApiError::forbidden("You cannot message this user: a block stands between you.")
            }
            other => refused(other),
        });
    }
    let me = state.store.users().get(auth.uid).await?;
    let store = state.store.clone();
    let uid = auth.uid;
    let sent: Sent = detached(async move {
        Ok(store
            .conversations()
            .send(Outgoing {
                cid,
                uid,
                login: &me.login,
                text: &body.text,
                start: None,
                idempotency_key: idem.as_deref(),
            })
            .await?)
    })
    .await
    .map_err(|e| match e.status {
        StatusCode::NOT_FOUND => ApiError::not_found("No such conversation."),
        _ => e,
    })?;
    let message = state
        .store
        .conversations()
        .message(sent.conversation_id, sent.message_id)
        .await?;
    Ok((StatusCode::CREATED, Json(message)))
}

const READ_OP: Op = Op::post(
    "/api/v1/conversations/{id}/read",
    "conversations",
    "Mark a conversation read (unread: 0)",
)
.reply(Reply::Of(Typed::of::<Conversation>()))
.errors(&[401, 404, 503]);

/// `POST /api/v1/conversations/{id}/read`.
pub(crate) async fn read(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Conversation>> {
    let cid = conversation_id(&id)?;
    state
        .store
        .conversations()
        .mark_read(cid, auth.uid)
        .await
        .map_err(not_found)?;
    Ok(Json(
        state
            .store
            .conversations()
            .get(cid, auth.uid)
            .await
            .map_err(not_found)?,
    ))
}

const LEAVE_OP: Op = Op::post(
    "/api/v1/conversations/{id}/leave",
    "conversations",
    "Leave a group conversation (a direct one: 400)",
)
.status(204)
.errors(&[400, 401, 404, 503]);

/// `POST /api/v1/conversations/{id}/leave`.
pub(crate) async fn leave(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let cid = conversation_id(&id)?;
    state
        .store
        .conversations()
        .leave(cid, auth.uid)
        .await
        .map_err(not_found)?;
    Ok(StatusCode::NO_CONTENT)
}
