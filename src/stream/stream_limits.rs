//! The per-user concurrent-stream limit, counted in Redis across every
//! server process (leases renewed by their holder, see [`store::leases`](crate::store::entities::leases)), and
//! the connection gauge that goes with a slot.

use crate::error::{ApiError, ApiResult};
use crate::metrics::global as metrics;
use crate::shutdown::Shutdown;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The per-user concurrent-stream limit, counted in Redis across every
/// server ([`StreamLeases::take`](crate::store::entities::leases::StreamLeases::take)): this process's leases, renewed
/// every third of their length by [`StreamLimits::renew`].
pub struct StreamLimits {
    store: Store,
    /// Names this process's leases: random, so restarts never collide.
    instance: String,
    next: AtomicU64,
    lease: Duration,
    /// Lease member -> user, for renewal.
    held: Mutex<HashMap<String, u64>>,
}

/// Holds one stream slot of a user (and the connection gauge) until dropped.
pub struct StreamGuard {
    limits: Arc<StreamLimits>,
    uid: u64,
    member: String,
    /// Whether the lease was taken (and the connection counted).
    taken: bool,
    stream: &'static str,
    transport: &'static str,
}

impl StreamLimits {
    /// Limits whose leases last `lease`.
    pub fn new(store: Store, lease: Duration) -> Self {
        StreamLimits {
            store,
            instance: format!("{:016x}", rand::random::<u64>()),
            next: AtomicU64::new(0),
            lease,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one of `uid`'s `max` stream slots for a stream of `stream`
    /// over `transport`, or answers 429.
    pub async fn acquire(
        self: &Arc<Self>,
        uid: u64,
        max: usize,
        stream: &'static str,
        transport: &'static str,
    ) -> ApiResult<StreamGuard> {
        let member = format!(
            "{}:{}",
            self.instance,
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        // Noted before it is taken, so a renewal never misses it.
        self.held
            .lock()
            .map_err(|_| ApiError::internal())?
            .insert(member.clone(), uid);
        let mut guard = StreamGuard {
            limits: self.clone(),
            uid,
            member,
            taken: false,
            stream,
            transport,
        };
        if !self
            .store
            .sessions()
            .stream_leases()
            .take(uid, &guard.member, max, self.lease)
            .await?
        {
            return Err(ApiError::too_many(format!(
                "You already have {max} streams open; close one first."
            )));
        }
        guard.taken = true;
        metrics().connection(stream, transport, 1);
        Ok(guard)
    }

    /// Renews this process's leases every third of their length until
    /// shutdown. A failed renewal is retried at the next tick; leases that
    /// lapse meanwhile only err towards letting a user open more.
    pub async fn renew(self: Arc<Self>, mut shutdown: Shutdown) {
        let mut tick = tokio::time::interval((self.lease / 3).max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.wait() => return,
                _ = tick.tick() => {}
            }
            let held: Vec<(u64, String)> = match self.held.lock() {
                Ok(held) => held.iter().map(|(m, uid)| (*uid, m.clone())).collect(),
                Err(_) => continue,
            };
            if let Err(e) = self
                .store
                .sessions()
                .stream_leases()
                .renew(&held, self.lease)
                .await
            {
                tracing::warn!(error = %e, leases = held.len(), "cannot renew stream leases");
            }
        }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let held = self
            .limits
            .held
            .lock()
            .ok()
            .and_then(|mut held| held.remove(&self.member));
        if held.is_none() || !self.taken {
            // Refused (or failed, when a lease that was taken after all
            // lapses by itself, no longer renewed).
            return;
        }
        metrics().connection(self.stream, self.transport, -1);
        let store = self.limits.store.clone();
        let (uid, member) = (self.uid, std::mem::take(&mut self.member));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = store.sessions().stream_leases().release(uid, &member).await {
                    // It lapses by itself.
                    tracing::debug!(error = %e, "cannot drop a stream lease");
                }
            });
        }
    }
}
