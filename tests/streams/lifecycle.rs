//! A stream's life: refused at connect, closed by a logout or its token's
//! end, bounded per user, kept alive, and ended by a shutdown.

use super::*;

#[tokio::test]
async fn every_auth_failure_is_refused_at_connect() {
    let app = TestApp::start().await;
    let (_, token) = app.user("rae").await;
    let secret = app.cfg.jwt_secret().unwrap().to_string();
    let claims = json!({"sub": "1", "sid": "nope", "scopes": ["read"], "exp": 4_000_000_000u64});
    let sign = |secret: &str, alg, claims: &Value| {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(alg),
            claims,
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    };
    let mut expired_claims = claims.clone();
    expired_claims["exp"] = json!(1000);
    let revoked = app.login("rae").await;
    app.delete("/api/v1/sessions/current", Some(&revoked)).await;
    let cases: Vec<(&str, Option<String>)> = vec![
        ("none", None),
        (
            "bad signature",
            Some(sign("wrong", jsonwebtoken::Algorithm::HS256, &claims)),
        ),
        (
            "expired",
            Some(sign(
                &secret,
                jsonwebtoken::Algorithm::HS256,
                &expired_claims,
            )),
        ),
        (
            "alg none",
            Some(format!(
                "{}.{}.",
                "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0",
                "eyJzdWIiOiIxIiwic2lkIjoibm9wZSIsImV4cCI6NDAwMDAwMDAwMH0"
            )),
        ),
        (
            "unknown session",
            Some(sign(&secret, jsonwebtoken::Algorithm::HS256, &claims)),
        ),
        ("revoked", Some(revoked)),
    ];
    for (what, t) in cases {
        let s = app.stream("/api/v1/stream/user", t.as_deref(), &[]).await;
        assert_eq!(s.status, StatusCode::UNAUTHORIZED, "{what}");
        assert!(s.body["error"]["code"].is_string(), "{what}");
        let s = app
            .stream(
                &format!(
                    "/api/v1/stream/user?access_token={}",
                    t.as_deref().unwrap_or("")
                ),
                None,
                &[],
            )
            .await;
        assert_eq!(s.status, StatusCode::UNAUTHORIZED, "{what} in query");
    }
    let s = app
        .stream("/api/v1/stream/firehose", Some(&token), &[])
        .await;
    assert_eq!(s.status, StatusCode::FORBIDDEN, "missing scope");
}

#[tokio::test]
async fn logout_closes_that_sessions_streams_with_a_disconnect() {
    let app = TestApp::start().await;
    let (_, token) = app.user("sol").await;
    let other = app.login("sol").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    let mut kept = app.stream("/api/v1/stream/user", Some(&other), &[]).await;
    app.delete("/api/v1/sessions/current", Some(&token)).await;
    let bye = s.next("disconnect").await;
    assert_eq!(
        (bye.event.as_str(), bye.data["code"].clone()),
        ("disconnect", json!("revoked"))
    );
    assert!(bye.data["reason"].is_string());
    assert!(s.ended_within(Duration::from_secs(5)).await);
    app.say(&other, "kept").await;
    assert_eq!(
        status_message(&kept.next_event("other session still streams").await),
        "kept"
    );
}

#[tokio::test]
async fn logout_closes_every_kind_of_stream_even_a_websocket_with_no_subscription() {
    let app = TestApp::start().await;
    let (_, token) = app.user("leaver").await;
    let mut idle_ws = ws_connect(&app, "/api/v1/stream", &token).await;
    let mut ndjson = app
        .stream(
            "/api/v1/stream/sample?rate=1",
            Some(&token),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    // The socket has been accepted; make sure the server has registered it
    // by a round trip on it before the logout.
    ws_send(
        &mut idle_ws,
        json!({"type": "unsubscribe", "stream": "user"}),
    )
    .await;
    assert_eq!(ws_next(&mut idle_ws).await["type"], "error");
    let mut path_ws = ws_connect(&app, "/api/v1/stream/sample?rate=1", &token).await;
    let mut filter_sse = app
        .stream("/api/v1/stream/filter?track=never", Some(&token), &[])
        .await;
    // A fresh client: its stream cannot ride a kept-alive connection, so it
    // is served on the raw socket.
    let raw_user = reqwest::Client::new()
        .get(app.url("/api/v1/stream/user"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(raw_user.status(), StatusCode::OK);
    let (status, _) = app.delete("/api/v1/sessions/current", Some(&token)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let bye = ws_next(&mut path_ws).await;
    assert_eq!(bye["code"], "revoked", "WebSocket on a stream path");
    assert_eq!(filter_sse.next("disconnect").await.data["code"], "revoked");
    let raw_body = tokio::time::timeout(Duration::from_secs(10), raw_user.text())
        .await
        .expect("the raw stream ends")
        .unwrap_or_default();
    assert!(raw_body.contains("\"revoked\""), "{raw_body}");
    let bye = ws_next(&mut idle_ws).await;
    assert_eq!(
        (bye["type"].clone(), bye["code"].clone()),
        (json!("disconnect"), json!("revoked"))
    );
    let bye = ndjson.next("disconnect").await;
    assert_eq!(bye.data["code"], "revoked");
    // Whatever it tries next, the socket gets nothing more of the user's.
    let _ = idle_ws
        .send(WsMessage::Text(
            json!({"type": "subscribe", "stream": "user"})
                .to_string()
                .into(),
        ))
        .await;
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(m)) = idle_ws.next().await {
            if let WsMessage::Text(t) = m {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                assert_ne!(v["type"], "subscribed", "a revoked socket subscribed");
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the revoked socket was not closed");
}

#[tokio::test]
async fn a_logout_while_the_hubs_subscription_is_down_still_closes_the_stream() {
    let app = TestApp::start().await;
    let (_, token) = app.user("missed").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    // Drop the hub's pub/sub connection and log out at once: the revocation
    // is published while nobody listens, and must come from the buffer.
    app.redis.kill_pubsub();
    app.delete("/api/v1/sessions/current", Some(&token)).await;
    let bye = s.next("disconnect").await;
    assert_eq!(bye.data["code"], "revoked");
}

#[tokio::test]
async fn a_stream_whose_token_expires_is_closed_with_expired() {
    let app = TestApp::start_with(|c| c.token_ttl = 2).await;
    let (_, token) = app.user("shortlived").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    assert_eq!(s.status, StatusCode::OK);
    // Warned first (the token has less than a minute), then ended.
    let warned = s.next("warning").await;
    assert_eq!(warned.data["code"], "token_expiring");
    let bye = s.next("disconnect").await;
    assert_eq!(
        (bye.event.as_str(), bye.data["code"].clone()),
        ("disconnect", json!("expired"))
    );
    assert!(s.ended_within(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_stream_is_warned_before_its_token_expires_on_every_transport() {
    // A token of 30 s: less than the warning's minute, so it comes at once.
    let app = TestApp::start_with(|c| c.token_ttl = 30).await;
    let (_, token) = app.user("expiring").await;
    let (_, body) = app.get("/api/v1/me", Some(&token)).await;
    assert!(body["id"].is_string());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let check = |data: &Value| {
        assert_eq!(data["code"], "token_expiring", "{data}");
        let at = data["expires_at"].as_u64().expect("expires_at");
        assert!(at > now && at <= now + 32, "{at} vs {now}");
    };
    for headers in [vec![], vec![("accept", "application/x-ndjson")]] {
        let mut s = app
            .stream("/api/v1/stream/user", Some(&token), &headers)
            .await;
        assert_eq!(s.status, StatusCode::OK);
        let m = s.next("warning").await;
        check(&m.data);
    }
    let mut ws = ws_connect(&app, "/api/v1/stream/user", &token).await;
    let m = ws_next(&mut ws).await;
    assert_eq!(m["type"], "warning", "{m}");
    check(&m);
    // A token far from its end gets no warning.
    let app = TestApp::start().await;
    let (_, token) = app.user("lasting").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    assert!(s.next_within(Duration::from_secs(2)).await.is_none());
}

#[tokio::test]
async fn at_most_five_streams_per_user_then_429() {
    let app = TestApp::start().await;
    let (_, token) = app.user("tao").await;
    let mut open: Vec<StreamClient> = Vec::new();
    for _ in 0..5 {
        let s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
        assert_eq!(s.status, StatusCode::OK);
        open.push(s);
    }
    let s = app.stream("/api/v1/stream/sample", Some(&token), &[]).await;
    assert_eq!(s.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(s.body["error"]["code"].is_string());
    // The raw stream path answers the refusal with its Retry-After too.
    let refused = app
        .http
        .get(app.url("/api/v1/stream/sample"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(
        refused.headers().contains_key("retry-after"),
        "{:?}",
        refused.headers()
    );
    open.pop();
    app.eventually("a slot frees up", || async {
        app.stream("/api/v1/stream/sample", Some(&token), &[])
            .await
            .status
            == StatusCode::OK
    })
    .await;
}

#[tokio::test]
async fn sse_sends_keepalive_comments() {
    let app = TestApp::start_with(|c| c.keepalive_secs = 1).await;
    let (_, token) = app.user("uli").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    assert!(s.next_within(Duration::from_millis(2500)).await.is_none());
    assert!(s.comments >= 1, "a comment line arrived");
}

/// A feed on tokio's paused clock: nothing real to wait for (its hub's
/// Redis is never reached), so the clock jumps from timer to timer and the
/// timing is exact. Shutdown fires when the returned trigger is dropped.
fn paused_feed(
    keepalive: Duration,
    expires_in: u64,
) -> (firehose::stream::Feed, firehose::shutdown::Trigger) {
    let mut cfg = firehose::config::Config::defaults();
    cfg.redis_url = Some("redis://127.0.0.1:1".into());
    let store = firehose::store::Store::open("redis://127.0.0.1:1", &cfg).unwrap();
    let (trigger, shutdown) = firehose::shutdown::channel();
    let (hub, _tasks) = firehose::stream::Hub::start(store, shutdown.clone(), keepalive);
    let expires = firehose::model::now() as u64 + expires_in;
    let feed = firehose::stream::Feed::new(hub, None, 1, "s".into(), expires, 16, shutdown);
    (feed, trigger)
}

#[tokio::test(start_paused = true)]
async fn an_idle_feed_hands_out_a_keepalive_every_period() {
    let period = Duration::from_secs(15);
    let (mut feed, _trigger) = paused_feed(period, 3600);
    let start = tokio::time::Instant::now();
    for n in 1..=4u32 {
        let out = feed.next().await.expect("the feed goes on");
        assert!(
            matches!(out, firehose::stream::Out::Keepalive(_)),
            "{out:?}"
        );
        assert_eq!(start.elapsed(), period * n, "keep-alive {n}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_feed_ends_with_disconnect_expired_when_its_token_expires() {
    let (mut feed, _trigger) = paused_feed(Duration::from_secs(30), 100);
    let start = tokio::time::Instant::now();
    let mut warnings = Vec::new();
    let bye = loop {
        match feed.next().await.expect("a disconnect before the end") {
            firehose::stream::Out::Keepalive(_) => continue,
            firehose::stream::Out::Control(c) if c.kind == "warning" => {
                let v: Value = serde_json::from_slice(&c.json).unwrap();
                warnings.push(v["code"].clone());
            }
            other => break other,
        }
    };
    // The token had less than a minute: warned before its end.
    assert_eq!(warnings, vec![json!("token_expiring")]);
    let firehose::stream::Out::Control(bye) = bye else {
        panic!("{bye:?}");
    };
    let v: Value = serde_json::from_slice(&bye.json).unwrap();
    assert_eq!((bye.kind, &v["code"]), ("disconnect", &json!("expired")));
    // The expiry is whole seconds away from a clock that had moved on by
    // less than one when the feed was made.
    let waited = start.elapsed();
    assert!(
        waited > Duration::from_secs(98) && waited <= Duration::from_secs(100),
        "{waited:?}"
    );
    assert!(feed.next().await.is_none(), "nothing after the disconnect");
}

#[tokio::test]
async fn shutdown_sends_disconnect_to_every_client_before_closing() {
    let app = TestApp::start().await;
    let (_, token) = app.user("val").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    let mut n = app
        .stream(
            "/api/v1/stream/user",
            Some(&token),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let stopping = tokio::spawn(app.shutdown());
    for c in [&mut s, &mut n] {
        let bye = c.next("disconnect").await;
        assert_eq!(
            (bye.data["type"].clone(), bye.data["code"].clone()),
            (json!("disconnect"), json!("shutdown"))
        );
        assert!(c.ended_within(Duration::from_secs(5)).await);
    }
    stopping.await.unwrap();
}

#[tokio::test]
async fn shutdown_spreads_the_clients_return_over_the_window() {
    use futures::StreamExt;
    let app = TestApp::start_with(|c| c.reconnect_spread = 8.0).await;
    let mut plain = Vec::new();
    for i in 0..24 {
        let (_, token) = app.user(&format!("spread{i}")).await;
        let accept = if i % 4 == 0 {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        };
        plain.push(
            app.stream("/api/v1/stream/sample", Some(&token), &[("accept", accept)])
                .await,
        );
    }
    let (_, token) = app.user("spread_ws").await;
    let mut ws = ws_connect(&app, "/api/v1/stream/sample", &token).await;
    let stopping = tokio::spawn(app.shutdown());
    let mut hints = Vec::new();
    for (i, c) in plain.iter_mut().enumerate() {
        let bye = c.next("disconnect").await;
        assert_eq!(bye.data["code"], "shutdown");
        let ms = bye.data["retry_after_ms"].as_u64().expect("a hint");
        assert!((800..=8000).contains(&ms), "{ms} ms is in the window");
        if i % 4 != 0 {
            // SSE: the browser's reconnection delay is set to the same.
            assert_eq!(c.retry, Some(ms));
        }
        hints.push(ms);
        assert!(c.ended_within(Duration::from_secs(5)).await);
    }
    let bye = ws_next(&mut ws).await;
    let ms = bye["retry_after_ms"].as_u64().expect("a hint");
    let close = loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
            Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Close(f)))) => break f,
            Ok(Some(Ok(_))) => continue,
            other => panic!("no close frame: {other:?}"),
        }
    };
    let close = close.expect("a close frame with a code");
    assert_eq!(u16::from(close.code), 1012);
    assert!(
        close.reason.contains(&format!("{ms} ms")),
        "{}",
        close.reason
    );
    // Spread out, not one value: 24 draws over 0.8-8 s.
    hints.sort_unstable();
    hints.dedup();
    assert!(hints.len() >= 12, "{hints:?}");
    assert!(hints[hints.len() - 1] - hints[0] >= 3000, "{hints:?}");
    stopping.await.unwrap();
}

/// The allocator settings one `serve` process runs with: its environment's
/// mimalloc variables and whether the kernel may give it transparent huge
/// pages (`None` on a kernel without the `THP_enabled` line).
fn allocator_of(server: &common::ServerProcess) -> (Vec<String>, Option<bool>) {
    let pid = server.child.id().expect("the server is running");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("its environment");
    let mut vars: Vec<String> = environ
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|v| v.starts_with("MIMALLOC_"))
        .collect();
    vars.sort();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    let thp = status
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))
        .map(|v| v.trim() == "1");
    (vars, thp)
}

/// Idle connections stay lean (docs/benchmarks.md, *Streams*): `serve` re-runs itself
/// once with mimalloc's huge pages off and immediate purging, keeps a value
/// the operator set, and leaves the allocator alone with `--huge-pages on`.
#[tokio::test]
async fn serve_runs_without_huge_pages_unless_asked() {
    let redis = common::RedisServer::start();
    let lean = common::ServerProcess::serve(&redis, &[]).await;
    let (vars, thp) = allocator_of(&lean);
    assert_eq!(vars, ["MIMALLOC_ALLOW_THP=0", "MIMALLOC_PURGE_DELAY=0"]);
    assert_ne!(thp, Some(true), "huge pages are off for the process");
    lean.kill9().await;

    let own = common::ServerProcess::serve(&redis, &[("MIMALLOC_PURGE_DELAY", "50")]).await;
    assert_eq!(
        allocator_of(&own).0,
        ["MIMALLOC_ALLOW_THP=0", "MIMALLOC_PURGE_DELAY=50"]
    );
    own.kill9().await;

    let huge = common::ServerProcess::serve(&redis, &[("FIREHOSE_HUGE_PAGES", "on")]).await;
    let (vars, thp) = allocator_of(&huge);
    assert!(vars.is_empty(), "{vars:?}");
    assert_ne!(
        thp,
        Some(false),
        "huge pages are left to the kernel's setting"
    );
    huge.kill9().await;
}
