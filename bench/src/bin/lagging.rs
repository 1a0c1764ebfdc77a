//! Slow consumers beside a live load: K SSE firehose clients that read at a
//! fraction of the event rate (so they fall behind and lag), run beside
//! `loadgen --mode post` (whose statuses say `load event <n>`). When the
//! load ends (`--duration`), they read as fast as they can until their
//! stream has been quiet for 5 s, and the tool reports what each got: the
//! events once and in order or not, the warnings, disconnects, and the
//! server's RSS while they lagged.
//!
//! ```sh
//! target/release/lagging --addr 127.0.0.1:8080 --clients 100 --rate 100 --pace 0.1 --duration 180 &
//! target/release/loadgen --addr 127.0.0.1:8080 --mode post --clients 1000 --rate 100 --duration 180
//! ```
//! (`bench/lagging.sh` runs both, with and without the slow clients.)

// Measurement tools are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose_bench::procfs::{find_server, stats};
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
    /// Slow clients.
    #[arg(long, default_value_t = 100)]
    clients: usize,
    /// The load's events per second.
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// The share of the event rate each slow client reads.
    #[arg(long, default_value_t = 0.1)]
    pace: f64,
    /// Seconds of slow reading (the load's duration), then fast.
    #[arg(long, default_value_t = 180.0)]
    duration: f64,
    /// Each slow client's socket receive buffer, bytes (a small one makes
    /// it lag sooner; the kernel's default lets a socket hold megabytes).
    #[arg(long, default_value_t = 16 * 1024)]
    rcvbuf: u32,
    /// The server's pid (default: found in /proc by its command line).
    #[arg(long)]
    server_pid: Option<u32>,
}

/// What one slow client saw.
#[derive(Debug, Default)]
struct Seen {
    /// The `n` of each `load event <n>` status, in the order received.
    events: Vec<u64>,
    lagging: u32,
    caught_up: u32,
    resume_gaps: u32,
    disconnects: u32,
    ended_early: bool,
}

/// One slow client: reads `pace_eps` events a second until `fast_at`, then
/// as fast as it can until 5 s pass with nothing.
async fn slow_client(
    addr: String,
    token: String,
    rcvbuf: u32,
    pace_eps: f64,
    fast_at: Instant,
) -> Seen {
    let mut seen = Seen::default();
    let Ok(socket) = tokio::net::TcpSocket::new_v4() else {
        seen.ended_early = true;
        return seen;
    };
    let _ = socket.set_recv_buffer_size(rcvbuf);
    let Ok(addr_parsed) = addr.parse() else {
        seen.ended_early = true;
        return seen;
    };
    let Ok(mut sock) = socket.connect(addr_parsed).await else {
        seen.ended_early = true;
        return seen;
    };
    let req = format!(
        "GET /api/v1/stream/firehose HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    if tokio::io::AsyncWriteExt::write_all(&mut sock, req.as_bytes())
        .await
        .is_err()
    {
        seen.ended_early = true;
        return seen;
    }
    let mut buf = vec![0u8; 2048];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let quiet = if Instant::now() < fast_at {
            Duration::from_secs(3600)
        } else {
            Duration::from_secs(5)
        };
        let n = match tokio::time::timeout(quiet, sock.read(&mut buf)).await {
            Err(_) => break,
            Ok(Ok(n)) if n > 0 => n,
            Ok(_) => {
                seen.ended_early = true;
                break;
            }
        };
        pending.extend_from_slice(&buf[..n]);
        let mut got = 0usize;
        let mut start = 0;
        while let Some(pos) = pending[start..].iter().position(|b| *b == b'\n') {
            let line = &pending[start..start + pos];
            start += pos + 1;
            let Some(data) = line.strip_prefix(b"data: ") else {
                continue;
            };
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
                continue;
            };
            match (v["type"].as_str(), v["code"].as_str()) {
                (Some("status"), _) => {
                    let n = v["status"]["message"]
                        .as_str()
                        .and_then(|m| m.strip_prefix("load event "))
                        .and_then(|n| n.parse().ok());
                    if let Some(n) = n {
                        seen.events.push(n);
                        got += 1;
                    }
                }
                (Some("warning"), Some("lagging")) => seen.lagging += 1,
                (Some("warning"), Some("caught_up")) => seen.caught_up += 1,
                (Some("warning"), Some("resume_gap")) => seen.resume_gaps += 1,
                (Some("disconnect"), _) => seen.disconnects += 1,
                _ => {}
            }
        }
        pending.drain(..start);
        if got > 0 && Instant::now() < fast_at {
            tokio::time::sleep(Duration::from_secs_f64(got as f64 / pace_eps)).await;
        }
    }
    seen
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (store, jwt) = firehose_bench::users::open_store(&args.redis_url, "fh").await?;
    let tokens =
        firehose_bench::users::tokens(&store, &jwt, "lagging_", args.clients.div_ceil(5)).await?;
    let pid = args.server_pid.or_else(find_server);
    let rss = || pid.and_then(stats).map(|s| s.rss_kib);
    let before = rss();
    let fast_at = Instant::now() + Duration::from_secs_f64(args.duration);
    let pace_eps = (args.rate * args.pace).max(0.01);
    let clients: Vec<_> = (0..args.clients)
        .map(|i| {
            let token = tokens[i / 5].1.clone();
            tokio::spawn(slow_client(
                args.addr.clone(),
                token,
                args.rcvbuf,
                pace_eps,
                fast_at,
            ))
        })
        .collect();
    // The server's RSS while the clients read slowly: its peak, sampled.
    let mut peak = 0;
    while Instant::now() < fast_at {
        peak = peak.max(rss().unwrap_or(0));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut all = Vec::new();
    for c in clients {
        all.push(c.await.unwrap_or_default());
    }
    let newest = all
        .iter()
        .flat_map(|s| s.events.iter().copied())
        .max()
        .unwrap_or(0);
    let (mut whole, mut lost, mut dup, mut disorder) = (0, 0u64, 0u64, 0u64);
    for s in &all {
        // Each client should hold every event from its first to the newest.
        let first = s.events.first().copied().unwrap_or(newest + 1);
        let mut sorted = s.events.clone();
        disorder += s.events.windows(2).filter(|w| w[1] <= w[0]).count() as u64;
        sorted.sort_unstable();
        let unique = {
            let mut u = sorted.clone();
            u.dedup();
            u
        };
        dup += (sorted.len() - unique.len()) as u64;
        let expected = newest + 1 - first;
        lost += expected.saturating_sub(unique.len() as u64);
        if unique.len() as u64 == expected && sorted.len() == unique.len() {
            whole += 1;
        }
    }
    let sum = |f: fn(&Seen) -> u32| all.iter().map(f).sum::<u32>();
    println!(
        "slow clients: {} reading {:.1} events/s for {:.0}s, then fast",
        args.clients, pace_eps, args.duration
    );
    println!(
        "whole (every event from its first to #{newest}, once, in order): {whole}/{}; lost {lost}, duplicated {dup}, out of order {disorder}",
        all.len()
    );
    println!(
        "warnings: lagging {}, caught_up {}, resume_gap {}; disconnects {}, ended early {}",
        sum(|s| s.lagging),
        sum(|s| s.caught_up),
        sum(|s| s.resume_gaps),
        sum(|s| s.disconnects),
        all.iter().filter(|s| s.ended_early).count()
    );
    if let Some(before) = before {
        println!(
            "server RSS: {before} KiB before the slow clients, peak {peak} KiB while they lagged: {:.1} KiB per slow client",
            (peak as f64 - before as f64) / args.clients.max(1) as f64
        );
    }
    Ok(())
}
