//! The hash of the index's side maps.

/// The hasher of the index's side maps (subscriptions, phrases, hash
/// collisions, followed sets): rustc's Fx hash, from `rustc-hash`. Their keys
/// are user ids and words chosen by clients; HashDoS is not a concern at
/// these sizes because every map is bounded by the server-side limits on
/// filters and connections. (The hot lookups go through `table`'s own maps,
/// keyed by `track::word_hash`.)
pub type FxBuild = rustc_hash::FxBuildHasher;
/// A `HashMap` keyed with the Fx hash.
pub type FxHashMap<K, V> = rustc_hash::FxHashMap<K, V>;
