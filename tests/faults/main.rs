//! Faults with real processes: clients that hang up mid-request, a server
//! killed with SIGKILL mid-burst, races between fan-out and unfollow or
//! delete, and follow times that tie. Each test counts what was lost and
//! asserts that it is nothing. The counts are printed (`-- --nocapture`).

#![allow(clippy::print_stdout)]

#[path = "../common/mod.rs"]
mod common;
mod edits;
mod history;
mod tail;

use common::{bulk_follow, bulk_users, homes_with, indexed_sessions, ServerProcess, TestApp};
use futures::StreamExt;
use redis::Commands;
use serde_json::json;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// Every status id in `uid`'s profile timeline.
fn profile_ids(app: &TestApp, uid: &str) -> Vec<String> {
    let mut conn = app.redis.conn();
    conn.zrange(
        format!("{}:user:{{{uid}}}:profile", app.cfg.key_prefix),
        0,
        -1,
    )
    .unwrap()
}

/// Waits until no committed write owes any work (outbox and fan-out queue empty).
async fn drained(app: &TestApp) {
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    app.eventually("the outbox and the fan-out queue are empty", || async {
        // Errors (Redis still loading after a restart) count as not yet.
        store.outbox_depth().await.is_ok_and(|d| d == 0)
            && store.fanout_depth().await.is_ok_and(|d| d == 0)
    })
    .await;
}

/// For every status of the author, how many followers lack it at home.
fn missing_from_homes(app: &TestApp, author: &str, fans: &[u64]) -> (usize, usize) {
    let ids = profile_ids(app, author);
    let missing = ids
        .iter()
        .map(|sid| fans.len() - homes_with(app, fans, sid))
        .sum();
    (ids.len(), missing)
}

#[tokio::test]
async fn statuses_whose_client_hangs_up_mid_post_still_reach_every_follower() {
    let app = TestApp::start_with(|c| {
        c.fanout_inline = 200;
        c.fanout_batch = 200;
    })
    .await;
    let (author, token) = app.user("hangup").await;
    let fans = bulk_users(&app, "hf", 1200).await;
    bulk_follow(&app, &fans, author.parse().unwrap()).await;
    for i in 0..20 {
        let body = json!({"message": format!("posted and gone {i}")}).to_string();
        let request = format!(
            "POST /api/v1/statuses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut socket = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        // Hang up without reading the answer, at once or a little later
        // (while the token is checked, the status stored, or fanned out).
        tokio::time::sleep(Duration::from_millis(i % 5 * 2)).await;
        drop(socket);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    drained(&app).await;
    let (stored, missing) = missing_from_homes(&app, &author, &fans);
    println!(
        "hang-ups: {stored} of 20 statuses stored, {missing} (status, follower) pairs missing"
    );
    assert!(stored > 0, "no post got far enough to be stored");
    assert_eq!(missing, 0);
}

#[tokio::test]
async fn a_server_killed_mid_burst_leaves_its_fanout_to_the_next_process() {
    // The in-process app only sets up and reads: no workers of its own.
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (author, token) = app.user("killed").await;
    let fans = bulk_users(&app, "kf", 600).await;
    bulk_follow(&app, &fans, author.parse().unwrap()).await;
    let env = [("FIREHOSE_OUTBOX_LEASE", "1")];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let url = first.url("/api/v1/statuses");
    let http = reqwest::Client::new();
    let posts = futures::stream::iter(0..200)
        .map(|i| {
            let req = http
                .post(&url)
                .bearer_auth(&token)
                .json(&json!({"message": format!("burst {i}")}));
            async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
        })
        .buffer_unordered(16);
    // Kill the process after a few posts have been answered.
    let answered: Vec<u16> = posts.take(20).collect().await;
    first.kill9().await;
    assert!(answered.iter().all(|s| *s == 201), "{answered:?}");
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let owed = store.outbox_depth().await.unwrap();
    let (stored, missing_before) = missing_from_homes(&app, &author, &fans);
    // A new process (with workers) finishes what the dead one owed.
    let second = ServerProcess::serve(&app.redis, &env).await;
    drained(&app).await;
    let (stored_after, missing) = missing_from_homes(&app, &author, &fans);
    println!(
        "kill -9: {stored} statuses stored, {owed} writes owed in the outbox, \
         {missing_before} (status, follower) pairs missing right after the kill, {missing} after restart"
    );
    assert!(stored >= 20);
    // A post recorded in the outbox but not yet stored when the process
    // died is finished by the next one (its chain runs from the record):
    // nothing stored goes, and at most the owed writes are added.
    assert!(
        stored <= stored_after && stored_after <= stored + owed as usize,
        "{stored} stored at the kill, {owed} owed, {stored_after} after"
    );
    assert_eq!(missing, 0);
    // Paged by max_id and by page, the profile and a follower's home show
    // every stored status once, newest first (outbox-completed ones too).
    let stored: std::collections::HashSet<String> =
        profile_ids(&app, &author).into_iter().collect();
    let fan_token = app.operator_token(&fans[0].to_string(), &["read"]).await;
    for (path, token) in [
        (format!("/api/v1/users/{author}/statuses"), &token),
        ("/api/v1/timelines/home".to_string(), &fan_token),
    ] {
        let by_max_id = read_by_max_id(&http, &second.url(&path), token).await;
        let by_page = read_by_page(&http, &second.url(&path), token).await;
        assert_eq!(by_max_id, by_page, "{path}");
        once_newest_first(&by_max_id, &path);
        assert_eq!(each_once(&by_max_id, &path), stored, "{path}");
    }
    second.kill9().await;
}

/// A timeline read to its end by `max_id` (each page from the last id
/// shown, which comes again first and is dropped), `count` at a time.
async fn read_by_max_id(http: &reqwest::Client, url: &str, token: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    loop {
        let page_url = match seen.last() {
            None => format!("{url}?count=20"),
            Some(last) => format!("{url}?count=20&max_id={last}"),
        };
        let page = timeline_page(http, &page_url, token).await;
        let fresh: Vec<String> = match seen.last() {
            Some(last) if page.first() == Some(last) => page[1..].to_vec(),
            _ => page,
        };
        if fresh.is_empty() {
            return seen;
        }
        seen.extend(fresh);
    }
}

/// A timeline read to its end by `page`.
async fn read_by_page(http: &reqwest::Client, url: &str, token: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for page in 1.. {
        let ids = timeline_page(http, &format!("{url}?count=20&page={page}"), token).await;
        if ids.is_empty() {
            break;
        }
        seen.extend(ids);
    }
    seen
}

async fn timeline_page(http: &reqwest::Client, url: &str, token: &str) -> Vec<String> {
    let r = http.get(url).bearer_auth(token).send().await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::OK, "{url}");
    let body: serde_json::Value = r.json().await.unwrap();
    body.as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

/// Panics unless `ids` holds each id once, newest (largest) first.
fn once_newest_first(ids: &[String], what: &str) {
    let nums: Vec<u64> = ids.iter().map(|i| i.parse().unwrap()).collect();
    let bad = nums.windows(2).filter(|w| w[0] <= w[1]).count();
    assert_eq!(bad, 0, "{what}: {bad} neighbours out of order or repeated");
}

/// Panics unless `ids` holds each id once.
fn each_once(ids: &[String], what: &str) -> std::collections::HashSet<String> {
    let set: std::collections::HashSet<String> = ids.iter().cloned().collect();
    assert_eq!(
        set.len(),
        ids.len(),
        "{what}: {} repeated",
        ids.len() - set.len()
    );
    set
}

/// Posts `n` statuses as `token` on `conns` connections at once, spread
/// over `bases` in turn; returns the ids answered.
async fn post_burst(
    bases: &[String],
    token: &str,
    n: usize,
    conns: usize,
    tag: &str,
) -> Vec<String> {
    let http = reqwest::Client::new();
    futures::stream::iter(0..n)
        .map(|i| {
            let req = http
                .post(format!("{}/api/v1/statuses", bases[i % bases.len()]))
                .bearer_auth(token)
                .json(&json!({"message": format!("#{tag} @pgreader {i}")}));
            async move {
                let r = req.send().await.unwrap();
                assert_eq!(r.status(), reqwest::StatusCode::CREATED);
                let s: serde_json::Value = r.json().await.unwrap();
                s["id"].as_str().unwrap().to_string()
            }
        })
        .buffer_unordered(conns)
        .collect()
        .await
}

/// Likes each status as `token`, `conns` at once; the likes in like order.
async fn like_burst(base: &str, token: &str, ids: &[String], conns: usize) {
    let http = reqwest::Client::new();
    futures::stream::iter(ids)
        .map(|id| {
            let req = http
                .post(format!("{base}/api/v1/statuses/{id}/like"))
                .bearer_auth(token);
            async move { assert_eq!(req.send().await.unwrap().status(), reqwest::StatusCode::OK) }
        })
        .buffer_unordered(conns)
        .collect::<Vec<()>>()
        .await;
}

#[tokio::test]
async fn timelines_paged_while_two_skewed_servers_write_skip_and_repeat_nothing() {
    // Two processes whose clocks differ by 80 ms, one author posting on 12
    // connections and three more into one home: the case where an id
    // counter and a clock used to disagree.
    let app = TestApp::start().await;
    let ahead = ServerProcess::serve(&app.redis, &[("FIREHOSE_CLOCK_OFFSET_MS", "40")]).await;
    let behind = ServerProcess::serve(&app.redis, &[("FIREHOSE_CLOCK_OFFSET_MS", "-40")]).await;
    let bases = vec![ahead.url(""), behind.url("")];
    let (reader, rtok) = app.user("pgreader").await;
    let (author, atok) = app.user("pgauthor").await;
    app.follow(&rtok, &author).await;
    let mut others = Vec::new();
    for i in 0..3 {
        let (id, token) = app.user(&format!("pgother{i}")).await;
        app.follow(&rtok, &id).await;
        others.push(token);
    }
    let burst = |n_author: usize, n_other: usize| {
        let mut all = vec![post_burst(&bases, &atok, n_author, 12, "pgtag")];
        for token in &others {
            all.push(post_burst(&bases, token, n_other, 4, "pgtag"));
        }
        futures::future::join_all(all)
    };
    let first: Vec<String> = burst(240, 40).await.concat();
    like_burst(&bases[0], &rtok, &first[..120], 8).await;
    drained(&app).await;
    let timelines = [
        format!("/api/v1/users/{author}/statuses"),
        "/api/v1/timelines/home".to_string(),
        "/api/v1/timelines/mentions".to_string(),
        "/api/v1/timelines/tag/pgtag".to_string(),
        format!("/api/v1/users/{reader}/likes"),
    ];
    // What each timeline held when the reading began.
    let http = reqwest::Client::new();
    let mut before = Vec::new();
    for path in &timelines {
        let ids = read_by_page(&http, &format!("{}{path}", bases[0]), &rtok).await;
        before.push(each_once(&ids, path));
    }
    // Read every timeline by max_id on both processes while the writers
    // (and a liker) go on.
    let writing = async {
        let more = burst(120, 20).await.concat();
        like_burst(&bases[1], &rtok, &more[..60], 8).await;
        more
    };
    let reading = async {
        let mut read = Vec::new();
        for (i, path) in timelines.iter().enumerate() {
            let base = &bases[i % 2];
            read.push(read_by_max_id(&http, &format!("{base}{path}"), &rtok).await);
        }
        read
    };
    let (second, read) = tokio::join!(writing, reading);
    for ((path, ids), existed) in timelines.iter().zip(&read).zip(&before) {
        let seen = each_once(ids, path);
        let skipped = existed.difference(&seen).count();
        println!(
            "{path}: {} read by max_id during writes, {skipped} of {} skipped",
            ids.len(),
            existed.len()
        );
        assert_eq!(skipped, 0, "{path}: entries that existed were skipped");
        if !path.ends_with("/likes") {
            once_newest_first(ids, path);
        }
    }
    drained(&app).await;
    // Once the writes are over: by max_id and by page, the same entries.
    let all: std::collections::HashSet<String> = first.iter().chain(&second).cloned().collect();
    for (i, path) in timelines.iter().enumerate() {
        let url = format!("{}{path}", bases[i % 2]);
        let by_max_id = read_by_max_id(&http, &url, &rtok).await;
        let by_page = read_by_page(&http, &url, &rtok).await;
        assert_eq!(by_max_id, by_page, "{path}: max_id and page read the same");
        let set = each_once(&by_max_id, path);
        assert!(set.is_subset(&all), "{path}");
        if path.ends_with("/likes") {
            assert_eq!(set.len(), 180, "{path}");
        } else {
            once_newest_first(&by_max_id, path);
        }
    }
    let profile = read_by_page(&http, &format!("{}{}", bases[0], timelines[0]), &rtok).await;
    assert_eq!(
        profile.len(),
        360,
        "every status the author was answered 201 for"
    );
    let home = read_by_page(&http, &format!("{}{}", bases[1], timelines[1]), &rtok).await;
    assert_eq!(
        each_once(&home, "home"),
        all,
        "every status reached the home"
    );
    ahead.kill9().await;
    behind.kill9().await;
}

#[tokio::test]
async fn followers_sharing_one_follow_time_are_each_reached_once() {
    let app = TestApp::start_with(|c| {
        c.fanout_inline = 100;
        c.fanout_batch = 100;
    })
    .await;
    let (author, token) = app.user("importer").await;
    let target: u64 = author.parse().unwrap();
    let fans = bulk_users(&app, "tie", 2500).await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    // One follow time for everyone, as an import would give.
    futures::stream::iter(fans.clone())
        .map(|f| {
            let store = store.clone();
            async move {
                store
                    .set_follow(f, target, true, 1_700_000_000.0)
                    .await
                    .unwrap()
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await;
    let sid = app.say(&token, "to everyone who imported me").await;
    drained(&app).await;
    assert_eq!(homes_with(&app, &fans, &sid), 2500);
}

#[tokio::test]
async fn unfollows_and_deletes_racing_a_fanout_leave_nothing_behind() {
    let app = TestApp::start_with(|c| {
        c.fanout_inline = 50;
        c.fanout_batch = 50;
        c.workers = 4;
    })
    .await;
    let (author, token) = app.user("racer").await;
    let target: u64 = author.parse().unwrap();
    let fans = bulk_users(&app, "rf", 1500).await;
    bulk_follow(&app, &fans, target).await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    // Everyone unfollows while the workers fan a status out.
    let kept = app.say(&token, "racing the unfollows").await;
    futures::stream::iter(fans.clone())
        .map(|f| {
            let store = store.clone();
            async move {
                store
                    .set_follow(f, target, false, firehose::model::now())
                    .await
                    .unwrap()
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    drained(&app).await;
    assert_eq!(
        homes_with(&app, &fans, &kept),
        0,
        "an unfollowed author's status stayed"
    );
    // Follow again, then delete a status while its fan-out runs.
    bulk_follow(&app, &fans, target).await;
    let gone = app.say(&token, "deleted at once").await;
    let (status, _) = app
        .delete(&format!("/api/v1/statuses/{gone}"), Some(&token))
        .await;
    assert_eq!(status, reqwest::StatusCode::NO_CONTENT);
    drained(&app).await;
    assert_eq!(
        homes_with(&app, &fans, &gone),
        0,
        "a deleted status stayed in a home"
    );
    // The first status is back in every home through the follow backfill.
    assert_eq!(homes_with(&app, &fans, &kept), 1500);
    tokio::time::sleep(Duration::from_millis(10)).await;
}

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

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn an_unread_socket_asking_for_the_whole_buffer_again_and_again_stays_bounded() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (uid, token) = app.user("hoarder").await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let padding = "x".repeat(500);
    // The statuses exist (a replay serves only what its reader may see now).
    {
        let mut conn = app.redis.conn();
        let mut pipe = redis::pipe();
        for i in 0..20_000u64 {
            let id = (i + 1).to_string();
            pipe.hset_multiple(
                format!("{}:status:{{s{id}}}", app.cfg.key_prefix),
                &[
                    ("id", id.as_str()),
                    ("uid", uid.as_str()),
                    ("login", "hoarder"),
                    ("message", "x"),
                    ("posted", "1"),
                    ("hashtags", "[]"),
                    ("mentions", "[]"),
                ],
            )
            .ignore();
        }
        let () = pipe.query(&mut conn).unwrap();
    }
    futures::stream::iter(0..20_000)
        .map(|i| {
            let store = store.clone();
            let body = json!({"type": "status", "at": i, "status": {"id": (i + 1).to_string(),
                "uid": uid, "login": "l", "message": padding, "posted": i, "hashtags": [], "mentions": []}})
            .to_string();
            async move { store.emit(&body).await.unwrap() }
        })
        .buffered(64)
        .collect::<Vec<_>>()
        .await;
    let server = ServerProcess::serve(&app.redis, &[]).await;
    let pid = server.child.id().unwrap();
    let before = rss_kib(pid);
    let mut ws = common::ws_connect_url(
        &format!("ws://127.0.0.1:{}/api/v1/stream", server.port),
        &token,
    )
    .await;
    for _ in 0..10 {
        let msg =
            json!({"type": "subscribe", "stream": "sample", "rate": 1, "last_event_id": "0-0"});
        ws.send(Message::Text(msg.to_string().into()))
            .await
            .unwrap();
    }
    // Let the server do what it will with the requests, unread.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let grown = rss_kib(pid).saturating_sub(before);
    println!("10 whole-buffer subscribes on an unread socket: server RSS grew {grown} KiB");
    assert!(grown < 64 * 1024, "grew {grown} KiB");
    // Read it all: after the tenth confirmation, the whole buffer once.
    let mut subscribed = 0;
    let mut ids = Vec::new();
    while subscribed < 10 || ids.len() < 20_000 {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("the replay keeps coming")
            .unwrap()
            .unwrap();
        let Message::Text(t) = msg else { continue };
        let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
        match v["type"].as_str() {
            Some("subscribed") => {
                // What an earlier subscription had already sent is its own.
                subscribed += 1;
                ids.clear();
            }
            Some("status") => ids.push(v["status"]["id"].as_str().unwrap().parse::<u64>().unwrap()),
            _ => {}
        }
    }
    assert_eq!(subscribed, 10);
    let distinct: std::collections::HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(
        (ids.len(), distinct.len()),
        (20_000, 20_000),
        "the last replay, once each"
    );
    server.kill9().await;
}

#[tokio::test]
async fn killing_the_hubs_pubsub_connection_loses_and_repeats_nothing() {
    let app = TestApp::start().await;
    let (_, token) = app.user("steady").await;
    let mut sse = app
        .stream("/api/v1/stream/sample?rate=1", Some(&token), &[])
        .await;
    let mut ndjson = app
        .stream(
            "/api/v1/stream/user",
            Some(&token),
            &[("accept", "application/x-ndjson")],
        )
        .await;
    let mut posted = Vec::new();
    for i in 0..60 {
        if i % 15 == 7 {
            app.redis.kill_pubsub();
        }
        posted.push(app.say(&token, &format!("through the cut {i}")).await);
    }
    for (name, stream) in [("sse", &mut sse), ("ndjson", &mut ndjson)] {
        let mut seen = Vec::new();
        while seen.len() < posted.len() {
            let m = stream.next_event("a status").await;
            if m.data["type"] == "status" {
                seen.push(m.data["status"]["id"].as_str().unwrap().to_string());
            }
        }
        stream.assert_quiet(Duration::from_millis(300)).await;
        println!(
            "pub/sub killed 4 times: {name} got {} of {} statuses",
            seen.len(),
            posted.len()
        );
        assert_eq!(seen, posted, "{name}: every status once, in order");
    }
}

#[tokio::test]
async fn a_paused_redis_gives_503s_then_everything_recovers() {
    let app = TestApp::start().await;
    let (_, token) = app.user("patient").await;
    let mut s = app
        .stream("/api/v1/stream/sample?rate=1", Some(&token), &[])
        .await;
    let mut conn = app.redis.conn();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(8000)
        .arg("ALL")
        .query(&mut conn)
        .unwrap();
    let started = std::time::Instant::now();
    let (status, body) = app.get("/api/v1/me", Some(&token)).await;
    let waited = started.elapsed();
    println!("paused Redis: /api/v1/me answered {status} after {waited:?}");
    assert_eq!(status, reqwest::StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable");
    // Once the pause ends, requests, readiness and streams come back alone.
    app.eventually("ready again", || async {
        app.http
            .get(app.url("/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == reqwest::StatusCode::OK)
    })
    .await;
    let id = app.say(&token, "after the pause").await;
    let e = s.next_event("the status after the pause").await;
    assert_eq!(e.data["status"]["id"], json!(id));
}

#[tokio::test]
async fn redis_killed_and_restarted_in_a_large_fanout_loses_no_follower() {
    let redis = common::RedisServer::start_durable();
    let mut app = TestApp::start_on(redis, |c| {
        c.fanout_inline = 50;
        c.fanout_batch = 50;
        c.reclaim_ms = 500;
    })
    .await;
    let (author, token) = app.user("survivor").await;
    let fans = bulk_users(&app, "rr", 5000).await;
    bulk_follow(&app, &fans, author.parse().unwrap()).await;
    // A home read before the crashes loads its script into this Redis; a
    // restarted Redis has none, and reads must load it again.
    let fan = fans[0].to_string();
    let reader = app.operator_token(&fan, &["read"]).await;
    assert!(app
        .timeline_ids("/api/v1/timelines/home", Some(&reader))
        .await
        .is_empty());
    let sid = app.say(&token, "through two Redis crashes").await;
    let mut reached = Vec::new();
    for wait in [0, 40] {
        tokio::time::sleep(Duration::from_millis(wait)).await;
        reached.push(homes_with(&app, &fans, &sid));
        // SIGKILL: only what was fsynced (everything acknowledged) is kept.
        app.redis.restart();
    }
    drained(&app).await;
    let reached_after = homes_with(&app, &fans, &sid);
    println!(
        "Redis killed twice mid fan-out: {reached:?} of 5000 homes reached before each kill, {reached_after} after"
    );
    assert!(
        reached[0] < 5000,
        "the first kill came after the fan-out: make it bigger"
    );
    assert_eq!(reached_after, 5000);
    let reader = app.operator_token(&fan, &["read"]).await;
    assert_eq!(
        app.timeline_ids("/api/v1/timelines/home", Some(&reader))
            .await,
        vec![sid],
        "a home read works on the restarted Redis"
    );
}

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

#[tokio::test]
async fn a_server_killed_mid_send_leaves_each_message_stored_once_and_delivered_once() {
    // The in-process app sets up, watches and reads: no workers of its own.
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (_, sender) = app.user("dm_killed").await;
    let (reader, reader_token) = app.user("dm_survivor").await;
    let (_, c) = app
        .post(
            "/api/v1/conversations",
            Some(&sender),
            json!({"participants": [reader], "text": "before the burst"}),
        )
        .await;
    let cid = c["id"].as_str().unwrap().to_string();
    let mut stream = app
        .stream("/api/v1/stream/user", Some(&reader_token), &[])
        .await;
    let env = [("FIREHOSE_OUTBOX_LEASE", "1")];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let http = reqwest::Client::new();
    let send = |base: String, i: usize| {
        let req = http
            .post(format!("{base}/api/v1/conversations/{cid}/messages"))
            .bearer_auth(&sender)
            .header("Idempotency-Key", format!("burst-{i}"))
            .json(&json!({"text": format!("burst {i}")}));
        async move {
            match req.send().await {
                Ok(r) if r.status() == 201 => r.json::<serde_json::Value>().await.ok(),
                _ => None,
            }
        }
    };
    let base = first.url("");
    let base = base.trim_end_matches('/').to_string();
    let answered: Vec<_> = futures::stream::iter(0..100)
        .map(|i| send(base.clone(), i))
        .buffer_unordered(16)
        .take(20)
        .collect()
        .await;
    first.kill9().await;
    assert!(answered.iter().all(Option::is_some));
    // The sender retries every message, with its key, on another process.
    let second = ServerProcess::serve(&app.redis, &env).await;
    let base = second.url("");
    let base = base.trim_end_matches('/').to_string();
    let mut by_key = Vec::new();
    for i in 0..100 {
        let m = send(base.clone(), i).await.expect("a retry answers 201");
        assert_eq!(m["text"], json!(format!("burst {i}")));
        by_key.push(m["id"].as_str().unwrap().to_string());
    }
    drained(&app).await;
    // Stored once each: the conversation holds exactly the 100 (and the first).
    let (_, all) = app
        .get(
            &format!("/api/v1/conversations/{cid}/messages?count=200"),
            Some(&sender),
        )
        .await;
    let stored: Vec<String> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    let unique: std::collections::HashSet<&String> = stored.iter().collect();
    assert_eq!((stored.len(), unique.len()), (101, 101));
    for id in &by_key {
        assert!(unique.contains(id), "answered {id} is not stored");
    }
    // Delivered once each.
    let mut delivered = std::collections::HashMap::<String, usize>::new();
    while delivered.len() < 100 {
        let e = stream.next_event("a direct message").await;
        if e.data["type"] == "direct_message" {
            *delivered
                .entry(e.data["message"]["id"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    stream.assert_quiet(Duration::from_millis(1000)).await;
    let repeated = delivered.values().filter(|n| **n > 1).count();
    println!(
        "kill -9 mid-send: {} answered before the kill, {} stored, {} delivered, {repeated} repeated",
        answered.len(),
        stored.len() - 1,
        delivered.len()
    );
    assert_eq!(repeated, 0);
    assert!(by_key.iter().all(|id| delivered.contains_key(id)));
    second.kill9().await;
}

#[tokio::test]
async fn an_account_deletion_killed_half_way_is_finished_by_the_next_process() {
    account_deletion_killed_during(false).await;
}

#[tokio::test]
async fn an_account_deletion_killed_during_its_unfollows_is_finished_by_the_next_process() {
    account_deletion_killed_during(true).await;
}

/// Kills the process deleting an account of 300 statuses and 300
/// followers once its undoing has begun (`unfollows`: once its statuses are
/// gone and its followers going), then checks the next process leaves
/// nothing of it.
async fn account_deletion_killed_during(unfollows: bool) {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (me, token) = app.user("half_deleted").await;
    let fans = bulk_users(&app, "hd", 300).await;
    bulk_follow(&app, &fans, me.parse().unwrap()).await;
    let http = reqwest::Client::new();
    futures::stream::iter(0..300)
        .map(|i| {
            let req = http
                .post(app.url("/api/v1/statuses"))
                .bearer_auth(&token)
                .json(&json!({"message": format!("soon gone {i} #halfway")}));
            async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
        })
        .buffer_unordered(16)
        .for_each(|_| async {})
        .await;
    let env = [("FIREHOSE_OUTBOX_LEASE", "1")];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let request = http
        .delete(first.url("/api/v1/me"))
        .bearer_auth(&token)
        .json(&json!({"password": "password123"}))
        .send();
    let asked = tokio::spawn(request);
    // Kill the process once the account is closed and its undoing has begun.
    let user_key = format!("{}:user:{{{me}}}", app.cfg.key_prefix);
    let followers_key = format!("{user_key}:followers");
    app.eventually("the account is closed", || async {
        let mut conn = app.redis.conn();
        let deleted: Option<String> = conn.hget(&user_key, "deleted").unwrap_or(None);
        // Its statuses go first (while the follows stand), then the follows.
        let followers: usize = conn.zcard(&followers_key).unwrap_or(0);
        let statuses: usize = conn.zcard(format!("{user_key}:profile")).unwrap_or(0);
        deleted.is_some()
            && if unfollows {
                statuses == 0 && followers < 300
            } else {
                followers < 300 || statuses < 300
            }
    })
    .await;
    first.kill9().await;
    let _ = asked.await;
    let (followers_left, statuses_left) = {
        let mut conn = app.redis.conn();
        let f: usize = conn.zcard(&followers_key).unwrap();
        let s: usize = conn.zcard(format!("{user_key}:profile")).unwrap();
        (f, s)
    };
    let second = ServerProcess::serve(&app.redis, &env).await;
    drained(&app).await;
    let mut conn = app.redis.conn();
    let exists: bool = conn.exists(&user_key).unwrap();
    println!(
        "account deletion killed half way: {followers_left} of 300 followers and {statuses_left} of 300 statuses left at the kill; user key after restart: {exists}"
    );
    assert!(
        followers_left > 0 || statuses_left > 0,
        "the kill came too late to test anything"
    );
    assert!(!exists);
    // Nothing of the account anywhere: homes, the tag, follow counts.
    let mut in_homes = 0;
    for f in &fans {
        let home: usize = conn
            .zcard(format!("{}:user:{{{f}}}:home", app.cfg.key_prefix))
            .unwrap();
        in_homes += home;
        let following: usize = conn
            .zcard(format!("{}:user:{{{f}}}:following", app.cfg.key_prefix))
            .unwrap();
        assert_eq!(following, 0);
    }
    let left: Vec<String> = conn
        .zrange(
            format!("{}:user:{{{}}}:home", app.cfg.key_prefix, fans[0]),
            0,
            -1,
        )
        .unwrap();
    let described: Vec<String> = left
        .iter()
        .map(|sid| {
            let h: std::collections::HashMap<String, String> = conn
                .hgetall(format!("{}:status:{{s{sid}}}", app.cfg.key_prefix))
                .unwrap();
            format!("{sid}: {h:?}")
        })
        .collect();
    assert_eq!(
        in_homes, 0,
        "statuses left in followers' homes: {described:?}"
    );
    let (_, tagged) = app.get("/api/v1/timelines/tag/halfway", None).await;
    assert_eq!(tagged, json!([]));
    second.kill9().await;
}

/// A suspension made through one process ends the user's streams on
/// another and hides them there; their writes racing it (answered or
/// not) leave nothing visible behind; lifting it brings back what they
/// wrote before.
#[tokio::test]
async fn a_suspension_reaches_every_process_and_writes_racing_it_leave_nothing_visible() {
    let app = TestApp::start().await;
    let other = ServerProcess::serve(&app.redis, &[]).await;
    let (alice_id, alice) = app.user("race_alice").await;
    let (bob_id, bob) = app.user("race_bob").await;
    let admin = app.operator_token(&bob_id, &["read", "admin"]).await;
    app.follow(&bob, &alice_id).await;
    let before = app.say(&alice, "before #racetag").await;
    let http = reqwest::Client::new();
    let mut theirs = app
        .stream_url(&other.url("/api/v1/stream/user"), Some(&alice), &[])
        .await;
    assert_eq!(theirs.status, reqwest::StatusCode::OK);
    // Alice writes from 8 connections while the suspension lands.
    let writer = {
        let (http, url, token) = (http.clone(), other.url("/api/v1/statuses"), alice.clone());
        tokio::spawn(async move {
            let answered = futures::stream::iter(0..400)
                .map(|i| {
                    let req = http
                        .post(&url)
                        .bearer_auth(&token)
                        .json(&json!({"message": format!("racing {i} #racetag")}));
                    async move {
                        match req.send().await {
                            Ok(r) if r.status().as_u16() == 201 => {
                                let v: serde_json::Value = r.json().await.unwrap_or_default();
                                v["id"].as_str().map(str::to_string)
                            }
                            _ => None,
                        }
                    }
                })
                .buffer_unordered(8)
                .filter_map(|id| async move { id })
                .collect::<Vec<String>>()
                .await;
            answered
        })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    let (status, _) = app
        .post(
            &format!("/api/v1/admin/users/{alice_id}/suspend"),
            Some(&admin),
            json!({}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    // Her own statuses come first; then the end, with `suspended`.
    let bye = loop {
        let m = theirs.next("her stream on the other process ends").await;
        if m.data["type"] == "disconnect" {
            break m;
        }
    };
    assert_eq!(bye.data["code"], "suspended", "{:?}", bye.data);
    let answered = writer.await.unwrap();
    // Let what was under way finish (workers sweep too), then look
    // everywhere, on both processes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut seen = 0;
    for base in [app.url(""), other.url("")] {
        for path in [
            "/api/v1/timelines/tag/racetag".to_string(),
            format!("/api/v1/users/{alice_id}/statuses"),
        ] {
            let r = http
                .get(format!("{base}{path}"))
                .bearer_auth(&bob)
                .send()
                .await
                .unwrap();
            if r.status().is_success() {
                let v: serde_json::Value = r.json().await.unwrap();
                seen += v.as_array().map_or(0, Vec::len);
            }
        }
        let r = http
            .get(format!("{base}/api/v1/timelines/home?count=200"))
            .bearer_auth(&bob)
            .send()
            .await
            .unwrap();
        let home: serde_json::Value = r.json().await.unwrap();
        seen += home
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["uid"] == alice_id.as_str())
            .count();
        for id in answered.iter().take(50).chain(std::iter::once(&before)) {
            let r = http
                .get(format!("{base}/api/v1/statuses/{id}"))
                .send()
                .await
                .unwrap();
            seen += usize::from(r.status().is_success());
        }
    }
    println!(
        "suspension racing 400 posts: {} answered 201 before it landed, {seen} visible after it on two processes",
        answered.len()
    );
    assert_eq!(seen, 0, "nothing of a suspended user is visible");
    let (status, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/api/v1/admin/users/{alice_id}/suspend"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    app.eventually("the other process shows her again", || async {
        let r = http
            .get(other.url(&format!("/api/v1/statuses/{before}")))
            .send()
            .await
            .unwrap();
        r.status().is_success()
    })
    .await;
    other.kill9().await;
}

/// A process killed in the middle of a suspension (after the user's flag
/// is set, before the sessions end and the event goes out): the next
/// process's sweeper finishes it. The user's stream on a third process
/// ends with `suspended`, their token is refused, nothing of theirs shows.
#[tokio::test]
async fn a_suspension_killed_half_way_is_finished_by_the_next_process() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (alice_id, alice) = app.user("half_suspended").await;
    let (bob_id, _) = app.user("half_watcher").await;
    let admin = app.operator_token(&bob_id, &["read", "admin"]).await;
    let sid = app.say(&alice, "soon hidden #halfsusp").await;
    // A process that only serves (no workers, so no sweeper).
    let watcher = ServerProcess::serve(&app.redis, &[("FIREHOSE_WORKERS", "0")]).await;
    let mut theirs = app
        .stream_url(&watcher.url("/api/v1/stream/user"), Some(&alice), &[])
        .await;
    assert_eq!(theirs.status, reqwest::StatusCode::OK);
    // This process stops for 30 s after setting the flag: it is killed then.
    let env = [
        ("FIREHOSE_OUTBOX_LEASE", "1"),
        ("FIREHOSE_TEST_PAUSE_SUSPEND_MS", "30000"),
    ];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let http = reqwest::Client::new();
    let asked = tokio::spawn(
        http.post(first.url(&format!("/api/v1/admin/users/{alice_id}/suspend")))
            .bearer_auth(&admin)
            .send(),
    );
    let user_key = format!("{}:user:{{{alice_id}}}", app.cfg.key_prefix);
    app.eventually("the flag is set", || async {
        let mut conn = app.redis.conn();
        let v: Option<String> = conn.hget(&user_key, "suspended").unwrap_or(None);
        v.as_deref() == Some("1")
    })
    .await;
    first.kill9().await;
    let _ = asked.await;
    // Half way: her session still lives (her user is already hidden: 404).
    let (status, _) = app.get("/api/v1/me", Some(&alice)).await;
    assert_ne!(
        status,
        reqwest::StatusCode::UNAUTHORIZED,
        "the kill came before the sessions ended"
    );
    let second = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    let bye = loop {
        let m = theirs.next("the end of her stream").await;
        if m.data["type"] == "disconnect" {
            break m;
        }
    };
    assert_eq!(bye.data["code"], "suspended", "{:?}", bye.data);
    // The event goes out just before the sessions end.
    app.eventually("her token is refused", || async {
        app.get("/api/v1/me", Some(&alice)).await.0 == reqwest::StatusCode::UNAUTHORIZED
    })
    .await;
    for base in [app.url(""), watcher.url(""), second.url("")] {
        let r = http
            .get(format!("{base}/api/v1/statuses/{sid}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::NOT_FOUND, "{base}");
        let r = http
            .get(format!("{base}/api/v1/timelines/tag/halfsusp"))
            .send()
            .await
            .unwrap();
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v, json!([]), "{base}");
    }
    let (_, audit) = app.get("/api/v1/admin/audit", Some(&admin)).await;
    assert_eq!(
        audit["actions"].as_array().unwrap().len(),
        1,
        "one entry, whoever finished it: {audit}"
    );
    println!("suspension killed half way: finished by the next process's sweeper, one audit entry");
    second.kill9().await;
    watcher.kill9().await;
}

/// A process killed while ending a session (its authority gone, its
/// revocation not yet out): the token is refused from the first step, and
/// the next process's sweeper announces the end, so the session's stream on
/// another process closes with `revoked`.
#[tokio::test]
async fn a_logout_killed_half_way_still_closes_the_sessions_streams() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (_, token) = app.user("half_logged_out").await;
    // A process that only serves (no workers, so no sweeper).
    let watcher = ServerProcess::serve(&app.redis, &[("FIREHOSE_WORKERS", "0")]).await;
    let mut theirs = app
        .stream_url(&watcher.url("/api/v1/stream/user"), Some(&token), &[])
        .await;
    assert_eq!(theirs.status, reqwest::StatusCode::OK);
    let env = [
        ("FIREHOSE_OUTBOX_LEASE", "1"),
        ("FIREHOSE_WORKERS", "0"),
        ("FIREHOSE_TEST_PAUSE_SESSION_END_MS", "30000"),
    ];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let asked = tokio::spawn(
        reqwest::Client::new()
            .delete(first.url("/api/v1/sessions/current"))
            .bearer_auth(&token)
            .send(),
    );
    app.eventually("the token is refused", || async {
        app.get("/api/v1/me", Some(&token)).await.0 == reqwest::StatusCode::UNAUTHORIZED
    })
    .await;
    first.kill9().await;
    let _ = asked.await;
    let second = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    let bye = loop {
        let m = theirs.next("the end of the stream").await;
        if m.data["type"] == "disconnect" {
            break m;
        }
    };
    assert_eq!(bye.data["code"], "revoked", "{:?}", bye.data);
    app.eventually("the index forgets it", || async {
        indexed_sessions(&app).is_empty()
    })
    .await;
    println!("logout killed half way: token refused at once, stream closed by the next process");
    second.kill9().await;
    watcher.kill9().await;
}

/// Processes killed between a sign-up's two name claims (its login held,
/// its email not yet): the next process's sweeper finishes the one whose
/// email is still free (the user logs in), and gives back the login of the
/// one whose email someone else took meanwhile (the login registers).
#[tokio::test]
async fn sign_ups_killed_between_their_names_are_finished_or_give_their_login_back() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let env = [
        ("FIREHOSE_OUTBOX_LEASE", "1"),
        ("FIREHOSE_WORKERS", "0"),
        ("FIREHOSE_TEST_PAUSE_SIGNUP_MS", "30000"),
    ];
    let first = ServerProcess::serve(&app.redis, &env).await;
    let http = reqwest::Client::new();
    let asked: Vec<_> = ["halfway_kept", "halfway_lost"]
        .into_iter()
        .map(|login| {
            tokio::spawn(
                http.post(first.url("/api/v1/users"))
                    .json(&json!({"login": login, "name": "n", "email": format!("{login}@example.com"), "password": "password123"}))
                    .send(),
            )
        })
        .collect();
    for login in ["halfway_kept", "halfway_lost"] {
        let key = format!("{}:name:{{{login}}}", app.cfg.key_prefix);
        app.eventually("the login is claimed", || async {
            let mut conn = app.redis.conn();
            conn.exists::<_, bool>(&key).unwrap_or(false)
        })
        .await;
    }
    first.kill9().await;
    for a in asked {
        let _ = a.await;
    }
    // Someone takes the second one's email while its sign-up is stopped.
    let (status, body) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "quick_one", "name": "n", "email": "halfway_lost@example.com", "password": "password123"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    let second = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    app.eventually("the kept sign-up is finished", || async {
        let (status, _) = app
            .post(
                "/api/v1/sessions",
                None,
                json!({"identifier": "halfway_kept@example.com", "password": "password123"}),
            )
            .await;
        status == reqwest::StatusCode::CREATED
    })
    .await;
    let looker = app.any_token().await;
    app.eventually("the lost sign-up gives its login back", || async {
        let (status, _) = app
            .get("/api/v1/users/lookup?login=halfway_lost", Some(&looker))
            .await;
        let mut conn = app.redis.conn();
        let held: bool = conn
            .exists(format!("{}:name:{{halfway_lost}}", app.cfg.key_prefix))
            .unwrap_or(true);
        status == reqwest::StatusCode::NOT_FOUND && !held
    })
    .await;
    let (status, body) = app
        .post(
            "/api/v1/users",
            None,
            json!({"login": "halfway_lost", "name": "n", "email": "another@example.com", "password": "password123"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    println!("sign-ups killed between their names: one finished, one gave its login back");
    second.kill9().await;
}

/// `WAIT` commands run so far, summed over every running node.
fn wait_calls(redis: &common::RedisServer) -> u64 {
    redis
        .node_conns()
        .iter_mut()
        .map(|c| {
            let info: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
            info.lines()
                .find_map(|l| l.strip_prefix("cmdstat_wait:calls="))
                .and_then(|v| v.split(',').next())
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// One write of the failover test's steady load: when it was sent (since
/// the load began), its answer, how long the answer took, the status id.
struct Sent {
    at: Duration,
    code: u16,
    took: Duration,
    id: Option<String>,
}

#[tokio::test]
async fn a_master_killed_under_load_fails_over_with_503s_only_and_keeps_every_answered_write() {
    // 3 masters with a replica each; writes wait for one replica
    // (--redis-wait-replicas 1). The master of `{g}` (sessions, the outbox,
    // the event buffer: every write touches it) is SIGKILLed under a steady
    // load of posts with a firehose stream open, its replica takes over,
    // and the killed node comes back as a replica.
    let mut app = TestApp::start_on(common::RedisServer::start_cluster_with_replicas(), |c| {
        c.redis_wait_replicas = 1;
        // A replica slowed by a loaded machine is not a fault here.
        c.redis_wait_timeout_ms = 5_000;
    })
    .await;
    // A cluster just made may answer 503 for a moment (a replica still
    // settling): the setup retries, the measured load does not.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    // (A 503'd sign-up may be kept: each try has a login of its own.)
    let mut tries = 0;
    let (author_id, login) = loop {
        tries += 1;
        let login = format!("steady{tries}");
        let (status, body) = app
            .post(
                "/api/v1/users",
                None,
                json!({"login": login, "name": "steady", "email": format!("{login}@example.com"), "password": "password123"}),
            )
            .await;
        if status == reqwest::StatusCode::CREATED {
            break (body["id"].as_str().unwrap().to_string(), login);
        }
        assert!(
            status == reqwest::StatusCode::SERVICE_UNAVAILABLE
                && std::time::Instant::now() < deadline,
            "register steady: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let author = app.login(&login).await;
    let watcher = app.operator_token(&author_id, &["read", "firehose"]).await;
    let mut stream = app
        .stream("/api/v1/stream/firehose", Some(&watcher), &[])
        .await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let began = std::time::Instant::now();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (http, url, token, stop) = (
                app.http.clone(),
                app.url("/api/v1/statuses"),
                author.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut sent = Vec::new();
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    n += 1;
                    let at = began.elapsed();
                    let answer = http
                        .post(&url)
                        .bearer_auth(&token)
                        .timeout(Duration::from_secs(60))
                        .json(&json!({ "message": format!("writer {w} post {n}") }))
                        .send()
                        .await;
                    let took = began.elapsed() - at;
                    let (code, id) = match answer {
                        Ok(r) => {
                            let code = r.status().as_u16();
                            let body: serde_json::Value = r.json().await.unwrap_or_default();
                            (code, body["id"].as_str().map(String::from))
                        }
                        Err(_) => (0, None),
                    };
                    sent.push(Sent { at, code, took, id });
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                sent
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let victim = app.redis.master_of("{g}").expect("a master of {g}");
    let killed_at = began.elapsed();
    app.redis.kill_node(victim);
    let promoted_at = loop {
        if app.redis.master_of("{g}").is_some_and(|m| m != victim) {
            break began.elapsed();
        }
        assert!(
            began.elapsed() - killed_at < Duration::from_secs(30),
            "no replica took over: {}\n{}",
            app.redis.cluster_nodes(),
            app.redis.log_tails()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    app.redis.restart_node(victim);
    while !app.redis.replica_in_sync(victim) {
        assert!(
            began.elapsed() - promoted_at < Duration::from_secs(30),
            "the killed master never came back as a replica"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rejoined_at = began.elapsed();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut sent = Vec::new();
    for w in writers {
        sent.extend(w.await.unwrap());
    }
    sent.sort_by_key(|s| s.at);
    let refused: Vec<&Sent> = sent.iter().filter(|s| s.code == 503).collect();
    let answered: Vec<String> = sent
        .iter()
        .filter(|s| s.code == 201)
        .filter_map(|s| s.id.clone())
        .collect();
    let slowest = sent.iter().map(|s| s.took).max().unwrap_or_default();
    let refused_span = match (refused.first(), refused.last()) {
        (Some(a), Some(b)) => (b.at + b.took).saturating_sub(a.at),
        _ => Duration::ZERO,
    };
    // Every write answered 201 is there, with the author's count.
    let mut lost = 0;
    for id in &answered {
        let (status, _) = app.get(&format!("/api/v1/statuses/{id}"), None).await;
        if status != reqwest::StatusCode::OK {
            lost += 1;
        }
    }
    // ... and reached the stream that stayed open through it all.
    let mut unseen: std::collections::HashSet<String> = answered.iter().cloned().collect();
    let mut gaps = 0;
    while !unseen.is_empty() {
        let m = stream
            .next_event("every answered status on the firehose")
            .await;
        if m.event == "warning" && m.data["code"] == "resume_gap" {
            gaps += 1;
        }
        if let Some(id) = m.data["status"]["id"].as_str() {
            unseen.remove(id);
        }
    }
    println!(
        "failover under load: {} writes, {} answered 201, {} answered 503 over {:.1} s \
         (master killed at {:.1} s, replica promoted {:.1} s later, old master back as a \
         replica {:.1} s after that), slowest answer {:.1} s, answered writes lost: {lost}, \
         stream gaps: {gaps}",
        sent.len(),
        answered.len(),
        refused.len(),
        refused_span.as_secs_f64(),
        killed_at.as_secs_f64(),
        (promoted_at - killed_at).as_secs_f64(),
        (rejoined_at - promoted_at).as_secs_f64(),
        slowest.as_secs_f64(),
    );
    let odd: Vec<(u16, f64)> = sent
        .iter()
        .filter(|s| s.code != 201 && s.code != 503)
        .map(|s| (s.code, s.at.as_secs_f64()))
        .collect();
    assert!(odd.is_empty(), "only 201 and 503 (0: no answer): {odd:?}");
    assert!(
        slowest < Duration::from_secs(20),
        "no write hangs: the slowest took {slowest:?}"
    );
    assert_eq!(lost, 0, "every write answered 201 is kept");
    assert_eq!(gaps, 0, "the stream carried on with no gap");
    // 503s came only around the promotion: every write sent once the old
    // master was back in sync (and the view of it a second old) succeeded.
    let late: Vec<f64> = sent
        .iter()
        .filter(|s| s.at > rejoined_at + Duration::from_secs(1) && s.code != 201)
        .map(|s| s.at.as_secs_f64())
        .collect();
    assert!(
        late.is_empty(),
        "writes refused after the failover: {late:?}"
    );
    assert!(
        sent.iter()
            .any(|s| s.at > rejoined_at + Duration::from_secs(1) && s.code == 201),
        "writes went on after the failover"
    );
    // The confirmations were asked for: WAIT ran on the masters.
    let waits = wait_calls(&app.redis);
    assert!(waits > 0, "no WAIT reached a master");
    let (_, me) = app.get(&format!("/api/v1/users/{author_id}"), None).await;
    assert!(
        me["posts"].as_u64().unwrap_or(0) >= answered.len() as u64,
        "the author's count holds every answered post: {me}"
    );
}

#[tokio::test]
async fn a_replica_that_stops_confirming_turns_writes_into_503s_until_it_answers_again() {
    // One Redis with a replica; writes wait for it (--redis-wait-replicas 1,
    // 300 ms). The replica is stopped (SIGSTOP: its connection stays, its
    // acknowledgements stop), then continued.
    let master = common::RedisServer::start_single();
    let replica = common::RedisServer::start_single();
    replica.replicate(&master);
    let app = TestApp::start_on(master, |c| {
        c.redis_wait_replicas = 1;
        c.redis_wait_timeout_ms = 300;
    })
    .await;
    let (_, token) = app.user("careful").await;
    let first = app.say(&token, "confirmed by the replica").await;
    replica.signal_node(0, "-STOP");
    let (status, body) = app
        .post(
            "/api/v1/statuses",
            Some(&token),
            json!({ "message": "the replica is not answering" }),
        )
        .await;
    replica.signal_node(0, "-CONT");
    assert_eq!(status, reqwest::StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable");
    // The write itself was made on the master: a 503 here means "not
    // confirmed", and the status is there.
    let (_, mine) = app
        .get(&format!("/api/v1/statuses/{first}"), Some(&token))
        .await;
    assert_eq!(mine["id"], json!(first));
    app.eventually("writes are answered again", || async {
        let (status, _) = app
            .post(
                "/api/v1/statuses",
                Some(&token),
                json!({ "message": "the replica is back" }),
            )
            .await;
        status == reqwest::StatusCode::CREATED
    })
    .await;
    let waits = wait_calls(&app.redis);
    let (_, me) = app.get("/api/v1/me", Some(&token)).await;
    println!(
        "a stopped replica: the write while it was stopped answered 503 after the 300 ms wait; \
         {waits} WAITs on the master; the author has {} posts (the refused one included)",
        me["posts"]
    );
    assert!(waits >= 3, "each write waited: {waits}");
    assert!(
        me["posts"].as_u64().unwrap_or(0) >= 3,
        "the unconfirmed write was kept on the master: {me}"
    );
}

/// A block killed after its events went out and before its outbox entry
/// was retired (a partitioned op: `store::outbox`). The next process's
/// sweeper finishes it without announcing it again, and forgets the op's
/// mark in `emitted` once the op has been retired long enough.
#[tokio::test]
async fn a_block_killed_between_its_events_and_its_retirement_is_announced_once() {
    let app = TestApp::start_with(|c| c.workers = 0).await;
    let (a, at) = app.user("blocks_once").await;
    let (b, _) = app.user("blocked_once").await;
    let env = [
        ("FIREHOSE_OUTBOX_LEASE", "1"),
        ("FIREHOSE_WORKERS", "0"),
        ("FIREHOSE_TEST_PAUSE_RETIRE_MS", "30000"),
    ];
    // The sign-ups above are partitioned writes too: their marks and notes
    // are set aside from the block's.
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let (ua, ub): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    let part = firehose::store::outbox::pair_part(ua, ub);
    let marks_before: Vec<String> = app.redis.conn().hkeys(keys.emitted()).unwrap();
    let notes_before: Vec<String> = app
        .redis
        .conn()
        .zrange(keys.part_retired(part), 0, -1)
        .unwrap();
    let first = ServerProcess::serve(&app.redis, &env).await;
    let asked = tokio::spawn(
        reqwest::Client::new()
            .post(first.url(&format!("/api/v1/users/{b}/block")))
            .bearer_auth(&at)
            .json(&json!({}))
            .send(),
    );
    let relation_events = || common::buffered_events(&app, "relation", &[]);
    app.eventually("the relation event is out", || async {
        relation_events() == 1
    })
    .await;
    first.kill9().await;
    let _ = asked.await;
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    assert_eq!(store.outbox_depth().await.unwrap(), 1, "the block is owed");
    let second = ServerProcess::serve(&app.redis, &[("FIREHOSE_OUTBOX_LEASE", "1")]).await;
    app.eventually("the sweeper retires it", || async {
        store.outbox_depth().await.is_ok_and(|d| d == 0)
    })
    .await;
    assert_eq!(relation_events(), 1, "announced once");
    assert_ne!(
        store.relation_bits(ua, ub).await.unwrap(),
        0,
        "the block holds"
    );
    // The mark stays while the op is recent; once it has been retired
    // long enough (its note aged by hand here), the sweeper forgets it.
    let mut conn = app.redis.conn();
    let marks: Vec<String> = conn.hkeys(keys.emitted()).unwrap();
    let marks: Vec<String> = marks
        .into_iter()
        .filter(|m| !marks_before.contains(m))
        .collect();
    assert_eq!(marks.len(), 1, "the block's mark");
    let retired: Vec<String> = conn.zrange(keys.part_retired(part), 0, -1).unwrap();
    let retired: Vec<String> = retired
        .into_iter()
        .filter(|n| !notes_before.contains(n))
        .collect();
    assert_eq!(retired, marks, "the block's note names its op");
    let _: () = redis::cmd("ZADD")
        .arg(keys.part_retired(part))
        .arg("XX")
        .arg(0)
        .arg(&retired[0])
        .query(&mut conn)
        .unwrap();
    app.eventually("the mark is forgotten", || async {
        let mut conn = app.redis.conn();
        let mark: bool = conn.hexists(keys.emitted(), &marks[0]).unwrap_or(true);
        let note: Option<f64> = conn
            .zscore(keys.part_retired(part), &retired[0])
            .unwrap_or(Some(0.0));
        !mark && note.is_none()
    })
    .await;
    println!("block killed before retirement: one relation event, mark forgotten later");
    second.kill9().await;
}

/// The first layout kept idempotency keys in `{g}`; this one keeps them in
/// the author's outbox partition. On a store the first layout wrote, a
/// process started after the move answers a post that repeats such a key
/// with its first answer for a day, and creates nothing; new keys go to the
/// partition.
#[tokio::test]
async fn an_idempotency_key_kept_where_the_first_layout_kept_it_still_answers_after_the_move() {
    let app = TestApp::start().await;
    let (uid, token) = app.user("keeps_keys").await;
    let post = |url: String, key: &'static str| {
        let req = reqwest::Client::new()
            .post(url)
            .bearer_auth(&token)
            .header("idempotency-key", key)
            .json(&json!({"message": "said once"}));
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status();
            (status, resp.json::<serde_json::Value>().await.unwrap())
        }
    };
    let (status, first) = post(app.url("/api/v1/statuses"), "k-new").await;
    assert_eq!(status, reqwest::StatusCode::CREATED);
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    let uid_n: u64 = uid.parse().unwrap();
    {
        // As the first layout left them: its global counter set, and the
        // first answer under key `k-old` in `{g}`.
        let mut conn = app.redis.conn();
        let _: () = conn.set(keys.next_op(), 100).unwrap();
        let _: () = redis::cmd("SET")
            .arg(keys.legacy_idempotency(uid_n, "k-old"))
            .arg(first.to_string())
            .arg("EX")
            .arg(3600)
            .query(&mut conn)
            .unwrap();
        let held: bool = conn.exists(keys.idempotency(uid_n, "k-new")).unwrap();
        assert!(held, "a new key is kept in the author's partition");
    }
    app.forget_migrations();
    app.migrate().await;
    let later = ServerProcess::serve(&app.redis, &[]).await;
    let (status, again) = post(later.url("/api/v1/statuses"), "k-old").await;
    assert_eq!(status, reqwest::StatusCode::CREATED);
    assert_eq!(
        again, first,
        "the first layout's key answers the first status"
    );
    let (_, me) = app.get(&format!("/api/v1/users/{uid}"), None).await;
    assert_eq!(me["posts"], 1, "nothing new was created");
    let (_, fresh) = post(later.url("/api/v1/statuses"), "k-fresh").await;
    assert_ne!(fresh["id"], first["id"]);
    later.kill9().await;
}

#[tokio::test]
async fn an_unfinished_write_that_keeps_failing_holds_up_no_other() {
    let app = TestApp::start_with(|c| c.outbox_lease = 1.0).await;
    let (me, token) = app.user("unblocked").await;
    let uid: u64 = me.parse().unwrap();
    let sid = app.say(&token, "to be deleted by a sweep").await;
    let part = firehose::store::keys::user_part(uid);
    let keys = firehose::store::keys::Keys::new(&app.cfg.key_prefix);
    // A poison: an account deletion of a user whose HASH is a string
    // (WRONGTYPE on every run), in the same outbox partition, claimed first.
    let poison = (1_000_000u64..)
        .find(|p| firehose::store::keys::user_part(*p) == part)
        .unwrap();
    let mut conn = app.redis.conn();
    let _: () = conn.set(keys.user(poison), "not a hash").unwrap();
    let member = |n: u64, op: &firehose::store::outbox::Op| {
        format!("{n}|{}", serde_json::to_string(op).unwrap())
    };
    let bad = firehose::store::outbox::Op::DeleteAccount {
        uid: poison,
        login: "poison".into(),
        email: String::new(),
        at: 1.0,
    };
    let good = firehose::store::outbox::Op::Delete {
        sid: sid.parse().unwrap(),
        uid,
        private: false,
        at: 2.0,
    };
    let outbox = keys.part_outbox(part);
    let _: () = conn.zadd(&outbox, member(999_000_001, &bad), 1.0).unwrap();
    let _: () = conn.zadd(&outbox, member(999_000_002, &good), 2.0).unwrap();
    app.eventually("the other write is finished by a sweep", || async {
        app.get(&format!("/api/v1/statuses/{sid}"), None).await.0 == 404
    })
    .await;
    let poisoned: Option<f64> = conn.zscore(&outbox, member(999_000_001, &bad)).unwrap();
    assert!(poisoned.is_some(), "the failing write stays owed");
}

#[tokio::test]
async fn a_server_killed_mid_burst_of_likes_leaves_one_notification_per_like() {
    let app = TestApp::start().await;
    let (author_id, author) = app.user("liked_a_lot").await;
    let sids: Vec<String> = {
        let mut v = Vec::new();
        for i in 0..4 {
            v.push(app.say(&author, &format!("like me {i}")).await);
        }
        v
    };
    let fans = bulk_users(&app, "kfan", 60).await;
    let mut tokens = Vec::new();
    for fan in &fans {
        tokens.push(
            app.operator_token(&fan.to_string(), &["read", "write"])
                .await,
        );
    }
    let first = ServerProcess::serve(&app.redis, &[]).await;
    let http = reqwest::Client::new();
    let likes = futures::stream::iter(
        tokens
            .iter()
            .enumerate()
            .flat_map(|(i, t)| sids.iter().map(move |sid| (i, t.clone(), sid.clone()))),
    )
    .map(|(_, token, sid)| {
        let req = http
            .post(first.url(&format!("/api/v1/statuses/{sid}/like")))
            .bearer_auth(token);
        async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
    })
    .buffer_unordered(16);
    // Killed after a part of the burst was answered.
    let answered: Vec<u16> = likes.take(100).collect().await;
    first.kill9().await;
    assert!(
        answered.iter().all(|s| *s == 200 || *s == 201),
        "{answered:?}"
    );
    // Every like that stands, and only those, has one notification, once
    // the notifier (this process's, or the dead one's after its lease) has
    // read the buffer.
    let store = firehose::store::Store::open(&app.redis.url(), &app.cfg).unwrap();
    let mut likers = 0;
    for sid in &sids {
        let page = store
            .likers(
                sid.parse().unwrap(),
                &firehose::store::paging::Cursor::Start,
                1000,
            )
            .await
            .unwrap();
        likers += page.ids.len();
    }
    let count = || async {
        let mut n = 0;
        let mut query = "?types=like&count=200".to_string();
        loop {
            let (_, body) = app
                .get(&format!("/api/v1/notifications{query}"), Some(&author))
                .await;
            n += body["notifications"].as_array().unwrap().len();
            match body["next_cursor"].as_str() {
                Some(c) => query = format!("?types=like&count=200&cursor={c}"),
                None => return n,
            }
        }
    };
    app.eventually("one notification per standing like", || async {
        count().await == likers
    })
    .await;
    // And no more come.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let notified = count().await;
    println!(
        "kill -9 mid-burst of likes: {} answered, {likers} likes stand, {notified} like notifications",
        answered.len()
    );
    assert_eq!(notified, likers);
    assert!(likers >= answered.len());
    let _ = author_id;
}
