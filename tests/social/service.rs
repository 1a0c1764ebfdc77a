//! Redis going away, contract errors and shutdown.

use crate::assert_error;
use crate::common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn redis_going_away_gives_503_and_the_server_recovers_alone() {
    let mut app = TestApp::start().await;
    app.redis.stop();
    let (status, err) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "sam", "name": "s", "email": "s@x", "password": "password123"}),
        )
        .await;
    assert_error(status, &err, StatusCode::SERVICE_UNAVAILABLE);
    let (status, _) = app.get("/readyz", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(app.get("/healthz", None).await.0, StatusCode::OK);
    app.redis.restart();
    app.eventually("ready again", || async {
        app.get("/readyz", None).await.0 == StatusCode::OK
    })
    .await;
    app.register("sam").await;
}

#[tokio::test]
async fn bodies_too_large_unknown_routes_and_wrong_methods_get_contract_errors() {
    let app = TestApp::start().await;
    let (_, token) = app.user("tess").await;
    let huge = json!({"message": "x".repeat(300_000)});
    let (status, err) = app.post("/api/v1/statuses", Some(&token), huge).await;
    assert_error(status, &err, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, err) = app.get("/api/v1/nope", None).await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (status, err) = app
        .call(Method::PUT, "/api/v1/users", None, Some(json!({})))
        .await;
    assert_error(status, &err, StatusCode::METHOD_NOT_ALLOWED);
    // The server is still fine afterwards.
    app.say(&token, "still here").await;
}

#[tokio::test]
async fn shutdown_returns_once_everything_has_stopped() {
    let app = TestApp::start().await;
    app.register("xena").await;
    tokio::time::timeout(Duration::from_secs(20), app.shutdown())
        .await
        .unwrap();
}

/// Sets `maxmemory` on every node of the app's Redis.
fn set_maxmemory(app: &TestApp, bytes: &str) {
    let urls = app.redis.cluster_spec().unwrap_or_else(|| app.redis.url());
    for url in urls.split(',') {
        for (k, v) in [("maxmemory-policy", "noeviction"), ("maxmemory", bytes)] {
            let ok = std::process::Command::new("redis-cli")
                .args(["-u", url, "CONFIG", "SET", k, v])
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(ok, "CONFIG SET {k} on {url}");
        }
    }
}

#[tokio::test]
async fn a_full_redis_answers_503_store_full_and_writes_resume_once_it_has_room() {
    let app = TestApp::start().await;
    let (_, token) = app.user("filler").await;
    set_maxmemory(&app, "1");
    let (status, body) = app
        .post(
            "/api/v1/statuses",
            Some(&token),
            json!({"message": "no room"}),
        )
        .await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"]["code"], "store_full", "{body}");
    set_maxmemory(&app, "0");
    app.say(&token, "room again").await;
}

#[tokio::test]
async fn hostile_inputs_get_errors_in_the_contracts_shape() {
    let app = TestApp::start().await;
    let (_, token) = app.user("careful").await;
    let (other, _) = app.user("other_one").await;

    // Query strings longer than hyper parses: 414 with a body (over a raw
    // socket: the client library refuses such a URI itself).
    for kib in [60, 70, 100] {
        let long = "a".repeat(kib * 1024);
        let answer = raw_request(
            &app,
            &format!("GET /api/v1/timelines/home?x={long} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        )
        .await;
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        assert!(head.starts_with("HTTP/1.1 4"), "{kib} KiB: {head}");
        if kib > 64 {
            assert!(head.starts_with("HTTP/1.1 414"), "{kib} KiB: {head}");
        }
        let body: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        assert!(
            body["error"]["code"].is_string(),
            "{kib} KiB: {head} {body}"
        );
    }

    // Nothing visible, or a control character: 400 for every text.
    for text in [
        "\u{200B}\u{200D}",
        "\u{202E}\u{2066}",
        " \u{FEFF} ",
        "nul\u{0}in",
    ] {
        let (status, body) = app
            .post("/api/v1/statuses", Some(&token), json!({"message": text}))
            .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST);
        let (status, body) = app
            .call(
                Method::PATCH,
                "/api/v1/me",
                Some(&token),
                Some(json!({"name": text})),
            )
            .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST);
        let (status, body) = app
            .post(
                "/api/v1/conversations",
                Some(&token),
                json!({"participants": [other], "text": text}),
            )
            .await;
        assert_error(status, &body, StatusCode::BAD_REQUEST);
    }
    // Digits that name no user are an unknown user.
    let (status, body) = app
        .post(
            "/api/v1/conversations",
            Some(&token),
            json!({"participants": ["0"], "text": "hello"}),
        )
        .await;
    assert_error(status, &body, StatusCode::NOT_FOUND);

    // Lookups need a token; by email, 30 a minute per user.
    let (status, body) = app
        .get("/api/v1/users/lookup?email=careful@example.com", None)
        .await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED);
    for _ in 0..30 {
        let (status, _) = app
            .get(
                "/api/v1/users/lookup?email=nobody@example.com",
                Some(&token),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, body) = app
        .get("/api/v1/users/lookup?any=careful@example.com", Some(&token))
        .await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS);
    let (status, _) = app
        .get("/api/v1/users/lookup?login=careful", Some(&token))
        .await;
    assert_eq!(status, StatusCode::OK, "a lookup by login is not counted");
}

#[tokio::test]
async fn ten_failed_logins_to_one_account_hold_it_off_from_every_address() {
    let app = TestApp::start().await;
    app.register("guessed").await;
    for i in 0..10 {
        let (status, body) = app
            .post(
                "/api/v1/sessions",
                None,
                json!({"identifier": "guessed", "password": format!("wrong guess {i}")}),
            )
            .await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED);
    }
    // The right password too, for now: the guesser cannot tell.
    let resp = app
        .http
        .post(app.url("/api/v1/sessions"))
        .json(&json!({"identifier": "GUESSED@example.com", "password": "password123"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=900).contains(&retry), "Retry-After {retry}");
    // Another account is not held off.
    app.user("unguessed").await;
}

#[tokio::test]
async fn every_schema_the_openapi_document_refers_to_is_defined() {
    let app = TestApp::start().await;
    let (status, doc) = app.get("/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    let text = doc.to_string();
    let defined = doc["components"]["schemas"].as_object().unwrap();
    let mut missing = Vec::new();
    for part in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = &part[..part.find('"').unwrap()];
        if !defined.contains_key(name) {
            missing.push(name.to_string());
        }
    }
    assert!(missing.is_empty(), "undefined schemas: {missing:?}");
}

/// Sends `request` on a new connection and reads the answer to its end.
async fn raw_request(app: &TestApp, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}
