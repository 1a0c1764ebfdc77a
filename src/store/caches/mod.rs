//! The in-process caches over Redis: statuses, counts and sessions (`cache`),
//! the heads of home timelines (`home_cache`), accounts and relations
//! (`view_cache`), and the client-side caching both of the latter stand on
//! (`tracked`), kept true by Redis's invalidation pushes; and the per-process
//! memories of ranked rows (`rank_cache`), trending answers (`trend_memo`) and
//! suspended users (`suspended`).

pub mod cache;
pub mod home_cache;
pub mod rank_cache;
pub(crate) mod set;
pub mod suspended;
pub mod tracked;
pub mod trend_memo;
pub mod view_cache;
