//! The Mastodon API's OpenAPI 3.1 document (`GET /openapi.json` on its
//! listener), made from the route table ([`super::routes::table`]) and the
//! entities' schemas below: the shapes this server answers, which are
//! Mastodon 4.3's where it has the field.

use super::schema::{form_name, form_schema, schema, Doc, P};
use serde_json::{json, Map, Value};

/// One operation.
fn operation(path: &str, doc: &Doc) -> Value {
    let mut params: Vec<Value> = Vec::new();
    for part in path.split('/').filter(|p| p.starts_with('{')) {
        let name = part.trim_matches(['{', '}']);
        let schema = if name == "tag" {
            json!({"type": "string", "pattern": "^[A-Za-z0-9_]{1,100}$"})
        } else {
            schema(P::Id)
        };
        params.push(json!({"name": name, "in": "path", "required": true, "schema": schema}));
    }
    for (name, p) in doc.query {
        let mut param =
            json!({"name": name, "in": "query", "required": false, "schema": schema(*p)});
        if matches!(p, P::Ids | P::Strs) {
            param["style"] = json!("form");
            param["explode"] = json!(true);
        }
        params.push(param);
    }
    let error = json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
    let mut responses = Map::new();
    let ok = match doc.reply {
        "html" => {
            json!({"description": "A page", "content": {"text/html": {"schema": {"type": "string"}}}})
        }
        "text" => {
            json!({"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}})
        }
        "stream" => {
            json!({"description": "A stream of events (SSE, or a WebSocket once upgraded)", "content": {"text/event-stream": {"schema": {"type": "string"}}}})
        }
        "object" => {
            json!({"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}})
        }
        name => {
            json!({"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}})
        }
    };
    responses.insert("200".into(), ok);
    // The gate's answers (`schema::gate`): a token where one is needed, the
    // query's and the body's kinds.
    let mut codes: Vec<u16> = doc.codes.to_vec();
    if doc.auth {
        codes.push(401);
    }
    if !doc.query.is_empty() {
        codes.push(400);
    }
    if !doc.body.is_empty() {
        codes.extend([400, 413, 422]);
    }
    // Writes are limited per user (our API's rate limits).
    if doc.method != "get" && doc.auth {
        codes.push(429);
    }
    codes.sort_unstable();
    codes.dedup();
    for code in &codes {
        let mut e = error.clone();
        e["description"] = json!(match code {
            302 => "Sent to the redirect URI",
            400 => "A parameter is not one",
            413 => "The body is too large",
            401 => "No token, or not a valid one",
            403 => "Not allowed",
            404 => "Record not found",
            422 => "Not accepted",
            429 => "Too many requests",
            _ => "The server cannot answer now",
        });
        if *code == 302 {
            e = json!({"description": "Sent to the redirect URI"});
        }
        if doc.reply == "html" && *code != 302 {
            e["content"]["text/html"] = json!({"schema": {"type": "string"}});
        }
        responses.insert(code.to_string(), e);
    }
    let mut op = json!({
        "operationId": format!("{}_{}", doc.method, path.replace(['/', '{', '}', '.', '-'], "_")),
        "summary": doc.summary,
        "parameters": params,
        "responses": responses,
    });
    if doc.auth {
        op["security"] = json!([{"bearer": []}]);
    }
    if !doc.body.is_empty() {
        let markers = doc.body.iter().all(|(_, p)| *p == P::Marker);
        let object = |props: Map<String, Value>, required: Vec<String>| {
            let mut o = json!({"type": "object", "properties": props, "required": required});
            if markers {
                o["minProperties"] = json!(1);
            }
            o
        };
        let json_props = doc
            .body
            .iter()
            .map(|(n, p)| (n.to_string(), schema(*p)))
            .collect();
        let required: Vec<String> = doc.required.iter().map(|r| r.to_string()).collect();
        let mut content =
            json!({"application/json": {"schema": object(json_props, required.clone())}});
        // A form carries no list well enough to document (a one-item list
        // and a value read alike): such bodies are documented as JSON only,
        // though the server reads their forms too.
        if !doc.body.iter().any(|(_, p)| matches!(p, P::Ids | P::Strs)) {
            let form_props = doc
                .body
                .iter()
                .map(|(n, p)| (form_name(n, *p), form_schema(*p)))
                .collect();
            content["application/x-www-form-urlencoded"] =
                json!({"schema": object(form_props, required)});
        }
        op["requestBody"] =
            json!({"required": !doc.required.is_empty() || markers, "content": content});
    }
    op
}

/// The whole document, of each path's operations.
pub(super) fn document(routes: &[(&'static str, Vec<Doc>)]) -> Value {
    let mut paths = Map::new();
    for (path, docs) in routes {
        let mut item = Map::new();
        for doc in docs {
            item.insert(doc.method.to_string(), operation(path, doc));
        }
        paths.insert(path.to_string(), Value::Object(item));
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "firehose: the Mastodon-compatible API",
            "version": "4.3.0-compatible",
            "description": "The part of Mastodon's REST and streaming API this server speaks, over its own data (docs/api.md, The Mastodon-compatible API).",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas(),
        },
    })
}

/// A string or null.
fn nullable(t: &str) -> Value {
    json!({"type": [t, "null"]})
}

/// The entities' schemas.
fn schemas() -> Value {
    let s = json!({"type": "string"});
    let n = json!({"type": "integer", "minimum": 0});
    let b = json!({"type": "boolean"});
    let list = |of: &str| json!({"type": "array", "items": {"$ref": format!("#/components/schemas/{of}")}});
    json!({
        "Error": {"type": "object", "required": ["error"], "properties": {"error": s, "error_description": s}},
        "Empty": {"type": "object"},
        "EmptyList": {"type": "array", "maxItems": 0},
        "Count": {"type": "object", "required": ["count"], "properties": {"count": n}},
        "Account": {
            "type": "object",
            "required": ["id", "username", "acct", "display_name", "locked", "bot", "group", "created_at", "note", "url", "avatar", "header", "followers_count", "following_count", "statuses_count", "emojis", "fields"],
            "properties": {
                "id": s, "username": s, "acct": s, "display_name": s, "locked": b, "bot": b, "group": b,
                "discoverable": b, "created_at": s, "note": s, "url": s, "uri": s, "avatar": s,
                "avatar_static": s, "header": s, "header_static": s, "followers_count": n,
                "following_count": n, "statuses_count": n, "last_status_at": nullable("string"),
                "emojis": {"type": "array"}, "fields": {"type": "array"}, "source": {"type": "object"},
            },
        },
        "Accounts": list("Account"),
        "Mention": {"type": "object", "required": ["id", "username", "acct", "url"], "properties": {"id": s, "username": s, "acct": s, "url": s}},
        "Tag": {"type": "object", "required": ["name", "url"], "properties": {"name": s, "url": s, "history": {"type": "array"}, "following": b}},
        "Tags": list("Tag"),
        "Status": {
            "type": "object",
            "required": ["id", "uri", "created_at", "account", "content", "visibility", "sensitive", "spoiler_text", "media_attachments", "mentions", "tags", "emojis", "reblogs_count", "favourites_count", "replies_count", "reblog", "in_reply_to_id", "in_reply_to_account_id", "edited_at"],
            "properties": {
                "id": s, "uri": s, "url": nullable("string"), "created_at": s,
                "account": {"$ref": "#/components/schemas/Account"},
                "content": s, "visibility": {"enum": ["public", "unlisted", "private", "direct"]},
                "sensitive": b, "spoiler_text": s, "media_attachments": {"type": "array", "maxItems": 0},
                "mentions": list("Mention"), "tags": list("Tag"), "emojis": {"type": "array"},
                "reblogs_count": n, "favourites_count": n, "replies_count": n,
                "reblog": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Status"}]},
                "in_reply_to_id": nullable("string"), "in_reply_to_account_id": nullable("string"),
                "edited_at": nullable("string"), "favourited": b, "reblogged": b, "bookmarked": b,
                "muted": b, "pinned": b, "text": s,
            },
        },
        "Statuses": list("Status"),
        "StatusSource": {"type": "object", "required": ["id", "text", "spoiler_text"], "properties": {"id": s, "text": s, "spoiler_text": s}},
        "StatusEdits": {"type": "array", "items": {"type": "object", "required": ["content", "created_at", "account"], "properties": {"content": s, "created_at": s, "account": {"$ref": "#/components/schemas/Account"}}}},
        "Context": {"type": "object", "required": ["ancestors", "descendants"], "properties": {"ancestors": list("Status"), "descendants": list("Status")}},
        "Relationship": {
            "type": "object",
            "required": ["id", "following", "followed_by", "blocking", "blocked_by", "muting", "requested", "requested_by"],
            "properties": {"id": s, "following": b, "followed_by": b, "blocking": b, "blocked_by": b, "muting": b, "requested": b, "requested_by": b, "showing_reblogs": b, "notifying": b, "note": s},
        },
        "Relationships": list("Relationship"),
        "Notification": {
            "type": "object",
            "required": ["id", "type", "created_at", "account"],
            "properties": {
                "id": s, "type": {"enum": ["follow", "follow_request", "favourite", "reblog", "mention"]},
                "created_at": s, "account": {"$ref": "#/components/schemas/Account"},
                "status": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Status"}]}, "group_key": s,
            },
        },
        "Notifications": list("Notification"),
        "GroupedNotifications": {
            "type": "object",
            "required": ["accounts", "statuses", "notification_groups"],
            "properties": {"accounts": list("Account"), "statuses": list("Status"), "notification_groups": {"type": "array", "items": {"type": "object", "required": ["group_key", "notifications_count", "type", "most_recent_notification_id", "sample_account_ids"]}}},
        },
        "Conversation": {
            "type": "object",
            "required": ["id", "unread", "accounts", "last_status"],
            "properties": {"id": s, "unread": b, "accounts": list("Account"), "last_status": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Status"}]}},
        },
        "Conversations": list("Conversation"),
        "List": {"type": "object", "required": ["id", "title", "replies_policy", "exclusive"], "properties": {"id": s, "title": s, "replies_policy": s, "exclusive": b}},
        "Lists": list("List"),
        "Search": {"type": "object", "required": ["accounts", "statuses", "hashtags"], "properties": {"accounts": list("Account"), "statuses": list("Status"), "hashtags": list("Tag")}},
        "Markers": {"type": "object", "additionalProperties": {"type": "object", "required": ["last_read_id", "version", "updated_at"], "properties": {"last_read_id": s, "version": n, "updated_at": s}}},
        "Preferences": {"type": "object", "required": ["posting:default:visibility"]},
        "Application": {"type": "object", "required": ["name"], "properties": {"name": s, "website": nullable("string"), "client_id": s, "client_secret": s, "redirect_uri": s, "scopes": {"type": "array", "items": s}}},
        "Token": {"type": "object", "required": ["access_token", "token_type", "scope", "created_at"], "properties": {"access_token": s, "token_type": s, "scope": s, "created_at": n}},
        "OAuthMetadata": {"type": "object", "required": ["issuer", "token_endpoint", "authorization_endpoint"]},
        "InstanceV1": {"type": "object", "required": ["uri", "title", "version", "urls"]},
        "InstanceV2": {"type": "object", "required": ["domain", "title", "version", "configuration"]},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_in_the_document_with_each_method() {
        let table: Vec<(&'static str, Vec<Doc>)> = super::super::routes::table()
            .into_iter()
            .map(|r| (r.path, r.docs))
            .collect();
        let doc = document(&table);
        for (path, docs) in &table {
            for d in docs {
                assert!(
                    doc["paths"][path][d.method].is_object(),
                    "{} {path}",
                    d.method
                );
            }
        }
        assert!(doc["paths"]["/api/v1/statuses/{id}"]["put"]["requestBody"].is_object());
    }
}
