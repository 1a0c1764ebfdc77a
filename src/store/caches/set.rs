//! Every in-process cache of one store handle, in one field of it.

use super::{cache, home_cache, rank_cache, suspended, trend_memo, view_cache};
use crate::config::Config;
use std::sync::Arc;
use std::time::Duration;

/// The handle's caches (each shared by the handle's clones).
#[derive(Clone)]
pub(crate) struct Caches {
    /// Statuses (evicted on change and by the hub on delete).
    pub(crate) status: Arc<cache::StatusCache>,
    /// Status counts read lately (reused for a second by timeline pages).
    pub(crate) counts: Arc<cache::CountsCache>,
    /// Sessions recently found alive.
    pub(crate) sessions: Arc<cache::SessionCache>,
    /// Trending answers (`trends`).
    pub(crate) trends: Arc<trend_memo::TrendMemo>,
    /// Rows of recently ranked timelines (`ranking`).
    pub(crate) ranked: Arc<rank_cache::RankCache>,
    /// The suspended users this process knows of (`moderation`).
    pub(crate) suspended: suspended::Suspended,
    /// The heads of home timelines (one Redis only).
    pub(crate) homes: home_cache::HomeCache,
    /// Accounts and relations (one Redis only).
    pub(crate) views: view_cache::ViewCache,
}

impl Caches {
    /// The caches `cfg` sizes; `client` is the one Redis whose
    /// invalidation pushes keep the tracked ones true (`None` on a
    /// cluster, where they stay off).
    pub(crate) fn new(cfg: &Config, client: Option<&redis::Client>) -> Caches {
        let (homes, views) = match client {
            Some(c) => (
                home_cache::HomeCache::new(Some(c), cfg.home_cache),
                view_cache::ViewCache::new(Some(c), cfg.view_cache),
            ),
            None => (
                home_cache::HomeCache::new(None, 0),
                view_cache::ViewCache::new(None, 0),
            ),
        };
        Caches {
            status: Arc::new(cache::StatusCache::new(cfg.status_cache)),
            counts: Arc::default(),
            sessions: Arc::new(cache::SessionCache::new(Duration::from_secs_f64(
                cfg.session_cache_ttl.clamp(0.0, 3600.0),
            ))),
            trends: Arc::default(),
            ranked: Arc::default(),
            suspended: suspended::Suspended::default(),
            homes,
            views,
        }
    }
}
