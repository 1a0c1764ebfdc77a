//! What the measurement tools in `src/bin/` share: reading a process's CPU
//! and memory from /proc, making load users, opening a raw SSE stream, and
//! the transport a tool measures.
//!
//! The tools (each with its exact command in its header):
//! - `loadgen`: N stream clients, events by raw XADD+PUBLISH or by POSTs;
//!   delivered events/s, loss, latency, server memory and CPU.
//! - `floor`: the least a streaming server can do here, to measure against.
//! - `capacity`: the capacity model of N instances on one Redis or a cluster.
//! - `bench_social`: fan-out, posts, likes, reposts, home reads; the book's phases.
//! - `read_floor`: the least this stack can do for a page read.
//! - `soak`: minutes of mixed load with SIGKILLs, then an audit.
//! - `write_cost`: Redis commands and CPU per post, like, follow, sign-up
//!   and login, on one Redis or every master of a cluster.
//! - `reconnect_spread`: a stopping server's clients coming back to another.
//! - `replay_rate`: replay throughput (`count=1000`, `since=0`) over a full buffer.
//! - `floor_rounds.sh`, `home_reads.sh`: builds in rounds beside a floor.

// Tools print their results.
#![allow(clippy::print_stdout)]

pub mod procfs;
pub mod redis_info;
pub mod sse;
pub mod users;

/// The stream transport a tool measures.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Transport {
    /// Server-Sent Events.
    Sse,
    /// WebSocket.
    Ws,
}

/// Runs `n` jobs `make(i)` with `concurrency` in flight; returns how many
/// succeeded.
pub async fn run_all<F, Fut>(n: usize, concurrency: usize, make: F) -> usize
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    use futures::StreamExt;
    futures::stream::iter(0..n)
        .map(make)
        .buffer_unordered(concurrency)
        .filter(|ok| futures::future::ready(*ok))
        .count()
        .await
}
