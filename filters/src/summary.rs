//! [`Summary`]: what a block of statuses holds, in a few bytes per status,
//! so that a search can pass over a block none of whose statuses its rule
//! could match without reading the block.
//!
//! A summary keeps the keys a rule is filed under ([`rules::anchors`]): the
//! words of each message (`#tag` and `@login` forms too), the authors, the
//! authors replied to and reposted, in a Bloom filter, and the box around
//! every geotagged status. A rule may match a status of the block only if
//! one of its anchors is in the summary, so [`Summary::may_match`] false
//! means "certainly no match here"; true means "read the block".
//!
//! The encoding is kept on disk, so its hash is fixed here (FNV-1a, then a
//! multiply-fold), never a library's: a summary written by one version is
//! read by every later one.
//!
//! ```text
//! version u8 (1) · probes u8 · words u32 · geo flag u8 ·
//! min_lat, min_lon, max_lat, max_lon f32 (when the flag is 1) · words × u64
//! ```
//!
//! [`rules::anchors`]: crate::rules::anchors

use crate::geo::BBox;
use crate::rules::{Anchor, Prepared, RuleStatus};
use std::collections::HashSet;

/// Bits per distinct key: with three probes about 3 % of absent keys pass.
const BITS_PER_KEY: usize = 8;
/// Probes per key.
const PROBES: u8 = 3;
/// The format's version byte.
const VERSION: u8 = 1;

/// A key's fixed hash.
fn key_hash(kind: u8, key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in std::iter::once(&kind).chain(key) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let full = u128::from(h) * 0x9e37_79b9_7f4a_7c15_u128;
    (full as u64) ^ ((full >> 64) as u64)
}

fn word_key(w: &str) -> u64 {
    key_hash(b'w', w.as_bytes())
}

fn user_key(kind: u8, uid: u64) -> u64 {
    key_hash(kind, &uid.to_le_bytes())
}

/// Collects the keys of a block's statuses.
#[derive(Debug, Default)]
pub struct SummaryBuilder {
    keys: HashSet<u64>,
    /// (min_lat, min_lon, max_lat, max_lon).
    geo: Option<(f64, f64, f64, f64)>,
}

impl SummaryBuilder {
    /// Adds one status's keys.
    pub fn add(&mut self, status: &RuleStatus) {
        let prepared = Prepared::new(status);
        for w in prepared.words() {
            self.keys.insert(word_key(w));
        }
        for t in &status.hashtags {
            self.keys.insert(word_key(&format!("#{t}")));
        }
        for m in &status.mentions {
            self.keys.insert(word_key(&format!("@{m}")));
        }
        self.keys.insert(user_key(b'f', status.uid));
        if let Some(u) = status.reply_to_uid {
            self.keys.insert(user_key(b't', u));
        }
        if let Some(u) = status.repost_of_uid {
            self.keys.insert(user_key(b'r', u));
        }
        if let Some((lat, lon)) = status.coords {
            self.geo = Some(match self.geo {
                None => (lat, lon, lat, lon),
                Some((a, b, c, d)) => (a.min(lat), b.min(lon), c.max(lat), d.max(lon)),
            });
        }
    }

    /// The summary's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let words = (self.keys.len() * BITS_PER_KEY).div_ceil(64).max(1);
        let mut bits = vec![0u64; words];
        for key in &self.keys {
            for (word, bit) in probes(*key, words) {
                bits[word] |= bit;
            }
        }
        let mut out = Vec::with_capacity(23 + words * 8);
        out.push(VERSION);
        out.push(PROBES);
        out.extend_from_slice(&(words as u32).to_le_bytes());
        match self.geo {
            None => out.push(0),
            Some((a, b, c, d)) => {
                out.push(1);
                // Widened outwards by the f32 rounding, never inwards.
                for (v, up) in [(a, false), (b, false), (c, true), (d, true)] {
                    let f = v as f32;
                    let f = match (up, f64::from(f) < v, f64::from(f) > v) {
                        (true, true, _) => f.next_up(),
                        (false, _, true) => f.next_down(),
                        _ => f,
                    };
                    out.extend_from_slice(&f.to_le_bytes());
                }
            }
        }
        for w in bits {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// The word and bit of each probe of `key` in a filter of `words` words.
fn probes(key: u64, words: usize) -> impl Iterator<Item = (usize, u64)> {
    let step = (key >> 32) | 1;
    (0..u64::from(PROBES)).map(move |i| {
        let h = key.wrapping_add(i.wrapping_mul(step));
        let h = h ^ (h >> 29);
        let word = ((u128::from(h) * words as u128) >> 64) as usize;
        (word, 1u64 << (h.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 58))
    })
}

/// A block's summary, read back.
#[derive(Debug, Clone)]
pub struct Summary<'a> {
    bits: &'a [u8],
    words: usize,
    geo: Option<(f64, f64, f64, f64)>,
}

impl<'a> Summary<'a> {
    /// Reads `bytes`; `None` when they are not a summary this version
    /// reads (then the block must be read).
    pub fn decode(bytes: &'a [u8]) -> Option<Summary<'a>> {
        let (&version, rest) = bytes.split_first()?;
        let (&probes, rest) = rest.split_first()?;
        if version != VERSION || probes != PROBES {
            return None;
        }
        let (words, rest) = rest.split_first_chunk::<4>()?;
        let words = u32::from_le_bytes(*words) as usize;
        let (&flag, mut rest) = rest.split_first()?;
        let geo = if flag == 1 {
            let mut v = [0f64; 4];
            for x in &mut v {
                let (f, r) = rest.split_first_chunk::<4>()?;
                *x = f64::from(f32::from_le_bytes(*f));
                rest = r;
            }
            Some((v[0], v[1], v[2], v[3]))
        } else {
            None
        };
        if words == 0 || rest.len() != words * 8 {
            return None;
        }
        Some(Summary {
            bits: rest,
            words,
            geo,
        })
    }

    fn has(&self, key: u64) -> bool {
        probes(key, self.words).all(|(word, bit)| {
            let at = word * 8;
            let w = u64::from_le_bytes(self.bits[at..at + 8].try_into().unwrap_or([0; 8]));
            w & bit != 0
        })
    }

    fn geo_meets(&self, b: &BBox) -> bool {
        let Some((min_lat, min_lon, max_lat, max_lon)) = self.geo else {
            return false;
        };
        if b.ne_lat < min_lat || b.sw_lat > max_lat {
            return false;
        }
        let meets = |w: f64, e: f64| e >= min_lon && w <= max_lon;
        if b.sw_lon <= b.ne_lon {
            meets(b.sw_lon, b.ne_lon)
        } else {
            // Across the antimeridian: two boxes.
            meets(b.sw_lon, 180.0) || meets(-180.0, b.ne_lon)
        }
    }

    /// Whether a status of the block may hold one of `anchors` (a rule's
    /// [`crate::rules::anchors`]); false means none does.
    pub fn may_match(&self, anchors: &[Anchor]) -> bool {
        anchors.iter().any(|a| match a {
            Anchor::Word(w) => self.has(word_key(w)),
            Anchor::From(u) => self.has(user_key(b'f', *u)),
            Anchor::To(u) => self.has(user_key(b't', *u)),
            Anchor::RepostOf(u) => self.has(user_key(b'r', *u)),
            Anchor::Geo(b) => self.geo_meets(b),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{anchors, parse_rule};

    fn status(i: u64) -> RuleStatus {
        RuleStatus {
            id: i,
            uid: 1000 + i % 50,
            message: format!("Word{i} shared #Tag{} hello @someone{}", i % 7, i % 3),
            hashtags: vec![format!("tag{}", i % 7)],
            mentions: vec![format!("someone{}", i % 3)],
            reply_to_uid: i.is_multiple_of(5).then_some(7),
            is_reply: i.is_multiple_of(5),
            repost_of_uid: None,
            coords: i
                .is_multiple_of(4)
                .then_some((48.0 + (i % 10) as f64 / 10.0, 2.0)),
        }
    }

    fn anchored(rule: &str) -> Vec<Anchor> {
        anchors(&parse_rule(rule).unwrap()).unwrap()
    }

    #[test]
    fn every_rule_that_matches_a_status_of_the_block_may_match_its_summary() {
        let mut b = SummaryBuilder::default();
        let statuses: Vec<RuleStatus> = (0..500).map(status).collect();
        for s in &statuses {
            b.add(s);
        }
        let bytes = b.encode();
        let summary = Summary::decode(&bytes).unwrap();
        for rule in [
            "word17",
            "#tag3",
            "tag3",
            "@someone2",
            "from:1010",
            "to:7",
            "\"word17 shared\"",
            "hello -is:reply",
            "bounding_box:[1.5 48.2 2.5 48.4]",
            "point_radius:[2.0 48.8 5km]",
        ] {
            let expr = parse_rule(rule).unwrap();
            assert!(
                statuses.iter().any(|s| expr.matches(s)),
                "{rule} matches a status"
            );
            assert!(summary.may_match(&anchored(rule)), "{rule}");
        }
    }

    #[test]
    fn most_absent_keys_are_refused() {
        let mut b = SummaryBuilder::default();
        for i in 0..1000 {
            b.add(&status(i));
        }
        let bytes = b.encode();
        let summary = Summary::decode(&bytes).unwrap();
        let passed = (0..10_000)
            .filter(|i| summary.may_match(&anchored(&format!("absent{i}"))))
            .count();
        assert!(passed < 600, "{passed} of 10,000 absent words passed");
        assert!(!summary.may_match(&anchored("from:99999")));
        assert!(!summary.may_match(&anchored("bounding_box:[100 10 101 11]")));
        assert!(!summary.may_match(&anchored("repost_of:1001")));
    }

    #[test]
    fn a_summary_of_another_version_or_damaged_is_not_read() {
        let mut b = SummaryBuilder::default();
        b.add(&status(1));
        let mut bytes = b.encode();
        assert!(Summary::decode(&bytes[..bytes.len() - 1]).is_none());
        bytes[0] = 9;
        assert!(Summary::decode(&bytes).is_none());
        assert!(Summary::decode(&[]).is_none());
    }
}
