//! Soak run: minutes of mixed load with random faults against a server this
//! program starts (and kills with SIGKILL, and restarts) on a private Redis,
//! then an audit of what the faults may have cost. Every number it prints
//! under "audit" must be 0.
//!
//! Load: users post (some clients hang up before the answer), delete, follow
//! and unfollow (each user only the next five users, so that no home timeline
//! reaches its cap of 1000 and the audit can demand every status of every
//! followed author); three readers tail every status on `sample?rate=1` (SSE,
//! NDJSON, SSE again), resuming with `Last-Event-ID` whenever their stream
//! ends. Faults, one every few seconds at random: the server killed with
//! SIGKILL and restarted, the hub's pub/sub connection killed, a burst of
//! requests abandoned mid-flight.
//!
//! ```sh
//! cargo build --release && cargo run --release -p firehose-bench --bin soak -- --minutes 10
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use futures::StreamExt;
use rand::Rng;
use redis::AsyncCommands;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
struct Args {
    /// How long the load runs.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Users taking part.
    #[arg(long, default_value_t = 100)]
    users: usize,
    /// Concurrent writers.
    #[arg(long, default_value_t = 16)]
    writers: usize,
    /// Requests a second, all writers together.
    #[arg(long, default_value_t = 30.0)]
    rate: f64,
    /// The firehose binary.
    #[arg(long, default_value = "target/release/firehose")]
    bin: String,
}

const PREFIX: &str = "fh";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn start_server(bin: &str, port: u16, redis_url: &str) -> tokio::process::Child {
    tokio::process::Command::new(bin)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--redis-url",
            redis_url,
        ])
        .env("FIREHOSE_RATE_LIMITS", "off")
        .env("FIREHOSE_OUTBOX_LEASE", "2")
        .env("FIREHOSE_REPLAY_MAXLEN", "10000000")
        .env("FIREHOSE_MAX_STREAMS_PER_USER", "100")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the firehose binary starts (cargo build --release first)")
}

async fn wait_ready(http: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(r) = http.get(format!("{base}/readyz")).send().await {
            if r.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server did not become ready");
}

/// Counts of what happened, printed at the end.
#[derive(Default)]
struct Counts {
    posts_answered: AtomicU64,
    posts_abandoned: AtomicU64,
    deletes: AtomicU64,
    follows: AtomicU64,
    unfollows: AtomicU64,
    failed: AtomicU64,
    kills: AtomicU64,
    pubsub_kills: AtomicU64,
}

/// One reader of `sample?rate=1`: every status event id it received.
async fn reader(
    base: String,
    token: String,
    ndjson: bool,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
) {
    let http = reqwest::Client::new();
    let mut last: Option<String> = None;
    while !stop.load(Ordering::Relaxed) {
        let mut req = http
            .get(format!("{base}/api/v1/stream/sample?rate=1"))
            .bearer_auth(&token);
        if ndjson {
            req = req.header("accept", "application/x-ndjson");
        }
        if let Some(id) = &last {
            req = req.header("last-event-id", id);
        }
        let Ok(resp) = req.send().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if !resp.status().is_success() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let mut body = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let chunk = tokio::select! {
                c = body.next() => c,
                _ = tokio::time::sleep(Duration::from_millis(500)) => {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    continue;
                }
            };
            // The stream ended (server killed, pub/sub gap, ...): resume.
            let Some(Ok(chunk)) = chunk else { break };
            buf.extend_from_slice(&chunk);
            // NDJSON: one JSON per line; SSE: the `data:` lines.
            while let Some(end) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                let json = if ndjson {
                    line.trim()
                } else {
                    line.trim().strip_prefix("data: ").unwrap_or("")
                };
                let Ok(v) = serde_json::from_str::<Value>(json) else {
                    continue;
                };
                if v["type"] == "status" {
                    if let Some(id) = v["id"].as_str() {
                        last = Some(id.to_string());
                        seen.lock().unwrap().push(id.to_string());
                    }
                }
            }
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // A private Redis on a free port.
    let redis_port = free_port();
    let dir = std::env::temp_dir().join(format!("firehose-soak-{redis_port}"));
    std::fs::create_dir_all(&dir)?;
    let _redis = tokio::process::Command::new("redis-server")
        .args([
            "--port",
            &redis_port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let redis_url = format!("redis://127.0.0.1:{redis_port}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()?;
    let server = Arc::new(tokio::sync::Mutex::new(start_server(
        &args.bin, port, &redis_url,
    )));
    wait_ready(&http, &base).await;

    // Users and their tokens.
    let mut users: Vec<(u64, String)> = Vec::new();
    for i in 0..args.users {
        let login = format!("soak{i}");
        let body = json!({"login": login, "name": "Soak", "email": format!("{login}@soak.example"), "password": "password123"});
        let user: Value = http
            .post(format!("{base}/api/v1/users"))
            .json(&body)
            .send()
            .await?
            .json()
            .await?;
        let login: Value = http
            .post(format!("{base}/api/v1/sessions"))
            .json(&json!({"identifier": login, "password": "password123"}))
            .send()
            .await?
            .json()
            .await?;
        users.push((
            user["id"].as_str().unwrap_or("0").parse()?,
            login["token"].as_str().unwrap_or("").to_string(),
        ));
    }
    let users = Arc::new(users);
    let counts = Arc::new(Counts::default());
    let stop = Arc::new(AtomicBool::new(false));

    // Readers.
    let mut readers = Vec::new();
    let mut seen_sets = Vec::new();
    for (i, ndjson) in [false, true, false].into_iter().enumerate() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        seen_sets.push((if ndjson { "ndjson" } else { "sse" }, i, seen.clone()));
        readers.push(tokio::spawn(reader(
            base.clone(),
            users[i].1.clone(),
            ndjson,
            seen,
            stop.clone(),
        )));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut redis = redis::Client::open(redis_url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let first_event: Option<String> = {
        let rows: Vec<(String, Vec<String>)> = redis::cmd("XREVRANGE")
            .arg(format!("{PREFIX}:{{g}}:events"))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut redis)
            .await?;
        rows.first().map(|(id, _)| id.clone())
    };

    // Writers.
    let deadline = Instant::now() + Duration::from_secs_f64(args.minutes * 60.0);
    let mut writers = Vec::new();
    for w in 0..args.writers {
        let (users, counts, base) = (users.clone(), counts.clone(), base.clone());
        let pause = Duration::from_secs_f64(args.writers as f64 / args.rate.max(0.1));
        writers.push(tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(15))
                .build()
                .unwrap();
            let mut mine: Vec<(usize, String)> = Vec::new();
            let mut n = 0u64;
            let mut next = Instant::now();
            while Instant::now() < deadline {
                next += pause;
                tokio::time::sleep_until(next.into()).await;
                n += 1;
                let (roll, who, other, abandon) = {
                    let mut rng = rand::rng();
                    let who = rng.random_range(0..users.len());
                    let other = (who + rng.random_range(1..=5)) % users.len();
                    (
                        rng.random_range(0..100),
                        who,
                        other,
                        rng.random_range(0..100) < 5,
                    )
                };
                let (uid, token) = &users[who];
                let req = if roll < 75 {
                    http.post(format!("{base}/api/v1/statuses"))
                        .bearer_auth(token)
                        .json(&json!({"message": format!("soak {w}-{n} #soak")}))
                } else if roll < 80 && !mine.is_empty() {
                    let (author, sid) = mine.swap_remove(0);
                    counts.deletes.fetch_add(1, Ordering::Relaxed);
                    http.delete(format!("{base}/api/v1/statuses/{sid}"))
                        .bearer_auth(&users[author].1)
                } else if users[other].0 != *uid {
                    let follow = roll < 92;
                    let c = if follow {
                        &counts.follows
                    } else {
                        &counts.unfollows
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                    let r = http.request(
                        if follow {
                            reqwest::Method::POST
                        } else {
                            reqwest::Method::DELETE
                        },
                        format!("{base}/api/v1/users/{}/follow", users[other].0),
                    );
                    r.bearer_auth(token)
                } else {
                    continue;
                };
                let is_post = roll < 75;
                if abandon {
                    // Hang up after a moment, whatever the server is doing.
                    let wait = Duration::from_millis(rand::rng().random_range(0..20));
                    let _ = tokio::time::timeout(wait, req.send()).await;
                    if is_post {
                        counts.posts_abandoned.fetch_add(1, Ordering::Relaxed);
                    }
                    continue;
                }
                match req.send().await {
                    Ok(r) if r.status().is_success() => {
                        if is_post {
                            counts.posts_answered.fetch_add(1, Ordering::Relaxed);
                            if let Ok(v) = r.json::<Value>().await {
                                if let Some(id) = v["id"].as_str() {
                                    mine.push((who, id.to_string()));
                                }
                            }
                        }
                    }
                    Ok(r) if r.status().as_u16() == 409 || r.status().as_u16() == 404 => {}
                    _ => {
                        counts.failed.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }));
    }

    // Faults.
    let started = Instant::now();
    while Instant::now() < deadline {
        let wait = Duration::from_millis(rand::rng().random_range(3000..9000));
        tokio::time::sleep(wait.min(deadline.saturating_duration_since(Instant::now()))).await;
        if Instant::now() >= deadline {
            break;
        }
        if rand::rng().random_range(0..2) == 0 {
            let mut child = server.lock().await;
            let _ = child.start_kill();
            let _ = child.wait().await;
            *child = start_server(&args.bin, port, &redis_url);
            counts.kills.fetch_add(1, Ordering::Relaxed);
            drop(child);
            wait_ready(&http, &base).await;
        } else {
            let _: redis::Value = redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg("pubsub")
                .query_async(&mut redis)
                .await?;
            counts.pubsub_kills.fetch_add(1, Ordering::Relaxed);
        }
        println!(
            "{:>5.0} s: {} posts answered, {} abandoned, {} SIGKILLs, {} pub/sub kills",
            started.elapsed().as_secs_f64(),
            counts.posts_answered.load(Ordering::Relaxed),
            counts.posts_abandoned.load(Ordering::Relaxed),
            counts.kills.load(Ordering::Relaxed),
            counts.pubsub_kills.load(Ordering::Relaxed)
        );
    }
    for w in writers {
        let _ = w.await;
    }

    // Drain: every committed write's work done (outbox and fan-out queue empty).
    let drain_deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let keys = firehose::store::keys::Keys::new(PREFIX);
        let (mut outbox, mut queue) = (0u64, 0u64);
        for k in 0..firehose::store::keys::OUTBOX_PARTS {
            let part: u64 = redis.zcard(keys.part_outbox(k)).await?;
            outbox += part;
            let tasks: u64 = redis.xlen(keys.part_fanout(k)).await.unwrap_or(0);
            queue += tasks;
        }
        if outbox == 0 && queue == 0 {
            break;
        }
        anyhow::ensure!(
            Instant::now() < drain_deadline,
            "not drained: outbox {outbox}, queue {queue}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let _ = r.await;
    }

    // Audit 1: counters equal set sizes.
    let mut counter_drift = 0;
    for (uid, _) in users.iter() {
        let key = format!("{PREFIX}:user:{{{uid}}}");
        let h: HashMap<String, String> = redis.hgetall(&key).await?;
        for (field, set) in [
            ("followers", "followers"),
            ("following", "following"),
            ("posts", "profile"),
        ] {
            let n: u64 = redis.zcard(format!("{key}:{set}")).await?;
            if h.get(field)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
                != n
            {
                counter_drift += 1;
            }
        }
    }
    // Audit 2: every status in every follower's home (above the home's
    // oldest entry), and nothing in a home that should not be there.
    let mut missing_from_homes = 0;
    let mut stale_in_homes = 0;
    let mut checked_pairs = 0;
    let mut homes_at_cap = 0;
    for (uid, _) in users.iter() {
        let key = format!("{PREFIX}:user:{{{uid}}}");
        let home: Vec<(String, f64)> = redis
            .zrange_withscores(format!("{key}:home"), 0, -1)
            .await?;
        // The workload keeps homes under their cap of 1000 (five followees
        // at most), so every status of every followed author is owed; a
        // home at the cap could have trimmed some, and is reported instead.
        if home.len() >= 1000 {
            homes_at_cap += 1;
            continue;
        }
        let floor = f64::MIN;
        let home_ids: HashSet<String> = home.iter().map(|(id, _)| id.clone()).collect();
        let following: Vec<String> = redis.zrange(format!("{key}:following"), 0, -1).await?;
        let mut authors: HashSet<String> = following.iter().cloned().collect();
        authors.insert(uid.to_string());
        for author in &authors {
            let profile: Vec<(String, f64)> = redis
                .zrange_withscores(format!("{PREFIX}:user:{{{author}}}:profile"), 0, -1)
                .await?;
            for (sid, score) in profile {
                if score > floor {
                    checked_pairs += 1;
                    if !home_ids.contains(&sid) {
                        missing_from_homes += 1;
                        if missing_from_homes <= 5 {
                            let in_followers: Option<f64> = redis
                                .zscore(format!("{PREFIX}:user:{{{author}}}:followers"), uid)
                                .await?;
                            let follow_time: Option<f64> =
                                redis.zscore(format!("{key}:following"), author).await?;
                            println!("  e.g. status {sid} (posted {score}) of {author} not in the home of {uid}: follower since {follow_time:?} (in the followers set since {in_followers:?}), home size {}", home.len());
                        }
                    }
                }
            }
        }
        for (sid, _) in &home {
            let author: Option<String> = redis
                .hget(format!("{PREFIX}:status:{{s{sid}}}"), "uid")
                .await?;
            match author {
                Some(a) if authors.contains(&a) => {}
                other => {
                    stale_in_homes += 1;
                    if stale_in_homes <= 5 {
                        println!("  e.g. home of {uid} holds {sid}: author {other:?} (None: the status was deleted)");
                    }
                }
            }
        }
    }
    // Audit 3: each reader got every status event once (from when it started).
    let rows: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
        .arg(format!("{PREFIX}:{{g}}:events"))
        .arg(first_event.map_or("-".to_string(), |id| format!("({id}")))
        .arg("+")
        .query_async(&mut redis)
        .await?;
    // An entry holds one event, or a batch's (store::events::entry).
    let expected: HashSet<String> = rows
        .into_iter()
        .flat_map(firehose::store::events::entry)
        .filter(|(_, json)| json.contains("\"type\":\"status\""))
        .map(|(id, _)| id.to_string())
        .collect();
    println!(
        "\nload: {} minutes, {} users, {} writers",
        args.minutes, args.users, args.writers
    );
    println!(
        "done: {} posts answered, {} posts abandoned mid-request, {} deletes, {} follows, {} unfollows, {} failed requests (during restarts), {} SIGKILL restarts, {} pub/sub kills",
        counts.posts_answered.load(Ordering::Relaxed),
        counts.posts_abandoned.load(Ordering::Relaxed),
        counts.deletes.load(Ordering::Relaxed),
        counts.follows.load(Ordering::Relaxed),
        counts.unfollows.load(Ordering::Relaxed),
        counts.failed.load(Ordering::Relaxed),
        counts.kills.load(Ordering::Relaxed),
        counts.pubsub_kills.load(Ordering::Relaxed),
    );
    println!(
        "status events in the buffer: {}; (status, home) pairs checked: {checked_pairs}",
        expected.len()
    );
    println!("\naudit (all must be 0):");
    println!("  counters differing from their set sizes: {counter_drift}");
    println!("  statuses missing from followers' homes: {missing_from_homes}");
    println!("  home entries of deleted or unfollowed authors: {stale_in_homes}");
    println!("  homes at their cap (not audited): {homes_at_cap}");
    let mut bad = counter_drift + missing_from_homes + stale_in_homes + homes_at_cap;
    for (name, i, seen) in &seen_sets {
        let seen = seen.lock().unwrap();
        let distinct: HashSet<&String> = seen.iter().collect();
        let missing = expected.iter().filter(|id| !distinct.contains(id)).count();
        let duplicated = seen.len() - distinct.len();
        println!("  reader {i} ({name}): events missing {missing}, duplicated {duplicated} (of {} received)", seen.len());
        bad += missing + duplicated;
    }
    let _ = server.lock().await.start_kill();
    anyhow::ensure!(bad == 0, "the audit found {bad} problems");
    Ok(())
}
