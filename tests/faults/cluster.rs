//! Several processes as one server: on a cluster, behind nginx, with a
//! password, sharing the stream limit.

use super::*;

#[tokio::test]
async fn two_servers_and_a_worker_on_a_cluster_behave_as_one() {
    // Server A in this process, server B and a worker as child processes,
    // all on one 3-master Redis Cluster; fan-out beyond the first follower
    // is left to the worker process.
    let app = TestApp::start_on(common::RedisServer::start_cluster(), |c| {
        c.workers = 0;
        c.fanout_inline = 1;
    })
    .await;
    let env = [("FIREHOSE_WORKERS", "0"), ("FIREHOSE_FANOUT_INLINE", "1")];
    let b = ServerProcess::serve(&app.redis, &env).await;
    let mut worker = tokio::process::Command::new(env!("CARGO_BIN_EXE_firehose"))
        .arg("worker")
        .args(app.redis.args())
        .env("FIREHOSE_JWT_SECRET", app.cfg.jwt_secret().unwrap())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (author_id, author) = app.user("author").await;
    let mut fans = Vec::new();
    for i in 0..3 {
        let (id, token) = app.user(&format!("fan{i}")).await;
        app.follow(&token, &author_id).await;
        fans.push(id.parse::<u64>().unwrap());
    }
    let watcher = app.operator_token(&author_id, &["read", "firehose"]).await;
    let mut on_a = app
        .stream("/api/v1/stream/firehose", Some(&watcher), &[])
        .await;
    let mut on_b = app
        .stream_url(&b.url("/api/v1/stream/firehose"), Some(&watcher), &[])
        .await;
    let mut posted = Vec::new();
    for i in 0..20 {
        let url = if i % 2 == 0 {
            app.url("/api/v1/statuses")
        } else {
            b.url("/api/v1/statuses")
        };
        let r = app
            .http
            .post(url)
            .bearer_auth(&author)
            .json(&serde_json::json!({"message": format!("hello {i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::CREATED);
        let s: serde_json::Value = r.json().await.unwrap();
        posted.push(s["id"].as_str().unwrap().to_string());
    }
    let statuses = |m: &common::Msg| m.data["status"]["id"].as_str().map(String::from);
    let (mut seen_a, mut seen_b, mut last_b) = (Vec::new(), Vec::new(), String::new());
    while seen_a.len() < posted.len() {
        let m = on_a.next_event("events on A").await;
        seen_a.extend(statuses(&m));
    }
    while seen_b.len() < posted.len() {
        let m = on_b.next_event("events on B").await;
        seen_b.extend(statuses(&m));
        last_b = m.id.clone().unwrap();
    }
    assert_eq!(seen_a, posted, "A's clients get every status, in order");
    assert_eq!(seen_b, posted, "B's clients get the same");
    // B dies; its client resumes on A from the last id B gave it.
    drop(on_b);
    b.kill9().await;
    let mut later = Vec::new();
    for i in 0..10 {
        later.push(app.say(&author, &format!("after {i}")).await);
    }
    let mut resumed = app
        .stream(
            "/api/v1/stream/firehose",
            Some(&watcher),
            &[("Last-Event-ID", &last_b)],
        )
        .await;
    let mut got = Vec::new();
    while got.len() < later.len() {
        let m = resumed.next_event("resumed on A").await;
        assert_ne!(m.event, "resume_gap", "nothing was trimmed");
        got.extend(statuses(&m));
    }
    assert_eq!(got, later, "nothing missing, nothing repeated");
    let all: Vec<String> = posted.iter().chain(&later).cloned().collect();
    app.eventually("the worker process filled every home", || async {
        all.iter()
            .all(|sid| common::homes_with(&app, &fans, sid) == fans.len())
    })
    .await;
    println!(
        "two servers + a worker on a 3-master cluster: {} statuses seen identically on both, \
         {} resumed on the other server after kill -9, 0 missing",
        posted.len(),
        later.len()
    );
    let _ = worker.start_kill();
}

#[tokio::test]
async fn the_stream_limit_counts_every_server_and_a_killed_servers_slots_lapse() {
    // Two slots per user, leased for 4 s and renewed by each server (every
    // 1.3 s, so a renewal can come 2.6 s late on a loaded machine).
    let app = TestApp::start_with(|c| {
        c.max_streams_per_user = 2;
        c.stream_lease_secs = 4;
    })
    .await;
    let env = [
        ("FIREHOSE_MAX_STREAMS_PER_USER", "2"),
        ("FIREHOSE_STREAM_LEASE", "4"),
    ];
    let b = ServerProcess::serve(&app.redis, &env).await;
    let (_, token) = app.user("roamer").await;
    let path = "/api/v1/stream/user";
    let mut on_b = Vec::new();
    for _ in 0..2 {
        let s = app.stream_url(&b.url(path), Some(&token), &[]).await;
        assert_eq!(s.status, reqwest::StatusCode::OK);
        on_b.push(s);
    }
    let refused = app.stream(path, Some(&token), &[]).await;
    assert_eq!(refused.status, reqwest::StatusCode::TOO_MANY_REQUESTS);
    // Past two lease lengths, B's renewals still hold both slots.
    tokio::time::sleep(Duration::from_secs(9)).await;
    let refused = app.stream(path, Some(&token), &[]).await;
    assert_eq!(refused.status, reqwest::StatusCode::TOO_MANY_REQUESTS);
    // B dies without a word: its slots lapse within a lease.
    b.kill9().await;
    let killed = std::time::Instant::now();
    let mut on_a = Vec::new();
    while on_a.len() < 2 {
        assert!(
            killed.elapsed() < Duration::from_secs(30),
            "the dead server's slots never lapsed"
        );
        let s = app.stream(path, Some(&token), &[]).await;
        if s.status == reqwest::StatusCode::OK {
            on_a.push(s);
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let lapsed = killed.elapsed();
    println!("stream slots held by a SIGKILLed server free again after {lapsed:?} (lease 4 s)");
    assert!(
        app.stream(path, Some(&token), &[]).await.status == reqwest::StatusCode::TOO_MANY_REQUESTS
    );
    // Closing a stream gives its slot back at once, not after the lease.
    on_a.pop();
    app.eventually("a closed stream's slot is free", || async {
        app.stream(path, Some(&token), &[]).await.status == reqwest::StatusCode::OK
    })
    .await;
}

/// Posts through `base` (a server or the proxy) and returns the status id.
async fn post_via(app: &TestApp, base: &str, token: &str, message: &str) -> String {
    let r = app
        .http
        .post(format!("{base}/api/v1/statuses"))
        .bearer_auth(token)
        .json(&json!({ "message": message }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::CREATED);
    let s: serde_json::Value = r.json().await.unwrap();
    s["id"].as_str().unwrap().to_string()
}

/// Reads `stream` until the status `id` arrives; returns the status ids
/// read on the way (ending with `id`) and the last event id.
async fn read_until(stream: &mut common::StreamClient, id: &str) -> (Vec<String>, String) {
    let (mut seen, mut last) = (Vec::new(), String::new());
    loop {
        let m = stream.next_event("a status through the proxy").await;
        last = m.id.clone().unwrap_or(last);
        if let Some(got) = m.data["status"]["id"].as_str() {
            seen.push(got.to_string());
            if got == id {
                return (seen, last);
            }
        }
    }
}

/// nginx's master process (the script execs it): stopped with SIGTERM on
/// drop, so its workers go too (SIGKILL would orphan them).
struct Nginx(std::process::Child);

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn nginx_in_front_of_two_servers_carries_every_transport_and_a_failover_resumes() {
    // deploy/nginx/run-local.sh with deploy/nginx/firehose.conf, in front of
    // server A (this process) and server B (a child process).
    let app = TestApp::start_with(|c| c.trusted_proxies = vec!["127.0.0.1".parse().unwrap()]).await;
    let b = ServerProcess::serve(&app.redis, &[("FIREHOSE_TRUSTED_PROXIES", "127.0.0.1")]).await;
    let port = common::free_port();
    let _nginx = Nginx(
        std::process::Command::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/deploy/nginx/run-local.sh"
        ))
        .arg(port.to_string())
        .arg(app.addr.to_string())
        .arg(format!("127.0.0.1:{}", b.port))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("deploy/nginx/run-local.sh runs"),
    );
    let base = format!("http://127.0.0.1:{port}");
    app.eventually("nginx answers", || async {
        let r = app.http.get(format!("{base}/healthz")).send().await;
        r.is_ok_and(|r| r.status() == reqwest::StatusCode::OK)
    })
    .await;
    let (author_id, author) = app.user("author").await;
    let watcher = app.operator_token(&author_id, &["read", "firehose"]).await;
    let firehose = format!("{base}/api/v1/stream/firehose");
    // Round robin puts one of two consecutive streams on each server.
    let mut sse = Vec::new();
    for _ in 0..2 {
        let s = app.stream_url(&firehose, Some(&watcher), &[]).await;
        assert_eq!(s.status, reqwest::StatusCode::OK);
        sse.push(s);
    }
    let mut ndjson = app
        .stream_url(
            &firehose,
            Some(&watcher),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    assert_eq!(ndjson.status, reqwest::StatusCode::OK);
    let mut ws = common::ws_connect_url(
        &format!("ws://127.0.0.1:{port}/api/v1/stream/firehose"),
        &watcher,
    )
    .await;
    // Every post through the proxy reaches every transport through it, one
    // at a time (nothing held back in a buffer).
    let mut last = vec![String::new(); 2];
    for i in 0..10 {
        let id = post_via(&app, &base, &author, &format!("through nginx {i}")).await;
        for (k, s) in sse.iter_mut().enumerate() {
            last[k] = read_until(s, &id).await.1;
        }
        read_until(&mut ndjson, &id).await;
        loop {
            let e = common::ws_next(&mut ws).await;
            if e["status"]["id"] == json!(id) {
                break;
            }
        }
    }
    // Server B dies: the streams it carried end, the others stay.
    b.kill9().await;
    let mut ended = Vec::new();
    for s in sse.iter_mut() {
        ended.push(s.ended_within(Duration::from_secs(3)).await);
    }
    assert_eq!(
        ended.iter().filter(|e| **e).count(),
        1,
        "one of the two streams was on B: {ended:?}"
    );
    // Posts go on through the proxy (to A), and the dropped client resumes
    // through it with Last-Event-ID.
    let mut posted = Vec::new();
    for i in 0..10 {
        posted.push(post_via(&app, &base, &author, &format!("after the kill {i}")).await);
    }
    for (k, gone) in ended.iter().enumerate() {
        if *gone {
            sse[k] = app
                .stream_url(&firehose, Some(&watcher), &[("last-event-id", &last[k])])
                .await;
            assert_eq!(sse[k].status, reqwest::StatusCode::OK);
        }
    }
    for s in sse.iter_mut() {
        let (seen, _) = read_until(s, posted.last().unwrap()).await;
        assert_eq!(seen, posted, "every status once, in order");
    }
    println!(
        "nginx over two servers: 10 statuses on SSE×2, NDJSON and WebSocket; \
         one server SIGKILLed, its client resumed through nginx with 10/10 missed statuses, 0 duplicates"
    );
}

#[tokio::test]
async fn a_cluster_that_requires_a_password_carries_events_to_streams() {
    // Every node requires a password; the server gets it in the seed URLs,
    // and its event subscription on the `{g}` owner must use it too.
    let redis = common::RedisServer::start_cluster();
    for mut node in redis.node_conns() {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("requirepass")
            .arg("cluster-pw")
            .query(&mut node)
            .unwrap();
    }
    let spec = redis
        .cluster_spec()
        .unwrap()
        .replace("redis://", "redis://:cluster-pw@");
    let app = TestApp::start_on(redis, |c| c.redis_cluster = Some(spec)).await;
    let (_, token) = app.user("guarded").await;
    let mut s = app.stream("/api/v1/stream/user", Some(&token), &[]).await;
    assert_eq!(s.status, reqwest::StatusCode::OK);
    let sid = app.say(&token, "behind a password").await;
    loop {
        let m = s.next_event("the status on the user stream").await;
        if m.data["status"]["id"] == json!(sid) {
            break;
        }
    }
}
