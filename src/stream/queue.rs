//! A connection's bounded queue: the hub pushes (from any thread), the
//! connection's task takes.
//!
//! A mutex around a ring buffer and the taker's waker rather than tokio's
//! `mpsc`: a delivery costs one uncontended lock on each side and at most one
//! wake (no semaphore, no block list), and an idle connection holds no
//! buffer at all, where a channel allocates its state and a block of 32
//! slots up front. The bound is the caller's, given on every push, so that
//! a control event can take a slot the hub's deliveries cannot.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// Why a push was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The queue holds its bound.
    Full,
    /// The taker is gone.
    Closed,
}

/// A queue taken from by one task.
#[derive(Debug)]
pub struct Queue<T> {
    inner: Mutex<Inner<T>>,
}

#[derive(Debug)]
struct Inner<T> {
    items: VecDeque<T>,
    /// The taker's waker while it waits on an empty queue.
    waker: Option<Waker>,
    closed: bool,
}

/// A drained queue keeps at most this many slots allocated: a burst's
/// buffer is freed once the burst is written.
const KEEP_SLOTS: usize = 32;

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            inner: Mutex::new(Inner {
                items: VecDeque::new(),
                waker: None,
                closed: false,
            }),
        }
    }
}

impl<T> Queue<T> {
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        // Nothing runs under the lock that can panic halfway through a
        // change, so a poisoned queue is still whole.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `item` if fewer than `bound` are queued and the taker is
    /// still there; returns how many are queued with it. Wakes the taker
    /// (outside the lock) if it was waiting.
    pub fn push(&self, item: T, bound: usize) -> Result<usize, Refused> {
        let (queued, waker) = {
            let mut q = self.lock();
            if q.closed {
                return Err(Refused::Closed);
            }
            if q.items.len() >= bound {
                return Err(Refused::Full);
            }
            q.items.push_back(item);
            (q.items.len(), q.waker.take())
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(queued)
    }

    /// The oldest item and how many are left behind it, or `Pending` with
    /// the task's waker kept for the next push.
    pub fn poll_take(&self, cx: &mut Context<'_>) -> Poll<(T, usize)> {
        let mut q = self.lock();
        if let Some(taken) = Self::take_locked(&mut q) {
            return Poll::Ready(taken);
        }
        match &q.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => q.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// The oldest item and how many are left behind it, if any.
    pub fn try_take(&self) -> Option<(T, usize)> {
        Self::take_locked(&mut self.lock())
    }

    fn take_locked(q: &mut Inner<T>) -> Option<(T, usize)> {
        let item = q.items.pop_front()?;
        let left = q.items.len();
        if left == 0 && q.items.capacity() > KEEP_SLOTS {
            q.items = VecDeque::new();
        }
        Some((item, left))
    }

    /// How many items are queued.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The taker is gone: drops what is queued and refuses every push.
    pub fn close(&self) {
        let mut q = self.lock();
        q.closed = true;
        q.items = VecDeque::new();
        q.waker = None;
    }

    /// Whether [`Queue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn refuses_past_the_bound_and_after_close() {
        let q = Queue::default();
        assert_eq!(q.push(1, 2), Ok(1));
        assert_eq!(q.push(2, 2), Ok(2));
        assert_eq!(q.push(3, 2), Err(Refused::Full));
        // A larger bound (a control event's) still fits.
        assert_eq!(q.push(3, 3), Ok(3));
        assert_eq!(q.try_take(), Some((1, 2)));
        q.close();
        assert!(q.is_closed() && q.is_empty());
        assert_eq!(q.push(4, 10), Err(Refused::Closed));
    }

    #[test]
    fn a_drained_burst_frees_its_buffer() {
        let q = Queue::default();
        for i in 0..1000 {
            q.push(i, 1000).unwrap();
        }
        while q.try_take().is_some() {}
        assert_eq!(q.lock().items.capacity(), 0);
        // A trickle keeps its few slots.
        q.push(1, 10).unwrap();
        q.try_take().unwrap();
        assert!(q.lock().items.capacity() > 0);
    }

    /// Every item pushed from other threads reaches a taker that sleeps
    /// whenever the queue is empty, in order: no wake-up is lost between its
    /// look at an empty queue and the next push.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_wake_up_is_lost_across_threads() {
        const N: u64 = 200_000;
        let q = Arc::new(Queue::default());
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut i = 0;
                while i < N {
                    match q.push(i, 64) {
                        Ok(_) => i += 1,
                        Err(Refused::Full) => std::thread::yield_now(),
                        Err(Refused::Closed) => panic!("closed"),
                    }
                }
            })
        };
        let taker = async {
            let mut next = 0;
            while next < N {
                let (item, _) = std::future::poll_fn(|cx| q.poll_take(cx)).await;
                assert_eq!(item, next);
                next += 1;
            }
        };
        // A lost wake-up leaves the taker asleep for good.
        let taken = tokio::time::timeout(std::time::Duration::from_secs(60), taker).await;
        assert!(taken.is_ok(), "the taker was left asleep");
        producer.join().unwrap();
        assert!(q.is_empty());
    }
}
