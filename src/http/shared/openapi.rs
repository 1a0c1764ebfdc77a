//! The OpenAPI 3.1 document, built from the operations the router serves
//! (each resource module registers a route together with its [`Op`], so a
//! route cannot exist undocumented: `routes::Routes`) and the request and
//! response types' `utoipa::ToSchema` derivations.

use super::paging::UserPage;
use crate::model::{Counts, Status, User};
use serde_json::{json, Map, Value};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// Who may call an operation.
#[derive(Clone, Copy, PartialEq)]
pub enum Auth {
    /// No token.
    None,
    /// A bearer token if the caller has one.
    Optional,
    /// A bearer token.
    Bearer,
    /// A bearer token or `access_token` in the query.
    Stream,
}

/// One operation of the API: what the document says of a route.
#[derive(Clone, Copy)]
pub struct Op {
    /// `get`, `post`, `patch` or `delete`: also the method the route serves.
    pub method: &'static str,
    /// The path, as the router matches it.
    pub path: &'static str,
    /// The group it is listed under.
    pub tag: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// Who may call it.
    pub auth: Auth,
    /// Plain query parameters: name and description.
    pub query: &'static [(&'static str, &'static str)],
    /// The request body's schema name, if it takes one.
    pub body: Option<&'static str>,
    /// The status of a success.
    pub status: u16,
    /// Structured query parameters (objects, so that "exactly one of" and
    /// "not both" are part of the schema).
    pub params: Params,
    /// What a success answers.
    pub reply: Reply,
    /// Every error status the operation can answer.
    pub errors: &'static [u16],
}

impl Op {
    /// An operation answering 200 with no body to a caller with a bearer
    /// token, taking no parameters and naming no error status: each method
    /// below changes one of these.
    pub const fn new(
        method: &'static str,
        path: &'static str,
        tag: &'static str,
        summary: &'static str,
    ) -> Op {
        Op {
            method,
            path,
            tag,
            summary,
            auth: Auth::Bearer,
            query: &[],
            body: None,
            status: 200,
            params: Params::None,
            reply: Reply::Empty,
            errors: &[],
        }
    }

    /// A `GET` ([`Op::new`]).
    pub const fn get(path: &'static str, tag: &'static str, summary: &'static str) -> Op {
        Op::new("get", path, tag, summary)
    }

    /// A `POST` ([`Op::new`]).
    pub const fn post(path: &'static str, tag: &'static str, summary: &'static str) -> Op {
        Op::new("post", path, tag, summary)
    }

    /// A `PATCH` ([`Op::new`]).
    pub const fn patch(path: &'static str, tag: &'static str, summary: &'static str) -> Op {
        Op::new("patch", path, tag, summary)
    }

    /// A `DELETE` ([`Op::new`]).
    pub const fn delete(path: &'static str, tag: &'static str, summary: &'static str) -> Op {
        Op::new("delete", path, tag, summary)
    }

    /// Who may call it.
    pub const fn auth(self, auth: Auth) -> Op {
        Op { auth, ..self }
    }

    /// Its plain query parameters.
    pub const fn query(self, query: &'static [(&'static str, &'static str)]) -> Op {
        Op { query, ..self }
    }

    /// The schema of its request body.
    pub const fn body(self, schema: &'static str) -> Op {
        Op {
            body: Some(schema),
            ..self
        }
    }

    /// The status of a success.
    pub const fn status(self, status: u16) -> Op {
        Op { status, ..self }
    }

    /// Its structured query parameters.
    pub const fn params(self, params: Params) -> Op {
        Op { params, ..self }
    }

    /// What a success answers.
    pub const fn reply(self, reply: Reply) -> Op {
        Op { reply, ..self }
    }

    /// Every error status it can answer.
    pub const fn errors(self, errors: &'static [u16]) -> Op {
        Op { errors, ..self }
    }
}

/// Structured query parameters.
#[derive(Clone, Copy)]
pub enum Params {
    /// None.
    None,
    /// `count`, and `page` or `max_id`.
    Paging,
    /// [`Params::Paging`] and `order` (`latest` or `top`; `top` pages by
    /// `page` only).
    OrderedPaging,
    /// `count` and `cursor`.
    FollowPaging,
    /// Exactly one of `login`, `email`, `any`.
    Lookup,
    /// `window` and `limit`.
    Trends,
    /// A history search: `query`, `since`, `until`, `count`, `cursor`.
    HistorySearch,
    /// History counts: `query`, `bucket`, `since`, `until`.
    HistoryCounts,
    /// The public timeline: `count` (1-200) and a history `cursor`.
    PublicTimeline,
}

/// What a success answers.
#[derive(Clone, Copy)]
pub enum Reply {
    /// No body.
    Empty,
    /// A schema written out (JSON): for `/openapi.json` itself, whose
    /// answer no Rust type describes.
    Inline(&'static str),
    /// The type the handler answers with.
    Of(Typed),
    /// An array of the type the handler answers with.
    ListOf(Typed),
    /// Text of this content type.
    Text(&'static str),
    /// A stream (SSE, NDJSON or WebSocket).
    Stream,
}

/// A reply's type, as the document names it: its schema and those it
/// refers to join the document's components.
#[derive(Clone, Copy)]
pub struct Typed {
    name: fn() -> std::borrow::Cow<'static, str>,
    add: fn(&mut Vec<(String, RefOr<Schema>)>),
}

impl Typed {
    /// The reply type `T` (`#[derive(Serialize, utoipa::ToSchema)]`).
    pub const fn of<T: ToSchema>() -> Typed {
        Typed {
            name: T::name,
            add: add_schemas::<T>,
        }
    }

    fn reference(&self) -> Value {
        reference(&(self.name)())
    }
}

/// Adds `T`'s schema and those it refers to.
fn add_schemas<T: ToSchema>(to: &mut Vec<(String, RefOr<Schema>)>) {
    to.push((T::name().into_owned(), T::schema()));
    T::schemas(to);
}

/// The query parameters every stream takes to resume.
pub(crate) const RESUME: &[(&str, &str)] = &[
    (
        "access_token",
        "The JWT, for clients that cannot set headers (never logged).",
    ),
    (
        "compress",
        "zstd: on WebSocket, each event as one binary message, a zstd frame made with the dictionary at /api/v1/stream/zstd-dictionary (plain streams: Accept-Encoding).",
    ),
    (
        "last_event_id",
        "Replay matching events after this id, then go live (also the Last-Event-ID header).",
    ),
    (
        "count",
        "First replay the newest N matching events (N <= 1000).",
    ),
    (
        "since",
        "Open at the first buffered event at or after this time (seconds since the epoch).",
    ),
];

/// [`RESUME`] and the partition of a firehose, sample or search stream.
pub(crate) const PARTED: &[(&str, &str)] = &[
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
    (
        "since",
        "Open at the first buffered event at or after this time (seconds since the epoch).",
    ),
    (
        "partition",
        "This consumer's partition, 1 to partitions (with partitions).",
    ),
    (
        "partitions",
        "How many partitions the stream is split into (1-32): N consumers together get every event once, statuses and their deletes by status id, other events by their source user.",
    ),
];

/// The shared schemas, with those the resources registered.
fn schemas(registered: &Map<String, Value>) -> Map<String, Value> {
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
    add("UserPage", UserPage::schema());
    m.insert(
        "Error".into(),
        json!({"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
            "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}),
    );
    m.insert(
        "Event".into(),
        json!({"type": "object", "required": ["type", "at"], "description":
            "One stream event: status (`status`), delete (`status_id`, `uid`), follow/unfollow (`source`, `target`), user (`user`), direct_message (`message`, `participants`; user streams of the participants only); control events warning (`code`: falling_behind with `percent_full`, lagging with `behind`, caught_up, resume_gap, token_expiring) and disconnect (`code`, `reason`) carry no id.",
            "properties": {"id": {"type": "string"}, "type": {"type": "string"}, "at": {"type": "number"},
            "stream": {"type": "string", "description": "Multiplexed WebSocket only: the subscription that matched."},
            "status": {"$ref": "#/components/schemas/Status"}, "status_id": {"type": "string"}, "uid": {"type": "string"},
            "source": {"type": "string"}, "target": {"type": "string"}, "user": {"$ref": "#/components/schemas/User"},
            "message": {"$ref": "#/components/schemas/Message"}, "participants": {"type": "array", "items": {"type": "string"}}}}),
    );
    for (name, schema) in registered {
        m.insert(name.clone(), schema.clone());
    }
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
        Params::OrderedPaging => Some((
            "paging",
            "count, and page or max_id (not both); order latest (default) or top (then not max_id).",
            json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "count": count(30),
                    "page": {"type": "integer", "minimum": 1, "maximum": U64_MAX, "description": "1-based page number."},
                    "max_id": {"type": "integer", "minimum": 0, "maximum": U64_MAX, "description": "Only statuses with ids up to this one (order=latest only)."},
                    "order": {"type": "string", "enum": ["latest", "top"], "description": "latest: newest first; top: ranked by engagement and age, each status with its score."},
                },
                "allOf": [
                    {"not": {"required": ["page", "max_id"]}},
                    {"not": {"required": ["order", "max_id"], "properties": {"order": {"const": "top"}}}},
                ],
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
        Params::HistorySearch | Params::HistoryCounts => {
            let time = |what: &str| json!({"type": "number", "minimum": 0, "maximum": 1e11, "description": what});
            let mut properties = json!({
                "query": {"type": "string", "minLength": 1, "description": "One filter rule (the grammar of the filter rules)."},
                "since": time("From this time (seconds since the epoch; not in the future)."),
                "until": time("Before this time (seconds since the epoch; not before since)."),
            });
            let desc = if matches!(params, Params::HistorySearch) {
                properties["count"] = json!({"type": "integer", "minimum": 1, "maximum": 500, "description": "Statuses per page (default 100)."});
                properties["cursor"] = json!({"type": "string", "pattern": "^[0-9]{1,19}(-[0-9]{1,19}(\\.[0-9]{1,9})?)?$", "description": "next_cursor of the page before."});
                "query (a filter rule), since, until, count (1-500) and cursor."
            } else {
                properties["bucket"] = json!({"type": "string", "enum": ["minute", "hour", "day"], "description": "Bucket size (default hour)."});
                "query (a filter rule), bucket (minute, hour, day), since and until."
            };
            Some((
                "search",
                desc,
                json!({"type": "object", "additionalProperties": false, "required": ["query"], "properties": properties}),
            ))
        }
        Params::PublicTimeline => Some((
            "paging",
            "count (1-200), and cursor or max_id.",
            json!({
                "type": "object", "additionalProperties": false,
                "properties": {
                    "count": count(20),
                    "cursor": {"type": "string", "pattern": "^[0-9]{1,19}(-[0-9]{1,19}(\\.[0-9]{1,9})?)?$", "description": "next_cursor of the page before."},
                    "max_id": {"type": "string", "pattern": "^[0-9]{1,20}$", "description": "Statuses with this id or a lower one (ids grow with time): where the page starts, or with a cursor a bound on what it holds."},
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
pub(crate) const WS: &str =
    r"\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// The format characters [`text::INVISIBLE`](crate::text::INVISIBLE) lists, as a regex class body:
/// a text made only of these and white space is refused.
pub(crate) const FMT: &str = r"\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb";
/// Characters Rust's `char::is_control` matches, as a regex class body.
pub(crate) const CC: &str = r"\u0000-\u001f\u007f-\u009f";
/// [`CC`] less `\t` and `\n`, which a message may hold.
pub(crate) const CC_TEXT: &str = r"\u0000-\u0008\u000b-\u001f\u007f-\u009f";

/// The pattern of a text a person writes (what [`text::unreadable`](crate::text::unreadable)
/// refuses: no control character but new lines and tabs, and something
/// that shows).
pub(crate) fn readable_pattern() -> String {
    format!("^[^{CC_TEXT}]*[^{CC}{WS}{FMT}][^{CC_TEXT}]*$")
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
    for name in ["uid", "sid"] {
        if op.path.contains(&format!("{{{name}}}")) {
            params.push(
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}),
            );
        }
    }
    if op.path.contains("{tag}") {
        params.push(json!({"name": "tag", "in": "path", "required": true,
            "schema": {"type": "string", "minLength": 1, "maxLength": 280, "pattern": "[^#]"}}));
    }
    for (name, desc) in op.query {
        params.push(json!({"name": name, "in": "query", "required": false, "description": desc, "schema": {"type": "string"}}));
    }
    if let Some((name, desc, schema)) = object_params(op.params) {
        let required = matches!(
            op.params,
            Params::Lookup | Params::HistorySearch | Params::HistoryCounts
        );
        params.push(
            json!({"name": name, "in": "query", "required": required, "style": "form",
            "explode": true, "description": desc, "schema": schema}),
        );
    }
    let ok = match op.reply {
        Reply::Empty => json!({"description": "Done."}),
        Reply::Inline(s) => {
            json!({"description": "OK", "content": {"application/json": {"schema": serde_json::from_str::<Value>(s).unwrap_or(Value::Null)}}})
        }
        Reply::Of(t) => {
            json!({"description": "OK", "content": {"application/json": {"schema": t.reference()}}})
        }
        Reply::ListOf(t) => {
            json!({"description": "OK", "content": {"application/json": {"schema": {"type": "array", "items": t.reference()}}}})
        }
        Reply::Text(t) => {
            json!({"description": "OK", "content": {t: {"schema": {"type": "string"}}}})
        }
        Reply::Stream => json!({"description": "A stream of events", "content": {
            "text/event-stream": {"schema": reference("Event")},
            "application/x-ndjson": {"schema": reference("Event")}}}),
    };
    let mut responses = Map::new();
    // Creations that may create nothing answer 200 instead of 201: a repost
    // already made, a direct pair's existing conversation, rules that all
    // exist (or a delete of rules).
    let may_create_nothing = op.path.ends_with("/repost")
        || op.path == "/api/v1/conversations"
        || op.path == "/api/v1/stream/rules";
    if op.method == "post" && op.status == 201 && may_create_nothing {
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

/// The whole document, of these operations and the schemas their
/// resources registered.
pub(crate) fn document(ops: &[Op], registered: &Map<String, Value>) -> Value {
    let mut paths = Map::new();
    for op in ops {
        let item = paths
            .entry(op.path.to_string())
            .or_insert_with(|| json!({}));
        item[op.method] = operation(op);
    }
    let mut schemas = schemas(registered);
    let mut typed = Vec::new();
    for op in ops {
        if let Reply::Of(t) | Reply::ListOf(t) = op.reply {
            (t.add)(&mut typed);
        }
    }
    for (name, schema) in typed {
        schemas.insert(name, serde_json::to_value(schema).unwrap_or(Value::Null));
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
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
        },
    })
}
