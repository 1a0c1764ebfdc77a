//! The binary's commands as an operator runs them: help, `check` and
//! `token`, a separate `worker`, `serve` on SIGTERM, and `demo`.

use super::*;

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
