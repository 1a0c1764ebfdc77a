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
use crate::track::{Phrase, Words};
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

#[derive(Debug)]
struct PhraseSlot {
    phrase: Phrase,
    subs: Vec<SubId>,
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
    follow: FxHashMap<u64, Vec<SubId>>,
    phrases: Vec<Option<PhraseSlot>>,
    phrase_ids: FxHashMap<Phrase, usize>,
    free_phrases: Vec<usize>,
    anchors: FxHashMap<String, Vec<usize>>,
    geo: GeoIndex<SubId>,
    /// Author id -> user-stream subscriptions whose home timeline gets their statuses.
    home: FxHashMap<u64, Vec<SubId>>,
    /// User id -> that user's own user-stream subscriptions.
    user_of: FxHashMap<u64, Vec<SubId>>,
    words: Words,
}

fn push(map: &mut FxHashMap<u64, Vec<SubId>>, key: u64, sub: SubId) {
    map.entry(key).or_default().push(sub);
}

fn pull(map: &mut FxHashMap<u64, Vec<SubId>>, key: u64, sub: SubId) {
    if let Some(list) = map.get_mut(&key) {
        list.retain(|s| *s != sub);
        if list.is_empty() {
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
        if let Some(&id) = self.phrase_ids.get(phrase) {
            if let Some(slot) = &mut self.phrases[id] {
                slot.subs.push(sub);
            }
            return;
        }
        let slot = PhraseSlot {
            phrase: phrase.clone(),
            subs: vec![sub],
        };
        let id = match self.free_phrases.pop() {
            Some(id) => {
                self.phrases[id] = Some(slot);
                id
            }
            None => {
                self.phrases.push(Some(slot));
                self.phrases.len() - 1
            }
        };
        self.phrase_ids.insert(phrase.clone(), id);
        self.anchors
            .entry(phrase.anchor().to_string())
            .or_default()
            .push(id);
    }

    fn remove_phrase(&mut self, phrase: &Phrase, sub: SubId) {
        let Some(&id) = self.phrase_ids.get(phrase) else {
            return;
        };
        let Some(slot) = &mut self.phrases[id] else {
            return;
        };
        slot.subs.retain(|s| *s != sub);
        if !slot.subs.is_empty() {
            return;
        }
        self.phrases[id] = None;
        self.free_phrases.push(id);
        self.phrase_ids.remove(phrase);
        let anchor = phrase.anchor();
        if let Some(list) = self.anchors.get_mut(anchor) {
            list.retain(|p| *p != id);
            if list.is_empty() {
                self.anchors.remove(anchor);
            }
        }
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
                if let Some(list) = self.home.get(&s.uid) {
                    out.extend_from_slice(list);
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
                    if let Some(list) = self.follow.get(&uid) {
                        out.extend_from_slice(list);
                    }
                }
                if let Some(list) = self.home.get(&uid) {
                    out.extend_from_slice(list);
                }
            }
            Event::Follow {
                source,
                target,
                following,
            } => {
                out.extend_from_slice(&self.firehose);
                for uid in [source, target] {
                    if let Some(list) = self.user_of.get(&uid) {
                        out.extend_from_slice(list);
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
            if let Some(list) = self.follow.get(&uid) {
                out.extend_from_slice(list);
            }
        }
        if !self.anchors.is_empty() {
            self.words.fill(s.message);
            for word in self.words.iter() {
                let Some(ids) = self.anchors.get(word) else {
                    continue;
                };
                for &id in ids {
                    if let Some(slot) = &self.phrases[id] {
                        if slot.phrase.matches(&self.words) {
                            out.extend_from_slice(&slot.subs);
                        }
                    }
                }
            }
        }
        if let Some((lat, lon)) = s.coords {
            self.geo.find(lat, lon, |sub| out.push(sub));
        }
    }

    fn apply_follow(&mut self, source: u64, target: u64, following: bool) {
        let Some(list) = self.user_of.get(&source) else {
            return;
        };
        for sub in list.clone() {
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
