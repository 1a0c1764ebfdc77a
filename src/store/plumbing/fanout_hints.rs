//! Which fan-out queues may hold work, for this process's workers.
//!
//! The fan-out queue is one STREAM per outbox partition, so no single blocking read can wait on all
//! of them on a cluster. Instead the workers wait here, sending nothing
//! while idle, and are woken by a hint naming a queue: this process queued
//! tasks there (`op_retire.lua` answered that it did), the outbox sweeper
//! found the queue non-empty (each partition's claim reports its length,
//! so tasks queued by another process, or abandoned by a dead worker, are
//! found within one sweep), or a worker took a task there and there may be
//! more. A hint is only a hint: a worker that finds nothing drops it.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

/// A fan-out queue: partition `k`'s.
pub(crate) type Queue = usize;

/// The queues hinted at, and the workers waiting for one.
#[derive(Debug, Default)]
pub struct FanoutHints {
    queues: Mutex<BTreeSet<Queue>>,
    /// Where the last [`FanoutHints::take`] left off, so queues take turns.
    after: Mutex<Option<Queue>>,
    ring: Notify,
}

impl FanoutHints {
    /// Notes that `queue` may hold work, and wakes the waiting workers.
    pub fn hint(&self, queue: Queue) {
        let new = self.lock().insert(queue);
        if new {
            self.ring.notify_waiters();
        }
    }

    /// Takes a hinted queue, the one after the last taken in turn, or
    /// waits up to `wait` for one (`None` when none came).
    pub async fn take(&self, wait: Duration) -> Option<Queue> {
        let rung = self.ring.notified();
        tokio::pin!(rung);
        // Registered before the look, so a hint given in between still wakes.
        rung.as_mut().enable();
        if let Some(q) = self.take_now() {
            return Some(q);
        }
        let _ = tokio::time::timeout(wait, rung).await;
        self.take_now()
    }

    fn take_now(&self) -> Option<Queue> {
        let mut queues = self.lock();
        let mut after = self.after.lock().unwrap_or_else(|e| e.into_inner());
        let next = match *after {
            Some(last) => queues
                .range((std::ops::Bound::Excluded(last), std::ops::Bound::Unbounded))
                .next()
                .or_else(|| queues.iter().next())
                .copied(),
            None => queues.iter().next().copied(),
        }?;
        queues.remove(&next);
        *after = Some(next);
        Some(next)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<Queue>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hinted_queues_are_taken_in_turn_once_each() {
        let hints = FanoutHints::default();
        for q in [3, 0, 1, 3] {
            hints.hint(q);
        }
        let wait = Duration::from_millis(1);
        assert_eq!(hints.take(wait).await, Some(0));
        assert_eq!(hints.take(wait).await, Some(1));
        hints.hint(0);
        assert_eq!(hints.take(wait).await, Some(3), "after 1 comes 3");
        assert_eq!(hints.take(wait).await, Some(0), "then round again");
        assert_eq!(hints.take(wait).await, None, "nothing left");
    }

    #[tokio::test]
    async fn a_hint_wakes_a_waiting_worker_at_once() {
        let hints = std::sync::Arc::new(FanoutHints::default());
        let waiting = tokio::spawn({
            let hints = hints.clone();
            async move { hints.take(Duration::from_secs(30)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        hints.hint(7);
        let taken = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken before its wait ran out")
            .unwrap();
        assert_eq!(taken, Some(7));
    }
}
