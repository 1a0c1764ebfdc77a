//! Following: follow and unfollow one user or many, list followers.

use super::shared::extract::{detached, path_id, JsonBody, JsonId};
use super::shared::openapi::{Auth, Op, Params, Reply, Typed};
use super::shared::paging::{user_paging, UserPage};
use super::shared::routes::Routes;
use crate::auth::{AuthUser, MaybeUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::http::shared::batch::BatchReply;
use crate::model::now;
use crate::state::AppState;
use crate::store::entities::follow_requests::Requests;
use crate::store::entities::follows::FollowList;
use crate::store::{Store, StoreError, StoreResult};
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Most ids in one batch follow or unfollow.
pub(crate) const MAX_BATCH: usize = 1000;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(CREATE_OP, create)
        .route(DESTROY_OP, destroy)
        .route(CREATE_MANY_OP, create_many)
        .route(DESTROY_MANY_OP, destroy_many)
        .route(FOLLOWERS_OP, followers)
        .route(FOLLOWING_OP, following)
        .route(REQUESTS_IN_OP, requests_in)
        .route(REQUESTS_OUT_OP, requests_out)
        .route(AUTHORIZE_OP, authorize)
        .route(REJECT_OP, reject)
        .schema(
            "Batch",
            serde_json::json!({
                "type": "object", "required": ["ids"],
                "properties": {
                    "ids": {"type": "array", "maxItems": 1000,
                        "items": {"type": ["string", "integer"], "maxLength": super::shared::extract::MAX_ID_CHARS},
                        "description": "User ids (strings or numbers); unknown ones answer false."},
                },
            }),
        )
}

async fn request_list(
    state: AppState,
    auth: AuthUser,
    q: HashMap<String, String>,
    which: Requests,
) -> ApiResult<Json<UserPage>> {
    let (cursor, count) = user_paging(&q)?;
    let page = state
        .store
        .follows()
        .requests()
        .page(auth.uid, which, &cursor, count)
        .await?;
    UserPage::of(&state, page).await
}

const REQUESTS_IN_OP: Op = Op::get(
    "/api/v1/follow_requests",
    "follows",
    "Who asked to follow you (a private account), oldest first",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<UserPage>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/follow_requests`: who asked to follow the caller.
pub(crate) async fn requests_in(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<UserPage>> {
    request_list(state, auth, q, Requests::Incoming).await
}

const REQUESTS_OUT_OP: Op = Op::get(
    "/api/v1/follow_requests/outgoing",
    "follows",
    "Whom you asked to follow, oldest first",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<UserPage>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/follow_requests/outgoing`: whom the caller asked to follow.
pub(crate) async fn requests_out(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<UserPage>> {
    request_list(state, auth, q, Requests::Outgoing).await
}

const AUTHORIZE_OP: Op = Op::post(
    "/api/v1/follow_requests/{id}/authorize",
    "follows",
    "Approve a follow request: the requester follows you",
)
.reply(Reply::Of(Typed::of::<Following>()))
.errors(&[401, 403, 404, 429, 503]);

/// `POST /api/v1/follow_requests/{id}/authorize`: the requester follows the
/// caller from now on; 404 when there is no such request.
pub(crate) async fn authorize(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Following>> {
    decide(state, auth, id, true).await
}

const REJECT_OP: Op = Op::post(
    "/api/v1/follow_requests/{id}/reject",
    "follows",
    "Reject a follow request",
)
.reply(Reply::Of(Typed::of::<Following>()))
.errors(&[401, 403, 404, 429, 503]);

/// `POST /api/v1/follow_requests/{id}/reject`: 404 when there is no such request.
pub(crate) async fn reject(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Following>> {
    decide(state, auth, id, false).await
}

/// Answer of follow, unfollow and a follow request's decision.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Following {
    /// Whether the follower follows the user now.
    pub following: bool,
    /// Follow: true when a private account was asked instead. Unfollow:
    /// false when a pending request was cancelled instead. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<bool>,
}

impl Following {
    fn now(following: bool) -> Json<Following> {
        Json(Following {
            following,
            requested: None,
        })
    }

    fn requested(requested: bool) -> Json<Following> {
        Json(Following {
            following: false,
            requested: Some(requested),
        })
    }
}

async fn decide(
    state: AppState,
    auth: AuthUser,
    id: String,
    approve: bool,
) -> ApiResult<Json<Following>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let requester = path_id(&id, "follow request")?;
    if !state
        .store
        .follows()
        .requests()
        .has_requested(requester, auth.uid)
        .await?
    {
        return Err(ApiError::not_found("No such follow request."));
    }
    let store = state.store.clone();
    let owner = auth.uid;
    detached(async move {
        // Follow first: a crash in between leaves the request, and
        // authorizing again completes it.
        if approve {
            store.follows().set(requester, owner, true, now()).await?;
        }
        store
            .follows()
            .requests()
            .withdraw(requester, owner)
            .await?;
        Ok(())
    })
    .await?;
    Ok(Following::now(approve))
}

const CREATE_OP: Op = Op::post(
    "/api/v1/users/{id}/follow",
    "follows",
    "Follow a user (409 when already following); a private account gets a follow request (requested: true)",
)
.reply(Reply::Of(Typed::of::<Following>()))
.errors(&[401, 403, 404, 409, 429, 503]);

/// `POST /api/v1/users/{id}/follow`: 409 when already following.
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Following>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let target = path_id(&id, "user")?;
    let store = state.store.clone();
    let uid = auth.uid;
    let outcome = detached(async move { Ok(follow_or_ask(&store, uid, target).await?) }).await?;
    match outcome {
        Followed::Now => Ok(Following::now(true)),
        Followed::Already => Err(ApiError::conflict(
            "already_following",
            "You already follow this user.",
        )),
        Followed::Asked => Ok(Following::requested(true)),
    }
}

/// What a follow did.
enum Followed {
    /// Following now.
    Now,
    /// Was following already.
    Already,
    /// The account is private: a follow request waits for its owner.
    Asked,
}

/// Follows `target`, or asks to when the account is private.
async fn follow_or_ask(store: &Store, uid: u64, target: u64) -> Result<Followed, StoreError> {
    if uid != target && !store.follows().is_following(uid, target).await? {
        let user = store.users().get(target).await?;
        if user.private {
            store.follows().requests().ask(uid, target).await?;
            return Ok(Followed::Asked);
        }
    }
    Ok(if store.follows().set(uid, target, true, now()).await? {
        Followed::Now
    } else {
        Followed::Already
    })
}

const DESTROY_OP: Op = Op::delete(
    "/api/v1/users/{id}/follow",
    "follows",
    "Unfollow a user, or cancel a follow request (then requested: false)",
)
.reply(Reply::Of(Typed::of::<Following>()))
.errors(&[401, 403, 404, 429, 503]);

/// `DELETE /api/v1/users/{id}/follow`: idempotent.
pub(crate) async fn destroy(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Following>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let target = path_id(&id, "user")?;
    let store = state.store.clone();
    let uid = auth.uid;
    let cancelled = detached(async move {
        if store.follows().requests().withdraw(uid, target).await? {
            return Ok(true);
        }
        store.follows().set(uid, target, false, now()).await?;
        Ok(false)
    })
    .await?;
    if cancelled {
        return Ok(Following::requested(false));
    }
    Ok(Following::now(false))
}

/// Body of the batch calls.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct Batch {
    /// User ids (strings or numbers), at most 1000.
    #[schema(value_type = Vec<String>)]
    pub ids: Vec<JsonId>,
}

async fn batch(
    state: AppState,
    auth: AuthUser,
    body: Batch,
    follow: bool,
) -> ApiResult<Json<BatchReply>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    if !body.ids.iter().all(JsonId::is_whole) {
        return Err(ApiError::invalid(
            "invalid_ids",
            "ids must be strings of at most 20 characters or whole numbers.",
        ));
    }
    if body.ids.len() > MAX_BATCH {
        return Err(ApiError::invalid(
            "too_many_ids",
            format!("Give at most {MAX_BATCH} ids."),
        ));
    }
    let at = now();
    // Each distinct id is worked once; repeats get the same answer.
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<JsonId> = body
        .ids
        .into_iter()
        .filter(|raw| seen.insert(raw.parse().map_or_else(|| raw.raw(), |id| id.to_string())))
        .collect();
    let uid = auth.uid;
    // Ids that name no one (or the caller) change nothing; the rest are
    // worked together (one script per chunk on one Redis).
    let targets: Vec<u64> = ids
        .iter()
        .filter_map(JsonId::parse)
        .filter(|target| *target != uid)
        .collect();
    let store = state.store.clone();
    let worked = targets.clone();
    let changed: Vec<StoreResult<bool>> =
        detached(async move { Ok(store.follows().set_many(uid, &worked, follow, at).await?) })
            .await?;
    let mut by_target = HashMap::new();
    for (target, result) in targets.into_iter().zip(changed) {
        by_target.insert(
            target,
            match result {
                Ok(changed) => changed,
                Err(StoreError::NotFound(_) | StoreError::Forbidden(_)) => false,
                Err(e) => return Err(ApiError::from(e)),
            },
        );
    }
    let results = ids
        .iter()
        .map(|raw| {
            let changed = raw.parse().and_then(|t| by_target.get(&t).copied());
            (raw.raw(), changed.unwrap_or(false))
        })
        .collect();
    Ok(Json(BatchReply { results }))
}

const CREATE_MANY_OP: Op = Op::post("/api/v1/follows", "follows", "Follow up to 1000 users")
    .body("Batch")
    .reply(Reply::Of(Typed::of::<BatchReply>()))
    .errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `POST /api/v1/follows`: follow many.
pub(crate) async fn create_many(
    State(state): State<AppState>,
    auth: AuthUser,
    JsonBody(body): JsonBody<Batch>,
) -> ApiResult<Json<BatchReply>> {
    batch(state, auth, body, true).await
}

const DESTROY_MANY_OP: Op = Op::delete("/api/v1/follows", "follows", "Unfollow up to 1000 users")
    .body("Batch")
    .reply(Reply::Of(Typed::of::<BatchReply>()))
    .errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `DELETE /api/v1/follows`: unfollow many.
pub(crate) async fn destroy_many(
    State(state): State<AppState>,
    auth: AuthUser,
    JsonBody(body): JsonBody<Batch>,
) -> ApiResult<Json<BatchReply>> {
    batch(state, auth, body, false).await
}

async fn list(
    state: AppState,
    id: String,
    q: HashMap<String, String>,
    which: FollowList,
) -> ApiResult<Json<UserPage>> {
    let uid = path_id(&id, "user")?;
    let (cursor, count) = user_paging(&q)?;
    if !state.store.users().exists(uid).await? {
        return Err(ApiError::not_found("No such user."));
    }
    let page = state
        .store
        .follows()
        .page(uid, which, &cursor, count)
        .await?;
    UserPage::of(&state, page).await
}

const FOLLOWERS_OP: Op = Op::get(
    "/api/v1/users/{id}/followers",
    "follows",
    "Followers, oldest follow first",
)
.auth(Auth::Optional)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<UserPage>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/users/{id}/followers`.
pub(crate) async fn followers(
    State(state): State<AppState>,
    _viewer: MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<UserPage>> {
    list(state, id, q, FollowList::Followers).await
}

const FOLLOWING_OP: Op = Op::get(
    "/api/v1/users/{id}/following",
    "follows",
    "Followed users, oldest follow first",
)
.auth(Auth::Optional)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<UserPage>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/users/{id}/following`.
pub(crate) async fn following(
    State(state): State<AppState>,
    _viewer: MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<UserPage>> {
    list(state, id, q, FollowList::Following).await
}
