//! Values read from Redis kept in process, kept true by Redis itself
//! (server-assisted client-side caching: `CLIENT TRACKING`). The machinery
//! under [`home_cache`](super::home_cache) and [`view_cache`](super::view_cache).
//!
//! A cache reads its keys over one dedicated RESP3 connection (the *link*)
//! on which tracking is on: Redis remembers every key read over it and, at
//! the first later change of such a key by anyone (any process, any
//! connection, a script, an expiry, `FLUSHALL`), pushes an `invalidate`
//! message down the link. The link's reader hands each push to
//! [`Shared::on_push`] inline, before it reads the next reply, so pushes
//! and replies are applied in the order Redis wrote them.
//!
//! Invariants (what makes a hit as fresh as a read from Redis):
//!
//! 1. **Barrier.** A hit is answered only after a command sent on the link
//!    after the read began has come back: a `PING` ([`Link::pass`]), or a
//!    fill of another key the same read needs. Any write that completed
//!    before the read began was executed by Redis before that command, so
//!    its invalidation was written to the link before the reply and applied
//!    before the barrier opens. One `PING` serves every read waiting when it
//!    is sent.
//! 2. **Fills cannot resurrect.** A miss puts a `Filling` token under the
//!    key before it sends the read ([`Tracked::reserve`]); the answer is kept
//!    only if that token is still there ([`Tracked::keep`]). An invalidation
//!    applied in between removes the token, so an answer that a change may
//!    have overtaken is used once and not kept.
//! 3. **One link at a time.** Entries name the link they were read over and
//!    are served only through that link's barrier. When the link breaks (its
//!    reader sees the connection close, a `PING` or read fails or times
//!    out) the cache is emptied and reads go to Redis the ordinary way until
//!    a new link, with tracking on, replaces it (at most one attempt a
//!    second).
//!
//! Bounds: `cap` entries, then an arbitrary entry is evicted per new one;
//! Redis keeps one tracking-table entry per key read over the link, bounded
//! by its own `tracking-table-max-keys` (evicting from it sends an
//! invalidation). Never used on a Redis Cluster (the link would be one per
//! node).

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ProtocolVersion, PushInfo, PushKind, Value};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

/// How long a link waits on Redis before it is given up.
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// Least time between two attempts to open a link.
const RETRY: Duration = Duration::from_secs(1);

enum Entry<V> {
    /// A read is on its way; its answer is kept only if this token stays.
    Filling(u64),
    /// A value read over link `link`.
    Ready { link: u64, value: V },
}

/// How a wait on the link ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Passage {
    /// The barrier (or the read) came back: what is held is fresh.
    Passed,
    /// The link broke (closed, or an error): read Redis the ordinary way.
    Lost,
    /// Redis did not answer within [`RESPONSE_TIMEOUT`]: it is unavailable,
    /// and an ordinary read would wait as long again.
    TimedOut,
}

impl Passage {
    /// The caller's answer when the wait did not pass: `Ok` to read Redis
    /// directly, `Err` when Redis did not answer in time.
    pub(crate) fn fallback(self) -> Result<(), crate::store::plumbing::error::StoreError> {
        match self {
            Passage::TimedOut => Err(crate::store::plumbing::error::StoreError::Unavailable(
                "Redis did not answer the cache's connection in time".into(),
            )),
            _ => Ok(()),
        }
    }
}

/// The `PING` round trips that order a hit after every earlier write.
struct Barrier {
    /// PINGs sent so far (the number of the latest).
    issued: AtomicU64,
    /// Asks the barrier task for a new PING.
    wake: Notify,
    /// The latest PING answered, and how the link failed if it did.
    done: watch::Sender<(u64, Option<Passage>)>,
}

impl Barrier {
    fn new() -> Barrier {
        Barrier {
            issued: AtomicU64::new(0),
            wake: Notify::new(),
            done: watch::channel((0, None)).0,
        }
    }

    /// Waits for a PING sent after this call began to come back, or for
    /// the link to fail.
    async fn pass(&self) -> Passage {
        let mut done = self.done.subscribe();
        // A PING numbered above the one issued now is sent after now.
        let target = self.issued.load(Ordering::SeqCst) + 1;
        self.wake.notify_one();
        let passage = match done
            .wait_for(|&(seen, failed)| failed.is_some() || seen >= target)
            .await
        {
            Ok(state) => state.1.unwrap_or(Passage::Passed),
            Err(_) => Passage::Lost,
        };
        passage
    }

    fn break_off(&self, how: Passage) {
        self.done.send_modify(|state| {
            state.1.get_or_insert(how);
        });
        self.wake.notify_one();
    }

    fn broken(&self) -> bool {
        self.done.borrow().1.is_some()
    }

    /// The barrier task: one PING per wake-up, for every read waiting then.
    async fn run(self: Arc<Barrier>, mut conn: MultiplexedConnection) {
        loop {
            self.wake.notified().await;
            // Let the reads that are about to wait join this PING (0.23
            // PINGs a like in `bench/write_cost.sh` without, 0.14 with).
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            if self.broken() {
                return;
            }
            let number = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
            let failure = match tokio::time::timeout(
                RESPONSE_TIMEOUT,
                redis::cmd("PING").query_async::<Value>(&mut conn),
            )
            .await
            {
                Ok(Ok(_)) => None,
                Ok(Err(e)) if !e.is_timeout() => Some(Passage::Lost),
                _ => Some(Passage::TimedOut),
            };
            self.done.send_modify(|state| {
                state.0 = number;
                if let Some(how) = failure {
                    state.1.get_or_insert(how);
                }
            });
            if failure.is_some() {
                return;
            }
        }
    }
}

/// The tracking connection.
pub(crate) struct Link {
    id: u64,
    conn: MultiplexedConnection,
    barrier: Arc<Barrier>,
}

impl Link {
    /// The connection to read over (tracked: what is read is invalidated).
    pub(crate) fn conn(&self) -> MultiplexedConnection {
        self.conn.clone()
    }

    /// Waits until every write completed before this call is applied to
    /// the cache (a `PING` shared with every read waiting), or the link
    /// fails.
    async fn pass(&self) -> Passage {
        self.barrier.pass().await
    }
}

struct Shared<V> {
    entries: Mutex<FxHashMap<Box<[u8]>, Entry<V>>>,
    link: Mutex<Option<Arc<Link>>>,
    cap: usize,
    name: &'static str,
    next_token: AtomicU64,
    next_link: AtomicU64,
    connecting: AtomicBool,
    last_attempt: Mutex<Option<Instant>>,
}

impl<V> Shared<V> {
    /// A push from link `link`'s reader, applied before its next reply.
    fn on_push(&self, link: u64, info: PushInfo) {
        match info.kind {
            PushKind::Invalidate => match info.data.first() {
                Some(Value::Array(keys)) => {
                    let mut entries = lock(&self.entries);
                    for key in keys {
                        if let Value::BulkString(key) = key {
                            entries.remove(key.as_slice());
                        }
                    }
                }
                // `FLUSHALL`/`FLUSHDB`: a null instead of keys.
                _ => self.clear(),
            },
            PushKind::Disconnection => self.lose(link),
            _ => {}
        }
    }

    fn clear(&self) {
        lock(&self.entries).clear();
    }

    /// Gives link `id` up (if it is still the current one): the cache is
    /// emptied, since what the link would have invalidated is unknown.
    fn lose(&self, id: u64) {
        let mut link = lock(&self.link);
        if let Some(current) = link.as_ref().filter(|l| l.id == id) {
            current.barrier.break_off(Passage::Lost);
            *link = None;
            tracing::warn!(
                cache = self.name,
                "the tracking connection to Redis was lost"
            );
        }
        drop(link);
        self.clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The cache; cheap to share. Without a link, callers read Redis directly.
pub(crate) struct Tracked<V> {
    client: Option<Client>,
    shared: Arc<Shared<V>>,
}

impl<V> Clone for Tracked<V> {
    fn clone(&self) -> Self {
        Tracked {
            client: self.client.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<V: Clone + Send + 'static> Tracked<V> {
    /// A cache of `cap` entries over its own RESP3 connection (named
    /// `firehose-<name>`) to the Redis `client` talks to; `None` or `cap` 0:
    /// disabled.
    pub(crate) fn new(client: Option<&Client>, cap: usize, name: &'static str) -> Tracked<V> {
        let client = client.filter(|_| cap > 0).map(|c| {
            let info = c.get_connection_info().clone();
            let redis = info
                .redis_settings()
                .clone()
                .set_protocol(ProtocolVersion::RESP3);
            Client::open(info.set_redis_settings(redis)).unwrap_or_else(|_| c.clone())
        });
        Tracked {
            client,
            shared: Arc::new(Shared {
                entries: Mutex::new(FxHashMap::default()),
                link: Mutex::new(None),
                cap,
                name,
                next_token: AtomicU64::new(1),
                next_link: AtomicU64::new(1),
                connecting: AtomicBool::new(false),
                last_attempt: Mutex::new(None),
            }),
        }
    }

    /// The value held for `key` as read over `link`, with no barrier: a
    /// candidate, to be confirmed after one ([`Link::pass`]).
    pub(crate) fn held(&self, link: &Link, key: &[u8]) -> Option<V> {
        match lock(&self.shared.entries).get(key) {
            Some(Entry::Ready { link: l, value }) if *l == link.id => Some(value.clone()),
            _ => None,
        }
    }

    /// The value held for `key`, as fresh as a read from Redis begun now:
    /// looked up, then confirmed after the barrier; `Ok(None)` on a miss,
    /// the failure when the link failed (it is given up).
    pub(crate) async fn hit(&self, link: &Link, key: &[u8]) -> Result<Option<V>, Passage> {
        if self.held(link, key).is_none() {
            return Ok(None);
        }
        self.pass(link).await?;
        Ok(self.held(link, key))
    }

    /// `read` (a command sent over `link`'s connection) within
    /// [`RESPONSE_TIMEOUT`], giving the link up when it fails.
    pub(crate) async fn timed<T>(
        &self,
        link: &Link,
        read: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, Passage> {
        let failed = match tokio::time::timeout(RESPONSE_TIMEOUT, read).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) if !e.is_timeout() => Passage::Lost,
            // The connection's own response timeout, or this one.
            _ => Passage::TimedOut,
        };
        self.lose(link);
        Err(failed)
    }

    /// [`Link::pass`], giving the link up when it failed.
    pub(crate) async fn pass(&self, link: &Link) -> Result<(), Passage> {
        match link.pass().await {
            Passage::Passed => Ok(()),
            failed => {
                self.lose(link);
                Err(failed)
            }
        }
    }

    /// Marks `key` as being read (evicting an arbitrary entry when full);
    /// the token to [`Tracked::keep`] its answer with.
    pub(crate) fn reserve(&self, key: &[u8]) -> u64 {
        let token = self.shared.next_token.fetch_add(1, Ordering::Relaxed);
        let mut entries = lock(&self.shared.entries);
        if entries.len() >= self.shared.cap && !entries.contains_key(key) {
            if let Some(victim) = entries.keys().next().cloned() {
                entries.remove(&victim);
            }
        }
        entries.insert(key.into(), Entry::Filling(token));
        token
    }

    /// Keeps `value`, read over `link` after [`Tracked::reserve`] gave
    /// `token`, unless an invalidation of `key` came first.
    pub(crate) fn keep(&self, link: &Link, key: &[u8], token: u64, value: V) {
        let mut entries = lock(&self.shared.entries);
        if let Some(entry) = entries.get_mut(key) {
            if matches!(entry, Entry::Filling(t) if *t == token) {
                *entry = Entry::Ready {
                    link: link.id,
                    value,
                };
            }
        }
    }

    /// Gives `link` up after it failed: the cache empties and reads go to
    /// Redis until a new link is open.
    pub(crate) fn lose(&self, link: &Link) {
        self.shared.lose(link.id);
    }

    /// The current link, or `None` (and an attempt to open one begun, at
    /// most once a second).
    pub(crate) fn link(&self) -> Option<Arc<Link>> {
        let client = self.client.as_ref()?;
        if let Some(link) = lock(&self.shared.link).clone() {
            return Some(link);
        }
        if self.shared.connecting.swap(true, Ordering::AcqRel) {
            return None;
        }
        let now = Instant::now();
        {
            let mut last = lock(&self.shared.last_attempt);
            if last.is_some_and(|t| now.duration_since(t) < RETRY) {
                self.shared.connecting.store(false, Ordering::Release);
                return None;
            }
            *last = Some(now);
        }
        let client = client.clone();
        let shared = self.shared.clone();
        tokio::spawn(async move {
            if let Err(e) = open(&client, &shared).await {
                tracing::debug!(cache = shared.name, error = %e, "no tracking connection");
            }
            shared.connecting.store(false, Ordering::Release);
        });
        None
    }
}

/// Opens a link: a RESP3 connection whose pushes go to `shared`, with
/// tracking on, then installs it with an empty cache and its barrier task.
async fn open<V: Send + 'static>(
    client: &Client,
    shared: &Arc<Shared<V>>,
) -> redis::RedisResult<()> {
    let id = shared.next_link.fetch_add(1, Ordering::Relaxed);
    let weak: Weak<Shared<V>> = Arc::downgrade(shared);
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
        .set_push_sender(move |info: PushInfo| -> Result<(), ()> {
            if let Some(shared) = weak.upgrade() {
                shared.on_push(id, info);
            }
            Ok(())
        });
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    redis::pipe()
        .cmd("CLIENT")
        .arg("SETNAME")
        .arg(format!("firehose-{}", shared.name))
        .ignore()
        .cmd("CLIENT")
        .arg("TRACKING")
        .arg("ON")
        .ignore()
        .query_async::<()>(&mut conn)
        .await?;
    let barrier = Arc::new(Barrier::new());
    tokio::spawn(barrier.clone().run(conn.clone()));
    let link = Arc::new(Link { id, conn, barrier });
    shared.clear();
    *lock(&shared.link) = Some(link);
    tracing::info!(cache = shared.name, "tracking connection to Redis open");
    Ok(())
}
