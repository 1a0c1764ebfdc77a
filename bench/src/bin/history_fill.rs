//! Fills a server's replay buffer with millions of synthetic status events,
//! for measuring the history at a size the API would take hours to post:
//! `--events` status events (`filler status <i> #bench`, by statuses that
//! do not exist, so no reader may see them) appended straight to the
//! buffer's stream, with every `--every`-th one a copy of a real status
//! event whose message holds `--needle` (those posted before, in order;
//! their own entries are deleted, so each real status has one event). A
//! server with a history started afterwards archives the whole buffer.
//!
//! ```sh
//! # 1,000 real statuses holding `zebra`, through a server without a history:
//! replay_rate --addr 127.0.0.1:8261 --statuses 1000 --rare-every 1 --runs 1 --only none
//! history_fill --redis-url redis://127.0.0.1:6561 --events 10000000 --every 10000 --needle zebra
//! ```
//! (bench/history_10m.sh runs it all.)

// Tools print their results.
#![allow(clippy::print_stdout)]

use clap::Parser;
use std::time::Instant;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// The server's key prefix.
    #[arg(long, default_value = "fh")]
    key_prefix: String,
    /// Synthetic events appended.
    #[arg(long, default_value_t = 10_000_000)]
    events: u64,
    /// Every this many events, a copy of a real status holding the needle.
    #[arg(long, default_value_t = 10_000)]
    every: u64,
    /// The word the real statuses hold.
    #[arg(long, default_value = "zebra")]
    needle: String,
}

/// Entries per pipeline.
const BATCH: u64 = 5_000;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // The log in one shard (the servers run with `--log-shards 1`).
    let key = firehose::store::keys::Keys::new(&args.key_prefix)
        .with_log_shards(1)
        .log_events(0);
    let client = redis::Client::open(args.redis_url.as_str())?;
    let mut conn = client.get_multiplexed_async_connection().await?;

    // The real statuses holding the needle, oldest first; their entries go.
    let rows: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
        .arg(&key)
        .arg("-")
        .arg("+")
        .query_async(&mut conn)
        .await?;
    let mut needles = Vec::new();
    let mut gone = Vec::new();
    let mut last_ms = 0u64;
    for (id, fields) in &rows {
        last_ms = last_ms.max(id.split('-').next().unwrap_or("0").parse()?);
        for kv in fields.chunks(2) {
            if kv.len() == 2
                && kv[1].starts_with("{\"type\":\"status\"")
                && kv[1].contains(&args.needle)
            {
                needles.push(kv[1].clone());
                gone.push(id.clone());
            }
        }
    }
    anyhow::ensure!(
        !needles.is_empty(),
        "no status in the buffer holds {:?}",
        args.needle
    );
    for ids in gone.chunks(1000) {
        let _: u64 = redis::cmd("XDEL")
            .arg(&key)
            .arg(ids)
            .query_async(&mut conn)
            .await?;
    }

    // Synthetic events after every real one: 1,000 a millisecond.
    let started = Instant::now();
    let first_ms = last_ms + 1;
    let mut used = 0usize;
    let mut i = 0u64;
    while i < args.events {
        let mut pipe = redis::pipe();
        for n in i..(i + BATCH).min(args.events) {
            let at = (first_ms + n / 1000) as f64 / 1000.0;
            let body = if n % args.every == args.every - 1 && used < needles.len() {
                used += 1;
                needles[used - 1].clone()
            } else {
                format!(
                    "{{\"type\":\"status\",\"at\":{at},\"status\":{{\"id\":\"{}\",\"uid\":\"1\",\"login\":\"filler\",\"message\":\"filler status {n} #bench\",\"posted\":{at},\"hashtags\":[\"bench\"],\"mentions\":[],\"likes\":0,\"reposts\":0,\"replies\":0}}}}",
                    9_000_000_000_000_000u64 + n
                )
            };
            pipe.cmd("XADD")
                .arg(&key)
                .arg(format!("{}-{}", first_ms + n / 1000, n % 1000))
                .arg("e")
                .arg(body)
                .ignore();
        }
        let () = pipe.query_async(&mut conn).await?;
        i = (i + BATCH).min(args.events);
    }
    println!(
        "appended {} events ({} copies of real statuses holding {:?}, their own entries deleted) in {:.1}s",
        args.events,
        used,
        args.needle,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
