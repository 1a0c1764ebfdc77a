//! The OpenAPI 3.1 document, built from the route table below and the
//! request and response types' `utoipa::ToSchema` derivations.
//!
//! A test reads every `.route(...)` in `src/http/` and fails when one is
//! missing from this document.

use super::follows::{Batch, BatchReply, UserPage};
use super::sessions::{Login, LoginReply, SessionInfo};
use super::statuses::CreateStatus;
use super::users::{CreateUser, UpdateMe};
use crate::model::{Status, User};
use serde_json::{json, Map, Value};
use utoipa::PartialSchema;

/// Who may call an operation.
#[derive(Clone, Copy, PartialEq)]
enum Auth {
    None,
    Optional,
    Bearer,
    Stream,
}

struct Op {
    method: &'static str,
    path: &'static str,
    tag: &'static str,
    summary: &'static str,
    auth: Auth,
    query: &'static [(&'static str, &'static str)],
    body: Option<&'static str>,
    status: u16,
    reply: Reply,
}

#[derive(Clone, Copy)]
enum Reply {
    Empty,
    Schema(&'static str),
    List(&'static str),
    Inline(&'static str),
    Text(&'static str),
    Stream,
}

const PAGING: &[(&str, &str)] = &[
    ("count", "Entries per page, 1-200 (default 30)."),
    ("page", "1-based page number."),
    ("max_id", "Only statuses with ids up to this one."),
];
const FOLLOW_PAGING: &[(&str, &str)] = &[
    ("count", "Users per page, 1-200 (default 20)."),
    ("cursor", "next_cursor of the previous page."),
];
const RESUME: &[(&str, &str)] = &[
    (
        "access_token",
        "The JWT, for clients that cannot set headers (never logged).",
    ),
    (
        "last_event_id",
        "Replay matching events after this id, then go live (also the Last-Event-ID header).",
    ),
    (
        "count",
        "First replay the newest N matching events (N <= 1000).",
    ),
];

const OPS: &[Op] = &[
    Op { method: "post", path: "/api/v1/users", tag: "users", summary: "Sign up", auth: Auth::None, query: &[], body: Some("CreateUser"), status: 201, reply: Reply::Schema("User") },
    Op { method: "get", path: "/api/v1/users/{id}", tag: "users", summary: "A user", auth: Auth::Optional, query: &[], body: None, status: 200, reply: Reply::Schema("User") },
    Op { method: "get", path: "/api/v1/users/lookup", tag: "users", summary: "Find a user by exactly one of login, email or any unique field", auth: Auth::Optional, query: &[("login", "A login, any case."), ("email", "An email, any case."), ("any", "A login or an email.")], body: None, status: 200, reply: Reply::Schema("User") },
    Op { method: "get", path: "/api/v1/me", tag: "users", summary: "The caller, with email", auth: Auth::Bearer, query: &[], body: None, status: 200, reply: Reply::Schema("User") },
    Op { method: "patch", path: "/api/v1/me", tag: "users", summary: "Change name or the private flag", auth: Auth::Bearer, query: &[], body: Some("UpdateMe"), status: 200, reply: Reply::Schema("User") },
    Op { method: "post", path: "/api/v1/sessions", tag: "sessions", summary: "Log in with login or email", auth: Auth::None, query: &[], body: Some("Login"), status: 201, reply: Reply::Schema("LoginReply") },
    Op { method: "get", path: "/api/v1/sessions/current", tag: "sessions", summary: "The current session: scopes and recently viewed statuses", auth: Auth::Bearer, query: &[], body: None, status: 200, reply: Reply::Schema("SessionInfo") },
    Op { method: "delete", path: "/api/v1/sessions/current", tag: "sessions", summary: "Log out: the token stops working and its streams close", auth: Auth::Bearer, query: &[], body: None, status: 204, reply: Reply::Empty },
    Op { method: "post", path: "/api/v1/statuses", tag: "statuses", summary: "Post a status", auth: Auth::Bearer, query: &[], body: Some("CreateStatus"), status: 201, reply: Reply::Schema("Status") },
    Op { method: "get", path: "/api/v1/statuses/{id}", tag: "statuses", summary: "A status (recorded as viewed when a token is sent)", auth: Auth::Optional, query: &[], body: None, status: 200, reply: Reply::Schema("Status") },
    Op { method: "delete", path: "/api/v1/statuses/{id}", tag: "statuses", summary: "Delete your status", auth: Auth::Bearer, query: &[], body: None, status: 204, reply: Reply::Empty },
    Op { method: "get", path: "/api/v1/timelines/home", tag: "timelines", summary: "Your home timeline, newest first", auth: Auth::Bearer, query: PAGING, body: None, status: 200, reply: Reply::List("Status") },
    Op { method: "get", path: "/api/v1/users/{id}/statuses", tag: "timelines", summary: "A user's profile timeline, newest first", auth: Auth::Optional, query: PAGING, body: None, status: 200, reply: Reply::List("Status") },
    Op { method: "post", path: "/api/v1/users/{id}/follow", tag: "follows", summary: "Follow a user (409 when already following)", auth: Auth::Bearer, query: &[], body: None, status: 200, reply: Reply::Inline(r#"{"type":"object","properties":{"following":{"type":"boolean"}}}"#) },
    Op { method: "delete", path: "/api/v1/users/{id}/follow", tag: "follows", summary: "Unfollow a user", auth: Auth::Bearer, query: &[], body: None, status: 200, reply: Reply::Inline(r#"{"type":"object","properties":{"following":{"type":"boolean"}}}"#) },
    Op { method: "post", path: "/api/v1/follows", tag: "follows", summary: "Follow up to 1000 users", auth: Auth::Bearer, query: &[], body: Some("Batch"), status: 200, reply: Reply::Schema("BatchReply") },
    Op { method: "delete", path: "/api/v1/follows", tag: "follows", summary: "Unfollow up to 1000 users", auth: Auth::Bearer, query: &[], body: Some("Batch"), status: 200, reply: Reply::Schema("BatchReply") },
    Op { method: "get", path: "/api/v1/users/{id}/followers", tag: "follows", summary: "Followers, oldest follow first", auth: Auth::Optional, query: FOLLOW_PAGING, body: None, status: 200, reply: Reply::Schema("UserPage") },
    Op { method: "get", path: "/api/v1/users/{id}/following", tag: "follows", summary: "Followed users, oldest follow first", auth: Auth::Optional, query: FOLLOW_PAGING, body: None, status: 200, reply: Reply::Schema("UserPage") },
    Op { method: "get", path: "/api/v1/stream/firehose", tag: "streams", summary: "Every public event (scope firehose). SSE, NDJSON (Accept: application/x-ndjson) or WebSocket", auth: Auth::Stream, query: RESUME, body: None, status: 200, reply: Reply::Stream },
    Op { method: "get", path: "/api/v1/stream/sample", tag: "streams", summary: "A sample of public statuses, the same for every client at one rate", auth: Auth::Stream, query: &[("rate", "Fraction in (0, 1], default 0.01."), ("access_token", "The JWT, for clients that cannot set headers."), ("last_event_id", "Resume after this id."), ("count", "Replay the newest N first.")], body: None, status: 200, reply: Reply::Stream },
    Op { method: "get", path: "/api/v1/stream/filter", tag: "streams", summary: "Public statuses matching follow, track or locations", auth: Auth::Stream, query: &[("follow", "Comma-separated user ids (<= 5000)."), ("track", "Comma-separated phrases (<= 400, each <= 60 bytes)."), ("locations", "sw_lon,sw_lat,ne_lon,ne_lat groups (<= 25 boxes); sw_lon > ne_lon crosses the antimeridian."), ("access_token", "The JWT, for clients that cannot set headers."), ("last_event_id", "Resume after this id."), ("count", "Replay the newest N first.")], body: None, status: 200, reply: Reply::Stream },
    Op { method: "get", path: "/api/v1/stream/user", tag: "streams", summary: "What your home timeline gets, plus follows of and by you", auth: Auth::Stream, query: RESUME, body: None, status: 200, reply: Reply::Stream },
    Op { method: "get", path: "/api/v1/stream", tag: "streams", summary: "Multiplexed WebSocket: subscribe/unsubscribe control messages", auth: Auth::Stream, query: &[("access_token", "The JWT, for clients that cannot set headers.")], body: None, status: 101, reply: Reply::Stream },
    Op { method: "get", path: "/healthz", tag: "operations", summary: "The process is up", auth: Auth::None, query: &[], body: None, status: 200, reply: Reply::Inline(r#"{"type":"object","properties":{"status":{"type":"string"}}}"#) },
    Op { method: "get", path: "/readyz", tag: "operations", summary: "Redis is reachable (503 if not)", auth: Auth::None, query: &[], body: None, status: 200, reply: Reply::Inline(r#"{"type":"object","properties":{"status":{"type":"string"},"redis":{"type":"string"}}}"#) },
    Op { method: "get", path: "/metrics", tag: "operations", summary: "Prometheus metrics", auth: Auth::None, query: &[], body: None, status: 200, reply: Reply::Text("text/plain; version=0.0.4") },
    Op { method: "get", path: "/openapi.json", tag: "operations", summary: "This document", auth: Auth::None, query: &[], body: None, status: 200, reply: Reply::Inline(r#"{"type":"object"}"#) },
    Op { method: "get", path: "/docs", tag: "operations", summary: "A readable API reference built from this document", auth: Auth::None, query: &[], body: None, status: 200, reply: Reply::Text("text/html") },
    Op { method: "get", path: "/", tag: "operations", summary: "The browser page: sign up, post, follow and watch a live stream", auth: Auth::None, query: &[], body: None, status: 200, reply: Reply::Text("text/html") },
];

fn schemas() -> Map<String, Value> {
    let mut m = Map::new();
    let mut add = |name: &str, schema: utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>| {
        m.insert(
            name.to_string(),
            serde_json::to_value(schema).unwrap_or(Value::Null),
        );
    };
    add("User", User::schema());
    add("Status", Status::schema());
    add("CreateUser", CreateUser::schema());
    add("UpdateMe", UpdateMe::schema());
    add("Login", Login::schema());
    add("LoginReply", LoginReply::schema());
    add("SessionInfo", SessionInfo::schema());
    add("CreateStatus", CreateStatus::schema());
    add("Batch", Batch::schema());
    add("BatchReply", BatchReply::schema());
    add("UserPage", UserPage::schema());
    m.insert(
        "Error".into(),
        json!({"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
            "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}),
    );
    m.insert(
        "Event".into(),
        json!({"type": "object", "required": ["type", "at"], "description":
            "One stream event: status (`status`), delete (`status_id`, `uid`), follow/unfollow (`source`, `target`), user (`user`); control events warning (`code`: falling_behind with `percent_full`, resume_gap) and disconnect (`code`, `reason`) carry no id.",
            "properties": {"id": {"type": "string"}, "type": {"type": "string"}, "at": {"type": "number"},
            "stream": {"type": "string", "description": "Multiplexed WebSocket only: the subscription that matched."},
            "status": {"$ref": "#/components/schemas/Status"}, "status_id": {"type": "string"}, "uid": {"type": "string"},
            "source": {"type": "string"}, "target": {"type": "string"}, "user": {"$ref": "#/components/schemas/User"}}}),
    );
    m
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn operation(op: &Op) -> Value {
    let mut params: Vec<Value> = Vec::new();
    if op.path.contains("{id}") {
        params.push(
            json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}),
        );
    }
    for (name, desc) in op.query {
        params.push(json!({"name": name, "in": "query", "required": false, "description": desc, "schema": {"type": "string"}}));
    }
    let ok = match op.reply {
        Reply::Empty => json!({"description": "Done."}),
        Reply::Schema(s) => {
            json!({"description": "OK", "content": {"application/json": {"schema": reference(s)}}})
        }
        Reply::List(s) => {
            json!({"description": "OK", "content": {"application/json": {"schema": {"type": "array", "items": reference(s)}}}})
        }
        Reply::Inline(s) => {
            json!({"description": "OK", "content": {"application/json": {"schema": serde_json::from_str::<Value>(s).unwrap_or(Value::Null)}}})
        }
        Reply::Text(t) => {
            json!({"description": "OK", "content": {t: {"schema": {"type": "string"}}}})
        }
        Reply::Stream => json!({"description": "A stream of events", "content": {
            "text/event-stream": {"schema": reference("Event")},
            "application/x-ndjson": {"schema": reference("Event")}}}),
    };
    let mut responses = Map::new();
    responses.insert(op.status.to_string(), ok);
    let err = |d: &str| json!({"description": d, "content": {"application/json": {"schema": reference("Error")}}});
    if op.body.is_some() || !op.query.is_empty() {
        responses.insert("400".into(), err("Malformed or invalid input."));
    }
    if op.auth != Auth::None {
        responses.insert(
            "401".into(),
            err("No or bad token, or the session has ended."),
        );
    }
    if op.path.contains("{id}") {
        responses.insert("404".into(), err("Unknown id."));
    }
    if op.auth == Auth::Stream {
        responses.insert(
            "429".into(),
            err("Too many concurrent streams for this user."),
        );
    }
    responses.insert("503".into(), err("Redis is unreachable."));
    let mut v = json!({
        "tags": [op.tag],
        "summary": op.summary,
        "operationId": format!("{}_{}", op.method, op.path.trim_matches('/').replace(['/', '{', '}'], "_")),
        "parameters": params,
        "responses": responses,
    });
    if let Some(body) = op.body {
        v["requestBody"] =
            json!({"required": true, "content": {"application/json": {"schema": reference(body)}}});
    }
    match op.auth {
        Auth::Bearer | Auth::Stream => v["security"] = json!([{"bearer": []}]),
        Auth::Optional => v["security"] = json!([{}, {"bearer": []}]),
        Auth::None => {}
    }
    v
}

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for op in OPS {
        let item = paths
            .entry(op.path.to_string())
            .or_insert_with(|| json!({}));
        item[op.method] = operation(op);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "firehose",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A Twitter-like social network on Redis with a streaming firehose. Errors are {\"error\": {\"code\", \"message\"}}; ids are strings; times are seconds since the epoch.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
        },
    })
}
