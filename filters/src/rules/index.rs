//! Rules compiled for routing: each rule is filed under its anchors (keys
//! every status it matches must hold: a word, a `#tag` or `@login` form, an
//! author, a replied-to or reposted author, a box), so a status reaches only
//! the rules filed under one of its own keys, and only those are evaluated.
//! Negation and `OR` never make it a scan: a negated part files nothing,
//! an `OR` files each alternative's anchors, a conjunction one part's.

use super::eval::Prepared;
use super::eval::RuleStatus;
use super::expr::{Expr, Term, UserRef};
use crate::geo::{BBox, GeoIndex};
use rustc_hash::FxHashMap;
use std::hash::Hash;

/// A key a rule is filed under.
#[derive(Debug, Clone, PartialEq)]
pub enum Anchor {
    /// A word of the message, lowercased; `#tag` and `@login` with the sigil.
    Word(String),
    /// The author.
    From(u64),
    /// The author of the status replied to.
    To(u64),
    /// The author of the status reposted.
    RepostOf(u64),
    /// The status's point lies in the box.
    Geo(BBox),
}

/// Kilometres in a degree of latitude on the rule's sphere.
const KM_PER_DEGREE: f64 = 6371.0 * std::f64::consts::PI / 180.0;

/// The smallest box (in the `locations` sense) holding a circle.
fn circle_box(lon: f64, lat: f64, km: f64) -> BBox {
    let dlat = km / KM_PER_DEGREE;
    let (s, n) = ((lat - dlat).max(-90.0), (lat + dlat).min(90.0));
    let widest = lat.abs().max(s.abs()).max(n.abs());
    let cos = widest.to_radians().cos();
    let dlon = if cos <= 1e-9 || n >= 90.0 || s <= -90.0 {
        180.0
    } else {
        (km / (KM_PER_DEGREE * cos)).min(180.0)
    };
    let (mut w, mut e) = (lon - dlon, lon + dlon);
    if dlon >= 180.0 {
        w = -180.0;
        e = 180.0;
    } else {
        if w < -180.0 {
            w += 360.0;
        }
        if e > 180.0 {
            e -= 360.0;
        }
    }
    BBox::new(w, s, e, n).unwrap_or(BBox {
        sw_lon: -180.0,
        sw_lat: -90.0,
        ne_lon: 180.0,
        ne_lat: 90.0,
    })
}

/// The anchors of a rule: a set of keys at least one of which every status
/// the rule matches holds; `None` for an expression with none (negated,
/// or an `OR` with an unanchored alternative).
pub fn anchors(expr: &Expr) -> Option<Vec<Anchor>> {
    match expr {
        Expr::Not(_) => None,
        Expr::Term(term, _) => match term {
            Term::Word(w) => Some(vec![Anchor::Word(w.clone())]),
            // The longest word is usually the rarest.
            Term::Phrase(words) => words
                .iter()
                .max_by_key(|w| w.chars().count())
                .map(|w| vec![Anchor::Word(w.clone())]),
            Term::Hashtag(t) => Some(vec![Anchor::Word(format!("#{t}"))]),
            Term::Mention(l) => Some(vec![Anchor::Word(format!("@{l}"))]),
            // An unresolved login names no one: the term matches nothing,
            // so it needs no key.
            Term::From(u) => Some(user_anchor(u, Anchor::From)),
            Term::To(u) => Some(user_anchor(u, Anchor::To)),
            Term::RepostOf(u) => Some(user_anchor(u, Anchor::RepostOf)),
            Term::BoundingBox(b) => Some(vec![Anchor::Geo(*b)]),
            Term::PointRadius { lon, lat, km } => {
                Some(vec![Anchor::Geo(circle_box(*lon, *lat, *km))])
            }
            _ => None,
        },
        Expr::And(parts) => parts.iter().filter_map(anchors).min_by_key(Vec::len),
        Expr::Or(alts) => {
            let mut all = Vec::new();
            for a in alts {
                all.extend(anchors(a)?);
            }
            Some(all)
        }
    }
}

fn user_anchor(u: &UserRef, make: fn(u64) -> Anchor) -> Vec<Anchor> {
    match u {
        UserRef::Id(id) => vec![make(*id)],
        UserRef::Login(_) => Vec::new(),
    }
}

/// Rules of many subscriptions, each identified by a `K`, routed by their
/// anchors.
#[derive(Debug)]
pub struct RuleIndex<K: Copy + Ord + Hash> {
    rules: FxHashMap<K, (Expr, Vec<Anchor>)>,
    words: FxHashMap<String, Vec<K>>,
    from: FxHashMap<u64, Vec<K>>,
    to: FxHashMap<u64, Vec<K>>,
    repost_of: FxHashMap<u64, Vec<K>>,
    geo: GeoIndex<K>,
}

impl<K: Copy + Ord + Hash> Default for RuleIndex<K> {
    fn default() -> Self {
        RuleIndex {
            rules: FxHashMap::default(),
            words: FxHashMap::default(),
            from: FxHashMap::default(),
            to: FxHashMap::default(),
            repost_of: FxHashMap::default(),
            geo: GeoIndex::default(),
        }
    }
}

fn push<T: Hash + Eq, K: Copy>(map: &mut FxHashMap<T, Vec<K>>, key: T, k: K) {
    map.entry(key).or_default().push(k);
}

fn pull<T: Hash + Eq, K: Copy + PartialEq>(map: &mut FxHashMap<T, Vec<K>>, key: &T, k: K) {
    if let Some(list) = map.get_mut(key) {
        list.retain(|x| *x != k);
        if list.is_empty() {
            map.remove(key);
        }
    }
}

impl<K: Copy + Ord + Hash> RuleIndex<K> {
    /// Files `expr` as `k` (replacing a rule filed as `k` before); false,
    /// and nothing filed, when it has no anchor.
    pub fn insert(&mut self, k: K, expr: Expr) -> bool {
        let Some(keys) = anchors(&expr) else {
            return false;
        };
        self.remove(k);
        for a in &keys {
            match a {
                Anchor::Word(w) => push(&mut self.words, w.clone(), k),
                Anchor::From(u) => push(&mut self.from, *u, k),
                Anchor::To(u) => push(&mut self.to, *u, k),
                Anchor::RepostOf(u) => push(&mut self.repost_of, *u, k),
                Anchor::Geo(b) => self.geo.insert(*b, k),
            }
        }
        self.rules.insert(k, (expr, keys));
        true
    }

    /// Takes the rule filed as `k` out.
    pub fn remove(&mut self, k: K) {
        let Some((_, keys)) = self.rules.remove(&k) else {
            return;
        };
        for a in &keys {
            match a {
                Anchor::Word(w) => pull(&mut self.words, w, k),
                Anchor::From(u) => pull(&mut self.from, u, k),
                Anchor::To(u) => pull(&mut self.to, u, k),
                Anchor::RepostOf(u) => pull(&mut self.repost_of, u, k),
                Anchor::Geo(b) => self.geo.remove(*b, k),
            }
        }
    }

    /// How many rules are filed.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Appends to `out` every rule `status` matches, each once: the rules
    /// filed under one of its keys, each checked with [`Expr::matches`].
    pub fn route(&self, status: &RuleStatus, out: &mut Vec<K>) {
        if self.rules.is_empty() {
            return;
        }
        let prepared = Prepared::new(status);
        // The rules filed under the status's keys, each once, then checked.
        let mut candidates: Vec<K> = Vec::new();
        let mut consider = |k: K| candidates.push(k);
        for w in prepared.words() {
            for k in self.words.get(w.as_ref()).into_iter().flatten() {
                consider(*k);
            }
        }
        for t in &status.hashtags {
            for k in self.words.get(&format!("#{t}")).into_iter().flatten() {
                consider(*k);
            }
        }
        for m in &status.mentions {
            for k in self.words.get(&format!("@{m}")).into_iter().flatten() {
                consider(*k);
            }
        }
        for (map, id) in [
            (&self.from, Some(status.uid)),
            (&self.to, status.reply_to_uid),
            (&self.repost_of, status.repost_of_uid),
        ] {
            if let Some(list) = id.and_then(|id| map.get(&id)) {
                for k in list {
                    consider(*k);
                }
            }
        }
        if let Some((lat, lon)) = status.coords {
            self.geo.find(lat, lon, &mut consider);
        }
        candidates.sort_unstable();
        candidates.dedup();
        for k in candidates {
            if let Some((expr, _)) = self.rules.get(&k) {
                if expr.matches_prepared(&prepared) {
                    out.push(k);
                }
            }
        }
    }
}
