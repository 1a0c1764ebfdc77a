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
//! - [`rules`]: the filter-rule language (X's v2 rules plus boxes): the
//!   syntax tree, the reference `Expr::matches`, and `RuleIndex`, rules filed
//!   under their anchors.
//! - [`view`]: what the index is shown of an event; [`hash`]: the side maps'
//!   hasher.

pub mod bloom;
pub mod geo;
pub mod hash;
pub mod index;
pub mod parse;
pub mod rules;
pub mod sample;
pub mod summary;
pub mod table;
pub mod track;
pub mod view;

pub use geo::BBox;
pub use hash::{FxBuild, FxHashMap};
pub use index::rule::Rule;
pub use index::Index;
pub use parse::{box_shape_error, parse_coords, parse_filter, parse_rate, FilterSpec, ParseError};
pub use track::Phrase;
pub use view::{Event, StatusView, SubId};
