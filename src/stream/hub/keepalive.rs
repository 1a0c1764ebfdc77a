//! The dispatcher's one timer for every connection: when each is next owed
//! a keep-alive, or its end at its token's expiry, so that no stream's task
//! needs a timer of its own.

use super::conn::ClientConn;
use super::dispatcher::Dispatcher;
use crate::stream::frame::EventId;
use crate::stream::queue::Delivery;
use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use tokio::time::Instant;

impl Dispatcher {
    /// Hands a keep-alive to every open connection whose time has come (not
    /// when its queue is full: it has plenty to write), and ends those
    /// whose token has expired.
    pub(super) fn keep_alive(&mut self, now: Instant) {
        while let Some(Reverse((at, id))) = self.due.peek().copied() {
            if at > now {
                break;
            }
            self.due.pop();
            let Some(conn) = self.open.get(&id) else {
                continue;
            };
            if now >= conn.expires_at() {
                conn.kill("expired", "The token has expired; log in again.");
                continue;
            }
            // The warning is traffic enough: the keep-alive waits its turn.
            if now >= conn.warn_at() && conn.warn_expiry(now) {
                let next = conn.next_due(now, self.keepalive);
                self.due.push(Reverse((next, id)));
                continue;
            }
            let at = self.position_for(conn);
            let _ = conn
                .queue
                .push_or(Delivery::Keepalive(at), conn.cap, |sink, d| sink.write(d));
            // A late keep-alive moves the next one back.
            let next = conn.next_due(now, self.keepalive);
            self.due.push(Reverse((next, id)));
        }
    }

    /// The hub's position for `conn`'s keep-alive: the last event routed,
    /// or, while its share's helper is still delivering, the last event
    /// that helper finished (every event up to it was offered to `conn`
    /// before the keep-alive).
    fn position_for(&self, conn: &ClientConn) -> Option<EventId> {
        if self.via_helpers {
            let helper = &self.helpers[conn.share(self.helpers.len())];
            if helper.shared.backlog.load(Ordering::Acquire) > 0 {
                return helper.shared.done.lock().ok().and_then(|d| *d);
            }
        }
        self.last
    }
}
