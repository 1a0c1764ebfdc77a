//! A connection's bounded queue: the hub pushes (from any thread), the
//! connection's task takes ([`Delivery`]); and what the task hands its
//! encoder ([`Out`]).
//!
//! A mutex around a ring buffer and the taker's waker rather than tokio's
//! `mpsc`: a delivery costs one uncontended lock on each side and at most one
//! wake (no semaphore, no block list), and an idle connection holds no
//! buffer at all, where a channel allocates its state and a block of 32
//! slots up front. The bound is the caller's, given on every push, so that
//! a control event can take a slot the hub's deliveries cannot.
//!
//! A queue may also hold a sink (`S`): something that can take an item
//! itself, such as the connection's socket. While the taker waits on an
//! empty queue, a push hands its item to the sink under the lock instead
//! of queueing it and waking the taker (see [`Queue::push_or`]); the lock
//! orders those writes with the taker's own.

use super::frame::{ControlFrame, EventId, Frame};
use std::collections::VecDeque;
use std::sync::Arc;
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
pub struct Queue<T, S = ()> {
    inner: Mutex<Inner<T, S>>,
}

#[derive(Debug)]
struct Inner<T, S> {
    items: VecDeque<T>,
    /// The taker's waker while it waits on an empty queue: set when a poll
    /// finds nothing, cleared when the taker takes an item or says it is
    /// busy ([`Queue::hold`]), and taken by the push that wakes it.
    waker: Option<Waker>,
    closed: bool,
    /// What may take an item in the taker's stead while it waits.
    sink: Option<S>,
}

/// A drained queue keeps at most this many slots allocated: a burst's
/// buffer is freed once the burst is written.
const KEEP_SLOTS: usize = 32;

impl<T, S> Default for Queue<T, S> {
    fn default() -> Self {
        Queue {
            inner: Mutex::new(Inner {
                items: VecDeque::new(),
                waker: None,
                closed: false,
                sink: None,
            }),
        }
    }
}

impl<T, S> Queue<T, S> {
    fn lock(&self) -> MutexGuard<'_, Inner<T, S>> {
        // Nothing runs under the lock that can panic halfway through a
        // change, so a poisoned queue is still whole.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `item` if fewer than `bound` are queued and the taker is
    /// still there; returns how many are queued with it. Wakes the taker
    /// (outside the lock) if it was waiting.
    pub fn push(&self, item: T, bound: usize) -> Result<usize, Refused> {
        self.push_or(item, bound, |_, item| Some(item))
    }

    /// As [`Queue::push`], but while the taker waits on an empty queue and
    /// a sink is installed, `write` is offered the item first, under the
    /// lock (so no write of the taker's runs meanwhile): it returns `None`
    /// when the sink took the item whole (`Ok(0)`: nothing queued, nobody
    /// woken), or what is to be queued in its place (the item, or the rest
    /// of what the sink could not take).
    pub fn push_or(
        &self,
        item: T,
        bound: usize,
        write: impl FnOnce(&S, T) -> Option<T>,
    ) -> Result<usize, Refused> {
        let (queued, waker) = {
            let mut q = self.lock();
            if q.closed {
                return Err(Refused::Closed);
            }
            let mut item = item;
            if q.items.is_empty() && q.waker.is_some() {
                if let Some(sink) = &q.sink {
                    match write(sink, item) {
                        None => return Ok(0),
                        Some(rest) => item = rest,
                    }
                }
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

    /// The taker is about to write something it did not take from the
    /// queue: until it waits again, pushes queue rather than go to the sink.
    pub fn hold(&self) {
        self.lock().waker = None;
    }

    /// Installs the sink (dropped by [`Queue::close`]; not after it).
    pub fn install(&self, sink: S) {
        let mut q = self.lock();
        if !q.closed {
            q.sink = Some(sink);
        }
    }

    /// The oldest item and how many are left behind it, if any.
    pub fn try_take(&self) -> Option<(T, usize)> {
        Self::take_locked(&mut self.lock())
    }

    fn take_locked(q: &mut Inner<T, S>) -> Option<(T, usize)> {
        let item = q.items.pop_front()?;
        // Busy with it: nothing goes to the sink until the taker waits again.
        q.waker = None;
        let left = q.items.len();
        if left == 0 && q.items.capacity() > KEEP_SLOTS {
            q.items = VecDeque::new();
        }
        Some((item, left))
    }

    /// The oldest item if `first` says so (nothing else changes).
    pub fn take_front_if(&self, first: impl FnOnce(&T) -> bool) -> Option<T> {
        let mut q = self.lock();
        if !first(q.items.front()?) {
            return None;
        }
        Self::take_locked(&mut q).map(|(item, _)| item)
    }

    /// Removes the items `keep` refuses and returns them, in order; if
    /// nothing is left, queues `filler` (so a waiting taker is woken and
    /// does not wait on an empty queue meanwhile). One lock: no push falls
    /// between the two.
    pub fn remove_or_fill(&self, mut keep: impl FnMut(&T) -> bool, filler: T) -> Vec<T> {
        let (removed, waker) = {
            let mut q = self.lock();
            if q.closed {
                return Vec::new();
            }
            let mut removed = Vec::new();
            let mut kept = VecDeque::with_capacity(q.items.len());
            for item in q.items.drain(..) {
                if keep(&item) {
                    kept.push_back(item);
                } else {
                    removed.push(item);
                }
            }
            q.items = kept;
            if q.items.is_empty() {
                q.items.push_back(filler);
            }
            (removed, q.waker.take())
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        removed
    }

    /// Runs `change` on the sink, if one is installed.
    pub fn with_sink(&self, change: impl FnOnce(&mut S)) {
        if let Some(sink) = self.lock().sink.as_mut() {
            change(sink);
        }
    }

    /// How many items are queued.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The taker is gone: drops what is queued and the sink, and refuses
    /// every push.
    pub fn close(&self) {
        let mut q = self.lock();
        q.closed = true;
        q.items = VecDeque::new();
        q.waker = None;
        q.sink = None;
    }

    /// Whether [`Queue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

/// What a connection's queue carries.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// An event, for the subscription named by the stream.
    Event(Arc<Frame>, &'static str),
    /// A control event.
    Control(Arc<ControlFrame>),
    /// Nothing to write: wakes the connection's task to look at its kill
    /// flag (see [`ClientConn::kill`](super::hub::ClientConn::kill)).
    Wake,
    /// Time for a keep-alive: the hub keeps every connection's keep-alive
    /// and expiry times, so a stream's task waits on its queue alone. It
    /// carries the hub's position: every event up to it was routed, and
    /// those for this connection are ahead of this in its queue.
    Keepalive(Option<EventId>),
    /// The rest of an event or keep-alive the hub began writing into the
    /// socket itself (the connection's direct sink, [`stream::direct`](crate::stream::direct)): written before anything else.
    Rest(Vec<u8>),
}

/// What the transport writes next: what a feed hands its encoder, made
/// from the [`Delivery`] it took.
#[derive(Debug)]
pub enum Out {
    /// An event, for the named subscription.
    Event(Arc<Frame>, &'static str),
    /// A control event.
    Control(Arc<ControlFrame>),
    /// Time for a keep-alive (SSE comment, NDJSON blank line, WebSocket
    /// ping), with the stream's position when it has one: every event it
    /// matches up to that id was written before it.
    Keepalive(Option<EventId>),
    /// Bytes already encoded: the rest of a write the hub began
    /// ([`Delivery::Rest`]).
    Raw(Vec<u8>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn refuses_past_the_bound_and_after_close() {
        let q: Queue<i32> = Queue::default();
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
        let q: Queue<i32> = Queue::default();
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

    #[test]
    fn removes_what_is_refused_and_leaves_a_filler_when_nothing_stays() {
        let q: Queue<i32> = Queue::default();
        for i in 1..=5 {
            q.push(i, 10).unwrap();
        }
        assert_eq!(q.remove_or_fill(|i| i % 2 == 0, 0), vec![1, 3, 5]);
        assert_eq!(q.try_take(), Some((2, 1)));
        assert_eq!(q.remove_or_fill(|_| false, 0), vec![4]);
        assert_eq!(q.try_take(), Some((0, 0)), "the filler, alone");
        q.close();
        assert!(q.remove_or_fill(|_| false, 0).is_empty() && q.is_empty());
    }

    #[test]
    fn takes_the_front_only_when_asked_for_it() {
        let q: Queue<i32> = Queue::default();
        assert_eq!(q.take_front_if(|_| true), None);
        q.push(1, 10).unwrap();
        q.push(2, 10).unwrap();
        assert_eq!(q.take_front_if(|&i| i == 2), None);
        assert_eq!(q.take_front_if(|&i| i == 1), Some(1));
        assert_eq!(q.try_take(), Some((2, 0)));
    }

    /// A sink that records what it takes, and takes what `takes` says.
    #[derive(Default)]
    struct Sink {
        took: Mutex<Vec<i32>>,
    }

    fn offer(q: &Queue<i32, Sink>, item: i32) -> Result<usize, Refused> {
        q.push_or(item, 10, |sink, item| {
            if item < 0 {
                // "Took part of it": the rest is queued in its place.
                sink.took.lock().unwrap().push(item);
                return Some(-item);
            }
            sink.took.lock().unwrap().push(item);
            None
        })
    }

    fn took(q: &Queue<i32, Sink>) -> Vec<i32> {
        q.lock()
            .sink
            .as_ref()
            .map(|s| s.took.lock().unwrap().clone())
            .unwrap_or_default()
    }

    /// The sink gets an item only while the taker waits on an empty queue:
    /// not before it first waits, not while something is queued, not from
    /// a take until it waits again, not after `hold`; what it takes in part
    /// is queued and wakes the taker; `close` drops it.
    #[test]
    fn the_sink_takes_only_while_the_taker_waits_on_an_empty_queue() {
        let q: Queue<i32, Sink> = Queue::default();
        q.install(Sink::default());
        let woken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let waker = counting_waker(woken.clone());
        let mut cx = Context::from_waker(&waker);
        // The taker has not waited yet: queued.
        assert_eq!(offer(&q, 1), Ok(1));
        assert_eq!(q.poll_take(&mut cx), Poll::Ready((1, 0)));
        // Busy with it (a take): queued.
        assert_eq!(offer(&q, 2), Ok(1));
        assert_eq!(q.poll_take(&mut cx), Poll::Ready((2, 0)));
        assert!(q.poll_take(&mut cx).is_pending());
        // Waiting on an empty queue: the sink takes it, nobody is woken.
        assert_eq!(offer(&q, 3), Ok(0));
        assert_eq!(offer(&q, 4), Ok(0));
        assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(took(&q), vec![3, 4]);
        // Taken in part: the rest is queued and the taker woken; from then
        // on items queue behind it.
        assert_eq!(offer(&q, -5), Ok(1));
        assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(offer(&q, 6), Ok(2));
        assert_eq!(q.try_take(), Some((5, 1)));
        assert_eq!(q.try_take(), Some((6, 0)));
        assert!(q.poll_take(&mut cx).is_pending());
        // `hold`: the taker writes something of its own.
        q.hold();
        assert_eq!(offer(&q, 7), Ok(1));
        assert_eq!(took(&q), vec![3, 4, -5]);
        assert_eq!(q.try_take(), Some((7, 0)));
        assert!(q.poll_take(&mut cx).is_pending());
        q.close();
        assert!(q.lock().sink.is_none());
        assert_eq!(offer(&q, 8), Err(Refused::Closed));
    }

    fn counting_waker(count: Arc<std::sync::atomic::AtomicUsize>) -> Waker {
        struct Count(Arc<std::sync::atomic::AtomicUsize>);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        Waker::from(Arc::new(Count(count)))
    }

    /// Every item pushed from other threads reaches a taker that sleeps
    /// whenever the queue is empty, in order: no wake-up is lost between its
    /// look at an empty queue and the next push.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_wake_up_is_lost_across_threads() {
        const N: u64 = 200_000;
        let q: Arc<Queue<u64>> = Arc::new(Queue::default());
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
