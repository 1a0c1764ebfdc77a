//! The heads of home timelines kept in process, kept true by Redis itself
//! (server-assisted client-side caching, [`tracked`](super::tracked)).
//!
//! A home read starts with the ids at the top of the reader's home. This
//! cache keeps that first chunk per home, read over the tracking link; a hit
//! waits for the link's barrier, so it shows every write completed before
//! the read began, and a fill overtaken by a change is used once and not
//! kept (the invariants are [`tracked`](super::tracked)'s).
//!
//! Bounds: `--home-cache` entries (each the first chunk of one home, at
//! most 64 ids; 35 for the default page of 30), then an arbitrary entry is
//! evicted per new one; Redis keeps one tracking-table entry per key read
//! over the link. Not used on a Redis Cluster.

use crate::metrics;
use crate::store::caches::tracked::Tracked;
use crate::store::plumbing::error::StoreResult;
use redis::{Client, Script};
use std::sync::Arc;

/// The most ids an entry holds (a page of up to 55 statuses; larger
/// pages read Redis), so the cache stays within `--home-cache` × ~600 bytes.
const MAX_IDS: usize = 64;

/// The ids of a home's first chunk, newest first, from its ids joined by
/// commas (`home_ids.lua`).
pub(crate) fn split_ids(joined: &str) -> Vec<u64> {
    joined.split(',').filter_map(|id| id.parse().ok()).collect()
}

/// The ids of ranks `0..=stop` of one home.
#[derive(Clone)]
struct Head {
    stop: isize,
    ids: Arc<[u64]>,
}

/// The cache; cheap to share. Without a link, reads go to Redis directly.
#[derive(Clone)]
pub(crate) struct HomeCache {
    tracked: Tracked<Head>,
}

impl HomeCache {
    /// A cache of `cap` homes over its own RESP3 connection to the Redis
    /// `client` talks to; `None` or `cap` 0: disabled.
    pub(crate) fn new(client: Option<&Client>, cap: usize) -> HomeCache {
        HomeCache {
            tracked: Tracked::new(client, cap, "home-cache"),
        }
    }

    /// The ids at ranks `0..=stop` of the home at `key`, newest first, as
    /// `script` (`home_ids.lua`) reads them, from the cache or over the
    /// link; `Ok(None)` when there is no link (or it broke) or the head is
    /// longer than [`MAX_IDS`] (the caller reads from Redis), an error when
    /// Redis did not answer the link in time.
    pub(crate) async fn head(
        &self,
        key: &str,
        stop: isize,
        script: &Script,
    ) -> StoreResult<Option<Arc<[u64]>>> {
        if stop >= MAX_IDS as isize {
            return Ok(None);
        }
        let Some(link) = self.tracked.link() else {
            return Ok(None);
        };
        let k = key.as_bytes();
        let m = metrics::global();
        if self.tracked.held(&link, k).is_some_and(|h| h.stop == stop) {
            match self.tracked.hit(&link, k).await {
                Ok(Some(head)) if head.stop == stop => {
                    metrics::inc(&m.home_cache_hits, 1);
                    return Ok(Some(head.ids));
                }
                Ok(_) => {}
                Err(failed) => {
                    failed.fallback()?;
                    return Ok(None);
                }
            }
        }
        let token = self.tracked.reserve(k);
        let mut conn = link.conn();
        let mut invocation = script.key(key);
        invocation.arg(0).arg(stop);
        let read = invocation.invoke_async::<String>(&mut conn);
        let joined = match self.tracked.timed(&link, read).await {
            Ok(joined) => joined,
            Err(failed) => {
                failed.fallback()?;
                return Ok(None);
            }
        };
        let ids: Arc<[u64]> = split_ids(&joined).into();
        metrics::inc(&m.home_cache_fills, 1);
        self.tracked.keep(
            &link,
            k,
            token,
            Head {
                stop,
                ids: ids.clone(),
            },
        );
        Ok(Some(ids))
    }
}
