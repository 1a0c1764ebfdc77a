//! Bounded in-process caches: statuses, and their counts for a second.
//!
//! Statuses never change after they are posted; they only disappear. So a
//! cached status is valid until its delete, and the hub evicts it when the
//! delete event arrives (every server process sees every event). A deleted id
//! is remembered for a while so that a read that fetched the status just
//! before the delete cannot put it back. Timelines are not cached: they are
//! read from Redis on every request.

use crate::model::{Counts, Status};
use bytes::Bytes;
use std::collections::{HashMap, HashSet, VecDeque};
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
        out.extend_from_slice(&self.head);
        out.extend_from_slice(
            format!(
                r#","likes":{},"reposts":{},"replies":{}}}"#,
                counts.likes, counts.reposts, counts.replies
            )
            .as_bytes(),
        );
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
    map: HashMap<u64, Arc<CachedStatus>>,
    order: VecDeque<u64>,
    deleted: HashSet<u64>,
    deleted_order: VecDeque<u64>,
}

/// The cache; cheap to share.
pub struct StatusCache {
    shards: Vec<Mutex<Shard>>,
    per_shard: usize,
}

impl StatusCache {
    /// A cache of at most about `capacity` statuses (0 disables it).
    pub fn new(capacity: usize) -> Self {
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
    pub fn get(&self, id: u64) -> Option<Arc<CachedStatus>> {
        self.shard(id)?.map.get(&id).cloned()
    }

    /// Remembers a status read from Redis (unless it was deleted meanwhile).
    pub fn put(&self, id: u64, status: Arc<CachedStatus>) {
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
    pub fn forget(&self, id: u64) {
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
pub const COUNTS_TTL: Duration = Duration::from_secs(1);
/// Most statuses whose counts are remembered (per shard, about).
const COUNTS_PER_SHARD: usize = 8192;

/// Counts (likes, reposts, replies) read for timeline pages, reused for at
/// most [`COUNTS_TTL`]: a page of 30 statuses would otherwise cost 30 more
/// Redis commands. Writes in this process evict what they change at once,
/// and the hub evicts on the like, status (reply, repost) and delete events
/// of every process, so only an unlike elsewhere can show for up to a
/// second. A single status (`GET /api/v1/statuses/{id}`) is always read fresh.
pub struct CountsCache {
    shards: Vec<Mutex<HashMap<u64, (Counts, Instant)>>>,
}

impl Default for CountsCache {
    fn default() -> Self {
        CountsCache {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

impl CountsCache {
    fn shard(&self, id: u64) -> Option<std::sync::MutexGuard<'_, HashMap<u64, (Counts, Instant)>>> {
        self.shards[(id as usize) % SHARDS].lock().ok()
    }

    /// The counts of `id` if read less than [`COUNTS_TTL`] ago.
    pub fn get(&self, id: u64) -> Option<Counts> {
        let shard = self.shard(id)?;
        shard
            .get(&id)
            .filter(|(_, at)| at.elapsed() < COUNTS_TTL)
            .map(|(c, _)| *c)
    }

    /// Remembers counts just read.
    pub fn put(&self, id: u64, counts: Counts) {
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
    pub fn forget(&self, id: u64) {
        if let Some(mut shard) = self.shard(id) {
            shard.remove(&id);
        }
    }
}
