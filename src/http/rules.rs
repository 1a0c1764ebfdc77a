//! Filter rules kept per user: add (with duplicates answered, a dry run,
//! the per-user cap), delete, list. Items are checked by `rule_items`.

use super::shared::extract::known_params;
use super::shared::extract::JsonBody;
use super::shared::openapi::{Op, Reply, Typed};
use super::shared::routes::Routes;
use super::shared::rule_items::{check_items, MAX_TAG_CHARS};
use crate::auth::{AuthUser, SCOPE_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store::entities::rules::StoredRule;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Routes of this resource, each with its OpenAPI operation.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .schema(
            "RulesRequest",
            json!({
                "type": "object",
                "description": "Exactly one of add and delete, each a non-empty list.",
                "oneOf": [
                    {"required": ["add"], "not": {"required": ["delete"]}},
                    {"required": ["delete"], "not": {"required": ["add"]}},
                ],
                "properties": {
                    "add": {"type": "array", "minItems": 1, "items": {
                        "type": "object", "required": ["value"],
                        "properties": {
                            "value": {"type": "string", "minLength": 1, "maxLength": 1024},
                            "tag": {"type": ["string", "null"], "maxLength": MAX_TAG_CHARS},
                        }}},
                    "delete": {"type": "object", "required": ["ids"], "properties": {
                        "ids": {"type": "array", "minItems": 1, "items": {"type": "string"}}}},
                },
            }),
        )
        .route(CHANGE_OP, change)
        .route(LIST_OP, list)
}

/// Answer of `GET /api/v1/stream/rules`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct RuleList {
    /// The caller's rules, oldest first.
    pub data: Vec<StoredRule>,
}

/// Answer of a change of rules.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct RulesChanged {
    /// An add: one rule per item, in order (one that existed already is
    /// answered as it is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<StoredRule>>,
    /// What changed.
    pub meta: RulesMeta,
}

/// What a change of rules did.
#[derive(Debug, Default, Serialize, utoipa::ToSchema)]
pub(crate) struct RulesMeta {
    /// An add: how many rules it created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<usize>,
    /// A delete: the ids deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Vec<String>>,
    /// A delete: the ids that were not the caller's rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_found: Option<Vec<String>>,
}

fn malformed(message: &str) -> ApiError {
    ApiError::invalid("invalid_request", message.to_string())
}

const CHANGE_OP: Op = Op::post(
    "/api/v1/stream/rules",
    "streams",
    "Add rules ({add: [{value, tag?}]}: 201, or 200 when nothing was created) or delete them ({delete: {ids}}); dry_run=true only validates",
)
.query(&[("dry_run", "true: validate and answer as the call would, changing nothing")])
.body("RulesRequest")
.status(201)
.reply(Reply::Of(Typed::of::<RulesChanged>()))
.errors(&[400, 401, 403, 408, 413, 415, 429, 503]);

/// `POST /api/v1/stream/rules`.
pub(crate) async fn change(
    State(state): State<AppState>,
    auth: AuthUser,
    Query(q): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<Value>,
) -> ApiResult<Response> {
    auth.require(SCOPE_WRITE)?;
    known_params(&q, &["dry_run"])?;
    let dry_run = match q.get("dry_run").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_dry_run",
                "dry_run must be true or false.",
            ))
        }
    };
    let Some(obj) = body.as_object() else {
        return Err(malformed("The body must be an object with add or delete."));
    };
    match (obj.get("add"), obj.get("delete")) {
        (Some(add), None) => add_rules(&state, &auth, add, dry_run).await,
        (None, Some(delete)) => delete_rules(&state, &auth, delete, dry_run).await,
        _ => Err(malformed("Send exactly one of add and delete.")),
    }
}

async fn add_rules(
    state: &AppState,
    auth: &AuthUser,
    add: &Value,
    dry_run: bool,
) -> ApiResult<Response> {
    let items = match add.as_array() {
        Some(items) if !items.is_empty() => items,
        _ => return Err(malformed("add must be a non-empty list of {value, tag}.")),
    };
    state.rate.write(auth.uid).await?;
    let checked: Vec<(String, Option<String>)> = check_items(state, "rule", items, false)
        .await?
        .into_iter()
        .map(|c| (c.value, c.tag))
        .collect();
    let added = state.store.rules().add(auth.uid, &checked, dry_run).await?;
    let status = if added.created > 0 {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(RulesChanged {
            data: Some(added.rules),
            meta: RulesMeta {
                created: Some(added.created),
                ..RulesMeta::default()
            },
        }),
    )
        .into_response())
}

async fn delete_rules(
    state: &AppState,
    auth: &AuthUser,
    delete: &Value,
    dry_run: bool,
) -> ApiResult<Response> {
    let ids: Option<Vec<String>> = delete.get("ids").and_then(Value::as_array).map(|ids| {
        ids.iter()
            .filter_map(|id| match id {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .collect()
    });
    let ids = match ids {
        Some(ids)
            if !ids.is_empty()
                && delete["ids"]
                    .as_array()
                    .is_some_and(|a| a.len() == ids.len()) =>
        {
            ids
        }
        _ => return Err(malformed("delete must be {\"ids\": [id, ...]}, not empty.")),
    };
    state.rate.write(auth.uid).await?;
    let (deleted, not_found) = state.store.rules().delete(auth.uid, &ids, dry_run).await?;
    Ok((
        StatusCode::OK,
        Json(RulesChanged {
            data: None,
            meta: RulesMeta {
                deleted: Some(deleted),
                not_found: Some(not_found),
                ..RulesMeta::default()
            },
        }),
    )
        .into_response())
}

const LIST_OP: Op = Op::get(
    "/api/v1/stream/rules",
    "streams",
    "Your filter rules, oldest first",
)
.reply(Reply::Of(Typed::of::<RuleList>()))
.errors(&[401, 503]);

/// `GET /api/v1/stream/rules`.
pub(crate) async fn list(
    State(state): State<AppState>,
    auth: AuthUser,
) -> ApiResult<Json<RuleList>> {
    Ok(Json(RuleList {
        data: state.store.rules().all(auth.uid).await?,
    }))
}
