//! Pure filter parsing, compiling and matching for the firehose streams.
//!
//! This crate does no I/O and has no dependencies: the server feeds it parsed
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

pub mod bloom;
pub mod geo;
pub mod index;
pub mod parse;
pub mod sample;
pub mod table;
pub mod track;

pub use geo::BBox;
pub use index::{Event, Index, Rule, StatusView, SubId};
pub use parse::{parse_filter, parse_rate, FilterSpec, ParseError};
pub use track::Phrase;

/// A small, fast, non-cryptographic hasher (the Fx hash used by rustc) for the
/// index maps, whose keys are user ids and short words chosen by clients.
/// HashDoS is not a concern at these sizes because every map is bounded by the
/// server-side limits on filters and connections.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(buf));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        // The multiply leaves the low bits depending only on the input's low
        // bits (words sharing a first chunk, ids sharing a residue), and the
        // hash maps pick buckets with the low bits: rotate the well-mixed
        // high bits down, as rustc-hash 2 does.
        self.hash.rotate_left(26)
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

/// `BuildHasher` for [`FxHasher`].
pub type FxBuild = std::hash::BuildHasherDefault<FxHasher>;
/// A `HashMap` keyed with [`FxHasher`].
pub type FxHashMap<K, V> = std::collections::HashMap<K, V, FxBuild>;
