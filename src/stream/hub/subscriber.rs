//! The subscriber: the process's one subscription to every shard of the
//! log, reconnected with backoff; the shards' messages merged into the
//! log's order (`store::events::merge`), each event then going to the
//! dispatcher. A message moves every shard of its node on; an event still
//! waiting has the nodes that hold it back asked for their time (one
//! command a node, at most one probe a millisecond), and every ping
//! asks each shard for its newest entry too (a message missed is found).

use super::msg::Msg;
use crate::metrics::{global as metrics, inc};
use crate::shutdown::Shutdown;
use crate::store::events::{EventId, Heard, Merge, NodeClocks, Probed, Prober, MOST_PENDING};
use crate::store::{Store, StoreResult};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How often the subscription connection is pinged.
pub(super) const PING_EVERY: Duration = Duration::from_secs(2);
/// How long a ping may take before the connection is taken for dead.
pub(super) const PING_TIMEOUT: Duration = Duration::from_secs(2);
/// The least time between two probes of the nodes' time (so that a busy
/// process asks ~1,000 times a second at most; meanwhile the messages of a
/// busy node move its shards on without asking).
const PROBE_GAP: Duration = Duration::from_millis(1);

/// What a probe brings: each node's time, or each shard's floor and
/// newest entry.
enum Answer {
    Times(Vec<(usize, EventId)>),
    Shards(Vec<Probed>),
}

/// A probe under way: what it brings, or its failure or timeout.
type Probe =
    Pin<Box<dyn Future<Output = Result<StoreResult<Answer>, tokio::time::error::Elapsed>> + Send>>;

/// Asks every shard for its floor and newest entry, on a clone of the
/// subscription's connections.
fn probe_shards(prober: &Prober) -> Probe {
    let mut prober = prober.clone();
    let shards: Vec<usize> = (0..prober.shards()).collect();
    Box::pin(async move {
        tokio::time::timeout(PING_TIMEOUT, async {
            prober.probe(&shards).await.map(Answer::Shards)
        })
        .await
    })
}

/// Asks `nodes` for their time.
fn probe_nodes(prober: &Prober, nodes: Vec<usize>) -> Probe {
    let mut prober = prober.clone();
    Box::pin(async move {
        tokio::time::timeout(PING_TIMEOUT, async {
            prober.time(&nodes).await.map(Answer::Times)
        })
        .await
    })
}

/// The probe under way's answer; never, when there is none.
async fn wait_probe(
    probe: &mut Option<Probe>,
) -> Result<StoreResult<Answer>, tokio::time::error::Elapsed> {
    match probe {
        Some(p) => p.await,
        None => std::future::pending().await,
    }
}

/// The newest event the subscriber has heard, handed on or still waiting
/// for its floor: a subscription registered now starts after it, so that an
/// event written before a stream opened (a write acknowledged, then the
/// stream opened, while the merge held its event back) never reaches it
/// live. A resumed stream's replay, read from the buffer after it
/// registered, holds every such event.
///
/// But never after the slowest master's clock as this process knows it
/// ([`store::log::clocks`](crate::store::log::clocks)): an event heard from a master whose clock
/// runs ahead has an id that one written after the stream opened, on a
/// master on time, can fall below, and that one must reach the stream.
#[derive(Default)]
pub(super) struct HeardMark {
    newest: std::sync::Mutex<EventId>,
    clocks: Option<Arc<NodeClocks>>,
}

impl HeardMark {
    /// A mark that starts no stream after the slowest of `clocks`.
    pub(super) fn new(clocks: Arc<NodeClocks>) -> Self {
        HeardMark {
            newest: Default::default(),
            clocks: Some(clocks),
        }
    }

    pub(super) fn raise(&self, id: EventId) {
        let mut newest = self.newest.lock().unwrap_or_else(|e| e.into_inner());
        *newest = (*newest).max(id);
    }

    /// Where a stream registered now starts.
    pub(super) fn get(&self) -> EventId {
        let newest = *self.newest.lock().unwrap_or_else(|e| e.into_inner());
        match self.clocks.as_ref().and_then(|c| c.slowest_now()) {
            Some(slowest) => newest.min(slowest.just_before()),
            None => newest,
        }
    }
}

pub(super) async fn subscriber(
    store: Store,
    msgs: mpsc::Sender<Msg>,
    subscribed: Arc<AtomicBool>,
    heard_mark: Arc<HeardMark>,
    mut shutdown: Shutdown,
) {
    let mut backoff = Duration::from_millis(100);
    let mut first = true;
    while !shutdown.is_set() {
        let subscription = tokio::select! {
            _ = shutdown.wait() => return,
            r = tokio::time::timeout(Duration::from_secs(5), store.events().subscribe()) => r,
        };
        let subscription = match subscription {
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
        store.caches().sessions.resume();
        let (mut pushes, prober) = (subscription.pushes, subscription.prober);
        let mut merge = Merge::new(prober.node_of()).with_clocks(store.events().clocks());
        let mut handed = EventId::ZERO;
        let mut probe: Option<Probe> = None;
        let mut last_probe = Instant::now() - PROBE_GAP;
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        'live: loop {
            tokio::select! {
                _ = shutdown.wait() => return,
                heard = pushes.next() => match heard {
                    Some(Heard::Message(k, payload)) => {
                        if let Err(missed) = merge.heard(k, &payload, handed) {
                            tracing::warn!(shard = missed.0, "a message of the event log was missed; catching up from the buffer");
                            break 'live;
                        }
                    }
                    Some(Heard::Lost) | None => {
                        tracing::warn!("event subscription lost; reconnecting");
                        break 'live;
                    }
                },
                answer = wait_probe(&mut probe) => {
                    probe = None;
                    match answer {
                        Ok(Ok(answer)) => {
                            // Every message sent before the answer is here.
                            let mut missed = None;
                            for heard in pushes.drain() {
                                match heard {
                                    Heard::Message(k, payload) => {
                                        missed = missed.or(merge.heard(k, &payload, handed).err());
                                    }
                                    Heard::Lost => {
                                        tracing::warn!("event subscription lost; reconnecting");
                                        break 'live;
                                    }
                                }
                            }
                            match answer {
                                Answer::Times(times) => {
                                    for (node, floor) in times {
                                        merge.timed(node, floor);
                                    }
                                }
                                Answer::Shards(floors) => {
                                    for (k, floor, newest) in floors {
                                        missed = missed.or(merge.probed(k, floor, newest).err());
                                    }
                                }
                            }
                            if let Some(missed) = missed {
                                tracing::warn!(shard = missed.0, "a message of the event log was missed; catching up from the buffer");
                                break 'live;
                            }
                        }
                        // A node that died without a FIN, or stopped
                        // answering, is noticed here within seconds.
                        Ok(Err(e)) => {
                            tracing::warn!(error = %e, "event subscription probe failed; reconnecting");
                            break 'live;
                        }
                        Err(_) => {
                            tracing::warn!("event subscription probe timed out; reconnecting");
                            break 'live;
                        }
                    }
                },
                _ = ping.tick(), if probe.is_none() => {
                    probe = Some(probe_shards(&prober));
                },
                _ = tokio::time::sleep_until(last_probe + PROBE_GAP),
                    if probe.is_none() && merge.waiting() > 0 => {},
            }
            // Before anything heard is handed on: a subscription the
            // dispatcher registers after it was handed starts after it.
            heard_mark.raise(merge.newest());
            for (id, line) in merge.ready() {
                handed = id;
                if msgs.send(Msg::Raw(line)).await.is_err() {
                    return;
                }
            }
            if merge.waiting() > MOST_PENDING {
                tracing::warn!(
                    waiting = merge.waiting(),
                    "events held back by a shard that tells nothing; reconnecting"
                );
                break 'live;
            }
            // Quiet nodes hold the oldest waiting event back: ask them their
            // time (one probe at a time, a gap between them).
            if probe.is_none() && merge.waiting() > 0 && last_probe.elapsed() >= PROBE_GAP {
                let nodes = merge.nodes_holding_back();
                if !nodes.is_empty() {
                    last_probe = Instant::now();
                    probe = Some(probe_nodes(&prober, nodes));
                }
            }
        }
        subscribed.store(false, Ordering::Relaxed);
        store.caches().sessions.suspend();
    }
}
