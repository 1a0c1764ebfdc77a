//! Reports of abuse and spam, filed by any user about a status or a user
//! they can see; admins work the queue (`admin.rs`).

use super::shared::extract::{JsonBody, JsonId};
use super::shared::openapi::{Op, Reply, Typed};
use super::shared::routes::Routes;
use super::shared::visibility::visible;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::model::Id;
use crate::model::Report;
use crate::state::AppState;
use crate::store::entities::moderation::REASONS;
use crate::store::StoreError;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

/// Longest comment, in characters.
pub(crate) const MAX_COMMENT_CHARS: usize = 1000;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .schema(
            "NewReport",
            json!({"type": "object", "required": ["reason"],
                "description": "Exactly one of status_id and user_id.",
                "oneOf": [
                    {"required": ["status_id"], "not": {"required": ["user_id"]}},
                    {"required": ["user_id"], "not": {"required": ["status_id"]}},
                ],
                "properties": {
                    "status_id": {"oneOf": [{"type": "string", "pattern": "^[0-9]{1,20}$"}, {"type": "integer", "minimum": 0}]},
                    "user_id": {"oneOf": [{"type": "string", "pattern": "^[0-9]{1,20}$"}, {"type": "integer", "minimum": 0}]},
                    "reason": {"type": "string", "enum": REASONS},
                    "comment": {"type": ["string", "null"], "maxLength": MAX_COMMENT_CHARS,
                        "pattern": super::shared::openapi::readable_pattern()},
                }}),
        )
        .route(CREATE_OP, create)
}

/// Body of `POST /api/v1/reports`.
#[derive(Debug, Deserialize)]
pub(crate) struct NewReport {
    /// The status reported (`null` is not "absent": exactly one is sent).
    #[serde(default, deserialize_with = "present")]
    pub status_id: Option<Value>,
    /// The user reported.
    #[serde(default, deserialize_with = "present")]
    pub user_id: Option<Value>,
    /// `spam`, `abuse`, `illegal` or `other`.
    pub reason: String,
    /// At most 1,000 characters.
    pub comment: Option<String>,
}

/// A field that was sent, `null` included (absent: `None`, by `default`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// What a report is about, as named.
enum Target {
    /// A status (reported with its author).
    Status(u64),
    /// A user.
    User(u64),
}

impl NewReport {
    /// Checks the reason and comment, and answers what is reported: exactly
    /// one of `status_id` and `user_id` (not null; an id that names nothing
    /// is 404).
    fn target(&self) -> ApiResult<Target> {
        if !REASONS.contains(&self.reason.as_str()) {
            return Err(ApiError::invalid(
                "invalid_reason",
                "reason must be spam, abuse, illegal or other.",
            ));
        }
        if self.comment.as_ref().is_some_and(|c| {
            c.chars().count() > MAX_COMMENT_CHARS || crate::text::unreadable(c).is_some()
        }) {
            return Err(ApiError::invalid(
                "invalid_comment",
                format!("comment must be at most {MAX_COMMENT_CHARS} characters, hold a visible character and no control characters but new lines and tabs."),
            ));
        }
        let id = |v: &Value| {
            serde_json::from_value::<JsonId>(v.clone())
                .ok()
                .and_then(|j| j.parse())
                .filter(|id| *id > 0)
        };
        if matches!(self.status_id, Some(Value::Null)) || matches!(self.user_id, Some(Value::Null))
        {
            return Err(ApiError::invalid(
                "invalid_report",
                "Give exactly one of status_id and user_id (not null).",
            ));
        }
        match (&self.status_id, &self.user_id) {
            (Some(s), None) => Ok(Target::Status(
                id(s).ok_or_else(|| ApiError::not_found("No such status."))?,
            )),
            (None, Some(u)) => Ok(Target::User(
                id(u).ok_or_else(|| ApiError::not_found("No such user."))?,
            )),
            _ => Err(ApiError::invalid(
                "invalid_report",
                "Give exactly one of status_id and user_id.",
            )),
        }
    }
}

const CREATE_OP: Op = Op::post(
    "/api/v1/reports",
    "moderation",
    "Report a status or a user you can see",
)
.body("NewReport")
.status(201)
.reply(Reply::Of(Typed::of::<Report>()))
.errors(&[400, 401, 403, 404, 408, 413, 415, 429, 503]);

/// `POST /api/v1/reports`.
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: AuthUser,
    JsonBody(body): JsonBody<NewReport>,
) -> ApiResult<Response> {
    auth.require(SCOPE_WRITE)?;
    let (user_id, status_id) = match body.target()? {
        Target::Status(sid) => {
            let status = visible(&state, Some(&auth), sid).await?;
            (status.uid, Some(status.id))
        }
        Target::User(uid) => match state.store.users().get(uid).await {
            Ok(user) => (user.id, None),
            Err(StoreError::NotFound(_)) => return Err(ApiError::not_found("No such user.")),
            Err(e) => return Err(e.into()),
        },
    };
    if user_id == auth.uid {
        return Err(ApiError::invalid(
            "cannot_report_yourself",
            "You cannot report yourself or your own statuses.",
        ));
    }
    state.rate.write(auth.uid).await?;
    let report = Report {
        id: Id(0),
        reporter: Id(auth.uid),
        user_id,
        status_id,
        reason: body.reason,
        comment: body.comment,
        state: "open".into(),
        created: 0.0,
        action: None,
        resolved_by: None,
        resolved_at: None,
        note: None,
    };
    match state
        .store
        .moderation()
        .add_report(report, state.cfg.max_open_reports)
        .await?
    {
        Some(report) => Ok((StatusCode::CREATED, Json(report)).into_response()),
        None => Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "report_queue_full",
            "The report queue is full; try again later.",
        )
        .retry_after(600)),
    }
}
