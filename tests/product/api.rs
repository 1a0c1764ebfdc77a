//! The HTTP surface as a whole: every route documented, health, readiness
//! and metrics, schemathesis against the OpenAPI document, streams on a
//! kept-alive connection, and the Grafana dashboard's metrics.

use super::*;

#[tokio::test]
async fn every_route_is_in_the_openapi_document() {
    let app = TestApp::start().await;
    let (status, doc) = app.get("/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    // The router and the document are made from one list of operations
    // (`firehose::http::routes`); every documented operation is routed
    // (answered by its handler, not by the fallback's "No such endpoint."
    // nor a 405), and there are as many as the list holds.
    let ops = firehose::http::routes();
    let mut documented = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            documented += 1;
            assert!(
                op["summary"].is_string() && op["responses"].is_object(),
                "{method} {path}"
            );
            let url = app.url(&path.replace("{id}", "1").replace("{tag}", "x"));
            let req = app
                .http
                .request(method.to_uppercase().parse().unwrap(), url)
                .header("content-type", "application/json")
                .body("{}");
            let resp = req.send().await.unwrap();
            let status = resp.status();
            let body = resp.text().await.unwrap_or_default();
            assert!(
                status != StatusCode::METHOD_NOT_ALLOWED && !body.contains("No such endpoint."),
                "documented but not routed: {method} {path} ({status} {body})"
            );
        }
    }
    assert_eq!(documented, ops.ops().len(), "one operation a route");
    assert!(documented >= 40, "{documented}");
    for schema in [
        "User",
        "Status",
        "Error",
        "Event",
        "CreateUser",
        "LoginReply",
    ] {
        assert!(doc["components"]["schemas"][schema].is_object(), "{schema}");
    }
    let resp = app.http.get(app.url("/docs")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.text().await.unwrap().contains("/openapi.json"));
}

#[tokio::test]
async fn health_readiness_and_metrics_report_what_happens() {
    let app = TestApp::start().await;
    assert_eq!(
        app.get("/healthz", None).await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
    assert_eq!(app.get("/readyz", None).await.0, StatusCode::OK);
    // Every answer carries a request id: a new one each time, or the
    // client's own, echoed (a 405 rewritten to the contract's shape too).
    let mut ids = std::collections::HashSet::new();
    for _ in 0..3 {
        let resp = app.http.get(app.url("/healthz")).send().await.unwrap();
        let id = resp.headers()["x-request-id"].to_str().unwrap().to_string();
        assert_eq!(id.len(), 36, "{id}");
        assert!(ids.insert(id));
    }
    for resp in [
        app.http.get(app.url("/healthz")),
        app.http.delete(app.url("/healthz")),
    ] {
        let resp = resp
            .header("x-request-id", "trace-me-42")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["x-request-id"], "trace-me-42");
    }
    let (_, token) = app.user("metric").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    app.say(&token, "counted").await;
    s.next_event("status").await;
    app.get("/api/v1/nope", None).await;
    let resp = app.http.get(app.url("/metrics")).send().await.unwrap();
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = resp.text().await.unwrap();
    for needle in [
        "firehose_events_received_total",
        "firehose_events_matched_total",
        "firehose_events_sent_total",
        "firehose_queue_drops_total",
        "firehose_stall_disconnects_total",
        "firehose_fanout_queue_depth",
        "firehose_fanout_lag_seconds",
        "firehose_stream_connections{stream=\"user\",transport=\"sse\"}",
        "firehose_http_errors_total{status=\"404\"}",
    ] {
        assert!(text.contains(needle), "metrics lack {needle}");
    }
    // Label order carries no meaning (the encoder puts `le` first).
    let post_latency = [
        "route=\"/api/v1/statuses\"",
        "method=\"POST\"",
        "status=\"201\"",
    ];
    assert!(
        text.lines().any(|l| {
            l.starts_with("firehose_http_request_duration_seconds_bucket{")
                && post_latency.iter().all(|label| l.contains(label))
        }),
        "metrics lack the POST /api/v1/statuses 201 latency buckets:\n{text}"
    );
    assert!(text.trim_end().ends_with("# EOF"), "an OpenMetrics body");
    let sent: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("firehose_events_sent_total "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(sent >= 1.0);
    // A scraper that asks for OpenMetrics is told it gets it.
    let asked = app
        .http
        .get(app.url("/metrics"))
        .header(
            "accept",
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5",
        )
        .send()
        .await
        .unwrap();
    assert!(asked.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text"));
}

#[tokio::test]
async fn a_stream_requested_on_a_used_keep_alive_connection_works_too() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start_with(|c| c.request_timeout_secs = 1.0).await;
    let (_, token) = app.user("keeper").await;
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    // First an ordinary request, then a stream on the same connection (served by hyper).
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tcp.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("200 OK"));
    tcp.write_all(
        format!(
            "GET /api/v1/stream/user HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    app.say(&token, "via hyper").await;
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed early: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            if seen.contains("via hyper") {
                return true;
            }
        }
    })
    .await
    .unwrap_or(false);
    assert!(found && seen.contains("text/event-stream"), "{seen}");
    // The head timeout (1 s here) is for requests, not for a stream in
    // progress: past it the stream is still open and still delivers.
    tokio::time::sleep(Duration::from_secs(2)).await;
    app.say(&token, "still via hyper").await;
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed after the head timeout: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            if seen.contains("still via hyper") {
                return true;
            }
        }
    })
    .await
    .unwrap_or(false);
    assert!(found, "{seen}");
}

#[tokio::test]
async fn schemathesis_finds_nothing_against_the_openapi_document() {
    let st = common::schemathesis();
    let workdir =
        std::env::temp_dir().join(format!("firehose-schemathesis-{}", std::process::id()));
    std::fs::create_dir_all(&workdir).unwrap();
    // A 400 no schema can express: a target that is the caller (block,
    // mute, a conversation with yourself: the fuzzer is user 1, and 1 is an
    // id the fuzzer tries), a title on a conversation whose participants
    // repeat one user. Those operations may answer 400 to schema-valid data;
    // every other check stays on for them.
    std::fs::write(
        workdir.join("schemathesis.toml"),
        r#"
# Every check (on the command line, `--checks all` would override the
# operations' own settings below).
checks.enabled = true

[[operations]]
include-operation-id = ["post_api_v1_users__id__block", "delete_api_v1_users__id__block", "post_api_v1_users__id__mute", "delete_api_v1_users__id__mute", "post_api_v1_conversations", "post_api_v1_reports"]
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 429]

# A history search's query is a filter rule, a grammar no schema expresses,
# and until before since (or since in the future) is refused: 400.
[[operations]]
include-operation-id = ["get_api_v1_history_search", "get_api_v1_history_counts"]
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 429]

# A status takes ten edits, then 400 too_many_edits; lists and their
# members have caps too (too_many_lists, too_many_members): bounds no
# schema can say were reached. Notifications' ids and counts are numbers
# the query's strings do not say.
[[operations]]
include-operation-id = ["patch_api_v1_statuses__id_", "post_api_v1_lists", "post_api_v1_lists__id__members", "get_api_v1_notifications", "post_api_v1_notifications_read"]
checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 409, 429]

# A paging object (count, cursor) generated with an extra property that the
# query's serialization drops reaches the server as a valid request and is
# answered 200, which schemathesis's stateful phase still counted as negative
# data accepted (GET /api/v1/blocks?count=1&cursor=0000000000, 2026-11-29).
# Bad counts and cursors are refused with 400 by the paging tests.
[[operations]]
include-operation-id = ["get_api_v1_lists__id__members", "get_api_v1_bookmarks", "get_api_v1_conversations", "get_api_v1_blocks", "get_api_v1_mutes", "get_api_v1_statuses__id__context", "get_api_v1_follow_requests", "get_api_v1_follow_requests_outgoing", "get_api_v1_users__id__followers", "get_api_v1_users__id__following", "get_api_v1_statuses__id__liked_by", "get_api_v1_admin_reports", "get_api_v1_admin_audit", "get_api_v1_groups__id__members", "get_api_v1_groups__id__requests", "get_api_v1_groups"]
checks.negative_data_rejection.enabled = false

# Adding a member answers 404 for a `user_id` that names no user: the
# stateful phase reads any 404 after creating a group as the group gone.
[[operations]]
include-operation-id = ["post_api_v1_groups__id__members"]
checks.ensure_resource_availability.enabled = false
"#,
    )
    .unwrap();
    let app = TestApp::start().await;
    let (_, token) = app.user("fuzzer").await;
    app.say(&token, "something to read").await;
    // Streams are excluded (they never end), and so is logout, which would
    // end the token the rest of the run uses.
    let out = tokio::process::Command::new(st)
        .args([
            "run",
            &app.url("/openapi.json"),
            "--exclude-path-regex",
            "/api/v1/stream",
            "--exclude-operation-id",
            "delete_api_v1_sessions_current",
            "--max-examples",
            "40",
            "--seed",
            "20261123",
            "-H",
            &format!("Authorization: Bearer {token}"),
        ])
        .env("NO_COLOR", "1")
        // Its crash cache goes to the working directory: a fresh one per run,
        // outside the repository, so no run replays another's findings.
        .current_dir(&workdir)
        .output()
        .await
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&out.stdout);
    // One finding is the tool's own: a negative case whose only violation is
    // an extra property of an object query parameter with a null or empty
    // value, which serializing drops, so the request it sends is valid and
    // rightly answered 200. Every other finding fails the test.
    let real: Vec<&str> = report
        .split("\n___")
        .skip(1)
        .filter(|section| section.contains("- ST"))
        .filter(|section| {
            let artifact = section.contains("in query - violates `additionalProperties`")
                && section.matches("- ST").count() == 1;
            !artifact
        })
        .collect();
    assert!(
        real.is_empty() && (out.status.success() || report.contains("Failures:")),
        "schemathesis found problems:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_grafana_dashboard_uses_only_metrics_the_server_exports() {
    let dashboard: Value =
        serde_json::from_str(include_str!("../../deploy/grafana/firehose-dashboard.json")).unwrap();
    let mut used = std::collections::BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let mut rest = expr;
            while let Some(at) = rest.find("firehose_") {
                let name: String = rest[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                rest = &rest[at + name.len()..];
                used.insert(name);
            }
        }
    }
    assert!(used.len() >= 15, "{used:?}");
    // Some traffic, so that every labelled family has a series.
    let app = TestApp::start().await;
    let (_, token) = app.user("scraped").await;
    let _stream = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    app.say(&token, "something to count").await;
    app.get("/api/v1/statuses/424242", None).await;
    let metrics = app.metrics().await;
    let exported: std::collections::BTreeSet<&str> = metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap_or(""))
        .collect();
    let missing: Vec<&String> = used
        .iter()
        .filter(|name| !exported.contains(name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard uses metrics /metrics lacks: {missing:?}"
    );
}

#[tokio::test]
async fn too_many_header_fields_are_431_with_a_body_on_any_request_of_a_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start().await;
    let many: String = (0..150).map(|i| format!("x-field-{i}: {i}\r\n")).collect();
    let read_answer = |mut tcp: tokio::net::TcpStream| async move {
        let mut seen = Vec::new();
        let mut buf = vec![0u8; 8192];
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match tcp.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
                if String::from_utf8_lossy(&seen).contains("}}") {
                    break;
                }
            }
        })
        .await;
        String::from_utf8_lossy(&seen).to_string()
    };
    // A connection's first request.
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{many}\r\n").as_bytes())
        .await
        .unwrap();
    let first = read_answer(tcp).await;
    // A kept-alive connection's second request (parsed by hyper).
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tcp.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("200 OK"));
    tcp.write_all(format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{many}\r\n").as_bytes())
        .await
        .unwrap();
    let second = read_answer(tcp).await;
    for answer in [first, second] {
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
        assert!(answer.contains("\"headers_too_large\""), "{answer}");
    }
    // A hundred fields are fine.
    let hundred: String = (0..98).map(|i| format!("x-field-{i}: {i}\r\n")).collect();
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tcp.write_all(
        format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{hundred}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let answer = read_answer(tcp).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
