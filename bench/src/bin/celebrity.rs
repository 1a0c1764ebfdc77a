//! A celebrity's post: `--likers` distinct users like one status at
//! `--rate` likes a second (10,000 a minute by default) while its author's
//! user stream is open. Prints what the fan-in costs: Redis commands and
//! CPU per like and the server's CPU per like (idle taken out), the like's
//! answer times, the `notification` events the author's stream got, and
//! the author's list afterwards (its length, bounded at 1,000, its unread
//! count, the grouped page's first group, its keys' memory in Redis).
//!
//!   firehose serve ... & celebrity --addr 127.0.0.1:8080 --redis-url redis://127.0.0.1:6379

// A measurement tool: its figures go to stdout.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose_bench::procfs::{self, find_server};
use firehose_bench::redis_info;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

#[derive(Parser, Debug)]
struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// Redis URL of the server.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// The server's key prefix.
    #[arg(long, default_value = "fh")]
    key_prefix: String,
    /// Users who like the post, each once.
    #[arg(long, default_value_t = 10_000)]
    likers: usize,
    /// Likes a second.
    #[arg(long, default_value_t = 10_000.0 / 60.0)]
    rate: f64,
    /// Authors, each with one post, the likes taking them in turn (1: the
    /// celebrity; more: the same likes spread, to compare with). The first
    /// author's stream and list are the ones read.
    #[arg(long, default_value_t = 1)]
    authors: usize,
}

/// Redis's and the server's CPU seconds and Redis's commands, now.
async fn snap(
    redis: &mut redis::aio::MultiplexedConnection,
    server: u32,
) -> anyhow::Result<(redis_info::Node, f64, Instant)> {
    let node = redis_info::read(redis).await?;
    let cpu = procfs::cpu_seconds(server).unwrap_or(0.0);
    Ok((node, cpu, Instant::now()))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (store, jwt) = firehose_bench::users::open_store(&args.redis_url, &args.key_prefix).await?;
    let server = find_server().ok_or_else(|| anyhow::anyhow!("no `firehose serve` running"))?;
    let mut redis = redis::Client::open(args.redis_url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let tag = std::process::id();
    let authors =
        firehose_bench::users::tokens(&store, &jwt, &format!("celeb{tag}_"), args.authors.max(1))
            .await?;
    let (author, author_token) = authors[0].clone();
    let likers =
        firehose_bench::users::tokens(&store, &jwt, &format!("fan{tag}_"), args.likers).await?;
    let base = format!("http://{}", args.addr);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let mut sids = Vec::new();
    for (_, token) in &authors {
        let posted: Value = http
            .post(format!("{base}/api/v1/statuses"))
            .bearer_auth(token)
            .json(&serde_json::json!({"message": "a post the world likes"}))
            .send()
            .await?
            .json()
            .await?;
        let sid = posted["id"].as_str().unwrap_or_default().to_string();
        anyhow::ensure!(!sid.is_empty(), "the post failed: {posted}");
        sids.push(sid);
    }

    // The author's user stream: its notification events counted.
    let mut sock = firehose_bench::sse::open(&args.addr, "/api/v1/stream/user", &author_token, "")
        .await
        .ok_or_else(|| anyhow::anyhow!("the author's stream did not open"))?;
    let events = Arc::new(AtomicU64::new(0));
    let counted = events.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut tail = Vec::new();
        while let Ok(n) = sock.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&tail).to_string();
            let cut = text.rfind('\n').map_or(0, |i| i + 1);
            let found = text[..cut].matches("event: notification\n").count();
            counted.fetch_add(found as u64, Ordering::Relaxed);
            tail.drain(..cut);
        }
    });

    // Idle: what Redis and the server do with nothing asked.
    let a = snap(&mut redis, server).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let b = snap(&mut redis, server).await?;
    let idle_secs = b.2.duration_since(a.2).as_secs_f64();
    let idle = (
        (b.0.calls - a.0.calls) as f64 / idle_secs,
        (b.0.cpu - a.0.cpu) / idle_secs,
        (b.1 - a.1) / idle_secs,
    );

    // The likes, paced.
    let a = snap(&mut redis, server).await?;
    let start = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / args.rate);
    let mut tasks = Vec::with_capacity(likers.len());
    for (i, (_, token)) in likers.iter().enumerate() {
        tokio::time::sleep_until((start + gap * i as u32).into()).await;
        let (http, url, token) = (
            http.clone(),
            format!("{base}/api/v1/statuses/{}/like", sids[i % sids.len()]),
            token.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let ok = http
                .post(url)
                .bearer_auth(token)
                .send()
                .await
                .is_ok_and(|r| matches!(r.status().as_u16(), 200 | 201));
            (ok, t.elapsed())
        }));
    }
    let mut took = Vec::with_capacity(tasks.len());
    let mut answered = 0usize;
    for t in tasks {
        if let Ok((ok, d)) = t.await {
            answered += usize::from(ok);
            took.push(d);
        }
    }
    let span = start.elapsed().as_secs_f64();
    // The notifier batches for 20 ms; give the last likes time to land.
    let settle = Instant::now();
    while events.load(Ordering::Relaxed) < answered as u64
        && settle.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let b = snap(&mut redis, server).await?;
    let secs = b.2.duration_since(a.2).as_secs_f64();
    let n = answered.max(1) as f64;
    let calls = (b.0.calls - a.0.calls) as f64 - idle.0 * secs;
    let rcpu = (b.0.cpu - a.0.cpu - idle.1 * secs) * 1e6;
    let scpu = (b.1 - a.1 - idle.2 * secs) * 1e6;
    took.sort();
    let pct = |p: f64| {
        took.get(((took.len() as f64 * p) as usize).min(took.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "{answered} of {} likes answered in {span:.1} s ({:.0} a minute); answer p50 {:.1} ms, p99 {:.1} ms",
        likers.len(),
        answered as f64 / span * 60.0,
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3
    );
    println!(
        "per like: {:.1} Redis commands, {:.0} µs Redis CPU, {:.0} µs server CPU (idle taken out)",
        calls / n,
        rcpu / n,
        scpu / n
    );
    println!(
        "the author's stream: {} notification events",
        events.load(Ordering::Relaxed)
    );

    // The author's list.
    let get = |path: String| {
        let (http, token) = (http.clone(), author_token.clone());
        async move {
            let t = Instant::now();
            let v: Value = http
                .get(path)
                .bearer_auth(token)
                .send()
                .await?
                .json()
                .await?;
            anyhow::Ok((v, t.elapsed()))
        }
    };
    let mut listed = 0usize;
    let mut cursor: Option<String> = None;
    loop {
        let q = cursor
            .as_ref()
            .map_or(String::new(), |c| format!("&cursor={c}"));
        let (page, _) = get(format!("{base}/api/v1/notifications?count=200{q}")).await?;
        listed += page["notifications"].as_array().map_or(0, Vec::len);
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let (unread, _) = get(format!("{base}/api/v1/notifications/unread")).await?;
    let (grouped, grouped_took) = get(format!("{base}/api/v1/notifications?grouped=true")).await?;
    let first = &grouped["notifications"][0];
    let mut memory = 0u64;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("*{author}*"))
        .query_async(&mut redis)
        .await?;
    let keys: Vec<String> = keys.into_iter().filter(|k| k.contains("notif")).collect();
    for k in &keys {
        let m: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(k)
            .query_async(&mut redis)
            .await?;
        memory += m.unwrap_or(0);
    }
    println!(
        "the author's list: {listed} notifications listed, unread {}, grouped first group: {} {} accounts shown, count {} ({:.1} ms); {} keys, {:.0} KiB in Redis",
        unread["count"],
        first["type"],
        first["accounts"].as_array().map_or(0, Vec::len),
        first["count"],
        grouped_took.as_secs_f64() * 1e3,
        keys.len(),
        memory as f64 / 1024.0
    );
    Ok(())
}
