//! How soon a filter-rule change reaches an open search stream: a user
//! with a search stream open adds a rule naming a fresh word, then a
//! writer posts that word every 2 ms; the time from the rule's answer to
//! the sending of the first post the stream delivers bounds the delay (to
//! within 2 ms and one post's latency). Repeated `--rounds` times; prints
//! the median and the worst.
//!
//! ```sh
//! FIREHOSE_RATE_LIMITS=off cargo run --release -- serve &
//! cargo run --release -p firehose-bench --bin rule_reach
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose_bench::users::session;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

#[derive(Parser)]
struct Args {
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// Rule changes measured.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let http = reqwest::Client::new();
    let base = format!("http://{}", args.addr);
    let tag = std::process::id();
    let analyst = session(&http, &base, &format!("reach_analyst_{tag}"))
        .await?
        .1;
    let writer = session(&http, &base, &format!("reach_writer_{tag}"))
        .await?
        .1;
    let Some(mut sse) =
        firehose_bench::sse::open(&args.addr, "/api/v1/stream/search", &analyst, "").await
    else {
        anyhow::bail!("could not open the search stream");
    };
    let mut reaches = Vec::new();
    let mut first_posts = 0;
    let mut buf = Vec::new();
    for round in 0..args.rounds {
        let word = format!("probe{tag}x{round}");
        let r = http
            .post(format!("{base}/api/v1/stream/rules"))
            .bearer_auth(&analyst)
            .json(&json!({"add": [{"value": word}]}))
            .send()
            .await?;
        anyhow::ensure!(r.status().is_success(), "adding a rule: {}", r.status());
        let answered = Instant::now();
        // Posts of the word every 2 ms, each numbered, with when it was sent.
        let sent: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let poster = {
            let (http, base, writer, word) =
                (http.clone(), base.clone(), writer.clone(), word.clone());
            let (sent, stop) = (sent.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) && n < 2000 {
                    let at = Instant::now();
                    sent.lock().unwrap().push(at);
                    let _ = http
                        .post(format!("{base}/api/v1/statuses"))
                        .bearer_auth(&writer)
                        .json(&json!({"message": format!("{word} n{n}")}))
                        .send()
                        .await;
                    n += 1;
                    tokio::time::sleep_until((at + Duration::from_millis(2)).into()).await;
                }
            })
        };
        // The first delivered post names its number.
        let first: usize = loop {
            let mut chunk = [0u8; 8192];
            let n = tokio::time::timeout(Duration::from_secs(10), sse.read(&mut chunk)).await??;
            anyhow::ensure!(n > 0, "the stream ended");
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf);
            if let Some(at) = text.find(&format!("{word} n")) {
                let rest = &text[at + word.len() + 2..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(k) = digits.parse() {
                    buf.clear();
                    break k;
                }
            }
        };
        stop.store(true, Ordering::Relaxed);
        let _ = poster.await;
        if first == 0 {
            first_posts += 1;
        }
        let at = sent.lock().unwrap()[first];
        reaches.push(at.saturating_duration_since(answered).as_secs_f64() * 1000.0);
        // Let the last posts drain before the next round.
        tokio::time::sleep(Duration::from_millis(200)).await;
        buf.clear();
    }
    reaches.sort_by(f64::total_cmp);
    println!(
        "rule change to an open search stream, {} rounds: median {:.1} ms, worst {:.1} ms (each within 2 ms plus one post's latency); the first post sent after the answer was delivered in {first_posts} of them",
        reaches.len(),
        reaches[reaches.len() / 2],
        reaches[reaches.len() - 1]
    );
    Ok(())
}
