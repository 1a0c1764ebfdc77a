//! Bounded in-process caches: statuses, their counts for a second, and
//! sessions found alive for a second.
//!
//! A status's JSON is serialized once and changes in place only by an edit
//! or its author's login change: the writing process evicts it, and every
//! process's hub evicts it on the `update`, `delete` or internal
//! `statuses_changed` event. A deleted id is remembered for a while so that
//! a read that fetched the status just before the delete cannot put it back.
//! The cached JSON stops before the counts (always its last fields): every
//! answer appends the counts read in the same pipeline as the page, or from
//! the counts cache (at most 1 s old, evicted by this process's writes).
//! Sessions found alive are trusted for `--session-cache-ttl`: ended ones are
//! revoked by their `session_revoked` events and by the process that ends
//! them; a generation checked under the shard lock keeps a read that raced a
//! revocation out, and while the hub's subscription is down the cache is
//! empty and off. Timelines are not cached here: they are read from Redis on
//! every request, but for the heads of homes (`home_cache`).

use crate::model::{Counts, Status};
use bytes::Bytes;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A status with its public JSON, serialized once but for its counts,
/// which change and are read with every answer.
#[derive(Debug)]
pub struct CachedStatus {
    /// The status (its counts as they were when it was cached).
    pub status: Status,
    /// `serde_json` of it up to its counts, which are its last fields:
    /// `{"id":...,"mentions":[...]` with no closing brace.
    pub head: Bytes,
}

impl CachedStatus {
    /// Wraps a status, serializing it.
    pub fn new(status: Status) -> Arc<CachedStatus> {
        let mut bare = status.clone();
        bare.counts = Counts::default();
        let json = serde_json::to_vec(&bare).unwrap_or_default();
        const TAIL: &[u8] = br#","likes":0,"reposts":0,"replies":0}"#;
        let head = json
            .strip_suffix(TAIL)
            .unwrap_or(&json[..json.len().saturating_sub(1)]);
        Arc::new(CachedStatus {
            status,
            head: Bytes::copy_from_slice(head),
        })
    }

    /// The status JSON with `counts`, appended to `out`.
    pub fn write_json(&self, counts: Counts, out: &mut Vec<u8>) {
        let mut n = itoa::Buffer::new();
        out.extend_from_slice(&self.head);
        out.extend_from_slice(br#","likes":"#);
        out.extend_from_slice(n.format(counts.likes).as_bytes());
        out.extend_from_slice(br#","reposts":"#);
        out.extend_from_slice(n.format(counts.reposts).as_bytes());
        out.extend_from_slice(br#","replies":"#);
        out.extend_from_slice(n.format(counts.replies).as_bytes());
        out.push(b'}');
    }

    /// The status with `counts`.
    pub fn with_counts(&self, counts: Counts) -> Status {
        Status {
            counts,
            ..self.status.clone()
        }
    }
}

const SHARDS: usize = 16;

#[derive(Default)]
struct Shard {
    map: FxHashMap<u64, Arc<CachedStatus>>,
    order: VecDeque<u64>,
    deleted: FxHashSet<u64>,
    deleted_order: VecDeque<u64>,
}

/// The cache; cheap to share.
pub(crate) struct StatusCache {
    shards: Vec<Mutex<Shard>>,
    per_shard: usize,
}

impl StatusCache {
    /// A cache of at most about `capacity` statuses (0 disables it).
    pub(crate) fn new(capacity: usize) -> Self {
        StatusCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            per_shard: capacity.div_ceil(SHARDS),
        }
    }

    fn shard(&self, id: u64) -> Option<std::sync::MutexGuard<'_, Shard>> {
        if self.per_shard == 0 {
            return None;
        }
        self.shards[(id as usize) % SHARDS].lock().ok()
    }

    /// The cached status, if any.
    pub(crate) fn get(&self, id: u64) -> Option<Arc<CachedStatus>> {
        self.shard(id)?.map.get(&id).cloned()
    }

    /// Remembers a status read from Redis (unless it was deleted meanwhile).
    pub(crate) fn put(&self, id: u64, status: Arc<CachedStatus>) {
        let per_shard = self.per_shard;
        let Some(mut shard) = self.shard(id) else {
            return;
        };
        if shard.deleted.contains(&id) || shard.map.contains_key(&id) {
            return;
        }
        shard.map.insert(id, status);
        shard.order.push_back(id);
        while shard.map.len() > per_shard {
            match shard.order.pop_front() {
                Some(old) => {
                    shard.map.remove(&old);
                }
                None => break,
            }
        }
    }

    /// Forgets a deleted status for good.
    pub(crate) fn forget(&self, id: u64) {
        let per_shard = self.per_shard;
        let Some(mut shard) = self.shard(id) else {
            return;
        };
        shard.map.remove(&id);
        if shard.deleted.insert(id) {
            shard.deleted_order.push_back(id);
            while shard.deleted.len() > per_shard {
                match shard.deleted_order.pop_front() {
                    Some(old) => {
                        shard.deleted.remove(&old);
                    }
                    None => break,
                }
            }
        }
    }
}

/// How long a status's counts read for a timeline page are reused.
pub(crate) const COUNTS_TTL: Duration = Duration::from_secs(1);
/// Most statuses whose counts are remembered (per shard, about).
const COUNTS_PER_SHARD: usize = 8192;

/// Counts (likes, reposts, replies) read for timeline pages, reused for at
/// most [`COUNTS_TTL`]: a page of 30 statuses would otherwise cost 30 more
/// Redis commands. Writes in this process evict what they change at once,
/// and the hub evicts on the like, status (reply, repost) and delete events
/// of every process, so only an unlike elsewhere can show for up to a
/// second. A single status (`GET /api/v1/statuses/{id}`) is always read fresh.
pub(crate) struct CountsCache {
    shards: Vec<Mutex<FxHashMap<u64, (Counts, Instant)>>>,
}

impl Default for CountsCache {
    fn default() -> Self {
        CountsCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl CountsCache {
    fn shard(
        &self,
        id: u64,
    ) -> Option<std::sync::MutexGuard<'_, FxHashMap<u64, (Counts, Instant)>>> {
        self.shards[(id as usize) % SHARDS].lock().ok()
    }

    /// The counts of `id` if read less than [`COUNTS_TTL`] before `now`.
    pub(crate) fn get(&self, id: u64, now: Instant) -> Option<Counts> {
        let shard = self.shard(id)?;
        shard
            .get(&id)
            .filter(|(_, at)| now.saturating_duration_since(*at) < COUNTS_TTL)
            .map(|(c, _)| *c)
    }

    /// The counts of `id` if read less than `ttl` before `now` (ranking
    /// may use counts up to a few seconds old).
    pub(crate) fn get_within(&self, id: u64, now: Instant, ttl: Duration) -> Option<Counts> {
        let shard = self.shard(id)?;
        shard
            .get(&id)
            .filter(|(_, at)| now.saturating_duration_since(*at) < ttl)
            .map(|(c, _)| *c)
    }

    /// Remembers counts just read.
    pub(crate) fn put(&self, id: u64, counts: Counts) {
        if let Some(mut shard) = self.shard(id) {
            if shard.len() >= COUNTS_PER_SHARD {
                shard.retain(|_, (_, at)| at.elapsed() < COUNTS_TTL);
                if shard.len() >= COUNTS_PER_SHARD {
                    shard.clear();
                }
            }
            shard.insert(id, (counts, Instant::now()));
        }
    }

    /// Forgets the counts of `id` (they just changed).
    pub(crate) fn forget(&self, id: u64) {
        if let Some(mut shard) = self.shard(id) {
            shard.remove(&id);
        }
    }
}

/// Most sessions remembered (per shard).
const SESSIONS_PER_SHARD: usize = 4096;

struct SessionEntry {
    uid: u64,
    user: SessionUser,
    at: Instant,
}

/// Sessions recently found alive, so that a client's burst of requests
/// costs one Redis round trip a second for its session instead of one each.
///
/// Why it cannot let an ended session in: every session's end is an event
/// (`drop_sessions.lua` appends and publishes it in the step that deletes
/// it), and the hub calls [`SessionCache::revoke`] for each, live or caught
/// up from the buffer; the process that ends a session revokes it locally
/// before answering. A read racing a revocation cannot put the session back:
/// [`SessionCache::put`] keeps an entry only if no revocation happened since
/// the read began (a generation, checked and bumped under the shard's lock).
/// While the hub is not subscribed (startup, Redis lost) the cache is
/// suspended and empty, because revocations could pass unseen. What it can
/// serve late is the account's `private` flag changed on another process:
/// for at most its time to live (a second by default).
pub(crate) struct SessionCache {
    shards: Vec<Mutex<HashMap<String, SessionEntry>>>,
    generation: AtomicU64,
    live: AtomicBool,
    ttl: Duration,
}

impl SessionCache {
    /// A cache trusting a session for `ttl` (zero disables it). It starts
    /// suspended: [`SessionCache::resume`] once revocations are heard.
    pub(crate) fn new(ttl: Duration) -> Self {
        SessionCache {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            generation: AtomicU64::new(0),
            live: AtomicBool::new(false),
            ttl,
        }
    }

    fn shard(&self, sid: &str) -> Option<std::sync::MutexGuard<'_, HashMap<String, SessionEntry>>> {
        let pick = sid.bytes().last().map_or(0, usize::from) % SHARDS;
        self.shards[pick].lock().ok()
    }

    /// The session's user if `sid` (owned by `uid`) was found alive within
    /// the time to live.
    pub(crate) fn get(&self, sid: &str, uid: u64) -> Option<SessionUser> {
        if !self.live.load(Ordering::Acquire) {
            return None;
        }
        let shard = self.shard(sid)?;
        shard
            .get(sid)
            .filter(|e| e.uid == uid && e.at.elapsed() < self.ttl)
            .map(|e| e.user.clone())
    }

    /// Where revocations stand, to give [`SessionCache::put`] after reading
    /// a session from Redis; `None` while suspended.
    pub(crate) fn generation(&self) -> Option<u64> {
        self.live
            .load(Ordering::Acquire)
            .then(|| self.generation.load(Ordering::Acquire))
    }

    /// Remembers a session read alive from Redis, unless a revocation (or a
    /// suspension) happened since `seen` was taken.
    pub(crate) fn put(&self, seen: u64, sid: &str, uid: u64, user: SessionUser) {
        let Some(mut shard) = self.shard(sid) else {
            return;
        };
        if self.ttl.is_zero()
            || !self.live.load(Ordering::Acquire)
            || self.generation.load(Ordering::Acquire) != seen
        {
            return;
        }
        if shard.len() >= SESSIONS_PER_SHARD {
            let ttl = self.ttl;
            shard.retain(|_, e| e.at.elapsed() < ttl);
            if shard.len() >= SESSIONS_PER_SHARD {
                shard.clear();
            }
        }
        shard.insert(
            sid.to_string(),
            SessionEntry {
                uid,
                user,
                at: Instant::now(),
            },
        );
    }

    /// Forgets an ended session for good.
    pub(crate) fn revoke(&self, sid: &str) {
        if let Some(mut shard) = self.shard(sid) {
            self.generation.fetch_add(1, Ordering::AcqRel);
            shard.remove(sid);
        }
    }

    /// Forgets every session of `uid` (its account just changed).
    pub(crate) fn forget_user(&self, uid: u64) {
        for shard in &self.shards {
            if let Ok(mut shard) = shard.lock() {
                self.generation.fetch_add(1, Ordering::AcqRel);
                shard.retain(|_, e| e.uid != uid);
            }
        }
    }

    /// Stops serving and empties the cache: revocations may go unseen.
    pub(crate) fn suspend(&self) {
        self.live.store(false, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
        for shard in &self.shards {
            if let Ok(mut shard) = shard.lock() {
                shard.clear();
            }
        }
    }

    /// Serves again: revocations are seen once more.
    pub(crate) fn resume(&self) {
        self.live.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(login: &str) -> SessionUser {
        SessionUser {
            login: login.into(),
            private: false,
        }
    }

    fn live(ttl: Duration) -> SessionCache {
        let cache = SessionCache::new(ttl);
        cache.resume();
        cache
    }

    #[test]
    fn a_session_is_served_from_memory_only_to_its_owner_and_until_revoked() {
        let cache = live(Duration::from_secs(60));
        let seen = cache.generation().unwrap();
        cache.put(seen, "s1", 7, user("ann"));
        assert_eq!(cache.get("s1", 7).unwrap().login, "ann");
        assert!(cache.get("s1", 8).is_none(), "another user's token");
        cache.revoke("s1");
        assert!(cache.get("s1", 7).is_none());
    }

    #[test]
    fn a_read_that_raced_a_revocation_is_not_kept() {
        let cache = live(Duration::from_secs(60));
        // The read began (generation taken), then the session ended.
        let seen = cache.generation().unwrap();
        cache.revoke("s1");
        cache.put(seen, "s1", 7, user("ann"));
        assert!(cache.get("s1", 7).is_none());
        // A read begun after it is kept.
        let seen = cache.generation().unwrap();
        cache.put(seen, "s2", 7, user("ann"));
        assert!(cache.get("s2", 7).is_some());
    }

    #[test]
    fn a_suspended_cache_neither_serves_nor_keeps_and_comes_back_empty() {
        let cache = live(Duration::from_secs(60));
        let seen = cache.generation().unwrap();
        cache.put(seen, "s1", 7, user("ann"));
        cache.suspend();
        assert!(cache.generation().is_none());
        assert!(cache.get("s1", 7).is_none());
        // A read begun before the suspension ends after it: dropped.
        cache.put(seen, "s2", 7, user("ann"));
        cache.resume();
        assert!(cache.get("s1", 7).is_none());
        assert!(cache.get("s2", 7).is_none());
        // A fresh cache starts suspended.
        assert!(SessionCache::new(Duration::from_secs(1))
            .generation()
            .is_none());
    }

    #[test]
    fn an_account_change_forgets_its_sessions_and_expiry_and_zero_ttl_hold() {
        let cache = live(Duration::from_secs(60));
        let seen = cache.generation().unwrap();
        cache.put(seen, "a1", 7, user("ann"));
        cache.put(seen, "a2", 7, user("ann"));
        cache.put(seen, "b1", 9, user("bob"));
        cache.forget_user(7);
        assert!(cache.get("a1", 7).is_none() && cache.get("a2", 7).is_none());
        assert!(cache.get("b1", 9).is_some());

        let short = live(Duration::from_millis(1));
        short.put(short.generation().unwrap(), "s1", 7, user("ann"));
        std::thread::sleep(Duration::from_millis(5));
        assert!(short.get("s1", 7).is_none(), "expired");

        let off = live(Duration::ZERO);
        off.put(off.generation().unwrap(), "s1", 7, user("ann"));
        assert!(
            off.get("s1", 7).is_none(),
            "a zero time to live keeps nothing"
        );
    }
}

/// What an authenticated request learns about its session's user.
#[derive(Debug, Clone)]
pub struct SessionUser {
    /// The user's login.
    pub login: String,
    /// Whether the account is private.
    pub private: bool,
}
