//! The open-file limit, and the connection cap it allows.
//!
//! Every client connection is a descriptor. A login shell's soft limit is
//! often 1,024 while the hard limit allows far more, so `serve` raises the
//! soft limit to the hard one at start (as Go's runtime does, and nginx's
//! `worker_rlimit_nofile`), and the accept loop caps connections below what
//! the limit allows: past the cap a client gets 503 with `Retry-After`,
//! never an `accept` error, and the operations paths still answer from a
//! small spare share (see [`SPARE_SLOTS`]).

use std::io;

/// Descriptors kept for everything that is not a client connection: the
/// listener, standard streams, Redis connections (the multiplexed one, the
/// pub/sub subscription, the home cache's tracking connection, the workers'
/// blocking connections, reconnects in flight), the pipes to an embedded
/// `redis-server`, and the runtime's own (epoll, eventfd). About 30 are in
/// use on an idle server; the rest is headroom.
pub const RESERVED_FDS: u64 = 128;

/// Connections accepted beyond the cap: each reads its request head and is
/// answered there, `GET /healthz`, `/readyz` and `/metrics` as usual (one
/// request, then closed) and anything else 503 with `Retry-After`. So an
/// orchestrator's probes see a full process, not a dead one. Beyond these
/// too, a connection is closed at once.
pub const SPARE_SLOTS: usize = 32;

/// A process's open-file limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLimit {
    /// What the process may open now.
    pub soft: u64,
    /// What the soft limit may be raised to without privileges.
    pub hard: u64,
}

/// The limit in force, if the platform has one.
pub fn current() -> Option<FileLimit> {
    rlimit::Resource::NOFILE
        .get()
        .ok()
        .map(|(soft, hard)| FileLimit { soft, hard })
}

/// Raises the soft limit to the hard limit (or, for an unlimited hard limit,
/// to the kernel's per-process maximum). Returns the limits before and after.
pub fn raise() -> io::Result<(FileLimit, FileLimit)> {
    let (soft, hard) = rlimit::Resource::NOFILE.get()?;
    let before = FileLimit { soft, hard };
    let target = if hard == rlimit::INFINITY {
        kernel_max().unwrap_or(soft.max(1_048_576))
    } else {
        hard
    };
    if target > soft {
        rlimit::Resource::NOFILE.set(target, hard)?;
    }
    let (soft, hard) = rlimit::Resource::NOFILE.get()?;
    Ok((before, FileLimit { soft, hard }))
}

/// Raises the limit and logs what it was and what it is (a failure is
/// logged, not fatal: the cap then follows the limit as it is).
pub fn raise_and_log() {
    match raise() {
        Ok((before, after)) => tracing::info!(
            soft_before = before.soft,
            soft = after.soft,
            hard = after.hard,
            "open-file limit"
        ),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
    }
}

/// The most client connections a process may hold: `max_connections`, or
/// fewer when the open-file limit leaves less than that once
/// [`RESERVED_FDS`] and [`SPARE_SLOTS`] are set aside (at least 1).
pub fn connection_cap(max_connections: usize, limit: Option<FileLimit>) -> usize {
    let max = max_connections.max(1);
    match limit {
        None => max,
        Some(limit) => {
            let room = limit
                .soft
                .saturating_sub(RESERVED_FDS + SPARE_SLOTS as u64)
                .max(1);
            max.min(usize::try_from(room).unwrap_or(usize::MAX))
        }
    }
}

/// The kernel's per-process ceiling on open files (`fs.nr_open`).
fn kernel_max() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The kernel's ceiling on a listener's accept queue (`net.core.somaxconn`).
pub fn somaxconn() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_the_flag_or_what_the_file_limit_leaves() {
        let limit = |soft| Some(FileLimit { soft, hard: soft });
        let reserve = RESERVED_FDS + SPARE_SLOTS as u64;
        for (max, lim, want) in [
            (50_000, None, 50_000),
            (50_000, limit(1024), (1024 - reserve) as usize),
            (100, limit(20_000), 100),
            (50_000, limit(20_000), (20_000 - reserve) as usize),
            (50_000, limit(10), 1),
            (0, None, 1),
        ] {
            assert_eq!(connection_cap(max, lim), want, "max {max}, limit {lim:?}");
        }
    }
}
