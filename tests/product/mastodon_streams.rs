//! The Mastodon SSE streams as served on the raw socket (a connection's
//! first request), where the hub writes each event's Mastodon message
//! itself: the answer's head, every stream kind getting what it should and
//! only that, deletes, refusals in Mastodon's shape.

use crate::common::{StreamClient, TestApp};
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The head of the answer to `GET path` sent alone on a new connection.
async fn raw_head(base: &str, path: &str, token: Option<&str>) -> String {
    let addr = base.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\n");
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf))
            .await
            .expect("a head within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "closed before a head: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    // The body after it, if any came (a refusal's JSON).
    let _ = tokio::time::timeout(Duration::from_millis(300), tcp.read(&mut buf))
        .await
        .map(|r| r.map(|n| got.extend_from_slice(&buf[..n])));
    String::from_utf8_lossy(&got).to_lowercase()
}

/// A Mastodon SSE stream on a connection of its own.
async fn open(app: &TestApp, base: &str, path: &str, token: &str) -> StreamClient {
    let s = app
        .stream_url(&format!("{base}{path}"), Some(token), &[])
        .await;
    assert_eq!(s.status, StatusCode::OK, "{path}: {}", s.body);
    s
}

/// The next message's (event, payload id or text), skipping keep-alives.
async fn next(s: &mut StreamClient, what: &str) -> (String, String) {
    let m = s.next(what).await;
    let id = match &m.data {
        serde_json::Value::Object(o) => o["id"].as_str().unwrap_or_default().to_string(),
        other => other.to_string().trim_matches('"').to_string(),
    };
    (m.event, id)
}

#[tokio::test]
async fn mastodon_sse_on_the_raw_socket_carries_each_kind_to_the_right_streams() {
    let (app, base) = TestApp::with_mastodon().await;
    let (_, ann) = app.user("ann_raw").await;
    let (bob_id, bob) = app.user("bob_raw").await;
    let (_, cat) = app.user("cat_raw").await;
    app.follow(&ann, &bob_id).await;
    let (status, _) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&cat),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // Served on the raw socket: a body that ends with the connection.
    let head = raw_head(&base, "/api/v1/streaming/public", Some(&ann)).await;
    assert!(head.starts_with("http/1.1 200 ok"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    assert!(!head.contains("transfer-encoding"), "{head}");
    // Refusals in Mastodon's shape, there too.
    let head = raw_head(&base, "/api/v1/streaming/public", None).await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(head.contains("{\"error\":"), "{head}");
    let head = raw_head(&base, "/api/v1/streaming/nowhere", Some(&ann)).await;
    assert!(head.starts_with("http/1.1 404"), "{head}");

    let mut public = open(&app, &base, "/api/v1/streaming/public", &ann).await;
    let mut user = open(&app, &base, "/api/v1/streaming/user", &ann).await;
    let mut notes = open(&app, &base, "/api/v1/streaming/user/notification", &ann).await;
    let mut tag = open(&app, &base, "/api/v1/streaming/hashtag?tag=raw", &ann).await;
    // Live once a status reaches the public stream.
    loop {
        let sid = app.say(&bob, "warming up").await;
        if let Some(m) = public.next_within(Duration::from_millis(500)).await {
            assert_eq!(m.data["id"], sid.as_str());
            break;
        }
    }
    while user.next_within(Duration::from_millis(300)).await.is_some() {}

    let private = app.say(&cat, "private #raw").await;
    let first = app.say(&bob, "first #raw").await;
    assert_eq!(
        next(&mut public, "bob's").await,
        ("update".into(), first.clone())
    );
    assert_eq!(
        next(&mut tag, "bob's #raw").await,
        ("update".into(), first.clone())
    );
    assert_eq!(
        next(&mut user, "bob's, followed").await,
        ("update".into(), first.clone())
    );
    let _ = private;

    // A like of ann's status: a notification on both of her user streams,
    // on neither public one.
    let mine = app.say(&ann, "like me").await;
    assert_eq!(
        next(&mut public, "ann's").await,
        ("update".into(), mine.clone())
    );
    assert_eq!(
        next(&mut user, "ann's own").await,
        ("update".into(), mine.clone())
    );
    let (status, _) = app
        .post(
            &format!("/api/v1/statuses/{mine}/like"),
            Some(&bob),
            json!({}),
        )
        .await;
    assert!(status.is_success(), "{status}");
    let (kind, _) = next(&mut notes, "the like's notification").await;
    assert_eq!(kind, "notification");
    loop {
        let (kind, _) = next(&mut user, "the like's notification").await;
        if kind == "notification" {
            break;
        }
    }

    // A delete: the id, on the streams that had the status.
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{first}"), Some(&bob))
        .await;
    assert!(status.is_success(), "{status}");
    assert_eq!(
        next(&mut public, "the delete").await,
        ("delete".into(), first.clone())
    );
    assert_eq!(next(&mut tag, "the delete").await, ("delete".into(), first));
    // Nothing else came: not cat's private status, no update on the
    // notification stream.
    public.assert_quiet(Duration::from_millis(500)).await;
    tag.assert_quiet(Duration::from_millis(200)).await;
    notes.assert_quiet(Duration::from_millis(200)).await;
}
