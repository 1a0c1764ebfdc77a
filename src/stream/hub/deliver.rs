//! The dispatcher's deliveries: an event's matching subscriptions offered
//! it, through the helper tasks that share the connections out over the
//! cores while the dispatcher routes on, or queued by the dispatcher itself
//! when the rate says that is cheaper
//! ([`Pace`]).

use super::conn::ClientConn;
use super::helpers::{Helper, Job, Pace, HELPER_BACKLOG};
use super::routes::Routes;
use crate::metrics::{global as metrics, inc};
use crate::stream::frame::{EventId, Frame};
use crate::stream::queue::Delivery;
use firehose_filters::SubId;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The way deliveries go: the helper tasks and the pace that chooses
/// between them and queueing here.
pub(super) struct Deliveries {
    /// Tasks that deliver to shares of the connections alongside the
    /// dispatcher ([`delivery_shares`](super::helpers::delivery_shares) of
    /// them).
    helpers: Vec<Helper>,
    /// Whether deliveries go through the helpers at this rate.
    pace: Pace,
    /// What [`Pace`] last decided.
    via_helpers: bool,
}

impl Deliveries {
    /// Deliveries through `helpers` until the pace says otherwise.
    pub(super) fn new(helpers: Vec<Helper>) -> Deliveries {
        Deliveries {
            helpers,
            pace: Pace::default(),
            via_helpers: true,
        }
    }

    /// Offers `frame` to the subscriptions in `out` (as `routes` files
    /// them) and answers the connections found gone (the caller removes
    /// them). Through the helpers, writing into
    /// waiting plain streams' sockets if `direct`, while [`Pace`] says so;
    /// else queued here.
    pub(super) fn offer(
        &mut self,
        frame: &Arc<Frame>,
        out: &[SubId],
        routes: &Routes,
        direct: bool,
    ) -> Vec<u64> {
        inc(&metrics().events_matched, out.len() as u64);
        self.pace.count(out.len());
        let mut dead: Vec<u64> = Vec::new();
        if !self.via_helpers {
            for entry in out.iter().filter_map(|sub| routes.get(sub)) {
                if !entry
                    .conn
                    .offer(Delivery::Event(frame.clone(), entry.stream), false)
                {
                    dead.push(entry.conn.id);
                }
            }
            return dead;
        }
        let shares = self.helpers.len();
        let mut tos: Vec<Vec<(Arc<ClientConn>, &'static str)>> = vec![Vec::new(); shares];
        for e in out.iter().filter_map(|sub| routes.get(sub)) {
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
        dead
    }

    /// Before routing: whether deliveries go through the helpers now (see
    /// [`Pace`]). Going back to queueing here, it first waits until the
    /// helpers have delivered everything, so that no event overtakes one
    /// still in a helper's hands.
    pub(super) async fn choose_path(&mut self) {
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
    pub(super) async fn wait_for_helpers(&self) {
        for helper in &self.helpers {
            while helper.shared.backlog.load(Ordering::Acquire) > HELPER_BACKLOG {
                helper.shared.room.notified().await;
            }
        }
    }

    /// The position for `conn`'s keep-alive: `last`, the last event
    /// routed, or, while its share's helper is still delivering, the last
    /// event that helper finished (every event up to it was offered to
    /// `conn` before the keep-alive).
    pub(super) fn position_for(&self, conn: &ClientConn, last: Option<EventId>) -> Option<EventId> {
        if self.via_helpers {
            let helper = &self.helpers[conn.share(self.helpers.len())];
            if helper.shared.backlog.load(Ordering::Acquire) > 0 {
                return helper.shared.done.lock().ok().and_then(|d| *d);
            }
        }
        last
    }
}
