//! The term dictionary: interning and releasing the terms and phrases of
//! track rules, and the prefilter over them.

use super::slots::*;
use super::*;

impl Index {
    pub(super) fn add_phrase(&mut self, phrase: &Phrase, sub: SubId) {
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

    pub(super) fn remove_phrase(&mut self, phrase: &Phrase, sub: SubId) {
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

    pub(super) fn term_is(&self, id: u32, text: &[u8]) -> bool {
        self.terms[id as usize]
            .as_ref()
            .is_some_and(|t| t.text.as_bytes() == text)
    }

    /// The id of the term with this text and hash, if tracked.
    pub(super) fn lookup(&self, hash: u64, text: &[u8]) -> Option<u32> {
        let id = self.term_ids.get(hash)?.id;
        if self.term_is(id, text) {
            return Some(id);
        }
        self.lookup_collision(hash, text)
    }

    /// The id of a term whose hash is shared with the one `term_ids` holds.
    pub(super) fn lookup_collision(&self, hash: u64, text: &[u8]) -> Option<u32> {
        self.term_collisions
            .get(&hash)?
            .iter()
            .copied()
            .find(|&id| self.term_is(id, text))
    }

    pub(super) fn find_term(&self, text: &str) -> Option<u32> {
        self.lookup(word_hash(text), text.as_bytes())
    }

    /// The id of `text`, creating the term if needed; counts one more use.
    pub(super) fn intern(&mut self, text: &str) -> u32 {
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
    pub(super) fn release(&mut self, id: u32) {
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
    pub(super) fn hot(&self, id: u32) -> TermHot {
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
    pub(super) fn term_sig_bit(&self, id: u32) -> u64 {
        match &self.terms[id as usize] {
            Some(t) => sig_bit(word_hash(
                std::str::from_utf8(t.text.as_bytes()).unwrap_or(""),
            )),
            None => u64::MAX,
        }
    }

    /// Refreshes the map's copy of term `id` after its uses changed.
    pub(super) fn sync_hot(&mut self, id: u32) {
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

    pub(super) fn rebuild_filter(&mut self) {
        let hashes = self.term_ids.iter().map(|(h, _)| h);
        self.term_filter.rebuild(self.term_ids.len(), hashes);
    }
}
