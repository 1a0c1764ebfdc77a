//! Process metrics, kept and written by `prometheus-client`.
//!
//! Hot-path counters are atomics (`Counter`); labelled series (connections
//! by stream and transport, HTTP latency by route, errors by status) are
//! families whose label values come from fixed sets, so clients cannot add
//! series. They are touched once per request or connection, never per event.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

/// Upper bounds of the HTTP latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// A stream connection series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StreamLabels {
    stream: &'static str,
    transport: &'static str,
}

/// An HTTP latency series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: &'static str,
    method: &'static str,
    status: u16,
}

/// An error series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: u16,
}

/// A float gauge read at scrape time.
type ScrapeGauge = Gauge<f64, AtomicU64>;

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// All metrics of the process.
pub(crate) struct Metrics {
    /// Events received from Redis by the hub.
    pub events_received: Counter,
    /// (event, subscription) pairs matched by the hub.
    pub events_matched: Counter,
    /// Events written to client connections.
    pub events_sent: Counter,
    /// Of those, events the hub wrote straight into a waiting plain stream's socket.
    pub events_direct: Counter,
    /// Event encodings deflated (once each, shared by compressed connections).
    pub events_compressed: Counter,
    /// Events a connection's queue let go when it was full (the stream
    /// reads them again from the buffer or the history).
    pub queue_drops: Counter,
    /// Connections closed for stalling (their socket took no byte for
    /// `--write-timeout`).
    pub stall_disconnects: Counter,
    /// Streams that left live delivery for the history (`lagging`).
    pub lagging: Counter,
    /// Streams that rejoined live delivery (`caught_up`).
    pub caught_up: Counter,
    /// `falling_behind` warnings sent.
    pub behind_warnings: Counter,
    /// Times the hub re-subscribed to Redis.
    pub hub_reconnects: Counter,
    /// Writes that waited for a Redis node's clock ([`store::log::clocks`](crate::store::log::clocks)).
    pub commit_waits: Counter,
    /// Events replayed from the buffer (resume, count, catch-up).
    pub events_replayed: Counter,
    /// Fan-out batches worked.
    pub fanout_batches: Counter,
    /// Sessions dropped by the clean-up.
    pub sessions_cleaned: Counter,
    /// Outbox entries completed by a worker because their request did not.
    pub outbox_completed: Counter,
    /// Connections refused beyond `--max-connections`.
    pub connections_refused: Counter,
    /// The most client connections this process holds (`--max-connections`,
    /// or less when the open-file limit allows less).
    pub connection_cap: Gauge,
    /// Client connections open now (streams and requests alike).
    pub client_connections: Gauge,
    /// Filter rules filed in the hub (search streams' and ad-hoc ones).
    pub stream_rules: Gauge,
    /// Shards of the event log whose notifications this process makes.
    pub notifier_shards: Gauge,
    /// Home reads whose first ids came from the in-process home cache.
    pub home_cache_hits: Counter,
    /// Home heads read into the home cache over its tracking connection.
    pub home_cache_fills: Counter,
    /// Account and relation reads answered from the in-process view cache.
    pub view_cache_hits: Counter,
    /// Accounts and relations read into the view cache over its tracking
    /// connection.
    pub view_cache_fills: Counter,
    /// Fan-out tasks queued or in progress, read at scrape time.
    pub fanout_depth: ScrapeGauge,
    /// Age of the oldest queued fan-out task, read at scrape time.
    pub fanout_lag: ScrapeGauge,
    /// Live sessions, read at scrape time.
    pub sessions: ScrapeGauge,
    /// Writes under way in the outbox, read at scrape time.
    pub outbox_depth: ScrapeGauge,
    /// Age of the oldest write in the outbox, read at scrape time.
    pub outbox_age: ScrapeGauge,
    /// A PING's round trip to Redis, measured at scrape time.
    pub redis_ping: ScrapeGauge,
    /// Events read from the history on disk by replays.
    pub history_events_read: Counter,
    /// Replays reading the history now.
    pub history_replays: Gauge,
    /// The history's bytes on disk, read at scrape time.
    pub history_bytes: ScrapeGauge,
    /// Events in the history, read at scrape time.
    pub history_events: ScrapeGauge,
    /// Time of the history's oldest event, read at scrape time.
    pub history_oldest: ScrapeGauge,
    /// Whether the history's last write succeeded, read at scrape time.
    pub history_writable: ScrapeGauge,
    /// Writes the disk refused, read at scrape time.
    pub history_write_errors: ScrapeGauge,
    /// History blocks found damaged when read, read at scrape time.
    pub history_damaged_blocks: ScrapeGauge,
    /// 1 while the shared history's store answers, 0 while it does not
    /// (absent without `--history-store`), read at scrape time.
    pub history_store_reachable: ScrapeGauge,
    /// Calls to the shared history's store that failed, read at scrape time.
    pub history_store_errors: ScrapeGauge,
    /// Bytes of the store's windows cached on this disk, read at scrape time.
    pub history_store_cache_bytes: ScrapeGauge,
    connections: Family<StreamLabels, Gauge>,
    http: Family<HttpLabels, Histogram, fn() -> Histogram>,
    errors: Family<StatusLabels, Counter>,
    registry: Registry,
}

static GLOBAL: OnceLock<Metrics> = OnceLock::new();

/// `route` as a `&'static str`, kept once: routes are the router's fixed
/// set of matched paths (the caller's promise), so the set stays small, and
/// a request's series label costs no allocation.
fn interned(route: &str) -> &'static str {
    static ROUTES: OnceLock<std::sync::RwLock<std::collections::HashSet<&'static str>>> =
        OnceLock::new();
    let routes = ROUTES.get_or_init(Default::default);
    if let Some(known) = routes.read().ok().and_then(|set| set.get(route).copied()) {
        return known;
    }
    let Ok(mut set) = routes.write() else {
        return "unmatched";
    };
    if let Some(known) = set.get(route) {
        return known;
    }
    let kept: &'static str = Box::leak(route.to_string().into_boxed_str());
    set.insert(kept);
    kept
}

/// The process's metrics.
pub(crate) fn global() -> &'static Metrics {
    GLOBAL.get_or_init(Metrics::new)
}

/// Increments a counter.
pub(crate) fn inc(counter: &Counter, n: u64) {
    counter.inc_by(n);
}

impl Metrics {
    fn new() -> Metrics {
        let mut m = Metrics {
            events_received: Counter::default(),
            events_matched: Counter::default(),
            events_sent: Counter::default(),
            events_direct: Counter::default(),
            events_compressed: Counter::default(),
            queue_drops: Counter::default(),
            stall_disconnects: Counter::default(),
            lagging: Counter::default(),
            caught_up: Counter::default(),
            behind_warnings: Counter::default(),
            hub_reconnects: Counter::default(),
            commit_waits: Counter::default(),
            events_replayed: Counter::default(),
            fanout_batches: Counter::default(),
            sessions_cleaned: Counter::default(),
            outbox_completed: Counter::default(),
            connections_refused: Counter::default(),
            connection_cap: Gauge::default(),
            client_connections: Gauge::default(),
            stream_rules: Gauge::default(),
            notifier_shards: Gauge::default(),
            home_cache_hits: Counter::default(),
            home_cache_fills: Counter::default(),
            view_cache_hits: Counter::default(),
            view_cache_fills: Counter::default(),
            fanout_depth: ScrapeGauge::default(),
            fanout_lag: ScrapeGauge::default(),
            sessions: ScrapeGauge::default(),
            outbox_depth: ScrapeGauge::default(),
            outbox_age: ScrapeGauge::default(),
            redis_ping: ScrapeGauge::default(),
            history_events_read: Counter::default(),
            history_replays: Gauge::default(),
            history_bytes: ScrapeGauge::default(),
            history_events: ScrapeGauge::default(),
            history_oldest: ScrapeGauge::default(),
            history_writable: ScrapeGauge::default(),
            history_write_errors: ScrapeGauge::default(),
            history_damaged_blocks: ScrapeGauge::default(),
            history_store_reachable: ScrapeGauge::default(),
            history_store_errors: ScrapeGauge::default(),
            history_store_cache_bytes: ScrapeGauge::default(),
            connections: Family::default(),
            http: Family::new_with_constructor(latency_histogram),
            errors: Family::default(),
            registry: Registry::default(),
        };
        // Counters are registered without `_total`: the encoder adds it.
        let counters = [
            (
                "firehose_events_received",
                "Events received from Redis by the hub.",
                &m.events_received,
            ),
            (
                "firehose_events_matched",
                "Event deliveries matched by the hub.",
                &m.events_matched,
            ),
            (
                "firehose_events_sent",
                "Events written to stream clients.",
                &m.events_sent,
            ),
            (
                "firehose_events_direct",
                "Of the events written to stream clients, those the hub wrote straight into a waiting plain stream's socket.",
                &m.events_direct,
            ),
            (
                "firehose_events_compressed",
                "Event encodings deflated, once each for every compressed stream they go to.",
                &m.events_compressed,
            ),
            (
                "firehose_queue_drops",
                "Events let go at a full connection queue, to be read again from the buffer or the history.",
                &m.queue_drops,
            ),
            (
                "firehose_stall_disconnects",
                "Stream connections closed for stalling: their socket took no byte for --write-timeout.",
                &m.stall_disconnects,
            ),
            (
                "firehose_streams_lagging",
                "Times a stream left live delivery to read on from the history (warning lagging).",
                &m.lagging,
            ),
            (
                "firehose_streams_caught_up",
                "Times a lagging stream rejoined live delivery (warning caught_up).",
                &m.caught_up,
            ),
            (
                "firehose_falling_behind_warnings",
                "falling_behind warnings sent.",
                &m.behind_warnings,
            ),
            (
                "firehose_hub_reconnects",
                "Re-subscriptions of the hub to Redis.",
                &m.hub_reconnects,
            ),
            (
                "firehose_commit_waits",
                "Writes that waited for a Redis master's clock to pass their events' ids.",
                &m.commit_waits,
            ),
            (
                "firehose_events_replayed",
                "Events replayed from the buffer.",
                &m.events_replayed,
            ),
            (
                "firehose_fanout_batches",
                "Fan-out batches worked.",
                &m.fanout_batches,
            ),
            (
                "firehose_sessions_cleaned",
                "Sessions dropped by the clean-up.",
                &m.sessions_cleaned,
            ),
            (
                "firehose_outbox_completed",
                "Writes whose outstanding work a worker completed after their request did not.",
                &m.outbox_completed,
            ),
            (
                "firehose_connections_refused",
                "Connections refused beyond the connection cap (503, or closed when even the spare share was taken).",
                &m.connections_refused,
            ),
            (
                "firehose_home_cache_hits",
                "Home reads whose first ids came from the in-process home cache.",
                &m.home_cache_hits,
            ),
            (
                "firehose_home_cache_fills",
                "Home heads read into the home cache over its tracking connection.",
                &m.home_cache_fills,
            ),
            (
                "firehose_view_cache_hits",
                "Account and relation reads answered from the in-process view cache.",
                &m.view_cache_hits,
            ),
            (
                "firehose_view_cache_fills",
                "Accounts and relations read into the view cache over its tracking connection.",
                &m.view_cache_fills,
            ),
            (
                "firehose_history_events_read",
                "Events read from the history on disk by replays (its rate: catch-up events/s).",
                &m.history_events_read,
            ),
        ];
        let mut registry = Registry::default();
        for (name, help, counter) in counters {
            registry.register(name, help, counter.clone());
        }
        let gauges = [
            (
                "firehose_fanout_queue_depth",
                "Fan-out tasks queued or in progress (-1: Redis unreachable).",
                &m.fanout_depth,
            ),
            (
                "firehose_fanout_lag_seconds",
                "Age of the oldest queued fan-out task (-1: Redis unreachable).",
                &m.fanout_lag,
            ),
            (
                "firehose_sessions",
                "Live sessions (-1: Redis unreachable).",
                &m.sessions,
            ),
            (
                "firehose_outbox_depth",
                "Writes recorded in the outbox and not yet finished (-1: Redis unreachable).",
                &m.outbox_depth,
            ),
            (
                "firehose_outbox_oldest_seconds",
                "Seconds since the oldest write in the outbox began its current lease (-1: Redis unreachable).",
                &m.outbox_age,
            ),
            (
                "firehose_redis_ping_seconds",
                "Round trip of a PING to Redis at scrape time (-1: Redis unreachable).",
                &m.redis_ping,
            ),
            (
                "firehose_history_bytes",
                "Bytes of the history on this process's disk (--history-max-bytes).",
                &m.history_bytes,
            ),
            (
                "firehose_history_events",
                "Events held in the history.",
                &m.history_events,
            ),
            (
                "firehose_history_oldest_seconds",
                "Time (seconds since the epoch) of the oldest event in the history (0: none).",
                &m.history_oldest,
            ),
            (
                "firehose_history_writable",
                "1 while the history's writes succeed, 0 while the disk refuses them (the history stops growing).",
                &m.history_writable,
            ),
            (
                "firehose_history_store_reachable",
                "1 while the shared history's object store answers, 0 while it does not (streams go on from disk and the buffer).",
                &m.history_store_reachable,
            ),
            (
                "firehose_history_store_errors",
                "Calls to the shared history's object store that failed since start.",
                &m.history_store_errors,
            ),
            (
                "firehose_history_store_cache_bytes",
                "Bytes of the object store's windows cached on this process's disk.",
                &m.history_store_cache_bytes,
            ),
            (
                "firehose_history_write_errors",
                "Writes of history blocks the disk refused since start.",
                &m.history_write_errors,
            ),
            (
                "firehose_history_damaged_blocks",
                "History blocks found damaged when read and passed over as a gap.",
                &m.history_damaged_blocks,
            ),
        ];
        for (name, help, gauge) in gauges {
            registry.register(name, help, gauge.clone());
        }
        registry.register(
            "firehose_history_replays",
            "Replays reading the history on disk now.",
            m.history_replays.clone(),
        );
        registry.register(
            "firehose_connection_cap",
            "The most client connections this process holds (--max-connections, or less when the open-file limit allows less).",
            m.connection_cap.clone(),
        );
        registry.register(
            "firehose_client_connections",
            "Client connections open now (streams and requests alike).",
            m.client_connections.clone(),
        );
        registry.register(
            "firehose_stream_rules",
            "Filter rules filed in the hub, over every open search stream and filter stream with rules (--max-stream-rules).",
            m.stream_rules.clone(),
        );
        registry.register(
            "firehose_notifier_shards",
            "Shards of the event log whose notifications this process makes (about its share: the processes split them).",
            m.notifier_shards.clone(),
        );
        registry.register(
            "firehose_stream_connections",
            "Open stream connections.",
            m.connections.clone(),
        );
        registry.register(
            "firehose_http_errors",
            "Error responses by status.",
            m.errors.clone(),
        );
        registry.register(
            "firehose_http_request_duration_seconds",
            "HTTP request latency by route.",
            m.http.clone(),
        );
        m.registry = registry;
        m
    }

    /// A stream connection opened (+1) or closed (-1).
    pub(crate) fn connection(&self, stream: &'static str, transport: &'static str, delta: i64) {
        self.connections
            .get_or_create(&StreamLabels { stream, transport })
            .inc_by(delta);
    }

    /// One HTTP request served. `route` must come from a fixed set (the
    /// router's matched paths, or "unmatched"); methods outside the standard
    /// ones fold into "other", so clients cannot add series.
    pub(crate) fn observe_http(&self, route: &str, method: &str, status: u16, seconds: f64) {
        let method = match method {
            "GET" => "GET",
            "HEAD" => "HEAD",
            "POST" => "POST",
            "PUT" => "PUT",
            "PATCH" => "PATCH",
            "DELETE" => "DELETE",
            "OPTIONS" => "OPTIONS",
            _ => "other",
        };
        let labels = HttpLabels {
            route: interned(route),
            method,
            status,
        };
        self.http.get_or_create(&labels).observe(seconds);
    }

    /// One error answered.
    pub(crate) fn count_error(&self, status: u16) {
        self.errors.get_or_create(&StatusLabels { status }).inc();
    }

    /// Everything, in the OpenMetrics text format (which Prometheus's
    /// classic text parser also reads).
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
