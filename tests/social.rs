//! The social core over real HTTP against a real Redis: users, sessions,
//! statuses, timelines, follows, fan-out, clean-up and failure handling.

mod common;

use common::{bulk_follow, bulk_users, homes_with, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

fn assert_error(status: StatusCode, body: &Value, expected: StatusCode) {
    assert_eq!(status, expected, "body: {body}");
    assert!(body["error"]["code"].is_string(), "error shape: {body}");
    assert!(body["error"]["message"].is_string(), "error shape: {body}");
}

#[tokio::test]
async fn registration_returns_the_public_user_and_never_secrets() {
    let app = TestApp::start().await;
    let (status, user) = app
        .post("/api/v1/users", None, json!({"login": "Alice_1", "name": "Alice", "email": "Alice@Example.com", "password": "password123"}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(user["id"].is_string());
    assert_eq!(user["login"], "Alice_1");
    assert_eq!(user["name"], "Alice");
    for counter in ["followers", "following", "posts"] {
        assert_eq!(user[counter], 0, "{counter}");
    }
    assert!(user["signup"].is_number());
    assert!(
        user.get("email").is_none() && user.get("password").is_none(),
        "{user}"
    );
    let (_, public) = app
        .get(
            &format!("/api/v1/users/{}", user["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert!(public.get("email").is_none(), "{public}");
    assert_eq!(public["login"], "Alice_1");
}

#[tokio::test]
async fn registration_rejects_each_invalid_field_with_400() {
    let app = TestApp::start().await;
    let good = json!({"login": "bob", "name": "Bob", "email": "bob@example.com", "password": "password123"});
    let with = |field: &str, value: Value| {
        let mut v = good.clone();
        v[field] = value;
        v
    };
    let without = |field: &str| {
        let mut v = good.clone();
        v.as_object_mut().unwrap().remove(field);
        v
    };
    let cases = [
        with("login", json!("ab")),
        with("login", json!("a".repeat(31))),
        with("login", json!("bad-login")),
        with("login", json!("has space")),
        with("login", json!("12345")),
        with("login", json!("bob@example")),
        with("email", json!("not-an-email")),
        with("password", json!("short")),
        with("name", json!("")),
        with("name", json!("   ")),
        with("name", json!("n".repeat(51))),
        with("login", json!(42)),
        without("password"),
        json!([1, 2]),
    ];
    for body in cases {
        let (status, err) = app.post("/api/v1/users", None, body.clone()).await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let resp = app
        .http
        .post(app.url("/api/v1/users"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    // A valid JSON body under another Content-Type, or none, is 415.
    let valid = json!({"login": "typed", "name": "n", "email": "t@y", "password": "12345678"});
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut req = app
            .http
            .post(app.url("/api/v1/users"))
            .body(valid.to_string());
        if let Some(t) = content_type {
            req = req.header("content-type", t);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["code"], "unsupported_media_type");
    }
    let resp = app
        .http
        .post(app.url("/api/v1/users"))
        .header("content-type", "Application/JSON; charset=utf-8")
        .body(valid.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    // Edge values that are valid.
    let (status, _) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "a_1", "name": "n".repeat(50), "email": "x@y", "password": "12345678"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "L".repeat(30), "name": "é", "email": "z@y", "password": "ééééééééé"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn login_and_email_are_unique_ignoring_case_across_both_fields() {
    let app = TestApp::start().await;
    app.register("carol").await;
    let (status, err) = app
        .post("/api/v1/users", None, json!({"login": "CAROL", "name": "x", "email": "other@example.com", "password": "password123"}))
        .await;
    assert_error(status, &err, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "login_taken");
    let (status, err) = app
        .post("/api/v1/users", None, json!({"login": "carol2", "name": "x", "email": "CAROL@EXAMPLE.COM", "password": "password123"}))
        .await;
    assert_error(status, &err, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "email_taken");
}

#[tokio::test]
async fn two_hundred_concurrent_registrations_of_one_login_give_exactly_one_201() {
    let app = TestApp::start().await;
    let mut tasks = Vec::new();
    for i in 0..200 {
        let http = app.http.clone();
        let url = app.url("/api/v1/users");
        tasks.push(tokio::spawn(async move {
            let body = json!({"login": "Racer", "name": "r", "email": format!("racer{i}@example.com"), "password": "password123"});
            http.post(url).json(&body).send().await.unwrap().status()
        }));
    }
    let mut created = 0;
    let mut conflicts = 0;
    for t in tasks {
        match t.await.unwrap() {
            StatusCode::CREATED => created += 1,
            StatusCode::CONFLICT => conflicts += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((created, conflicts), (1, 199));
    let (status, user) = app.get("/api/v1/users/lookup?login=racer", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(user["login"], "Racer");
}

#[tokio::test]
async fn sessions_log_in_by_login_or_email_and_reject_bad_credentials() {
    let app = TestApp::start().await;
    let id = app.register("dave").await;
    for identifier in ["dave", "DAVE", "dave@example.com", "Dave@Example.COM"] {
        let (status, body) = app
            .post(
                "/api/v1/sessions",
                None,
                json!({"identifier": identifier, "password": "password123"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{identifier}: {body}");
        assert!(body["token"].is_string());
        assert!(body["expires_at"].as_f64().unwrap() > firehose::model::now());
        assert_eq!(body["user"]["id"], id.as_str());
    }
    for (identifier, password) in [
        ("dave", "wrong-password"),
        ("nobody", "password123"),
        ("", "x"),
    ] {
        let (status, err) = app
            .post(
                "/api/v1/sessions",
                None,
                json!({"identifier": identifier, "password": password}),
            )
            .await;
        assert_error(status, &err, StatusCode::UNAUTHORIZED);
    }
    let token = app.login("dave").await;
    let (status, me) = app.get("/api/v1/me", Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["email"], "dave@example.com");
    assert_eq!(me["id"], id.as_str());
}

#[tokio::test]
async fn lookup_takes_exactly_one_of_login_email_any() {
    let app = TestApp::start().await;
    let id = app.register("erin").await;
    for q in [
        "login=ERIN",
        "email=erin@EXAMPLE.com",
        "any=erin",
        "any=Erin@example.com",
    ] {
        let (status, user) = app.get(&format!("/api/v1/users/lookup?{q}"), None).await;
        assert_eq!(status, StatusCode::OK, "{q}");
        assert_eq!(user["id"], id.as_str());
        assert!(user.get("email").is_none());
    }
    for q in [
        "login=nobody",
        "email=erin",
        "login=erin@example.com",
        "any=zzz",
    ] {
        let (status, err) = app.get(&format!("/api/v1/users/lookup?{q}"), None).await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
    }
    for q in ["", "login=erin&email=erin@example.com", "name=erin"] {
        let (status, err) = app.get(&format!("/api/v1/users/lookup?{q}"), None).await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    for path in [
        "/api/v1/users/999999",
        "/api/v1/users/abc",
        "/api/v1/users/0",
    ] {
        let (status, err) = app.get(path, None).await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
    }
}

fn forge(secret: &str, header_alg: jsonwebtoken::Algorithm, claims: Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(header_alg),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

#[tokio::test]
async fn every_kind_of_bad_token_gets_401() {
    let app = TestApp::start().await;
    let id = app.register("frank").await;
    let good = app.login("frank").await;
    let claims: Value = {
        use base64_free::decode_claims;
        decode_claims(&good)
    };
    let secret = app.cfg.jwt_secret().unwrap().to_string();
    let mut expired = claims.clone();
    expired["exp"] = json!(1_000_000);
    let mut other_user = claims.clone();
    other_user["sub"] = json!("999");
    // alg "none": header {"alg":"none"} and no signature.
    let none_token = {
        let enc = |v: &Value| base64_free::b64url(v.to_string().as_bytes());
        format!(
            "{}.{}.",
            enc(&json!({"alg": "none", "typ": "JWT"})),
            enc(&claims)
        )
    };
    let bad = [
        ("garbage", "not.a.token".to_string()),
        (
            "bad signature",
            forge(
                "some-other-secret",
                jsonwebtoken::Algorithm::HS256,
                claims.clone(),
            ),
        ),
        (
            "HS512",
            forge(&secret, jsonwebtoken::Algorithm::HS512, claims.clone()),
        ),
        ("alg none", none_token),
        (
            "expired",
            forge(&secret, jsonwebtoken::Algorithm::HS256, expired),
        ),
        (
            "session of another user",
            forge(&secret, jsonwebtoken::Algorithm::HS256, other_user),
        ),
    ];
    for (what, token) in bad {
        let (status, err) = app.get("/api/v1/me", Some(&token)).await;
        assert_error(status, &err, StatusCode::UNAUTHORIZED);
        let _ = what;
    }
    let (status, err) = app.get("/api/v1/me", None).await;
    assert_error(status, &err, StatusCode::UNAUTHORIZED);
    let resp = app
        .http
        .get(app.url("/api/v1/me"))
        .header("authorization", "Basic abc")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let (status, me) = app.get("/api/v1/me", Some(&good)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["id"], id.as_str());
}

/// Tiny base64url helpers so the test can build an unsigned token.
mod base64_free {
    use serde_json::Value;
    const ALPHA: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    pub fn b64url(bytes: &[u8]) -> String {
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..=chunk.len() {
                out.push(ALPHA[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    pub fn decode_claims(token: &str) -> Value {
        let part = token.split('.').nth(1).unwrap();
        let mut bits = 0u32;
        let mut n = 0;
        let mut out = Vec::new();
        for c in part.bytes() {
            let v = ALPHA.iter().position(|a| *a == c).unwrap() as u32;
            bits = (bits << 6) | v;
            n += 6;
            if n >= 8 {
                n -= 8;
                out.push((bits >> n) as u8);
                bits &= (1 << n) - 1;
            }
        }
        serde_json::from_slice(&out).unwrap()
    }
}

#[tokio::test]
async fn logout_ends_the_token_at_once_but_not_other_sessions() {
    let app = TestApp::start().await;
    app.register("gina").await;
    let first = app.login("gina").await;
    let second = app.login("gina").await;
    let (status, _) = app.delete("/api/v1/sessions/current", Some(&first)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, err) = app.get("/api/v1/me", Some(&first)).await;
    assert_error(status, &err, StatusCode::UNAUTHORIZED);
    let (status, _) = app.get("/api/v1/me", Some(&second)).await;
    assert_eq!(status, StatusCode::OK);
}

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
async fn timelines_page_by_count_page_and_max_id_newest_first() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("mia").await;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(app.say(&a, &format!("status {i}")).await);
    }
    ids.reverse();
    let home = app.timeline_ids("/api/v1/timelines/home", Some(&a)).await;
    assert_eq!(home, ids);
    let p1 = app
        .timeline_ids("/api/v1/timelines/home?count=3", Some(&a))
        .await;
    let p2 = app
        .timeline_ids("/api/v1/timelines/home?count=3&page=2", Some(&a))
        .await;
    let p3 = app
        .timeline_ids("/api/v1/timelines/home?count=3&page=3", Some(&a))
        .await;
    assert_eq!([p1, p2, p3].concat(), ids);
    let older = app
        .timeline_ids(
            &format!("/api/v1/users/{ida}/statuses?count=2&max_id={}", ids[2]),
            None,
        )
        .await;
    assert_eq!(older, ids[2..4].to_vec());
    assert!(app
        .timeline_ids("/api/v1/timelines/home?page=9", Some(&a))
        .await
        .is_empty());
    for q in [
        "count=0",
        "count=201",
        "count=x",
        "page=0",
        "page=-1",
        "max_id=abc",
        "page=1&max_id=3",
    ] {
        let (status, err) = app
            .get(&format!("/api/v1/timelines/home?{q}"), Some(&a))
            .await;
        assert_error(status, &err, StatusCode::BAD_REQUEST);
    }
    let (status, err) = app.get("/api/v1/timelines/home", None).await;
    assert_error(status, &err, StatusCode::UNAUTHORIZED);
    let (status, err) = app.get("/api/v1/users/424242/statuses", None).await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn follow_backfills_and_unfollow_removes_the_followees_statuses() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("nina").await;
    let (idb, b) = app.user("omar").await;
    let b1 = app.say(&b, "before follow").await;
    let a1 = app.say(&a, "mine").await;
    let (status, body) = app
        .post(&format!("/api/v1/users/{idb}/follow"), Some(&a), json!({}))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"following": true})));
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&a)).await,
        vec![a1.clone(), b1.clone()]
    );
    let b2 = app.say(&b, "after follow").await;
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&a)).await,
        vec![b2, a1.clone(), b1]
    );
    let (status, err) = app
        .post(&format!("/api/v1/users/{idb}/follow"), Some(&a), json!({}))
        .await;
    assert_error(status, &err, StatusCode::CONFLICT);
    let (_, ua) = app.get(&format!("/api/v1/users/{ida}"), None).await;
    let (_, ub) = app.get(&format!("/api/v1/users/{idb}"), None).await;
    assert_eq!(
        (ua["following"].clone(), ub["followers"].clone()),
        (json!(1), json!(1))
    );
    let (_, list) = app
        .get(&format!("/api/v1/users/{idb}/followers"), None)
        .await;
    assert_eq!(list["users"][0]["id"], ida.as_str());
    assert!(list["next_cursor"].is_null());
    let (status, body) = app
        .delete(&format!("/api/v1/users/{idb}/follow"), Some(&a))
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"following": false}))
    );
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&a)).await,
        vec![a1]
    );
    let (_, ub) = app.get(&format!("/api/v1/users/{idb}"), None).await;
    assert_eq!(ub["followers"], 0);
    let (status, err) = app
        .post(&format!("/api/v1/users/{ida}/follow"), Some(&a), json!({}))
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    let (status, err) = app
        .post("/api/v1/users/777777/follow", Some(&a), json!({}))
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    let (status, err) = app
        .post(&format!("/api/v1/users/{idb}/follow"), None, json!({}))
        .await;
    assert_error(status, &err, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn batch_follow_reports_per_id_and_lists_page_with_cursors() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("pia").await;
    let targets = bulk_users(&app, "target", 5).await;
    let mut ids: Vec<Value> = targets.iter().map(|t| json!(t.to_string())).collect();
    ids.push(json!(targets[0]));
    ids.push(json!("999999"));
    ids.push(json!(ida));
    ids.push(json!("abc"));
    let (status, body) = app
        .post("/api/v1/follows", Some(&a), json!({"ids": ids}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let results = body["results"].as_object().unwrap();
    for t in &targets {
        assert_eq!(results[&t.to_string()], true, "{body}");
    }
    for bad in ["999999", ida.as_str(), "abc"] {
        assert_eq!(results[bad], false, "{bad}: {body}");
    }
    let (_, me) = app.get("/api/v1/me", Some(&a)).await;
    assert_eq!(me["following"], 5);
    let (_, page1) = app
        .get(&format!("/api/v1/users/{ida}/following?count=2"), None)
        .await;
    assert_eq!(page1["users"].as_array().unwrap().len(), 2);
    let cursor = page1["next_cursor"].as_str().unwrap().to_string();
    let (_, page2) = app
        .get(
            &format!("/api/v1/users/{ida}/following?count=3&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(page2["users"].as_array().unwrap().len(), 3);
    assert!(page2["next_cursor"].is_null());
    let too_many: Vec<String> = (1..=1001).map(|i| i.to_string()).collect();
    let (status, err) = app
        .post("/api/v1/follows", Some(&a), json!({"ids": too_many}))
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);
    let (status, body) = app
        .call(
            Method::DELETE,
            "/api/v1/follows",
            Some(&a),
            Some(json!({"ids": [targets[0].to_string(), targets[1].to_string()]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["results"][targets[0].to_string()], true);
    let (_, me) = app.get("/api/v1/me", Some(&a)).await;
    assert_eq!(me["following"], 3);
}

#[tokio::test]
async fn concurrent_follow_unfollow_pairs_leave_counters_equal_to_set_sizes() {
    let app = TestApp::start().await;
    let users = bulk_users(&app, "racer", 10).await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let mut tasks = Vec::new();
    for round in 0..50u64 {
        let source = users[(round % 10) as usize];
        let target = users[((round * 3 + 1) % 10) as usize];
        if source == target {
            continue;
        }
        for follow in [true, false, true] {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store
                    .set_follow(source, target, follow, firehose::model::now())
                    .await
                    .unwrap();
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut conn = app.redis.conn();
    let p = &app.cfg.key_prefix;
    for &u in &users {
        let (followers, following, fcount, gcount): (u64, u64, u64, u64) = redis::pipe()
            .zcard(format!("{p}:user:{{{u}}}:followers"))
            .zcard(format!("{p}:user:{{{u}}}:following"))
            .hget(format!("{p}:user:{{{u}}}"), "followers")
            .hget(format!("{p}:user:{{{u}}}"), "following")
            .query(&mut conn)
            .unwrap();
        assert_eq!((fcount, gcount), (followers, following), "user {u}");
        // Both sides agree on every relationship.
        let followed: Vec<u64> = redis::cmd("ZRANGE")
            .arg(format!("{p}:user:{{{u}}}:following"))
            .arg(0)
            .arg(-1)
            .query(&mut conn)
            .unwrap();
        for f in followed {
            let score: Option<f64> = redis::cmd("ZSCORE")
                .arg(format!("{p}:user:{{{f}}}:followers"))
                .arg(u)
                .query(&mut conn)
                .unwrap();
            assert!(
                score.is_some(),
                "{u} follows {f} but is not among their followers"
            );
        }
    }
}

#[tokio::test]
async fn fanout_reaches_2500_followers_once_the_workers_drain() {
    let app = TestApp::start().await;
    let (idc, celeb) = app.user("celeb").await;
    let followers = bulk_users(&app, "fan", 2500).await;
    bulk_follow(&app, &followers, idc.parse().unwrap()).await;
    let sid = app.say(&celeb, "hello, all 2500 of you").await;
    // The first 1000 (oldest follows) are reached before POST returns.
    assert!(
        homes_with(&app, &followers[..1000], &sid) == 1000
            || homes_with(&app, &followers, &sid) >= 1000
    );
    app.eventually("every follower's home has the status", || async {
        homes_with(&app, &followers, &sid) == 2500
    })
    .await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    app.eventually("the fan-out queue is empty", || async {
        store.fanout_depth().await.unwrap() == 0
    })
    .await;
    // Delete fans out the same way: gone from every home, not just filtered on read.
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{sid}"), Some(&celeb))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    app.eventually("the status left every follower's home", || async {
        homes_with(&app, &followers, &sid) == 0
    })
    .await;
}

#[tokio::test]
async fn a_batch_abandoned_by_a_dead_worker_is_reclaimed_and_finished() {
    // No workers in the server: the test plays a worker that dies mid-batch.
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (idc, celeb) = app.user("star").await;
    let followers = bulk_users(&app, "f", 1600).await;
    bulk_follow(&app, &followers, idc.parse().unwrap()).await;
    let sid = app.say(&celeb, "for everyone").await;
    assert_eq!(homes_with(&app, &followers, &sid), 1000, "inline part only");
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let mut conn = store.blocking_connection(Duration::from_secs(1)).unwrap();
    store.ensure_fanout_group(&mut conn).await.unwrap();
    // The dead worker claims the task and never acknowledges it.
    let claimed = store
        .claim_fanout(&mut conn, "dead-worker", 60_000, 100)
        .await
        .unwrap();
    assert!(claimed.is_some(), "a task was queued");
    assert_eq!(homes_with(&app, &followers, &sid), 1000);
    // A live worker with a short reclaim time finishes the batch.
    let (trigger, shutdown) = firehose::shutdown::channel();
    let worker = tokio::spawn(firehose::workers::fanout_worker(
        store.clone(),
        "live".into(),
        200,
        shutdown,
    ));
    app.eventually("the reclaimed batch reached everyone", || async {
        homes_with(&app, &followers, &sid) == 1600
    })
    .await;
    app.eventually("nothing is left pending", || async {
        store.fanout_depth().await.unwrap() == 0
    })
    .await;
    trigger.fire();
    worker.await.unwrap();
}

#[tokio::test]
async fn home_timelines_keep_the_newest_1000() {
    let app = TestApp::start().await;
    let (id, token) = app.user("prolific").await;
    let (_, reader) = app.user("reader").await;
    // Seed 1005 statuses straight through the store (posting over HTTP would be slow).
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    for i in 0..1005 {
        let sid = store.next_status_id().await.unwrap();
        let status = firehose::model::Status {
            id: sid.to_string(),
            uid: id.clone(),
            login: "prolific".into(),
            message: format!("n{i}"),
            posted: firehose::model::now(),
            lat: None,
            lon: None,
            reply_to: None,
            reply_to_uid: None,
            hashtags: vec![],
            mentions: vec![],
            repost_of: None,
            repost_of_uid: None,
            audience: None,
            counts: Default::default(),
        };
        store
            .post_status(&status, &Default::default())
            .await
            .unwrap();
    }
    let _ = token;
    app.follow(&reader, &id).await;
    let mut conn = app.redis.conn();
    let p = &app.cfg.key_prefix;
    let (own, rid): (u64, String) = (
        redis::cmd("ZCARD")
            .arg(format!("{p}:user:{{{id}}}:home"))
            .query(&mut conn)
            .unwrap(),
        app.get("/api/v1/me", Some(&reader)).await.1["id"]
            .as_str()
            .unwrap()
            .to_string(),
    );
    let theirs: u64 = redis::cmd("ZCARD")
        .arg(format!("{p}:user:{{{rid}}}:home"))
        .query(&mut conn)
        .unwrap();
    assert_eq!((own, theirs), (1000, 1000));
    let (_, user) = app.get(&format!("/api/v1/users/{id}"), None).await;
    assert_eq!(user["posts"], 1005);
    let newest = app
        .timeline_ids("/api/v1/timelines/home?count=1", Some(&reader))
        .await;
    let (_, s) = app
        .get(&format!("/api/v1/statuses/{}", newest[0]), None)
        .await;
    assert_eq!(s["message"], "n1004");
}

#[tokio::test]
async fn viewed_statuses_are_recorded_per_session_and_capped_at_25() {
    let app = TestApp::start().await;
    let (_, token) = app.user("viewer").await;
    let mut ids = Vec::new();
    for i in 0..30 {
        ids.push(app.say(&token, &format!("v{i}")).await);
    }
    for id in &ids {
        let (status, _) = app
            .get(&format!("/api/v1/statuses/{id}"), Some(&token))
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let (_, info) = app.get("/api/v1/sessions/current", Some(&token)).await;
    let viewed: Vec<String> = info["viewed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let mut expected: Vec<String> = ids[5..].to_vec();
    expected.reverse();
    assert_eq!(viewed, expected);
}

#[tokio::test]
async fn cleanup_keeps_at_most_n_sessions_dropping_the_least_recently_seen() {
    let app = TestApp::start_with(|c| c.max_sessions = 2).await;
    app.register("quinn").await;
    let oldest = app.login("quinn").await;
    let middle = app.login("quinn").await;
    let newest = app.login("quinn").await;
    // Touch the middle one so it is more recent than `newest`.
    app.get("/api/v1/me", Some(&middle)).await;
    // Poll Redis, not the API: a request with the oldest token would make it recent.
    let recent = format!("{}:{{g}}:recent", app.cfg.key_prefix);
    app.eventually("only two sessions remain", || async {
        let mut conn = app.redis.conn();
        redis::cmd("ZCARD")
            .arg(&recent)
            .query::<u64>(&mut conn)
            .unwrap()
            == 2
    })
    .await;
    assert_eq!(
        app.get("/api/v1/me", Some(&oldest)).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(app.get("/api/v1/me", Some(&middle)).await.0, StatusCode::OK);
    assert_eq!(app.get("/api/v1/me", Some(&newest)).await.0, StatusCode::OK);
}

#[tokio::test]
async fn cleanup_drops_idle_sessions_with_their_keys() {
    let app = TestApp::start_with(|c| c.session_idle_ttl = 1).await;
    let (_, token) = app.user("rita").await;
    let sid = app.say(&token, "x").await;
    app.get(&format!("/api/v1/statuses/{sid}"), Some(&token))
        .await;
    let sessions = format!("{}:{{g}}:sessions", app.cfg.key_prefix);
    app.eventually("the idle session is dropped", || async {
        let mut conn = app.redis.conn();
        redis::cmd("HLEN")
            .arg(&sessions)
            .query::<u64>(&mut conn)
            .unwrap()
            == 0
    })
    .await;
    assert_eq!(
        app.get("/api/v1/me", Some(&token)).await.0,
        StatusCode::UNAUTHORIZED
    );
    let mut conn = app.redis.conn();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{g}}:viewed:*", app.cfg.key_prefix))
        .query(&mut conn)
        .unwrap();
    assert!(keys.is_empty(), "viewed keys left: {keys:?}");
}

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
async fn private_accounts_show_statuses_to_followers_only() {
    let app = TestApp::start().await;
    let (ida, a) = app.user("uma").await;
    let (_, b) = app.user("vic").await;
    let (_, c) = app.user("wes").await;
    let (status, me) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(&a),
            Some(json!({"private": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["private"], true);
    let sid = app.say(&a, "only for followers").await;
    // Following a private account asks; the owner approves.
    app.follow(&b, &ida).await;
    let (_, vic) = app.get("/api/v1/me", Some(&b)).await;
    let (status, _) = app
        .post(
            &format!(
                "/api/v1/follow_requests/{}/authorize",
                vic["id"].as_str().unwrap()
            ),
            Some(&a),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{sid}"), Some(&b))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{sid}"), Some(&c))
            .await
            .0,
        StatusCode::NOT_FOUND,
        "to anyone else a private status does not exist"
    );
    assert_eq!(
        app.get(&format!("/api/v1/statuses/{sid}"), None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get(&format!("/api/v1/users/{ida}/statuses"), Some(&c))
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&b)).await,
        vec![sid]
    );
}

#[tokio::test]
async fn shutdown_returns_once_everything_has_stopped() {
    let app = TestApp::start().await;
    app.register("xena").await;
    tokio::time::timeout(Duration::from_secs(20), app.shutdown())
        .await
        .unwrap();
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
