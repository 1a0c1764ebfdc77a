//! Data moves between key layouts, run by each process before it serves.
//!
//! `fh:{g}:migrated` counts the moves done. A process that finds it behind
//! [`MOVES`] takes `fh:{g}:migrating` (SET NX with an expiry, renewed
//! between batches), makes the moves and raises the count; every other
//! process waits until the count is current, so no process serves (or
//! cleans up) with data still in the old place. Each move is idempotent: a
//! process that dies half-way leaves the lock to lapse and the next one
//! starts the move again.
//!
//! The moves:
//!
//! 1. Sessions to the user's slot (`store::sessions`): every session of the
//!    global index `sessions` gets its authority entry in its user's `live`
//!    ZSET (scored by its `recent` score), and its viewed statuses move from
//!    `fh:{g}:viewed:<sid>` to `fh:user:{<uid>}:viewed:<sid>`.
//! 2. Logins and emails to a key each (`fh:name:{<value>}`): every entry of
//!    the global `fh:{g}:unique` HASH is copied (SET NX: a value claimed in
//!    the new place is kept), then the HASH is unlinked.
//! 3. Follows, likes, follow requests, blocks and mutes numbered by their
//!    outbox partition (`store::outbox`): each partition's counter is
//!    raised to at least the global `{g}` counter, so every number drawn
//!    from here on is above every sequence stamped before (the first
//!    layout drew them all from the global counter). Entries already in
//!    the `{g}` outbox are finished from there as before.
//! 4. Posts, deletes, messages and account changes recorded in their
//!    user's outbox partition, with their idempotency keys there too: the
//!    keys the first layout kept in `{g}` answer for one more day
//!    (`fh:{g}:legacy_idem_until`, read by every process as it starts),
//!    so a retry of a write sent before the upgrade still gets its first
//!    answer. Entries already in the `{g}` outbox are finished from there,
//!    their answers kept where their keys are.
//! 5. On one Redis, each user's relations that hide indexed on the other
//!    side (`Keys::hidden_by`, which `relate.lua` keeps from here on): every
//!    `hide` HASH is scanned and its user added to the `hidden_by` SET of
//!    each other user it holds bits for. A post reads the SET to know which
//!    followers' relations to look at, so without the move a relation set
//!    before it would not keep the other's statuses out of a home. (An
//!    entry no longer true costs a post one read and nothing else.) A
//!    cluster keeps no such index.
//! 6. The sessions' clean-up index from `{g}` to the outbox partitions'
//!    slots (`Keys::session_index`): each entry of the global `sessions`
//!    HASH becomes `<uid>:<session id>` in its user's partition, scored as
//!    the global `recent` ZSET had it (0 when it had none: the clean-up
//!    then asks its authority first), and the two global keys are dropped.
//! 7. On one Redis, the chain steps of likes that an earlier version left
//!    in an outbox (a request that died half way) are finished now, before
//!    any process serves: from here on every like change there is one
//!    `like_whole.lua` call, which no longer orders itself after the chain
//!    steps drawn before it, so such a step finished later could undo a
//!    newer change.
//! 8. The trending buckets of the last day from the one slot `{trends}` to
//!    the trending partitions (`Keys::trend_bucket`): each bucket's counts
//!    go to the partitions of their hashtags with the statuses it counted
//!    (`trend_move.lua`, once per partition and minute), keeping the time
//!    the bucket had left, and the old bucket is dropped.

use crate::model::now;
use crate::store::chains::TREND_BUCKET_TTL;
use crate::store::plumbing::error::{parse_id, StoreResult};
use crate::store::plumbing::handle::Store;
use crate::store::plumbing::keys::{trend_groups, user_part, OUTBOX_PARTS};
use futures::future::try_join_all;
use redis::AsyncCommands;
use std::time::Duration;

/// How many moves this version knows.
pub const MOVES: u64 = 8;
/// How long the migrating lock lasts without renewal.
const LOCK_MS: u64 = 30_000;
/// Index entries read per batch.
const BATCH: usize = 500;

impl Store {
    /// Makes every move this version knows (or waits while another process
    /// makes them). Returns the number of sessions and names moved by this
    /// process.
    pub async fn migrate(&self) -> StoreResult<u64> {
        let token = format!("{:032x}", rand::random::<u128>());
        let mut conn = self.conn();
        loop {
            let done: Option<u64> = conn.get(self.keys.migrated()).await?;
            let done = done.unwrap_or(0);
            if done >= MOVES {
                self.read_legacy_window().await?;
                return Ok(0);
            }
            let took: Option<String> = redis::cmd("SET")
                .arg(self.keys.migrating())
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(LOCK_MS)
                .query_async(&mut conn)
                .await?;
            if took.is_none() {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            let mut moved = 0;
            if done < 1 {
                moved += self.move_sessions(&token).await?;
                let _: () = conn.set(self.keys.migrated(), 1).await?;
            }
            if done < 2 {
                moved += self.move_names(&token).await?;
                let _: () = conn.set(self.keys.migrated(), 2).await?;
            }
            if done < 3 {
                self.raise_part_counters().await?;
                let _: () = conn.set(self.keys.migrated(), 3).await?;
            }
            if done < 4 {
                self.open_legacy_window().await?;
                let _: () = conn.set(self.keys.migrated(), 4).await?;
            }
            if done < 5 && !self.is_cluster() {
                self.index_hides(&token).await?;
            }
            if done < 6 {
                self.index_sessions(&token).await?;
            }
            if done < 7 && !self.is_cluster() {
                self.finish_left_likes(&token).await?;
            }
            if done < 8 {
                self.move_trends(&token).await?;
            }
            let _: () = conn.set(self.keys.migrated(), MOVES).await?;
            let holder: Option<String> = conn.get(self.keys.migrating()).await?;
            if holder.as_deref() == Some(token.as_str()) {
                let _: () = conn.del(self.keys.migrating()).await?;
            }
            if moved > 0 {
                tracing::info!(moved, "data moved to its new place");
            }
            self.read_legacy_window().await?;
            return Ok(moved);
        }
    }

    /// Move 1: each indexed session gets its authority entry and its viewed
    /// list in its user's slot. A session ended meanwhile (the index entry
    /// gone when looked at again after the batch) loses the entry again.
    async fn move_sessions(&self, token: &str) -> StoreResult<u64> {
        let mut cursor: u64 = 0;
        let mut moved = 0;
        loop {
            let (next, page) = self
                .hash_page(&self.keys.legacy_sessions(), cursor, token)
                .await?;
            let pairs: Vec<(String, u64)> = page
                .into_iter()
                .filter_map(|(sid, uid)| Some((sid, parse_id(&uid).ok()?)))
                .collect();
            if !pairs.is_empty() {
                moved += self.move_session_batch(&pairs).await?;
            }
            if next == 0 {
                return Ok(moved);
            }
            cursor = next;
        }
    }

    /// Move 3: every partition's op counter at least the global one's.
    async fn raise_part_counters(&self) -> StoreResult<()> {
        let mut conn = self.conn();
        let global: Option<u64> = conn.get(self.keys.next_op()).await?;
        let Some(global) = global.filter(|&n| n > 0) else {
            return Ok(());
        };
        for k in 0..OUTBOX_PARTS {
            let key = self.keys.part_next_op(k);
            let now: Option<u64> = conn.get(&key).await?;
            if now.unwrap_or(0) < global {
                let _: () = conn.set(&key, global).await?;
            }
        }
        Ok(())
    }

    /// Move 4: on a store the first layout wrote (its global op counter
    /// is set), idempotency keys where it kept them answer one day more.
    async fn open_legacy_window(&self) -> StoreResult<()> {
        let mut conn = self.conn();
        let global: Option<u64> = conn.get(self.keys.next_op()).await?;
        if global.unwrap_or(0) > 0 {
            let until = crate::model::now() as u64 + crate::store::outbox::IDEMPOTENCY_TTL;
            let _: () = redis::cmd("SET")
                .arg(self.keys.legacy_idempotency_until())
                .arg(until)
                .arg("NX")
                .query_async(&mut conn)
                .await?;
        }
        Ok(())
    }

    /// Move 8: the trending buckets of the last day from `{trends}` to the
    /// trending partitions (`trend_move.lua`, once per partition and
    /// minute), each with the time it had left to live, then dropped.
    async fn move_trends(&self, token: &str) -> StoreResult<()> {
        let mut conn = self.conn();
        let minute = (now() / 60.0) as u64;
        let first = minute.saturating_sub(TREND_BUCKET_TTL / 60 + 2);
        for m in first..=minute + 1 {
            let bucket = self.keys.legacy_trend_bucket(m);
            let seen = self.keys.legacy_trend_seen(m);
            let ttl: i64 = redis::cmd("PTTL")
                .arg(&bucket)
                .query_async(&mut conn)
                .await?;
            if ttl == -2 {
                continue;
            }
            let ttl = if ttl > 0 {
                ttl as u64
            } else {
                TREND_BUCKET_TTL * 1000
            };
            let counts: Vec<(String, f64)> = conn.zrange_withscores(&bucket, 0, -1).await?;
            let ids: Vec<String> = conn.smembers(&seen).await?;
            let counted: std::collections::HashMap<&str, f64> =
                counts.iter().map(|(t, n)| (t.as_str(), *n)).collect();
            let tags: Vec<String> = counts
                .iter()
                .filter(|(_, n)| *n >= 1.0)
                .map(|(t, _)| t.clone())
                .collect();
            for (p, group) in trend_groups(&tags) {
                let mut inv = self.scripts.trend_move.prepare_invoke();
                inv.key(self.keys.trend_bucket(p, m))
                    .key(self.keys.trend_seen(p, m))
                    .arg(ttl)
                    .arg(group.len());
                for t in &group {
                    inv.arg(t)
                        .arg(counted.get(t.as_str()).copied().unwrap_or(0.0));
                }
                for id in &ids {
                    inv.arg(id);
                }
                let _: i64 = inv.invoke_async(&mut conn).await?;
            }
            let _: () = conn.del(&[&bucket, &seen]).await?;
            if m % 60 == 0 {
                self.renew_migrating(token).await?;
            }
        }
        Ok(())
    }

    /// Move 7: on one Redis, every like's chain left in an outbox finished.
    async fn finish_left_likes(&self, token: &str) -> StoreResult<()> {
        let mut conn = self.conn();
        for part in crate::store::outbox::places() {
            let members: Vec<String> = conn.zrange(self.outbox_of(part), 0, -1).await?;
            let likes = members
                .iter()
                .filter_map(|m| crate::store::outbox::Owed::decode_in(m, part))
                .filter(|owed| matches!(owed.op, crate::store::outbox::Op::Like(_)));
            for owed in likes {
                self.complete_op(&owed).await?;
            }
            self.renew_migrating(token).await?;
        }
        Ok(())
    }

    /// Move 6: the sessions' clean-up index from `{g}` to the partitions.
    async fn index_sessions(&self, token: &str) -> StoreResult<()> {
        let mut conn = self.conn();
        let mut cursor: u64 = 0;
        loop {
            let (next, page) = self
                .hash_page(&self.keys.legacy_sessions(), cursor, token)
                .await?;
            if !page.is_empty() {
                let sids: Vec<&str> = page.iter().map(|(sid, _)| sid.as_str()).collect();
                let seen: Vec<Option<f64>> = redis::cmd("ZMSCORE")
                    .arg(self.keys.legacy_recent())
                    .arg(&sids)
                    .query_async(&mut conn)
                    .await?;
                // One ZADD per partition, one after another (as
                // `Store::session_count` says why).
                let mut by_part: std::collections::BTreeMap<usize, Vec<(f64, String)>> =
                    Default::default();
                for ((sid, uid), seen) in page.iter().zip(seen) {
                    let Ok(uid) = parse_id(uid) else { continue };
                    by_part
                        .entry(user_part(uid))
                        .or_default()
                        .push((seen.unwrap_or(0.0), crate::store::sessions::entry(uid, sid)));
                }
                for (k, entries) in by_part {
                    let _: () = redis::cmd("ZADD")
                        .arg(self.keys.session_index(k))
                        .arg("NX")
                        .arg(entries)
                        .query_async(&mut conn)
                        .await?;
                }
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let _: () = redis::pipe()
            .unlink(self.keys.legacy_sessions())
            .ignore()
            .unlink(self.keys.legacy_recent())
            .ignore()
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Move 5: on one Redis, every relation that hides indexed on the
    /// other user's side.
    async fn index_hides(&self, token: &str) -> StoreResult<()> {
        let mut conn = self.conn();
        let pattern = self.keys.hide(0).replace("{0}", "{*}");
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(BATCH)
                .query_async(&mut conn)
                .await?;
            for key in keys {
                let Some(uid) = key
                    .split_once(":user:{")
                    .and_then(|(_, rest)| rest.split_once('}'))
                    .and_then(|(id, _)| id.parse::<u64>().ok())
                else {
                    continue;
                };
                let fields: Vec<(String, String)> = conn.hgetall(&key).await?;
                let hides = crate::hides::Hides::from_hash(&fields);
                let others: Vec<u64> = hides.others(crate::hides::FEED).collect();
                if others.is_empty() {
                    continue;
                }
                let mut pipe = redis::pipe();
                for other in others {
                    pipe.sadd(self.keys.hidden_by(other), uid).ignore();
                }
                let _: () = pipe.query_async(&mut conn).await?;
            }
            self.renew_migrating(token).await?;
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// Keeps the migrating lock `token` holds for another [`LOCK_MS`].
    async fn renew_migrating(&self, token: &str) -> StoreResult<()> {
        let mut conn = self.conn();
        let _: () = redis::cmd("SET")
            .arg(self.keys.migrating())
            .arg(token)
            .arg("XX")
            .arg("PX")
            .arg(LOCK_MS)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Until when keys where the first layout kept them answer, as move 4
    /// left it, into this process's store.
    async fn read_legacy_window(&self) -> StoreResult<()> {
        let mut conn = self.conn();
        let until: Option<u64> = conn.get(self.keys.legacy_idempotency_until()).await?;
        self.legacy_idem_until
            .store(until.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Move 2: each login and email of the global HASH gets its own key.
    async fn move_names(&self, token: &str) -> StoreResult<u64> {
        let mut conn = self.conn();
        let mut cursor: u64 = 0;
        let mut moved = 0;
        loop {
            let (next, page) = self
                .hash_page(&self.keys.legacy_unique(), cursor, token)
                .await?;
            let copies = page.into_iter().map(|(value, holder)| {
                let mut conn = self.conn();
                let key = self.keys.name(&value);
                async move {
                    let set: Option<String> = redis::cmd("SET")
                        .arg(key)
                        .arg(holder)
                        .arg("NX")
                        .query_async(&mut conn)
                        .await?;
                    StoreResult::Ok(u64::from(set.is_some()))
                }
            });
            moved += try_join_all(copies).await?.iter().sum::<u64>();
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let _: () = redis::cmd("UNLINK")
            .arg(self.keys.legacy_unique())
            .query_async(&mut conn)
            .await?;
        Ok(moved)
    }

    /// One page of a HASH's fields and values (HSCAN from `cursor`; the
    /// next cursor, 0 at the end), the migrating lock renewed with it.
    async fn hash_page(
        &self,
        key: &str,
        cursor: u64,
        token: &str,
    ) -> StoreResult<(u64, Vec<(String, String)>)> {
        let mut conn = self.conn();
        let (next, flat): (u64, Vec<String>) = redis::cmd("HSCAN")
            .arg(key)
            .arg(cursor)
            .arg("COUNT")
            .arg(BATCH)
            .query_async(&mut conn)
            .await?;
        self.renew_migrating(token).await?;
        let mut fields = flat.into_iter();
        let mut page = Vec::new();
        while let (Some(field), Some(value)) = (fields.next(), fields.next()) {
            page.push((field, value));
        }
        Ok((next, page))
    }

    async fn move_session_batch(&self, pairs: &[(String, u64)]) -> StoreResult<u64> {
        let mut conn = self.conn();
        let sids: Vec<&str> = pairs.iter().map(|(s, _)| s.as_str()).collect();
        let seen: Vec<Option<f64>> = redis::cmd("ZMSCORE")
            .arg(self.keys.legacy_recent())
            .arg(&sids)
            .query_async(&mut conn)
            .await?;
        let moves = pairs
            .iter()
            .zip(seen)
            .filter_map(|((sid, uid), seen)| Some(self.move_one_session(*uid, sid.clone(), seen?)));
        let moved = try_join_all(moves).await?;
        let owners: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(self.keys.legacy_sessions())
            .arg(&sids)
            .query_async(&mut conn)
            .await?;
        for ((sid, uid), owner) in pairs.iter().zip(owners) {
            if owner.is_none() {
                let _: () = conn.zrem(self.keys.live_sessions(*uid), sid).await?;
            }
        }
        Ok(moved.iter().sum())
    }

    /// Moves one session; 1 when its authority entry was made (0: there
    /// already).
    async fn move_one_session(&self, uid: u64, sid: String, seen: f64) -> StoreResult<u64> {
        let mut conn = self.conn();
        let sid = sid.as_str();
        let legacy = self.keys.legacy_viewed(sid);
        let viewed: Vec<(String, f64)> = conn.zrange_withscores(&legacy, 0, -1).await?;
        let mut pipe = redis::pipe();
        pipe.cmd("ZADD")
            .arg(self.keys.live_sessions(uid))
            .arg("NX")
            .arg(seen)
            .arg(sid)
            .cmd("ZADD")
            .arg(self.keys.user_sessions(uid))
            .arg("NX")
            .arg(seen)
            .arg(sid)
            .ignore();
        if !viewed.is_empty() {
            let members: Vec<(f64, &str)> = viewed.iter().map(|(m, s)| (*s, m.as_str())).collect();
            pipe.zadd_multiple(self.keys.user_viewed(uid, sid), &members)
                .ignore();
        }
        let (made,): (u64,) = pipe.query_async(&mut conn).await?;
        if !viewed.is_empty() {
            let _: () = conn.del(&legacy).await?;
        }
        Ok(made)
    }
}
