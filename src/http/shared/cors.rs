//! Browsers on other origins (CORS): which origins may call the API and
//! open the streams (`--cors-origins`: `*` by default, as Mastodon does for
//! its bearer-token API, since no cookie is ever involved), what a
//! preflight answers, and the headers every answer to such a page carries.
//! Used by the router's middleware and the raw stream path.

use axum::http::{HeaderMap, HeaderValue};

/// Methods a page may use.
pub(crate) const ALLOW_METHODS: &str = "GET, POST, PATCH, DELETE, OPTIONS";
/// Request headers a page may send.
pub(crate) const ALLOW_HEADERS: &str =
    "Authorization, Content-Type, Last-Event-ID, Idempotency-Key";
/// Response headers a page may read.
pub(crate) const EXPOSE_HEADERS: &str = "Retry-After, X-Request-Id";
/// How long a browser may keep a preflight's answer, seconds.
pub(crate) const MAX_AGE: &str = "600";

/// The `Access-Control-Allow-Origin` value for a request from `origin`
/// under the configured `allowed` origins, if it is allowed: `*` for any,
/// else the origin itself (then the answer varies by `Origin`).
pub(crate) fn allow(allowed: &str, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
    let origin = origin?;
    let allowed = allowed.trim();
    if allowed == "*" {
        return Some(HeaderValue::from_static("*"));
    }
    let text = origin.to_str().ok()?;
    allowed
        .split(',')
        .map(str::trim)
        .any(|a| !a.is_empty() && a.eq_ignore_ascii_case(text))
        .then(|| origin.clone())
}

/// Adds the CORS headers of an answer whose request came with `allow`'s
/// origin.
pub(crate) fn decorate(headers: &mut HeaderMap, allow: HeaderValue) {
    use axum::http::header;
    if allow != "*" {
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_list_or_none() {
        let o = HeaderValue::from_static("http://a.example");
        assert_eq!(allow("*", Some(&o)).unwrap(), "*");
        assert_eq!(
            allow("http://b.example, http://a.example", Some(&o)).unwrap(),
            o
        );
        assert!(allow("http://b.example", Some(&o)).is_none());
        assert!(allow("", Some(&o)).is_none());
        assert!(allow("*", None).is_none());
    }
}
