//! Limits that hold against hostile or careless clients and hosts:
//! incomplete heads, connection caps, file limits, metric series, rate
//! limits, a default secret, sessions ended on another process.

use super::*;

/// Reads what the server sends until it closes (or `wait` passes).
async fn read_to_close(socket: &mut tokio::net::TcpStream, wait: Duration) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let read = tokio::time::timeout(wait, socket.read_to_end(&mut got)).await;
    read.ok()
        .map(|_| String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test]
async fn an_incomplete_request_head_gets_408_and_is_closed() {
    // One second rather than the default ten, so the test need not wait.
    let app = TestApp::start_with(|c| c.request_timeout_secs = 1.0).await;
    let mut partial = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    partial.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    let answer = read_to_close(&mut partial, Duration::from_secs(5))
        .await
        .expect("closed within the head timeout");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"request_timeout\""), "{answer}");
    // The same for the second request of a kept-alive connection.
    let mut kept = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\n")
        .await
        .unwrap();
    let answer = read_to_close(&mut kept, Duration::from_secs(5))
        .await
        .expect("closed within the head timeout");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// Sends one request on a new connection and reads the answer to the close.
async fn ask_once(addr: std::net::SocketAddr, request: &str) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    read_to_close(&mut socket, Duration::from_secs(10))
        .await
        .expect("answered and closed")
}

#[tokio::test]
async fn connections_beyond_the_cap_get_503_and_health_still_answers() {
    let app = TestApp::start_with(|c| c.max_connections = 3).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(tokio::net::TcpStream::connect(app.addr).await.unwrap());
    }
    // (Metrics are per process and tests share one: wait for the refusal
    // itself rather than a gauge.)
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let answer = loop {
        let answer = ask_once(app.addr, "GET /api/v1/users/1 HTTP/1.1\r\nHost: x\r\n\r\n").await;
        if answer.starts_with("HTTP/1.1 503") || std::time::Instant::now() > deadline {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: "),
        "{answer}"
    );
    assert!(answer.contains("\"too_many_connections\""), "{answer}");
    // The operations paths answer a full process, once per connection.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
        let answer = ask_once(app.addr, &request).await;
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "{path} at the cap: {answer}"
        );
        if path == "/metrics" {
            assert!(answer.contains("firehose_connection_cap "), "{answer}");
        }
    }
    let answer = ask_once(app.addr, "POST /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(
        answer.starts_with("HTTP/1.1 503"),
        "only GETs of operations paths: {answer}"
    );
    assert!(app.metric("firehose_connections_refused_total").await >= 2.0);
    // A slot freed is a slot usable again.
    drop(held);
    app.eventually("a freed slot serves again", || async {
        app.http
            .get(app.url("/api/v1/users/1"))
            .send()
            .await
            .is_ok_and(|r| r.status() == reqwest::StatusCode::NOT_FOUND)
    })
    .await;
}

#[tokio::test]
async fn a_server_started_under_a_soft_file_limit_of_1024_serves_past_it() {
    // This process holds the clients' ends: it needs more than 1,024 too.
    let _ = firehose::nofile::raise();
    let app = TestApp::start().await;
    let server = ServerProcess::serve_with_soft_nofile(&app.redis, &[], 1024).await;
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", server.port).parse().unwrap();
    // 1,500 kept-alive connections, each having had one answer.
    let mut held = Vec::new();
    for i in 0..1500 {
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        socket
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut got = [0u8; 512];
        let n = tokio::time::timeout(Duration::from_secs(10), async {
            use tokio::io::AsyncReadExt;
            socket.read(&mut got).await
        })
        .await
        .unwrap_or_else(|_| panic!("connection {i} was answered"))
        .unwrap();
        assert!(got[..n].starts_with(b"HTTP/1.1 200"), "connection {i}");
        held.push(socket);
    }
    let metrics = reqwest::get(server.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let open: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("firehose_client_connections "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    println!("open client connections under a soft limit of 1024: {open}");
    assert!(open >= 1500.0, "{open} connections open");
    let cap: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("firehose_connection_cap "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(cap > 1500.0, "the cap follows the raised limit: {cap}");
    drop(held);
    server.kill9().await;
}

#[tokio::test]
async fn made_up_methods_and_paths_add_no_metric_series() {
    let app = TestApp::start().await;
    // One histogram per (route, method, status): count their `_count` lines.
    let series = |text: &str| text.lines().filter(|l| l.contains("_count{")).count();
    let before = app.metrics().await;
    for i in 0..50 {
        let mut socket = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        let request = format!("X{i} /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        socket.write_all(request.as_bytes()).await.unwrap();
        read_to_close(&mut socket, Duration::from_secs(5)).await;
        let (_, _) = app.get(&format!("/no/such/path/{i}"), None).await;
    }
    let after = app.metrics().await;
    assert!(
        !after.contains("method=\"X1\""),
        "a made-up method became a label"
    );
    assert!(
        !after.contains("/no/such/path"),
        "a made-up path became a label"
    );
    // The requests above fold into a bounded handful of new series.
    assert!(
        series(&after) - series(&before) <= 4,
        "{}",
        series(&after) - series(&before)
    );
}

#[tokio::test]
async fn rate_limits_count_every_process_and_new_streams_per_address() {
    let app = TestApp::start().await;
    let (uid, _) = app.user("two_doors").await;
    let token = app.operator_token(&uid, &["read", "write"]).await;
    let env = [
        ("FIREHOSE_RATE_LIMITS", "on"),
        ("FIREHOSE_WRITES_PER_MINUTE", "6"),
        ("FIREHOSE_LOGINS_PER_MINUTE", "4"),
        ("FIREHOSE_STREAM_CONNECTS_PER_MINUTE", "3"),
        ("FIREHOSE_TRUSTED_PROXIES", "127.0.0.1"),
    ];
    let a = ServerProcess::serve(&app.redis, &env).await;
    let b = ServerProcess::serve(&app.redis, &env).await;
    // Writes alternate between two processes: six in all, not six each.
    let mut codes = Vec::new();
    for i in 0..10 {
        let server = if i % 2 == 0 { &a } else { &b };
        let r = app
            .http
            .post(server.url("/api/v1/statuses"))
            .bearer_auth(&token)
            .json(&json!({"message": format!("door {i}")}))
            .send()
            .await
            .unwrap();
        if r.status() == 429 {
            assert!(r.headers().contains_key("retry-after"));
        }
        codes.push(r.status().as_u16());
    }
    assert_eq!(codes, [201, 201, 201, 201, 201, 201, 429, 429, 429, 429]);
    // Logins from one address, likewise.
    let mut codes = Vec::new();
    for i in 0..6 {
        let server = if i % 2 == 0 { &a } else { &b };
        let r = app
            .http
            .post(server.url("/api/v1/sessions"))
            .header("x-forwarded-for", "198.51.100.20")
            .json(&json!({"identifier": "two_doors", "password": "password123"}))
            .send()
            .await
            .unwrap();
        codes.push(r.status().as_u16());
    }
    assert_eq!(codes, [201, 201, 201, 201, 429, 429]);
    // New streams from one address: three over both processes, then 429
    // with Retry-After; another address is counted apart.
    let open = |server: &ServerProcess, from: &str| {
        app.http
            .get(server.url("/api/v1/stream/sample"))
            .bearer_auth(&token)
            .header("x-forwarded-for", from.to_string())
            .send()
    };
    let mut held = Vec::new();
    for i in 0..3 {
        let r = open(if i % 2 == 0 { &a } else { &b }, "203.0.113.7")
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        held.push(r);
    }
    let refused = open(&b, "203.0.113.7").await.unwrap();
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    let other = open(&a, "203.0.113.8").await.unwrap();
    assert_eq!(other.status(), 200);
    // Every bucket is one key of its own, and none outlives its refill.
    let mut conn = app.redis.conn();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("fh:rate:*")
        .query(&mut conn)
        .unwrap_or_default();
    assert!(!keys.is_empty() || app.redis.is_cluster());
    for key in keys {
        let ttl: i64 = conn.pttl(&key).unwrap();
        assert!((1..=60_000).contains(&ttl), "{key}: {ttl}");
    }
}

#[tokio::test]
async fn sign_ups_logins_and_writes_over_their_limits_get_429_with_retry_after() {
    let app = TestApp::start_with(|c| {
        c.rate_limits = firehose::config::Switch::On;
        c.signups_per_minute = 3;
        c.logins_per_minute = 4;
        c.writes_per_minute = 5;
    })
    .await;
    let signup = |i: usize| {
        app.http.post(app.url("/api/v1/users")).json(&json!({
            "login": format!("limited{i}"), "name": "n",
            "email": format!("l{i}@x.y"), "password": "password123"}))
    };
    let mut codes = Vec::new();
    for i in 0..4 {
        codes.push(signup(i).send().await.unwrap().status().as_u16());
    }
    assert_eq!(codes, [201, 201, 201, 429]);
    let refused = signup(9).send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    // Logins: four, then 429 (wrong passwords count too).
    let mut codes = Vec::new();
    let mut uid = String::new();
    for _ in 0..5 {
        let r = app
            .http
            .post(app.url("/api/v1/sessions"))
            .json(&json!({"identifier": "limited0", "password": "password123"}))
            .send()
            .await
            .unwrap();
        codes.push(r.status().as_u16());
        if r.status().as_u16() == 201 {
            let body: serde_json::Value = r.json().await.unwrap();
            uid = body["user"]["id"].as_str().unwrap().to_string();
        }
    }
    assert_eq!(codes, [201, 201, 201, 201, 429]);
    // Writes per user: five posts, then 429 with Retry-After.
    let token = app.operator_token(&uid, &["read", "write"]).await;
    let mut codes = Vec::new();
    for i in 0..6 {
        let r = app
            .http
            .post(app.url("/api/v1/statuses"))
            .bearer_auth(&token)
            .json(&json!({"message": format!("write {i}")}))
            .send()
            .await
            .unwrap();
        codes.push(r.status().as_u16());
        if r.status().as_u16() == 429 {
            assert!(r.headers().contains_key("retry-after"));
        }
    }
    assert_eq!(codes, [201, 201, 201, 201, 201, 429]);
}

#[tokio::test]
async fn without_a_configured_secret_tokens_signed_with_a_published_constant_are_refused() {
    let app = TestApp::start_with(|c| c.jwt_secret = None).await;
    let (uid, token) = app.user("secretive").await;
    // The constant earlier versions signed with when none was configured,
    // over the user's real, live session.
    let mut conn = app.redis.conn();
    let sessions: Vec<String> = conn
        .zrange(format!("{}:user:{{{uid}}}:live", app.cfg.key_prefix), 0, -1)
        .unwrap();
    assert_eq!(sessions.len(), 1);
    let forged = firehose::auth::Jwt::new("firehose-development-secret-change-me").mint(
        uid.parse().unwrap(),
        &sessions[0],
        &["read", "write", "firehose"],
        3600,
    );
    let (status, _) = app.get("/api/v1/me", Some(&forged.0)).await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
    // A second process on the same Redis shares the generated secret.
    let other = ServerProcess::serve(&app.redis, &[("FIREHOSE_JWT_SECRET", "")]).await;
    let me = app
        .http
        .get(other.url("/api/v1/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), reqwest::StatusCode::OK);
    let kept: String = conn
        .get(format!("{}:{{g}}:jwt_secret", app.cfg.key_prefix))
        .unwrap();
    assert_eq!(kept.len(), 64, "256 random bits, hex");
    other.kill9().await;
}

/// `GET /api/v1/me` on `base` with `token`: its status code.
async fn me_on(app: &TestApp, base: &str, token: &str) -> reqwest::StatusCode {
    app.http
        .get(format!("{base}/api/v1/me"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn a_session_ended_on_one_process_is_refused_by_another_that_had_it_in_memory() {
    // Sessions found alive are trusted for ten minutes here, so only the
    // revocation event (live, or from the buffer after a lost
    // subscription) can make the other process refuse the token.
    let ttl = ("FIREHOSE_SESSION_CACHE_TTL", "600");
    let app = TestApp::start_with(|c| c.session_cache_ttl = 600.0).await;
    let other = ServerProcess::serve(&app.redis, &[ttl]).await;
    let base = &other.url("");
    app.register("remembered").await;
    let live = app.login("remembered").await;
    let missed = app.login("remembered").await;
    for token in [&live, &missed] {
        assert_eq!(me_on(&app, base, token).await, reqwest::StatusCode::OK);
    }
    // Heard live: the other process refuses the token soon after.
    app.delete("/api/v1/sessions/current", Some(&live)).await;
    app.eventually("the live revocation reaches the other process", || async {
        me_on(&app, base, &live).await == reqwest::StatusCode::UNAUTHORIZED
    })
    .await;
    // Missed: every subscription is cut as the session ends.
    app.redis.kill_pubsub();
    app.delete("/api/v1/sessions/current", Some(&missed)).await;
    app.eventually(
        "the missed revocation reaches the other process",
        || async { me_on(&app, base, &missed).await == reqwest::StatusCode::UNAUTHORIZED },
    )
    .await;
    // The process that ended them refused them at once, and a live session
    // still works on both.
    assert_eq!(
        app.get("/api/v1/me", Some(&missed)).await.0,
        reqwest::StatusCode::UNAUTHORIZED
    );
    let kept = app.login("remembered").await;
    assert_eq!(me_on(&app, base, &kept).await, reqwest::StatusCode::OK);
    assert_eq!(
        app.get("/api/v1/me", Some(&kept)).await.0,
        reqwest::StatusCode::OK
    );
    other.kill9().await;
}
