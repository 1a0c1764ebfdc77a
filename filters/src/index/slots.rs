//! The index's compact slots: subscribers of a key, tracked phrases and
//! terms laid out so that a candidate word costs one read.

use crate::parse::FilterSpec;
use crate::view::SubId;
use std::collections::HashSet;

/// Subscribers of one key. Most keys have one, kept inline so that a lookup
/// touches no further memory; the list is boxed to keep this 16 bytes.
#[derive(Debug, Clone)]
#[allow(clippy::box_collection)]
pub(super) enum Subs {
    One(SubId),
    Many(Box<Vec<SubId>>),
}

impl Subs {
    pub(super) fn push(&mut self, sub: SubId) {
        match self {
            Subs::One(first) => *self = Subs::Many(Box::new(vec![*first, sub])),
            Subs::Many(list) => list.push(sub),
        }
    }

    /// Removes `sub`; true when nothing is left.
    pub(super) fn remove(&mut self, sub: SubId) -> bool {
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

    pub(super) fn extend_into(&self, out: &mut Vec<SubId>) {
        match self {
            Subs::One(s) => out.push(*s),
            Subs::Many(list) => out.extend_from_slice(list),
        }
    }
}

/// Term ids of a phrase, sorted: up to [`INLINE_TERMS`] inside the phrase's
/// slot, so that checking a candidate phrase reads one place.
#[derive(Debug)]
pub(super) enum TermIds {
    Inline(u8, [u32; INLINE_TERMS]),
    Heap(Box<[u32]>),
}

pub(super) const INLINE_TERMS: usize = 5;

impl TermIds {
    pub(super) fn new(ids: &[u32]) -> TermIds {
        if ids.len() <= INLINE_TERMS {
            let mut buf = [0; INLINE_TERMS];
            buf[..ids.len()].copy_from_slice(ids);
            TermIds::Inline(ids.len() as u8, buf)
        } else {
            TermIds::Heap(ids.into())
        }
    }

    pub(super) fn as_slice(&self) -> &[u32] {
        match self {
            TermIds::Inline(n, ids) => &ids[..usize::from(*n)],
            TermIds::Heap(ids) => ids,
        }
    }
}

/// One distinct tracked phrase.
#[derive(Debug)]
pub(super) struct PhraseSlot {
    /// The anchor is one of them.
    pub(super) terms: TermIds,
    pub(super) subs: Subs,
}

/// Bytes of a term's text kept inside its slot.
pub(super) const INLINE_TEXT: usize = 14;

/// A term's text: short ones (most words) live inside the slot, so checking
/// a candidate word touches no further memory.
#[derive(Debug)]
pub(super) enum Text {
    Inline(u8, [u8; INLINE_TEXT]),
    Heap(Box<str>),
}

impl Text {
    pub(super) fn new(s: &str) -> Text {
        if s.len() <= INLINE_TEXT {
            let mut buf = [0u8; INLINE_TEXT];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            Text::Inline(s.len() as u8, buf)
        } else {
            Text::Heap(s.into())
        }
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        match self {
            Text::Inline(len, buf) => &buf[..*len as usize],
            Text::Heap(s) => s.as_bytes(),
        }
    }
}

/// Bytes of a term's text copied into its [`TermHot`].
pub(super) const HOT_TEXT: usize = 10;
/// [`TermHot::len`] of a term too long to copy.
pub(super) const NOT_INLINE: u8 = u8::MAX;

/// What a message word that is this term (its text checked in the map's
/// slot) needs beyond the slot; see [`TermHot`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(u8)]
pub(super) enum Kind {
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
pub(super) struct TermHot {
    /// The one subscriber of a [`Kind::Simple`] term; the other terms' bits
    /// of a [`Kind::Gated`] one.
    pub(super) data: u64,
    pub(super) id: u32,
    pub(super) kind: Kind,
    /// Length of `text`, or [`NOT_INLINE`].
    pub(super) len: u8,
    pub(super) text: [u8; HOT_TEXT],
}

/// The bit a word (or term) with hash `hash` sets in a message's signature:
/// a 64-bit Bloom filter of its words, which a [`Kind::Gated`] term tests
/// before reading its slot.
#[inline]
pub(super) fn sig_bit(hash: u64) -> u64 {
    1 << (hash >> 58)
}

impl TermHot {
    /// Whether the term's text is `word`: `Some` when the copy decides it.
    #[inline]
    pub(super) fn text_is(&self, word: &[u8]) -> Option<bool> {
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
pub(super) struct TermSlot {
    pub(super) text: Text,
    /// Subscribers of the one-term phrase made of just this term: the common
    /// case, answered from the term slot alone.
    pub(super) single: Option<Subs>,
    /// Multi-term phrases filed under this term (their anchor).
    pub(super) anchored: Vec<u32>,
    /// Uses by phrases (a one-term phrase counts once).
    pub(super) refs: u32,
}

#[derive(Debug)]
pub(super) enum Compiled {
    Firehose,
    Sample(u64),
    Filter(FilterSpec),
    User {
        uid: u64,
        following: HashSet<u64, crate::hash::FxBuild>,
    },
}
