//! The admin paths (`/api/v1/admin/`): the report queue and its
//! resolution, removing any status, suspending accounts, the audit log.
//! A token with the `admin` scope (minted by the operator: `firehose token
//! --user ID --scope admin`) is needed and suffices; any other token gets
//! 403. Every change is one audit entry; a call that changes nothing adds
//! none.

use super::shared::extract::{detached, path_id, JsonBody};
use super::shared::openapi::{Op, Params, Reply, Typed};
use super::shared::paging::user_paging;
use super::shared::routes::Routes;
use crate::auth::{AuthUser, SCOPE_ADMIN};
use crate::error::{ApiError, ApiResult};
use crate::model::{now, AuditAction, Report, User};
use crate::state::AppState;
use crate::store::entities::moderation::{ReportState, Resolution as How, Resolved, ACTIONS};
use crate::store::StoreError;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;

/// Longest resolution note, in characters.
pub(crate) const MAX_NOTE_CHARS: usize = 1000;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .schema(
            "Resolution",
            json!({"type": "object", "required": ["action"], "properties": {
                "action": {"type": "string", "enum": ACTIONS},
                "note": {"type": ["string", "null"], "maxLength": MAX_NOTE_CHARS},
            }}),
        )
        .route(REPORTS_OP, reports)
        .route(REPORT_OP, report)
        .route(RESOLVE_OP, resolve)
        .route(REMOVE_STATUS_OP, remove_status)
        .route(USER_OP, user)
        .route(SUSPEND_OP, suspend)
        .route(UNSUSPEND_OP, unsuspend)
        .route(AUDIT_OP, audit)
}

/// A page of the report queue.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ReportPage {
    /// Newest first.
    pub reports: Vec<Report>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A page of the audit log.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct AuditPage {
    /// Newest first.
    pub actions: Vec<AuditAction>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Answer of suspend and unsuspend.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Suspended {
    /// Whether the user is suspended now.
    pub suspended: bool,
}

/// 403 unless the token has the `admin` scope.
fn admin(auth: &AuthUser) -> ApiResult<()> {
    auth.require(SCOPE_ADMIN)
}

const REPORTS_OP: Op = Op::get(
    "/api/v1/admin/reports",
    "moderation",
    "The report queue, newest first (state open, the default, or resolved)",
)
.query(&[("state", "open (default) or resolved")])
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<ReportPage>()))
.errors(&[400, 401, 403, 503]);

/// `GET /api/v1/admin/reports`.
pub(crate) async fn reports(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(mut q): Query<HashMap<String, String>>,
) -> ApiResult<Json<ReportPage>> {
    admin(&auth)?;
    let which = match q.remove("state").as_deref() {
        None | Some("open") => ReportState::Open,
        Some("resolved") => ReportState::Resolved,
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_state",
                "state must be open or resolved.",
            ))
        }
    };
    let (cursor, count) = user_paging(&q)?;
    let (reports, next_cursor) = state
        .store
        .moderation()
        .report_page(which, &cursor, count)
        .await?;
    Ok(Json(ReportPage {
        reports,
        next_cursor,
    }))
}

const REPORT_OP: Op = Op::get("/api/v1/admin/reports/{id}", "moderation", "One report")
    .reply(Reply::Of(Typed::of::<Report>()))
    .errors(&[401, 403, 404, 503]);

async fn find_report(state: &AppState, raw: &str) -> ApiResult<Report> {
    let id = path_id(raw, "report")?;
    state
        .store
        .moderation()
        .report(id)
        .await?
        .ok_or_else(|| ApiError::not_found("No such report."))
}

/// `GET /api/v1/admin/reports/{id}`.
pub(crate) async fn report(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Report>> {
    admin(&auth)?;
    Ok(Json(find_report(&state, &id).await?))
}

/// Body of `POST /api/v1/admin/reports/{id}/resolve`.
#[derive(Debug, Deserialize)]
pub(crate) struct Resolution {
    /// `none`, `remove_status` or `suspend_user`.
    pub action: String,
    /// At most 1,000 characters.
    pub note: Option<String>,
}

const RESOLVE_OP: Op = Op::post(
    "/api/v1/admin/reports/{id}/resolve",
    "moderation",
    "Resolve a report with an action (none, remove_status, suspend_user); already resolved: 409",
)
.body("Resolution")
.reply(Reply::Of(Typed::of::<Report>()))
.errors(&[400, 401, 403, 404, 408, 409, 413, 415, 503]);

fn already() -> ApiError {
    ApiError::conflict("already_resolved", "The report is resolved already.")
}

/// `POST /api/v1/admin/reports/{id}/resolve`.
pub(crate) async fn resolve(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Resolution>,
) -> ApiResult<Json<Report>> {
    admin(&auth)?;
    if !ACTIONS.contains(&body.action.as_str()) {
        return Err(ApiError::invalid(
            "invalid_action",
            "action must be none, remove_status or suspend_user.",
        ));
    }
    if body
        .note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS)
    {
        return Err(ApiError::invalid(
            "invalid_note",
            format!("note must be at most {MAX_NOTE_CHARS} characters."),
        ));
    }
    let report = find_report(&state, &id).await?;
    if report.state != "open" {
        return Err(already());
    }
    let (audit_action, target) = match (body.action.as_str(), &report.status_id) {
        ("remove_status", None) => {
            return Err(ApiError::invalid(
                "invalid_action",
                "A user report has no status to remove.",
            ))
        }
        ("remove_status", Some(sid)) => {
            remove(&state, sid.get()).await?;
            ("remove_status", *sid)
        }
        ("suspend_user", _) => {
            let uid: u64 = report.user_id.get();
            let keep = state.cfg.max_audit_entries;
            match state
                .store
                .moderation()
                .set_suspended(uid, true, auth.uid, false, keep)
                .await
            {
                Ok(_) | Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
            ("suspend_user", report.user_id)
        }
        (_, status) => ("dismiss_report", status.unwrap_or(report.user_id)),
    };
    let store = state.store.clone();
    let keep = state.cfg.max_audit_entries;
    let outcome = detached(async move {
        Ok(store
            .moderation()
            .resolve_report(
                &report,
                auth.uid,
                How {
                    action: body.action,
                    note: body.note,
                    audit_action,
                    target,
                },
                keep,
            )
            .await?)
    })
    .await?;
    match outcome {
        Resolved::Done(report) => Ok(Json(*report)),
        Resolved::Already => Err(already()),
        Resolved::Missing => Err(ApiError::not_found("No such report.")),
    }
}

/// Deletes status `sid` as its author would: `Ok(false)` when it is gone
/// already.
async fn remove(state: &AppState, sid: u64) -> ApiResult<bool> {
    let status = match state.store.statuses().get(sid).await {
        Ok(s) => s,
        Err(StoreError::NotFound(_)) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let author: u64 = status.uid.get();
    let private = match state.store.users().get_any(author).await {
        Ok(u) => u.private,
        Err(StoreError::NotFound(_)) => false,
        Err(e) => return Err(e.into()),
    };
    let store = state.store.clone();
    match detached(async move { Ok(store.statuses().delete(sid, author, private, now()).await?) })
        .await
    {
        Ok(()) => Ok(true),
        Err(e) if e.status == StatusCode::NOT_FOUND => Ok(false),
        Err(e) => Err(e),
    }
}

const REMOVE_STATUS_OP: Op = Op::delete(
    "/api/v1/admin/statuses/{id}",
    "moderation",
    "Remove any status (as its author's delete: events, cascades)",
)
.status(204)
.errors(&[401, 403, 404, 503]);

/// `DELETE /api/v1/admin/statuses/{id}`.
pub(crate) async fn remove_status(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    admin(&auth)?;
    let sid = path_id(&id, "status")?;
    if !remove(&state, sid).await? {
        return Err(ApiError::not_found("No such status."));
    }
    state
        .store
        .moderation()
        .audit_add(auth.uid, "remove_status", sid, state.cfg.max_audit_entries)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

const USER_OP: Op = Op::get(
    "/api/v1/admin/users/{id}",
    "moderation",
    "A user with suspended (suspended users too)",
)
.reply(Reply::Of(Typed::of::<User>()))
.errors(&[401, 403, 404, 503]);

/// `GET /api/v1/admin/users/{id}`.
pub(crate) async fn user(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<User>> {
    admin(&auth)?;
    let uid = path_id(&id, "user")?;
    match state.store.users().get_any(uid).await {
        Ok(u) => Ok(Json(u)),
        Err(StoreError::NotFound(_)) => Err(ApiError::not_found("No such user.")),
        Err(e) => Err(e.into()),
    }
}

const SUSPEND_OP: Op = Op::post(
    "/api/v1/admin/users/{id}/suspend",
    "moderation",
    "Suspend a user (their sessions and streams end at once); idempotent",
)
.reply(Reply::Of(Typed::of::<Suspended>()))
.errors(&[401, 403, 404, 503]);

const UNSUSPEND_OP: Op = Op::delete(
    "/api/v1/admin/users/{id}/suspend",
    "moderation",
    "Lift a suspension; idempotent",
)
.reply(Reply::Of(Typed::of::<Suspended>()))
.errors(&[401, 403, 404, 503]);

/// `POST /api/v1/admin/users/{id}/suspend`.
pub(crate) async fn suspend(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Suspended>> {
    set(state, auth, &id, true).await
}

/// `DELETE /api/v1/admin/users/{id}/suspend`.
pub(crate) async fn unsuspend(
    State(state): State<AppState>,
    auth: AuthUser,
    Path(id): Path<String>,
) -> ApiResult<Json<Suspended>> {
    set(state, auth, &id, false).await
}

async fn set(state: AppState, auth: AuthUser, id: &str, on: bool) -> ApiResult<Json<Suspended>> {
    admin(&auth)?;
    let uid = path_id(id, "user")?;
    let store = state.store.clone();
    let keep = state.cfg.max_audit_entries;
    let admin = auth.uid;
    detached(async move {
        Ok(store
            .moderation()
            .set_suspended(uid, on, admin, true, keep)
            .await?)
    })
    .await
    .map_err(|e| match e.status {
        StatusCode::NOT_FOUND => ApiError::not_found("No such user."),
        _ => e,
    })?;
    Ok(Json(Suspended { suspended: on }))
}

const AUDIT_OP: Op = Op::get(
    "/api/v1/admin/audit",
    "moderation",
    "The audit log, newest first: one entry per change an admin made",
)
.params(Params::FollowPaging)
.reply(Reply::Of(Typed::of::<AuditPage>()))
.errors(&[400, 401, 403, 503]);

/// `GET /api/v1/admin/audit`.
pub(crate) async fn audit(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<AuditPage>> {
    admin(&auth)?;
    let (cursor, count) = user_paging(&q)?;
    let (actions, next_cursor) = state.store.moderation().audit_page(&cursor, count).await?;
    Ok(Json(AuditPage {
        actions,
        next_cursor,
    }))
}
