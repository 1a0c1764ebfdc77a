//! A rule checked against one status directly: the reference semantics
//! (the compiled index must give the same answers).

use super::expr::{Expr, Term, UserRef};
use super::parse::word_slices;
use crate::sample;
use std::borrow::Cow;

/// Earth's radius for `point_radius`, km.
const EARTH_KM: f64 = 6371.0;

/// The parts of a status rules look at.
#[derive(Debug, Clone, Default)]
pub struct RuleStatus {
    /// Status id (for `sample:`).
    pub id: u64,
    /// Author.
    pub uid: u64,
    /// The message (a repost's is empty: it never matches the words of
    /// what it reposts).
    pub message: String,
    /// Hashtags, lowercased.
    pub hashtags: Vec<String>,
    /// Mentioned logins, lowercased.
    pub mentions: Vec<String>,
    /// Author of the status it replies to, if it is a reply.
    pub reply_to_uid: Option<u64>,
    /// Whether it is a reply.
    pub is_reply: bool,
    /// Author of the status it reposts, if it is a repost.
    pub repost_of_uid: Option<u64>,
    /// `(lat, lon)`.
    pub coords: Option<(f64, f64)>,
}

/// A status prepared for many checks: its words cut once.
#[derive(Debug, Clone)]
pub struct Prepared<'a> {
    status: &'a RuleStatus,
    /// The message's words in order, lowercased (a `#tag` or `@login`
    /// counts as its word): borrowed from the message when it has them
    /// in lower case already.
    words: Vec<Cow<'a, str>>,
}

impl<'a> Prepared<'a> {
    /// Cuts `status`'s message into words.
    pub fn new(status: &'a RuleStatus) -> Prepared<'a> {
        Prepared {
            status,
            words: word_slices(&status.message)
                .map(|w| {
                    if w.chars().any(char::is_uppercase) {
                        Cow::Owned(w.to_lowercase())
                    } else {
                        Cow::Borrowed(w)
                    }
                })
                .collect(),
        }
    }

    /// The message's words, in order.
    pub fn words(&self) -> &[Cow<'a, str>] {
        &self.words
    }

    fn has_word(&self, w: &str) -> bool {
        self.words.iter().any(|x| x == w)
    }

    fn has_phrase(&self, phrase: &[String]) -> bool {
        !phrase.is_empty()
            && self
                .words
                .windows(phrase.len())
                .any(|win| win.iter().zip(phrase).all(|(a, b)| a == b))
    }
}

fn user_is(u: &UserRef, id: Option<u64>) -> bool {
    match u {
        UserRef::Id(want) => id == Some(*want),
        // An unresolved login names no one.
        UserRef::Login(_) => false,
    }
}

/// Great-circle distance in km.
pub fn distance_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = (lat2 - lat1).to_radians();
    let dl = (lon2 - lon1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_KM * a.sqrt().min(1.0).asin()
}

impl Term {
    /// Whether the term holds for a prepared status.
    pub fn matches(&self, p: &Prepared<'_>) -> bool {
        let s = p.status;
        match self {
            // The word itself, `#word` or `@word`: each is the word among
            // the message's words.
            Term::Word(w) => p.has_word(w),
            Term::Phrase(words) => p.has_phrase(words),
            Term::Hashtag(t) => s.hashtags.iter().any(|h| h == t),
            Term::Mention(l) => s.mentions.iter().any(|m| m == l),
            Term::From(u) => user_is(u, Some(s.uid)),
            Term::To(u) => user_is(u, s.reply_to_uid),
            Term::RepostOf(u) => user_is(u, s.repost_of_uid),
            Term::IsReply => s.is_reply,
            Term::IsRepost => s.repost_of_uid.is_some(),
            Term::HasGeo => s.coords.is_some(),
            Term::HasHashtags => !s.hashtags.is_empty(),
            Term::HasMentions => !s.mentions.is_empty(),
            Term::BoundingBox(b) => s.coords.is_some_and(|(lat, lon)| b.contains(lat, lon)),
            Term::PointRadius { lon, lat, km } => s
                .coords
                .is_some_and(|(la, lo)| distance_km(*lat, *lon, la, lo) <= *km),
            Term::Sample(n) => sample::hit(s.id, sample::threshold(f64::from(*n) / 100.0)),
        }
    }
}

impl Expr {
    /// Whether the rule holds for `status`.
    pub fn matches(&self, status: &RuleStatus) -> bool {
        self.matches_prepared(&Prepared::new(status))
    }

    /// Whether the rule holds for a prepared status.
    pub fn matches_prepared(&self, p: &Prepared<'_>) -> bool {
        match self {
            Expr::And(parts) => parts.iter().all(|e| e.matches_prepared(p)),
            Expr::Or(alts) => alts.iter().any(|e| e.matches_prepared(p)),
            Expr::Not(inner) => !inner.matches_prepared(p),
            Expr::Term(t, _) => t.matches(p),
        }
    }
}
