//! The OpenAPI 3.1 document, built from the route table below and the
//! request and response types' `utoipa::ToSchema` derivations.
//!
//! A test reads every `.route(...)` in `src/http/` and fails when one is
//! missing from this document.

use super::follows::{BatchReply, UserPage};
use super::sessions::{LoginReply, SessionInfo};
use crate::model::{Counts, Status, User};
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
    /// Structured query parameters (objects, so that "exactly one of" and
    /// "not both" are part of the schema).
    params: Params,
    reply: Reply,
    /// Every error status the operation can answer.
    errors: &'static [u16],
}

#[derive(Clone, Copy)]
enum Params {
    None,
    /// `count`, and `page` or `max_id`.
    Paging,
    /// `count` and `cursor`.
    FollowPaging,
    /// Exactly one of `login`, `email`, `any`.
    Lookup,
    /// `window` and `limit`.
    Trends,
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
    Op { method: "post", path: "/api/v1/users", tag: "users", summary: "Sign up", auth: Auth::None, query: &[], body: Some("CreateUser"), status: 201, params: Params::None, reply: Reply::Schema("User"), errors: &[400, 408, 409, 413, 415, 429, 503] },
    Op { method: "get", path: "/api/v1/users/{id}", tag: "users", summary: "A user", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Schema("User"), errors: &[401, 404, 503] },
    Op { method: "get", path: "/api/v1/users/lookup", tag: "users", summary: "Find a user by exactly one of login, email or any unique field", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::Lookup, reply: Reply::Schema("User"), errors: &[400, 401, 404, 503] },
    Op { method: "get", path: "/api/v1/me", tag: "users", summary: "The caller, with email", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Schema("User"), errors: &[401, 503] },
    Op { method: "patch", path: "/api/v1/me", tag: "users", summary: "Change name or the private flag", auth: Auth::Bearer, query: &[], body: Some("UpdateMe"), status: 200, params: Params::None, reply: Reply::Schema("User"), errors: &[400, 401, 403, 408, 413, 415, 429, 503] },
    Op { method: "post", path: "/api/v1/sessions", tag: "sessions", summary: "Log in with login or email", auth: Auth::None, query: &[], body: Some("Login"), status: 201, params: Params::None, reply: Reply::Schema("LoginReply"), errors: &[400, 401, 408, 413, 415, 429, 503] },
    Op { method: "get", path: "/api/v1/sessions/current", tag: "sessions", summary: "The current session: scopes and recently viewed statuses", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Schema("SessionInfo"), errors: &[401, 503] },
    Op { method: "delete", path: "/api/v1/sessions/current", tag: "sessions", summary: "Log out: the token stops working and its streams close", auth: Auth::Bearer, query: &[], body: None, status: 204, params: Params::None, reply: Reply::Empty, errors: &[401, 503] },
    Op { method: "post", path: "/api/v1/statuses", tag: "statuses", summary: "Post a status", auth: Auth::Bearer, query: &[], body: Some("CreateStatus"), status: 201, params: Params::None, reply: Reply::Schema("Status"), errors: &[400, 401, 403, 404, 408, 413, 415, 429, 503] },
    Op { method: "get", path: "/api/v1/statuses/{id}", tag: "statuses", summary: "A status (recorded as viewed when a token is sent)", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Schema("Status"), errors: &[401, 403, 404, 503] },
    Op { method: "delete", path: "/api/v1/statuses/{id}", tag: "statuses", summary: "Delete your status", auth: Auth::Bearer, query: &[], body: None, status: 204, params: Params::None, reply: Reply::Empty, errors: &[401, 403, 404, 429, 503] },
    Op { method: "get", path: "/api/v1/timelines/home", tag: "timelines", summary: "Your home timeline, newest first", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::Paging, reply: Reply::List("Status"), errors: &[400, 401, 503] },
    Op { method: "get", path: "/api/v1/users/{id}/statuses", tag: "timelines", summary: "A user's profile timeline, newest first", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::Paging, reply: Reply::List("Status"), errors: &[400, 401, 403, 404, 503] },
    Op { method: "post", path: "/api/v1/users/{id}/follow", tag: "follows", summary: "Follow a user (409 when already following); a private account gets a follow request (requested: true)", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","required":["following"],"properties":{"following":{"type":"boolean"},"requested":{"type":"boolean"}}}"#), errors: &[401, 403, 404, 409, 429, 503] },
    Op { method: "delete", path: "/api/v1/users/{id}/follow", tag: "follows", summary: "Unfollow a user, or cancel a follow request (then requested: false)", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","required":["following"],"properties":{"following":{"type":"boolean"},"requested":{"type":"boolean"}}}"#), errors: &[401, 403, 404, 429, 503] },
    Op { method: "post", path: "/api/v1/follows", tag: "follows", summary: "Follow up to 1000 users", auth: Auth::Bearer, query: &[], body: Some("Batch"), status: 200, params: Params::None, reply: Reply::Schema("BatchReply"), errors: &[400, 401, 403, 408, 413, 415, 429, 503] },
    Op { method: "delete", path: "/api/v1/follows", tag: "follows", summary: "Unfollow up to 1000 users", auth: Auth::Bearer, query: &[], body: Some("Batch"), status: 200, params: Params::None, reply: Reply::Schema("BatchReply"), errors: &[400, 401, 403, 408, 413, 415, 429, 503] },
    Op { method: "get", path: "/api/v1/users/{id}/followers", tag: "follows", summary: "Followers, oldest follow first", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::FollowPaging, reply: Reply::Schema("UserPage"), errors: &[400, 401, 404, 503] },
    Op { method: "get", path: "/api/v1/users/{id}/following", tag: "follows", summary: "Followed users, oldest follow first", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::FollowPaging, reply: Reply::Schema("UserPage"), errors: &[400, 401, 404, 503] },
    Op { method: "post", path: "/api/v1/statuses/{id}/like", tag: "likes", summary: "Like a status (idempotent)", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","required":["liked","likes"],"properties":{"liked":{"type":"boolean"},"likes":{"type":"integer","minimum":0}}}"#), errors: &[401, 403, 404, 429, 503] },
    Op { method: "delete", path: "/api/v1/statuses/{id}/like", tag: "likes", summary: "Stop liking a status (idempotent)", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","required":["liked","likes"],"properties":{"liked":{"type":"boolean"},"likes":{"type":"integer","minimum":0}}}"#), errors: &[401, 403, 404, 429, 503] },
    Op { method: "get", path: "/api/v1/statuses/{id}/liked_by", tag: "likes", summary: "Who likes a status, oldest like first", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::FollowPaging, reply: Reply::Schema("UserPage"), errors: &[400, 401, 404, 503] },
    Op { method: "get", path: "/api/v1/users/{id}/likes", tag: "likes", summary: "Statuses a user likes, newest like first", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::Paging, reply: Reply::List("Status"), errors: &[400, 401, 404, 503] },
    Op { method: "get", path: "/api/v1/statuses/{id}/context", tag: "statuses", summary: "The conversation: ancestors and descendants (paginated), oldest first", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::FollowPaging, reply: Reply::Inline(r##"{"type":"object","required":["ancestors","descendants"],"properties":{"ancestors":{"type":"array","items":{"$ref":"#/components/schemas/Status"}},"descendants":{"type":"array","items":{"$ref":"#/components/schemas/Status"}},"next_cursor":{"type":["string","null"]},"parent_missing":{"type":"boolean"}}}"##), errors: &[400, 401, 404, 503] },
    Op { method: "get", path: "/api/v1/timelines/mentions", tag: "timelines", summary: "Statuses mentioning you, newest first", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::Paging, reply: Reply::List("Status"), errors: &[400, 401, 503] },
    Op { method: "get", path: "/api/v1/timelines/tag/{tag}", tag: "timelines", summary: "Statuses carrying #tag (any case, without #), newest first", auth: Auth::Optional, query: &[], body: None, status: 200, params: Params::Paging, reply: Reply::List("Status"), errors: &[400, 401, 503] },
    Op { method: "get", path: "/api/v1/trends/tags", tag: "trends", summary: "The most used hashtags of public statuses in a sliding window", auth: Auth::None, query: &[], body: None, status: 200, params: Params::Trends, reply: Reply::Inline(r#"{"type":"array","items":{"type":"object","required":["tag","count"],"properties":{"tag":{"type":"string"},"count":{"type":"integer","minimum":1}}}}"#), errors: &[400, 503] },
    Op { method: "post", path: "/api/v1/statuses/{id}/repost", tag: "statuses", summary: "Repost a status: 201 with the repost (200 with the existing one if already reposted)", auth: Auth::Bearer, query: &[], body: None, status: 201, params: Params::None, reply: Reply::Schema("Status"), errors: &[401, 403, 404, 429, 503] },
    Op { method: "delete", path: "/api/v1/statuses/{id}/repost", tag: "statuses", summary: "Undo your repost of a status (idempotent)", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","required":["reposted","reposts"],"properties":{"reposted":{"type":"boolean"},"reposts":{"type":"integer","minimum":0}}}"#), errors: &[401, 403, 404, 429, 503] },
    Op { method: "get", path: "/api/v1/follow_requests", tag: "follows", summary: "Who asked to follow you (a private account), oldest first", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::FollowPaging, reply: Reply::Schema("UserPage"), errors: &[400, 401, 503] },
    Op { method: "get", path: "/api/v1/follow_requests/outgoing", tag: "follows", summary: "Whom you asked to follow, oldest first", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::FollowPaging, reply: Reply::Schema("UserPage"), errors: &[400, 401, 503] },
    Op { method: "post", path: "/api/v1/follow_requests/{id}/authorize", tag: "follows", summary: "Approve a follow request: the requester follows you", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","required":["following"],"properties":{"following":{"type":"boolean"}}}"#), errors: &[401, 403, 404, 429, 503] },
    Op { method: "post", path: "/api/v1/follow_requests/{id}/reject", tag: "follows", summary: "Reject a follow request", auth: Auth::Bearer, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","required":["following"],"properties":{"following":{"type":"boolean"}}}"#), errors: &[401, 403, 404, 429, 503] },
    Op { method: "get", path: "/api/v1/stream/firehose", tag: "streams", summary: "Every public event (scope firehose). SSE, NDJSON (Accept: application/x-ndjson) or WebSocket", auth: Auth::Stream, query: RESUME, body: None, status: 200, params: Params::None, reply: Reply::Stream, errors: &[400, 401, 403, 429, 503] },
    Op { method: "get", path: "/api/v1/stream/sample", tag: "streams", summary: "A sample of public statuses, the same for every client at one rate", auth: Auth::Stream, query: &[("rate", "Fraction in (0, 1], default 0.01."), ("access_token", "The JWT, for clients that cannot set headers."), ("last_event_id", "Resume after this id."), ("count", "Replay the newest N first.")], body: None, status: 200, params: Params::None, reply: Reply::Stream, errors: &[400, 401, 403, 429, 503] },
    Op { method: "get", path: "/api/v1/stream/filter", tag: "streams", summary: "Public statuses matching follow, track or locations", auth: Auth::Stream, query: &[("follow", "Comma-separated user ids (<= 5000)."), ("track", "Comma-separated phrases (<= 400, each <= 60 bytes)."), ("locations", "sw_lon,sw_lat,ne_lon,ne_lat groups (<= 25 boxes); sw_lon > ne_lon crosses the antimeridian."), ("access_token", "The JWT, for clients that cannot set headers."), ("last_event_id", "Resume after this id."), ("count", "Replay the newest N first.")], body: None, status: 200, params: Params::None, reply: Reply::Stream, errors: &[400, 401, 403, 429, 503] },
    Op { method: "get", path: "/api/v1/stream/user", tag: "streams", summary: "What your home timeline gets, plus follows of and by you", auth: Auth::Stream, query: RESUME, body: None, status: 200, params: Params::None, reply: Reply::Stream, errors: &[400, 401, 403, 429, 503] },
    Op { method: "get", path: "/api/v1/stream", tag: "streams", summary: "Multiplexed WebSocket: subscribe/unsubscribe control messages", auth: Auth::Stream, query: &[("access_token", "The JWT, for clients that cannot set headers.")], body: None, status: 101, params: Params::None, reply: Reply::Stream, errors: &[400, 401, 403, 429, 503] },
    Op { method: "get", path: "/healthz", tag: "operations", summary: "The process is up", auth: Auth::None, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","properties":{"status":{"type":"string"}}}"#), errors: &[] },
    Op { method: "get", path: "/readyz", tag: "operations", summary: "Redis is reachable (503 if not)", auth: Auth::None, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object","properties":{"status":{"type":"string"},"redis":{"type":"string"}}}"#), errors: &[503] },
    Op { method: "get", path: "/metrics", tag: "operations", summary: "Prometheus metrics", auth: Auth::None, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Text("text/plain; version=0.0.4"), errors: &[] },
    Op { method: "get", path: "/openapi.json", tag: "operations", summary: "This document", auth: Auth::None, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Inline(r#"{"type":"object"}"#), errors: &[] },
    Op { method: "get", path: "/docs", tag: "operations", summary: "A readable API reference built from this document", auth: Auth::None, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Text("text/html"), errors: &[] },
    Op { method: "get", path: "/", tag: "operations", summary: "The browser page: sign up, post, follow and watch a live stream", auth: Auth::None, query: &[], body: None, status: 200, params: Params::None, reply: Reply::Text("text/html"), errors: &[] },
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
    add("Counts", Counts::schema());
    add("LoginReply", LoginReply::schema());
    add("SessionInfo", SessionInfo::schema());

    add("BatchReply", BatchReply::schema());
    add("UserPage", UserPage::schema());
    request_schemas(&mut m);
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

/// The largest id or page number the server parses (u64).
const U64_MAX: u64 = u64::MAX;

/// The object-style query parameter of `params`, if any: its name, its
/// description and its schema (exploded into separate `key=value` pairs).
fn object_params(params: Params) -> Option<(&'static str, &'static str, Value)> {
    let count = |default: u32| json!({"type": "integer", "minimum": 1, "maximum": 200, "description": format!("Entries per page (default {default}).")});
    match params {
        Params::None => None,
        Params::Trends => Some((
            "trend",
            "window (60-86400 s, default 3600) and limit (1-100, default 10).",
            json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "window": {"type": "integer", "minimum": 60, "maximum": 86_400},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                },
            }),
        )),
        Params::Paging => Some((
            "paging",
            "count, and page or max_id (not both).",
            json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "count": count(30),
                    "page": {"type": "integer", "minimum": 1, "maximum": U64_MAX, "description": "1-based page number."},
                    "max_id": {"type": "integer", "minimum": 0, "maximum": U64_MAX, "description": "Only statuses with ids up to this one."},
                },
                "not": {"required": ["page", "max_id"]},
            }),
        )),
        Params::FollowPaging => Some((
            "paging",
            "count and cursor.",
            json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "count": count(20),
                    "cursor": {"type": "string", "pattern": "^([0-9]{1,19}|-?[0-9]{1,20}(\\.[0-9]{1,20})?_[0-9]{1,19})$", "description": "next_cursor of the previous page (the place of its last entry)."},
                },
            }),
        )),
        Params::Lookup => Some((
            "field",
            "Exactly one of login, email or any (a login or an email).",
            json!({
                "type": "object", "additionalProperties": false,
                "oneOf": [{"required": ["login"]}, {"required": ["email"]}, {"required": ["any"]}],
                "properties": {
                    "login": {"type": "string", "description": "A login, any case."},
                    "email": {"type": "string", "description": "An email, any case."},
                    "any": {"type": "string", "description": "A login or an email."},
                },
            }),
        )),
    }
}

/// Characters Rust's `char::is_whitespace` (Unicode White_Space) matches,
/// as a regex class body.
const WS: &str = r"\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// Characters Rust's `char::is_control` matches, as a regex class body.
const CC: &str = r"\u0000-\u001f\u007f-\u009f";

/// Request bodies, with the constraints the handlers enforce (see the
/// validators in `users.rs` and `statuses.rs`; schemathesis holds the two
/// together in the test suite).
fn request_schemas(m: &mut Map<String, Value>) {
    let name = json!({"type": "string", "minLength": 1, "maxLength": 50,
        "pattern": format!("^[^{CC}]*[^{CC}{WS}][^{CC}]*$"),
        "description": "1-50 characters, not only white space, no control characters."});
    m.insert("CreateUser".into(), json!({
        "type": "object", "required": ["login", "name", "email", "password"],
        "properties": {
            "login": {"type": "string", "minLength": 3, "maxLength": 30,
                "pattern": "^[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*$",
                "description": "3-30 of [A-Za-z0-9_], not all digits, unique ignoring case."},
            "name": name,
            "email": {"type": "string", "maxLength": super::users::MAX_EMAIL_CHARS,
                "pattern": format!("^[^@{WS}{CC}][^{WS}{CC}]*@[^{WS}{CC}]*[^@{WS}{CC}]$"),
                "description": "An address with @ (not first or last), no white space; unique ignoring case."},
            "password": {"type": "string", "minLength": 8, "maxLength": super::users::MAX_PASSWORD_CHARS},
        },
    }));
    let mut nullable_name = name.clone();
    nullable_name["type"] = json!(["string", "null"]);
    m.insert("UpdateMe".into(), json!({
        "type": "object", "additionalProperties": false,
        "properties": {
            "name": nullable_name,
            "private": {"type": ["boolean", "null"], "description": "Statuses reach followers only."},
        },
    }));
    m.insert(
        "Login".into(),
        json!({
            "type": "object", "required": ["identifier", "password"],
            "properties": {
                "identifier": {"type": "string", "description": "Login or email, any case."},
                "password": {"type": "string"},
            },
        }),
    );
    m.insert("CreateStatus".into(), json!({
        "type": "object", "required": ["message"],
        "properties": {
            "message": {"type": "string", "minLength": 1, "maxLength": super::statuses::MAX_MESSAGE_CHARS,
                "pattern": format!("[^{WS}]"),
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
    }));
    m.insert(
        "Batch".into(),
        json!({
            "type": "object", "required": ["ids"],
            "properties": {
                "ids": {"type": "array", "maxItems": 1000,
                    "items": {"type": ["string", "integer"], "maxLength": super::MAX_ID_CHARS},
                    "description": "User ids (strings or numbers); unknown ones answer false."},
            },
        }),
    );
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
    if op.path.contains("{tag}") {
        params.push(json!({"name": "tag", "in": "path", "required": true,
            "schema": {"type": "string", "minLength": 1, "maxLength": 280, "pattern": "[^#]"}}));
    }
    for (name, desc) in op.query {
        params.push(json!({"name": name, "in": "query", "required": false, "description": desc, "schema": {"type": "string"}}));
    }
    if let Some((name, desc, schema)) = object_params(op.params) {
        let required = matches!(op.params, Params::Lookup);
        params.push(
            json!({"name": name, "in": "query", "required": required, "style": "form",
            "explode": true, "description": desc, "schema": schema}),
        );
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
    if op.method == "post" && op.path.ends_with("/repost") {
        // The caller's existing repost is answered 200.
        responses.insert("200".into(), ok.clone());
    }
    responses.insert(op.status.to_string(), ok);
    let err = |d: &str| json!({"description": d, "content": {"application/json": {"schema": reference("Error")}}});
    for status in op.errors {
        let (what, headers) = match status {
            400 => ("Malformed or invalid input.", false),
            401 => (
                "No or bad token, the session has ended, or (log in) wrong credentials.",
                false,
            ),
            403 => ("Not allowed, or the token lacks the scope.", false),
            404 => ("Unknown id or value.", false),
            408 => (
                "The request head or body did not arrive within 10 s.",
                false,
            ),
            409 => (
                "Conflict: a taken login or email, or already following.",
                false,
            ),
            413 => ("The body is too large.", false),
            415 => ("The body is not sent as application/json.", false),
            429 => (
                "Over a limit (rate, or concurrent streams); see Retry-After.",
                true,
            ),
            503 => (
                "Redis is unreachable, or the server is saturated; see Retry-After when given.",
                true,
            ),
            _ => ("Error.", false),
        };
        let mut r = err(what);
        if headers {
            r["headers"] = json!({"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}});
        }
        responses.insert(status.to_string(), r);
    }
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
