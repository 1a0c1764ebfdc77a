//! The heads of home timelines kept in process, kept true by Redis itself
//! (server-assisted client-side caching: `CLIENT TRACKING`).
//!
//! A home read starts with the ids at the top of the reader's home. This
//! cache keeps that first chunk per home, read over one dedicated RESP3
//! connection (the *link*) on which tracking is on: Redis remembers every
//! key read over it and, at the first later change of such a key by anyone
//! (any process, any connection, a script, an expiry, `FLUSHALL`), pushes an
//! `invalidate` message down the link. The link's reader hands each push to
//! [`Shared::on_push`] inline, before it reads the next reply, so pushes
//! and replies are applied in the order Redis wrote them.
//!
//! Invariants (what makes a hit as fresh as a read from Redis):
//!
//! 1. **Barrier.** A hit is answered only after a `PING` sent on the link
//!    after the read began has come back. Any write that completed before
//!    the read began was executed by Redis before that `PING`, so its
//!    invalidation was written to the link before the `PONG` and applied
//!    before the barrier opens. One `PING` serves every read waiting when
//!    it is sent ([`Barrier`]).
//! 2. **Fills cannot resurrect.** A miss puts a `Filling` token under the
//!    key before it sends the read; the answer is kept only if that token is
//!    still there. An invalidation applied in between removes the token, so
//!    an answer that a change may have overtaken is used once and not kept.
//! 3. **One link at a time.** Entries name the link they were read over and
//!    are served only through that link's barrier. When the link breaks (its
//!    reader sees the connection close, a `PING` or read fails or times
//!    out) the cache is emptied and reads go to Redis the ordinary way until
//!    a new link, with tracking on, replaces it (at most one attempt a
//!    second).
//!
//! Bounds: `--home-cache` entries (each the first chunk of one home, at
//! most 64 ids; 35 for the default page of 30), then an arbitrary entry is
//! evicted per new one; Redis keeps one
//! tracking-table entry per key read over the link, bounded by its own
//! `tracking-table-max-keys` (evicting from it sends an invalidation). Not
//! used on a Redis Cluster (the link would be one per node).

use crate::metrics;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ProtocolVersion, PushInfo, PushKind, Script, Value};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

/// How long a link waits on Redis before it is given up.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// The most ids an entry holds (a page of up to 55 statuses; larger
/// pages read Redis), so the cache stays within `--home-cache` × ~600 bytes.
const MAX_IDS: usize = 64;
/// Least time between two attempts to open a link.
const RETRY: Duration = Duration::from_secs(1);

/// The ids of a home's first chunk, newest first, from its ids joined by
/// commas (`home_ids.lua`).
pub fn split_ids(joined: &str) -> Vec<u64> {
    joined.split(',').filter_map(|id| id.parse().ok()).collect()
}

enum Entry {
    /// A read is on its way; its answer is kept only if this token stays.
    Filling(u64),
    /// The ids of ranks `0..=stop`, read over link `link`.
    Ready {
        link: u64,
        stop: isize,
        ids: Arc<[u64]>,
    },
}

/// The `PING` round trips that order a hit after every earlier write.
struct Barrier {
    /// PINGs sent so far (the number of the latest).
    issued: AtomicU64,
    /// Asks the barrier task for a new PING.
    wake: Notify,
    /// The latest PING answered, and whether the link has broken.
    done: watch::Sender<(u64, bool)>,
}

impl Barrier {
    fn new() -> Barrier {
        Barrier {
            issued: AtomicU64::new(0),
            wake: Notify::new(),
            done: watch::channel((0, false)).0,
        }
    }

    /// Waits for a PING sent after this call began to come back; `false`
    /// when the link broke instead.
    async fn pass(&self) -> bool {
        let mut done = self.done.subscribe();
        // A PING numbered above the one issued now is sent after now.
        let target = self.issued.load(Ordering::SeqCst) + 1;
        self.wake.notify_one();
        let passed = match done
            .wait_for(|&(seen, broken)| broken || seen >= target)
            .await
        {
            Ok(state) => !state.1,
            Err(_) => false,
        };
        passed
    }

    fn break_off(&self) {
        self.done.send_modify(|state| state.1 = true);
        self.wake.notify_one();
    }

    fn broken(&self) -> bool {
        self.done.borrow().1
    }

    /// The barrier task: one PING per wake-up, for every read waiting then.
    async fn run(self: Arc<Barrier>, mut conn: MultiplexedConnection) {
        loop {
            self.wake.notified().await;
            if self.broken() {
                return;
            }
            let number = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
            let answered = matches!(
                tokio::time::timeout(
                    RESPONSE_TIMEOUT,
                    redis::cmd("PING").query_async::<Value>(&mut conn)
                )
                .await,
                Ok(Ok(_))
            );
            self.done.send_modify(|state| {
                state.0 = number;
                state.1 |= !answered;
            });
            if !answered {
                return;
            }
        }
    }
}

/// The tracking connection.
struct Link {
    id: u64,
    conn: MultiplexedConnection,
    barrier: Arc<Barrier>,
}

struct Shared {
    entries: Mutex<FxHashMap<Box<[u8]>, Entry>>,
    link: Mutex<Option<Arc<Link>>>,
    cap: usize,
    next_token: AtomicU64,
    next_link: AtomicU64,
    connecting: AtomicBool,
    last_attempt: Mutex<Option<Instant>>,
}

impl Shared {
    /// A push from link `link`'s reader, applied before its next reply.
    fn on_push(&self, link: u64, info: PushInfo) {
        match info.kind {
            PushKind::Invalidate => match info.data.first() {
                Some(Value::Array(keys)) => {
                    let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
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
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Gives link `id` up (if it is still the current one): the cache is
    /// emptied, since what the link would have invalidated is unknown.
    fn lose(&self, id: u64) {
        let mut link = self.link.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(current) = link.as_ref().filter(|l| l.id == id) {
            current.barrier.break_off();
            *link = None;
            tracing::warn!("home cache: the tracking connection to Redis was lost");
        }
        drop(link);
        self.clear();
    }
}

/// The cache; cheap to share. `None` link: reads go to Redis directly.
#[derive(Clone)]
pub struct HomeCache {
    client: Option<Client>,
    shared: Arc<Shared>,
}

impl HomeCache {
    /// A cache of `cap` homes over its own RESP3 connection to the Redis
    /// `client` talks to; `None` or `cap` 0: disabled.
    pub fn new(client: Option<&Client>, cap: usize) -> HomeCache {
        let client = client.filter(|_| cap > 0).map(|c| {
            let info = c.get_connection_info().clone();
            let redis = info
                .redis_settings()
                .clone()
                .set_protocol(ProtocolVersion::RESP3);
            Client::open(info.set_redis_settings(redis)).unwrap_or_else(|_| c.clone())
        });
        HomeCache {
            client,
            shared: Arc::new(Shared {
                entries: Mutex::new(FxHashMap::default()),
                link: Mutex::new(None),
                cap,
                next_token: AtomicU64::new(1),
                next_link: AtomicU64::new(1),
                connecting: AtomicBool::new(false),
                last_attempt: Mutex::new(None),
            }),
        }
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.shared
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids at ranks `0..=stop` of the home at `key`, newest first, as
    /// `script` (`home_ids.lua`) reads them, from the cache or over the
    /// link; `None` when there is no link or the head is longer than
    /// [`MAX_IDS`] (the caller reads from Redis).
    pub async fn head(&self, key: &str, stop: isize, script: &Script) -> Option<Arc<[u64]>> {
        if stop >= MAX_IDS as isize {
            return None;
        }
        let link = self.link()?;
        let k = key.as_bytes();
        let m = metrics::global();
        let held = |entries: &FxHashMap<Box<[u8]>, Entry>| match entries.get(k) {
            Some(Entry::Ready {
                link: l,
                stop: s,
                ids,
            }) if *l == link.id && *s == stop => Some(ids.clone()),
            _ => None,
        };
        if held(&self.entries()).is_some() {
            if !link.barrier.pass().await {
                self.shared.lose(link.id);
                return None;
            }
            if let Some(ids) = held(&self.entries()) {
                metrics::inc(&m.home_cache_hits, 1);
                return Some(ids);
            }
        }
        let token = self.shared.next_token.fetch_add(1, Ordering::Relaxed);
        {
            let mut entries = self.entries();
            if entries.len() >= self.shared.cap && !entries.contains_key(k) {
                if let Some(victim) = entries.keys().next().cloned() {
                    entries.remove(&victim);
                }
            }
            entries.insert(k.into(), Entry::Filling(token));
        }
        let mut conn = link.conn.clone();
        let read = tokio::time::timeout(
            RESPONSE_TIMEOUT,
            script
                .key(key)
                .arg(0)
                .arg(stop)
                .invoke_async::<String>(&mut conn),
        )
        .await;
        let Ok(Ok(joined)) = read else {
            self.shared.lose(link.id);
            return None;
        };
        let ids: Arc<[u64]> = split_ids(&joined).into();
        metrics::inc(&m.home_cache_fills, 1);
        let mut entries = self.entries();
        if let Some(entry) = entries.get_mut(k) {
            if matches!(entry, Entry::Filling(t) if *t == token) {
                *entry = Entry::Ready {
                    link: link.id,
                    stop,
                    ids: ids.clone(),
                };
            }
        }
        Some(ids)
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, FxHashMap<Box<[u8]>, Entry>> {
        self.shared
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The current link, or `None` (and an attempt to open one begun, at
    /// most once a second).
    fn link(&self) -> Option<Arc<Link>> {
        let client = self.client.as_ref()?;
        if let Some(link) = self
            .shared
            .link
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Some(link);
        }
        if self.shared.connecting.swap(true, Ordering::AcqRel) {
            return None;
        }
        let now = Instant::now();
        {
            let mut last = self
                .shared
                .last_attempt
                .lock()
                .unwrap_or_else(|e| e.into_inner());
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
                tracing::debug!(error = %e, "home cache: no tracking connection");
            }
            shared.connecting.store(false, Ordering::Release);
        });
        None
    }
}

/// Opens a link: a RESP3 connection whose pushes go to `shared`, with
/// tracking on, then installs it with an empty cache and its barrier task.
async fn open(client: &Client, shared: &Arc<Shared>) -> redis::RedisResult<()> {
    let id = shared.next_link.fetch_add(1, Ordering::Relaxed);
    let weak: Weak<Shared> = Arc::downgrade(shared);
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
        .arg("firehose-home-cache")
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
    *shared.link.lock().unwrap_or_else(|e| e.into_inner()) = Some(link);
    tracing::info!("home cache: tracking connection to Redis open");
    Ok(())
}
