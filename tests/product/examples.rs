//! Every example a user would copy, run against a live server: the curl
//! tour, the WebSocket client, the trending consumer, the load generator,
//! the Python and Node consumers and the EventSource page in Chromium.

use super::*;

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
