//! A Mastodon request's fields: a form (`application/x-www-form-urlencoded`,
//! what most clients send), JSON (masto.js), or the query string, read
//! alike as text.

use axum::http::{header, HeaderMap};
use std::collections::HashMap;

/// Most fields read from one request.
const MOST_FIELDS: usize = 64;

/// The fields of a request body (a form or a JSON object; anything else:
/// none), then those of `query` where the body has none.
pub(super) fn fields(
    headers: &HeaderMap,
    body: &[u8],
    query: Option<&str>,
) -> HashMap<String, String> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    let mut out: HashMap<String, String> = HashMap::new();
    if json {
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(body) {
            for (k, v) in map.into_iter().take(MOST_FIELDS) {
                let text = match v {
                    serde_json::Value::String(s) => s,
                    serde_json::Value::Array(items) => items
                        .iter()
                        .filter_map(|i| i.as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                        .join(" "),
                    serde_json::Value::Null => continue,
                    other => other.to_string(),
                };
                out.insert(k, text);
            }
        }
    } else if let Ok(pairs) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(body) {
        for (k, v) in pairs.into_iter().take(MOST_FIELDS) {
            // `redirect_uris[]` and the like: the values joined by a space.
            let k = k.trim_end_matches("[]").to_string();
            out.entry(k)
                .and_modify(|e| {
                    e.push(' ');
                    e.push_str(&v);
                })
                .or_insert(v);
        }
    }
    if let Some(q) = query {
        if let Ok(pairs) = serde_urlencoded::from_str::<Vec<(String, String)>>(q) {
            for (k, v) in pairs.into_iter().take(MOST_FIELDS) {
                out.entry(k.trim_end_matches("[]").to_string()).or_insert(v);
            }
        }
    }
    out
}
