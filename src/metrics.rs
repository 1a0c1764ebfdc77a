//! Process metrics in Prometheus text format.
//!
//! Hot-path counters are atomics; labelled series (connections by stream and
//! transport, HTTP latency by route) sit behind a mutex taken once per
//! request or connection, never per event.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

/// All metrics of the process.
#[derive(Default)]
pub struct Metrics {
    /// Events received from Redis by the hub.
    pub events_received: AtomicU64,
    /// (event, subscription) pairs matched by the hub.
    pub events_matched: AtomicU64,
    /// Events written to client connections.
    pub events_sent: AtomicU64,
    /// Events dropped because a connection's queue was full.
    pub queue_drops: AtomicU64,
    /// Connections closed for stalling.
    pub stall_disconnects: AtomicU64,
    /// `falling_behind` warnings sent.
    pub behind_warnings: AtomicU64,
    /// Times the hub re-subscribed to Redis.
    pub hub_reconnects: AtomicU64,
    /// Events replayed from the buffer (resume, count, catch-up).
    pub events_replayed: AtomicU64,
    /// Fan-out batches worked.
    pub fanout_batches: AtomicU64,
    /// Sessions dropped by the clean-up.
    pub sessions_cleaned: AtomicU64,
    /// Outbox entries completed by a worker because their request did not.
    pub outbox_completed: AtomicU64,
    /// Connections refused beyond `--max-connections`.
    pub connections_refused: AtomicU64,
    connections: Mutex<BTreeMap<(&'static str, &'static str), i64>>,
    http: Mutex<BTreeMap<(String, String, u16), Histogram>>,
    errors: Mutex<BTreeMap<u16, u64>>,
}

static GLOBAL: OnceLock<Metrics> = OnceLock::new();

/// The process's metrics.
pub fn global() -> &'static Metrics {
    GLOBAL.get_or_init(Metrics::default)
}

/// Increments an atomic counter.
pub fn inc(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Metrics {
    /// A stream connection opened (+1) or closed (-1).
    pub fn connection(&self, stream: &'static str, transport: &'static str, delta: i64) {
        if let Ok(mut map) = self.connections.lock() {
            *map.entry((stream, transport)).or_default() += delta;
        }
    }

    /// One HTTP request served. `route` must come from a fixed set (the
    /// router's matched paths, or "unmatched"); methods outside the standard
    /// ones fold into "other", so clients cannot add series.
    pub fn observe_http(&self, route: &str, method: &str, status: u16, seconds: f64) {
        let method = match method {
            "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" => method,
            _ => "other",
        };
        if let Ok(mut map) = self.http.lock() {
            let h = map
                .entry((route.to_string(), method.to_string(), status))
                .or_default();
            for (i, b) in BUCKETS.iter().enumerate() {
                if seconds <= *b {
                    h.counts[i] += 1;
                }
            }
            h.sum += seconds;
            h.count += 1;
        }
    }

    /// One error answered.
    pub fn count_error(&self, status: u16) {
        if let Ok(mut map) = self.errors.lock() {
            *map.entry(status).or_default() += 1;
        }
    }

    /// Renders everything; `extra` holds gauges read at scrape time.
    pub fn render(&self, extra: &[(&str, &str, f64)]) -> String {
        let mut out = String::new();
        let counters: [(&str, &str, &AtomicU64); 12] = [
            (
                "firehose_events_received_total",
                "Events received from Redis by the hub.",
                &self.events_received,
            ),
            (
                "firehose_events_matched_total",
                "Event deliveries matched by the hub.",
                &self.events_matched,
            ),
            (
                "firehose_events_sent_total",
                "Events written to stream clients.",
                &self.events_sent,
            ),
            (
                "firehose_queue_drops_total",
                "Events dropped at a full connection queue.",
                &self.queue_drops,
            ),
            (
                "firehose_stall_disconnects_total",
                "Stream connections closed for stalling.",
                &self.stall_disconnects,
            ),
            (
                "firehose_falling_behind_warnings_total",
                "falling_behind warnings sent.",
                &self.behind_warnings,
            ),
            (
                "firehose_hub_reconnects_total",
                "Re-subscriptions of the hub to Redis.",
                &self.hub_reconnects,
            ),
            (
                "firehose_events_replayed_total",
                "Events replayed from the buffer.",
                &self.events_replayed,
            ),
            (
                "firehose_fanout_batches_total",
                "Fan-out batches worked.",
                &self.fanout_batches,
            ),
            (
                "firehose_sessions_cleaned_total",
                "Sessions dropped by the clean-up.",
                &self.sessions_cleaned,
            ),
            (
                "firehose_outbox_completed_total",
                "Writes whose outstanding work a worker completed after their request did not.",
                &self.outbox_completed,
            ),
            (
                "firehose_connections_refused_total",
                "Connections refused beyond --max-connections.",
                &self.connections_refused,
            ),
        ];
        for (name, help, c) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                c.load(Ordering::Relaxed)
            );
        }
        for (name, help, v) in extra {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let _ = writeln!(out, "# HELP firehose_stream_connections Open stream connections.\n# TYPE firehose_stream_connections gauge");
        if let Ok(map) = self.connections.lock() {
            for ((stream, transport), n) in map.iter() {
                let _ = writeln!(out, "firehose_stream_connections{{stream=\"{stream}\",transport=\"{transport}\"}} {n}");
            }
        }
        let _ = writeln!(out, "# HELP firehose_http_errors_total Error responses by status.\n# TYPE firehose_http_errors_total counter");
        if let Ok(map) = self.errors.lock() {
            for (status, n) in map.iter() {
                let _ = writeln!(out, "firehose_http_errors_total{{status=\"{status}\"}} {n}");
            }
        }
        let name = "firehose_http_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} HTTP request latency by route.\n# TYPE {name} histogram"
        );
        if let Ok(map) = self.http.lock() {
            for ((route, method, status), h) in map.iter() {
                let labels = format!("route=\"{route}\",method=\"{method}\",status=\"{status}\"");
                for (i, b) in BUCKETS.iter().enumerate() {
                    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b}\"}} {}", h.counts[i]);
                }
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
                let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
                let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
            }
        }
        out
    }
}
