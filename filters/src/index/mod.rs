//! [`Index`]: every live subscription compiled into shared indices.
//!
//! Routing an event never walks the list of subscriptions. A status is looked
//! up by author (and by the author it replies to or reposts) in one map, each
//! of its words in one map of terms, its point in one cell of each grid level,
//! and its id against each distinct sample rate; the maps and the grids' cells
//! sit behind prefilters. The cost is a handful of lookups plus the number of
//! subscriptions that actually match. [`Index::route_batch`] routes several
//! events at once, step by step, so that with a large index their cache misses
//! overlap.

mod route;
pub(crate) mod rule;
mod slots;
mod terms;

pub use crate::view::{Event, StatusView, SubId};
pub use rule::Rule;

use crate::bloom::Prefilter;
use crate::geo::GeoIndex;
use crate::hash::FxHashMap;
use crate::sample;
use crate::table::{SubsMap, U64Map};
use crate::track::{word_hash, Phrase, Words};
use slots::*;
use std::collections::HashSet;

/// All live subscriptions, compiled for routing.
#[derive(Debug, Default)]
pub struct Index {
    subs: FxHashMap<SubId, Compiled>,
    firehose: Vec<SubId>,
    /// Distinct sample thresholds with their subscribers.
    sample: Vec<(u64, Vec<SubId>)>,
    follow: SubsMap,
    /// Multi-term phrases.
    phrases: Vec<Option<PhraseSlot>>,
    phrase_ids: FxHashMap<Phrase, u32>,
    free_phrases: Vec<u32>,
    terms: Vec<Option<TermSlot>>,
    /// Hash of a term's text -> its term id.
    term_ids: U64Map<TermHot>,
    /// Further terms whose hash collides with one in `term_ids` (rare).
    term_collisions: FxHashMap<u64, Vec<u32>>,
    free_terms: Vec<u32>,
    /// Prefilter over term hashes; bits of removed terms linger until rebuilt.
    term_filter: Prefilter,
    geo: GeoIndex<SubId>,
    /// Author id -> user-stream subscriptions whose home timeline gets their statuses.
    home: SubsMap,
    /// User id -> that user's own user-stream subscriptions.
    user_of: SubsMap,
    /// Filter subscriptions by `track` or `locations`: every public delete
    /// reaches them.
    by_content: HashSet<SubId, crate::hash::FxBuild>,
    /// Working space of track matching, one per event of a batch.
    scratch: Vec<Scratch>,
}

/// Track matching's working space for one message, kept between calls so
/// that routing allocates nothing once warmed up.
#[derive(Debug, Default)]
struct Scratch {
    words: Words,
    /// Per word: whether it passed the term prefilter.
    passed: Vec<bool>,
    /// (word index, term id) of the words found in the term map.
    candidates: Vec<(u32, u32)>,
    /// Tracked terms among the words.
    present: Vec<u32>,
    /// Present terms whose slot must be read: their one-term phrases'
    /// subscribers, or phrases anchored at them that may match.
    active: Vec<u32>,
}

impl Scratch {
    fn reset(&mut self) {
        self.words.fill("");
        self.passed.clear();
        self.candidates.clear();
        self.present.clear();
        self.active.clear();
    }
}

impl Index {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of live subscriptions.
    pub fn len(&self) -> usize {
        self.subs.len()
    }

    /// True when nothing is subscribed.
    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    /// Adds (or replaces) the subscription `sub`.
    pub fn insert(&mut self, sub: SubId, rule: Rule) {
        self.remove(sub);
        let compiled = match rule {
            Rule::Firehose => {
                self.firehose.push(sub);
                Compiled::Firehose
            }
            Rule::Sample { rate } => {
                let t = sample::threshold(rate);
                match self.sample.iter_mut().find(|(x, _)| *x == t) {
                    Some((_, list)) => list.push(sub),
                    None => self.sample.push((t, vec![sub])),
                }
                Compiled::Sample(t)
            }
            Rule::Filter(spec) => {
                for &uid in &spec.follow {
                    self.follow.push(uid, sub);
                }
                for phrase in &spec.track {
                    self.add_phrase(phrase, sub);
                }
                for b in &spec.locations {
                    self.geo.insert(*b, sub);
                }
                if spec.by_content() {
                    self.by_content.insert(sub);
                }
                Compiled::Filter(spec)
            }
            Rule::User { uid, following } => {
                self.user_of.push(uid, sub);
                let mut set: HashSet<u64, crate::hash::FxBuild> = following.into_iter().collect();
                set.insert(uid);
                for &author in &set {
                    self.home.push(author, sub);
                }
                Compiled::User {
                    uid,
                    following: set,
                }
            }
        };
        self.subs.insert(sub, compiled);
    }

    /// Removes the subscription `sub`; unknown ids are ignored.
    pub fn remove(&mut self, sub: SubId) {
        let Some(compiled) = self.subs.remove(&sub) else {
            return;
        };
        match compiled {
            Compiled::Firehose => self.firehose.retain(|s| *s != sub),
            Compiled::Sample(t) => {
                for (x, list) in &mut self.sample {
                    if *x == t {
                        list.retain(|s| *s != sub);
                    }
                }
                self.sample.retain(|(_, list)| !list.is_empty());
            }
            Compiled::Filter(spec) => {
                for &uid in &spec.follow {
                    self.follow.pull(uid, sub);
                }
                for phrase in &spec.track {
                    self.remove_phrase(phrase, sub);
                }
                for b in &spec.locations {
                    self.geo.remove(*b, sub);
                }
                self.by_content.remove(&sub);
            }
            Compiled::User { uid, following } => {
                self.user_of.pull(uid, sub);
                for author in following {
                    self.home.pull(author, sub);
                }
            }
        }
    }
}
