//! The hub's side of one client connection: its queue, its kill flag and
//! reason, its keep-alive and expiry times, and whether it is lagging.
//!
//! A connection whose queue is full leaves live delivery rather than being
//! dropped ([`ClientConn::offer`]): the hub lets go of the events it had
//! queued, remembers the first of them and from then on drops its events,
//! and the connection's feed reads them from the buffer and the history at
//! the client's pace until it has caught up ([`stream::feed`](crate::stream::feed)'s lag), when it
//! rejoins ([`ClientConn::rejoin`]).

use crate::metrics::{global as metrics, inc};
use crate::stream::direct::Direct;
use crate::stream::frame::{Control, ControlFrame, EventId};
use crate::stream::frame::{DisconnectCode, WarningCode};
use crate::stream::queue::{Delivery, Queue, Refused};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long before its token expires a stream gets `token_expiring`.
pub(super) const EXPIRY_WARNING: Duration = Duration::from_secs(60);

/// The hub's side of one client connection.
#[derive(Debug)]
pub struct ClientConn {
    /// Unique in the process.
    pub id: u64,
    /// The user.
    pub uid: u64,
    /// The session the connection was opened with.
    pub session: String,
    /// Boxed sink: a connection without one (WebSocket, compressed, not yet
    /// live) pays a pointer for it.
    pub(super) queue: Queue<Delivery, Box<Direct>>,
    pub(super) cap: usize,
    /// When the connection was made (its keep-alives count from here).
    pub(super) opened_at: Instant,
    /// When its token expires, in milliseconds after `opened_at` (a token
    /// refreshed on the socket moves it): the hub ends it then.
    pub(super) expires_ms: AtomicU64,
    /// Set once a falling_behind warning went out; cleared when the queue drains.
    pub warned: AtomicBool,
    /// Set once the token_expiring warning went out (by the hub).
    pub(super) expiry_warned: AtomicBool,
    /// Set by [`ClientConn::kill`]; the stream's loop reads it at every turn, so
    /// a live stream waits on its queue alone (no waiter to register and
    /// unregister per delivery).
    pub(super) dead: AtomicBool,
    /// Also signalled by [`ClientConn::kill`], for the waits that are not on the
    /// queue (a replay's Redis reads).
    pub(super) killed: Notify,
    pub(super) reason: Mutex<Option<(DisconnectCode, String)>>,
    /// Set when its queue was full: the hub drops its events until the
    /// feed has read them from the buffer and clears it.
    lagging: AtomicBool,
    /// The first event it was not sent live while lagging.
    lag_from: Mutex<Option<EventId>>,
}

impl ClientConn {
    /// A connection with a queue of `cap` deliveries, whose token expires
    /// at `expires_at`.
    pub fn new(
        id: u64,
        uid: u64,
        session: String,
        cap: usize,
        expires_at: Instant,
    ) -> Arc<ClientConn> {
        let conn = ClientConn {
            id,
            uid,
            session,
            queue: Queue::default(),
            cap: cap.max(2),
            opened_at: Instant::now(),
            expires_ms: AtomicU64::new(0),
            warned: AtomicBool::new(false),
            expiry_warned: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            killed: Notify::new(),
            reason: Mutex::new(None),
            lagging: AtomicBool::new(false),
            lag_from: Mutex::new(None),
        };
        conn.set_expiry(expires_at);
        Arc::new(conn)
    }

    /// When its token expires.
    pub(super) fn expires_at(&self) -> Instant {
        self.opened_at + Duration::from_millis(self.expires_ms.load(Ordering::Relaxed))
    }

    /// Its token now expires at `at` (a refresh); the `token_expiring`
    /// warning may go out again before then.
    pub(super) fn set_expiry(&self, at: Instant) {
        let ms = at.saturating_duration_since(self.opened_at).as_millis();
        self.expires_ms
            .store(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.expiry_warned.store(false, Ordering::Relaxed);
    }

    /// Capacity of the queue.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Which of `shares` delivery shares the connection is in: its id
    /// hashed (ids are handed out to subscriptions too, so taken as they
    /// come they would fill every other share only).
    pub(super) fn share(&self, shares: usize) -> usize {
        (self.id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % shares
    }

    /// Asks the connection to send `disconnect` with this code (and its
    /// sentence) and close. The first reason given wins. The stream's task
    /// learns it at its next turn: woken by a [`Delivery::Wake`] when its
    /// queue has room, and when it has none the task has deliveries to
    /// take, so it turns anyway.
    pub fn kill(&self, code: DisconnectCode) {
        self.kill_saying(code, code.sentence());
    }

    /// [`ClientConn::kill`] with a sentence of the caller's.
    pub fn kill_saying(&self, code: DisconnectCode, reason: impl Into<String>) {
        if let Ok(mut r) = self.reason.lock() {
            if r.is_none() {
                *r = Some((code, reason.into()));
            }
        }
        self.dead.store(true, Ordering::Release);
        self.killed.notify_one();
        let _ = self.queue.push(Delivery::Wake, self.cap);
    }

    /// Whether [`ClientConn::kill`] was called.
    pub fn is_killed(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// The code and reason [`ClientConn::kill`] was given.
    pub fn kill_reason(&self) -> (DisconnectCode, String) {
        self.reason.lock().ok().and_then(|r| r.clone()).unwrap_or((
            DisconnectCode::Closed,
            DisconnectCode::Closed.sentence().to_string(),
        ))
    }

    /// Waits until [`ClientConn::kill`] is called; returns the code and reason.
    pub async fn killed(&self) -> (DisconnectCode, String) {
        if !self.is_killed() {
            self.killed.notified().await;
        }
        self.kill_reason()
    }

    /// Offers a delivery without waiting: written straight into the socket
    /// when `direct` allows it and the connection has a [`Direct`] sink and
    /// waits on an empty queue, else queued. Sends a falling_behind warning
    /// when the queue reaches 80 %; when it is full, the connection leaves
    /// live delivery ([`ClientConn::lag_start`]) and its events are
    /// dropped until it rejoins. False only when the connection is gone.
    pub fn offer(&self, d: Delivery, direct: bool) -> bool {
        if self.lagging.load(Ordering::SeqCst) {
            inc(&metrics().queue_drops, 1);
            return true;
        }
        let event = match &d {
            Delivery::Event(f, _) => Some(f.id),
            _ => None,
        };
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
                        code: WarningCode::FallingBehind,
                        message: "Your stream queue is filling up; read faster or the stream leaves live delivery and goes on from the history.".into(),
                        percent_full: Some(pct),
                        expires_at: None,
                        oldest: None,
                        behind: None,
                    };
                    inc(&metrics().behind_warnings, 1);
                    let _ = self
                        .queue
                        .push(Delivery::Control(warning.encode()), self.cap);
                }
                true
            }
            Err(Refused::Full) => {
                if let Some(id) = event {
                    self.leave_live(id);
                }
                true
            }
            Err(Refused::Closed) => false,
        }
    }

    /// The queue is full: the events queued are let go (the feed reads them
    /// again from the buffer, so a lagging client holds no queue of them),
    /// the first of them or `id` (the event refused) remembered, and
    /// further events dropped.
    fn leave_live(&self, id: EventId) {
        // Controls and the rest of a begun write stay; keep-alives carry the
        // hub's position, which the dropped events are behind.
        let dropped = self.queue.remove_or_fill(
            |d| !matches!(d, Delivery::Event(..) | Delivery::Keepalive(_)),
            Delivery::Wake,
        );
        let first = dropped
            .iter()
            .filter_map(|d| match d {
                Delivery::Event(f, _) => Some(f.id),
                _ => None,
            })
            .min()
            .map_or(id, |first| first.min(id));
        if let Ok(mut from) = self.lag_from.lock() {
            *from = Some(from.map_or(first, |f| f.min(first)));
        }
        self.lagging.store(true, Ordering::SeqCst);
        inc(&metrics().queue_drops, dropped.len() as u64 + 1);
        inc(&metrics().lagging, 1);
        tracing::debug!(conn = self.id, uid = self.uid, from = %first, "stream lagging");
    }

    /// The first event the connection was not sent live, while it lags.
    pub fn lag_start(&self) -> Option<EventId> {
        if !self.lagging.load(Ordering::SeqCst) {
            return None;
        }
        self.lag_from.lock().ok().and_then(|f| *f)
    }

    /// Whether the hub drops the connection's events (it lags).
    pub fn is_lagging(&self) -> bool {
        self.lagging.load(Ordering::SeqCst)
    }

    /// The feed has read up to the end of the buffer: the hub delivers
    /// again from its next event on. Every event it dropped is in the
    /// buffer by now (added before it was published), so a read of the
    /// buffer after this call finds them all.
    pub fn rejoin(&self) {
        if let Ok(mut from) = self.lag_from.lock() {
            *from = None;
        }
        self.lagging.store(false, Ordering::SeqCst);
    }

    /// The hub's writes into the socket drop events at or below `floor`
    /// (a stream that read them from the buffer).
    pub fn raise_direct_floor(&self, floor: EventId) {
        self.queue.with_sink(|sink| sink.raise_floor(floor));
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
    /// `keepalive` after `from`, the `token_expiring` warning
    /// [`EXPIRY_WARNING`] before its token expires, or the end then.
    pub(super) fn next_due(&self, from: Instant, keepalive: Duration) -> Instant {
        let next = (from + keepalive).min(self.expires_at());
        if self.expiry_warned.load(Ordering::Relaxed) {
            next
        } else {
            next.min(self.warn_at())
        }
    }

    /// When the `token_expiring` warning is due.
    pub(super) fn warn_at(&self) -> Instant {
        self.expires_at()
            .checked_sub(EXPIRY_WARNING)
            .unwrap_or(self.opened_at)
    }

    /// Queues the `token_expiring` warning, once (returns whether it did
    /// now): the token expires at `expires_at` and the stream ends then
    /// unless the client comes back with a new token.
    pub(super) fn warn_expiry(&self, now: Instant) -> bool {
        if self.expiry_warned.swap(true, Ordering::Relaxed) {
            return false;
        }
        let left = self.expires_at().saturating_duration_since(now);
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| (d + left).as_secs());
        let warning = Control::Warning {
            code: WarningCode::TokenExpiring,
            message: format!(
                "The token expires in {} s; the stream ends then. Reconnect with a new token (Last-Event-ID resumes).",
                left.as_secs()
            ),
            percent_full: None,
            expires_at: Some(unix),
            oldest: None,
            behind: None,
        };
        self.offer_control(warning.encode());
        true
    }
}
