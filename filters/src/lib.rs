//! Pure filter parsing, compiling and matching for the firehose streams.
//!
//! This crate does no I/O (its one dependency is `rustc-hash`): the server feeds it parsed
//! events and gets back the subscriptions that want them.
//!
//! - [`parse`]: the query-string grammar of `follow`, `track`, `locations` and
//!   `rate`, with errors that name the offending parameter ([`ParseError`]).
//! - [`track`]: message tokenization and phrase semantics (Twitter's
//!   statuses/filter `track`).
//! - [`geo`]: bounding boxes and the grid index over them.
//! - [`index`]: [`Index`], every live subscription compiled into shared
//!   indices, so that routing one event takes a fixed number of lookups
//!   whether 100 or 100,000 clients are connected (what grows is only how far
//!   in the memory hierarchy those lookups land).
//! - [`table`]: the compact open-addressing maps behind those lookups.
//! - [`bloom`]: the prefilters that keep most lookups in cache.
//! - [`sample`]: the deterministic sampling rule shared by every sample client.
//! - [`summary`]: what a block of statuses holds, so a search can pass it over.

pub mod bloom;
pub mod geo;
pub mod index;
pub mod parse;
pub mod rules;
pub mod sample;
pub mod summary;
pub mod table;
pub mod track;

pub use geo::BBox;
pub use index::{Event, Index, Rule, StatusView, SubId};
pub use parse::{box_shape_error, parse_coords, parse_filter, parse_rate, FilterSpec, ParseError};
pub use track::Phrase;

/// The hasher of the index's side maps (subscriptions, phrases, hash
/// collisions, followed sets): rustc's Fx hash, from `rustc-hash`. Their keys
/// are user ids and words chosen by clients; HashDoS is not a concern at
/// these sizes because every map is bounded by the server-side limits on
/// filters and connections. (The hot lookups go through `table`'s own maps,
/// keyed by `track::word_hash`.)
pub type FxBuild = rustc_hash::FxBuildHasher;
/// A `HashMap` keyed with the Fx hash.
pub type FxHashMap<K, V> = rustc_hash::FxHashMap<K, V>;
