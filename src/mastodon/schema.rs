//! What each documented parameter and field kind is ([`P`]): its JSON
//! schema in the OpenAPI document and its check, side by side; and the
//! gate every request passes before its handler: a token where the route
//! needs one (401), the query's documented parameters of their kind
//! (400), the body's documented fields of theirs and the required ones
//! there (422). So the document and what is served cannot part.

use super::reply::error;
use axum::body::{to_bytes, Body};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use regex::Regex;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// A parameter's or field's kind.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum P {
    /// Text.
    Str,
    /// An id of ours: digits.
    Id,
    /// A whole number.
    Int,
    /// `true` or `false`.
    Bool,
    /// A repeated field (`id[]=1&id[]=2`): ids.
    Ids,
    /// A repeated field of text (`types[]=favourite`).
    Strs,
    /// Readable text (not only white space or invisible characters) of
    /// `min` to `max` characters.
    Text(u16, u16),
    /// Redirect URIs: `urn:ietf:wg:oauth:2.0:oob` or absolute URIs.
    Uris,
    /// OAuth scopes.
    Scopes,
    /// A display name: 1 to 50 characters, readable, no control character.
    Name,
    /// Text that must be empty (a feature this server lacks).
    Blank,
    /// `false` only (a feature this server lacks).
    False,
    /// A marker: `{"last_read_id": id}` (a form's `home[last_read_id]`).
    Marker,
    /// One of these words.
    Of(&'static [&'static str]),
}

/// What the document says of one method on a path.
#[derive(Clone, Copy, Debug)]
pub(super) struct Doc {
    pub(super) method: &'static str,
    pub(super) summary: &'static str,
    /// A bearer token is needed (else: optional).
    pub(super) auth: bool,
    pub(super) query: &'static [(&'static str, P)],
    /// The body's fields (JSON or a form), and which are required.
    pub(super) body: &'static [(&'static str, P)],
    pub(super) required: &'static [&'static str],
    /// The success's schema (a component's name, `html`, `text`, or
    /// `stream`).
    pub(super) reply: &'static str,
    /// Every error status.
    pub(super) codes: &'static [u16],
}

impl Doc {
    pub(super) const fn new(
        method: &'static str,
        summary: &'static str,
        reply: &'static str,
    ) -> Doc {
        Doc {
            method,
            summary,
            auth: true,
            query: &[],
            body: &[],
            required: &[],
            reply,
            codes: &[401, 404, 422],
        }
    }
    pub(super) const fn open(mut self) -> Doc {
        self.auth = false;
        self
    }
    pub(super) const fn query(mut self, query: &'static [(&'static str, P)]) -> Doc {
        self.query = query;
        self
    }
    pub(super) const fn body(
        mut self,
        body: &'static [(&'static str, P)],
        required: &'static [&'static str],
    ) -> Doc {
        self.body = body;
        self.required = required;
        self
    }
    pub(super) const fn codes(mut self, codes: &'static [u16]) -> Doc {
        self.codes = codes;
        self
    }
}

/// A redirect URI list: the out-of-band URN or absolute URIs (printable
/// ASCII), by spaces or line breaks. Spelled without `\s` and `\S`, which
/// the document's readers and this server's regex engine read apart.
const URIS: &str = r"^(urn:ietf:wg:oauth:2\.0:oob|[A-Za-z][A-Za-z0-9+.-]*:/[!-~]*)([ \n]+(urn:ietf:wg:oauth:2\.0:oob|[A-Za-z][A-Za-z0-9+.-]*:/[!-~]*))*$";

/// Scopes: Mastodon's, and their `read:...` parts, by spaces.
const SCOPES: &str = r"^ *((read|write|follow|push|(read|write|admin):[!-~]+)( +|$))*$";

/// A compiled pattern of these.
fn re(pattern: &'static str) -> &'static Regex {
    static RES: OnceLock<[Regex; 2]> = OnceLock::new();
    let res = RES.get_or_init(|| [URIS, SCOPES].map(|p| Regex::new(p).expect("a valid pattern")));
    if pattern == URIS {
        &res[0]
    } else {
        &res[1]
    }
}

/// Whether `v` is a redirect URI list.
pub(super) fn are_uris(v: &str) -> bool {
    v.len() <= 1_000 && re(URIS).is_match(v)
}

/// Whether `v` is a list of scopes.
pub(super) fn are_scopes(v: &str) -> bool {
    re(SCOPES).is_match(v)
}

/// A kind's JSON schema.
pub(super) fn schema(p: P) -> Value {
    let id = json!({"type": "string", "pattern": "^[0-9]{1,20}$"});
    match p {
        P::Str => json!({"type": "string"}),
        P::Id => id,
        P::Int => json!({"type": "integer"}),
        P::Bool => json!({"type": "boolean"}),
        P::Ids => json!({"type": "array", "items": id, "minItems": 1}),
        P::Strs => json!({"type": "array", "items": {"type": "string"}}),
        P::Text(min, max) => json!({
            "type": "string", "minLength": min, "maxLength": max,
            "pattern": crate::http::shared::openapi::readable_pattern(),
        }),
        P::Uris => json!({"type": "string", "maxLength": 1000, "pattern": URIS}),
        P::Scopes => json!({"type": "string", "pattern": SCOPES}),
        P::Name => {
            use crate::http::shared::openapi::{CC, FMT, WS};
            json!({"type": "string", "minLength": 1, "maxLength": 50,
                "pattern": format!("^[^{CC}]*[^{CC}{WS}{FMT}][^{CC}]*$")})
        }
        P::Blank => json!({"type": "string", "maxLength": 0}),
        P::False => json!({"type": "boolean", "const": false}),
        P::Marker => {
            json!({"type": "object", "required": ["last_read_id"], "properties": {"last_read_id": id}})
        }
        P::Of(values) => json!({"type": "string", "enum": values}),
    }
}

/// A kind's schema as a form field (`application/x-www-form-urlencoded`):
/// text, so booleans and numbers as the words a form carries them in.
pub(super) fn form_schema(p: P) -> Value {
    match p {
        P::Bool => json!({"type": "string", "enum": ["true", "false", "1", "0"]}),
        P::False => json!({"type": "string", "enum": ["false", "0"]}),
        P::Int => json!({"type": "string", "pattern": "^-?[0-9]+$"}),
        P::Marker => schema(P::Id),
        p => schema(p),
    }
}

/// A form field's name for a field of kind `p` (a marker's is
/// `home[last_read_id]`).
pub(super) fn form_name(name: &str, p: P) -> String {
    match p {
        P::Marker => format!("{name}[last_read_id]"),
        _ => name.to_string(),
    }
}

/// Whether a text value (a query parameter, a form field) is of kind `p`.
fn text_is(p: P, v: &str) -> bool {
    let digits = |v: &str| !v.is_empty() && v.len() <= 20 && v.bytes().all(|b| b.is_ascii_digit());
    match p {
        P::Str | P::Strs => true,
        P::Id | P::Ids => digits(v),
        P::Int => {
            let digits = v.strip_prefix('-').unwrap_or(v);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        }
        P::Bool => matches!(v, "true" | "false" | "1" | "0"),
        P::Text(min, max) => {
            let n = v.chars().count();
            n >= usize::from(min) && n <= usize::from(max) && crate::text::unreadable(v).is_none()
        }
        P::Uris => are_uris(v),
        P::Scopes => are_scopes(v),
        P::Name => {
            let n = v.chars().count();
            (1..=50).contains(&n)
                && !v.chars().any(char::is_control)
                && crate::text::unreadable(v).is_none()
        }
        P::Blank => v.is_empty(),
        P::False => matches!(v, "false" | "0"),
        P::Marker => digits(v),
        P::Of(values) => values.contains(&v),
    }
}

/// Whether a JSON value is of kind `p`.
fn json_is(p: P, v: &Value) -> bool {
    match (p, v) {
        (P::Int, Value::Number(n)) => n.is_i64() || n.is_u64(),
        (P::Ids, Value::Array(items)) if items.is_empty() => false,
        (P::Bool, Value::Bool(_)) => true,
        (P::False, Value::Bool(b)) => !b,
        (P::Ids, Value::Array(items)) => items.iter().all(|i| json_is(P::Id, i)),
        (P::Strs, Value::Array(items)) => items.iter().all(Value::is_string),
        (P::Marker, Value::Object(o)) => o.get("last_read_id").is_some_and(|i| json_is(P::Id, i)),
        (P::Int | P::Bool | P::False | P::Ids | P::Strs | P::Marker, _) => false,
        (p, Value::String(s)) => text_is(p, s),
        _ => false,
    }
}

/// Why a request's query does not fit `doc` (`None`: it does).
fn query_wrong(doc: &Doc, query: Option<&str>) -> Option<String> {
    let pairs: Vec<(String, String)> = query
        .and_then(|q| serde_urlencoded::from_str(q).ok())
        .unwrap_or_default();
    for (name, p) in doc.query {
        let bare = name.trim_end_matches("[]");
        for (_, v) in pairs
            .iter()
            .filter(|(k, _)| k.trim_end_matches("[]") == bare)
        {
            if !text_is(*p, v) {
                return Some(format!("{bare} is not {}", what(*p)));
            }
        }
    }
    None
}

/// A kind in words, for an error.
fn what(p: P) -> &'static str {
    match p {
        P::Of(_) => "one of the values this server takes (see the OpenAPI document)",
        P::Id | P::Ids | P::Marker => "an id",
        P::Int => "a whole number",
        P::Bool => "true or false",
        P::False => "false",
        P::Text(..) => "readable text of the allowed length",
        P::Name => "a name of 1 to 50 characters, none a control character",
        P::Uris => "a list of absolute URIs",
        P::Scopes => "a list of known scopes",
        P::Blank => "empty (not supported here)",
        P::Str | P::Strs => "text",
    }
}

/// Why a body does not fit `doc` (`None`: it does): its documented fields
/// of their kinds, the required ones there.
fn body_wrong(doc: &Doc, kind: &str, body: &[u8]) -> Option<(StatusCode, String)> {
    let invalid = |why: String| Some((StatusCode::UNPROCESSABLE_ENTITY, why));
    if kind.starts_with("multipart/") {
        return None;
    }
    let blank = body.iter().all(u8::is_ascii_whitespace);
    let present: Vec<&str> = if kind.starts_with("application/json") && !blank {
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
            return Some((
                StatusCode::BAD_REQUEST,
                "The body is not a JSON object".into(),
            ));
        };
        for (name, p) in doc.body {
            // A null is no value of any kind documented here.
            if let Some(v) = map.get(*name) {
                if !json_is(*p, v) {
                    return invalid(format!("{name} is not {}", what(*p)));
                }
            }
        }
        doc.body
            .iter()
            .filter(|(n, _)| map.get(*n).is_some_and(|v| !v.is_null()))
            .map(|(n, _)| *n)
            .collect()
    } else {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(body).unwrap_or_default();
        let mut present = Vec::new();
        for (name, p) in doc.body {
            let keys = [
                name.to_string(),
                format!("{name}[]"),
                format!("{name}[last_read_id]"),
            ];
            for (_, v) in pairs.iter().filter(|(k, _)| keys.contains(k)) {
                if !text_is(*p, v) {
                    return invalid(format!("{name} is not {}", what(*p)));
                }
                present.push(*name);
            }
        }
        present
    };
    if let Some(missing) = doc.required.iter().find(|r| !present.contains(r)) {
        return invalid(format!("{missing} is required"));
    }
    if doc.body.iter().all(|(_, p)| *p == P::Marker) && present.is_empty() {
        return invalid("home or notifications is required".into());
    }
    None
}

/// Each documented operation by method and path.
pub(super) type Docs = HashMap<(String, &'static str), Doc>;

/// The gate (a route layer: it knows the matched path).
pub(super) async fn gate(
    State(docs): State<Arc<Docs>>,
    matched: Option<MatchedPath>,
    req: Request,
    next: Next,
) -> Response {
    let Some(path) = matched else {
        return next.run(req).await;
    };
    let method = req.method().as_str().to_ascii_lowercase();
    // OAuth's own calls answer in OAuth's shape (`invalid_client`,
    // `unsupported_grant_type`): their handlers judge every field.
    let Some(doc) = docs
        .get(&(method, path.as_str()))
        .copied()
        .filter(|_| !path.as_str().starts_with("/oauth/"))
    else {
        return next.run(req).await;
    };
    let query = req.uri().query().map(str::to_string);
    if doc.auth {
        let bearer = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer "));
        let in_query = query.as_deref().is_some_and(|q| {
            q.split('&')
                .any(|p| p.len() > 13 && p.starts_with("access_token="))
        });
        if !bearer && !in_query {
            return error(StatusCode::UNAUTHORIZED, "The access token is invalid").into_response();
        }
    }
    if let Some(why) = query_wrong(&doc, query.as_deref()) {
        return error(StatusCode::BAD_REQUEST, &why).into_response();
    }
    if doc.body.is_empty() {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let kind = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let Ok(bytes) = to_bytes(body, MOST_BODY).await else {
        return error(StatusCode::PAYLOAD_TOO_LARGE, "The body is too large").into_response();
    };
    if let Some((status, why)) = body_wrong(&doc, &kind, &bytes) {
        return error(status, &why).into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The largest body the gate reads (the listener's own limit is smaller
/// or equal: `DefaultBodyLimit` answers 413 first).
const MOST_BODY: usize = 16 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_check_text_and_json_as_their_schemas_say() {
        assert!(text_is(P::Int, "-5") && !text_is(P::Int, "null"));
        assert!(text_is(P::Id, "12") && !text_is(P::Id, "") && !text_is(P::Id, "1a"));
        assert!(text_is(P::Bool, "1") && !text_is(P::Bool, "yes"));
        assert!(
            text_is(P::Text(1, 5), "hi")
                && !text_is(P::Text(1, 5), " ")
                && !text_is(P::Text(1, 5), "toolong")
        );
        assert!(text_is(
            P::Uris,
            "urn:ietf:wg:oauth:2.0:oob https://a.example/cb"
        ));
        assert!(!text_is(P::Uris, "not a uri"));
        assert!(json_is(P::Ids, &json!(["1", "2"])) && !json_is(P::Ids, &json!([1])));
        assert!(json_is(P::Marker, &json!({"last_read_id": "5"})));
        assert!(!json_is(P::Str, &json!(5)) && !json_is(P::Bool, &json!("true")));
    }
}
