//! How long deleting a large account takes, and what it does to other
//! writes meanwhile: one account with `--statuses` statuses and
//! `--followers` followers is deleted (`DELETE /api/v1/me`) while another
//! user posts every 20 ms; prints the time to the answer, the time until
//! the account's last key is gone, and the other user's post latency before
//! and during the deletion.
//!
//! ```sh
//! FIREHOSE_RATE_LIMITS=off cargo run --release -- serve --redis-url redis://127.0.0.1:6390 &
//! cargo run --release -p firehose-bench --bin delete_account -- --redis-url redis://127.0.0.1:6390
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose::config::Config;
use firehose::store::Store;
use firehose_bench::users::session;
use firehose_bench::users::users;
use futures::StreamExt;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// The server's Redis.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// Key prefix.
    #[arg(long, default_value = "fh")]
    key_prefix: String,
    /// Statuses of the account deleted.
    #[arg(long, default_value_t = 10_000)]
    statuses: usize,
    /// Its followers.
    #[arg(long, default_value_t = 10_000)]
    followers: usize,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut cfg = Config::defaults();
    cfg.redis_url = Some(args.redis_url.clone());
    cfg.key_prefix = args.key_prefix.clone();
    let store = Store::open(&args.redis_url, &cfg)?;
    let http = reqwest::Client::new();
    let base = format!("http://{}", args.addr);
    let tag = std::process::id();
    let (uid, token) = session(&http, &base, &format!("doomed_{tag}")).await?;
    let (_, writer) = session(&http, &base, &format!("bystander_{tag}")).await?;

    let started = Instant::now();
    // Statuses first, then the follows (each backfills the newest 1,000
    // into the follower's home): the state a long-followed account is in,
    // without fanning every post out to every follower.
    futures::stream::iter(0..args.statuses)
        .map(|i| {
            let req = http
                .post(format!("{base}/api/v1/statuses"))
                .bearer_auth(&token)
                .json(&json!({"message": format!("doomed status {i} #doomed")}));
            async move { req.send().await.map(|r| r.status().as_u16()) }
        })
        .buffer_unordered(32)
        .for_each(|_| async {})
        .await;
    let fans = users(&store, &format!("fan{tag}_"), args.followers).await?;
    futures::stream::iter(fans.iter().copied())
        .map(|f| {
            let store = store.clone();
            async move {
                store
                    .follows()
                    .set(f, uid, true, firehose::model::now())
                    .await
            }
        })
        .buffer_unordered(64)
        .for_each(|_| async {})
        .await;
    println!(
        "account {uid}: {} followers, {} statuses, made in {:.1}s",
        args.followers,
        args.statuses,
        started.elapsed().as_secs_f64()
    );

    // Another user posts every 20 ms throughout.
    let latencies: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
    let clock = Instant::now();
    let poster = {
        let (http, base, lat) = (http.clone(), base.clone(), latencies.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            for i in 0.. {
                tick.tick().await;
                let t = Instant::now();
                let ok = http
                    .post(format!("{base}/api/v1/statuses"))
                    .bearer_auth(&writer)
                    .json(&json!({"message": format!("meanwhile {i}")}))
                    .send()
                    .await
                    .is_ok();
                if ok {
                    let at = clock.elapsed().as_secs_f64();
                    lat.lock()
                        .unwrap()
                        .push((at, t.elapsed().as_secs_f64() * 1000.0));
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(5)).await;
    let t0 = clock.elapsed().as_secs_f64();
    let asked = Instant::now();
    let status = http
        .delete(format!("{base}/api/v1/me"))
        .bearer_auth(&token)
        .json(&json!({"password": "password123"}))
        .send()
        .await?
        .status();
    let answered = asked.elapsed().as_secs_f64();
    let user_key = store.keys().user(uid);
    let client = redis::Client::open(args.redis_url.as_str())?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    loop {
        let exists: bool = redis::cmd("EXISTS")
            .arg(&user_key)
            .query_async(&mut conn)
            .await?;
        if !exists {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done = asked.elapsed().as_secs_f64();
    let t1 = clock.elapsed().as_secs_f64();
    poster.abort();
    let lat = latencies.lock().unwrap().clone();
    let mut before: Vec<f64> = lat
        .iter()
        .filter(|(at, _)| *at < t0)
        .map(|(_, l)| *l)
        .collect();
    let mut during: Vec<f64> = lat
        .iter()
        .filter(|(at, _)| *at >= t0 && *at <= t1)
        .map(|(_, l)| *l)
        .collect();
    before.sort_by(f64::total_cmp);
    during.sort_by(f64::total_cmp);
    println!("DELETE /api/v1/me answered {status} in {answered:.2}s; the account's last key went after {done:.1}s");
    println!(
        "another user's posts: before p50 {:.1} ms, p99 {:.1} ms ({} posts); during p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} posts)",
        percentile(&before, 0.5),
        percentile(&before, 0.99),
        before.len(),
        percentile(&during, 0.5),
        percentile(&during, 0.99),
        during.last().copied().unwrap_or(0.0),
        during.len()
    );
    Ok(())
}
