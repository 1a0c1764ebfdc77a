//! The in-process caches over Redis: statuses, counts and sessions (`cache`),
//! the heads of home timelines (`home_cache`), accounts and relations
//! (`view_cache`), and the client-side caching both of the latter stand on
//! (`tracked`), kept true by Redis's invalidation pushes; and the per-process
//! memories of ranked rows (`rank_cache`), trending answers (`trend_memo`) and
//! suspended users (`suspended`).

pub(crate) mod cache;
pub(crate) mod home_cache;
pub(crate) mod rank_cache;
pub(crate) mod set;
pub(crate) mod suspended;
pub(crate) mod tracked;
pub(crate) mod trend_memo;
pub(crate) mod view_cache;
