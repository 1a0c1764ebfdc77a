//! Edits: a status's author changes its text within an hour of posting, at
//! most ten times (`store`'s edit chain), and anyone who may see the status
//! reads its versions.

use super::shared::extract::idempotency_key;
use super::shared::extract::{detached, path_id, JsonBody};
use super::shared::openapi::{Auth, Op, Reply, Typed};
use super::shared::routes::Routes;
use super::shared::status_text::resolve_mentions;
use super::shared::visibility::visible;
use crate::auth::{AuthUser, MaybeUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::model::Id;
use crate::model::{now, Status, Version};
use crate::state::AppState;
use crate::store::{EditRefused, Edited, EDIT_WINDOW, MAX_EDITS};
use crate::text;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(EDIT_OP, edit)
        .route(HISTORY_OP, history)
        .schema(
            "EditStatus",
            json!({"type": "object", "required": ["message"], "properties": {
                "message": {"type": "string", "minLength": 1, "maxLength": crate::http::shared::status_text::MAX_MESSAGE_CHARS,
                    "pattern": super::shared::openapi::readable_pattern(),
                    "description": "1-280 characters (Unicode scalar values), not only white space."},
            }}),
        )
}

/// Body of `PATCH /api/v1/statuses/{id}`.
#[derive(Debug, Deserialize)]
pub(crate) struct EditStatus {
    /// The new text, 1-280 characters.
    pub message: String,
}

const EDIT_OP: Op = Op::patch(
    "/api/v1/statuses/{id}",
    "statuses",
    "Edit your status: within 60 minutes of posting (then 403 edit_window_passed), at most 10 times (then 400 too_many_edits); honours Idempotency-Key",
)
.body("EditStatus")
.reply(Reply::Of(Typed::of::<Status>()))
.errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `PATCH /api/v1/statuses/{id}`: the status as edited, with `edited_at`.
pub(crate) async fn edit(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<EditStatus>,
) -> ApiResult<Json<Status>> {
    auth.require(SCOPE_WRITE)?;
    let sid = path_id(&id, "status")?;
    let idem = idempotency_key(&headers)?;
    let n = body.message.chars().count();
    if n == 0 || n > crate::http::shared::status_text::MAX_MESSAGE_CHARS {
        return Err(ApiError::invalid(
            "invalid_message",
            "message must be 1 to 280 characters.",
        ));
    }
    if let Some(why) = text::unreadable(&body.message) {
        return Err(ApiError::invalid(
            "invalid_message",
            format!("message {why}."),
        ));
    }
    state.rate.write(auth.uid).await?;
    // Someone else's status answers as it would to any reader: 404 when
    // they may not see it, else 403.
    let status = visible(&state, Some(&auth), sid).await?;
    let private_group = if status.group_private {
        status.group_id.map(Id::get)
    } else {
        None
    };
    let audience = state.store.statuses().audience_now(&status).await?;
    let (mentions, mentioned) =
        resolve_mentions(&state, &auth, &body.message, audience, private_group).await?;
    let hashtags = text::hashtags(&body.message);
    let store = state.store.clone();
    let (uid, private) = (auth.uid, auth.private);
    let edited = detached(async move {
        Ok(store
            .statuses()
            .edit(
                sid,
                uid,
                &body.message,
                hashtags,
                mentions,
                mentioned,
                private,
                now(),
                idem.as_deref(),
            )
            .await?)
    })
    .await?;
    match edited {
        Edited::Done(_) => Ok(Json(visible(&state, Some(&auth), sid).await?)),
        Edited::Refused(why) => Err(refusal(why)),
    }
}

/// An edit refused, in the contract's shape.
fn refusal(why: EditRefused) -> ApiError {
    match why {
        EditRefused::Missing => ApiError::not_found("No such status."),
        EditRefused::NotAuthor => ApiError::forbidden("Only the author may edit a status."),
        EditRefused::Repost => ApiError::forbidden("A repost has no text of its own to edit."),
        EditRefused::Window => ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "edit_window_passed",
            format!(
                "A status may be edited within {} minutes of posting.",
                EDIT_WINDOW / 60.0
            ),
        ),
        EditRefused::Limit => ApiError::invalid(
            "too_many_edits",
            format!("A status may be edited at most {MAX_EDITS} times."),
        ),
    }
}

const HISTORY_OP: Op = Op::get(
    "/api/v1/statuses/{id}/history",
    "statuses",
    "A status's versions, oldest first: as posted, then each edit (one if never edited)",
)
.auth(Auth::Optional)
.reply(Reply::Of(Typed::of::<Versions>()))
.errors(&[401, 403, 404, 503]);

/// Answer of a status's history.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Versions {
    /// Oldest first: as posted, then each edit.
    pub versions: Vec<Version>,
}

/// `GET /api/v1/statuses/{id}/history`: for whoever may see the status.
pub(crate) async fn history(
    State(state): State<AppState>,
    MaybeUser(viewer): MaybeUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Versions>> {
    let sid = path_id(&id, "status")?;
    let status = visible(&state, viewer.as_ref(), sid).await?;
    let mut versions = state.store.statuses().versions(sid).await?;
    if versions.is_empty() {
        versions.push(Version {
            message: status.message,
            hashtags: status.hashtags,
            mentions: status.mentions,
            at: status.posted,
        });
    }
    Ok(Json(Versions { versions }))
}
