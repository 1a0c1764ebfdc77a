//! Lists: a user's own lists of accounts (create, read, rename, delete),
//! their members, and the list timeline ([`store::lists`](crate::store::entities::lists)). Only the owner
//! sees a list: another user's list id is 404. The list stream is
//! [`http::stream`](crate::http::stream) (`/api/v1/stream/list`).

use super::shared::extract::idempotency_key;
use super::shared::extract::{detached, path_id, JsonBody, JsonId};
use super::shared::openapi::{Op, Params, Reply, Typed};
use super::shared::paging::{json_page, paging, user_paging, UserPage};
use super::shared::routes::Routes;
use super::shared::visibility::only_visible_hiding;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::hides;
use crate::http::shared::batch::BatchReply;
use crate::model::Status;
use crate::state::AppState;
use crate::store::entities::lists::{ListInfo, MemberChange, MAX_MEMBERS_A_CALL};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Longest list title, in characters.
pub(crate) const MAX_TITLE_CHARS: usize = 50;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(CREATE_OP, create)
        .route(INDEX_OP, index)
        .route(SHOW_OP, show)
        .route(UPDATE_OP, update)
        .route(DESTROY_OP, destroy)
        .route(ADD_OP, add_members)
        .route(REMOVE_OP, remove_members)
        .route(MEMBERS_OP, members)
        .route(TIMELINE_OP, timeline)
        .schema(
            "NewList",
            json!({"type": "object", "required": ["title"], "properties": {
                "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE_CHARS, "pattern": super::shared::openapi::readable_pattern()},
            }}),
        )
        .schema(
            "ListBatch",
            json!({"type": "object", "required": ["ids"], "properties": {
                "ids": {"type": "array", "maxItems": MAX_MEMBERS_A_CALL,
                    "items": {"type": ["string", "integer"], "maxLength": super::shared::extract::MAX_ID_CHARS},
                    "description": "User ids (strings or numbers)."},
            }}),
        )
}

/// A list as its owner reads it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct List {
    /// The list's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// How many members it has.
    pub members: u64,
}

impl From<ListInfo> for List {
    fn from(list: ListInfo) -> List {
        List {
            id: list.id.to_string(),
            title: list.title,
            members: list.members,
        }
    }
}

/// Answer of `GET /api/v1/lists`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Lists {
    /// The caller's lists, oldest first.
    pub lists: Vec<List>,
}

/// Body of `POST /api/v1/lists` and `PATCH /api/v1/lists/{id}`.
#[derive(Debug, Deserialize)]
pub(crate) struct NewList {
    /// 1-50 characters.
    pub title: String,
}

/// A title: 1-50 characters, readable.
fn check_title(title: &str) -> ApiResult<()> {
    let n = title.chars().count();
    if n == 0 || n > MAX_TITLE_CHARS || crate::text::unreadable(title).is_some() {
        return Err(ApiError::invalid(
            "invalid_title",
            format!("title must be 1 to {MAX_TITLE_CHARS} characters, not only white space."),
        ));
    }
    Ok(())
}

const CREATE_OP: Op = Op::post(
    "/api/v1/lists",
    "lists",
    "Make a list (at most 100 a user, then 400 too_many_lists; honours Idempotency-Key)",
)
.body("NewList")
.status(201)
.reply(Reply::Of(Typed::of::<List>()))
.errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `POST /api/v1/lists`.
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: AuthUser,
    headers: HeaderMap,
    JsonBody(body): JsonBody<NewList>,
) -> ApiResult<Response> {
    auth.require(SCOPE_WRITE)?;
    check_title(&body.title)?;
    let idem = idempotency_key(&headers)?;
    state.rate.write(auth.uid).await?;
    let (store, uid) = (state.store.clone(), auth.uid);
    let list = detached(async move {
        Ok(store
            .lists()
            .create(uid, &body.title, idem.as_deref())
            .await?)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(List::from(list))).into_response())
}

const INDEX_OP: Op = Op::get("/api/v1/lists", "lists", "Your lists, oldest first")
    .reply(Reply::Of(Typed::of::<Lists>()))
    .errors(&[401, 503]);

/// `GET /api/v1/lists`.
pub(crate) async fn index(State(state): State<AppState>, auth: AuthUser) -> ApiResult<Json<Lists>> {
    let lists = state.store.lists().of(auth.uid).await?;
    Ok(Json(Lists {
        lists: lists.into_iter().map(List::from).collect(),
    }))
}

const SHOW_OP: Op = Op::get(
    "/api/v1/lists/{id}",
    "lists",
    "One of your lists (another user's is 404)",
)
.reply(Reply::Of(Typed::of::<List>()))
.errors(&[401, 404, 503]);

/// `GET /api/v1/lists/{id}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<List>> {
    let lid = path_id(&id, "list")?;
    Ok(Json(List::from(
        state.store.lists().get(auth.uid, lid).await?,
    )))
}

const UPDATE_OP: Op = Op::patch("/api/v1/lists/{id}", "lists", "Rename one of your lists")
    .body("NewList")
    .reply(Reply::Of(Typed::of::<List>()))
    .errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `PATCH /api/v1/lists/{id}`.
pub(crate) async fn update(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<NewList>,
) -> ApiResult<Json<List>> {
    auth.require(SCOPE_WRITE)?;
    let lid = path_id(&id, "list")?;
    check_title(&body.title)?;
    state.rate.write(auth.uid).await?;
    let list = state
        .store
        .lists()
        .rename(auth.uid, lid, &body.title)
        .await?;
    Ok(Json(List::from(list)))
}

const DESTROY_OP: Op = Op::delete(
    "/api/v1/lists/{id}",
    "lists",
    "Delete one of your lists (its open streams end with list_deleted)",
)
.status(204)
.errors(&[401, 403, 404, 429, 503]);

/// `DELETE /api/v1/lists/{id}`.
pub(crate) async fn destroy(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    auth.require(SCOPE_WRITE)?;
    let lid = path_id(&id, "list")?;
    state.rate.write(auth.uid).await?;
    let (store, uid) = (state.store.clone(), auth.uid);
    detached(async move { Ok(store.lists().delete(uid, lid).await?) }).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Body of the member calls.
#[derive(Debug, Deserialize)]
pub(crate) struct ListBatch {
    /// User ids (strings or numbers), at most 100.
    pub ids: Vec<JsonId>,
}

const ADD_OP: Op = Op::post(
    "/api/v1/lists/{id}/members",
    "lists",
    "Add up to 100 users to a list (at most 5,000 members, then 400 too_many_members); per id, whether they are a member after the call",
)
.body("ListBatch")
.reply(Reply::Of(Typed::of::<BatchReply>()))
.errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `POST /api/v1/lists/{id}/members`.
pub(crate) async fn add_members(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ListBatch>,
) -> ApiResult<Json<BatchReply>> {
    change(state, auth, id, body, MemberChange::Add).await
}

const REMOVE_OP: Op = Op::delete(
    "/api/v1/lists/{id}/members",
    "lists",
    "Take up to 100 users out of a list; per id, whether they are a member after the call",
)
.body("ListBatch")
.reply(Reply::Of(Typed::of::<BatchReply>()))
.errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `DELETE /api/v1/lists/{id}/members`.
pub(crate) async fn remove_members(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ListBatch>,
) -> ApiResult<Json<BatchReply>> {
    change(state, auth, id, body, MemberChange::Remove).await
}

/// Adds or removes members: an add takes only users who exist and do not
/// block the caller; the answer says, per id as sent, whether that user is
/// a member after the call.
async fn change(
    state: AppState,
    auth: AuthUser,
    id: String,
    body: ListBatch,
    change: MemberChange,
) -> ApiResult<Json<BatchReply>> {
    auth.require(SCOPE_WRITE)?;
    let lid = path_id(&id, "list")?;
    if !body.ids.iter().all(JsonId::is_whole) {
        return Err(ApiError::invalid(
            "invalid_ids",
            "ids must be strings of at most 20 characters or whole numbers.",
        ));
    }
    if body.ids.len() > MAX_MEMBERS_A_CALL {
        return Err(ApiError::invalid(
            "too_many_ids",
            format!("Give at most {MAX_MEMBERS_A_CALL} ids a call."),
        ));
    }
    state.rate.write(auth.uid).await?;
    let mut seen = HashSet::new();
    let ids: Vec<u64> = body
        .ids
        .iter()
        .filter_map(JsonId::parse)
        .filter(|id| seen.insert(*id))
        .collect();
    let uid = auth.uid;
    let worked = match change {
        MemberChange::Remove => ids.clone(),
        MemberChange::Add => {
            let relations = state.store.relations().hides(uid).await?;
            let exist = state.store.users().exist(&ids).await?;
            ids.iter()
                .zip(exist)
                .filter(|(id, exists)| *exists && relations.bits(**id) & hides::BLOCKED_BY == 0)
                .map(|(id, _)| *id)
                .collect()
        }
    };
    let store = state.store.clone();
    detached(async move {
        Ok(store
            .lists()
            .change_members(uid, lid, change, &worked)
            .await?)
    })
    .await?;
    let now_members = state.store.lists().are_members(uid, lid, &ids).await?;
    let member: HashMap<u64, bool> = ids.iter().copied().zip(now_members).collect();
    let results: BTreeMap<String, bool> = body
        .ids
        .iter()
        .map(|raw| {
            let is = raw
                .parse()
                .and_then(|id| member.get(&id).copied())
                .unwrap_or(false);
            (raw.raw(), is)
        })
        .collect();
    Ok(Json(BatchReply { results }))
}

const MEMBERS_OP: Op = Op::get(
    "/api/v1/lists/{id}/members",
    "lists",
    "A list's members, oldest member first",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<UserPage>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/lists/{id}/members`.
pub(crate) async fn members(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<UserPage>> {
    let lid = path_id(&id, "list")?;
    let (cursor, count) = user_paging(&q)?;
    let page = state
        .store
        .lists()
        .member_page(auth.uid, lid, &cursor, count)
        .await?;
    UserPage::of(&state, page).await
}

const TIMELINE_OP: Op = Op::get(
    "/api/v1/timelines/list/{id}",
    "timelines",
    "A list's timeline: its members' statuses, newest first, paged as the home timeline",
)
.params(Params::Paging)
.reply(Reply::ListOf(Typed::of::<Status>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/timelines/list/{id}`: what the caller may see of it, less
/// anyone they block or mute or who blocks them.
pub(crate) async fn timeline(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let lid = path_id(&id, "list")?;
    let (page, count) = paging(&q)?;
    let statuses = state.store.lists().page(auth.uid, lid, page, count).await?;
    Ok(json_page(
        &only_visible_hiding(&state, Some(&auth), statuses, hides::FEED).await?,
    ))
}
