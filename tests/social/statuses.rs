//! Posting, validating, deleting and idempotent retries of statuses.

use crate::assert_error;
use crate::common::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

#[tokio::test]
async fn statuses_validate_message_and_coordinates() {
    let app = TestApp::start().await;
    let (_, token) = app.user("hank").await;
    let ok = [
        json!({"message": "x"}),
        json!({"message": "é".repeat(280)}),
        json!({"message": "🦀".repeat(280)}),
        json!({"message": "edge", "lat": 90, "lon": -180}),
        json!({"message": "edge", "lat": -90.0, "lon": 180.0}),
    ];
    for body in ok {
        let (status, s) = app
            .post("/api/v1/statuses", Some(&token), body.clone())
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}: {s}");
    }
    let bad = [
        json!({"message": ""}),
        json!({"message": "  \n\t "}),
        json!({"message": "a".repeat(281)}),
        json!({"message": "🦀".repeat(281)}),
        json!({"message": "x", "lat": 10}),
        json!({"message": "x", "lon": 10}),
        json!({"message": "x", "lat": 91, "lon": 0}),
        json!({"message": "x", "lat": 0, "lon": 180.5}),
        json!({"message": "x", "lat": "north", "lon": 0}),
        json!({"message": 5}),
        json!({}),
    ];
    for body in bad {
        let (status, err) = app
            .post("/api/v1/statuses", Some(&token), body.clone())
            .await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let (status, err) = app
        .post("/api/v1/statuses", None, json!({"message": "x"}))
        .await;
    assert_error(status, &err, StatusCode::UNAUTHORIZED);
    let (status, err) = app
        .post(
            "/api/v1/statuses",
            Some(&token),
            json!({"message": "x", "reply_to": "987654"}),
        )
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_status_carries_its_fields_hashtags_mentions_and_reply() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("ivy").await;
    let (_, b) = app.user("jack").await;
    let first = app.post_status(&a, json!({"message": "hello #Rust and #redis, ping @jack and @nobody", "lat": 37.5, "lon": -122.25})).await;
    assert_eq!(first["uid"], ida.as_str());
    assert_eq!(first["login"], "ivy");
    assert_eq!(first["lat"], 37.5);
    assert_eq!(first["lon"], -122.25);
    assert_eq!(first["hashtags"], json!(["Rust", "redis"]));
    assert_eq!(first["mentions"], json!(["jack"]));
    assert!(first["posted"].is_number());
    assert!(first.get("reply_to").is_none());
    let reply = app
        .post_status(&b, json!({"message": "hi back", "reply_to": first["id"]}))
        .await;
    assert_eq!(reply["reply_to"], first["id"]);
    assert!(reply.get("lat").is_none());
    let (status, fetched) = app
        .get(
            &format!("/api/v1/statuses/{}", first["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // The same status, now with one reply.
    let mut first = first;
    first["replies"] = json!(1);
    assert_eq!(fetched, first);
}

#[tokio::test]
async fn delete_is_for_the_author_only_and_keeps_the_posts_counter_exact() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("kim").await;
    let (_, b) = app.user("lou").await;
    let s1 = app.say(&a, "one").await;
    let s2 = app.say(&a, "two").await;
    let (_, user) = app.get(&format!("/api/v1/users/{ida}"), None).await;
    assert_eq!(user["posts"], 2);
    let (status, err) = app
        .delete(&format!("/api/v1/statuses/{s1}"), Some(&b))
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{s1}"), Some(&a))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, err) = app
        .delete(&format!("/api/v1/statuses/{s1}"), Some(&a))
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (status, err) = app.get(&format!("/api/v1/statuses/{s1}"), None).await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (_, user) = app.get(&format!("/api/v1/users/{ida}"), None).await;
    assert_eq!(user["posts"], 1);
    assert_eq!(
        app.timeline_ids(&format!("/api/v1/users/{ida}/statuses"), None)
            .await,
        vec![s2.clone()]
    );
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&a)).await,
        vec![s2]
    );
}

#[tokio::test]
async fn an_idempotency_key_makes_a_retried_post_answer_the_first_status() {
    let app = TestApp::start().await;
    let (uid, token) = app.user("retrier").await;
    let (_, other) = app.user("otherposter").await;
    let post = |token: String, key: &'static str, message: &'static str| {
        let req = app
            .http
            .post(app.url("/api/v1/statuses"))
            .bearer_auth(token)
            .header("idempotency-key", key)
            .json(&json!({"message": message}));
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status();
            (status, resp.json::<Value>().await.unwrap())
        }
    };
    let (s1, first) = post(token.clone(), "k-1", "only once").await;
    let (s2, again) = post(token.clone(), "k-1", "only once").await;
    assert_eq!((s1, s2), (StatusCode::CREATED, StatusCode::CREATED));
    assert_eq!(first, again, "the retry answers the first status");
    // Ten concurrent retries with one key create one status between them.
    let racing: Vec<(StatusCode, Value)> =
        futures::future::join_all((0..10).map(|_| post(token.clone(), "k-2", "raced"))).await;
    let ids: std::collections::HashSet<String> = racing
        .iter()
        .map(|(_, s)| s["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 1, "{racing:?}");
    let (_, me) = app.get(&format!("/api/v1/users/{uid}"), None).await;
    assert_eq!(me["posts"], 2);
    // Keys are per user; a fresh key creates a new status.
    let (_, theirs) = post(other, "k-1", "someone else's k-1").await;
    assert_ne!(theirs["id"], first["id"]);
    let (_, fresh) = post(token.clone(), "k-3", "another").await;
    assert_ne!(fresh["id"], first["id"]);
    // Keys longer than 64 bytes, or with control characters, are refused.
    let long: &'static str = Box::leak("x".repeat(65).into_boxed_str());
    let (status, err) = post(token.clone(), long, "too long a key").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["code"], "invalid_idempotency_key");
}

/// The writer keeps what it posted in its status cache; a read there gives
/// the same status as a read by a process that has to fetch it from Redis
/// (a reply with a mention and a hashtag, and a repost of it).
#[tokio::test]
async fn a_status_read_where_it_was_posted_equals_one_read_elsewhere() {
    let app = TestApp::start().await;
    let (_, at) = app.user("writer_one").await;
    let (_, bt) = app.user("writer_two").await;
    let root = app.say(&bt, "the root").await;
    let reply = app
        .post_status(
            &at,
            json!({"message": "@writer_two see #Cache", "reply_to": root, "lat": 1.5, "lon": 2.5}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, repost) = app
        .post(
            &format!("/api/v1/statuses/{reply}/repost"),
            Some(&bt),
            json!({}),
        )
        .await;
    assert!(status.is_success(), "{repost}");
    let repost = repost["id"].as_str().unwrap().to_string();
    let other = crate::common::ServerProcess::serve(&app.redis, &[]).await;
    let http = reqwest::Client::new();
    for id in [&root, &reply, &repost] {
        let (status, here) = app.get(&format!("/api/v1/statuses/{id}"), None).await;
        assert_eq!(status, StatusCode::OK, "{here}");
        let there: Value = http
            .get(other.url(&format!("/api/v1/statuses/{id}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(here, there, "status {id}");
    }
}
