//! Notifications: the list (newest first, by type, grouped), the unread
//! count and the read marker ([`store::notifications`](crate::store::entities::notifications); made by
//! [`crate::notifier`]). Each is judged when read: nothing from anyone the
//! reader blocks or mutes or who blocks them, from an account gone or
//! suspended, or about a status the reader may not see now.

use super::shared::extract::{known_params, JsonBody, JsonId};
use super::shared::openapi::{Op, Reply, Typed};
use super::shared::paging::{count_param, uint};
use super::shared::routes::Routes;
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::hides;
use crate::model::GroupRole;
use crate::model::Id;
use crate::model::{Notification, Status, User};
use crate::state::AppState;
use crate::store::entities::notifications::{Stored, MAX_NOTIFICATIONS};
use crate::visibility::{Reach, Sight};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;

/// The types of notification.
pub(crate) const TYPES: [&str; 8] = [
    "follow",
    "follow_request",
    "like",
    "repost",
    "mention",
    "reply",
    "group_request",
    "report_resolved",
];

/// How long a read waits for the notifier to reach the newest event.
const CATCH_UP: Duration = Duration::from_secs(1);

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .route(LIST_OP, list)
        .route(UNREAD_OP, unread)
        .route(READ_OP, read)
        .schema(
            "ReadMarker",
            json!({"type": "object", "required": ["up_to"], "properties": {
                "up_to": {"type": ["string", "integer"], "maxLength": super::shared::extract::MAX_ID_CHARS,
                    "description": "A notification id: everything up to it is read."},
            }}),
        )
}

/// Reads `uid`'s notifications newest first, from below `below`, judged,
/// until `want` are kept or none are left; whether some may be left.
async fn visible(
    state: &AppState,
    auth: &AuthUser,
    mut below: Option<u64>,
    want: usize,
    types: Option<&[String]>,
) -> ApiResult<(Vec<Notification>, bool)> {
    let mut sight = Sight::of(state.store.clone(), Some(auth.uid), Reach::Followers).await?;
    let mut kept = Vec::new();
    // Whether the reader still manages each group a join request named.
    let mut staff_of: HashMap<u64, bool> = HashMap::new();
    let chunk = (want + want / 2 + 4).min(MAX_NOTIFICATIONS);
    loop {
        let stored = state
            .store
            .notifications()
            .below(auth.uid, below, chunk)
            .await?;
        let done = stored.len() < chunk;
        below = stored.last().map(|s| s.id.get());
        let stored: Vec<Stored> = stored
            .into_iter()
            .filter(|s| types.is_none_or(|t| t.contains(&s.kind)))
            .collect();
        let vias: Vec<u64> = stored.iter().filter_map(|s| s.via.map(Id::get)).collect();
        let alive: HashMap<u64, bool> = vias
            .iter()
            .copied()
            .zip(state.store.statuses().alive(&vias).await?)
            .collect();
        let shown = state.store.notifications().hydrate(stored).await?;
        let total = shown.len();
        for (i, (s, n)) in shown.into_iter().enumerate() {
            let account: u64 = s.account.get();
            if state.store.moderation().suspended().contains(account)
                || sight.relations().bits(account) & hides::FEED != 0
            {
                continue;
            }
            if let Some(via) = s.via.map(Id::get) {
                if !alive.get(&via).copied().unwrap_or(false) {
                    continue;
                }
            }
            if let Some(status) = &n.status {
                if !sight.status(status).await? {
                    continue;
                }
            }
            if let Some(gid) = s.group.map(Id::get) {
                // A join request is for the group's staff now, not then.
                let staff = match staff_of.get(&gid) {
                    Some(&b) => b,
                    None => {
                        let role = state.store.groups().standing(gid, auth.uid).await?;
                        let b = role.and_then(|r| r.role).is_some_and(GroupRole::is_staff);
                        staff_of.insert(gid, b);
                        b
                    }
                };
                if !staff {
                    continue;
                }
            }
            kept.push(n);
            if kept.len() == want {
                // More may follow: in this read, or beyond it.
                return Ok((kept, i + 1 < total || !done));
            }
        }
        if done || below.is_none() {
            return Ok((kept, false));
        }
    }
}

/// `types=` as a list, each one of [`TYPES`].
fn types_param(q: &HashMap<String, String>) -> ApiResult<Option<Vec<String>>> {
    let Some(raw) = q.get("types") else {
        return Ok(None);
    };
    let types: Vec<String> = raw
        .split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    if types.is_empty() || types.iter().any(|t| !TYPES.contains(&t.as_str())) {
        return Err(ApiError::invalid(
            "invalid_types",
            format!("types is a comma-separated list of {}.", TYPES.join(", ")),
        ));
    }
    Ok(Some(types))
}

const LIST_OP: Op = Op::get(
    "/api/v1/notifications",
    "notifications",
    "Your notifications, newest first (grouped=true: likes and reposts of one status and follows together)",
)
.query(&[
    ("count", "1-200 (30)."),
    ("max_id", "Notifications with ids up to this one."),
    ("cursor", "next_cursor of the page before."),
    ("types", "Comma-separated types: follow, follow_request, like, repost, mention, reply, group_request, report_resolved."),
    ("grouped", "true: groups of notifications."),
])
.reply(Reply::Of(Typed::of::<NotificationPage>()))
.errors(&[400, 401, 503]);

/// Answer of `GET /api/v1/notifications`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct NotificationPage {
    /// Newest first: notifications, or with `grouped=true` groups of them.
    pub notifications: Vec<NotificationItem>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A notification, or a group of them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub(crate) enum NotificationItem {
    /// One notification.
    One(Notification),
    /// A group (`grouped=true`).
    Group(NotificationGroup),
}

/// Likes or reposts of one status, or follows, together; any other
/// notification alone.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct NotificationGroup {
    /// The id of its newest notification.
    #[schema(value_type = String)]
    pub id: Id,
    /// The notifications' type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Who did it: the newest three.
    pub accounts: Vec<User>,
    /// How many notifications it holds.
    pub count: usize,
    /// When the newest happened (seconds since the epoch).
    pub latest_at: f64,
    /// The status it is about, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// For a `group_request`: the group asked to join.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub group_id: Option<Id>,
    /// For a `report_resolved`: the report.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub report_id: Option<Id>,
}

/// `GET /api/v1/notifications`.
pub(crate) async fn list(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<NotificationPage>> {
    known_params(&q, &["count", "max_id", "cursor", "types", "grouped"])?;
    let count = count_param(&q, 30)?;
    let types = types_param(&q)?;
    let bad_id = |name: &str| {
        ApiError::invalid(
            if name == "cursor" {
                "invalid_cursor"
            } else {
                "invalid_max_id"
            },
            format!("{name} must be a notification id."),
        )
    };
    let below = match (q.get("max_id"), q.get("cursor")) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "invalid_query",
                "Give max_id or cursor, not both.",
            ))
        }
        (Some(m), None) => Some(uint(m).ok_or_else(|| bad_id("max_id"))?.saturating_add(1)),
        (None, Some(c)) => Some(uint(c).ok_or_else(|| bad_id("cursor"))?),
        (None, None) => None,
    };
    let grouped = match q.get("grouped").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_grouped",
                "grouped must be true or false.",
            ))
        }
    };
    crate::notifier::caught_up(&state.store, CATCH_UP).await;
    if grouped {
        let (all, _) = visible(&state, &auth, None, MAX_NOTIFICATIONS, types.as_deref()).await?;
        let mut page: Vec<NotificationGroup> = group(all)
            .into_iter()
            .filter(|g| below.is_none_or(|b| g.id.get() < b))
            .take(count + 1)
            .collect();
        let more = page.len() > count;
        page.truncate(count);
        let next = more
            .then(|| page.last().map(|g| g.id.to_string()))
            .flatten();
        return Ok(Json(NotificationPage {
            notifications: page.into_iter().map(NotificationItem::Group).collect(),
            next_cursor: next,
        }));
    }
    let (page, more) = visible(&state, &auth, below, count, types.as_deref()).await?;
    let next = more
        .then(|| page.last().map(|n| n.id.to_string()))
        .flatten();
    Ok(Json(NotificationPage {
        notifications: page.into_iter().map(NotificationItem::One).collect(),
        next_cursor: next,
    }))
}

/// Likes and reposts of one status, and follows, grouped; every other
/// notification a group of one. Newest group first; each group's id is its
/// newest notification's.
fn group(all: Vec<Notification>) -> Vec<NotificationGroup> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<Notification>> = HashMap::new();
    for n in all {
        let key = match n.kind.as_str() {
            "like" | "repost" => match &n.status {
                Some(s) => format!("{}:{}", n.kind, s.id),
                None => format!("{}:", n.kind),
            },
            "follow" => "follow".to_string(),
            _ => format!("one:{}", n.id),
        };
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(n);
    }
    order
        .into_iter()
        .filter_map(|key| {
            let members = groups.remove(&key)?;
            let count = members.len();
            let accounts = members.iter().take(3).map(|n| n.account.clone()).collect();
            let newest = members.into_iter().next()?;
            Some(NotificationGroup {
                id: newest.id,
                kind: newest.kind,
                accounts,
                count,
                latest_at: newest.at,
                status: newest.status,
                group_id: newest.group_id,
                report_id: newest.report_id,
            })
        })
        .collect()
}

const UNREAD_OP: Op = Op::get(
    "/api/v1/notifications/unread",
    "notifications",
    "How many of your notifications are newer than your read marker",
)
.reply(Reply::Of(Typed::of::<Unread>()))
.errors(&[401, 503]);

/// Answer of `GET /api/v1/notifications/unread`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Unread {
    /// Notifications newer than the read marker.
    pub count: u64,
}

/// `GET /api/v1/notifications/unread`.
pub(crate) async fn unread(
    State(state): State<AppState>,
    auth: AuthUser,
) -> ApiResult<Json<Unread>> {
    crate::notifier::caught_up(&state.store, CATCH_UP).await;
    let marker = state.store.notifications().marker(auth.uid).await?;
    let (all, _) = visible(&state, &auth, None, MAX_NOTIFICATIONS, None).await?;
    let count = all.iter().filter(|n| n.id.get() > marker).count();
    Ok(Json(Unread {
        count: count as u64,
    }))
}

/// Body of `POST /api/v1/notifications/read`.
#[derive(Debug, Deserialize)]
pub(crate) struct ReadMarker {
    /// A notification id.
    pub up_to: JsonId,
}

const READ_OP: Op = Op::post(
    "/api/v1/notifications/read",
    "notifications",
    "Mark your notifications read up to an id: one marker per user, every session sees it, it never moves back",
)
.body("ReadMarker")
.status(204)
.errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `POST /api/v1/notifications/read`.
pub(crate) async fn read(
    State(state): State<AppState>,
    auth: AuthUser,
    JsonBody(body): JsonBody<ReadMarker>,
) -> ApiResult<StatusCode> {
    auth.require(SCOPE_WRITE)?;
    let id = body
        .up_to
        .parse()
        .filter(|_| body.up_to.is_whole())
        .ok_or_else(|| ApiError::invalid("invalid_id", "up_to must be a notification id."))?;
    state.rate.write(auth.uid).await?;
    state.store.notifications().mark_read(auth.uid, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
