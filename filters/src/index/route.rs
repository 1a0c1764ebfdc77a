//! Routing: the subscriptions that want an event, from lookups alone.

use super::slots::*;
use super::*;

impl Index {
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
    pub(super) fn take_scratch(&mut self, n: usize) -> Vec<Scratch> {
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

    pub(super) fn route_with(&mut self, event: &Event<'_>, out: &mut Vec<SubId>, sc: &mut Scratch) {
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
    pub(super) fn route_cheap(&self, event: &Event<'_>, out: &mut Vec<SubId>, sc: &mut Scratch) {
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
    pub(super) fn route_lookups(&self, event: &Event<'_>, out: &mut Vec<SubId>) {
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
                if !s.grouped {
                    match s.audience {
                        None => self.home.extend_into(s.uid, out),
                        Some(audience) => self.home_seeing(s.uid, audience, out),
                    }
                }
            }
            Event::Delete {
                uid,
                private,
                grouped,
                ..
            } => {
                if !private {
                    self.follow.extend_into(uid, out);
                    out.extend(self.by_content.iter().copied());
                }
                if !grouped {
                    self.home.extend_into(uid, out);
                }
            }
            Event::Notice { uids, .. } => {
                for &uid in uids {
                    self.user_of.extend_into(uid, out);
                }
            }
            Event::Follow { .. } | Event::Other => {}
        }
    }

    /// The user streams whose home gets `author`'s statuses and whose user
    /// is `audience` or follows them (a reply to a private account's
    /// status): rare, so the candidates are checked one by one.
    fn home_seeing(&self, author: u64, audience: u64, out: &mut Vec<SubId>) {
        let start = out.len();
        self.home.extend_into(author, out);
        let candidates: Vec<SubId> = out.drain(start..).collect();
        out.extend(candidates.into_iter().filter(|sub| {
            matches!(self.subs.get(sub), Some(Compiled::User { uid, following })
                if *uid == audience || following.contains(&audience))
        }));
    }

    /// Track, step 1: every word against the term prefilter, with no branch
    /// between the reads.
    pub(super) fn prefilter_words(&self, sc: &mut Scratch) {
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
    pub(super) fn probe_terms(&self, out: &mut Vec<SubId>, sc: &mut Scratch) {
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
    pub(super) fn match_phrases(&self, out: &mut Vec<SubId>, sc: &mut Scratch) {
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

    pub(super) fn apply_follow(&mut self, source: u64, target: u64, following: bool) {
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
pub(super) fn push_new(list: &mut Vec<u32>, id: u32) {
    if !list.contains(&id) {
        list.push(id);
    }
}
