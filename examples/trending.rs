//! An analytics consumer: tails the firehose over SSE and prints the trending
//! hashtags of every window (a minute by default). When the connection drops
//! it reconnects with `Last-Event-ID`, so no event is counted twice or lost
//! while it is still in the server's replay buffer.
//!
//! ```sh
//! TOKEN=$(cargo run -q -- token --user 1 --scope read --scope firehose | sed 's/.*"token":"\([^"]*\)".*/\1/')
//! cargo run --example trending -- --token "$TOKEN"
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use futures::StreamExt;
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Server base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// A token with the firehose scope.
    #[arg(long, env = "TOKEN")]
    token: String,
    /// Seconds per window.
    #[arg(long, default_value_t = 60.0)]
    window: f64,
    /// Hashtags printed per window.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Exit after this many statuses (0: run forever).
    #[arg(long, default_value_t = 0)]
    max_events: usize,
}

fn report(counts: &mut HashMap<String, u64>, top: usize) {
    let mut ranked: Vec<(String, u64)> = counts.drain().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let line: Vec<String> = ranked
        .iter()
        .take(top)
        .map(|(t, n)| format!("#{t} {n}"))
        .collect();
    println!(
        "trending: {}",
        if line.is_empty() {
            "(none)".to_string()
        } else {
            line.join(", ")
        }
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let http = reqwest::Client::new();
    let mut last_id: Option<String> = None;
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut window_end = Instant::now() + Duration::from_secs_f64(args.window);
    let mut seen = 0usize;
    loop {
        let mut req = http
            .get(format!("{}/api/v1/stream/firehose", args.url))
            .bearer_auth(&args.token);
        if let Some(id) = &last_id {
            req = req.header("Last-Event-ID", id);
        }
        let resp = match req.send().await {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => anyhow::bail!("the server refused the stream: {}", r.status()),
            Err(e) => {
                eprintln!("connect failed ({e}); retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        println!(
            "-- connected{}",
            last_id
                .as_ref()
                .map(|i| format!(", resuming after {i}"))
                .unwrap_or_default()
        );
        let mut body = resp.bytes_stream();
        let mut buf = String::new();
        loop {
            let chunk = tokio::time::timeout_at(window_end.into(), body.next()).await;
            if Instant::now() >= window_end {
                report(&mut counts, args.top);
                window_end += Duration::from_secs_f64(args.window);
            }
            let chunk = match chunk {
                Err(_) => continue,
                Ok(Some(Ok(c))) => c,
                Ok(_) => break,
            };
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) else {
                    continue;
                };
                let v: Value = serde_json::from_str(data)?;
                if let Some(id) = v["id"].as_str() {
                    last_id = Some(id.to_string());
                }
                if v["type"] == "status" {
                    seen += 1;
                    for tag in v["status"]["hashtags"].as_array().into_iter().flatten() {
                        *counts
                            .entry(tag.as_str().unwrap_or("").to_lowercase())
                            .or_default() += 1;
                    }
                    if args.max_events > 0 && seen >= args.max_events {
                        report(&mut counts, args.top);
                        return Ok(());
                    }
                }
            }
        }
        println!("-- stream ended; reconnecting");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
