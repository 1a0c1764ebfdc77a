//! A Mastodon request's fields: a form (`application/x-www-form-urlencoded`,
//! what most clients send), a multipart form (masto.js's OAuth and profile
//! calls), JSON (masto.js), or the query string, read alike as text. A
//! multipart part that is a file reads as the text `(file)`: no endpoint
//! here takes files, and each refuses one by its name.

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
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let json = kind.starts_with("application/json");
    let mut out: HashMap<String, String> = HashMap::new();
    if let Some(boundary) = boundary(kind) {
        for (k, v) in multipart(body, &boundary).into_iter().take(MOST_FIELDS) {
            let k = k.trim_end_matches("[]").to_string();
            out.entry(k)
                .and_modify(|e| {
                    e.push(' ');
                    e.push_str(&v);
                })
                .or_insert(v);
        }
    } else if json {
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

/// The boundary of a `multipart/form-data` content type.
fn boundary(kind: &str) -> Option<String> {
    if !kind.to_ascii_lowercase().starts_with("multipart/form-data") {
        return None;
    }
    kind.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.eq_ignore_ascii_case("boundary")
            .then(|| v.trim_matches('"').to_string())
            .filter(|b| !b.is_empty() && b.len() <= 200)
    })
}

/// The named parts of a multipart body: text as text, a file as `(file)`;
/// a part without a name, or past the closing boundary, is left out.
fn multipart(body: &[u8], boundary: &str) -> Vec<(String, String)> {
    let delimiter = format!("--{boundary}");
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    for part in text.split(delimiter.as_str()).skip(1) {
        if part.starts_with("--") {
            break;
        }
        let part = part.strip_prefix("\r\n").unwrap_or(part);
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition"))
            .unwrap_or_default();
        let param = |name: &str| {
            disposition.split(';').find_map(|p| {
                let (k, v) = p.trim().split_once('=')?;
                (k == name).then(|| v.trim_matches('"').to_string())
            })
        };
        let Some(name) = param("name") else { continue };
        let value = if param("filename").is_some() {
            "(file)".to_string()
        } else {
            value.to_string()
        };
        out.push((name, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_fields_are_read_and_files_named() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            "multipart/form-data; boundary=XyZ".parse().unwrap(),
        );
        let body = "--XyZ\r\ncontent-disposition: form-data; name=\"grant_type\"\r\n\r\npassword\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"scope\"\r\n\r\nread write\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"avatar\"; filename=\"a.png\"\r\n\
                    Content-Type: image/png\r\n\r\n\u{1}PNG\r\n--XyZ--\r\n";
        let f = fields(&headers, body.as_bytes(), Some("scope=ignored&extra=1"));
        assert_eq!(f["grant_type"], "password");
        assert_eq!(f["scope"], "read write");
        assert_eq!(f["avatar"], "(file)");
        assert_eq!(f["extra"], "1");
    }
}
