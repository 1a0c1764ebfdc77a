//! The product surface: OpenAPI, metrics, health, the CLI, every example run
//! against a live server, and the browser page in a real headless Chromium.

#[path = "../common/mod.rs"]
mod common;
mod dashboard;

use common::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

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

fn firehose_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_firehose"))
}

fn example_bin(name: &str) -> PathBuf {
    // Examples are built next to the test binaries' parent directory by `cargo test`.
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let bin = deps.parent().unwrap().join("examples").join(name);
    assert!(
        bin.exists(),
        "example {name} was not built at {}",
        bin.display()
    );
    bin
}

/// A measurement tool of the `firehose-bench` package, built on demand
/// (`cargo test` builds only this package's binaries; the cargo running the
/// tests holds no lock while they run). `--workspace --tests` resolves
/// features as `cargo test --workspace` does, so the test build's artifacts
/// are reused rather than built a second time (a second copy of every crate
/// once overflowed CI's disk).
fn bench_bin(name: &str) -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "--workspace", "--tests", "--bin", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building {name}");
    let deps = std::env::current_exe().unwrap();
    deps.parent().unwrap().parent().unwrap().join(name)
}

/// A child's standard output read line by line: readiness is a line the
/// child prints, not a guess at how long it takes.
struct Output {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    seen: String,
}

impl Output {
    fn of(child: &mut tokio::process::Child) -> Output {
        use tokio::io::AsyncBufReadExt;
        let stdout = child.stdout.take().expect("stdout piped");
        Output {
            lines: tokio::io::BufReader::new(stdout).lines(),
            seen: String::new(),
        }
    }

    /// Reads until a line contains `needle` (within 20 s).
    async fn until(&mut self, needle: &str) {
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                self.seen.push_str(&line);
                self.seen.push('\n');
                if line.contains(needle) {
                    return true;
                }
            }
            false
        })
        .await;
        assert!(
            found == Ok(true),
            "no line with {needle:?} in: {}",
            self.seen
        );
    }

    /// Everything, to the end of the output (within 20 s).
    async fn rest(mut self) -> String {
        let _ = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                self.seen.push_str(&line);
                self.seen.push('\n');
            }
        })
        .await;
        self.seen
    }
}

#[test]
fn the_cli_help_lists_every_subcommand_and_flag() {
    let out = Command::new(firehose_bin()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for sub in ["serve", "worker", "token", "check", "demo", "tail"] {
        assert!(help.contains(sub), "{sub} missing from --help");
    }
    let out = Command::new(firehose_bin())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--listen",
        "--redis-url",
        "--key-prefix",
        "--jwt-secret",
        "--replay-maxlen",
        "--max-streams-per-user",
        "--stream-queue",
        "--log-format",
        "FIREHOSE_LISTEN",
    ] {
        assert!(help.contains(flag), "{flag} missing from serve --help");
    }
}

#[tokio::test]
async fn check_and_token_talk_to_redis() {
    let app = TestApp::start().await;
    let id = app.register("oper").await;
    let out = Command::new(firehose_bin())
        .arg("check")
        .args(app.redis.args())
        .env("FIREHOSE_JWT_SECRET", "too-short")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("reachable"), "{report}");
    assert!(
        report.contains("shorter than 32 bytes"),
        "a weak secret is flagged: {report}"
    );
    assert!(!out.status.success(), "problems give a failing exit code");
    let out = Command::new(firehose_bin())
        .arg("check")
        .args(app.redis.args())
        .env_remove("FIREHOSE_JWT_SECRET")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("generated at first start"), "{report}");
    assert!(report.contains("open files: soft limit"), "{report}");
    assert!(report.contains("net.core.somaxconn"), "{report}");
    assert!(report.contains("connections: cap "), "{report}");
    let out = Command::new(firehose_bin())
        .args(["check", "--max-connections", "100"])
        .args(app.redis.args())
        .env_remove("FIREHOSE_JWT_SECRET")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("connections: cap 100 "), "{report}");
    assert!(!report.contains("fewer than --max-connections"), "{report}");
    // A flag beyond what the file limit allows is pointed out.
    let out = Command::new(firehose_bin())
        .args(["check", "--max-connections", "100000000"])
        .args(app.redis.args())
        .env_remove("FIREHOSE_JWT_SECRET")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("warning: the open-file limit allows")
            && report.contains("fewer than --max-connections 100000000"),
        "{report}"
    );
    let out = Command::new(firehose_bin())
        .args(["check", "--redis-url", "redis://127.0.0.1:1"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("unreachable"));
    let out = Command::new(firehose_bin())
        .args([
            "token", "--user", &id, "--scope", "read", "--scope", "firehose",
        ])
        .args(app.redis.args())
        .env("FIREHOSE_JWT_SECRET", app.cfg.jwt_secret().unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let minted: Value = serde_json::from_slice(&out.stdout).unwrap();
    let token = minted["token"].as_str().unwrap();
    let s = app
        .stream("/api/v1/stream/firehose", Some(token), &[])
        .await;
    assert_eq!(
        s.status,
        StatusCode::OK,
        "the minted token opens the firehose"
    );
}

#[tokio::test]
async fn the_curl_walkthrough_runs() {
    let app = TestApp::start().await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/walkthrough.sh");
    let out = tokio::process::Command::new("bash")
        .arg(script)
        .env("BASE", format!("http://{}", app.addr))
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("bob's stream received"), "{stdout}");
}

#[tokio::test]
async fn the_websocket_client_resubscribes_live() {
    let app = TestApp::start().await;
    let (_, token) = app.user("wsex").await;
    let child = tokio::process::Command::new(example_bin("ws_client"))
        .args([
            "--addr",
            &app.addr.to_string(),
            "--token",
            &token,
            "--track",
            "first",
            "--then-track",
            "second",
            "--switch-events",
            "1",
            "--max-events",
            "3",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    let mut output = Output::of(&mut child);
    output.until("-- subscribed \"filter\"").await;
    app.say(&token, "the first one").await;
    // The switch: the filter is replaced, then the user stream answers.
    output.until("-- subscribed \"user\"").await;
    app.say(&token, "not tracked any more, but it is my own")
        .await;
    app.say(&token, "the second one").await;
    let stdout = output.rest().await;
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("ws_client exits after three events")
        .unwrap();
    assert!(status.success(), "{stdout}");
    assert!(stdout.contains("[filter] @wsex: the first one"), "{stdout}");
    assert!(stdout.contains("now tracking"), "{stdout}");
    assert!(
        stdout.contains("[user] @wsex: not tracked any more"),
        "{stdout}"
    );
    assert!(!stdout.contains("[filter] @wsex: not tracked"), "{stdout}");
    assert!(stdout.contains("@wsex: the second one"), "{stdout}");
}

#[tokio::test]
async fn the_trending_consumer_counts_hashtags_and_resumes() {
    let app = TestApp::start().await;
    let (id, token) = app.user("trend").await;
    let fh = app.operator_token(&id, &["read", "firehose"]).await;
    let child = tokio::process::Command::new(example_bin("trending"))
        .args([
            "--url",
            &format!("http://{}", app.addr),
            "--token",
            &fh,
            "--window",
            "60",
            "--max-events",
            "4",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    let mut output = Output::of(&mut child);
    output.until("-- connected").await;
    for msg in ["#rust is fun", "#Rust again #redis", "#rust #tea"] {
        app.say(&token, msg).await;
    }
    // Drop the server's Redis subscription: the hub catches up from the buffer.
    app.redis.kill_pubsub();
    app.say(&token, "#redis later").await;
    let stdout = output.rest().await;
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{stdout}");
    assert!(
        stdout.contains("trending: #rust 3, #redis 2, #tea 1"),
        "{stdout}"
    );
}

#[tokio::test]
async fn the_load_generator_reports_delivery_and_latency() {
    let app = TestApp::start_with(|c| c.max_streams_per_user = 100).await;
    let out = tokio::process::Command::new(bench_bin("loadgen"))
        .args([
            "--addr",
            &app.addr.to_string(),
            "--clients",
            "20",
            "--rate",
            "200",
            "--duration",
            "1",
        ])
        .args(app.redis.args())
        .env("FIREHOSE_JWT_SECRET", app.cfg.jwt_secret().unwrap())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("clients connected: 20/20"), "{stdout}");
    assert!(stdout.contains("lost 0 "), "{stdout}");
    assert!(stdout.contains("p99"), "{stdout}");
}

#[tokio::test]
async fn the_browser_page_shows_a_followed_users_post_live() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (ida, alice) = app.user("alice").await;
    let _ = ida;
    let page = format!("http://{}/", app.addr);
    browser.goto(&page).await;
    // Bob signs up through the page, follows alice and opens his live stream.
    browser.fill("su-login", "bob").await;
    browser.fill("su-email", "bob@example.com").await;
    browser.fill("su-password", "password123").await;
    browser.click("signup").await;
    browser.wait_for_text("who", "@bob").await;
    browser.fill("follow-login", "alice").await;
    browser.click("follow").await;
    browser
        .wait_for_text("follow-msg", "following @alice")
        .await;
    browser.click("connect").await;
    browser.wait_for_text("live-status", "live").await;
    app.say(&alice, "hello bob, live from alice").await;
    browser
        .wait_for_text("events", "hello bob, live from alice")
        .await;
    // Bob posts through the page, with a location, and sees it on his timeline.
    browser.fill("message", "bob posts from the page").await;
    browser.fill("lat", "37.77").await;
    browser.fill("lon", "-122.42").await;
    browser.click("post").await;
    browser
        .wait_for_text("timeline", "bob posts from the page")
        .await;
    // Like (the newest status, his own), reply in a thread, and trending
    // hashtags fed by the live stream.
    browser.click("timeline .like").await;
    browser.wait_for_text("timeline", "♥ 1").await;
    browser.click("timeline .reply").await;
    browser.fill("message", "bob replies to himself").await;
    browser.fill("lat", "").await;
    browser.fill("lon", "").await;
    browser.click("post").await;
    browser
        .wait_for_text("timeline", "bob replies to himself")
        .await;
    browser.click("timeline li:nth-child(2) .thread").await;
    browser
        .wait_for_text("conversation", "bob replies to himself")
        .await;
    app.say(&alice, "everyone talks about #browsertag").await;
    browser.wait_for_text("trending", "#browsertag (1)").await;
    // Chromium's own WebSocket on the multiplexed socket: it offers
    // permessage-deflate, compresses what it sends (the subscribe), and
    // inflates what the server compressed once for every socket.
    let script = r#"
        const [url, token, done] = arguments;
        const ws = new WebSocket(url + "?access_token=" + encodeURIComponent(token));
        const seen = [];
        const timer = setTimeout(() => done({error: "timed out", seen}), 10000);
        ws.onopen = () => ws.send(JSON.stringify(
            {type: "subscribe", stream: "filter", track: ["wsbrowserword"]}));
        ws.onmessage = async (m) => {
            const v = JSON.parse(m.data);
            seen.push(v.type);
            if (v.type === "subscribed") {
                await fetch("/api/v1/statuses", {method: "POST",
                    headers: {"content-type": "application/json", "authorization": "Bearer " + token},
                    body: JSON.stringify({message: "a wsbrowserword from chromium"})});
            } else if (v.type === "status") {
                clearTimeout(timer);
                done({extensions: ws.extensions, message: v.status.message, stream: v.stream, seen});
                ws.close();
            }
        };
        ws.onerror = () => done({error: "websocket error", seen});
    "#;
    let got = browser
        .run_async(
            script,
            vec![
                json!(format!("ws://{}/api/v1/stream", app.addr)),
                json!(alice),
            ],
        )
        .await;
    assert_eq!(got["message"], "a wsbrowserword from chromium", "{got}");
    assert_eq!(got["stream"], "filter", "{got}");
    assert!(
        got["extensions"]
            .as_str()
            .is_some_and(|e| e.starts_with("permessage-deflate")),
        "{got}"
    );
    // Conversations: Bob starts one with alice, her answer arrives live in
    // the open thread, and the list counts what he has not read.
    browser.fill("dm-to", "alice").await;
    browser.fill("dm-first", "hi alice, from the page").await;
    browser.click("dm-start").await;
    browser
        .wait_for_text("dm-thread", "hi alice, from the page")
        .await;
    let (_, convs) = app.get("/api/v1/conversations", Some(&alice)).await;
    let cid = convs["conversations"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &format!("/api/v1/conversations/{cid}/messages"),
        Some(&alice),
        json!({"text": "hello bob, live in the thread"}),
    )
    .await;
    browser
        .wait_for_text("dm-thread", "hello bob, live in the thread")
        .await;
    browser.fill("dm-text", "bob answers").await;
    browser.click("dm-send").await;
    browser.wait_for_text("dm-thread", "bob answers").await;
    browser.click("dm-close").await;
    app.post(
        &format!("/api/v1/conversations/{cid}/messages"),
        Some(&alice),
        json!({"text": "are you there?"}),
    )
    .await;
    browser.wait_for_text("convs", "1 unread").await;
    // Mute and block buttons act on the user named in the box.
    browser.fill("follow-login", "alice").await;
    browser.click("mute").await;
    browser.wait_for_text("follow-msg", "muted @alice").await;
    browser.click("block").await;
    browser.wait_for_text("follow-msg", "blocked @alice").await;
    let (_, blocks) = app
        .get("/api/v1/blocks", Some(&bob_token(&app).await))
        .await;
    assert_eq!(blocks["users"][0]["login"], "alice");
    let png = browser.screenshot().await;
    assert!(png.len() > 1000, "a screenshot was taken");
    let _ = std::fs::write(std::env::temp_dir().join("firehose-page.png"), png);
    browser.stop().await;
}

#[tokio::test]
async fn the_page_keeps_filter_rules_and_shows_which_matched_live() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (_, writer) = app.user("rule_writer").await;
    app.register("carol").await;
    browser.goto(&format!("http://{}/", app.addr)).await;
    browser.log_in("carol").await;
    browser.wait_for_text("who", "@carol").await;
    // An invalid rule names its column; a valid one joins the list.
    browser.fill("rule-value", "a (b").await;
    browser.click("rule-add").await;
    browser.wait_for_text("rule-msg", "column 3").await;
    browser
        .fill("rule-value", "#pagetag OR from:rule_writer")
        .await;
    browser.fill("rule-tag", "watch").await;
    browser.click("rule-add").await;
    browser
        .wait_for_text("rule-list", "#pagetag OR from:rule_writer")
        .await;
    browser.fill("rule-value", "zebra").await;
    browser.fill("rule-tag", "").await;
    browser.click("rule-add").await;
    browser.wait_for_text("rule-list", "zebra").await;
    // The search stream shows each status with the rules it matched.
    browser
        .run_async(
            r#"const [done] = arguments;
               const s = document.getElementById("stream-kind");
               s.value = "search"; s.onchange(); done(true);"#,
            vec![],
        )
        .await;
    browser.click("connect").await;
    browser.wait_for_text("live-status", "live").await;
    app.say(&writer, "a zebra crossing").await;
    browser.wait_for_text("events", "a zebra crossing").await;
    browser.wait_for_text("events", "rule watch").await;
    // Deleting a rule from the list: the stream hears of it within a second.
    browser
        .click("rule-list li:nth-child(2) .rule-delete")
        .await;
    let carol = app.login("carol").await;
    app.eventually("the rule is gone", || async {
        let (_, rules) = app.get("/api/v1/stream/rules", Some(&carol)).await;
        rules["data"].as_array().is_some_and(|r| r.len() == 1)
    })
    .await;
    // The same rule language over the history: a bad rule names its
    // column; a good one lists the matches and charts the counts.
    browser.fill("hs-query", "zebra (").await;
    browser.click("hs-search").await;
    browser.wait_for_text("hs-msg", "column").await;
    browser.fill("hs-query", "zebra").await;
    browser.click("hs-search").await;
    browser.wait_for_text("hs-msg", "1 matching status").await;
    browser
        .wait_for_text("hs-results", "a zebra crossing")
        .await;
    let bars = browser
        .run_async(
            r#"const [done] = arguments;
               done(document.getElementById("hs-chart").querySelectorAll(".bar").length);"#,
            vec![],
        )
        .await;
    assert!(bars.as_u64().unwrap_or(0) >= 1, "{bars}");
    let png = browser.screenshot().await;
    assert!(png.len() > 1000, "a screenshot was taken");
    let _ = std::fs::write(std::env::temp_dir().join("firehose-rules-page.png"), png);
    browser.stop().await;
}

#[tokio::test]
async fn the_page_makes_a_group_and_posts_into_it() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (_, friend) = app.user("group_friend").await;
    app.register("gina").await;
    browser.goto(&format!("http://{}/", app.addr)).await;
    browser.log_in("gina").await;
    browser.wait_for_text("who", "@gina").await;
    browser.fill("group-name", "Page people").await;
    browser.click("group-create").await;
    browser.wait_for_text("group-list", "Page people").await;
    browser.wait_for_text("group-list", "owner").await;
    let gina = app.login("gina").await;
    let (_, mine) = app.get("/api/v1/groups", Some(&gina)).await;
    let gid = mine["groups"][0]["id"].as_str().unwrap().to_string();
    // A friend joins through the API and posts; the page posts too.
    let (status, _) = app
        .post(
            &format!("/api/v1/groups/{gid}/join"),
            Some(&friend),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.post(
        "/api/v1/statuses",
        Some(&friend),
        json!({"message": "hello page people", "group_id": gid}),
    )
    .await;
    browser
        .fill("group-message", "gina posts to the group")
        .await;
    browser.click("group-post").await;
    browser
        .wait_for_text("group-timeline", "gina posts to the group")
        .await;
    browser
        .wait_for_text("group-timeline", "hello page people")
        .await;
    let (_, timeline) = app
        .get(&format!("/api/v1/groups/{gid}/statuses"), None)
        .await;
    assert_eq!(timeline.as_array().unwrap().len(), 2);
    // Not in her home timeline.
    let home = app
        .timeline_ids("/api/v1/timelines/home", Some(&gina))
        .await;
    assert!(home.is_empty(), "{home:?}");
    browser.stop().await;
}

#[tokio::test]
async fn the_page_reports_a_status_and_an_admin_resolves_and_suspends() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (alice_id, alice) = app.user("page_spammer").await;
    let (admin_id, _) = app.user("page_admin").await;
    app.register("page_reporter").await;
    let sid = app.say(&alice, "buy my pills now").await;
    // A user reports it with the page's button on their timeline.
    let reporter = app.login("page_reporter").await;
    app.follow(&reporter, &alice_id).await;
    browser.goto(&format!("http://{}/", app.addr)).await;
    browser.log_in("page_reporter").await;
    browser.wait_for_text("timeline", "buy my pills now").await;
    browser.click("timeline .report").await;
    browser.wait_for_text("post-msg", "reported").await;
    browser.click("logout").await;
    // The admin, with an operator's token, resolves it and suspends.
    let admin = app.operator_token(&admin_id, &["read", "admin"]).await;
    browser.wait_for_text("auth", "use a token").await;
    browser.fill("use-token", &admin).await;
    browser.click("token-go").await;
    browser
        .wait_for_text("admin-reports", &format!("spam: status {sid}"))
        .await;
    browser.click("admin-reports .resolve-remove_status").await;
    browser
        .wait_for_text("admin-msg", "resolved: remove_status")
        .await;
    let (status, _) = app.get(&format!("/api/v1/statuses/{sid}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    browser.fill("admin-user", &alice_id).await;
    browser.click("admin-suspend").await;
    browser.wait_for_text("admin-msg", "suspended").await;
    let (_, user) = app
        .get(&format!("/api/v1/admin/users/{alice_id}"), Some(&admin))
        .await;
    assert_eq!(user["suspended"], true);
    let (_, audit) = app.get("/api/v1/admin/audit", Some(&admin)).await;
    assert_eq!(audit["actions"].as_array().unwrap().len(), 2, "{audit}");
    browser.stop().await;
}

/// A page on another local origin: every request gets the same empty page.
fn other_origin() -> String {
    serving("<!doctype html><title>elsewhere</title><p>another origin</p>".to_string())
}

/// A web server on another local origin answering every request with
/// `body` (an HTML page).
fn serving(body: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = std::io::Write::write_all(
                &mut stream,
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn pages_carry_their_policy_and_other_origins_may_use_the_api_and_streams() {
    let app = TestApp::start().await;
    let (_, token) = app.user("cors_user").await;
    let http = reqwest::Client::new();
    // The page and /docs: their own scripts and styles only; nosniff.
    for path in ["/", "/docs"] {
        let r = http.get(app.url(path)).send().await.unwrap();
        let csp = r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        let html = r.text().await.unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("<style>"),
            "no inline code"
        );
    }
    let r = http.get(app.url("/assets/page.js")).send().await.unwrap();
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    // A preflight from another origin, and the answers it then reads.
    let r = http
        .request(reqwest::Method::OPTIONS, app.url("/api/v1/statuses"))
        .header("origin", "http://elsewhere.example")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    let allowed = r.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(
        allowed.contains("authorization") && allowed.contains("last-event-id"),
        "{allowed}"
    );
    let r = http
        .get(app.url("/api/v1/me"))
        .header("origin", "http://elsewhere.example")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    let exposed = r.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(exposed.contains("retry-after") && exposed.contains("x-request-id"));
    let mut s = app
        .stream(
            "/api/v1/stream/filter?track=corsword",
            Some(&token),
            &[("origin", "http://elsewhere.example")],
        )
        .await;
    assert_eq!(s.status, StatusCode::OK);
    drop(s.next_within(Duration::from_millis(10)).await);

    // In Chromium, from a page on a second local origin: fetch with a
    // bearer token, and an EventSource with access_token.
    let browser = common::browser::Browser::needed().await;
    browser.goto(&other_origin()).await;
    let script = r#"
        const [api, token, done] = arguments;
        const seen = {};
        const timer = setTimeout(() => done({error: "timed out", seen}), 10000);
        // Done once both the fetch and the event are in (either may be first).
        const finish = () => {
            if (("login" in seen || "fetch_error" in seen) && "message" in seen) {
                clearTimeout(timer);
                done(seen);
            }
        };
        fetch(api + "/api/v1/me", {headers: {"authorization": "Bearer " + token}})
            .then((r) => r.json()).then((me) => { seen.login = me.login; finish(); })
            .catch((e) => { seen.fetch_error = String(e); finish(); });
        const es = new EventSource(api + "/api/v1/stream/filter?track=corsword&access_token=" + encodeURIComponent(token));
        es.onopen = () => {
            fetch(api + "/api/v1/statuses", {method: "POST",
                headers: {"content-type": "application/json", "authorization": "Bearer " + token},
                body: JSON.stringify({message: "a corsword from elsewhere"})});
        };
        es.addEventListener("status", (e) => {
            seen.message = JSON.parse(e.data).status.message;
            seen.origin = location.origin;
            es.close();
            finish();
        });
        es.onerror = () => { seen.es_error = true; };
    "#;
    let got = browser
        .run_async(
            script,
            vec![json!(format!("http://{}", app.addr)), json!(token)],
        )
        .await;
    assert_eq!(got["message"], "a corsword from elsewhere", "{got}");
    assert_eq!(got["login"], "cors_user", "{got}");
    assert_ne!(got["origin"], json!(format!("http://{}", app.addr)));
    browser.stop().await;
}

#[tokio::test]
async fn cors_origins_limits_which_pages_may_read_answers() {
    let app = TestApp::start_with(|c| c.cors_origins = "http://good.example".into()).await;
    let http = reqwest::Client::new();
    let ask = |origin: &'static str| {
        http.get(app.url("/healthz"))
            .header("origin", origin)
            .send()
    };
    let r = ask("http://good.example").await.unwrap();
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "http://good.example"
    );
    assert!(r
        .headers()
        .get_all("vary")
        .iter()
        .any(|v| v.to_str().unwrap().contains("origin")));
    let r = ask("http://evil.example").await.unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
}

/// A virtual environment with httpx, for the Python example (python3-venv
/// installed with apt-get when missing).
fn python_with_httpx() -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/examples-venv");
    let python = venv.join("bin/python3");
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if python.exists() {
            return;
        }
        let script = format!(
            "(python3 -m venv --help >/dev/null 2>&1 && python3 -m ensurepip --version >/dev/null 2>&1 \
               || (apt-get update -qq && apt-get install -y -qq python3-venv python3-pip)) >/dev/null 2>&1; \
             python3 -m venv {venv} && {venv}/bin/pip install -q 'httpx>=0.27,<1'",
            venv = venv.display()
        );
        let ok = Command::new("sh")
            .arg("-c")
            .arg(script)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not install httpx with pip");
    });
    python
}

/// A directory with the `eventsource` package from npm and the Node
/// example beside it (Node.js and npm installed with apt-get when missing).
fn node_example() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/examples-node");
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::fs::create_dir_all(&dir).unwrap();
        if !dir.join("node_modules/eventsource").exists() {
            let script = format!(
                "(command -v node >/dev/null && command -v npm >/dev/null \
                   || (apt-get update -qq && apt-get install -y -qq nodejs npm)) >/dev/null 2>&1; \
                 cd {dir} && npm install --silent --no-audit --no-fund eventsource@3 >/dev/null",
                dir = dir.display()
            );
            let ok = Command::new("sh")
                .arg("-c")
                .arg(script)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "could not install eventsource with npm");
        }
    });
    // ES modules resolve packages from their own directory.
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/node_consumer.mjs"),
        dir.join("node_consumer.mjs"),
    )
    .unwrap();
    dir.join("node_consumer.mjs")
}

#[tokio::test]
async fn the_python_and_node_consumers_print_what_they_are_sent() {
    let app = TestApp::start().await;
    let (_, token) = app.user("snippets").await;
    let url = format!("http://{}", app.addr);
    let python = python_with_httpx();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/python_consumer.py");
    let node = node_example();
    for (name, mut cmd) in [
        ("python", tokio::process::Command::new(&python)),
        ("node", tokio::process::Command::new("node")),
    ] {
        let word = format!("{name}word");
        let target = if name == "python" { &script } else { &node };
        let child = cmd
            .arg(target)
            .args([
                "--url",
                &url,
                "--token",
                &token,
                "--track",
                &word,
                "--max-events",
                "2",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Posted until the consumer has connected and printed both.
        let poster = {
            let app_url = app.url("/api/v1/statuses");
            let token = token.clone();
            let word = word.clone();
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                for i in 0..100 {
                    let _ = http
                        .post(&app_url)
                        .bearer_auth(&token)
                        .json(&json!({"message": format!("{word} number {i}")}))
                        .send()
                        .await;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
        };
        let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("the {name} consumer exits after two statuses"))
            .unwrap();
        poster.abort();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{name}: {stdout}");
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with(&format!("@snippets: {word} number"))),
            "{name}: {stdout}"
        );
    }
    // Two partitioned consumers of the firehose, one in each language:
    // what one prints the other never does.
    let uid = app.get("/api/v1/me", Some(&token)).await.1["id"]
        .as_str()
        .unwrap()
        .to_string();
    let fh = app
        .operator_token(&uid, &["read", "write", "firehose"])
        .await;
    let spawn = |mut cmd: tokio::process::Command, target: &PathBuf, k: &str| {
        cmd.arg(target)
            .args(["--url", &url, "--token", &fh, "--stream", "firehose"])
            .args(["--partition", k, "--max-events", "4"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    let first = spawn(tokio::process::Command::new(&python), &script, "1/2");
    let second = spawn(tokio::process::Command::new("node"), &node, "2/2");
    let poster = {
        let (app_url, token) = (app.url("/api/v1/statuses"), token.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..200 {
                let _ = http
                    .post(&app_url)
                    .bearer_auth(&token)
                    .json(&json!({"message": format!("parted {i}")}))
                    .send()
                    .await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let mut printed = Vec::new();
    for child in [first, second] {
        let out = tokio::time::timeout(Duration::from_secs(40), child.wait_with_output())
            .await
            .expect("a partitioned consumer exits after four statuses")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{stdout}");
        let lines: std::collections::HashSet<String> = stdout.lines().map(str::to_string).collect();
        assert_eq!(lines.len(), 4, "{stdout}");
        printed.push(lines);
    }
    poster.abort();
    assert!(
        printed[0].is_disjoint(&printed[1]),
        "both partitions printed {:?}",
        printed[0].intersection(&printed[1]).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn the_eventsource_example_page_streams_and_resumes_in_chromium() {
    let browser = common::browser::Browser::needed().await;
    let app = TestApp::start().await;
    let (_, token) = app.user("es_page").await;
    let page = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/eventsource.html");
    let site = serving(std::fs::read_to_string(page).unwrap());
    let url = format!(
        "{site}/?url=http://{}&token={token}&track=pageword",
        app.addr
    );
    browser.goto(&url).await;
    browser.wait_for_text("state", "live").await;
    app.say(&token, "a pageword arrives").await;
    browser.wait_for_text("events", "a pageword arrives").await;
    // Left, then opened again: it resumes after the last event it showed.
    browser.goto(&format!("{site}/elsewhere")).await;
    app.say(&token, "another pageword").await;
    browser.goto(&url).await;
    browser.wait_for_text("events", "another pageword").await;
    browser.stop().await;
}

/// A token of bob's, who signed up through the page.
async fn bob_token(app: &TestApp) -> String {
    app.login("bob").await
}

#[tokio::test]
async fn demo_seeds_a_world_with_celebrities_and_statuses() {
    let app = TestApp::start().await;
    let out = tokio::process::Command::new(firehose_bin())
        .args(["demo", "--users", "60", "--celebrities", "2", "--rate", "0"])
        .args(app.redis.args())
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Demo world ready: 60 users"));
    let looker = app.any_token().await;
    let (status, celeb) = app
        .get("/api/v1/users/lookup?login=ada_0", Some(&looker))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        celeb["followers"].as_u64().unwrap() >= 40,
        "a celebrity has most users as followers: {celeb}"
    );
    let (status, body) = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"identifier": "ada_0", "password": firehose::demo::DEMO_PASSWORD}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let home = app
        .timeline_ids("/api/v1/timelines/home", body["token"].as_str())
        .await;
    assert!(
        !home.is_empty(),
        "demo users have statuses on their home timeline"
    );
    // A second run finds the world in place and does not fail.
    let again = tokio::process::Command::new(firehose_bin())
        .args(["demo", "--users", "60", "--celebrities", "2", "--rate", "0"])
        .args(app.redis.args())
        .output()
        .await
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

fn sigterm(child: &tokio::process::Child) {
    let pid = child.id().expect("running").to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
}

#[tokio::test]
async fn a_separate_worker_process_drains_the_fanout_queue_and_stops_on_sigterm() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (idc, celeb) = app.user("workstar").await;
    let fans = common::bulk_users(&app, "wf", 1500).await;
    common::bulk_follow(&app, &fans, idc.parse().unwrap()).await;
    let sid = app.say(&celeb, "for the worker").await;
    assert_eq!(
        common::homes_with(&app, &fans, &sid),
        1000,
        "only the inline part without workers"
    );
    let mut worker = tokio::process::Command::new(firehose_bin())
        .args(["worker", "--log-format", "json"])
        .args(app.redis.args())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    app.eventually("the worker process reached everyone", || async {
        common::homes_with(&app, &fans, &sid) == 1500
    })
    .await;
    sigterm(&worker);
    let status = tokio::time::timeout(Duration::from_secs(10), worker.wait())
        .await
        .expect("exits on SIGTERM")
        .unwrap();
    assert!(status.success());
    let mut err = String::new();
    use tokio::io::AsyncReadExt;
    worker
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .await
        .unwrap();
    let first = err.lines().next().expect("it logged");
    let line: Value = serde_json::from_str(first).expect("JSON logs");
    assert!(
        line["level"].is_string() && line["message"].is_string(),
        "{first}"
    );
}

#[tokio::test]
async fn the_serve_binary_logs_no_tokens_and_shuts_down_streams_on_sigterm() {
    use tokio::io::AsyncReadExt;
    let redis = common::RedisServer::start();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new(firehose_bin())
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--log-format",
            "json",
        ])
        .args(redis.args())
        .env("RUST_LOG", "debug")
        .env(
            "FIREHOSE_JWT_SECRET",
            "process-test-secret-process-test-secret",
        )
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while http.get(format!("{base}/readyz")).send().await.is_err() {
        assert!(std::time::Instant::now() < deadline, "server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let body = json!({"login": "proc", "name": "p", "email": "p@x.y", "password": "password123"});
    assert_eq!(
        http.post(format!("{base}/api/v1/users"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::CREATED
    );
    let login: Value = http
        .post(format!("{base}/api/v1/sessions"))
        .json(&json!({"identifier": "proc", "password": "password123"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = login["token"].as_str().unwrap().to_string();
    // A stream opened with the token in the query, as browsers do.
    let mut stream = http
        .get(format!("{base}/api/v1/stream/user?access_token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let _ = http
        .get(format!("{base}/api/v1/me?access_token={token}"))
        .send()
        .await
        .unwrap();
    // A post takes a status-id number (a lease in Redis) ...
    let posted = http
        .post(format!("{base}/api/v1/statuses"))
        .bearer_auth(&token)
        .json(&json!({"message": "before the end"}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), StatusCode::CREATED);
    let leases = || {
        let mut conn = redis.conn();
        ::redis::cmd("KEYS")
            .arg("fh:{ids}:instance:*")
            .query::<Vec<String>>(&mut conn)
            .unwrap()
    };
    assert_eq!(leases().len(), 1);
    sigterm(&server);
    let mut seen = String::new();
    let got_disconnect = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(chunk)) = stream.chunk().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("event: disconnect") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(got_disconnect && seen.contains("\"shutdown\""), "{seen}");
    let status = tokio::time::timeout(Duration::from_secs(15), server.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(status.success());
    // ... which a clean shutdown gives back.
    assert_eq!(
        leases(),
        Vec::<String>::new(),
        "the id lease outlived the process"
    );
    let mut logs = String::new();
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut logs)
        .await
        .unwrap();
    assert!(logs.contains("stream opened"), "the stream was logged");
    assert!(!logs.contains(&token), "a token appeared in the logs");
    assert!(
        !logs.contains("access_token"),
        "a query with the token appeared in the logs"
    );
    for line in logs.lines() {
        assert!(
            serde_json::from_str::<Value>(line).is_ok(),
            "not JSON: {line}"
        );
    }
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
async fn demo_stops_within_a_second_on_ctrl_c_or_sigterm_in_every_state() {
    let mut redis = common::RedisServer::start();
    let spawn = |users: &str| {
        tokio::process::Command::new(firehose_bin())
            .args([
                "demo",
                "--users",
                users,
                "--celebrities",
                "2",
                "--rate",
                "20",
            ])
            .args(redis.args())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let stops_within_a_second = |mut child: tokio::process::Child, signal: &'static str| async move {
        let pid = child.id().expect("running").to_string();
        let _ = Command::new("kill").args([signal, &pid]).status();
        let status = tokio::time::timeout(Duration::from_secs(1), child.wait())
            .await
            .unwrap_or_else(|_| panic!("demo still running 1 s after {signal}"))
            .unwrap();
        assert!(status.success(), "{signal}: {status}");
    };
    // While it creates users.
    let child = spawn("20000");
    tokio::time::sleep(Duration::from_millis(700)).await;
    stops_within_a_second(child, "-INT").await;
    // While it posts, with its Redis gone (the server that ran it stopped).
    let mut child = spawn("40");
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        while !seen.contains("Demo world ready") {
            let n = out.read(&mut buf).await.unwrap();
            assert!(n > 0, "demo ended early: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await
    .expect("the demo world is ready");
    redis.stop();
    tokio::time::sleep(Duration::from_millis(500)).await;
    stops_within_a_second(child, "-TERM").await;
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
