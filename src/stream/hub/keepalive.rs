//! The dispatcher's one timer for every connection: when each is next owed
//! a keep-alive, or its end at its token's expiry, so that no stream's task
//! needs a timer of its own.

use super::conn::ClientConn;
use crate::stream::frame::DisconnectCode;
use crate::stream::frame::EventId;
use crate::stream::queue::Delivery;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Entries for closed connections the heap may hold beyond twice the open
/// connections before it is swept.
pub(super) const DUE_SLACK: usize = 1024;

/// When each open connection is next owed a keep-alive or its end (its
/// token's expiry), earliest first: one entry per open connection. A
/// closed connection's entry stays until its time comes (at most a
/// keep-alive period) and is then dropped, or is swept sooner once the heap
/// holds more than twice the open connections plus [`DUE_SLACK`].
pub(super) struct Timers {
    due: BinaryHeap<Reverse<(Instant, u64)>>,
    /// The keep-alive period.
    pub(super) period: Duration,
}

impl Timers {
    /// No connection yet; keep-alives every `period`.
    pub(super) fn new(period: Duration) -> Timers {
        Timers {
            due: BinaryHeap::new(),
            period,
        }
    }

    /// Files `conn`'s next turn, counted from `from`.
    pub(super) fn schedule(&mut self, conn: &ClientConn, from: Instant) {
        let at = conn.next_due(from, self.period);
        self.due.push(Reverse((at, conn.id)));
    }

    /// The earliest turn filed.
    pub(super) fn next(&self) -> Option<Instant> {
        self.due.peek().map(|Reverse((at, _))| *at)
    }

    /// The connection whose turn has come by `now`, taken off the heap.
    fn pop_due(&mut self, now: Instant) -> Option<u64> {
        let Reverse((at, id)) = *self.due.peek()?;
        (at <= now).then(|| {
            self.due.pop();
            id
        })
    }

    /// Under heavy churn, drops closed connections' entries sooner than
    /// their time, so that the heap never holds more than twice the `open`
    /// connections (plus some slack).
    pub(super) fn sweep(&mut self, open: &FxHashMap<u64, Arc<ClientConn>>) {
        if self.due.len() > 2 * open.len() + DUE_SLACK {
            self.due.retain(|Reverse((_, id))| open.contains_key(id));
        }
    }

    /// Hands a keep-alive to every `open` connection whose time has come
    /// by `now` (not when its queue is full: it has plenty to write), at the
    /// position `position_for` answers for it, and ends those whose token
    /// has expired.
    pub(super) fn keep_alive(
        &mut self,
        now: Instant,
        open: &FxHashMap<u64, Arc<ClientConn>>,
        position_for: impl Fn(&ClientConn) -> Option<EventId>,
    ) {
        while let Some(id) = self.pop_due(now) {
            let Some(conn) = open.get(&id) else {
                continue;
            };
            if now >= conn.expires_at() {
                conn.kill(DisconnectCode::Expired);
                continue;
            }
            // The warning is traffic enough: the keep-alive waits its turn.
            if now >= conn.warn_at() && conn.warn_expiry(now) {
                self.schedule(conn, now);
                continue;
            }
            let at = position_for(conn);
            let _ = conn
                .queue
                .push_or(Delivery::Keepalive(at), conn.cap, |sink, d| sink.write(d));
            // A late keep-alive moves the next one back.
            self.schedule(conn, now);
        }
    }

    /// Entries filed.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.due.len()
    }
}
