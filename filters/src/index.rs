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

use crate::bloom::Prefilter;
use crate::geo::GeoIndex;
use crate::parse::FilterSpec;
use crate::sample;
use crate::table::{SubsMap, U64Map};
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

impl Rule {
    /// Whether this rule alone wants `event`, as an [`Index`] holding only
    /// it would route it: for one subscription's replay, where building an
    /// index would cost more than the check. A user rule follows the follow
    /// and unfollow events of its user, as the index does.
    pub fn matches(&mut self, event: &Event<'_>) -> bool {
        match self {
            Rule::Firehose => match *event {
                Event::Status(ref s) => !s.private,
                Event::Delete { private, .. } => !private,
                Event::Notice { public, .. } => public,
                Event::Follow { .. } | Event::Other => true,
            },
            Rule::Sample { rate } => {
                let t = sample::threshold(*rate);
                match *event {
                    Event::Status(ref s) => !s.private && sample::hit(s.id, t),
                    Event::Delete {
                        status_id, private, ..
                    } => !private && sample::hit(status_id, t),
                    _ => false,
                }
            }
            Rule::Filter(spec) => match *event {
                Event::Status(ref s) => spec.matches(s),
                Event::Delete { uid, private, .. } => !private && spec.follow.contains(&uid),
                _ => false,
            },
            Rule::User { uid, following } => {
                let home = |author: u64| author == *uid || following.contains(&author);
                match *event {
                    Event::Status(ref s) => home(s.uid),
                    Event::Delete { uid: author, .. } => home(author),
                    Event::Notice { uids, .. } => uids.contains(uid),
                    Event::Follow {
                        source,
                        target,
                        following: follows,
                    } => {
                        if source == *uid {
                            if follows {
                                if !following.contains(&target) {
                                    following.push(target);
                                }
                            } else if target != source {
                                following.retain(|f| *f != target);
                            }
                        }
                        source == *uid || target == *uid
                    }
                    Event::Other => false,
                }
            }
        }
    }
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
    /// A notice for some users (a like of their status, a mention, a follow
    /// request, a repost of their status): their user streams, and the
    /// firehose when `public`.
    Notice {
        /// The users whose user streams get it.
        uids: &'a [u64],
        /// Whether it may reach the firehose (nothing private in it).
        public: bool,
    },
    /// Any other public event (a user signed up, ...): firehose only.
    Other,
}

/// Subscribers of one key. Most keys have one, kept inline so that a lookup
/// touches no further memory; the list is boxed to keep this 16 bytes.
#[derive(Debug, Clone)]
#[allow(clippy::box_collection)]
enum Subs {
    One(SubId),
    Many(Box<Vec<SubId>>),
}

impl Subs {
    fn push(&mut self, sub: SubId) {
        match self {
            Subs::One(first) => *self = Subs::Many(Box::new(vec![*first, sub])),
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

/// Term ids of a phrase, sorted: up to [`INLINE_TERMS`] inside the phrase's
/// slot, so that checking a candidate phrase reads one place.
#[derive(Debug)]
enum TermIds {
    Inline(u8, [u32; INLINE_TERMS]),
    Heap(Box<[u32]>),
}

const INLINE_TERMS: usize = 5;

impl TermIds {
    fn new(ids: &[u32]) -> TermIds {
        if ids.len() <= INLINE_TERMS {
            let mut buf = [0; INLINE_TERMS];
            buf[..ids.len()].copy_from_slice(ids);
            TermIds::Inline(ids.len() as u8, buf)
        } else {
            TermIds::Heap(ids.into())
        }
    }

    fn as_slice(&self) -> &[u32] {
        match self {
            TermIds::Inline(n, ids) => &ids[..usize::from(*n)],
            TermIds::Heap(ids) => ids,
        }
    }
}

/// One distinct tracked phrase.
#[derive(Debug)]
struct PhraseSlot {
    /// The anchor is one of them.
    terms: TermIds,
    subs: Subs,
}

/// Bytes of a term's text kept inside its slot.
const INLINE_TEXT: usize = 14;

/// A term's text: short ones (most words) live inside the slot, so checking
/// a candidate word touches no further memory.
#[derive(Debug)]
enum Text {
    Inline(u8, [u8; INLINE_TEXT]),
    Heap(Box<str>),
}

impl Text {
    fn new(s: &str) -> Text {
        if s.len() <= INLINE_TEXT {
            let mut buf = [0u8; INLINE_TEXT];
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

/// Bytes of a term's text copied into its [`TermHot`].
const HOT_TEXT: usize = 10;
/// [`TermHot::len`] of a term too long to copy.
const NOT_INLINE: u8 = u8::MAX;

/// What a message word that is this term (its text checked in the map's
/// slot) needs beyond the slot; see [`TermHot`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(u8)]
enum Kind {
    /// Read the term's slot (several subscribers, or a one-term phrase and
    /// longer ones together).
    #[default]
    Other,
    /// Tracked alone, by one subscriber, in no longer phrase (the common
    /// case): that subscriber is [`TermHot::data`].
    Simple,
    /// Only a non-anchor term of longer phrases: its presence is all that
    /// matters, to the phrases' anchors.
    Present,
    /// Anchors longer phrases and is tracked in no other way: the slot is
    /// worth reading only if the message holds, for some anchored phrase,
    /// one chosen other term, whose bits [`TermHot::data`] gathers (see
    /// [`sig_bit`]).
    Gated,
}

/// What the term map holds for a term, beside its hash: its id, a copy of
/// its text when short, and what a word that is this term needs beyond the
/// map's slot ([`Kind`]). Most matched words (a simple term's, a non-anchor
/// term's, an anchor's whose phrases lack a term in the message) are then
/// answered from the map's slot alone, without reading the term's slot.
#[derive(Debug, Clone, Copy, Default)]
struct TermHot {
    /// The one subscriber of a [`Kind::Simple`] term; the other terms' bits
    /// of a [`Kind::Gated`] one.
    data: u64,
    id: u32,
    kind: Kind,
    /// Length of `text`, or [`NOT_INLINE`].
    len: u8,
    text: [u8; HOT_TEXT],
}

/// The bit a word (or term) with hash `hash` sets in a message's signature:
/// a 64-bit Bloom filter of its words, which a [`Kind::Gated`] term tests
/// before reading its slot.
#[inline]
fn sig_bit(hash: u64) -> u64 {
    1 << (hash >> 58)
}

impl TermHot {
    /// Whether the term's text is `word`: `Some` when the copy decides it.
    #[inline]
    fn text_is(&self, word: &[u8]) -> Option<bool> {
        if self.len == NOT_INLINE {
            return None;
        }
        let len = usize::from(self.len);
        Some(word.len() == len && self.text[..len] == *word)
    }
}

/// One distinct term of any tracked phrase, in one cache line (64 bytes):
/// a message word that is a tracked term costs one read here.
#[derive(Debug)]
#[repr(align(64))]
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
                Compiled::Filter(spec)
            }
            Rule::User { uid, following } => {
                self.user_of.push(uid, sub);
                let mut set: HashSet<u64, crate::FxBuild> = following.into_iter().collect();
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
            }
            Compiled::User { uid, following } => {
                self.user_of.pull(uid, sub);
                for author in following {
                    self.home.pull(author, sub);
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
            self.sync_hot(id);
            return;
        }
        if let Some(&id) = self.phrase_ids.get(phrase) {
            if let Some(slot) = &mut self.phrases[id as usize] {
                slot.subs.push(sub);
            }
            return;
        }
        let mut ids: Vec<u32> = phrase.terms().iter().map(|t| self.intern(t)).collect();
        ids.sort_unstable();
        let terms = TermIds::new(&ids);
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
        for term in ids {
            self.sync_hot(term);
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
            self.sync_hot(id);
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
        let terms = std::mem::replace(&mut slot.terms, TermIds::Inline(0, [0; INLINE_TERMS]));
        self.phrases[id as usize] = None;
        self.free_phrases.push(id);
        self.phrase_ids.remove(phrase);
        if let Some(Some(t)) = self
            .find_term(phrase.anchor())
            .map(|a| &mut self.terms[a as usize])
        {
            t.anchored.retain(|p| *p != id);
        }
        for &term in terms.as_slice() {
            self.release(term);
        }
        for &term in terms.as_slice() {
            self.sync_hot(term);
        }
    }

    fn term_is(&self, id: u32, text: &[u8]) -> bool {
        self.terms[id as usize]
            .as_ref()
            .is_some_and(|t| t.text.as_bytes() == text)
    }

    /// The id of the term with this text and hash, if tracked.
    fn lookup(&self, hash: u64, text: &[u8]) -> Option<u32> {
        let id = self.term_ids.get(hash)?.id;
        if self.term_is(id, text) {
            return Some(id);
        }
        self.lookup_collision(hash, text)
    }

    /// The id of a term whose hash is shared with the one `term_ids` holds.
    fn lookup_collision(&self, hash: u64, text: &[u8]) -> Option<u32> {
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
        if self.term_ids.get(hash).is_some() {
            self.term_collisions.entry(hash).or_default().push(id);
        } else {
            let hot = self.hot(id);
            self.term_ids.insert(hash, hot);
        }
        if !self.term_filter.add(hash, self.term_ids.len()) {
            self.rebuild_filter();
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
        if self.term_ids.get(hash).is_some_and(|h| h.id == id) {
            self.term_ids.remove(hash);
            // Promote a colliding term, if any, to the primary slot.
            if let Some(list) = self.term_collisions.get_mut(&hash) {
                let next = list.pop();
                if list.is_empty() {
                    self.term_collisions.remove(&hash);
                }
                if let Some(next) = next {
                    let hot = self.hot(next);
                    self.term_ids.insert(hash, hot);
                }
            }
        } else if let Some(list) = self.term_collisions.get_mut(&hash) {
            list.retain(|x| *x != id);
            if list.is_empty() {
                self.term_collisions.remove(&hash);
            }
        }
        if self.term_filter.removed(self.term_ids.len()) {
            self.rebuild_filter();
        }
    }

    /// The [`TermHot`] of a live term.
    fn hot(&self, id: u32) -> TermHot {
        let mut hot = TermHot {
            id,
            len: NOT_INLINE,
            ..TermHot::default()
        };
        let Some(t) = &self.terms[id as usize] else {
            return hot;
        };
        let text = t.text.as_bytes();
        if text.len() <= HOT_TEXT {
            hot.len = text.len() as u8;
            hot.text[..text.len()].copy_from_slice(text);
        }
        match (&t.single, t.anchored.is_empty()) {
            (Some(Subs::One(sub)), true) if t.refs == 1 => {
                hot.kind = Kind::Simple;
                hot.data = *sub;
            }
            (None, true) => hot.kind = Kind::Present,
            (None, false) => {
                hot.kind = Kind::Gated;
                hot.data = t.anchored.iter().fold(0, |bits, &p| {
                    bits | self.phrases[p as usize]
                        .as_ref()
                        .and_then(|slot| slot.terms.as_slice().iter().find(|&&x| x != id))
                        .map_or(u64::MAX, |&other| self.term_sig_bit(other))
                });
            }
            _ => {}
        }
        hot
    }

    /// The signature bit of live term `id`'s text.
    fn term_sig_bit(&self, id: u32) -> u64 {
        match &self.terms[id as usize] {
            Some(t) => sig_bit(word_hash(
                std::str::from_utf8(t.text.as_bytes()).unwrap_or(""),
            )),
            None => u64::MAX,
        }
    }

    /// Refreshes the map's copy of term `id` after its uses changed.
    fn sync_hot(&mut self, id: u32) {
        let Some(t) = &self.terms[id as usize] else {
            return;
        };
        let hash = word_hash(std::str::from_utf8(t.text.as_bytes()).unwrap_or(""));
        let hot = self.hot(id);
        // A term that collides lives in `term_collisions`, not in the map.
        if let Some(slot) = self.term_ids.get_mut(hash).filter(|h| h.id == id) {
            *slot = hot;
        }
    }

    fn rebuild_filter(&mut self) {
        let hashes = self.term_ids.iter().map(|(h, _)| h);
        self.term_filter.rebuild(self.term_ids.len(), hashes);
    }

    /// Collects into `out` (cleared first) the subscriptions that want `event`,
    /// each once, in ascending order. Follow and unfollow events also update
    /// the followed set of the follower's user streams.
    pub fn route(&mut self, event: &Event<'_>, out: &mut Vec<SubId>) {
        let mut scratch = self.take_scratch(1);
        self.route_with(event, out, &mut scratch[0]);
        self.scratch = scratch;
    }

    /// The working space, moved out of `self` while routing borrows the
    /// index, with room for at least `n` events.
    fn take_scratch(&mut self, n: usize) -> Vec<Scratch> {
        let mut scratch = std::mem::take(&mut self.scratch);
        if scratch.len() < n {
            scratch.resize_with(n, Scratch::default);
        }
        scratch
    }

    /// Routes `events` in order, as [`Index::route`] would one by one, into
    /// `outs` (resized to one list per event).
    ///
    /// With a large index most of routing is waiting for memory. Here each
    /// step of matching runs for every event of the batch before the next
    /// step, so the cache misses of different events overlap: a busy
    /// dispatcher routes what it has queued in one call.
    pub fn route_batch(&mut self, events: &[Event<'_>], outs: &mut Vec<Vec<SubId>>) {
        outs.resize_with(events.len(), Vec::new);
        let mut scratch = self.take_scratch(1);
        let mut start = 0;
        while start < events.len() {
            // Follow events change the index: they route alone, in order.
            let end = events[start..]
                .iter()
                .position(|e| matches!(e, Event::Follow { .. }))
                .map_or(events.len(), |p| start + p);
            if end == start {
                self.route_with(&events[start], &mut outs[start], &mut scratch[0]);
                start += 1;
                continue;
            }
            let (evs, outs) = (&events[start..end], &mut outs[start..end]);
            if scratch.len() < evs.len() {
                scratch.resize_with(evs.len(), Scratch::default);
            }
            // Each step for every event before the next step, so that the
            // reads of one step, independent across events, overlap.
            for ((e, out), sc) in evs.iter().zip(outs.iter_mut()).zip(&mut scratch) {
                out.clear();
                sc.reset();
                self.route_cheap(e, out, sc);
            }
            for (e, out) in evs.iter().zip(outs.iter_mut()) {
                self.route_lookups(e, out);
            }
            for sc in &mut scratch[..evs.len()] {
                self.prefilter_words(sc);
            }
            for (out, sc) in outs.iter_mut().zip(&mut scratch) {
                self.probe_terms(out, sc);
            }
            for ((_, out), sc) in evs.iter().zip(outs.iter_mut()).zip(&mut scratch) {
                self.match_phrases(out, sc);
                out.sort_unstable();
                out.dedup();
            }
            start = end;
        }
        self.scratch = scratch;
    }

    fn route_with(&mut self, event: &Event<'_>, out: &mut Vec<SubId>, sc: &mut Scratch) {
        out.clear();
        sc.reset();
        if let Event::Follow {
            source,
            target,
            following,
        } = *event
        {
            out.extend_from_slice(&self.firehose);
            for uid in [source, target] {
                self.user_of.extend_into(uid, out);
            }
            self.apply_follow(source, target, following);
        } else {
            self.route_cheap(event, out, sc);
            self.route_lookups(event, out);
            self.prefilter_words(sc);
            self.probe_terms(out, sc);
            self.match_phrases(out, sc);
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Routing of a status, delete or other event (not follow), step 1:
    /// what needs no large table (firehose, sample), and the message of a
    /// public status cut into words, into `sc`.
    fn route_cheap(&self, event: &Event<'_>, out: &mut Vec<SubId>, sc: &mut Scratch) {
        let (id, public) = match *event {
            Event::Status(ref s) => (s.id, !s.private),
            Event::Delete {
                status_id, private, ..
            } => (status_id, !private),
            Event::Other => {
                out.extend_from_slice(&self.firehose);
                return;
            }
            Event::Notice { public, .. } => {
                if public {
                    out.extend_from_slice(&self.firehose);
                }
                return;
            }
            Event::Follow { .. } => return,
        };
        if !public {
            return;
        }
        out.extend_from_slice(&self.firehose);
        for (t, list) in &self.sample {
            if sample::hit(id, *t) {
                out.extend_from_slice(list);
            }
        }
        if let Event::Status(ref s) = *event {
            if !self.term_ids.is_empty() {
                sc.words.fill(s.message);
            }
        }
    }

    /// Step 2: the lookups by author and by place.
    fn route_lookups(&self, event: &Event<'_>, out: &mut Vec<SubId>) {
        match *event {
            Event::Status(ref s) => {
                if !s.private {
                    if let Some((lat, lon)) = s.coords {
                        self.geo.find(lat, lon, |sub| out.push(sub));
                    }
                    let authors = [Some(s.uid), s.reply_to_uid, s.repost_of_uid];
                    for uid in authors.into_iter().flatten() {
                        self.follow.extend_into(uid, out);
                    }
                }
                self.home.extend_into(s.uid, out);
            }
            Event::Delete { uid, private, .. } => {
                if !private {
                    self.follow.extend_into(uid, out);
                }
                self.home.extend_into(uid, out);
            }
            Event::Notice { uids, .. } => {
                for &uid in uids {
                    self.user_of.extend_into(uid, out);
                }
            }
            Event::Follow { .. } | Event::Other => {}
        }
    }

    /// Track, step 1: every word against the term prefilter, with no branch
    /// between the reads.
    fn prefilter_words(&self, sc: &mut Scratch) {
        let filter = &self.term_filter;
        sc.passed
            .extend(sc.words.hashes().iter().map(|&h| filter.may_contain(h)));
    }

    /// Track, step 2: one probe per word that passed the prefilter. A word
    /// whose text the map's copy confirms is answered there as its term's
    /// [`Kind`] says; the rest become candidates.
    ///
    /// Track matching finds the words that are tracked terms first, then
    /// checks only the phrases anchored at those terms. Each step runs over
    /// all words (and, in [`Index::route_batch`], all events) before the
    /// next, so that with a large index their cache misses overlap.
    fn probe_terms(&self, out: &mut Vec<SubId>, sc: &mut Scratch) {
        let mut sig = 0;
        for &h in sc.words.hashes() {
            sig |= sig_bit(h);
        }
        for (i, &h) in sc.words.hashes().iter().enumerate() {
            if !sc.passed[i] {
                continue;
            }
            let Some(hot) = self.term_ids.get(h) else {
                continue;
            };
            match hot.text_is(sc.words.word(i).as_bytes()) {
                Some(true) if hot.kind == Kind::Simple => out.push(hot.data),
                Some(true) if hot.kind == Kind::Present => push_new(&mut sc.present, hot.id),
                Some(true) if hot.kind == Kind::Gated => {
                    push_new(&mut sc.present, hot.id);
                    if sig & hot.data != 0 {
                        push_new(&mut sc.active, hot.id);
                    }
                }
                Some(false) if !self.term_collisions.contains_key(&h) => {}
                _ => sc.candidates.push((i as u32, hot.id)),
            }
        }
    }

    /// Track, steps 3 and 4: the candidates' term slots (the word's text
    /// must be the term's; a hash may stand for several terms, see
    /// `term_collisions`), which makes them present and active; then, for
    /// each active term, the subscribers of its one-term phrase and the
    /// multi-term phrases anchored at it whose terms are all present.
    fn match_phrases(&self, out: &mut Vec<SubId>, sc: &mut Scratch) {
        if sc.candidates.is_empty() && sc.active.is_empty() {
            return;
        }
        let hashes = sc.words.hashes();
        for &(i, id) in &sc.candidates {
            let word = sc.words.word(i as usize).as_bytes();
            let id = if self.term_is(id, word) {
                id
            } else {
                match self.lookup_collision(hashes[i as usize], word) {
                    Some(id) => id,
                    None => continue,
                }
            };
            push_new(&mut sc.present, id);
            push_new(&mut sc.active, id);
        }
        for &term in &sc.active {
            let Some(t) = &self.terms[term as usize] else {
                continue;
            };
            if let Some(subs) = &t.single {
                subs.extend_into(out);
            }
            for &p in &t.anchored {
                let Some(slot) = &self.phrases[p as usize] else {
                    continue;
                };
                if slot.terms.as_slice().iter().all(|x| sc.present.contains(x)) {
                    slot.subs.extend_into(out);
                }
            }
        }
    }

    fn apply_follow(&mut self, source: u64, target: u64, following: bool) {
        let mut subs = Vec::new();
        self.user_of.extend_into(source, &mut subs);
        for sub in subs {
            let Some(Compiled::User { following: set, .. }) = self.subs.get_mut(&sub) else {
                continue;
            };
            if following {
                if set.insert(target) {
                    self.home.push(target, sub);
                }
            } else if target != source && set.remove(&target) {
                self.home.pull(target, sub);
            }
        }
    }
}

/// Appends `id` unless `list` (a message's few terms) holds it already.
#[inline]
fn push_new(list: &mut Vec<u32>, id: u32) {
    if !list.contains(&id) {
        list.push(id);
    }
}
