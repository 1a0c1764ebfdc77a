//! How a stopping server's clients come back: `--clients` SSE streams on
//! server `--from`; the server is sent SIGTERM (`--stop-pid`); each client
//! waits what its `disconnect` told it (the `retry:` line, as a browser's
//! EventSource does; at once when there is none) and opens the same stream
//! on server `--to`. Prints the reconnections the second server saw per
//! second after the stop, and the busiest second.
//!
//! ```sh
//! cargo build --release && bench/reconnect_spread.sh
//! ```

// Examples are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose::config::Config;
use firehose::store::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::Mutex;

#[derive(Parser)]
struct Args {
    /// The server that stops.
    #[arg(long, default_value = "127.0.0.1:8080")]
    from: String,
    /// The server its clients go to.
    #[arg(long, default_value = "127.0.0.1:8081")]
    to: String,
    /// The first server's process id (sent SIGTERM).
    #[arg(long)]
    stop_pid: u32,
    /// Streams.
    #[arg(long, default_value_t = 5000)]
    clients: usize,
    /// The servers' Redis.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// Seconds to wait for every client to come back.
    #[arg(long, default_value_t = 60)]
    window: u64,
}

/// Reads a stream until its `disconnect`; the `retry:` it carried (ms).
async fn until_disconnect(mut sock: tokio::net::TcpStream) -> Option<Option<u64>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(at) = text.find("event: disconnect") {
            let block_start = text[..at].rfind("\n\n").map_or(0, |i| i + 2);
            let retry = text[block_start..at]
                .lines()
                .find_map(|l| l.strip_prefix("retry: "))
                .and_then(|v| v.trim().parse().ok());
            return Some(retry);
        }
        if buf.len() > 1 << 20 {
            buf.drain(..buf.len() - 4096);
        }
    }
}

/// Whether the socket answered 200.
async fn answered_ok(sock: &mut tokio::net::TcpStream) -> bool {
    let mut head = [0u8; 12];
    sock.read_exact(&mut head).await.is_ok() && &head[9..12] == b"200"
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut cfg = Config::defaults();
    cfg.redis_url = Some(args.redis_url.clone());
    let store = Store::open(&args.redis_url, &cfg)?;
    let jwt = firehose::auth::Jwt::new(&store.sessions().jwt_secret(None).await?);
    let tokens =
        firehose_bench::users::tokens(&store, &jwt, "spread_", args.clients.div_ceil(5)).await?;
    let path = "/api/v1/stream/sample?rate=0.01";
    let mut open = Vec::with_capacity(args.clients);
    for i in 0..args.clients {
        let token = &tokens[i / 5].1;
        let mut sock = firehose_bench::sse::open(&args.from, path, token, "")
            .await
            .ok_or_else(|| anyhow::anyhow!("stream {i} did not open"))?;
        anyhow::ensure!(answered_ok(&mut sock).await, "stream {i} was refused");
        open.push(sock);
    }
    println!("{} streams open on {}", open.len(), args.from);
    let arrivals = Arc::new(Mutex::new(Vec::with_capacity(args.clients)));
    let stopped = Instant::now();
    let mut tasks = Vec::new();
    for (i, sock) in open.into_iter().enumerate() {
        let (to, token, arrivals) = (args.to.clone(), tokens[i / 5].1.clone(), arrivals.clone());
        tasks.push(tokio::spawn(async move {
            let retry = until_disconnect(sock).await.flatten();
            if let Some(ms) = retry {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if let Some(mut s) = firehose_bench::sse::open(&to, path, &token, "").await {
                if answered_ok(&mut s).await {
                    arrivals
                        .lock()
                        .await
                        .push((stopped.elapsed(), retry.is_some()));
                    // Held open until the end, as a real client would.
                    let _ =
                        tokio::time::timeout(Duration::from_secs(120), s.read(&mut [0u8; 1])).await;
                }
            }
        }));
    }
    // SIGTERM: the graceful stop a deploy sends.
    let _ = std::process::Command::new("kill")
        .arg(args.stop_pid.to_string())
        .status();
    let deadline = Instant::now() + Duration::from_secs(args.window);
    while arrivals.lock().await.len() < args.clients && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let got = arrivals.lock().await.clone();
    let hinted = got.iter().filter(|(_, h)| *h).count();
    let mut per_second = vec![0usize; args.window as usize + 1];
    for (at, _) in &got {
        let s = (at.as_secs() as usize).min(per_second.len() - 1);
        per_second[s] += 1;
    }
    let last = per_second.iter().rposition(|&n| n > 0).unwrap_or(0);
    println!(
        "reconnected {} of {} ({} with a retry hint)",
        got.len(),
        args.clients,
        hinted
    );
    println!("per second after the stop: {:?}", &per_second[..=last]);
    println!(
        "busiest second: {} reconnections",
        per_second.iter().max().copied().unwrap_or(0)
    );
    for t in tasks {
        t.abort();
    }
    Ok(())
}
