//! `firehose tail` as its users run it: across a server restart, split in
//! partitions, reading a list, and outliving its tokens.

use super::common::{ServerProcess, TestApp};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc::UnboundedReceiver;

/// A running `firehose tail`: its process, the JSON lines it prints and
/// the lines it writes to stderr.
struct Tail {
    _child: tokio::process::Child,
    out: UnboundedReceiver<Value>,
    err: UnboundedReceiver<String>,
}

impl Tail {
    fn spawn(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
            .arg("tail")
            .args(args)
            .args(["--format", "json"])
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (tx, out) = tokio::sync::mpsc::unbounded_channel();
        let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                if let Ok(v) = serde_json::from_str(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        let (tx, err) = tokio::sync::mpsc::unbounded_channel();
        let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                let _ = tx.send(line);
            }
        });
        Self {
            _child: child,
            out,
            err,
        }
    }

    /// The ids of the statuses printed since the last call.
    fn statuses(&mut self) -> Vec<String> {
        let mut got = Vec::new();
        while let Ok(v) = self.out.try_recv() {
            if v["type"] == "status" {
                got.push(v["status"]["id"].as_str().unwrap().to_string());
            }
        }
        got
    }

    /// The stderr lines written since the last call.
    fn said(&mut self) -> Vec<String> {
        let mut got = Vec::new();
        while let Ok(l) = self.err.try_recv() {
            got.push(l);
        }
        got
    }
}

#[tokio::test]
async fn tail_outlives_its_tokens_by_logging_in_again_and_reads_zstd() {
    // Tokens of 6 s: the stream warns at once, and tail renews half way to
    // each one's end, so 20 s of posting spans several renewals.
    let app = TestApp::start_with(|c| c.token_ttl = 6).await;
    let (_, token) = app.user("renewer").await;
    let url = format!("http://{}", app.addr);
    let mut tail = Tail::spawn(
        &[
            "user",
            "--login",
            "renewer",
            "--compress",
            "zstd",
            "--url",
            &url,
        ],
        &[("FIREHOSE_PASSWORD", "password123")],
    );
    // Connected once a status posted now comes out.
    let mut ready = false;
    for i in 0..20 {
        app.say(&token, &format!("warm-up {i}")).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        if !tail.statuses().is_empty() {
            ready = true;
            break;
        }
    }
    assert!(ready, "tail never printed a status: {:?}", tail.said());
    tokio::time::sleep(Duration::from_millis(300)).await;
    tail.statuses();
    let mut token = token;
    let mut posted = Vec::new();
    let mut seen = Vec::new();
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < until {
        // The writer's own token lives 6 s too.
        if posted.len() % 10 == 0 {
            token = app.login("renewer").await;
        }
        posted.push(app.say(&token, &format!("renewing {}", posted.len())).await);
        tokio::time::sleep(Duration::from_millis(150)).await;
        seen.extend(tail.statuses());
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while seen.len() < posted.len() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen.extend(tail.statuses());
    }
    let said = tail.said();
    let renewals = said.iter().filter(|l| l.contains("token renewed")).count();
    let zstd = said
        .iter()
        .filter(|l| l.contains("connected (zstd)"))
        .count();
    println!(
        "tail with 6 s tokens: {} of {} statuses printed, {renewals} renewals, {zstd} zstd connections",
        seen.len(),
        posted.len()
    );
    assert_eq!(seen, posted, "every status once, in order: {said:?}");
    assert!(renewals >= 3, "{said:?}");
    assert!(zstd > renewals, "every connection zstd-coded: {said:?}");
    assert!(
        !said.iter().any(|l| l.contains("answered 401")),
        "no refusal on the way: {said:?}"
    );
}

#[tokio::test]
async fn tail_without_a_way_to_renew_ends_when_its_token_does() {
    let app = TestApp::start_with(|c| c.token_ttl = 3).await;
    let (_, token) = app.user("ending").await;
    let url = format!("http://{}", app.addr);
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
            .args(["tail", "user", "--url", &url])
            .env("FIREHOSE_TOKEN", &token)
            .output(),
    )
    .await
    .expect("tail ends once its token is refused")
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("401"), "{err}");
    // A token command that prints nothing is an error at start.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
        .args(["tail", "user", "--url", &url, "--token-command", "true"])
        .env_remove("FIREHOSE_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("printed no token"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn tail_resumes_across_a_server_restart_with_no_gap_and_no_duplicate() {
    use tokio::io::AsyncBufReadExt;
    let app = TestApp::start().await;
    let (_, token) = app.user("tailed").await;
    let first = ServerProcess::serve(&app.redis, &[]).await;
    let port = first.port;
    let mut tail = tokio::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
        .args(["tail", "user", "--format", "json"])
        .args(["--url", &format!("http://127.0.0.1:{port}")])
        .env("FIREHOSE_TOKEN", &token)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<serde_json::Value>();
    let stdout = tail.stdout.take().unwrap();
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    // Connected once a status posted now comes out.
    let mut ready = false;
    for i in 0..40 {
        app.say(&token, &format!("warm-up {i}")).await;
        if tokio::time::timeout(Duration::from_millis(250), lines.recv())
            .await
            .is_ok()
        {
            ready = true;
            break;
        }
    }
    assert!(ready, "tail never printed anything");
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(300), lines.recv()).await {}
    let mut posted = Vec::new();
    for i in 0..10 {
        posted.push(app.say(&token, &format!("before {i}")).await);
    }
    first.kill9().await;
    for i in 0..10 {
        posted.push(app.say(&token, &format!("while down {i}")).await);
    }
    let second = ServerProcess::serve_on(&app.redis, port, &[]).await;
    for i in 0..10 {
        posted.push(app.say(&token, &format!("after {i}")).await);
    }
    let mut got = Vec::new();
    while got.len() < posted.len() {
        let v = tokio::time::timeout(Duration::from_secs(20), lines.recv())
            .await
            .unwrap_or_else(|_| panic!("tail printed {} of {}", got.len(), posted.len()))
            .unwrap();
        if v["type"] == "status" {
            got.push(v["status"]["id"].as_str().unwrap().to_string());
        }
    }
    // Nothing more: no duplicate comes after.
    while let Ok(Some(v)) = tokio::time::timeout(Duration::from_millis(1000), lines.recv()).await {
        if v["type"] == "status" {
            got.push(v["status"]["id"].as_str().unwrap().to_string());
        }
    }
    println!(
        "tail across a restart: {} statuses posted, {} printed",
        posted.len(),
        got.len()
    );
    assert_eq!(got, posted, "no gap, no duplicate, in order");
    // Ctrl-C ends it with 0.
    let pid = tail.id().unwrap().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status();
    let status = tokio::time::timeout(Duration::from_secs(2), tail.wait())
        .await
        .expect("tail ends on Ctrl-C")
        .unwrap();
    assert!(status.success(), "{status}");
    second.kill9().await;
}

#[tokio::test]
async fn tail_partitions_split_the_firehose_and_tail_reads_a_list() {
    use tokio::io::AsyncBufReadExt;
    let app = TestApp::start().await;
    let (uid, token) = app.user("splitter").await;
    let (member, member_token) = app.user("listed").await;
    let fh = app.operator_token(&uid, &["read", "firehose"]).await;
    let (_, list) = app
        .post("/api/v1/lists", Some(&token), json!({"title": "tailed"}))
        .await;
    let lid = list["id"].as_str().unwrap().to_string();
    app.post(
        &format!("/api/v1/lists/{lid}/members"),
        Some(&token),
        json!({ "ids": [member] }),
    )
    .await;
    let url = format!("http://{}", app.addr);
    let spawn = |args: Vec<String>, token: String| {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
            .arg("tail")
            .args(&args)
            .args(["--format", "json", "--url", &url])
            .env("FIREHOSE_TOKEN", token)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<serde_json::Value>();
        let stdout = child.stdout.take().unwrap();
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if let Ok(v) = serde_json::from_str(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        (child, rx)
    };
    // From now on, whenever each tail connects: `--since` replays what it
    // missed while starting.
    let since = format!(
        "{:.3}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    );
    let args = |a: &[&str]| {
        a.iter()
            .map(|s| s.to_string())
            .chain(["--since".to_string(), since.clone()])
            .collect::<Vec<_>>()
    };
    let mut tails = [
        spawn(args(&["firehose", "--partition", "1/2"]), fh.clone()),
        spawn(args(&["firehose", "--partition", "2/2"]), fh.clone()),
        spawn(args(&["list", "--id", &lid]), token.clone()),
    ];
    // A bad partition is refused before anything is sent.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
        .args(["tail", "firehose", "--partition", "3/2", "--url", &url])
        .env("FIREHOSE_TOKEN", &fh)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let mut posted = Vec::new();
    for i in 0..30 {
        posted.push(app.say(&member_token, &format!("split {i}")).await);
    }
    let statuses = |rx: &mut tokio::sync::mpsc::UnboundedReceiver<serde_json::Value>| {
        let mut got = Vec::new();
        while let Ok(v) = rx.try_recv() {
            if v["type"] == "status" {
                got.push(v["status"]["id"].as_str().unwrap().to_string());
            }
        }
        got
    };
    let mut seen: Vec<Vec<String>> = vec![Vec::new(); 3];
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while seen[0].len() + seen[1].len() < posted.len() || seen[2].len() < posted.len() {
        assert!(
            std::time::Instant::now() < deadline,
            "the tails printed {} + {} and {} of {}",
            seen[0].len(),
            seen[1].len(),
            seen[2].len(),
            posted.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        for (i, (_, rx)) in tails.iter_mut().enumerate() {
            seen[i].extend(statuses(rx));
        }
    }
    let mut both: Vec<String> = seen[0].iter().chain(&seen[1]).cloned().collect();
    both.sort();
    let mut all = posted.clone();
    all.sort();
    println!(
        "tail --partition: {} and {} of {} statuses",
        seen[0].len(),
        seen[1].len(),
        posted.len()
    );
    assert_eq!(both, all, "every status once across the two partitions");
    assert!(!seen[0].is_empty() && !seen[1].is_empty());
    assert_eq!(seen[2], posted, "the list's tail, in order");
}
