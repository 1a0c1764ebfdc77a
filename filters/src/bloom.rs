//! [`Prefilter`]: a small bit array that answers "certainly not here" for
//! most keys no subscription wants, before a lookup in a large map.
//!
//! With 100,000 filter sets the follow map holds ten million authors and the
//! term map over a million terms; a lookup there is a trip to memory. The
//! prefilter keeps 10 to 15 bits per key (a fraction of the map's size, so
//! it stays in cache) and each key sets two bits of one 64-bit word, so a
//! test is one read and lets one absent key in 25 to 50 through. Past a
//! megabyte a smaller near tier, sized for a core's own cache, goes in front.

/// One step of hashing: a 64×64→128-bit multiply folded back to 64 bits,
/// which mixes every input bit into every output bit.
#[inline]
pub(crate) fn fold_mul(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

/// A well-mixed hash of a user id (ids are small, sequential numbers).
#[inline]
pub(crate) fn id_hash(id: u64) -> u64 {
    fold_mul(id ^ 0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344)
}

/// Bits kept per key: small enough that the filter of ten million keys
/// (12 MiB) stays in the last-level cache.
const BITS_PER_KEY: usize = 10;
/// Smallest filter, in 64-bit words (8 KiB).
const MIN_WORDS: usize = 1 << 10;

/// Where `hash` lives in a filter of `words` 64-bit words: the word from the
/// hash's high bits (multiply-shift onto `0..words`, so any size works), and
/// two bits of it from the low bits.
#[inline]
fn slot(hash: u64, words: usize) -> (usize, u64) {
    let word = ((u128::from(hash) * words as u128) >> 64) as usize;
    let bits = (1u64 << (hash & 63)) | (1u64 << ((hash >> 6) & 63));
    (word, bits)
}

/// Words of the near tier (512 KiB): half of this machine's per-core L2,
/// where reads stay fast whatever the other tenants do with the shared L3.
const NEAR_WORDS: usize = 1 << 16;
/// The main filter's size (1 MiB) from which a near tier is kept.
const NEAR_FROM_WORDS: usize = 1 << 17;
/// Fewest near-tier bits per key for the tier to be worth a read: at three,
/// about one absent key in four passes it.
const NEAR_MIN_BITS_PER_KEY: usize = 3;

/// Where `hash` lives in the near tier: from bits 12..40, which the main
/// filter does not use while it has fewer than 2^24 words (its word comes
/// from the top bits, its two bits from bits 0..12), so the two tiers'
/// false positives are independent.
#[inline]
fn near_slot(hash: u64) -> (usize, u64) {
    let word = (hash >> 12) as usize & (NEAR_WORDS - 1);
    let bits = (1u64 << ((hash >> 28) & 63)) | (1u64 << ((hash >> 34) & 63));
    (word, bits)
}

/// A blocked Bloom filter over well-mixed 64-bit hashes. It never answers
/// "absent" for a key that was added; removed keys linger until the owner
/// rebuilds it (see [`Prefilter::removed`]).
///
/// A filter larger than a core's own cache gets a second, smaller tier in
/// front (`near`), over other bits of the same hashes, as long as it has a
/// few bits per key: most absent keys are turned away there, and the large
/// tier, in the shared L3 or in memory, is read for about one in four. At
/// 100,000 filter sets this keeps a message's fifteen words from costing
/// fifteen reads beyond the core's cache when other tenants crowd the L3.
#[derive(Debug, Clone, Default)]
pub struct Prefilter {
    words: Vec<u64>,
    /// The near tier, [`NEAR_WORDS`] long, or empty.
    near: Vec<u64>,
    /// Keys removed since the last rebuild.
    stale: usize,
}

impl Prefilter {
    /// Whether `hash` may have been added (false only when it was not).
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        if self.words.is_empty() {
            return false;
        }
        if !self.near.is_empty() {
            let (word, bits) = near_slot(hash);
            if self.near[word] & bits != bits {
                return false;
            }
        }
        let (word, bits) = slot(hash, self.words.len());
        self.words[word] & bits == bits
    }

    /// Words for `keys` keys; the filter grows by half again each time.
    fn wanted(keys: usize) -> usize {
        (keys * BITS_PER_KEY / 64).max(MIN_WORDS)
    }

    /// Records `hash`, the owner now holding `keys` keys. False when the
    /// filter is too small for that many: the owner must then
    /// [`rebuild`](Prefilter::rebuild) it from all its keys.
    pub fn add(&mut self, hash: u64, keys: usize) -> bool {
        if self.words.len() < Self::wanted(keys) {
            return false;
        }
        self.set(hash);
        true
    }

    fn set(&mut self, hash: u64) {
        let (word, bits) = slot(hash, self.words.len());
        self.words[word] |= bits;
        if !self.near.is_empty() {
            let (word, bits) = near_slot(hash);
            self.near[word] |= bits;
        }
    }

    /// Notes that a key was removed, the owner now holding `keys` keys. True
    /// when enough bits went stale (or the filter is four times too large)
    /// that the owner should [`rebuild`](Prefilter::rebuild) it.
    pub fn removed(&mut self, keys: usize) -> bool {
        self.stale += 1;
        (self.stale > 1024 && self.stale > keys) || self.words.len() > 4 * Self::wanted(keys)
    }

    /// Sizes the filter for `keys` keys (with room for half as many again,
    /// so that a growing owner rebuilds a logarithmic number of times) and
    /// sets the bits of `hashes`.
    pub fn rebuild(&mut self, keys: usize, hashes: impl Iterator<Item = u64>) {
        let n = Self::wanted(keys + keys / 2);
        if self.words.len() == n {
            self.words.iter_mut().for_each(|w| *w = 0);
        } else {
            self.words = vec![0; n];
        }
        let near = n >= NEAR_FROM_WORDS && keys * NEAR_MIN_BITS_PER_KEY <= NEAR_WORDS * 64;
        self.near.clear();
        if near {
            self.near.resize(NEAR_WORDS, 0);
        }
        hashes.for_each(|hash| self.set(hash));
        self.stale = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// An owner that follows the protocol: add, rebuild when told to.
    #[derive(Default)]
    struct Owner {
        keys: HashSet<u64>,
        filter: Prefilter,
    }

    impl Owner {
        fn rebuild(&mut self) {
            let hashes = self.keys.iter().map(|k| id_hash(*k));
            self.filter.rebuild(self.keys.len(), hashes);
        }
        fn add(&mut self, k: u64) {
            if self.keys.insert(k) && !self.filter.add(id_hash(k), self.keys.len()) {
                self.rebuild();
            }
        }
        fn remove(&mut self, k: u64) {
            if self.keys.remove(&k) && self.filter.removed(self.keys.len()) {
                self.rebuild();
            }
        }
    }

    #[test]
    fn never_denies_a_present_key_and_lets_few_absent_ones_through() {
        let mut o = Owner::default();
        assert!(
            !o.filter.may_contain(id_hash(1)),
            "an empty filter holds nothing"
        );
        for k in 0..200_000 {
            o.add(k * 7);
        }
        for k in 0..150_000 {
            o.remove(k * 7);
        }
        for k in 150_000..200_000 {
            assert!(o.filter.may_contain(id_hash(k * 7)), "key {k} denied");
        }
        let false_pos = (0..100_000u64)
            .map(|k| 10_000_000 + k * 7 + 1)
            .filter(|k| o.filter.may_contain(id_hash(*k)))
            .count();
        assert!(
            false_pos < 6_000,
            "{false_pos} of 100,000 absent keys passed"
        );
        // Shrunk after most keys left: sized for what remains, not the peak.
        assert!(o.filter.words.len() <= Prefilter::wanted(150_000));
    }

    /// Past a megabyte the filter gets its near tier, which still never
    /// denies a present key, and the two tiers' false positives are
    /// independent: together they let through about the product of each
    /// one's share.
    #[test]
    fn a_large_filter_has_a_near_tier_that_denies_no_present_key() {
        let mut o = Owner::default();
        for k in 0..1_000_000 {
            o.add(k);
        }
        assert_eq!(o.filter.near.len(), NEAR_WORDS);
        assert!((0..1_000_000).all(|k| o.filter.may_contain(id_hash(k))));
        let absent = (2_000_000..2_200_000u64).map(id_hash);
        let (mut near_passed, mut passed) = (0, 0);
        for h in absent {
            let (word, bits) = near_slot(h);
            near_passed += usize::from(o.filter.near[word] & bits == bits);
            passed += usize::from(o.filter.may_contain(h));
        }
        assert!(
            near_passed < 70_000,
            "{near_passed} of 200,000 passed the near tier"
        );
        assert!(passed < 1_000, "{passed} of 200,000 passed both tiers");
        // Too many keys for the near tier to tell apart: none is kept.
        for k in 1_000_000..3_000_000 {
            o.add(k);
        }
        assert!(o.filter.near.is_empty());
    }
}
