//! Timelines: the caller's home timeline and any user's profile timeline.

use super::shared::extract::path_id;
use super::shared::openapi::{Auth, Op, Params, Reply, Typed};
use super::shared::paging::{json_page, order, paging, ranked_json, Order};
use super::shared::routes::Routes;
use super::shared::visibility::{
    blocked_by, only_visible, only_visible_hiding, privacy_allows_user,
};
use crate::auth::{AuthUser, MaybeUser};
use crate::error::{ApiError, ApiResult};
use crate::model::Id;
use crate::model::Status;
use crate::state::AppState;
use crate::store::entities::ranking::{Ranked, RankedEntry};
use crate::store::entities::statuses::Timeline;
use crate::store::paging::Page;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use std::collections::HashMap;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(HOME_OP, home)
        .route(PROFILE_OP, profile)
        .route(MENTIONS_OP, mentions)
        .route(TAG_OP, tag)
}

const MENTIONS_OP: Op = Op::get(
    "/api/v1/timelines/mentions",
    "timelines",
    "Statuses mentioning you, newest first",
)
.params(Params::Paging)
.reply(Reply::ListOf(Typed::of::<Status>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/timelines/mentions`: statuses mentioning the caller, newest first.
pub(crate) async fn mentions(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let (page, count) = paging(&q)?;
    let statuses = state
        .store
        .statuses()
        .timeline(Timeline::Mentions(auth.uid), page, count)
        .await?;
    // Nothing by anyone the caller blocks, is blocked by or mutes.
    Ok(json_page(
        &only_visible_hiding(&state, Some(&auth), statuses, crate::hides::FEED).await?,
    ))
}

const TAG_OP: Op = Op::get(
    "/api/v1/timelines/tag/{tag}",
    "timelines",
    "Statuses carrying #tag (any case, without #), newest first",
)
.auth(Auth::Optional)
.params(Params::OrderedPaging)
.reply(Reply::ListOf(Typed::of::<Status>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/timelines/tag/{tag}`: statuses carrying `#tag` (any case,
/// with or without the `#`), newest first or ranked (`order=top`).
pub(crate) async fn tag(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(tag): Path<String>,
    Query(mut q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let order = order(&mut q)?;
    let (page, count) = paging(&q)?;
    let tag = tag.trim_start_matches('#').to_lowercase();
    if tag.is_empty() || tag.chars().count() > crate::http::shared::status_text::MAX_MESSAGE_CHARS {
        return Err(ApiError::invalid(
            "invalid_tag",
            "Give a hashtag, such as rust.",
        ));
    }
    if order == Order::Top {
        let Page::Number(n) = page else {
            return Err(ApiError::invalid(
                "invalid_query",
                "order=top pages with page.",
            ));
        };
        let ranked = state
            .store
            .statuses()
            .ranked_page(&Ranked::Tag(tag), n, count)
            .await?;
        return Ok(ranked_json(
            visible_ranked(&state, viewer.as_ref(), ranked).await?,
        ));
    }
    let statuses = state
        .store
        .statuses()
        .timeline(Timeline::Tag(tag), page, count)
        .await?;
    Ok(json_page(
        &only_visible(&state, viewer.as_ref(), statuses).await?,
    ))
}

const HOME_OP: Op = Op::get(
    "/api/v1/timelines/home",
    "timelines",
    "Your home timeline, newest first",
)
.params(Params::OrderedPaging)
.reply(Reply::ListOf(Typed::of::<Status>()))
.errors(&[400, 401, 503]);

/// `GET /api/v1/timelines/home`: newest first, or ranked (`order=top`).
pub(crate) async fn home(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(mut q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let order = order(&mut q)?;
    let (page, count) = paging(&q)?;
    if order == Order::Top {
        let Page::Number(n) = page else {
            return Err(ApiError::invalid(
                "invalid_query",
                "order=top pages with page.",
            ));
        };
        let ranked = state
            .store
            .statuses()
            .ranked_page(&Ranked::Home(auth.uid), n, count)
            .await?;
        return Ok(ranked_json(ranked));
    }
    let statuses = state
        .store
        .statuses()
        .home_page(auth.uid, page, count)
        .await?;
    Ok(json_page(&statuses))
}

const PROFILE_OP: Op = Op::get(
    "/api/v1/users/{id}/statuses",
    "timelines",
    "A user's profile timeline, newest first",
)
.auth(Auth::Optional)
.params(Params::Paging)
.reply(Reply::ListOf(Typed::of::<Status>()))
.errors(&[400, 401, 403, 404, 503]);

/// `GET /api/v1/users/{id}/statuses`: a user's own statuses, newest first.
pub(crate) async fn profile(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let uid = path_id(&id, "user")?;
    let (page, count) = paging(&q)?;
    // No such user (or one being deleted): 404; read once for the
    // privacy check too.
    let user = state.store.users().get(uid).await?;
    if blocked_by(&state, viewer.as_ref(), uid).await? {
        return Err(ApiError::not_found("No such user's statuses."));
    }
    if !privacy_allows_user(&state, viewer.as_ref(), &user).await? {
        return Err(ApiError::forbidden(
            "This account's statuses are visible to its followers only.",
        ));
    }
    let statuses = state
        .store
        .statuses()
        .timeline(Timeline::Profile(uid), page, count)
        .await?;
    // Reposts of statuses by someone who blocks the caller, and replies to
    // statuses the caller may not see, are not shown.
    let statuses = only_visible(&state, viewer.as_ref(), statuses).await?;
    Ok(json_page(&statuses))
}

/// The ranked entries `viewer` may see (as `only_visible` keeps them).
async fn visible_ranked(
    state: &AppState,
    viewer: Option<&crate::auth::AuthUser>,
    ranked: Vec<RankedEntry>,
) -> ApiResult<Vec<RankedEntry>> {
    let shown: Vec<_> = ranked.iter().map(|(s, c, _)| (s.clone(), *c)).collect();
    let kept = only_visible(state, viewer, shown).await?;
    let ids: std::collections::HashSet<Id> = kept.iter().map(|(s, _)| s.status.id).collect();
    Ok(ranked
        .into_iter()
        .filter(|(s, _, _)| ids.contains(&s.status.id))
        .collect())
}
