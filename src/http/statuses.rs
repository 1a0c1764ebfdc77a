//! Statuses: post, read, delete.

use super::shared::extract::idempotency_key;
use super::shared::extract::{detached, path_id, JsonBody, JsonId};
use super::shared::openapi::{Auth, Op, Params, Reply, Typed};
use super::shared::routes::Routes;
use super::shared::status_text::{resolve_mentions, MAX_MESSAGE_CHARS};
use super::shared::visibility::visible;
use crate::auth::{AuthUser, MaybeUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::model::GroupKind;
use crate::model::Id;
use crate::model::{now, Status};
use crate::state::AppState;
use crate::store::entities::follows::Cursor;
use crate::store::entities::groups::PostingRefused;
use crate::store::writes::posting::{PostOptions, Posted};
use crate::store::StoreError;
use crate::text;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(CREATE_OP, create)
        .route(SHOW_OP, show)
        .route(DESTROY_OP, destroy)
        .route(CONTEXT_OP, context)
        .route(REPOST_OP, repost)
        .route(UNREPOST_OP, unrepost)
        .schema("CreateStatus", create_status_schema())
}

/// `CreateStatus` with the constraints [`create`] enforces.
fn create_status_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object", "required": ["message"],
        "properties": {
            "message": {"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE_CHARS,
                "pattern": super::shared::openapi::readable_pattern(),
                "description": "1-280 characters (Unicode scalar values), not only white space."},
            "lat": {"type": ["number", "null"], "minimum": -90, "maximum": 90},
            "lon": {"type": ["number", "null"], "minimum": -180, "maximum": 180},
            "reply_to": {"type": ["string", "integer", "null"],
                "description": "Id of a status to reply to (404 if there is none)."},
        },
        "description": "lat and lon: both (numbers) or neither (absent or null).",
        "allOf": [
            {"if": {"required": ["lat"], "properties": {"lat": {"type": "number"}}},
             "then": {"required": ["lon"], "properties": {"lon": {"type": "number"}}}},
            {"if": {"required": ["lon"], "properties": {"lon": {"type": "number"}}},
             "then": {"required": ["lat"], "properties": {"lat": {"type": "number"}}}},
        ],
    })
}

/// The status a repost request is about: the one named, or the original of
/// a repost (a repost of a repost reposts the original); 404 unless the
/// caller may see both.
async fn repost_root(state: &AppState, auth: &AuthUser, id: &str) -> ApiResult<Status> {
    let named = visible(state, Some(auth), path_id(id, "status")?).await?;
    match named.original_id() {
        Some(root) => visible(state, Some(auth), root).await,
        None => Ok(named),
    }
}

const REPOST_OP: Op = Op::post(
    "/api/v1/statuses/{id}/repost",
    "statuses",
    "Repost a status: 201 with the repost (200 with the existing one if already reposted)",
)
.status(201)
.reply(Reply::Of(Typed::of::<Status>()))
.errors(&[401, 403, 404, 429, 503]);

/// `POST /api/v1/statuses/{id}/repost`: 201 with the new repost, or 200 with
/// the caller's existing repost of it. A repost of a repost reposts the
/// original; a private account's statuses cannot be reposted (403).
pub(crate) async fn repost(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let original = repost_root(&state, &auth, &id).await?;
    let root: u64 = original.id.get();
    let author: u64 = original.uid.get();
    if state.store.users().get(author).await?.private
        || state
            .store
            .statuses()
            .audience_now(&original)
            .await?
            .is_some()
    {
        return Err(ApiError::forbidden(
            "A private account's statuses (and replies to them) cannot be reposted.",
        ));
    }
    if original.group_private {
        return Err(ApiError::forbidden(
            "A private group's statuses cannot be reposted.",
        ));
    }
    // A private reposter's repost is news only to those who may see it.
    let notify_original =
        !auth.private || state.store.follows().is_following(author, auth.uid).await?;
    if let Some(existing) = state.store.statuses().repost_by(root, auth.uid).await? {
        if let Ok(status) = state.store.statuses().get(existing).await {
            return Ok(Json(status).into_response());
        }
    }
    let store = state.store.clone();
    let outcome = detached(async move {
        let (sid, posted) = store.mint().snowflake().await?;
        let status = Status {
            id: Id(sid),
            uid: Id(auth.uid),
            login: auth.login.clone(),
            message: String::new(),
            posted,
            lat: None,
            lon: None,
            reply_to: None,
            reply_to_uid: None,
            hashtags: Vec::new(),
            mentions: Vec::new(),
            repost_of: Some(original.id),
            repost_of_uid: Some(original.uid),
            audience: None,
            group_id: None,
            group_private: false,
            edited_at: None,
            counts: Default::default(),
        };
        let opts = PostOptions {
            private: auth.private,
            notify_original,
            ..Default::default()
        };
        let posted = store.statuses().post(&status, &opts).await?;
        Ok((posted, status))
    })
    .await?;
    Ok(match outcome {
        (Posted::Reposted(existing), _) => {
            Json(state.store.statuses().get(existing).await?).into_response()
        }
        (_, status) => (StatusCode::CREATED, Json(status)).into_response(),
    })
}

const UNREPOST_OP: Op = Op::delete(
    "/api/v1/statuses/{id}/repost",
    "statuses",
    "Undo your repost of a status (idempotent)",
)
.reply(Reply::Of(Typed::of::<Unreposted>()))
.errors(&[401, 403, 404, 429, 503]);

/// Answer of undoing a repost.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Unreposted {
    /// Whether the caller reposts the status now (false).
    pub reposted: bool,
    /// How many reposts it has.
    pub reposts: u64,
}

/// `DELETE /api/v1/statuses/{id}/repost`: undoes the caller's repost of the
/// status (idempotent).
pub(crate) async fn unrepost(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Unreposted>> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let original = repost_root(&state, &auth, &id).await?;
    let root: u64 = original.id.get();
    if let Some(existing) = state.store.statuses().repost_by(root, auth.uid).await? {
        let store = state.store.clone();
        let private = auth.private;
        let uid = auth.uid;
        detached(async move {
            match store.statuses().delete(existing, uid, private, now()).await {
                Ok(()) | Err(StoreError::NotFound(_)) => Ok(()),
                Err(e) => Err(e.into()),
            }
        })
        .await?;
    }
    let reposts = state.store.statuses().get(root).await?.counts.reposts;
    Ok(Json(Unreposted {
        reposted: false,
        reposts,
    }))
}

/// Most ancestors a conversation shows.
const MAX_ANCESTORS: usize = 200;

/// Answer of `GET /api/v1/statuses/{id}/context`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Context {
    /// The statuses this one replies to, up the chain, oldest first (it
    /// stops at one that is gone or that the caller may not see).
    pub ancestors: Vec<Status>,
    /// Replies, replies to them and so on, oldest first, `count` from `cursor`.
    pub descendants: Vec<Status>,
    /// Pass as `cursor` for more descendants; null when there are no more.
    pub next_cursor: Option<String>,
    /// True when the chain of ancestors stops at a status that is gone (or
    /// that the caller may not see): the conversation says so.
    pub parent_missing: bool,
}

const CONTEXT_OP: Op = Op::get(
    "/api/v1/statuses/{id}/context",
    "statuses",
    "The conversation: ancestors and descendants (paginated), oldest first",
)
.auth(Auth::Optional)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<Context>()))
.errors(&[400, 401, 404, 503]);

/// `GET /api/v1/statuses/{id}/context`: the conversation around a status,
/// as the caller may see it.
pub(crate) async fn context(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Context>> {
    let sid = path_id(&id, "status")?;
    let (cursor, count) = super::shared::paging::user_paging(&q)?;
    let status = visible(&state, viewer.as_ref(), sid).await?;
    let mut ancestors = Vec::new();
    let mut parent = status.parent_id();
    let mut parent_missing = false;
    while let Some(p) = parent {
        if ancestors.len() >= MAX_ANCESTORS {
            break;
        }
        let Ok(up) = visible(&state, viewer.as_ref(), p).await else {
            parent_missing = true;
            break;
        };
        parent = up.reply_to.map(Id::get);
        ancestors.push(up);
    }
    ancestors.reverse();
    let ids = state.store.statuses().descendants(sid).await?;
    let found = state.store.statuses().many(&ids).await?;
    let cached: Vec<_> = found.into_iter().filter_map(|(_, s)| s).collect();
    let shown = state.store.statuses().shown(cached).await?;
    let mut shown = super::shared::visibility::only_visible(&state, viewer.as_ref(), shown).await?;
    shown.sort_by_key(|s| s.0.status.id.get());
    // Descendants are in id order, so a page starts after the last id
    // shown: replies posted or deleted meanwhile move nothing across it.
    let sid_of = |s: &crate::store::entities::statuses::Shown| s.0.status.id.get();
    let start = match cursor {
        Cursor::Start => 0,
        Cursor::Offset(n) => (n as usize).min(shown.len()),
        Cursor::After { member, .. } => shown.partition_point(|s| sid_of(s) <= member),
    };
    let end = (start + count).min(shown.len());
    let next_cursor = (end < shown.len())
        .then(|| shown[end - 1..end].first().map(sid_of))
        .flatten()
        .map(|last| format!("{last}_{last}"));
    let descendants = shown[start..end]
        .iter()
        .map(|(s, counts)| s.with_counts(*counts))
        .collect();
    Ok(Json(Context {
        ancestors,
        descendants,
        next_cursor,
        parent_missing,
    }))
}

/// Body of `POST /api/v1/statuses`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct CreateStatus {
    /// 1-280 characters, not only white space.
    pub message: String,
    /// Latitude in [-90, 90], with `lon`.
    pub lat: Option<f64>,
    /// Longitude in [-180, 180], with `lat`.
    pub lon: Option<f64>,
    /// Id of the status this one replies to.
    #[schema(value_type = Option<String>)]
    pub reply_to: Option<JsonId>,
    /// The group to post in (a member; in an announcement group an owner
    /// or moderator). A reply belongs to its parent's group.
    #[schema(value_type = Option<String>)]
    pub group_id: Option<JsonId>,
}

fn validate(body: &CreateStatus) -> ApiResult<()> {
    let n = body.message.chars().count();
    if n == 0 || n > MAX_MESSAGE_CHARS {
        return Err(ApiError::invalid(
            "invalid_message",
            "message must be 1 to 280 characters.",
        ));
    }
    if let Some(why) = crate::text::unreadable(&body.message) {
        return Err(ApiError::invalid(
            "invalid_message",
            format!("message {why}."),
        ));
    }
    match (body.lat, body.lon) {
        (None, None) => {}
        (Some(lat), Some(lon)) => {
            if !(lat.is_finite() && (-90.0..=90.0).contains(&lat)) {
                return Err(ApiError::invalid(
                    "invalid_location",
                    "lat must be within [-90, 90].",
                ));
            }
            if !(lon.is_finite() && (-180.0..=180.0).contains(&lon)) {
                return Err(ApiError::invalid(
                    "invalid_location",
                    "lon must be within [-180, 180].",
                ));
            }
        }
        _ => {
            return Err(ApiError::invalid(
                "invalid_location",
                "Give both lat and lon, or neither.",
            ));
        }
    }
    Ok(())
}

const CREATE_OP: Op = Op::post("/api/v1/statuses", "statuses", "Post a status")
    .body("CreateStatus")
    .status(201)
    .reply(Reply::Of(Typed::of::<Status>()))
    .errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `POST /api/v1/statuses`: post a status. With an `Idempotency-Key` used
/// by the same user in the last 24 hours, answers the first answer again
/// and creates nothing.
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: AuthUser,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CreateStatus>,
) -> ApiResult<Response> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let idem = idempotency_key(&headers)?;
    validate(&body)?;
    // From here on the post runs to its end even if the client hangs up.
    let posted = detached(async move { publish(state, auth, body, idem).await }).await?;
    Ok(match posted {
        (Posted::Created, status) => (StatusCode::CREATED, Json(status)).into_response(),
        (Posted::Duplicate(first), _) => (
            StatusCode::CREATED,
            [(header::CONTENT_TYPE, "application/json")],
            first,
        )
            .into_response(),
        // Not a repost: cannot happen here.
        (Posted::Reposted(_), status) => (StatusCode::CREATED, Json(status)).into_response(),
    })
}

const SHOW_OP: Op = Op::get(
    "/api/v1/statuses/{id}",
    "statuses",
    "A status (recorded as viewed when a token is sent)",
)
.auth(Auth::Optional)
.reply(Reply::Of(Typed::of::<Status>()))
.errors(&[401, 403, 404, 503]);

/// `GET /api/v1/statuses/{id}`: one status; with a token, it is recorded in
/// the session's recently viewed statuses.
pub(crate) async fn show(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Status>> {
    let sid = path_id(&id, "status")?;
    let status = visible(&state, viewer.as_ref(), sid).await?;
    if let Some(viewer) = &viewer {
        state
            .store
            .sessions()
            .record_view(viewer.uid, &viewer.sid, sid, now())
            .await?;
    }
    Ok(Json(status))
}

const DESTROY_OP: Op = Op::delete("/api/v1/statuses/{id}", "statuses", "Delete your status")
    .status(204)
    .errors(&[401, 403, 404, 429, 503]);

/// `DELETE /api/v1/statuses/{id}`: delete one of your statuses.
pub(crate) async fn destroy(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    auth.require(SCOPE_WRITE)?;
    state.rate.write(auth.uid).await?;
    let sid = path_id(&id, "status")?;
    let store = state.store.clone();
    detached(async move {
        Ok(store
            .statuses()
            .delete(sid, auth.uid, auth.private, now())
            .await?)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The group a new status goes to ([`Groups::posting_in`](crate::store::entities::groups::Groups::posting_in)):
/// the one named (an id that names none is no group), or its parent's.
async fn posting_group(
    state: &AppState,
    auth: &AuthUser,
    named: Option<&JsonId>,
    parent_group: Option<Id>,
) -> ApiResult<Option<crate::model::Group>> {
    let no_group = || ApiError::not_found("No such group.");
    let named = named
        .map(|id| id.parse().ok_or_else(no_group))
        .transpose()?;
    let parent: Option<u64> = parent_group.map(Id::get);
    let posting = state
        .store
        .groups()
        .posting_in(auth.uid, named, parent)
        .await?;
    posting.map_err(|refused| match refused {
        PostingRefused::Missing => no_group(),
        PostingRefused::NotParentsGroup => {
            ApiError::invalid("invalid_group", "A reply belongs to its parent's group.")
        }
        PostingRefused::NotMember => ApiError::forbidden("Only the group's members post in it."),
        PostingRefused::StaffOnly => {
            ApiError::forbidden("Only owners and moderators post in an announcement group.")
        }
    })
}

/// Checks the reply target and mentions, then stores and fans out the status.
async fn publish(
    state: AppState,
    auth: AuthUser,
    body: CreateStatus,
    idem: Option<String>,
) -> ApiResult<(Posted, Status)> {
    let (reply_to, reply_to_uid, audience, parent_group) = match &body.reply_to {
        None => (None, None, None, None),
        Some(raw) => {
            let target = raw
                .parse()
                .ok_or_else(|| ApiError::not_found("No such status to reply to."))?;
            // A status the author may not see is one that does not exist.
            let parent =
                visible(&state, Some(&auth), target)
                    .await
                    .map_err(|e| match e.status {
                        StatusCode::NOT_FOUND => ApiError::not_found("No such status to reply to."),
                        _ => e,
                    })?;
            // A reply to a private account's status (or to such a reply) is
            // for those who may see that account.
            let parent_uid: u64 = parent.uid.get();
            let audience =
                if parent_uid != auth.uid && state.store.users().get(parent_uid).await?.private {
                    Some(parent.uid)
                } else {
                    let now = state.store.statuses().audience_now(&parent).await?;
                    now.map(Id)
                };
            (Some(parent.id), Some(parent.uid), audience, parent.group_id)
        }
    };
    let group = posting_group(&state, &auth, body.group_id.as_ref(), parent_group).await?;
    let private_group = group
        .as_ref()
        .filter(|g| g.kind == GroupKind::Private)
        .map(|g| g.id.get());
    let (mentions, mentioned) = resolve_mentions(
        &state,
        &auth,
        &body.message,
        audience.map(Id::get),
        private_group,
    )
    .await?;
    let (sid, posted) = state.store.mint().snowflake().await?;
    let status = Status {
        id: Id(sid),
        uid: Id(auth.uid),
        login: auth.login.clone(),
        hashtags: text::hashtags(&body.message),
        mentions,
        repost_of: None,
        repost_of_uid: None,
        audience,
        group_private: group.as_ref().is_some_and(|g| g.kind == GroupKind::Private),
        group_id: group.map(|g| g.id),
        edited_at: None,
        counts: Default::default(),
        message: body.message,
        posted,
        lat: body.lat,
        lon: body.lon,
        reply_to,
        reply_to_uid,
    };
    let opts = PostOptions {
        private: auth.private,
        idempotency_key: idem.as_deref(),
        mentioned: &mentioned,
        notify_original: false,
    };
    let posted = state.store.statuses().post(&status, &opts).await?;
    Ok((posted, status))
}
