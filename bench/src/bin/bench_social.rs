//! Benchmarks of the social core against a running server:
//! - full fan-out time of one post to N followers (inline part + queue
//!   drained), next to the time the same Redis takes for the same ZADD+trim
//!   commands sent as a raw pipeline in batches of 1000;
//! - posts per second over HTTP (the poster has 50 followers), with three
//!   hashtags and with none, side by side: the cost of hashtag timelines and
//!   trending per post;
//! - likes and unlikes per second, reposts and their undoing per second;
//! - home timeline reads per second over HTTP, 30 statuses per page;
//! - against the book's code (*Redis in Action*, chapter 8): posts per
//!   second when each post fans out to 1,000 followers, follows per second
//!   when each follow copies 1,000 statuses into the follower's home, and
//!   home reads per second measured by `wrk` (when it is installed).
//!
//! ```sh
//! cargo run --release -- serve                      # shell 1 (or with --redis-url)
//! cargo run --release -p firehose-bench --bin bench_social -- --followers 10000,100000
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose::config::Config;
use firehose::store::Store;
use firehose_bench::procfs::cpu_seconds;
use firehose_bench::users::users;
use futures::StreamExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// The server's Redis.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// The server's JWT secret (default: the one the server generated and keeps in Redis).
    #[arg(long, env = "FIREHOSE_JWT_SECRET")]
    jwt_secret: Option<String>,
    /// Follower counts to measure fan-out for (comma-separated).
    #[arg(long, default_value = "10000,100000")]
    followers: String,
    /// Seconds for the posts/s and reads/s phases.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Concurrent HTTP requests in those phases.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Which phases to run (comma-separated): fanout, posts, likes, reads,
    /// book, or all.
    #[arg(long, default_value = "all")]
    phases: String,
    /// The server's process id, for its CPU time per request in the `wrk`
    /// phase (from /proc).
    #[arg(long)]
    server_pid: Option<u32>,
}

impl Args {
    fn runs(&self, phase: &str) -> bool {
        self.phases
            .split(',')
            .any(|p| p.trim() == phase || p.trim() == "all")
    }
}

/// Waits until no committed write owes work (outbox and fan-out queue empty).
async fn drained(store: &Store) -> anyhow::Result<()> {
    while store.fanout().depth().await? > 0 || store.outbox().depth().await? > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Posts `n` statuses as `token`, 16 at a time.
async fn post_many(http: &reqwest::Client, base: &str, token: &str, n: usize, tag: &str) {
    futures::stream::iter(0..n)
        .map(|i| {
            http.post(format!("{base}/api/v1/statuses"))
                .bearer_auth(token)
                .json(&serde_json::json!({"message": format!("{tag} {i}")}))
                .send()
        })
        .buffer_unordered(16)
        .for_each(|_| async {})
        .await;
}

/// The phases measured against the book's code.
async fn book(
    args: &Args,
    store: &Store,
    jwt: &firehose::auth::Jwt,
    http: &reqwest::Client,
    base: &str,
) -> anyhow::Result<()> {
    // A fresh world per run: follows must change state.
    let run = firehose::model::now() as u64;
    let fans = users(store, &format!("bookfan{run}_"), 1000).await?;

    // Posts when each fans out to 1,000 followers: 8 authors with the
    // same 1,000 followers, one client posting in turn, then 16.
    let authors = users(store, &format!("bookauthor{run}_"), 8).await?;
    for a in &authors {
        follow_all(store, &fans, *a).await?;
    }
    let mut author_tokens = Vec::new();
    for a in &authors {
        author_tokens.push(token(store, jwt, *a).await?);
    }
    let author_tokens = Arc::new(author_tokens);
    for concurrency in [1, 16] {
        drained(store).await?;
        let t0 = Instant::now();
        let (h, b, t) = (http.clone(), base.to_string(), author_tokens.clone());
        let rate = hammer(concurrency, args.duration, move |i| {
            let (h, b, t) = (h.clone(), b.clone(), t.clone());
            async move {
                h.post(format!("{b}/api/v1/statuses"))
                    .bearer_auth(&t[i % t.len()])
                    .json(&serde_json::json!({"message": format!("to a thousand {i}")}))
                    .send()
                    .await
                    .is_ok_and(|r| r.status().as_u16() == 201)
            }
        })
        .await;
        drained(store).await?;
        let whole = t0.elapsed().as_secs_f64();
        let posted = rate * args.duration;
        println!(
            "book: posts fanning out to 1,000 followers each: {rate:.0}/s answered ({concurrency} concurrent); with every home written: {:.0}/s, {:.0} home writes/s (the book: 31/s)",
            posted / whole,
            posted * 1000.0 / whole
        );
    }

    // Follows that copy 1,000 statuses into the follower's home: one author
    // with 1,000 statuses, then fresh followers following it.
    let author = users(store, &format!("bookwriter{run}_"), 1).await?[0];
    let author_token = token(store, jwt, author).await?;
    post_many(http, base, &author_token, 1000, "backfill").await;
    drained(store).await?;
    let followers = users(store, &format!("bookfollower{run}_"), 6000).await?;
    let mut follower_tokens = Vec::new();
    for f in &followers {
        follower_tokens.push(token(store, jwt, *f).await?);
    }
    let follower_tokens = Arc::new(follower_tokens);
    let next = Arc::new(AtomicU64::new(0));
    for concurrency in [1, 16] {
        let (h, b, t, taken) = (
            http.clone(),
            base.to_string(),
            follower_tokens.clone(),
            next.clone(),
        );
        let rate = hammer(concurrency, args.duration, move |_| {
            let (h, b, t, next) = (h.clone(), b.clone(), t.clone(), taken.clone());
            async move {
                let Some(token) = t.get(next.fetch_add(1, Ordering::Relaxed) as usize) else {
                    return false;
                };
                h.post(format!("{b}/api/v1/users/{author}/follow"))
                    .bearer_auth(token)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        })
        .await;
        let used = next.load(Ordering::Relaxed).min(followers.len() as u64) as usize;
        let home_len: u64 = {
            let mut conn = redis::Client::open(args.redis_url.as_str())?
                .get_multiplexed_async_connection()
                .await?;
            redis::cmd("ZCARD")
                .arg(store.keys().home(followers[used.saturating_sub(1)]))
                .query_async(&mut conn)
                .await?
        };
        println!(
            "book: follows copying 1,000 statuses each: {rate:.0}/s ({concurrency} concurrent; the last follower's home holds {home_len}) (the book: 100/s){}",
            if used >= followers.len() { " — ran out of fresh followers" } else { "" }
        );
    }

    // Home reads, 30 per page, by wrk: a follower of all eight authors,
    // whose home is full.
    let reader = fans[0];
    let reader_token = token(store, jwt, reader).await?;
    let url = format!("{base}/api/v1/timelines/home?count=30");
    let cpu0 = args.server_pid.and_then(cpu_seconds);
    let out = tokio::process::Command::new("wrk")
        .args([
            "-t2",
            "-c64",
            &format!("-d{}s", args.duration.ceil() as u64),
        ])
        .args(["-H", &format!("Authorization: Bearer {reader_token}"), &url])
        .output()
        .await;
    let cpu1 = args.server_pid.and_then(cpu_seconds);
    match out {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let rps: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix("Requests/sec:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0.0);
            let requests: f64 = text
                .lines()
                .find_map(|l| {
                    l.split_once(" requests in ")
                        .map(|(n, _)| n.trim().to_string())
                })
                .and_then(|n| n.parse().ok())
                .unwrap_or(0.0);
            let per_request = match (cpu0, cpu1) {
                (Some(a), Some(b)) if requests > 0.0 => {
                    format!("; server CPU {:.1} µs per read", (b - a) * 1e6 / requests)
                }
                _ => String::new(),
            };
            let latency = text
                .lines()
                .find(|l| l.trim_start().starts_with("Latency"))
                .unwrap_or("")
                .trim()
                .to_string();
            println!(
                "book: home reads by wrk (-t2 -c64, 30 per page): {rps:.0}/s{per_request} ({latency}) (bar: 40,000/s)"
            );
        }
        Ok(out) => println!(
            "book: wrk failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => println!("book: home reads by wrk skipped ({e}; apt-get install wrk)"),
    }
    Ok(())
}

async fn follow_all(store: &Store, followers: &[u64], target: u64) -> anyhow::Result<()> {
    let results: Vec<_> = futures::stream::iter(followers.to_vec())
        .map(|f| async move {
            store
                .follows()
                .set(f, target, true, firehose::model::now())
                .await
        })
        .buffer_unordered(64)
        .collect()
        .await;
    for r in results {
        r?;
    }
    Ok(())
}

async fn token(store: &Store, jwt: &firehose::auth::Jwt, uid: u64) -> anyhow::Result<String> {
    let sid = store.sessions().create(uid, firehose::model::now()).await?;
    Ok(jwt.mint(uid, &sid, &["read", "write"], 3600).0)
}

/// Runs `make` concurrently for `secs`; returns completed successes per second.
async fn hammer<F, Fut>(concurrency: usize, secs: f64, make: F) -> f64
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let ok = Arc::new(AtomicU64::new(0));
    let stop = Instant::now() + Duration::from_secs_f64(secs);
    let tasks: Vec<_> = (0..concurrency)
        .map(|w| {
            let (ok, make) = (ok.clone(), make.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while Instant::now() < stop {
                    if make(w * 1_000_000 + i).await {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    ok.load(Ordering::Relaxed) as f64 / secs
}

/// Requests per second of `POST` then `DELETE /api/v1/statuses/{id}/{what}`
/// over every (user, status) pair in turn, so that each call changes state.
async fn toggles(
    http: &reqwest::Client,
    base: &str,
    pairs: &Arc<(Vec<String>, Vec<String>)>,
    what: &'static str,
    concurrency: usize,
    secs: f64,
) -> f64 {
    let (h, b, pairs) = (http.clone(), base.to_string(), pairs.clone());
    hammer(concurrency, secs, move |i| {
        let (h, b, pairs) = (h.clone(), b.clone(), pairs.clone());
        async move {
            let (tokens, sids) = &*pairs;
            let n = tokens.len() * sids.len();
            let (t, s) = (
                &tokens[i % tokens.len()],
                &sids[(i / tokens.len()) % sids.len()],
            );
            let method = if (i / n) % 2 == 0 {
                reqwest::Method::POST
            } else {
                reqwest::Method::DELETE
            };
            h.request(method, format!("{b}/api/v1/statuses/{s}/{what}"))
                .bearer_auth(t)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        }
    })
    .await
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut cfg = Config::defaults();
    cfg.redis_url = Some(args.redis_url.clone());
    cfg.jwt_secret = args.jwt_secret.clone();
    let store = Store::open(&args.redis_url, &cfg)?;
    let jwt = firehose::auth::Jwt::new(&store.sessions().jwt_secret(cfg.jwt_secret()).await?);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()?;
    let base = format!("http://{}", args.addr);
    let keys = store.keys().clone();

    if args.runs("book") {
        book(&args, &store, &jwt, &http, &base).await?;
    }
    let fanouts: Vec<usize> = if args.runs("fanout") {
        args.followers
            .split(',')
            .filter_map(|s| s.trim().parse::<usize>().ok())
            .collect()
    } else {
        Vec::new()
    };
    for n in fanouts {
        let celeb = users(&store, &format!("celeb{n}_"), 1).await?[0];
        let fans = users(&store, "fan_", n).await?;
        follow_all(&store, &fans, celeb).await?;
        let celeb_token = token(&store, &jwt, celeb).await?;
        let last_home = keys.home(*fans.last().unwrap_or(&celeb));
        let t0 = Instant::now();
        let resp: serde_json::Value = http
            .post(format!("{base}/api/v1/statuses"))
            .bearer_auth(&celeb_token)
            .json(&serde_json::json!({"message": format!("fan-out to {n}")}))
            .send()
            .await?
            .json()
            .await?;
        let post_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let sid = resp["id"].as_str().unwrap_or("0").to_string();
        let mut conn = redis::Client::open(args.redis_url.as_str())?
            .get_multiplexed_async_connection()
            .await?;
        loop {
            let depth = store.fanout().depth().await?;
            let score: Option<f64> = redis::cmd("ZSCORE")
                .arg(&last_home)
                .arg(&sid)
                .query_async(&mut conn)
                .await?;
            if depth == 0 && score.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let fanout_ms = t0.elapsed().as_secs_f64() * 1000.0;
        // The same ZADD + trim commands for the same homes, as a raw pipeline.
        let t1 = Instant::now();
        for chunk in fans.chunks(1000) {
            let mut pipe = redis::pipe();
            for f in chunk {
                pipe.zadd(keys.home(*f), "bench-raw", 1.0).ignore();
                pipe.zremrangebyrank(keys.home(*f), 0, -1001).ignore();
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
        let raw_ms = t1.elapsed().as_secs_f64() * 1000.0;
        for chunk in fans.chunks(1000) {
            let mut pipe = redis::pipe();
            for f in chunk {
                pipe.zrem(keys.home(*f), "bench-raw").ignore();
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
        println!(
            "fan-out to {n} followers: POST returned in {post_ms:.1} ms, all homes reached in {fanout_ms:.1} ms; raw pipelined ZADD+trim of the same homes: {raw_ms:.1} ms (ratio {:.2})",
            fanout_ms / raw_ms
        );
    }

    // Posts per second: a poster with 50 followers.
    let poster = users(&store, "poster_", 1).await?[0];
    let readers = users(&store, "reader_", 50).await?;
    follow_all(&store, &readers, poster).await?;
    let poster_token = token(&store, &jwt, poster).await?;
    for i in 0..40 {
        http.post(format!("{base}/api/v1/statuses"))
            .bearer_auth(&poster_token)
            .json(&serde_json::json!({"message": format!("seed {i} #bench")}))
            .send()
            .await?;
    }
    if args.runs("posts") {
        let (h, t, b) = (http.clone(), poster_token.clone(), base.clone());
        let posts = hammer(args.concurrency, args.duration, move |i| {
            let (h, t, b) = (h.clone(), t.clone(), b.clone());
            async move {
                h.post(format!("{b}/api/v1/statuses"))
                    .bearer_auth(&t)
                    .json(&serde_json::json!({"message": format!("bench post {i} #bench")}))
                    .send()
                    .await
                    .is_ok_and(|r| r.status().as_u16() == 201)
            }
        })
        .await;
        println!(
            "posts: {posts:.0}/s over HTTP ({} concurrent, 50 followers each, one hashtag)",
            args.concurrency
        );
        // The same with three hashtags and with none, alternating phases so that
        // drift on the shared machine hits both alike.
        let mut tagged = Vec::new();
        let mut plain = Vec::new();
        for round in 0..4 {
            for with_tags in [round % 2 == 0, round % 2 != 0] {
                let (h, t, b) = (http.clone(), poster_token.clone(), base.clone());
                let rate = hammer(args.concurrency, args.duration / 4.0, move |i| {
                    let (h, t, b) = (h.clone(), t.clone(), b.clone());
                    let message = if with_tags {
                        format!("bench post {i} #alpha #beta #gamma{}", i % 50)
                    } else {
                        format!("bench post {i} without tags")
                    };
                    async move {
                        h.post(format!("{b}/api/v1/statuses"))
                            .bearer_auth(&t)
                            .json(&serde_json::json!({ "message": message }))
                            .send()
                            .await
                            .is_ok_and(|r| r.status().as_u16() == 201)
                    }
                })
                .await;
                if with_tags {
                    tagged.push(rate);
                } else {
                    plain.push(rate);
                }
            }
        }
        let (tagged, plain) = (
            tagged.iter().sum::<f64>() / tagged.len() as f64,
            plain.iter().sum::<f64>() / plain.len() as f64,
        );
        println!(
            "posts with 3 hashtags: {tagged:.0}/s, without: {plain:.0}/s → hashtag timelines and trending take {:.1} µs more per post at saturation ({:.2}×)",
            1e6 / tagged - 1e6 / plain,
            plain / tagged
        );
    }
    if args.runs("likes") {
        // Likes: each call changes state (a like, later the same pair's unlike).
        let seeds: Vec<String> = {
            let r: Vec<serde_json::Value> = http
                .get(format!("{base}/api/v1/users/{poster}/statuses?count=40"))
                .send()
                .await?
                .json()
                .await?;
            r.iter()
                .filter_map(|s| s["id"].as_str().map(str::to_string))
                .collect()
        };
        let mut liker_tokens = Vec::new();
        for r in &readers {
            liker_tokens.push(token(&store, &jwt, *r).await?);
        }
        let pairs = Arc::new((liker_tokens, seeds));
        let likes = toggles(
            &http,
            &base,
            &pairs,
            "like",
            args.concurrency,
            args.duration,
        )
        .await;
        println!(
            "likes and unlikes: {likes:.0}/s over HTTP ({} concurrent)",
            args.concurrency
        );
        let reposts = toggles(
            &http,
            &base,
            &pairs,
            "repost",
            args.concurrency,
            args.duration,
        )
        .await;
        println!(
            "reposts and their undoing: {reposts:.0}/s over HTTP ({} concurrent)",
            args.concurrency
        );
    }
    if args.runs("reads") {
        let mut tokens = Vec::new();
        for r in &readers {
            tokens.push(token(&store, &jwt, *r).await?);
        }
        let shared = Arc::new(tokens.clone());
        let (h, b) = (http.clone(), base.clone());
        let reads = hammer(args.concurrency, args.duration, move |i| {
            let (h, b, tokens) = (h.clone(), b.clone(), shared.clone());
            async move {
                let t = &tokens[i % tokens.len()];
                match h
                    .get(format!("{b}/api/v1/timelines/home?count=30"))
                    .bearer_auth(t)
                    .send()
                    .await
                {
                    Ok(r) if r.status().is_success() => {
                        r.bytes().await.is_ok_and(|body| body.len() > 1000)
                    }
                    _ => false,
                }
            }
        })
        .await;
        println!("home timeline reads: {reads:.0}/s over HTTP (30 statuses per page, {} concurrent; this client shares the CPU)", args.concurrency);
        println!(
            "for a lighter client: wrk -t1 -c64 -d10s -H 'Authorization: Bearer {}' 'http://{}/api/v1/timelines/home?count=30'",
            tokens[0], args.addr
        );
    }
    Ok(())
}
