//! The hub's subscriptions with filter rules (search streams, filter
//! streams with ad-hoc `rules`): every rule filed in one
//! [`RuleIndex`] under its anchors, so an event reaches only the rules
//! filed under one of its keys; each subscription that matched gets its
//! own copy of the event, with `matching_rules`. Search streams' rules are
//! reloaded when their owner changes them (`rules_changed`).

use crate::metrics::global as metrics;
use crate::stream::frame::Frame;
use crate::stream::rule_set::RuleSet;
use firehose_filters::rules::RuleIndex;
use firehose_filters::{Event, SubId};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Rule changes remembered for search streams whose rules were read
/// before a change the hub heard before their registration.
const CHANGE_LOG: usize = 16_384;

struct RuleSub {
    uid: u64,
    set: Arc<RuleSet>,
}

/// Every subscription with rules, and their rules' index.
#[derive(Default)]
pub(super) struct RuleSubs {
    index: RuleIndex<(SubId, u32)>,
    subs: HashMap<SubId, RuleSub>,
    /// Search subscriptions by user.
    searchers: HashMap<u64, Vec<SubId>>,
    /// The latest `(user, version)` rule changes heard.
    log: VecDeque<(u64, u64)>,
    /// Working space: rules matched by the event being routed.
    hits: Vec<(SubId, u32)>,
    /// How many rules are filed, for [`Hub::rules_filed`](super::Hub::rules_filed).
    filed: Arc<AtomicUsize>,
}

impl RuleSubs {
    /// The count of rules filed, kept current.
    pub(super) fn filed(&self) -> Arc<AtomicUsize> {
        self.filed.clone()
    }

    fn file(&mut self, sub: SubId, set: &RuleSet) {
        for (i, expr) in set.exprs().iter().enumerate() {
            self.index.insert((sub, i as u32), expr.clone());
        }
        self.count();
    }

    fn unfile(&mut self, sub: SubId, set: &RuleSet) {
        for i in 0..set.exprs().len() {
            self.index.remove((sub, i as u32));
        }
        self.count();
    }

    fn count(&self) {
        let n = self.index.len();
        self.filed.store(n, Ordering::Relaxed);
        metrics().stream_rules.set(n as i64);
    }

    /// Adds `uid`'s subscription `sub` with `set`; true when a change newer
    /// than the set was heard already (the caller reloads the rules).
    pub(super) fn add(&mut self, sub: SubId, uid: u64, set: Arc<RuleSet>) -> bool {
        self.file(sub, &set);
        let stale = match set.version {
            Some(v) => {
                self.searchers.entry(uid).or_default().push(sub);
                self.log.iter().any(|(u, w)| *u == uid && *w > v)
            }
            None => false,
        };
        self.subs.insert(sub, RuleSub { uid, set });
        stale
    }

    /// Takes `sub` out (nothing if it had no rules).
    pub(super) fn remove(&mut self, sub: SubId) {
        let Some(old) = self.subs.remove(&sub) else {
            return;
        };
        self.unfile(sub, &old.set);
        if let Some(list) = self.searchers.get_mut(&old.uid) {
            list.retain(|s| *s != sub);
            if list.is_empty() {
                self.searchers.remove(&old.uid);
            }
        }
    }

    /// `uid`'s rules changed to `version`: true when one of their search
    /// subscriptions here holds older rules (the caller reloads them).
    pub(super) fn changed(&mut self, uid: u64, version: u64) -> bool {
        if self.log.len() >= CHANGE_LOG {
            self.log.pop_front();
        }
        self.log.push_back((uid, version));
        self.searchers.get(&uid).is_some_and(|subs| {
            subs.iter().any(|s| {
                self.subs
                    .get(s)
                    .is_some_and(|r| r.set.version.is_some_and(|v| v < version))
            })
        })
    }

    /// `uid`'s rules reloaded: they replace older ones on each of their
    /// search subscriptions.
    pub(super) fn replace(&mut self, uid: u64, set: Arc<RuleSet>) {
        let subs = self.searchers.get(&uid).cloned().unwrap_or_default();
        for sub in subs {
            let Some(old) = self.subs.get(&sub) else {
                continue;
            };
            if old.set.version >= set.version {
                continue;
            }
            let old = old.set.clone();
            self.unfile(sub, &old);
            self.file(sub, &set);
            if let Some(r) = self.subs.get_mut(&sub) {
                r.set = set.clone();
            }
        }
    }

    /// Takes the subscriptions with rules out of `out` (what the main
    /// index routed `frame` to) and answers what they get: a public
    /// status's copy with `matching_rules` for each that one of its rules
    /// or its own filter matched (subscriptions whose labels agree share
    /// one copy), every public delete as it is (appended to `out`).
    pub(super) fn route(
        &mut self,
        frame: &Frame,
        out: &mut Vec<SubId>,
    ) -> Vec<(Arc<Frame>, Vec<SubId>)> {
        if self.subs.is_empty() {
            return Vec::new();
        }
        let mut filtered = Vec::new();
        out.retain(|s| {
            if self.subs.contains_key(s) {
                filtered.push(*s);
                false
            } else {
                true
            }
        });
        match frame.routing() {
            Event::Delete { private: false, .. } => {
                out.extend(self.subs.keys().copied());
                Vec::new()
            }
            Event::Status(s) if !s.private => {
                let mut hits = std::mem::take(&mut self.hits);
                hits.clear();
                if let Some(status) = frame.rule_status() {
                    self.index.route(&status, &mut hits);
                }
                hits.extend(filtered.iter().map(|s| (*s, u32::MAX)));
                hits.sort_unstable();
                let mut copies: HashMap<String, Vec<SubId>> = HashMap::new();
                let mut i = 0;
                while i < hits.len() {
                    let sub = hits[i].0;
                    let mut positions = Vec::new();
                    while i < hits.len() && hits[i].0 == sub {
                        if hits[i].1 != u32::MAX {
                            positions.push(hits[i].1);
                        }
                        i += 1;
                    }
                    if let Some(r) = self.subs.get(&sub) {
                        copies
                            .entry(r.set.matching_json(&positions))
                            .or_default()
                            .push(sub);
                    }
                }
                self.hits = hits;
                copies
                    .into_iter()
                    .map(|(labels, subs)| (frame.with_matching_rules(&labels), subs))
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}
