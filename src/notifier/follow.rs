//! The notifier's loop: the shards this process holds (about its share,
//! [`store::events::shard_work`](crate::store::events::shard_work)), their events worked in log order.
//!
//! In step with the log it takes the events as its process's hub hands
//! them on (`store::events::tap`), every shard's, and works those of the
//! shards it holds; it reads the buffer when they do not follow on from
//! where it is (it took shards, fell behind, or the hub lost its place).
//! Every held shard has been worked up to one point of the merged log;
//! a shard taken with a position behind it is read from there (events of
//! the others it holds already worked are passed over by their positions),
//! one taken with a position ahead passes over what it had. The shards
//! that had events in a run have their positions written (at once when
//! none were written in the last [`FLUSH`], else at its end: a busy
//! notifier writes each shard's at most every 50 ms), so a reader waiting
//! for its notifications sees them pass; the rest are brought up once a
//! second.

use super::changes::apply;
use crate::metrics::global as metrics;
use crate::shutdown::Shutdown;
use crate::store::events::{shard_of, EventId, ShardWork, Tap, Untapped};
use crate::store::{Store, StoreResult};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// The work's name: its leases and positions in each shard.
pub(super) const WORK: &str = "notifier";
/// How long a shard's lease lasts unrenewed (and a registration).
const LEASE: Duration = Duration::from_secs(5);
/// How often the leases are renewed and the shares looked at again.
const RENEW: Duration = Duration::from_secs(1);
/// Entries read at a time.
const READ_ENTRIES: usize = 256;
/// How long it waits after a failed read before trying again.
const IDLE: Duration = Duration::from_millis(250);
/// The least time between two writes of the positions of shards that
/// moved.
const FLUSH: Duration = Duration::from_millis(50);
/// Rounds between tries for a shard above this process's floor share (a
/// try is a command a shard not held).
const TRY_EXTRA_EVERY: u32 = 3;

/// The shards this process holds and how far each was worked.
struct Held {
    holder: String,
    shards: BTreeMap<usize, EventId>,
    rounds: u32,
    /// Positions moved and not yet written, and when some last were.
    dirty: BTreeMap<usize, EventId>,
    flushed: Instant,
}

impl Held {
    fn work<'a>(&self, store: &'a Store) -> ShardWork<'a> {
        store.events().work(WORK)
    }

    /// Renews the leases, lets go of shards above this process's share and
    /// takes free ones below it: the earliest position among those taken.
    async fn balance(&mut self, store: &Store) -> StoreResult<Option<EventId>> {
        let work = self.work(store);
        let ms = LEASE.as_millis() as u64;
        let workers = work.register(&self.holder, ms).await?;
        let shards = store.keys.log_shards();
        let (floor, ceil) = (shards / workers, shards.div_ceil(workers));
        let renewals = self.shards.keys().map(|&k| {
            let holder = &self.holder;
            async move { work.renew(k, holder, ms).await.map(|kept| (k, kept)) }
        });
        for (k, kept) in futures::future::try_join_all(renewals).await? {
            if !kept {
                tracing::info!(shard = k, "the notifier's lease on a shard lapsed");
                self.shards.remove(&k);
                self.dirty.remove(&k);
            }
        }
        while self.shards.len() > ceil {
            let Some((k, at)) = self.shards.pop_last() else {
                break;
            };
            work.set_positions(&[(k, at)]).await?;
            work.release(k, &self.holder).await?;
            self.dirty.remove(&k);
        }
        self.rounds = self.rounds.wrapping_add(1);
        let want = if self.shards.len() < floor {
            floor
        } else if self.shards.len() < ceil && self.rounds.is_multiple_of(TRY_EXTRA_EVERY) {
            ceil
        } else {
            return Ok(None);
        };
        // From a place of this holder's own, so that processes starting
        // together do not contend for the same shards.
        let from = self.holder.bytes().map(usize::from).sum::<usize>() % shards.max(1);
        let legacy = store
            .notifications()
            .notifier_position()
            .await?
            .as_deref()
            .and_then(EventId::parse);
        let mut earliest: Option<EventId> = None;
        for k in (0..shards).map(|i| (from + i) % shards) {
            if self.shards.len() >= want {
                break;
            }
            if self.shards.contains_key(&k) || !work.take(k, &self.holder, ms).await? {
                continue;
            }
            let at = work.start(k, legacy).await?;
            self.shards.insert(k, at);
            earliest = Some(earliest.map_or(at, |e| e.min(at)));
        }
        Ok(earliest)
    }

    /// Works the events of the held shards among `events` (the next after
    /// `at` in the merged log), and moves the positions of those that had
    /// any (written by [`Held::flush`]).
    async fn work_events(
        &mut self,
        store: &Store,
        events: &[(EventId, String)],
    ) -> StoreResult<()> {
        let Some(&(last, _)) = events.last() else {
            return Ok(());
        };
        let mine: Vec<(EventId, String)> = events
            .iter()
            .filter(|(id, _)| self.shards.get(&shard_of(*id)).is_some_and(|at| id > at))
            .cloned()
            .collect();
        apply(store, &mine).await?;
        for (id, _) in events {
            let k = shard_of(*id);
            if let Some(at) = self.shards.get_mut(&k) {
                *at = last;
                self.dirty.insert(k, last);
            }
        }
        if self.flushed.elapsed() >= FLUSH {
            self.flush(store).await?;
        }
        Ok(())
    }

    /// When the positions moved since the last write are due.
    fn flush_due(&self) -> Option<Instant> {
        (!self.dirty.is_empty()).then_some(self.flushed + FLUSH)
    }

    /// Writes the positions moved since the last write.
    async fn flush(&mut self, store: &Store) -> StoreResult<()> {
        let moved: Vec<(usize, EventId)> = self.dirty.iter().map(|(k, p)| (*k, *p)).collect();
        self.work(store).set_positions(&moved).await?;
        self.dirty.clear();
        self.flushed = Instant::now();
        Ok(())
    }

    /// Brings the positions of the held shards that had no events up to
    /// `at` (once a second: a shard taken over then starts near here).
    async fn bring_up(&mut self, store: &Store, at: EventId) -> StoreResult<()> {
        for (k, p) in self.shards.iter_mut() {
            if *p < at {
                *p = at;
                self.dirty.insert(*k, at);
            }
        }
        self.flush(store).await
    }

    /// Lets every shard go (a process shutting down), its position first,
    /// and leaves the register, so the others take them at once.
    async fn release_all(&mut self, store: &Store) {
        let work = self.work(store);
        let _ = work.unregister(&self.holder).await;
        let at: Vec<(usize, EventId)> = self.shards.iter().map(|(k, p)| (*k, *p)).collect();
        if work.set_positions(&at).await.is_ok() {
            for (k, _) in at {
                let _ = work.release(k, &self.holder).await;
            }
        }
        self.shards.clear();
        self.dirty.clear();
    }
}

/// Runs until shutdown.
pub(crate) async fn run(store: Store, tap: Tap, mut shutdown: Shutdown) {
    let mut held = Held {
        holder: format!("{}-{}", std::process::id(), rand::random::<u64>()),
        shards: BTreeMap::new(),
        rounds: 0,
        dirty: BTreeMap::new(),
        flushed: Instant::now(),
    };
    // Every held shard's events are worked up to here in the merged log.
    let mut merged: Option<EventId> = None;
    let mut tapped = tap.reader();
    let mut in_step = false;
    let mut renew_at = Instant::now();
    loop {
        if Instant::now() >= renew_at {
            renew_at = Instant::now() + RENEW;
            match held.balance(&store).await {
                Ok(Some(from)) => {
                    merged = Some(merged.map_or(from, |m| m.min(from)));
                    in_step = false;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "the notifier cannot renew its shards; retrying")
                }
            }
            metrics().notifier_shards.set(held.shards.len() as i64);
            if let Some(at) = merged {
                if let Err(e) = held.bring_up(&store, at).await {
                    tracing::warn!(error = %e, "the notifier cannot write its positions; retrying");
                }
            }
        }
        if shutdown.is_set() {
            held.release_all(&store).await;
            return;
        }
        let Some(at) = merged.filter(|_| !held.shards.is_empty()) else {
            tokio::select! {
                _ = shutdown.wait() => {}
                _ = tokio::time::sleep_until(renew_at) => {}
            }
            continue;
        };
        if !in_step {
            match store.events().following(at, READ_ENTRIES).await {
                Ok((page, _)) => match held.work_events(&store, &page.events).await {
                    Ok(()) => {
                        merged = Some(page.events.last().map_or(at, |(id, _)| *id));
                        in_step = !page.more;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the notifier cannot read or write; retrying");
                        tokio::time::sleep(IDLE).await;
                    }
                },
                Err(e) => {
                    tracing::warn!(error = %e, "the notifier cannot read or write; retrying");
                    tokio::time::sleep(IDLE).await;
                }
            }
            continue;
        }
        tokio::select! {
            _ = shutdown.wait() => {}
            run = tapped.after(at, READ_ENTRIES) => match run {
                Ok(events) => match held.work_events(&store, &events).await {
                    Ok(()) => merged = events.last().map(|(id, _)| *id).or(merged),
                    Err(e) => {
                        tracing::warn!(error = %e, "the notifier cannot read or write; retrying");
                        in_step = false;
                    }
                },
                Err(Untapped::Gap) => in_step = false,
                Err(Untapped::Closed) => {
                    in_step = false;
                    tokio::time::sleep(IDLE).await;
                }
            },
            _ = tokio::time::sleep_until(held.flush_due().unwrap_or(renew_at)),
                if held.flush_due().is_some() => {
                if let Err(e) = held.flush(&store).await {
                    tracing::warn!(error = %e, "the notifier cannot write its positions; retrying");
                }
            }
            _ = tokio::time::sleep_until(renew_at) => {}
        }
    }
}

/// Whether the notifier has made the notifications of every event the
/// log held when this was called (every shard's newest entry then, passed
/// by the shard's position), waiting up to `wait` for it: every shard read
/// once, then only the positions of those still owed.
pub(crate) async fn caught_up(store: &Store, wait: Duration) -> bool {
    let work = store.events().work(WORK);
    let Ok(marks) = work.marks().await else {
        return true;
    };
    let passed = |at: Option<EventId>, newest: EventId| {
        at.is_some_and(|at| (at.0, at.1) >= (newest.0, newest.1))
    };
    let mut owed: Vec<(usize, EventId)> = marks
        .iter()
        .enumerate()
        .filter_map(|(k, (newest, at))| newest.filter(|n| !passed(*at, *n)).map(|n| (k, n)))
        .collect();
    let deadline = Instant::now() + wait;
    while !owed.is_empty() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        let shards: Vec<usize> = owed.iter().map(|(k, _)| *k).collect();
        let Ok(at) = work.positions(&shards).await else {
            return false;
        };
        let mut at = at.into_iter();
        owed.retain(|(_, newest)| !passed(at.next().flatten(), *newest));
    }
    true
}
