//! Idle connections held open against any server, and the memory they
//! cost it: the resident memory of the given processes before and after,
//! per connection. The same client for firehose and for Nchan, so the two
//! compare side by side (`bench/idle_memory.sh` runs both).
//!
//! ```sh
//! idle_conns --addr 127.0.0.1:8080 --path /api/v1/stream/firehose \
//!     --token "$TOKEN" --ws --clients 5000 --pids "$(pgrep -f 'firehose serve')"
//! ```

// Measurement tools are command-line programs: printing is their output.
#![allow(clippy::print_stdout)]

use clap::Parser;
use firehose_bench::procfs;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Parser, Debug)]
struct Args {
    /// The server.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// The stream's path and query.
    #[arg(long)]
    path: String,
    /// A bearer token, if the server wants one.
    #[arg(long, env = "TOKEN")]
    token: Option<String>,
    /// Open WebSockets (else plain GETs: SSE).
    #[arg(long)]
    ws: bool,
    /// Connections to open.
    #[arg(long, default_value_t = 5000)]
    clients: usize,
    /// The server's processes (comma-separated pids): their RSS is summed.
    #[arg(long, value_delimiter = ',')]
    pids: Vec<u32>,
    /// Seconds to wait after the last connection before measuring.
    #[arg(long, default_value_t = 3)]
    settle: u64,
}

/// The summed RSS of `pids`, KiB.
fn rss(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|p| procfs::stats(*p))
        .map(|s| s.rss_kib)
        .sum()
}

/// Opens one connection and reads its answer's head: the socket when it
/// was accepted (101 or 200).
async fn open(args: &Args) -> Option<TcpStream> {
    let mut sock = TcpStream::connect(&args.addr).await.ok()?;
    let mut req = format!("GET {} HTTP/1.1\r\nHost: {}\r\n", args.path, args.addr);
    if let Some(t) = &args.token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if args.ws {
        req.push_str("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n");
    } else {
        req.push_str("Accept: text/event-stream\r\n");
    }
    req.push_str("\r\n");
    sock.write_all(req.as_bytes()).await.ok()?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let accepted = head.starts_with(b"HTTP/1.1 101") || head.starts_with(b"HTTP/1.1 200");
    accepted.then_some(sock)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(!args.pids.is_empty(), "give the server's --pids");
    let before = rss(&args.pids);
    let mut held = Vec::with_capacity(args.clients);
    let mut failed = 0usize;
    // In waves of 200, so a listen backlog never overflows.
    for wave in (0..args.clients).collect::<Vec<_>>().chunks(200) {
        let opened = futures::future::join_all(wave.iter().map(|_| open(&args))).await;
        for s in opened {
            match s {
                Some(s) => held.push(s),
                None => failed += 1,
            }
        }
    }
    tokio::time::sleep(Duration::from_secs(args.settle)).await;
    let after = rss(&args.pids);
    let per = (after.saturating_sub(before)) as f64 / held.len().max(1) as f64;
    println!(
        "{} of {} connections open ({failed} refused); RSS {before} -> {after} KiB; {per:.2} KiB per connection",
        held.len(),
        args.clients
    );
    Ok(())
}
