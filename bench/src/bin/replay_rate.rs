//! Replay throughput: how fast a filter stream replays `count=1000` and a
//! whole buffer by `since=0`, as events/s, with every replayed event judged
//! for what its reader may see now. Fills the buffer first with
//! `--statuses` statuses by `--authors` users (posted through the API,
//! every fourth geotagged), then opens NDJSON streams and reads them until
//! the replay is done (`--runs` each, the median printed).
//!
//! ```sh
//! FIREHOSE_RATE_LIMITS=off cargo run --release -- serve --redis-url redis://127.0.0.1:6390 &
//! cargo run --release -p firehose-bench --bin replay_rate -- --statuses 100000
//! ```

// Tools print their results.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose_bench::users::session;
use futures::StreamExt;
use serde_json::json;
use std::time::Instant;

#[derive(Parser)]
struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// Statuses posted before measuring (0: measure the buffer as it is).
    #[arg(long, default_value_t = 100_000)]
    statuses: usize,
    /// Users who post them.
    #[arg(long, default_value_t = 100)]
    authors: usize,
    /// Runs of each replay.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Every this many statuses carry the word `zebra` as well (0: none): a
    /// word in every block of the history but in few of its statuses.
    #[arg(long, default_value_t = 0)]
    rare_every: usize,
    /// Only the replays whose label starts with this (`since=0, track`:
    /// the catch-up alone).
    #[arg(long, default_value = "")]
    only: String,
}

/// Reads an NDJSON stream until it has been quiet for 300 ms after its
/// replay: (events, seconds until the last one).
async fn replay(http: &reqwest::Client, url: &str, token: &str) -> anyhow::Result<(usize, f64)> {
    let started = Instant::now();
    let resp = http
        .get(url)
        .bearer_auth(token)
        .header("accept", "application/x-ndjson")
        .send()
        .await?;
    let mut body = resp.bytes_stream();
    let (mut events, mut last) = (0usize, 0.0f64);
    // The start of a line a chunk ended in, so that a line split across
    // chunks is counted once.
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let chunk = tokio::time::timeout(std::time::Duration::from_millis(300), body.next()).await;
        let Ok(Some(Ok(chunk))) = chunk else { break };
        partial.extend_from_slice(&chunk);
        let Some(end) = partial.iter().rposition(|b| *b == b'\n') else {
            continue;
        };
        events += partial[..end]
            .split(|b| *b == b'\n')
            .filter(|line| line.starts_with(b"{\"id\""))
            .count();
        partial.drain(..=end);
        last = started.elapsed().as_secs_f64();
    }
    Ok((events, last))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let http = reqwest::Client::new();
    let base = format!("http://{}", args.addr);
    let tag = std::process::id();
    let reader = session(&http, &base, &format!("reader_{tag}")).await?.1;
    let mut authors = Vec::new();
    for i in 0..args.authors.max(1) {
        authors.push(session(&http, &base, &format!("author{tag}_{i}")).await?.1);
    }
    let started = Instant::now();
    futures::stream::iter(0..args.statuses)
        .map(|i| {
            let rare = args.rare_every > 0 && i % args.rare_every == 0;
            let message = format!(
                "replayed status {i} #bench{}",
                if rare { " zebra" } else { "" }
            );
            let mut body = json!({"message": message});
            if i % 4 == 0 {
                body["lat"] = json!(48.0 + (i % 100) as f64 / 100.0);
                body["lon"] = json!(2.0);
            }
            let req = http
                .post(format!("{base}/api/v1/statuses"))
                .bearer_auth(&authors[i % authors.len()])
                .json(&body);
            async move { req.send().await.map(|r| r.status().as_u16()) }
        })
        .buffer_unordered(32)
        .for_each(|_| async {})
        .await;
    if args.statuses > 0 {
        println!(
            "posted {} statuses in {:.1}s",
            args.statuses,
            started.elapsed().as_secs_f64()
        );
    }
    for (what, path) in [
        (
            "count=1000, track",
            "/api/v1/stream/filter?track=replayed&count=1000",
        ),
        (
            "since=0, track",
            "/api/v1/stream/filter?track=replayed&since=0",
        ),
        (
            "since=0, locations",
            "/api/v1/stream/filter?locations=1,47,3,50&since=0",
        ),
    ] {
        if !what.starts_with(args.only.as_str()) {
            continue;
        }
        let mut rates = Vec::new();
        let mut n = 0;
        for _ in 0..args.runs.max(1) {
            let (events, secs) = replay(&http, &format!("{base}{path}"), &reader).await?;
            n = events;
            rates.push(events as f64 / secs.max(1e-6));
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "{what}: {n} events replayed, median {:.0} events/s (of {} runs)",
            rates[rates.len() / 2],
            rates.len()
        );
    }
    Ok(())
}
