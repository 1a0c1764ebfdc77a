//! Work that follows the log shard by shard (the notifier): each shard's
//! part is held by one process at a time, with a lease in the shard's own
//! slot (`fh:{e<k>}:work:<work>`); the processes doing the work register
//! in `{g}` once a second (a ZSET of holders and when each lapses), and
//! each holds about its share of the shards, so that the work of the whole
//! network is spread over them, and a process that dies leaves its shards
//! to the others within a lease. How far each shard's events have been
//! worked is kept in the shard's marks HASH (field `~p:<work>`), so that
//! whoever holds the shard next goes on from there, and a reader can ask
//! whether the work has passed every shard's newest entry
//! ([`ShardWork::marks`]).

use super::handle::Events;
use crate::store::handle::Store;
use crate::store::log::id::EventId;
use crate::store::plumbing::error::StoreResult;
use redis::AsyncCommands;

/// A piece of work that follows the log by shards (`Events::work`).
#[derive(Clone, Copy)]
pub struct ShardWork<'a> {
    store: &'a Store,
    work: &'static str,
}

impl<'a> Events<'a> {
    /// The work named `work` (one name a kind of work: `notifier`).
    pub fn work(self, work: &'static str) -> ShardWork<'a> {
        ShardWork {
            store: self.store,
            work,
        }
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl ShardWork<'_> {
    fn field(&self) -> String {
        format!("~p:{}", self.work)
    }

    /// Registers `holder` as doing the work for `ms` more, drops those that
    /// lapsed: how many do it now (`holder` among them). One slot (`{g}`),
    /// one atomic pipeline.
    pub async fn register(self, holder: &str, ms: u64) -> StoreResult<usize> {
        let key = self.store.keys.log_workers(self.work);
        let now = now_ms();
        let mut conn = self.store.conn();
        let (_, _, n): (i64, i64, usize) = redis::pipe()
            .atomic()
            .zadd(&key, holder, now + ms)
            .zrembyscore(&key, "-inf", now)
            .zcard(&key)
            .query_async(&mut conn)
            .await?;
        Ok(n.max(1))
    }

    /// Takes `holder` off the register (a process stopping): the others'
    /// shares grow at their next look.
    pub async fn unregister(self, holder: &str) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: i64 = conn
            .zrem(self.store.keys.log_workers(self.work), holder)
            .await?;
        Ok(())
    }

    /// Takes shard `k` for `holder` for `ms` if no one holds it; whether
    /// it did.
    pub async fn take(self, k: usize, holder: &str, ms: u64) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let taken: Option<String> = redis::cmd("SET")
            .arg(self.store.keys.log_work_lease(k, self.work))
            .arg(holder)
            .arg("NX")
            .arg("PX")
            .arg(ms)
            .query_async(&mut conn)
            .await?;
        Ok(taken.is_some())
    }

    /// Keeps shard `k` for `holder` `ms` more; false when `holder` no
    /// longer holds it (its lease lapsed and another took it).
    pub async fn renew(self, k: usize, holder: &str, ms: u64) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let kept: i64 = self
            .store
            .scripts
            .lease_renew
            .key(self.store.keys.log_work_lease(k, self.work))
            .arg(holder)
            .arg(ms)
            .invoke_async(&mut conn)
            .await?;
        Ok(kept == 1)
    }

    /// Lets shard `k` go, if `holder` holds it.
    pub async fn release(self, k: usize, holder: &str) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: i64 = self
            .store
            .scripts
            .lease_release
            .key(self.store.keys.log_work_lease(k, self.work))
            .arg(holder)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    /// How far shard `k`'s events have been worked (`None`: never).
    pub async fn position(self, k: usize) -> StoreResult<Option<EventId>> {
        let mut conn = self.store.conn();
        let at: Option<String> = conn
            .hget(self.store.keys.log_emitted(k), self.field())
            .await?;
        Ok(at.as_deref().and_then(EventId::parse))
    }

    /// How far each of `shards` has been worked (each its own slot, all at
    /// once).
    pub async fn positions(self, shards: &[usize]) -> StoreResult<Vec<Option<EventId>>> {
        futures::future::try_join_all(shards.iter().map(|&k| self.position(k))).await
    }

    /// Shard `k`'s events have been worked up to `at` (each its own slot,
    /// all at once).
    pub async fn set_positions(self, at: &[(usize, EventId)]) -> StoreResult<()> {
        let field = self.field();
        let sets = at.iter().map(|(k, id)| {
            let (key, field, id) = (self.store.keys.log_emitted(*k), field.clone(), *id);
            async move {
                let mut conn = self.store.conn();
                let _: () = conn.hset(key, field, id.to_string()).await?;
                StoreResult::Ok(())
            }
        });
        futures::future::try_join_all(sets).await?;
        Ok(())
    }

    /// Where shard `k`'s work goes on from: its position; else (the work
    /// never held it) `legacy`, where one process doing all of it had got
    /// to; else after the shard's newest entry (a new store: no work of
    /// the past). Written as its position when it had none.
    pub async fn start(self, k: usize, legacy: Option<EventId>) -> StoreResult<EventId> {
        if let Some(at) = self.position(k).await? {
            return Ok(at);
        }
        let at = match legacy {
            Some(at) => at,
            None => {
                let mut conn = self.store.conn();
                let newest: Vec<(String, Vec<(String, String)>)> = redis::cmd("XREVRANGE")
                    .arg(self.store.keys.log_events(k))
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1)
                    .query_async(&mut conn)
                    .await?;
                newest
                    .first()
                    .and_then(|(id, _)| EventId::parse(id))
                    .map_or(EventId::ZERO, |e| e.last_of_entry())
            }
        };
        self.set_positions(&[(k, at)]).await?;
        Ok(at)
    }

    /// Each shard's newest entry and the work's position in it (`None`:
    /// none), read at one moment a shard (on one Redis one call, on a
    /// cluster one a shard, eight at a time).
    pub async fn marks(self) -> StoreResult<Vec<(Option<EventId>, Option<EventId>)>> {
        use futures::{StreamExt, TryStreamExt};
        let store = self.store;
        let shards = store.keys.log_shards();
        let groups: Vec<Vec<usize>> = if store.is_cluster() {
            (0..shards).map(|k| vec![k]).collect()
        } else {
            vec![(0..shards).collect()]
        };
        let field = self.field();
        let reads = groups.into_iter().map(|group| {
            let field = field.clone();
            async move {
                let mut conn = store.conn();
                let mut inv = store.scripts.work_marks.prepare_invoke();
                for k in group {
                    inv.key(store.keys.log_events(k))
                        .key(store.keys.log_emitted(k));
                }
                let ids: Vec<String> = inv.arg(field).invoke_async(&mut conn).await?;
                StoreResult::Ok(ids)
            }
        });
        let groups: Vec<Vec<String>> = futures::stream::iter(reads)
            .buffered(8)
            .try_collect()
            .await?;
        Ok(groups
            .concat()
            .chunks(2)
            .map(|pair| {
                let id = |i: usize| pair.get(i).and_then(|s| EventId::parse(s));
                (id(0), id(1))
            })
            .collect())
    }
}
