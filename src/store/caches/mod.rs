//! The in-process caches over Redis: statuses, counts and sessions (`cache`),
//! the heads of home timelines (`home_cache`), accounts and relations
//! (`view_cache`), and the client-side caching both of the latter stand on
//! (`tracked`), kept true by Redis's invalidation pushes.

pub mod cache;
pub mod home_cache;
pub mod tracked;
pub mod view_cache;
