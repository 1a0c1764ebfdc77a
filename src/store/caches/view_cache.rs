//! Accounts and users' relations kept in process, kept true by Redis itself
//! (server-assisted client-side caching, [`tracked`](super::tracked)): what every
//! visibility check reads (a user's HASH for `private` and `suspended`, the
//! viewer's hide HASH for who blocks or mutes whom) without a command of
//! its own when it was read before and has not changed since.
//!
//! A hit waits for the link's barrier, or for a fill of another key of the
//! same read sent after it began, so it shows every write completed before
//! the read began (the invariants are [`tracked`](super::tracked)'s).
//!
//! Bounds: `--view-cache` entries: a user's HASH (a few hundred bytes), or a
//! hide HASH of at most [`MAX_PAIRS`] relations (larger ones are marked as
//! such and read field by field from Redis, as without the cache). Not used
//! on a Redis Cluster.

use crate::hides::Hides;
use crate::metrics;
use crate::model::User;
use crate::store::caches::tracked::{Link, Passage, Tracked};
use crate::store::plumbing::error::StoreResult;
use redis::Client;
use std::collections::HashMap;
use std::sync::Arc;

/// The most relations a kept hide HASH holds (~2 KB).
pub(crate) const MAX_PAIRS: usize = 64;

/// What the cache holds for a key.
#[derive(Clone)]
pub(crate) enum View {
    /// A user's HASH as `HGETALL` gives it (empty: no such user).
    User(Arc<HashMap<String, String>>),
    /// A hide HASH of at most [`MAX_PAIRS`] relations.
    Hides(Arc<Hides>),
    /// A hide HASH larger than that, whose snapshot (read with the fill,
    /// used once) is not kept: later reads ask Redis for what they need.
    ManyHides(Option<Arc<Hides>>),
}

/// Which kind of HASH a key is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    User,
    Hides,
}

/// The cache; cheap to share. Without a link (disabled, a cluster, Redis
/// lost), every method answers `None` and the caller reads Redis.
#[derive(Clone)]
pub(crate) struct ViewCache {
    tracked: Tracked<View>,
}

impl View {
    /// The user, as [`User::from_hash`] (`admin`: [`User::from_hash_admin`])
    /// reads it; `None` for no such user or not a user's HASH.
    pub(crate) fn user(&self, admin: bool) -> Option<User> {
        match self {
            View::User(h) if admin => User::from_hash_admin(h),
            View::User(h) => User::from_hash(h),
            _ => None,
        }
    }

    /// The relations of a hide HASH, when read in whole.
    pub(crate) fn hides(&self) -> Option<&Arc<Hides>> {
        match self {
            View::Hides(h) | View::ManyHides(Some(h)) => Some(h),
            _ => None,
        }
    }
}

impl ViewCache {
    /// A cache of `cap` HASHes over its own RESP3 connection to the Redis
    /// `client` talks to; `None` or `cap` 0: disabled.
    pub(crate) fn new(client: Option<&Client>, cap: usize) -> ViewCache {
        ViewCache {
            tracked: Tracked::new(client, cap, "view-cache"),
        }
    }

    /// Whether the hide HASH at `key` was found too large to keep (a hint,
    /// no barrier: the caller then reads what it needs from Redis, which is
    /// right whatever the HASH holds now).
    pub(crate) fn many(&self, key: &str) -> bool {
        self.tracked.link().is_some_and(|link| {
            matches!(
                self.tracked.held(&link, key.as_bytes()),
                Some(View::ManyHides(None))
            )
        })
    }

    /// The hide HASH at `key` in whole, held or read over the link;
    /// `Ok(None)` when the caller reads Redis (no link, or a HASH too large
    /// to keep).
    pub(crate) async fn hides(&self, key: &str) -> StoreResult<Option<Arc<Hides>>> {
        if self.many(key) {
            return Ok(None);
        }
        let views = self.get(&[(key, Kind::Hides)]).await?;
        Ok(views.and_then(|v| v[0].hides().cloned()))
    }

    /// The HASHes at `keys` (each of its kind), as fresh as reads from Redis
    /// begun now, in order: those held after one barrier, the others read
    /// over the link in one pipeline (whose answer is the barrier of the
    /// held ones). `Ok(None)` without a link or when it broke (the caller
    /// reads Redis), an error when Redis did not answer the link in time.
    pub(crate) async fn get(&self, keys: &[(&str, Kind)]) -> StoreResult<Option<Vec<View>>> {
        let Some(link) = self.tracked.link() else {
            return Ok(None);
        };
        match self.read(&link, keys).await {
            Ok(views) => Ok(Some(views)),
            Err(failed) => failed.fallback().map(|()| None),
        }
    }

    async fn read(&self, link: &Link, keys: &[(&str, Kind)]) -> Result<Vec<View>, Passage> {
        let m = metrics::global();
        let held = |key: &str| self.tracked.held(link, key.as_bytes());
        // Candidates until a barrier confirms them.
        let mut found: Vec<Option<View>> = keys.iter().map(|(k, _)| held(k)).collect();
        if found.iter().all(Option::is_some) {
            self.tracked.pass(link).await?;
            found = keys.iter().map(|(k, _)| held(k)).collect();
        }
        let mut hits = found.iter().filter(|f| f.is_some()).count();
        let mut sure = found.iter().all(Option::is_some);
        // Fills; a held entry invalidated while they ran is filled in a
        // second round, which has nothing left to confirm (so it ends there).
        loop {
            let missing: Vec<usize> = (0..keys.len()).filter(|&i| found[i].is_none()).collect();
            if missing.is_empty() {
                break;
            }
            let read = self.fill(link, keys, &missing).await?;
            metrics::inc(&m.view_cache_fills, missing.len() as u64);
            if !sure {
                // The fill was sent after the read began: a barrier.
                for (i, (k, _)) in keys.iter().enumerate() {
                    if found[i].is_some() && held(k).is_none() {
                        found[i] = None;
                        hits -= 1;
                    }
                }
                sure = true;
            }
            for (i, view) in missing.into_iter().zip(read) {
                found[i] = Some(view);
            }
        }
        metrics::inc(&m.view_cache_hits, hits as u64);
        found
            .into_iter()
            .collect::<Option<Vec<View>>>()
            .ok_or(Passage::Lost)
    }

    /// Reads `keys[i]` for each `i` of `missing` over the link, keeping
    /// each answer unless its key changed before it came back.
    async fn fill(
        &self,
        link: &Link,
        keys: &[(&str, Kind)],
        missing: &[usize],
    ) -> Result<Vec<View>, Passage> {
        let mut pipe = redis::pipe();
        let mut tokens = Vec::with_capacity(missing.len());
        for &i in missing {
            tokens.push(self.tracked.reserve(keys[i].0.as_bytes()));
            pipe.cmd("HGETALL").arg(keys[i].0);
        }
        let mut conn = link.conn();
        let hashes: Vec<Vec<(String, String)>> = self
            .tracked
            .timed(link, pipe.query_async(&mut conn))
            .await?;
        let mut views = Vec::with_capacity(missing.len());
        for ((&i, token), fields) in missing.iter().zip(tokens).zip(hashes) {
            let (key, kind) = keys[i];
            let (kept, used) = match kind {
                Kind::User => {
                    let v = View::User(Arc::new(fields.into_iter().collect()));
                    (v.clone(), v)
                }
                Kind::Hides if fields.len() > MAX_PAIRS + 1 => {
                    let hides = Arc::new(Hides::from_hash(&fields));
                    (View::ManyHides(None), View::ManyHides(Some(hides)))
                }
                Kind::Hides => {
                    let v = View::Hides(Arc::new(Hides::from_hash(&fields)));
                    (v.clone(), v)
                }
            };
            self.tracked.keep(link, key.as_bytes(), token, kept);
            views.push(used);
        }
        Ok(views)
    }
}
