//! [`Index`]: every live subscription compiled into shared indices.
//!
//! Routing an event never walks the list of subscriptions. A status is looked
//! up by author (and by the author it replies to or reposts) in one hash map,
//! each of its words in one map of phrase anchors, its point in one grid cell,
//! and its id against each distinct sample rate. The cost is a handful of hash
//! lookups plus the number of subscriptions that actually match.

use crate::geo::GeoIndex;
use crate::parse::FilterSpec;
use crate::sample;
use crate::track::{word_hash, Phrase, Words};
use crate::FxHashMap;
use std::collections::HashSet;

/// Identifies one subscription; the server chooses the numbers.
pub type SubId = u64;

/// What a subscription wants.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// Every public event.
    Firehose,
    /// Public statuses (and their deletes) sampled at `rate` in (0, 1].
    Sample {
        /// Fraction of statuses wanted.
        rate: f64,
    },
    /// Public statuses matching the filter, and deletes by followed users.
    Filter(FilterSpec),
    /// What the home timeline of `uid` gets (statuses by `uid` and by the
    /// users in `following`, private ones included), deletes of those, and
    /// follows of and by `uid`. `following` is kept current from the follow
    /// and unfollow events that pass through the index.
    User {
        /// The user whose stream this is.
        uid: u64,
        /// Whom the user follows when the subscription starts.
        following: Vec<u64>,
    },
}

/// The parts of a status the rules look at.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatusView<'a> {
    /// Status id.
    pub id: u64,
    /// Author id.
    pub uid: u64,
    /// The text.
    pub message: &'a str,
    /// `(lat, lon)` when the status has coordinates.
    pub coords: Option<(f64, f64)>,
    /// Author of the status this one replies to.
    pub reply_to_uid: Option<u64>,
    /// Author of the status this one reposts.
    pub repost_of_uid: Option<u64>,
    /// Whether the author's account is private: then only user streams see it.
    pub private: bool,
}

/// An event as the index sees it.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A status was posted.
    Status(StatusView<'a>),
    /// A status was deleted.
    Delete {
        /// The deleted status.
        status_id: u64,
        /// Its author.
        uid: u64,
        /// Whether the author's account is private.
        private: bool,
    },
    /// `source` started (`following: true`) or stopped following `target`.
    Follow {
        /// The follower.
        source: u64,
        /// The followed user.
        target: u64,
        /// True for follow, false for unfollow.
        following: bool,
    },
    /// Any other public event (a user signed up, ...): firehose only.
    Other,
}

/// Subscribers of one key. Most keys have one, kept inline so that a lookup
/// touches no further memory.
#[derive(Debug, Clone)]
enum Subs {
    One(SubId),
    Many(Vec<SubId>),
}

impl Subs {
    fn push(&mut self, sub: SubId) {
        match self {
            Subs::One(first) => *self = Subs::Many(vec![*first, sub]),
            Subs::Many(list) => list.push(sub),
        }
    }

    /// Removes `sub`; true when nothing is left.
    fn remove(&mut self, sub: SubId) -> bool {
        match self {
            Subs::One(s) => *s == sub,
            Subs::Many(list) => {
                list.retain(|s| *s != sub);
                match list.as_slice() {
                    [] => true,
                    [only] => {
                        *self = Subs::One(*only);
                        false
                    }
                    _ => false,
                }
            }
        }
    }

    fn extend_into(&self, out: &mut Vec<SubId>) {
        match self {
            Subs::One(s) => out.push(*s),
            Subs::Many(list) => out.extend_from_slice(list),
        }
    }
}

/// One distinct tracked phrase, as sorted term ids.
#[derive(Debug)]
struct PhraseSlot {
    /// Term ids, sorted; the anchor is one of them.
    terms: Vec<u32>,
    subs: Subs,
}

/// A term's text: short ones (most words) live inside the slot, so checking
/// a candidate word touches no further memory.
#[derive(Debug)]
enum Text {
    Inline(u8, [u8; 22]),
    Heap(Box<str>),
}

impl Text {
    fn new(s: &str) -> Text {
        if s.len() <= 22 {
            let mut buf = [0u8; 22];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            Text::Inline(s.len() as u8, buf)
        } else {
            Text::Heap(s.into())
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            Text::Inline(len, buf) => &buf[..*len as usize],
            Text::Heap(s) => s.as_bytes(),
        }
    }
}

/// One distinct term of any tracked phrase.
#[derive(Debug)]
struct TermSlot {
    text: Text,
    /// Subscribers of the one-term phrase made of just this term: the common
    /// case, answered from the term slot alone.
    single: Option<Subs>,
    /// Multi-term phrases filed under this term (their anchor).
    anchored: Vec<u32>,
    /// Uses by phrases (a one-term phrase counts once).
    refs: u32,
}

/// Smallest term prefilter, in bits (128 KiB). The filter grows to keep at
/// least [`FILTER_BITS_PER_TERM`] bits per tracked term, so that most message
/// words no one tracks cost a cache hit instead of a hash-map probe, whatever
/// the number of filters.
const MIN_FILTER_BITS: usize = 1 << 20;
/// Bits per term: about one word in 16 that no one tracks gets past the filter.
const FILTER_BITS_PER_TERM: usize = 16;

/// The bit of `hash` in a filter of `words` 64-bit words (a power of two):
/// the hash's top bits, which the Fx multiply mixes best.
fn filter_bit(hash: u64, words: usize) -> usize {
    let bits = (words * 64).trailing_zeros();
    (hash >> (64 - bits)) as usize
}

#[derive(Debug)]
enum Compiled {
    Firehose,
    Sample(u64),
    Filter(FilterSpec),
    User {
        uid: u64,
        following: HashSet<u64, crate::FxBuild>,
    },
}

/// All live subscriptions, compiled for routing.
#[derive(Debug, Default)]
pub struct Index {
    subs: FxHashMap<SubId, Compiled>,
    firehose: Vec<SubId>,
    /// Distinct sample thresholds with their subscribers.
    sample: Vec<(u64, Vec<SubId>)>,
    follow: FxHashMap<u64, Subs>,
    /// Multi-term phrases.
    phrases: Vec<Option<PhraseSlot>>,
    phrase_ids: FxHashMap<Phrase, u32>,
    free_phrases: Vec<u32>,
    terms: Vec<Option<TermSlot>>,
    /// Hash of a term's text -> its term id.
    term_ids: FxHashMap<u64, u32>,
    /// Further terms whose hash collides with one in `term_ids` (rare).
    term_collisions: FxHashMap<u64, Vec<u32>>,
    free_terms: Vec<u32>,
    /// Prefilter over term hashes; bits of removed terms linger until rebuilt.
    term_filter: Vec<u64>,
    stale_filter_bits: usize,
    geo: GeoIndex<SubId>,
    /// Author id -> user-stream subscriptions whose home timeline gets their statuses.
    home: FxHashMap<u64, Subs>,
    /// User id -> that user's own user-stream subscriptions.
    user_of: FxHashMap<u64, Subs>,
    words: Words,
    present: Vec<u32>,
}

fn push(map: &mut FxHashMap<u64, Subs>, key: u64, sub: SubId) {
    match map.get_mut(&key) {
        Some(subs) => subs.push(sub),
        None => {
            map.insert(key, Subs::One(sub));
        }
    }
}

fn pull(map: &mut FxHashMap<u64, Subs>, key: u64, sub: SubId) {
    if let Some(subs) = map.get_mut(&key) {
        if subs.remove(sub) {
            map.remove(&key);
        }
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
                    push(&mut self.follow, uid, sub);
                }
                for phrase in &spec.track {
                    self.add_phrase(phrase, sub);
                }
                for b in &spec.locations {
                    self.geo.insert(*b, sub);
                }
                Compiled::Filter(spec)
            }
            Rule::User { uid, following } => {
                push(&mut self.user_of, uid, sub);
                let mut set: HashSet<u64, crate::FxBuild> = following.into_iter().collect();
                set.insert(uid);
                for &author in &set {
                    push(&mut self.home, author, sub);
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
                    pull(&mut self.follow, uid, sub);
                }
                for phrase in &spec.track {
                    self.remove_phrase(phrase, sub);
                }
                for b in &spec.locations {
                    self.geo.remove(*b, sub);
                }
            }
            Compiled::User { uid, following } => {
                pull(&mut self.user_of, uid, sub);
                for author in following {
                    pull(&mut self.home, author, sub);
                }
            }
        }
    }

    fn add_phrase(&mut self, phrase: &Phrase, sub: SubId) {
        if let [term] = phrase.terms() {
            let id = self.intern(term);
            let Some(t) = &mut self.terms[id as usize] else {
                return;
            };
            match &mut t.single {
                Some(subs) => {
                    subs.push(sub);
                    t.refs -= 1; // the one-term phrase counts once
                }
                None => t.single = Some(Subs::One(sub)),
            }
            return;
        }
        if let Some(&id) = self.phrase_ids.get(phrase) {
            if let Some(slot) = &mut self.phrases[id as usize] {
                slot.subs.push(sub);
            }
            return;
        }
        let mut terms: Vec<u32> = phrase.terms().iter().map(|t| self.intern(t)).collect();
        terms.sort_unstable();
        let anchor = self.find_term(phrase.anchor());
        let slot = PhraseSlot {
            terms,
            subs: Subs::One(sub),
        };
        let id = match self.free_phrases.pop() {
            Some(id) => {
                self.phrases[id as usize] = Some(slot);
                id
            }
            None => {
                self.phrases.push(Some(slot));
                (self.phrases.len() - 1) as u32
            }
        };
        self.phrase_ids.insert(phrase.clone(), id);
        if let Some(Some(t)) = anchor.map(|a| &mut self.terms[a as usize]) {
            t.anchored.push(id);
        }
    }

    fn remove_phrase(&mut self, phrase: &Phrase, sub: SubId) {
        if let [term] = phrase.terms() {
            let Some(id) = self.find_term(term) else {
                return;
            };
            let Some(t) = &mut self.terms[id as usize] else {
                return;
            };
            let Some(subs) = &mut t.single else {
                return;
            };
            if subs.remove(sub) {
                t.single = None;
                self.release(id);
            }
            return;
        }
        let Some(&id) = self.phrase_ids.get(phrase) else {
            return;
        };
        let Some(slot) = &mut self.phrases[id as usize] else {
            return;
        };
        if !slot.subs.remove(sub) {
            return;
        }
        let terms = std::mem::take(&mut slot.terms);
        self.phrases[id as usize] = None;
        self.free_phrases.push(id);
        self.phrase_ids.remove(phrase);
        if let Some(Some(t)) = self
            .find_term(phrase.anchor())
            .map(|a| &mut self.terms[a as usize])
        {
            t.anchored.retain(|p| *p != id);
        }
        for term in terms {
            self.release(term);
        }
    }

    fn term_is(&self, id: u32, text: &[u8]) -> bool {
        self.terms[id as usize]
            .as_ref()
            .is_some_and(|t| t.text.as_bytes() == text)
    }

    /// The id of the term with this text and hash, if tracked.
    fn lookup(&self, hash: u64, text: &[u8]) -> Option<u32> {
        let id = *self.term_ids.get(&hash)?;
        if self.term_is(id, text) {
            return Some(id);
        }
        self.term_collisions
            .get(&hash)?
            .iter()
            .copied()
            .find(|&id| self.term_is(id, text))
    }

    fn find_term(&self, text: &str) -> Option<u32> {
        self.lookup(word_hash(text), text.as_bytes())
    }

    /// The id of `text`, creating the term if needed; counts one more use.
    fn intern(&mut self, text: &str) -> u32 {
        if let Some(id) = self.find_term(text) {
            if let Some(t) = &mut self.terms[id as usize] {
                t.refs += 1;
            }
            return id;
        }
        let slot = TermSlot {
            text: Text::new(text),
            single: None,
            anchored: Vec::new(),
            refs: 1,
        };
        let id = match self.free_terms.pop() {
            Some(id) => {
                self.terms[id as usize] = Some(slot);
                id
            }
            None => {
                self.terms.push(Some(slot));
                (self.terms.len() - 1) as u32
            }
        };
        let hash = word_hash(text);
        match self.term_ids.entry(hash) {
            std::collections::hash_map::Entry::Occupied(_) => {
                self.term_collisions.entry(hash).or_default().push(id);
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(id);
            }
        }
        let wanted = (self.term_ids.len() * FILTER_BITS_PER_TERM)
            .next_power_of_two()
            .max(MIN_FILTER_BITS)
            / 64;
        if self.term_filter.len() < wanted {
            self.term_filter = vec![0; wanted];
            self.rebuild_filter();
        } else {
            let bit = filter_bit(hash, self.term_filter.len());
            self.term_filter[bit / 64] |= 1 << (bit % 64);
        }
        id
    }

    /// Counts one use fewer of a term, dropping it when unused.
    fn release(&mut self, id: u32) {
        let Some(t) = &mut self.terms[id as usize] else {
            return;
        };
        t.refs -= 1;
        if t.refs > 0 {
            return;
        }
        let hash = word_hash(std::str::from_utf8(t.text.as_bytes()).unwrap_or(""));
        self.terms[id as usize] = None;
        self.free_terms.push(id);
        if self.term_ids.get(&hash) == Some(&id) {
            self.term_ids.remove(&hash);
            // Promote a colliding term, if any, to the primary slot.
            if let Some(list) = self.term_collisions.get_mut(&hash) {
                if let Some(next) = list.pop() {
                    self.term_ids.insert(hash, next);
                }
                if list.is_empty() {
                    self.term_collisions.remove(&hash);
                }
            }
        } else if let Some(list) = self.term_collisions.get_mut(&hash) {
            list.retain(|x| *x != id);
            if list.is_empty() {
                self.term_collisions.remove(&hash);
            }
        }
        self.stale_filter_bits += 1;
        if self.stale_filter_bits > 1024 && self.stale_filter_bits > self.term_ids.len() {
            self.rebuild_filter();
        }
    }

    fn rebuild_filter(&mut self) {
        self.term_filter.iter_mut().for_each(|w| *w = 0);
        let words = self.term_filter.len();
        for hash in self.term_ids.keys() {
            let bit = filter_bit(*hash, words);
            self.term_filter[bit / 64] |= 1 << (bit % 64);
        }
        self.stale_filter_bits = 0;
    }

    /// Collects into `out` (cleared first) the subscriptions that want `event`,
    /// each once, in ascending order. Follow and unfollow events also update
    /// the followed set of the follower's user streams.
    pub fn route(&mut self, event: &Event<'_>, out: &mut Vec<SubId>) {
        out.clear();
        match *event {
            Event::Status(ref s) => {
                if !s.private {
                    self.route_public_status(s, out);
                }
                if let Some(subs) = self.home.get(&s.uid) {
                    subs.extend_into(out);
                }
            }
            Event::Delete {
                status_id,
                uid,
                private,
            } => {
                if !private {
                    out.extend_from_slice(&self.firehose);
                    for (t, list) in &self.sample {
                        if sample::hit(status_id, *t) {
                            out.extend_from_slice(list);
                        }
                    }
                    if let Some(subs) = self.follow.get(&uid) {
                        subs.extend_into(out);
                    }
                }
                if let Some(subs) = self.home.get(&uid) {
                    subs.extend_into(out);
                }
            }
            Event::Follow {
                source,
                target,
                following,
            } => {
                out.extend_from_slice(&self.firehose);
                for uid in [source, target] {
                    if let Some(subs) = self.user_of.get(&uid) {
                        subs.extend_into(out);
                    }
                }
                self.apply_follow(source, target, following);
            }
            Event::Other => out.extend_from_slice(&self.firehose),
        }
        out.sort_unstable();
        out.dedup();
    }

    fn route_public_status(&mut self, s: &StatusView<'_>, out: &mut Vec<SubId>) {
        out.extend_from_slice(&self.firehose);
        for (t, list) in &self.sample {
            if sample::hit(s.id, *t) {
                out.extend_from_slice(list);
            }
        }
        let authors = [Some(s.uid), s.reply_to_uid, s.repost_of_uid];
        for uid in authors.into_iter().flatten() {
            if let Some(subs) = self.follow.get(&uid) {
                subs.extend_into(out);
            }
        }
        if !self.term_ids.is_empty() {
            self.match_track(s.message, out);
        }
        if let Some((lat, lon)) = s.coords {
            self.geo.find(lat, lon, |sub| out.push(sub));
        }
    }

    /// Phrases whose terms all occur in the message: the words that are
    /// tracked terms are found first (prefilter, then one probe each), then
    /// only the phrases anchored at those terms are checked.
    fn match_track(&mut self, message: &str, out: &mut Vec<SubId>) {
        self.words.fill(message);
        self.present.clear();
        let hashes = self.words.hashes();
        for (i, &h) in hashes.iter().enumerate() {
            let bit = filter_bit(h, self.term_filter.len());
            if self.term_filter[bit / 64] & (1 << (bit % 64)) == 0 {
                continue;
            }
            let Some(id) = self.lookup(h, self.words.word(i).as_bytes()) else {
                continue;
            };
            if self.present.contains(&id) {
                continue;
            }
            self.present.push(id);
            if let Some(Some(subs)) = self.terms[id as usize].as_ref().map(|t| &t.single) {
                subs.extend_into(out);
            }
        }
        for &term in &self.present {
            let Some(t) = &self.terms[term as usize] else {
                continue;
            };
            for &p in &t.anchored {
                let Some(slot) = &self.phrases[p as usize] else {
                    continue;
                };
                if slot.terms.iter().all(|x| self.present.contains(x)) {
                    slot.subs.extend_into(out);
                }
            }
        }
    }

    fn apply_follow(&mut self, source: u64, target: u64, following: bool) {
        let mut subs = Vec::new();
        match self.user_of.get(&source) {
            Some(list) => list.extend_into(&mut subs),
            None => return,
        }
        for sub in subs {
            let Some(Compiled::User { following: set, .. }) = self.subs.get_mut(&sub) else {
                continue;
            };
            if following {
                if set.insert(target) {
                    push(&mut self.home, target, sub);
                }
            } else if target != source && set.remove(&target) {
                pull(&mut self.home, target, sub);
            }
        }
    }
}
