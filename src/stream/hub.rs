//! The hub: one Redis subscription per process, one dispatcher task.
//!
//! The subscriber task holds the process's only SUBSCRIBE connection and
//! forwards each message to the dispatcher; when the connection drops it
//! reconnects with backoff and tells the dispatcher, which then replays the
//! buffer from the last event it dispatched, so every connection is caught up
//! with no gap and no duplicate. The dispatcher owns the compiled index: the
//! cost of one event is the index lookups plus one `try_send` per matching
//! connection, whatever the number of connections.

use super::direct::Direct;
use super::frame::{self, Control, ControlFrame, EventId, Frame, Incoming};
use super::queue::Queue;
use crate::metrics::{global as metrics, inc};
use crate::shutdown::Shutdown;
use crate::store::Store;
use firehose_filters::{Index, Rule, SubId};
use futures::StreamExt;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::Instant;

/// What a connection's queue carries.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// An event, for the subscription named by the stream.
    Event(Arc<Frame>, &'static str),
    /// A control event.
    Control(Arc<ControlFrame>),
    /// Nothing to write: wakes the connection's task to look at its kill
    /// flag (see [`Conn::kill`]).
    Wake,
    /// Time for a keep-alive: the hub keeps every connection's keep-alive
    /// and expiry times, so a stream's task waits on its queue alone.
    Keepalive,
    /// The rest of an event or keep-alive the hub began writing into the
    /// socket itself ([`Direct`]): written before anything else.
    Rest(Vec<u8>),
}

/// The hub's side of one client connection.
#[derive(Debug)]
pub struct Conn {
    /// Unique in the process.
    pub id: u64,
    /// The user.
    pub uid: u64,
    /// The session the connection was opened with.
    pub session: String,
    /// Boxed sink: a connection without one (WebSocket, compressed, not yet
    /// live) pays a pointer for it.
    queue: Queue<Delivery, Box<Direct>>,
    cap: usize,
    /// When the connection was made (its keep-alives count from here).
    opened_at: Instant,
    /// When the token it was opened with expires: the hub ends it then.
    expires_at: Instant,
    /// Set once a falling_behind warning went out; cleared when the queue drains.
    pub warned: AtomicBool,
    /// Set by [`Conn::kill`]; the stream's loop reads it at every turn, so
    /// a live stream waits on its queue alone (no waiter to register and
    /// unregister per delivery).
    dead: AtomicBool,
    /// Also signalled by [`Conn::kill`], for the waits that are not on the
    /// queue (a replay's Redis reads).
    killed: Notify,
    reason: Mutex<Option<(&'static str, String)>>,
}

impl Conn {
    /// A connection with a queue of `cap` deliveries, whose token expires
    /// at `expires_at`.
    pub fn new(id: u64, uid: u64, session: String, cap: usize, expires_at: Instant) -> Arc<Conn> {
        let conn = Conn {
            id,
            uid,
            session,
            queue: Queue::default(),
            cap: cap.max(2),
            opened_at: Instant::now(),
            expires_at,
            warned: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            killed: Notify::new(),
            reason: Mutex::new(None),
        };
        Arc::new(conn)
    }

    /// Capacity of the queue.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Which of `shares` delivery shares the connection is in: its id
    /// hashed (ids are handed out to subscriptions too, so taken as they
    /// come they would fill every other share only).
    fn share(&self, shares: usize) -> usize {
        (self.id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % shares
    }

    /// Asks the connection to send `disconnect` with this code and close.
    /// The first reason given wins. The stream's task learns it at its next
    /// turn: woken by a [`Delivery::Wake`] when its queue has room, and when
    /// it has none the task has deliveries to take, so it turns anyway.
    pub fn kill(&self, code: &'static str, reason: impl Into<String>) {
        if let Ok(mut r) = self.reason.lock() {
            if r.is_none() {
                *r = Some((code, reason.into()));
            }
        }
        self.dead.store(true, Ordering::Release);
        self.killed.notify_one();
        let _ = self.queue.push(Delivery::Wake, self.cap);
    }

    /// Whether [`Conn::kill`] was called.
    pub fn is_killed(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// The code and reason [`Conn::kill`] was given.
    pub fn kill_reason(&self) -> (&'static str, String) {
        self.reason
            .lock()
            .ok()
            .and_then(|r| r.clone())
            .unwrap_or(("closed", "The stream was closed.".to_string()))
    }

    /// Waits until [`Conn::kill`] is called; returns the code and reason.
    pub async fn killed(&self) -> (&'static str, String) {
        if !self.is_killed() {
            self.killed.notified().await;
        }
        self.kill_reason()
    }

    /// Offers a delivery without waiting: written straight into the socket
    /// when `direct` allows it and the connection has a [`Direct`] sink and
    /// waits on an empty queue, else queued. Sends a falling_behind warning
    /// when the queue reaches 80 %; returns false when the queue is full
    /// (the caller disconnects the client) or gone.
    pub fn offer(&self, d: Delivery, direct: bool) -> bool {
        let pushed = if direct {
            self.queue.push_or(d, self.cap, |sink, d| sink.write(d))
        } else {
            self.queue.push(d, self.cap)
        };
        match pushed {
            Ok(used) => {
                if used * 5 >= self.cap * 4 && !self.warned.swap(true, Ordering::Relaxed) {
                    let pct = used * 100 / self.cap;
                    let warning = Control::Warning {
                        code: "falling_behind",
                        message: "Your stream queue is filling up; read faster or you will be disconnected.".into(),
                        percent_full: Some(pct),
                    };
                    inc(&metrics().behind_warnings, 1);
                    let _ = self
                        .queue
                        .push(Delivery::Control(warning.encode()), self.cap);
                }
                true
            }
            Err(_) => false,
        }
    }

    /// Sends a control event if there is room.
    pub fn offer_control(&self, control: Arc<ControlFrame>) {
        let _ = self.queue.push(Delivery::Control(control), self.cap);
    }

    /// The next delivery and how many are queued behind it; `Pending` until
    /// there is one. For the connection's own task only.
    pub fn poll_take(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<(Delivery, usize)> {
        self.queue.poll_take(cx)
    }

    /// The next delivery and how many are queued behind it, if one is
    /// queued. For the connection's own task only.
    pub fn try_take(&self) -> Option<(Delivery, usize)> {
        self.queue.try_take()
    }

    /// From now on, while the connection's task waits on an empty queue,
    /// the hub writes its events and keep-alives into `sink` itself.
    pub fn install_direct(&self, sink: Direct) {
        self.queue.install(Box::new(sink));
    }

    /// The task is about to write something it did not take from its
    /// queue: nothing goes to the sink until it waits again.
    pub fn hold(&self) {
        self.queue.hold();
    }

    /// The rest of a write the hub began into the socket, if it is queued
    /// (always first: it is queued only on an empty queue).
    pub fn take_rest(&self) -> Option<Vec<u8>> {
        match self
            .queue
            .take_front_if(|d| matches!(d, Delivery::Rest(_)))?
        {
            Delivery::Rest(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// The connection's task is done: what is queued is dropped and nothing
    /// more is accepted.
    pub fn close_queue(&self) {
        self.queue.close();
    }

    /// When the hub next owes this connection something: a keep-alive
    /// `keepalive` after `from`, or the end at its token's expiry.
    fn next_due(&self, from: Instant, keepalive: Duration) -> Instant {
        (from + keepalive).min(self.expires_at)
    }
}

enum Cmd {
    Open {
        conn: Arc<Conn>,
    },
    Register {
        conn: Arc<Conn>,
        sub: SubId,
        rule: Rule,
        stream: &'static str,
        ack: oneshot::Sender<()>,
    },
    Unregister {
        sub: SubId,
    },
    Close {
        conn: u64,
    },
}

enum Msg {
    Raw(String),
    Resubscribed,
}

/// Handle to the hub: cheap to clone.
#[derive(Clone)]
pub struct Hub {
    cmds: mpsc::UnboundedSender<Cmd>,
    next_id: Arc<AtomicU64>,
    subscribed: Arc<AtomicBool>,
}

/// How often the subscription connection is pinged.
const PING_EVERY: Duration = Duration::from_secs(2);
/// How long a ping may take before the connection is taken for dead.
const PING_TIMEOUT: Duration = Duration::from_secs(2);
/// How long catch-up keeps retrying a failing buffer read before it gives
/// up and tells every connection `resume_gap`.
const CATCH_UP_PATIENCE: Duration = Duration::from_secs(30);

impl Hub {
    /// Starts the subscriber and dispatcher tasks; both end on shutdown.
    /// Every connection gets a keep-alive each `keepalive` it is open.
    pub fn start(
        store: Store,
        shutdown: Shutdown,
        keepalive: Duration,
    ) -> (Hub, Vec<tokio::task::JoinHandle<()>>) {
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (msg_tx, msg_rx) = mpsc::channel(65_536);
        let subscribed = Arc::new(AtomicBool::new(false));
        let sub = tokio::spawn(subscriber(
            store.clone(),
            msg_tx,
            subscribed.clone(),
            shutdown.clone(),
        ));
        let disp = tokio::spawn(
            Dispatcher {
                store,
                index: Index::new(),
                subs: HashMap::new(),
                conns: HashMap::new(),
                open: HashMap::new(),
                by_session: HashMap::new(),
                revoked: HashMap::new(),
                last: None,
                out: Vec::new(),
                outs: Vec::new(),
                due: BinaryHeap::new(),
                keepalive,
                helpers: (0..delivery_shares())
                    .map(|_| Helper::start(cmd_tx.clone()))
                    .collect(),
                pace: Pace::default(),
                via_helpers: true,
            }
            .run(cmd_rx, msg_rx, shutdown),
        );
        (
            Hub {
                cmds: cmd_tx,
                next_id: Arc::new(AtomicU64::new(1)),
                subscribed,
            },
            vec![sub, disp],
        )
    }

    /// Whether the event subscription is up (pinged within seconds).
    pub fn is_subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Relaxed)
    }

    /// A fresh id for a connection or subscription.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Makes a new connection known, so that ending its session closes it
    /// whatever it is subscribed to (nothing yet, for a fresh WebSocket), and
    /// so that shutting down closes it. Once the hub has stopped, the
    /// connection is closed at once.
    pub fn open(&self, conn: &Arc<Conn>) {
        if self.cmds.send(Cmd::Open { conn: conn.clone() }).is_err() {
            conn.kill(SHUTDOWN.0, SHUTDOWN.1);
        }
    }

    /// Adds a subscription; events published after this returns reach it.
    pub async fn register(&self, conn: &Arc<Conn>, sub: SubId, rule: Rule, stream: &'static str) {
        let (ack, done) = oneshot::channel();
        let cmd = Cmd::Register {
            conn: conn.clone(),
            sub,
            rule,
            stream,
            ack,
        };
        if self.cmds.send(cmd).is_ok() {
            let _ = done.await;
        }
    }

    /// Removes one subscription.
    pub fn unregister(&self, sub: SubId) {
        let _ = self.cmds.send(Cmd::Unregister { sub });
    }

    /// Removes every subscription of a connection.
    pub fn close(&self, conn: u64) {
        let _ = self.cmds.send(Cmd::Close { conn });
    }
}

struct SubEntry {
    conn: Arc<Conn>,
    stream: &'static str,
}

struct Dispatcher {
    store: Store,
    index: Index,
    subs: HashMap<SubId, SubEntry>,
    conns: HashMap<u64, Vec<SubId>>,
    /// Every open connection by id, subscribed or not.
    open: HashMap<u64, Arc<Conn>>,
    /// Open connections by session id.
    by_session: HashMap<String, Vec<u64>>,
    /// Sessions revoked in the last [`REVOKED_MEMORY`], with when: a
    /// connection whose `Open` arrives after its session's revocation (its
    /// token was checked just before the logout) is closed at once.
    revoked: HashMap<String, std::time::Instant>,
    /// The last event dispatched; older or equal ids are duplicates.
    last: Option<EventId>,
    out: Vec<SubId>,
    /// Per event of a batch: the subscriptions that want it.
    outs: Vec<Vec<SubId>>,
    /// When each open connection is next owed a keep-alive or its end (its
    /// token's expiry), earliest first: one entry per open connection, so
    /// that no stream's task needs a timer of its own. A closed
    /// connection's entry stays until its time comes (at most a keep-alive
    /// period) and is then dropped, or is swept sooner once the heap holds
    /// more than twice the open connections plus [`DUE_SLACK`].
    due: BinaryHeap<Reverse<(Instant, u64)>>,
    keepalive: Duration,
    /// Tasks that deliver to shares of the connections alongside this one
    /// ([`delivery_shares`] of them).
    helpers: Vec<Helper>,
    /// Whether deliveries go through the helpers at this rate.
    pace: Pace,
    /// What [`Pace`] last decided.
    via_helpers: bool,
}

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
struct Pace {
    window_start: std::time::Instant,
    /// Deliveries in this window.
    delivered: usize,
    direct: bool,
}

/// How often [`Pace`] decides.
const PACE_WINDOW: Duration = Duration::from_millis(100);
/// Deliveries a second per core up to which they go through the helpers:
/// a direct write costs ~5 µs of CPU here (most of it the kernel's
/// loopback), so this keeps such writes under half of the cores' time.
const DIRECT_RATE_PER_CORE: f64 = 100_000.0;

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
    fn decide(&mut self, now: std::time::Instant, helpers: &[Helper]) -> bool {
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
    fn count(&mut self, n: usize) {
        self.delivered += n;
    }
}

impl Drop for Dispatcher {
    /// Were the dispatcher to end any other way than by shutdown (which
    /// has already ended them), its connections would hear nothing more:
    /// end them, so that their clients reconnect.
    fn drop(&mut self) {
        for conn in self.open.values() {
            conn.kill(
                "unavailable",
                "The stream service stopped; reconnect with Last-Event-ID to resume.",
            );
        }
    }
}

/// The code and reason every stream ends with when the server shuts down.
pub const SHUTDOWN: (&str, &str) = ("shutdown", "The server is shutting down.");

/// How long a revoked session is remembered for connections still opening.
const REVOKED_MEMORY: Duration = Duration::from_secs(60);

/// Entries for closed connections the keep-alive heap may hold beyond
/// twice the open connections before it is swept.
const DUE_SLACK: usize = 1024;

/// Most events routed in one batch.
const MAX_BATCH: usize = 64;

/// A connection whose queue is full (its client reads too slowly) is
/// ended; nothing to do for one already gone or ending (further events
/// may reach it before the dispatcher hears it was closed).
fn stalled(conn: &Conn) {
    if conn.is_killed() || conn.queue.is_closed() {
        return;
    }
    inc(&metrics().queue_drops, 1);
    inc(&metrics().stall_disconnects, 1);
    tracing::info!(
        conn = conn.id,
        uid = conn.uid,
        "disconnecting a stalled stream"
    );
    conn.kill(
        "stall",
        format!(
            "The stream queue of {} events is full: the client reads too slowly.",
            conn.cap
        ),
    );
}

/// One event for a helper's connections.
struct Job {
    frame: Arc<Frame>,
    to: Vec<(Arc<Conn>, &'static str)>,
    /// Whether waiting plain streams get it written into their sockets.
    direct: bool,
}

/// Into how many shares the connections are split for delivery (a helper
/// task each): two per core the runtime has, so that when the kernel
/// preempts a core's thread mid-fan-out, another core takes over the tasks
/// of the shares not yet done.
fn delivery_shares() -> usize {
    let cores = std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(2);
    SHARES_PER_CORE * cores.max(1)
}

/// See [`delivery_shares`].
const SHARES_PER_CORE: usize = 2;

/// Events a helper may have waiting before the dispatcher waits for it.
const HELPER_BACKLOG: usize = 256;

/// What the dispatcher and a helper share.
struct HelperShared {
    /// Events sent to the helper and not yet delivered.
    backlog: std::sync::atomic::AtomicUsize,
    /// Signalled as the helper works its backlog down.
    room: Notify,
}

/// The dispatcher's side of a helper task: it delivers the events of a
/// share of the connections ([`Conn::share`]), so that a fan-out's queue
/// pushes or socket writes run on every core while the dispatcher routes
/// the next event. Every event for a connection goes through the one task
/// of its share, in dispatch order.
struct Helper {
    jobs: mpsc::UnboundedSender<Job>,
    shared: Arc<HelperShared>,
}

impl Helper {
    /// Starts a helper; it ends when the dispatcher drops this. Stalled
    /// connections it ends are closed through `cmds`.
    fn start(cmds: mpsc::UnboundedSender<Cmd>) -> Helper {
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        let shared = Arc::new(HelperShared {
            backlog: Default::default(),
            room: Notify::new(),
        });
        let mine = shared.clone();
        tokio::spawn(async move {
            while let Some(job) = rx.recv().await {
                for (conn, stream) in &job.to {
                    if !conn.offer(Delivery::Event(job.frame.clone(), stream), job.direct) {
                        stalled(conn);
                        let _ = cmds.send(Cmd::Close { conn: conn.id });
                    }
                }
                if mine.backlog.fetch_sub(1, Ordering::AcqRel) <= HELPER_BACKLOG + 1 {
                    mine.room.notify_one();
                }
            }
        });
        Helper { jobs, shared }
    }

    fn send(&self, job: Job) {
        self.shared.backlog.fetch_add(1, Ordering::AcqRel);
        if self.jobs.send(job).is_err() {
            self.shared.backlog.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Dispatcher {
    async fn run(
        mut self,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
        mut msgs: mpsc::Receiver<Msg>,
        mut shutdown: Shutdown,
    ) {
        let mut timer = Box::pin(tokio::time::sleep(self.keepalive));
        loop {
            // The timer is set for the earliest connection owed something.
            if let Some(Reverse((at, _))) = self.due.peek() {
                if *at != timer.deadline() {
                    timer.as_mut().reset(*at);
                }
            }
            tokio::select! {
                biased;
                _ = shutdown.wait() => {
                    self.close_all(&mut cmds);
                    break;
                }
                Some(cmd) = cmds.recv() => self.command(cmd),
                _ = &mut timer, if !self.due.is_empty() => self.keep_alive(Instant::now()),
                Some(msg) = msgs.recv() => {
                    self.choose_path().await;
                    // Events already queued behind this one are routed in
                    // one batch (see `Index::route_batch`), in order.
                    let mut next = Some(msg);
                    let mut batch = Vec::new();
                    while let Some(msg) = next.take() {
                        match msg {
                            Msg::Raw(payload) => match frame::parse(&payload) {
                                Some(Incoming::Event(frame)) => batch.push(frame),
                                other => {
                                    self.dispatch_batch(&mut batch);
                                    self.incoming(other);
                                }
                            },
                            Msg::Resubscribed => {
                                self.dispatch_batch(&mut batch);
                                self.catch_up(&mut shutdown).await;
                            }
                        }
                        if batch.len() < MAX_BATCH {
                            next = msgs.try_recv().ok();
                        }
                    }
                    self.dispatch_batch(&mut batch);
                    self.wait_for_helpers().await;
                }
                else => break,
            }
        }
    }

    /// On shutdown: ends every open connection, and any whose `Open` is
    /// still queued; from here on [`Hub::open`] ends them itself.
    fn close_all(&mut self, cmds: &mut mpsc::UnboundedReceiver<Cmd>) {
        cmds.close();
        while let Ok(cmd) = cmds.try_recv() {
            if let Cmd::Open { conn } = cmd {
                self.open.insert(conn.id, conn);
            }
        }
        for conn in self.open.values() {
            conn.kill(SHUTDOWN.0, SHUTDOWN.1);
        }
    }

    fn command(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Open { conn } => {
                if self.revoked.contains_key(&conn.session) {
                    conn.kill("revoked", "The session has ended.");
                }
                self.by_session
                    .entry(conn.session.clone())
                    .or_default()
                    .push(conn.id);
                let at = conn.next_due(conn.opened_at, self.keepalive);
                self.due.push(Reverse((at, conn.id)));
                self.open.insert(conn.id, conn);
            }
            Cmd::Register {
                conn,
                sub,
                rule,
                stream,
                ack,
            } => {
                self.index.insert(sub, rule);
                self.conns.entry(conn.id).or_default().push(sub);
                self.subs.insert(sub, SubEntry { conn, stream });
                let _ = ack.send(());
            }
            Cmd::Unregister { sub } => self.remove_sub(sub),
            Cmd::Close { conn } => self.remove_conn(conn),
        }
    }

    fn remove_sub(&mut self, sub: SubId) {
        self.index.remove(sub);
        if let Some(entry) = self.subs.remove(&sub) {
            if let Some(list) = self.conns.get_mut(&entry.conn.id) {
                list.retain(|s| *s != sub);
                if list.is_empty() {
                    self.conns.remove(&entry.conn.id);
                }
            }
        }
    }

    fn remove_conn(&mut self, conn: u64) {
        for sub in self.conns.remove(&conn).unwrap_or_default() {
            self.index.remove(sub);
            self.subs.remove(&sub);
        }
        if let Some(c) = self.open.remove(&conn) {
            if let Some(ids) = self.by_session.get_mut(&c.session) {
                ids.retain(|id| *id != conn);
                if ids.is_empty() {
                    self.by_session.remove(&c.session);
                }
            }
        }
        // Closed connections' entries leave the heap when their time comes;
        // under heavy churn they are swept sooner, so that the heap never
        // holds more than twice the open connections (plus some slack).
        if self.due.len() > 2 * self.open.len() + DUE_SLACK {
            let open = &self.open;
            self.due.retain(|Reverse((_, id))| open.contains_key(id));
        }
    }

    /// Hands a keep-alive to every open connection whose time has come (not
    /// when its queue is full: it has plenty to write), and ends those
    /// whose token has expired.
    fn keep_alive(&mut self, now: Instant) {
        while let Some(Reverse((at, id))) = self.due.peek().copied() {
            if at > now {
                break;
            }
            self.due.pop();
            let Some(conn) = self.open.get(&id) else {
                continue;
            };
            if now >= conn.expires_at {
                conn.kill("expired", "The token has expired; log in again.");
                continue;
            }
            let _ = conn
                .queue
                .push_or(Delivery::Keepalive, conn.cap, |sink, d| sink.write(d));
            // A late keep-alive moves the next one back.
            let next = conn.next_due(now, self.keepalive);
            self.due.push(Reverse((next, id)));
        }
    }

    /// Closes every connection of a session, and remembers the session for
    /// connections that are still opening.
    fn revoke(&mut self, sid: String) {
        self.store.session_cache().revoke(&sid);
        for id in self.by_session.get(&sid).into_iter().flatten() {
            if let Some(conn) = self.open.get(id) {
                conn.kill("revoked", "The session has ended.");
            }
        }
        let now = std::time::Instant::now();
        self.revoked
            .retain(|_, at| now.duration_since(*at) < REVOKED_MEMORY);
        self.revoked.insert(sid, now);
    }

    /// A message from the channel other than an event to route.
    fn incoming(&mut self, msg: Option<Incoming>) {
        match msg {
            Some(Incoming::Event(frame)) => self.dispatch(frame, false),
            Some(Incoming::SessionRevoked(sid)) => self.revoke(sid),
            None => tracing::warn!("ignored a malformed event on the channel"),
        }
    }

    /// Whether `frame` is new (not at or before the last one dispatched);
    /// if so, counts it and makes it the last.
    fn accept(&mut self, frame: &Frame) -> bool {
        if self.last.is_some_and(|last| frame.id <= last) {
            return false;
        }
        self.last = Some(frame.id);
        inc(&metrics().events_received, 1);
        if let Some(status_id) = frame.deleted_status() {
            // Deleted statuses leave this process's cache (other processes'
            // hubs see the same event).
            self.store.status_cache().forget(status_id);
        }
        true
    }

    /// Routes and delivers one event; `direct`: its matching plain streams
    /// that wait may get it written into their sockets here.
    fn dispatch(&mut self, frame: Arc<Frame>, direct: bool) {
        if !self.accept(&frame) {
            return;
        }
        let mut out = std::mem::take(&mut self.out);
        self.index.route(&frame.routing(), &mut out);
        self.deliver(&frame, &out, direct);
        self.out = out;
    }

    /// Routes and delivers `batch` (emptied) in order. A lone event is
    /// written straight into waiting plain streams' sockets; a batch means
    /// the dispatcher is behind, so its deliveries are queued, for the
    /// streams' tasks to write (on every core, several events a write).
    fn dispatch_batch(&mut self, batch: &mut Vec<Arc<Frame>>) {
        if batch.len() <= 1 {
            if let Some(frame) = batch.pop() {
                self.dispatch(frame, true);
            }
            return;
        }
        let mut frames = std::mem::take(batch);
        frames.retain(|f| self.accept(f));
        let mut outs = std::mem::take(&mut self.outs);
        let events: Vec<_> = frames.iter().map(|f| f.routing()).collect();
        self.index.route_batch(&events, &mut outs);
        drop(events);
        for (frame, out) in frames.iter().zip(&outs) {
            self.deliver(frame, out, false);
        }
        self.outs = outs;
        frames.clear();
        *batch = frames;
    }

    /// Offers `frame` to the subscriptions in `out`; a full queue
    /// disconnects its client. Through the helpers, writing into waiting
    /// plain streams' sockets if `direct`, while [`Pace`] says so; else
    /// queued here.
    fn deliver(&mut self, frame: &Arc<Frame>, out: &[SubId], direct: bool) {
        inc(&metrics().events_matched, out.len() as u64);
        self.pace.count(out.len());
        if !self.via_helpers {
            let mut dead: Vec<u64> = Vec::new();
            for sub in out {
                let Some(entry) = self.subs.get(sub) else {
                    continue;
                };
                if !entry
                    .conn
                    .offer(Delivery::Event(frame.clone(), entry.stream), false)
                {
                    stalled(&entry.conn);
                    dead.push(entry.conn.id);
                }
            }
            for conn in dead {
                self.remove_conn(conn);
            }
            return;
        }
        let shares = self.helpers.len();
        let mut tos: Vec<Vec<(Arc<Conn>, &'static str)>> = vec![Vec::new(); shares];
        for e in out.iter().filter_map(|sub| self.subs.get(sub)) {
            tos[e.conn.share(shares)].push((e.conn.clone(), e.stream));
        }
        for (helper, to) in self.helpers.iter().zip(tos) {
            if !to.is_empty() {
                helper.send(Job {
                    frame: frame.clone(),
                    to,
                    direct,
                });
            }
        }
    }

    /// Before routing: whether deliveries go through the helpers now (see
    /// [`Pace`]). Going back to queueing here, it first waits until the
    /// helpers have delivered everything, so that no event overtakes one
    /// still in a helper's hands.
    async fn choose_path(&mut self) {
        let via_helpers = self.pace.decide(std::time::Instant::now(), &self.helpers);
        if self.via_helpers && !via_helpers {
            for helper in &self.helpers {
                while helper.shared.backlog.load(Ordering::Acquire) > 0 {
                    helper.shared.room.notified().await;
                }
            }
        }
        self.via_helpers = via_helpers;
    }

    /// Waits while a helper has more than [`HELPER_BACKLOG`] events to
    /// deliver: the dispatcher goes no further ahead of its helpers.
    async fn wait_for_helpers(&self) {
        for helper in &self.helpers {
            while helper.shared.backlog.load(Ordering::Acquire) > HELPER_BACKLOG {
                helper.shared.room.notified().await;
            }
        }
    }

    /// After (re)subscribing: replays what the buffer holds past the last
    /// dispatched event, warning every connection if part of it was trimmed.
    async fn catch_up(&mut self, shutdown: &mut Shutdown) {
        let Some(last) = self.last else {
            // First subscription: nothing was dispatched yet, so start live.
            match self.store.newest_event_id().await {
                Ok(newest) => self.last = newest.as_deref().and_then(EventId::parse),
                Err(e) => tracing::warn!(error = %e, "could not read the replay buffer position"),
            }
            return;
        };
        match self.store.buffer_info().await {
            Ok(info) if frame::is_gap(last, &info) => {
                let msg = Control::warning(
                    "resume_gap",
                    "Events were lost while the server was disconnected from Redis.",
                )
                .encode();
                for entry in self.subs.values() {
                    entry.conn.offer_control(msg.clone());
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not check the replay buffer for gaps"),
        }
        let mut cursor = last.to_string();
        let mut failing_since: Option<std::time::Instant> = None;
        let mut backoff = Duration::from_millis(50);
        loop {
            if shutdown.is_set() {
                return;
            }
            let page = match self.store.events_after(&cursor, 1000).await {
                Ok(page) => {
                    failing_since = None;
                    backoff = Duration::from_millis(50);
                    page
                }
                Err(e) => {
                    // Retry: giving up silently would be a gap no client
                    // hears of. Past the patience, say so to everyone.
                    let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() > CATCH_UP_PATIENCE {
                        tracing::error!(error = %e, "catch-up from the replay buffer failed; telling every stream resume_gap");
                        let msg = Control::warning(
                            "resume_gap",
                            "Events may have been lost while the server could not read the replay buffer.",
                        )
                        .encode();
                        for conn in self.open.values() {
                            conn.offer_control(msg.clone());
                        }
                        self.last = None;
                        return;
                    }
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "catch-up from the replay buffer failed; retrying");
                    tokio::select! {
                        _ = shutdown.wait() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    continue;
                }
            };
            let Some((id, _)) = page.last() else {
                return;
            };
            cursor = id.clone();
            inc(&metrics().events_replayed, page.len() as u64);
            for (_, json) in &page {
                self.incoming(frame::parse(json));
            }
        }
    }
}

async fn subscriber(
    store: Store,
    msgs: mpsc::Sender<Msg>,
    subscribed: Arc<AtomicBool>,
    mut shutdown: Shutdown,
) {
    let mut backoff = Duration::from_millis(100);
    let mut first = true;
    while !shutdown.is_set() {
        let pubsub = tokio::select! {
            _ = shutdown.wait() => return,
            r = tokio::time::timeout(Duration::from_secs(5), store.subscribe_events()) => r,
        };
        let pubsub = match pubsub {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "event subscription failed");
                tokio::select! { _ = shutdown.wait() => return, _ = tokio::time::sleep(backoff) => {} }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
            Err(_) => continue,
        };
        if !first {
            inc(&metrics().hub_reconnects, 1);
            tracing::info!("event subscription restored");
        }
        first = false;
        backoff = Duration::from_millis(100);
        if msgs.send(Msg::Resubscribed).await.is_err() {
            return;
        }
        subscribed.store(true, Ordering::Relaxed);
        // Revocations are seen from here on (and those missed meanwhile
        // are already in Redis, which the cache was emptied to ask).
        store.session_cache().resume();
        let (mut sink, mut stream) = pubsub.split();
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let msg = tokio::select! {
                _ = shutdown.wait() => return,
                m = stream.next() => m,
                _ = ping.tick() => {
                    // A connection that died without a FIN, or a Redis that
                    // stopped answering, is noticed here within seconds.
                    match tokio::time::timeout(PING_TIMEOUT, sink.ping::<redis::Value>()).await {
                        Ok(Ok(_)) => continue,
                        Ok(Err(e)) => tracing::warn!(error = %e, "event subscription ping failed; reconnecting"),
                        Err(_) => tracing::warn!("event subscription ping timed out; reconnecting"),
                    }
                    break;
                }
            };
            let Some(msg) = msg else {
                tracing::warn!("event subscription lost; reconnecting");
                break;
            };
            let Ok(payload) = msg.get_payload::<String>() else {
                continue;
            };
            if msgs.send(Msg::Raw(payload)).await.is_err() {
                return;
            }
        }
        subscribed.store(false, Ordering::Relaxed);
        store.session_cache().suspend();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatcher() -> Dispatcher {
        let mut cfg = crate::config::Config::defaults();
        cfg.redis_url = Some("redis://127.0.0.1:1".into());
        Dispatcher {
            store: Store::open("redis://127.0.0.1:1", &cfg).expect("a store (never reached)"),
            index: Index::new(),
            subs: HashMap::new(),
            conns: HashMap::new(),
            open: HashMap::new(),
            by_session: HashMap::new(),
            revoked: HashMap::new(),
            last: None,
            out: Vec::new(),
            outs: Vec::new(),
            due: BinaryHeap::new(),
            keepalive: Duration::from_secs(15),
            helpers: vec![Helper::start(mpsc::unbounded_channel().0)],
            pace: Pace::default(),
            via_helpers: true,
        }
    }

    fn conn(id: u64, expires_in: Duration) -> Arc<Conn> {
        Conn::new(id, 1, format!("s{id}"), 16, Instant::now() + expires_in)
    }

    /// Each open connection gets its keep-alive when due and its end when
    /// its token expires; a closed one's entry is dropped.
    #[tokio::test(start_paused = true)]
    async fn keepalives_and_expiry_come_off_one_heap() {
        let mut d = dispatcher();
        let (long, short, gone) = (
            conn(1, Duration::from_secs(3600)),
            conn(2, Duration::from_secs(20)),
            conn(3, Duration::from_secs(3600)),
        );
        for c in [&long, &short, &gone] {
            d.command(Cmd::Open { conn: c.clone() });
        }
        d.remove_conn(3);
        d.keep_alive(Instant::now() + Duration::from_secs(14));
        assert!(long.try_take().is_none(), "nothing before the period");
        d.keep_alive(Instant::now() + Duration::from_secs(15));
        assert!(matches!(long.try_take(), Some((Delivery::Keepalive, 0))));
        assert!(matches!(short.try_take(), Some((Delivery::Keepalive, 0))));
        assert!(gone.try_take().is_none());
        assert_eq!(d.due.len(), 2, "the closed connection's entry is gone");
        // The short token's next due time is its expiry, not a keep-alive.
        d.keep_alive(Instant::now() + Duration::from_secs(20));
        assert!(short.is_killed());
        assert_eq!(short.kill_reason().0, "expired");
        assert!(!long.is_killed());
        assert_eq!(d.due.len(), 1);
    }

    /// The task's own turn (a pong, a close frame: `Feed::interrupt` is
    /// `hold` then `take_rest`) comes while the hub's last write into the
    /// socket fell short: it gets the rest of that frame back first, and
    /// from then on the hub queues instead of writing, so the task's bytes
    /// land between whole frames.
    #[tokio::test]
    async fn the_tasks_own_turn_gets_the_rest_of_a_frame_first_and_stops_the_hub() {
        use crate::stream::direct::tests::{frame, pair};
        use crate::stream::direct::{Direct, SharedTcp};
        use crate::stream::websocket::{self, op};
        use crate::stream::wire::Transport;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (server, mut client) = pair().await;
        let conn = conn(1, Duration::from_secs(60));
        conn.install_direct(Direct::new(
            server.clone(),
            Transport::WebSocket,
            "firehose",
            None,
        ));
        // The task waits on its empty queue.
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(conn.poll_take(&mut cx).is_pending());
        assert_eq!(conn.take_rest(), None, "nothing begun");
        // The hub writes frames until one falls short.
        let big = "z".repeat(50_000);
        let mut sent = Vec::new();
        for id in 1..1000 {
            let f = frame(id, &big);
            websocket::frame(op::TEXT, &f.json, &mut sent);
            assert!(conn.offer(Delivery::Event(f, "firehose"), true));
            if !conn.queue.is_empty() {
                break;
            }
        }
        conn.hold();
        let rest = conn
            .take_rest()
            .expect("a 50 KB frame overflows an 8 KB send buffer");
        assert!(!rest.is_empty() && sent.ends_with(&rest));
        assert!(conn.queue.is_empty());
        // Held: the next event is queued, not written.
        assert!(conn.offer(Delivery::Event(frame(5000, "later"), "firehose"), true));
        assert!(matches!(conn.try_take(), Some((Delivery::Event(..), 0))));
        // The task writes the rest, then its pong: the client reads whole
        // frames, then the pong.
        let mut own = rest.clone();
        websocket::frame(op::PONG, b"p", &mut own);
        sent.truncate(sent.len() - rest.len());
        sent.extend_from_slice(&own);
        let mut got = vec![0u8; sent.len()];
        let mut writer = SharedTcp(server);
        let (wrote, read) = tokio::join!(writer.write_all(&own), client.read_exact(&mut got));
        wrote.unwrap();
        read.unwrap();
        assert!(got == sent, "whole frames, then the pong");
    }

    /// Connections that come and go faster than their keep-alive period
    /// leave at most twice the open ones (plus the slack) in the heap.
    #[tokio::test]
    async fn churn_does_not_grow_the_keepalive_heap() {
        let mut d = dispatcher();
        let steady: Vec<_> = (0..100)
            .map(|id| conn(id, Duration::from_secs(3600)))
            .collect();
        for c in &steady {
            d.command(Cmd::Open { conn: c.clone() });
        }
        for id in 1000..20_000 {
            d.command(Cmd::Open {
                conn: conn(id, Duration::from_secs(3600)),
            });
            d.remove_conn(id);
            assert!(d.due.len() <= 2 * d.open.len() + DUE_SLACK + 1);
        }
        assert_eq!(d.open.len(), 100);
    }
}
