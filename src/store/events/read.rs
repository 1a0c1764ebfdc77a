//! Reading the log back: every shard read at once (`log_read.lua`, each
//! with its node's time), merged in id order and cut where what some shard
//! holds is not yet known, so a page never skips an event that a later
//! page would have to put before its end.
//!
//! A shard read to its end is known up to its node's time then (no later
//! entry there can get an id below it); one whose read stopped at its count
//! is known up to its last entry. A page holds the merged events below the
//! least of these, and says `more` when any shard had more or any event was
//! cut: the next page, from its last event, goes on with no gap and no
//! duplicate. Each shard is asked for about twice its share of the page
//! (the writes spread evenly over the shards), never less than one entry,
//! so a page always moves.

use super::handle::Events;
use super::info::BufferInfo;
use crate::store::log::id::{entry, EventId, EventPage};
use crate::store::plumbing::error::{StoreError, StoreResult};

type Rows = Vec<(String, Vec<String>)>;

/// Shards read at once by one merged read on a cluster.
const READS_AT_ONCE: usize = 8;

/// One shard's part of a read.
struct ShardRead {
    /// Forward, below this (exclusive) everything in the shard was read;
    /// backward, from this (inclusive) on.
    known: EventId,
    /// Every later entry of the shard has an id at or above this (its
    /// node's time at the read).
    floor: EventId,
    rows: Rows,
    /// What the shard lost, when asked.
    lost: Option<BufferInfo>,
}

/// The entries to ask each of `shards` for in a page of `count`.
fn per_shard(count: usize, shards: usize) -> usize {
    (count * 2 / shards.max(1)).clamp(1, count.max(1))
}

/// The shard an id of the sharded log was made in (`log_append.lua`: the
/// low ten bits of its sequence).
pub fn shard_of(id: EventId) -> usize {
    (id.1 % 1024) as usize
}

impl Events<'_> {
    /// Reads every shard (or those of `only`) from `from` towards `to`
    /// (forward or not), at most `most` entries each: on one Redis in one
    /// call, on a cluster one call a shard (each in its slot), all at once.
    async fn read_shards(
        self,
        forward: bool,
        from: &str,
        to: &str,
        most: usize,
        lost: bool,
        only: Option<&[usize]>,
    ) -> StoreResult<Vec<ShardRead>> {
        let store = self.store;
        let shards: Vec<usize> = match only {
            Some(only) => only.to_vec(),
            None => (0..store.keys.log_shards()).collect(),
        };
        let groups: Vec<Vec<usize>> = if store.is_cluster() {
            shards.into_iter().map(|k| vec![k]).collect()
        } else {
            vec![shards]
        };
        let reads = groups.into_iter().map(|group| async move {
            let mut conn = store.conn();
            let mut inv = store.scripts.log_read.prepare_invoke();
            for &k in &group {
                inv.key(store.keys.log_events(k));
            }
            inv.arg(if forward { "f" } else { "b" })
                .arg(from)
                .arg(to)
                .arg(most)
                .arg(if lost { "i" } else { "" });
            let reply: Vec<redis::Value> = inv.invoke_async(&mut conn).await?;
            parse_reads(reply, group.len(), forward, most, lost)
        });
        // At most 8 shards' reads under way at once: a cluster failing over
        // is not sent a request a shard for every reader at once.
        use futures::{StreamExt, TryStreamExt};
        let groups: Vec<Vec<ShardRead>> = futures::stream::iter(reads)
            .buffered(READS_AT_ONCE)
            .try_collect()
            .await?;
        Ok(groups.into_iter().flatten().collect())
    }

    /// The events strictly after `after`, in log order, from at most about
    /// `count` (`more` when the page stopped short of what is known).
    pub async fn after(self, after: EventId, count: usize) -> StoreResult<EventPage> {
        Ok(self.forward(after, count, None).await?.0)
    }

    /// [`Events::after`] in the shards of `only` alone: the events of a
    /// partition of the log (`keys::log_shard`: partition `k` of `n`, where
    /// `n` divides the shards, is the shards `j` with `j % n == k`), read
    /// and merged without the others'.
    pub async fn after_in(
        self,
        after: EventId,
        count: usize,
        only: &[usize],
    ) -> StoreResult<EventPage> {
        Ok(self.forward(after, count, Some(only)).await?.0)
    }

    /// The shards that hold partition `index` of `of` of the log, when `of`
    /// divides the shards (`None`: every shard holds some of it).
    pub fn partition_shards(self, index: usize, of: usize) -> Option<Vec<usize>> {
        let shards = self.store.keys.log_shards();
        (of > 1 && shards.is_multiple_of(of)).then(|| (index..shards).step_by(of).collect())
    }

    /// [`Events::after`] (in `only`'s shards, or all), and the shard reads
    /// it made.
    async fn forward(
        self,
        after: EventId,
        count: usize,
        only: Option<&[usize]>,
    ) -> StoreResult<(EventPage, Vec<BufferInfo>)> {
        let shards = only.map_or(self.store.keys.log_shards(), <[usize]>::len);
        let most = per_shard(count, shards) + 1;
        let mut from = after;
        let mut held: Option<Vec<BufferInfo>> = None;
        loop {
            let reads = self
                .read_shards(true, &from.entry(), "+", most, held.is_none(), only)
                .await?;
            let bound = reads.iter().map(|r| r.known).min().unwrap_or(EventId::ZERO);
            let mut more = reads.iter().any(|r| r.rows.len() >= most);
            // What each shard lost, as the first read found it.
            let firsts = held.get_or_insert_with(|| {
                reads
                    .iter()
                    .map(|r| r.lost.clone().unwrap_or_default())
                    .collect()
            });
            let mut events: Vec<(EventId, String)> = reads
                .into_iter()
                .flat_map(|r| r.rows.into_iter().flat_map(entry))
                .filter(|(id, _)| *id > from)
                .collect();
            events.sort_unstable_by_key(|(id, _)| *id);
            if let Some(cut) = events.iter().position(|(id, _)| *id >= bound) {
                events.truncate(cut);
                more = true;
            }
            if events.len() > count.max(1) {
                events.truncate(count.max(1));
                more = true;
            }
            // Entries that hold no event (none of this server's writing)
            // are passed over, so that a page that says `more` has moved.
            if events.is_empty() && more && bound.just_before() > from {
                from = bound.just_before();
                continue;
            }
            let firsts = std::mem::take(firsts);
            let lost = firsts.iter().any(|i| i.lost_after(after));
            return Ok((EventPage { events, more, lost }, firsts));
        }
    }

    /// For the history's archiver and the notifier: the events after
    /// `after` (as [`Events::after`]), and whether every shard still holds
    /// what followed `after` (when one does not, it may have dropped events
    /// after it unread).
    pub async fn following(self, after: EventId, count: usize) -> StoreResult<(EventPage, bool)> {
        let (page, _) = self.forward(after, count, None).await?;
        let held = !page.lost;
        Ok((page, held))
    }

    /// What the shards lost, over all of them (`Events::buffer_info`).
    pub(super) async fn shards_lost(self) -> StoreResult<Vec<BufferInfo>> {
        let reads = self.read_shards(true, "+", "+", 1, true, None).await?;
        Ok(reads
            .into_iter()
            .map(|r| r.lost.unwrap_or_default())
            .collect())
    }

    /// The events older than `before`'s entry (`None`: the newest known),
    /// newest first, about `count` of them (`more` when older ones remain).
    pub async fn before(self, before: Option<EventId>, count: usize) -> StoreResult<EventPage> {
        let most = per_shard(count, self.store.keys.log_shards());
        let mut from = before.map_or("+".to_string(), |id| format!("({}", id.entry()));
        loop {
            let reads = self
                .read_shards(false, &from, "-", most, false, None)
                .await?;
            // Below the least of the shards' floors: a newest-first read
            // must not give an event above which another is still to come.
            let upper = reads.iter().map(|r| r.floor).min().unwrap_or(EventId::ZERO);
            let full = reads.iter().any(|r| r.rows.len() >= most);
            let lower = reads.iter().map(|r| r.known).max().unwrap_or(EventId::ZERO);
            let mut events: Vec<(EventId, String)> = reads
                .into_iter()
                .flat_map(|r| r.rows.into_iter().flat_map(entry))
                .filter(|(id, _)| *id < upper && *id >= lower)
                .collect();
            events.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
            let mut more = full;
            if events.len() > count.max(1) {
                events.truncate(count.max(1));
                more = true;
            }
            if events.is_empty() && full && lower > EventId::ZERO {
                from = format!("({}", lower.entry());
                continue;
            }
            return Ok(EventPage {
                events,
                more,
                lost: false,
            });
        }
    }

    /// The point of the log every shard has reached: no event below it is
    /// still to be made (the least of the shards' nodes' times, read now).
    pub async fn position(self) -> StoreResult<EventId> {
        let reads = self.read_shards(true, "+", "+", 1, false, None).await?;
        Ok(reads.iter().map(|r| r.floor).min().unwrap_or(EventId::ZERO))
    }

    /// The id of the newest event below [`Events::position`], if any.
    pub async fn newest_id(self) -> StoreResult<Option<EventId>> {
        Ok(self
            .before(None, 1)
            .await?
            .events
            .into_iter()
            .next()
            .map(|(id, _)| id))
    }
}

/// A `log_read.lua` reply for `shards` shards.
fn parse_reads(
    reply: Vec<redis::Value>,
    shards: usize,
    forward: bool,
    most: usize,
    lost: bool,
) -> StoreResult<Vec<ShardRead>> {
    let parse = |e: redis::ParsingError| StoreError::Internal(format!("log_read: {e}"));
    let mut reply = reply.into_iter();
    let mut next = || reply.next().unwrap_or(redis::Value::Nil);
    let ms: u64 = redis::from_redis_value(next()).map_err(parse)?;
    let tick: u64 = redis::from_redis_value(next()).map_err(parse)?;
    let floor = EventId(ms, tick, 0);
    let text = |v: Option<redis::Value>| {
        v.and_then(|v| redis::from_redis_value::<String>(v).ok())
            .filter(|t| !t.is_empty())
    };
    let mut out = Vec::with_capacity(shards);
    for _ in 0..shards {
        let parts: Vec<redis::Value> = redis::from_redis_value(next()).map_err(parse)?;
        let mut parts = parts.into_iter();
        let rows: Rows =
            redis::from_redis_value(parts.next().unwrap_or(redis::Value::Nil)).map_err(parse)?;
        let lost = lost.then(|| BufferInfo {
            first: text(parts.next()),
            trimmed: text(parts.next()).is_some_and(|t| t == "1"),
            max_deleted: text(parts.next()),
        });
        let full = rows.len() >= most;
        let known = match rows.last().and_then(|(id, _)| EventId::parse(id)) {
            // Forward: known through its last entry; backward: from it.
            Some(last) if full && forward => EventId(last.0, last.1.saturating_add(1), 0),
            Some(last) if full => EventId(last.0, last.1, 0),
            _ if forward => floor,
            _ => EventId::ZERO,
        };
        out.push(ShardRead {
            known,
            floor,
            rows,
            lost,
        });
    }
    Ok(out)
}
