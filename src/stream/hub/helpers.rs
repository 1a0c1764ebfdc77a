//! Delivery helpers (a share of the connections each, so a fan-out runs on
//! every core) and the pace that decides whether deliveries go through them.

use super::conn::ClientConn;
use super::msg::Cmd;
use crate::stream::frame::{EventId, Frame};
use crate::stream::queue::Delivery;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};

/// Which way deliveries go. At modest rates through the helpers (a share
/// of the connections each, on every core), which write lone events into
/// waiting plain streams' sockets themselves: a write per event per
/// connection, but no task wake-up and turn (~1 µs saved of ~6-7 µs). At
/// high rates the dispatcher queues them itself, as before there were
/// helpers: tasks that fall behind write many events at once, cheaper than
/// a write per event (at 1,000 clients x 500 events/s, 1.6-1.7 µs per
/// delivery queued against ~2 µs through the helpers), and handing events
/// to helpers costs more than it saves then. The deliveries are counted
/// over windows of [`PACE_WINDOW`]: helpers while they come at fewer than
/// [`DIRECT_RATE_PER_CORE`] a second per core.
#[derive(Debug)]
pub(super) struct Pace {
    pub(super) window_start: std::time::Instant,
    /// Deliveries in this window.
    pub(super) delivered: usize,
    pub(super) direct: bool,
}

/// How often [`Pace`] decides.
pub(super) const PACE_WINDOW: Duration = Duration::from_millis(100);
/// Deliveries a second per core up to which they go through the helpers:
/// a direct write costs ~5 µs of CPU here (most of it the kernel's
/// loopback), so this keeps such writes under half of the cores' time.
pub(super) const DIRECT_RATE_PER_CORE: f64 = 100_000.0;

impl Default for Pace {
    fn default() -> Self {
        Pace {
            window_start: std::time::Instant::now(),
            delivered: 0,
            direct: true,
        }
    }
}

impl Pace {
    /// At a window's end, decides whether the coming deliveries go
    /// through the helpers and may be direct (else the dispatcher queues
    /// them itself, as tasks that write several events at once serve best).
    pub(super) fn decide(&mut self, now: std::time::Instant, helpers: &[Helper]) -> bool {
        let span = now.saturating_duration_since(self.window_start);
        if span >= PACE_WINDOW {
            let cores = (helpers.len() / SHARES_PER_CORE).max(1) as f64;
            let rate = self.delivered as f64 / span.as_secs_f64() / cores;
            self.direct = rate < DIRECT_RATE_PER_CORE;
            tracing::trace!(rate, direct = self.direct, "delivery pace");
            self.window_start = now;
            self.delivered = 0;
        }
        self.direct
    }

    /// Counts `n` deliveries, whichever way they went.
    pub(super) fn count(&mut self, n: usize) {
        self.delivered += n;
    }
}

/// One event for a helper's connections.
pub(super) struct Job {
    pub(super) frame: Arc<Frame>,
    pub(super) to: Vec<(Arc<ClientConn>, &'static str)>,
    /// Whether waiting plain streams get it written into their sockets.
    pub(super) direct: bool,
}

/// Into how many shares the connections are split for delivery (a helper
/// task each): two per core the runtime has, so that when the kernel
/// preempts a core's thread mid-fan-out, another core takes over the tasks
/// of the shares not yet done.
pub(super) fn delivery_shares() -> usize {
    let cores = std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(2);
    SHARES_PER_CORE * cores.max(1)
}

/// See [`delivery_shares`].
pub(super) const SHARES_PER_CORE: usize = 2;

/// Events a helper may have waiting before the dispatcher waits for it.
pub(super) const HELPER_BACKLOG: usize = 256;

/// What the dispatcher and a helper share.
pub(super) struct HelperShared {
    /// Events sent to the helper and not yet delivered.
    pub(super) backlog: std::sync::atomic::AtomicUsize,
    /// Signalled as the helper works its backlog down.
    pub(super) room: Notify,
    /// The event of the last job it finished: every event routed before
    /// it has been offered to this share's connections.
    pub(super) done: std::sync::Mutex<Option<EventId>>,
}

/// The dispatcher's side of a helper task: it delivers the events of a
/// share of the connections ([`ClientConn::share`]), so that a fan-out's queue
/// pushes or socket writes run on every core while the dispatcher routes
/// the next event. Every event for a connection goes through the one task
/// of its share, in dispatch order.
pub(super) struct Helper {
    pub(super) jobs: mpsc::UnboundedSender<Job>,
    pub(super) shared: Arc<HelperShared>,
}

impl Helper {
    /// Starts a helper; it ends when the dispatcher drops this. Connections
    /// it finds gone are closed through `cmds`.
    pub(super) fn start(cmds: mpsc::UnboundedSender<Cmd>) -> Helper {
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        let shared = Arc::new(HelperShared {
            backlog: Default::default(),
            room: Notify::new(),
            done: Default::default(),
        });
        let mine = shared.clone();
        tokio::spawn(async move {
            while let Some(job) = rx.recv().await {
                for (conn, stream) in &job.to {
                    if !conn.offer(Delivery::Event(job.frame.clone(), stream), job.direct) {
                        let _ = cmds.send(Cmd::Close { conn: conn.id });
                    }
                }
                if let Ok(mut done) = mine.done.lock() {
                    *done = Some(job.frame.id);
                }
                if mine.backlog.fetch_sub(1, Ordering::AcqRel) <= HELPER_BACKLOG + 1 {
                    mine.room.notify_one();
                }
            }
        });
        Helper { jobs, shared }
    }

    pub(super) fn send(&self, job: Job) {
        self.shared.backlog.fetch_add(1, Ordering::AcqRel);
        if self.jobs.send(job).is_err() {
            self.shared.backlog.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
