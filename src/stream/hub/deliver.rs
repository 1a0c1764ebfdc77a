//! The dispatcher's deliveries: an event's matching subscriptions offered
//! it, through the helper tasks that share the connections out over the
//! cores while the dispatcher routes on, or queued by the dispatcher itself
//! when the rate says that is cheaper
//! ([`Pace`](super::helpers::Pace)).

use super::conn::{stalled, ClientConn};
use super::dispatcher::Dispatcher;
use super::helpers::{Job, HELPER_BACKLOG};
use crate::metrics::{global as metrics, inc};
use crate::stream::frame::Frame;
use crate::stream::queue::Delivery;
use firehose_filters::SubId;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Dispatcher {
    /// Offers `frame` to the subscriptions in `out`; a full queue
    /// disconnects its client. Through the helpers, writing into waiting
    /// plain streams' sockets if `direct`, while [`Pace`] says so; else
    /// queued here.
    pub(super) fn deliver(&mut self, frame: &Arc<Frame>, out: &[SubId], direct: bool) {
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
        let mut tos: Vec<Vec<(Arc<ClientConn>, &'static str)>> = vec![Vec::new(); shares];
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
}
