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
