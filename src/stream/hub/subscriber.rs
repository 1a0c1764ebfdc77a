//! The subscriber: the process's one event subscription, reconnected with
//! backoff; each message (each line of a batch) goes to the dispatcher.

use super::msg::Msg;
use crate::metrics::{global as metrics, inc};
use crate::shutdown::Shutdown;
use crate::store::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How often the subscription connection is pinged.
pub(super) const PING_EVERY: Duration = Duration::from_secs(2);
/// How long a ping may take before the connection is taken for dead.
pub(super) const PING_TIMEOUT: Duration = Duration::from_secs(2);

pub(super) async fn subscriber(
    store: Store,
    msgs: mpsc::Sender<Msg>,
    subscribed: Arc<AtomicBool>,
    published: Arc<tokio::sync::Notify>,
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
        store.session_cache().resume();
        let (mut messages, mut pinger) = (subscription.messages, subscription.pinger);
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let msg = tokio::select! {
                _ = shutdown.wait() => return,
                m = messages.next() => m,
                _ = ping.tick() => {
                    // A connection that died without a FIN, or a Redis that
                    // stopped answering, is noticed here within seconds.
                    match tokio::time::timeout(PING_TIMEOUT, pinger.ping()).await {
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
            let Some(payload) = msg else {
                continue;
            };
            // The buffer has something new (for the history's archiver and
            // the notifier: every task waiting, and a permit for one that
            // is busy now).
            published.notify_waiters();
            published.notify_one();
            // A batch of events (`store::emitter`) is one JSON a line.
            if payload.contains('\n') {
                for line in payload.split('\n') {
                    if msgs.send(Msg::Raw(line.to_string())).await.is_err() {
                        return;
                    }
                }
            } else if msgs.send(Msg::Raw(payload)).await.is_err() {
                return;
            }
        }
        subscribed.store(false, Ordering::Relaxed);
        store.session_cache().suspend();
    }
}
