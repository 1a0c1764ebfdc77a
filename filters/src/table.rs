//! Compact open-addressing maps for the lookups every event makes.
//!
//! [`U64Map`] keeps a key and its value side by side in one 16-byte slot, so
//! a lookup usually costs one cache line, where a general-purpose map reads a
//! control byte and then a bucket elsewhere. With a hundred thousand filter
//! sets the follow map holds ten million authors and every miss goes to
//! memory, so the number of lines a lookup touches is what routing costs.
//!
//! [`FilteredMap`] puts a [`Prefilter`] in front of it, so that most keys
//! nobody subscribed to cost a cache hit rather than a trip to memory.
//! [`SubsMap`] builds on that: key → subscribers, with the common single
//! subscriber stored in the slot itself. [`ListMap`] is key → a list of
//! larger entries (the geo grid's cells).

use crate::bloom::{id_hash, Prefilter};
use crate::view::SubId;

/// One slot: `key == 0` marks it empty (key 0 itself lives beside the table).
#[derive(Debug, Clone, Copy, Default)]
struct Slot<V> {
    key: u64,
    val: V,
}

/// Fewest slots once anything is stored.
const MIN_SLOTS: usize = 16;

/// Fibonacci hashing: the multiply mixes every bit of the key into the top
/// bits, which pick the slot, so sequential user ids spread evenly too.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A map from `u64` to a small `Copy` value (a `u64` unless said otherwise)
/// with linear probing and backward-shift deletion (no tombstones, so probe
/// runs never silt up under churn). Load stays at most 3/4; the table halves
/// when it falls under 1/8.
#[derive(Debug, Clone)]
pub struct U64Map<V = u64> {
    slots: Vec<Slot<V>>,
    /// `64 - log2(slots.len())`.
    shift: u32,
    len: usize,
    zero: Option<V>,
}

impl<V> Default for U64Map<V> {
    fn default() -> Self {
        U64Map {
            slots: Vec::new(),
            shift: 64,
            len: 0,
            zero: None,
        }
    }
}

impl<V: Copy + Default> U64Map<V> {
    /// An empty map (allocates nothing until the first insert).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(GOLDEN) >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot holding `key`, if any (`key != 0`).
    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            let k = self.slots[i].key;
            if k == key {
                return Some(i);
            }
            if k == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<V> {
        if key == 0 {
            return self.zero;
        }
        self.find(key).map(|i| self.slots[i].val)
    }

    /// The value of `key`, to change in place.
    pub fn get_mut(&mut self, key: u64) -> Option<&mut V> {
        if key == 0 {
            return self.zero.as_mut();
        }
        let i = self.find(key)?;
        Some(&mut self.slots[i].val)
    }

    /// Sets `key` to `val`, returning the value it replaces.
    pub fn insert(&mut self, key: u64, val: V) -> Option<V> {
        if key == 0 {
            let old = self.zero.replace(val);
            if old.is_none() {
                self.len += 1;
            }
            return old;
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.resize((self.slots.len() * 2).max(MIN_SLOTS));
        }
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            let slot = &mut self.slots[i];
            if slot.key == key {
                return Some(std::mem::replace(&mut slot.val, val));
            }
            if slot.key == 0 {
                *slot = Slot { key, val };
                self.len += 1;
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: u64) -> Option<V> {
        if key == 0 {
            let old = self.zero.take();
            if old.is_some() {
                self.len -= 1;
            }
            return old;
        }
        let found = self.find(key)?;
        let val = self.slots[found].val;
        // Backward shift: pull later members of the probe run into the hole
        // unless that would put them before their home slot.
        let mask = self.mask();
        let mut hole = found;
        let mut j = (found + 1) & mask;
        loop {
            let s = self.slots[j];
            if s.key == 0 {
                break;
            }
            let from_home = j.wrapping_sub(self.home(s.key)) & mask;
            let from_hole = j.wrapping_sub(hole) & mask;
            if from_home >= from_hole {
                self.slots[hole] = s;
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = Slot::default();
        self.len -= 1;
        if self.slots.len() > MIN_SLOTS && self.len * 8 < self.slots.len() {
            self.resize(self.slots.len() / 2);
        }
        Some(val)
    }

    fn resize(&mut self, n: usize) {
        debug_assert!(n.is_power_of_two());
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); n]);
        self.shift = 64 - n.trailing_zeros();
        let mask = n - 1;
        for s in old.into_iter().filter(|s| s.key != 0) {
            let mut i = self.home(s.key);
            while self.slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    /// Every key with its value, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, V)> + '_ {
        self.zero.map(|v| (0, v)).into_iter().chain(
            self.slots
                .iter()
                .filter(|s| s.key != 0)
                .map(|s| (s.key, s.val)),
        )
    }
}

/// A [`U64Map`] behind a [`Prefilter`] over its keys: looking up a key
/// that is not there usually costs one read in the filter, which is small
/// enough to stay in cache, instead of a trip to memory in the map.
#[derive(Debug, Clone, Default)]
pub struct FilteredMap<V = u64> {
    map: U64Map<V>,
    filter: Prefilter,
}

impl<V: Copy + Default> FilteredMap<V> {
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when the map holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<V> {
        if !self.filter.may_contain(id_hash(key)) {
            return None;
        }
        self.map.get(key)
    }

    /// Sets `key` to `val`, returning the value it replaces.
    pub fn insert(&mut self, key: u64, val: V) -> Option<V> {
        let old = self.map.insert(key, val);
        if old.is_none() && !self.filter.add(id_hash(key), self.map.len()) {
            self.rebuild_filter();
        }
        old
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: u64) -> Option<V> {
        let old = self.map.remove(key);
        if old.is_some() && self.filter.removed(self.map.len()) {
            self.rebuild_filter();
        }
        old
    }

    fn rebuild_filter(&mut self) {
        let keys = self.map.iter().map(|(k, _)| id_hash(k));
        self.filter.rebuild(self.map.len(), keys);
    }
}

/// Lists addressed by a small number, with the numbers of released lists
/// handed out again.
#[derive(Debug, Clone)]
struct Slab<E> {
    lists: Vec<Vec<E>>,
    free: Vec<usize>,
}

impl<E> Default for Slab<E> {
    fn default() -> Self {
        Slab {
            lists: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<E> Slab<E> {
    fn insert(&mut self, list: Vec<E>) -> usize {
        match self.free.pop() {
            Some(at) => {
                self.lists[at] = list;
                at
            }
            None => {
                self.lists.push(list);
                self.lists.len() - 1
            }
        }
    }

    fn release(&mut self, at: usize) {
        self.lists[at] = Vec::new();
        self.free.push(at);
    }
}

/// Set on a [`SubsMap`] value that indexes a list; clear, the value is the
/// only subscriber itself.
const LIST: u64 = 1 << 63;

/// Key → subscribers. One subscriber (the usual case for a followed author)
/// sits in the map's slot; more move to a list.
#[derive(Debug, Clone, Default)]
pub struct SubsMap {
    map: FilteredMap,
    lists: Slab<SubId>,
}

impl SubsMap {
    /// Number of keys with at least one subscriber.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no key has a subscriber.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn new_list(&mut self, list: Vec<SubId>) -> u64 {
        LIST | self.lists.insert(list) as u64
    }

    /// Adds `sub` under `key` (a subscriber may be added more than once).
    pub fn push(&mut self, key: u64, sub: SubId) {
        match self.map.get(key) {
            None => {
                let v = if sub & LIST == 0 {
                    sub
                } else {
                    self.new_list(vec![sub])
                };
                self.map.insert(key, v);
            }
            Some(v) if v & LIST != 0 => self.lists.lists[(v & !LIST) as usize].push(sub),
            Some(first) => {
                let v = self.new_list(vec![first, sub]);
                self.map.insert(key, v);
            }
        }
    }

    /// Removes every `sub` under `key`.
    pub fn pull(&mut self, key: u64, sub: SubId) {
        let Some(v) = self.map.get(key) else {
            return;
        };
        if v & LIST == 0 {
            if v == sub {
                self.map.remove(key);
            }
            return;
        }
        let at = (v & !LIST) as usize;
        let list = &mut self.lists.lists[at];
        list.retain(|s| *s != sub);
        match list.as_slice() {
            [] => {
                self.map.remove(key);
                self.lists.release(at);
            }
            [only] if only & LIST == 0 => {
                let only = *only;
                self.map.insert(key, only);
                self.lists.release(at);
            }
            _ => {}
        }
    }

    /// Appends the subscribers of `key` to `out`.
    #[inline]
    pub fn extend_into(&self, key: u64, out: &mut Vec<SubId>) {
        match self.map.get(key) {
            None => {}
            Some(v) if v & LIST != 0 => {
                out.extend_from_slice(&self.lists.lists[(v & !LIST) as usize])
            }
            Some(sub) => out.push(sub),
        }
    }
}

/// Key → a list of entries, behind a prefilter: for keys that usually hold
/// several entries, or entries larger than a map slot (the geo grid's cells).
#[derive(Debug, Clone)]
pub struct ListMap<E> {
    map: FilteredMap<usize>,
    lists: Slab<E>,
}

impl<E> Default for ListMap<E> {
    fn default() -> Self {
        ListMap {
            map: FilteredMap::default(),
            lists: Slab::default(),
        }
    }
}

impl<E> ListMap<E> {
    /// Number of keys with at least one entry.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no key has an entry.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The entries under `key` (empty when none).
    #[inline]
    pub fn get(&self, key: u64) -> &[E] {
        match self.map.get(key) {
            Some(at) => &self.lists.lists[at],
            None => &[],
        }
    }

    /// Adds `e` under `key`.
    pub fn push(&mut self, key: u64, e: E) {
        match self.map.get(key) {
            Some(at) => self.lists.lists[at].push(e),
            None => {
                let at = self.lists.insert(vec![e]);
                self.map.insert(key, at);
            }
        }
    }

    /// Keeps only the entries under `key` for which `keep` is true.
    pub fn retain(&mut self, key: u64, keep: impl FnMut(&E) -> bool) {
        let Some(at) = self.map.get(key) else {
            return;
        };
        let list = &mut self.lists.lists[at];
        list.retain(keep);
        if list.is_empty() {
            self.map.remove(key);
            self.lists.release(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    /// Random inserts, overwrites and removes agree with `HashMap` at every
    /// step, across growth and shrinking, with key 0 and clustered keys.
    #[test]
    fn u64map_agrees_with_hashmap() {
        let mut rng = Lcg(7);
        let mut map = U64Map::new();
        let mut model: HashMap<u64, u64> = HashMap::new();
        for round in 0..200_000u64 {
            // Few distinct keys force collisions and long probe runs; the
            // high multiples land in the same home slots.
            let key = match rng.below(3) {
                0 => rng.below(64),
                1 => rng.below(4096) << 40,
                _ => rng.below(1 << 20),
            };
            // Grow for the first half, then mostly remove so the table shrinks.
            let remove = rng.below(10) < if round < 100_000 { 3 } else { 8 };
            if remove {
                assert_eq!(map.remove(key), model.remove(&key), "remove {key}");
            } else {
                assert_eq!(
                    map.insert(key, round),
                    model.insert(key, round),
                    "insert {key}"
                );
            }
            assert_eq!(map.len(), model.len());
            let probe = rng.below(1 << 20);
            assert_eq!(map.get(probe), model.get(&probe).copied(), "get {probe}");
        }
        for (k, v) in &model {
            assert_eq!(map.get(*k), Some(*v));
        }
        let mut all: Vec<_> = map.iter().collect();
        all.sort_unstable();
        let mut want: Vec<_> = model.into_iter().collect();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    #[test]
    fn subsmap_keeps_single_subscribers_inline_and_lists_the_rest() {
        let mut m = SubsMap::default();
        let mut out = Vec::new();
        m.push(5, 1);
        m.push(5, 2);
        m.push(5, LIST | 9); // a sub id with the tag bit still round-trips
        m.extend_into(5, &mut out);
        assert_eq!(out, [1, 2, LIST | 9]);
        m.pull(5, LIST | 9);
        m.pull(5, 1);
        out.clear();
        m.extend_into(5, &mut out);
        assert_eq!(out, [2]);
        assert!(
            m.lists.free.len() == 1,
            "a list down to one subscriber is released"
        );
        m.pull(5, 2);
        assert!(m.is_empty());
        m.push(0, LIST | 3);
        out.clear();
        m.extend_into(0, &mut out);
        assert_eq!(out, [LIST | 3]);
        m.pull(0, LIST | 3);
        assert!(m.is_empty());
    }
}
