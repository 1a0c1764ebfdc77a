//! Track semantics: how a message is cut into words and when a phrase matches.
//!
//! A word is a maximal run of Unicode letters, digits and `_`, lowercased with
//! Unicode's full lowercase mapping (so `ÉCOLE` and `école` are one word).
//! Everything else (spaces, punctuation, emoji) separates words. A word written
//! right after `#` or `@` also yields the prefixed form, so the message
//! `#Rust!` holds the words `rust` and `#rust`.
//!
//! A phrase is cut the same way into terms; it matches when every term is one
//! of the message's words (AND inside a phrase; a filter's phrases are OR-ed).
//! A plain term therefore matches `term`, `#term` and `@term`, while `#term`
//! matches only the hashtag. Punctuation inside a term splits it, so the term
//! `don't` needs the words `don` and `t`.

/// A message cut into lowercased words, reusable across messages so that
/// matching allocates nothing once warmed up. Each word also has a 64-bit
/// hash, so the index finds candidate phrases and checks their terms by
/// comparing integers; strings are compared only when hashes agree.
#[derive(Debug, Default, Clone)]
pub struct Words {
    buf: String,
    spans: Vec<(u32, u32)>,
    hashes: Vec<u64>,
}

fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        c.is_alphanumeric()
    }
}

fn push_lower(buf: &mut String, c: char) {
    if c.is_ascii() {
        buf.push(c.to_ascii_lowercase());
    } else {
        buf.extend(c.to_lowercase());
    }
}

/// The hash words and terms are indexed by.
pub fn word_hash(word: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = crate::FxBuild::default().build_hasher();
    h.write(word.as_bytes());
    h.write_u64(word.len() as u64);
    h.finish()
}

impl Words {
    /// Cuts `text` into words, replacing what the value held before.
    pub fn fill(&mut self, text: &str) {
        self.buf.clear();
        self.spans.clear();
        self.hashes.clear();
        let mut prev: Option<char> = None;
        let mut chars = text.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            if !is_word_char(c) {
                prev = Some(c);
                continue;
            }
            let start = self.buf.len();
            push_lower(&mut self.buf, c);
            while let Some(&(_, c)) = chars.peek() {
                if !is_word_char(c) {
                    break;
                }
                push_lower(&mut self.buf, c);
                chars.next();
            }
            let end = self.buf.len();
            self.spans.push((start as u32, end as u32));
            if let Some(sigil @ ('#' | '@')) = prev {
                let pstart = self.buf.len();
                self.buf.push(sigil);
                self.buf.extend_from_within(start..end);
                self.spans.push((pstart as u32, self.buf.len() as u32));
            }
            prev = None;
        }
        for &(s, e) in &self.spans {
            self.hashes
                .push(word_hash(&self.buf[s as usize..e as usize]));
        }
    }

    /// The hash of each word, in the order of [`Words::iter`].
    pub fn hashes(&self) -> &[u64] {
        &self.hashes
    }

    /// The `i`-th word.
    pub fn word(&self, i: usize) -> &str {
        let (s, e) = self.spans[i];
        &self.buf[s as usize..e as usize]
    }

    /// Whether the word `word` with hash `hash` is among the words.
    pub fn contains_hashed(&self, word: &str, hash: u64) -> bool {
        self.hashes
            .iter()
            .enumerate()
            .any(|(i, h)| *h == hash && self.word(i) == word)
    }

    /// The words, in message order, prefixed forms after their plain form.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.spans
            .iter()
            .map(|&(s, e)| &self.buf[s as usize..e as usize])
    }

    /// Whether `word` is one of the words (a linear scan: messages are short).
    pub fn contains(&self, word: &str) -> bool {
        self.iter().any(|w| w == word)
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when the text had no word at all.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// One tracked phrase, compiled to its sorted, deduplicated terms.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Phrase {
    terms: Vec<String>,
    hashes: Vec<u64>,
}

impl Phrase {
    /// Compiles a phrase; `None` when it holds no word at all.
    pub fn new(text: &str) -> Option<Phrase> {
        let mut words = Words::default();
        words.fill(text);
        let all: Vec<&str> = words.iter().collect();
        // A plain term is implied by its prefixed form, so keep only the latter.
        let mut terms: Vec<String> = all
            .iter()
            .filter(|w| {
                w.starts_with(['#', '@'])
                    || !all.iter().any(|o| {
                        o.len() == w.len() + 1 && o.ends_with(**w) && o.starts_with(['#', '@'])
                    })
            })
            .map(|w| w.to_string())
            .collect();
        terms.sort();
        terms.dedup();
        if terms.is_empty() {
            None
        } else {
            let hashes = terms.iter().map(|t| word_hash(t)).collect();
            Some(Phrase { terms, hashes })
        }
    }

    /// The terms, sorted.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// The term the index files the phrase under: the longest, as the longest
    /// word is usually the rarest, which keeps candidate lists short.
    pub fn anchor(&self) -> &str {
        self.terms
            .iter()
            .max_by(|a, b| a.len().cmp(&b.len()).then_with(|| b.cmp(a)))
            .map(String::as_str)
            .unwrap_or("")
    }

    /// The hash of [`Phrase::anchor`].
    pub fn anchor_hash(&self) -> u64 {
        word_hash(self.anchor())
    }

    /// Whether every term is among `words`.
    pub fn matches(&self, words: &Words) -> bool {
        self.terms
            .iter()
            .zip(&self.hashes)
            .all(|(t, h)| words.contains_hashed(t, *h))
    }
}
