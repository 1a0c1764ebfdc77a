//! Log-in, tokens, logout, viewed statuses and session clean-up.

use crate::assert_error;
use crate::common::{indexed_sessions, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};

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
    // The good token is verified first, so that the server remembers it:
    // every bad one below must still be refused.
    let (status, _) = app.get("/api/v1/me", Some(&good)).await;
    assert_eq!(status, StatusCode::OK);
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

    pub(super) fn b64url(bytes: &[u8]) -> String {
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

    pub(super) fn decode_claims(token: &str) -> Value {
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
    app.eventually("only two sessions remain", || async {
        indexed_sessions(&app).len() == 2
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
async fn cleanup_merges_every_partition_of_its_index_and_no_login_writes_the_global_slot() {
    let app = TestApp::start_with(|c| c.max_sessions = 3).await;
    // Eight users, one session each, their index entries spread over the
    // partitions (by user): the clean-up must compare across them.
    let mut tokens = Vec::new();
    let mut parts = std::collections::BTreeSet::new();
    for i in 0..8 {
        let login = format!("merge{i}");
        let uid = app.register(&login).await;
        parts.insert(firehose::store::keys::user_part(uid.parse().unwrap()));
        tokens.push(app.login(&login).await);
    }
    assert!(parts.len() > 1, "eight users in one partition: {parts:?}");
    // The clean-up may run between two logins: whenever it does, the
    // sessions it keeps are the newest.
    app.eventually("only three sessions remain", || async {
        indexed_sessions(&app).len() == 3
    })
    .await;
    for (i, token) in tokens.iter().enumerate() {
        let want = if i >= 5 {
            StatusCode::OK
        } else {
            StatusCode::UNAUTHORIZED
        };
        assert_eq!(app.get("/api/v1/me", Some(token)).await.0, want, "user {i}");
    }
    // Nothing of the sessions' is in `{g}`.
    let p = &app.cfg.key_prefix;
    let mut conn = app.redis.conn();
    for key in [format!("{p}:{{g}}:sessions"), format!("{p}:{{g}}:recent")] {
        let n: u64 = redis::cmd("EXISTS").arg(&key).query(&mut conn).unwrap();
        assert_eq!(n, 0, "{key}");
    }
}

#[tokio::test]
async fn cleanup_drops_idle_sessions_with_their_keys() {
    let app = TestApp::start_with(|c| c.session_idle_ttl = 1).await;
    let (_, token) = app.user("rita").await;
    let sid = app.say(&token, "x").await;
    app.get(&format!("/api/v1/statuses/{sid}"), Some(&token))
        .await;
    app.eventually("the idle session is dropped", || async {
        indexed_sessions(&app).is_empty()
    })
    .await;
    assert_eq!(
        app.get("/api/v1/me", Some(&token)).await.0,
        StatusCode::UNAUTHORIZED
    );
    let mut conn = app.redis.conn();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:*viewed:*", app.cfg.key_prefix))
        .query(&mut conn)
        .unwrap();
    assert!(keys.is_empty(), "viewed keys left: {keys:?}");
}

/// The caller's session list: (id, current) newest first.
async fn session_list(app: &TestApp, token: &str) -> Vec<(String, bool)> {
    let (status, body) = app.get("/api/v1/sessions", Some(token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert!(s["created"].as_f64().unwrap() > 0.0 && s["last_seen"].as_f64().is_some());
            (s["id"].as_str().unwrap().to_string(), s["current"] == true)
        })
        .collect()
}

#[tokio::test]
async fn a_user_sees_their_sessions_and_ends_one_everywhere_it_is_used() {
    let app = TestApp::start().await;
    let (_, phone) = app.user("sally").await;
    let laptop = app.login("sally").await;
    let (_, other) = app.user("sam").await;
    // Newest first, the asking one marked current; nobody else's.
    let listed = session_list(&app, &laptop).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed[0].1 && !listed[1].1, "{listed:?}");
    let phone_sid = listed[1].0.clone();
    assert_eq!(session_list(&app, &other).await.len(), 1);
    // Someone else's session, or one that does not exist: 404.
    for sid in [phone_sid.as_str(), "00000000000000000000000000000000", "x"] {
        let (status, err) = app
            .delete(&format!("/api/v1/sessions/{sid}"), Some(&other))
            .await;
        assert_error(status, &err, StatusCode::NOT_FOUND);
    }
    // The phone's stream is open when the laptop ends the phone's session.
    let mut stream = app.stream("/api/v1/stream/user", Some(&phone), &[]).await;
    let (status, _) = app
        .delete(&format!("/api/v1/sessions/{phone_sid}"), Some(&laptop))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let ended = stream.next("the stream's disconnect").await;
    assert_eq!(ended.event, "disconnect");
    assert_eq!(ended.data["code"], "revoked");
    assert_eq!(
        app.get("/api/v1/me", Some(&phone)).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(app.get("/api/v1/me", Some(&laptop)).await.0, StatusCode::OK);
    let listed = session_list(&app, &laptop).await;
    assert_eq!(listed.len(), 1);
    assert!(listed[0].1);
    // Ending it again: no longer one of the live sessions.
    let (status, err) = app
        .delete(&format!("/api/v1/sessions/{phone_sid}"), Some(&laptop))
        .await;
    assert_error(status, &err, StatusCode::NOT_FOUND);
    // A logout leaves the list too.
    app.delete("/api/v1/sessions/current", Some(&laptop)).await;
    let third = app.login("sally").await;
    assert_eq!(session_list(&app, &third).await.len(), 1);
}

#[tokio::test]
async fn a_password_change_needs_the_current_one_and_ends_the_other_sessions() {
    let app = TestApp::start().await;
    let (_, token) = app.user("paula").await;
    let other = app.login("paula").await;
    let change = |current: &str, new: &str, end: Option<bool>| {
        let mut body = json!({"current_password": current, "new_password": new});
        if let Some(end) = end {
            body["end_other_sessions"] = json!(end);
        }
        body
    };
    let (status, err) = app
        .post(
            "/api/v1/me/password",
            Some(&token),
            change("wrong-one", "brand-new-secret", None),
        )
        .await;
    assert_error(status, &err, StatusCode::FORBIDDEN);
    assert_eq!(err["error"]["code"], "wrong_password");
    let (status, err) = app
        .post(
            "/api/v1/me/password",
            Some(&token),
            change("password123", "short", None),
        )
        .await;
    assert_error(status, &err, StatusCode::BAD_REQUEST);
    let (status, _) = app
        .post(
            "/api/v1/me/password",
            None,
            change("password123", "brand-new-secret", None),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Keeping the other sessions when asked to.
    let (status, body) = app
        .post(
            "/api/v1/me/password",
            Some(&token),
            change("password123", "brand-new-secret", Some(false)),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(app.get("/api/v1/me", Some(&other)).await.0, StatusCode::OK);
    // The new password logs in, the old one does not.
    let login = |password: &str| json!({"identifier": "paula", "password": password});
    let (status, _) = app
        .post("/api/v1/sessions", None, login("password123"))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app
        .post("/api/v1/sessions", None, login("brand-new-secret"))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    // By default every other session ends, streams included.
    let mut stream = app.stream("/api/v1/stream/user", Some(&other), &[]).await;
    let (status, _) = app
        .post(
            "/api/v1/me/password",
            Some(&token),
            change("brand-new-secret", "third-secret-here", None),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let ended = stream.next("the other session's disconnect").await;
    assert_eq!(ended.data["code"], "revoked");
    assert_eq!(
        app.get("/api/v1/me", Some(&other)).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(app.get("/api/v1/me", Some(&token)).await.0, StatusCode::OK);
    assert_eq!(session_list(&app, &token).await.len(), 1);
}

#[tokio::test]
async fn a_login_carries_the_firehose_scope_only_for_an_allowed_account() {
    let app = TestApp::start().await;
    let uid = app.register("fiona").await;
    let jwt = firehose::auth::Jwt::new(app.cfg.jwt_secret().unwrap());
    let scopes = |token: &str| jwt.verify(token).unwrap().scopes;
    let plain = app.login("fiona").await;
    assert_eq!(scopes(&plain), ["read", "write"]);
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    store
        .users()
        .set_firehose_allowed(uid.parse().unwrap(), true)
        .await
        .unwrap();
    let allowed = app.login("fiona").await;
    assert_eq!(scopes(&allowed), ["read", "write", "firehose"]);
    let (status, body) = app.get("/api/v1/me", Some(&allowed)).await;
    assert_eq!(
        (status, body["login"].as_str()),
        (StatusCode::OK, Some("fiona"))
    );
}

#[tokio::test]
async fn the_clean_up_ends_the_least_recently_used_session_not_the_oldest_login() {
    // The process's own clean-up runs once, at start; this test runs it
    // by hand once the sessions are in place.
    let app = TestApp::start_with(|c| c.cleanup_interval = 3600.0).await;
    app.register("otto").await;
    let first = app.login("otto").await;
    let second = app.login("otto").await;
    let third = app.login("otto").await;
    // The first login is used again: the second is now the least recently
    // seen, which within a minute only the sessions' own times tell (the
    // index moves once a minute of use).
    assert_eq!(app.get("/api/v1/me", Some(&first)).await.0, StatusCode::OK);
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    assert_eq!(store.sessions().cleanup(2, 0.0).await.unwrap(), 1);
    assert_eq!(
        app.get("/api/v1/me", Some(&second)).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(app.get("/api/v1/me", Some(&first)).await.0, StatusCode::OK);
    assert_eq!(app.get("/api/v1/me", Some(&third)).await.0, StatusCode::OK);
    assert_eq!(indexed_sessions(&app).len(), 2);
}
