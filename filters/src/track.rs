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

use crate::bloom::fold_mul;

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

/// Whether an ASCII byte is a word character (`[0-9A-Za-z_]`).
const ASCII_WORD: [bool; 128] = {
    let mut t = [false; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    t
};

const HASH_K0: u64 = 0x243f_6a88_85a3_08d3;
const HASH_K1: u64 = 0x1319_8a2e_0370_7344;
const HASH_K2: u64 = 0xa409_3822_299f_31d0;

/// The hash words and terms are indexed by: eight bytes per multiply, with
/// the tail read as overlapping pieces instead of byte by byte. Every bit of
/// the result depends on every byte, so both the prefilter (which uses the
/// top and low bits) and the maps get uniform indices whatever the words
/// look like.
pub fn word_hash(word: &str) -> u64 {
    let bytes = word.as_bytes();
    let n = bytes.len();
    let mut h = HASH_K0 ^ n as u64;
    let mut rest = bytes;
    while rest.len() > 8 {
        let (head, tail) = rest.split_at(8);
        h = fold_mul(h ^ le64(head), HASH_K1);
        rest = tail;
    }
    let last = match rest.len() {
        8 => le64(rest),
        4..=7 => u64::from(le32(rest)) | u64::from(le32(&rest[rest.len() - 4..])) << 32,
        1..=3 => {
            let m = rest.len();
            u64::from(rest[0]) | u64::from(rest[m / 2]) << 8 | u64::from(rest[m - 1]) << 16
        }
        _ => 0,
    };
    fold_mul(fold_mul(h ^ last, HASH_K1) ^ HASH_K2, HASH_K0)
}

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn le32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

/// Whether the character at byte `i` of `text` is a word character (a
/// Unicode letter or digit, or `_`), and its length in bytes.
#[inline]
fn classify(text: &str, i: usize) -> (bool, usize) {
    let b = text.as_bytes()[i];
    if b < 0x80 {
        return (ASCII_WORD[usize::from(b)], 1);
    }
    let c = text[i..].chars().next().unwrap_or_default();
    (c.is_alphanumeric(), c.len_utf8())
}

impl Words {
    /// Cuts `text` into words, replacing what the value held before.
    ///
    /// All-ASCII text (most of it) takes a path that finds each word's end
    /// through a table and copies the word whole; other text is decoded and
    /// classified with Unicode's tables. Both give the same words.
    pub fn fill(&mut self, text: &str) {
        self.buf.clear();
        self.spans.clear();
        self.hashes.clear();
        if text.is_ascii() {
            self.cut_ascii(text);
        } else {
            self.cut_unicode(text);
        }
        for &(s, e) in &self.spans {
            self.hashes
                .push(word_hash(&self.buf[s as usize..e as usize]));
        }
    }

    /// The words of all-ASCII `text` into `buf` and `spans`.
    fn cut_ascii(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let is_word = |b: u8| ASCII_WORD[usize::from(b & 0x7f)];
        let mut i = 0;
        while i < bytes.len() {
            if !is_word(bytes[i]) {
                i += 1;
                continue;
            }
            let begin = i;
            while i < bytes.len() && is_word(bytes[i]) {
                i += 1;
            }
            let start = self.buf.len();
            self.buf.push_str(&text[begin..i]);
            self.buf[start..].make_ascii_lowercase();
            let end = self.buf.len();
            self.spans.push((start as u32, end as u32));
            if let Some(&sigil @ (b'#' | b'@')) = begin.checked_sub(1).map(|p| &bytes[p]) {
                self.buf.push(char::from(sigil));
                self.buf.extend_from_within(start..end);
                self.spans.push((end as u32, self.buf.len() as u32));
            }
        }
    }

    /// The words of any `text` into `buf` and `spans`.
    fn cut_unicode(&mut self, text: &str) {
        let bytes = text.as_bytes();
        // The character just before the current position, when it was `#` or `@`.
        let mut sigil: Option<char> = None;
        let mut i = 0;
        while i < bytes.len() {
            let (is_word, len) = classify(text, i);
            if !is_word {
                sigil = match bytes[i] {
                    b'#' => Some('#'),
                    b'@' => Some('@'),
                    _ => None,
                };
                i += len;
                continue;
            }
            let start = self.buf.len();
            loop {
                let b = bytes[i];
                if b < 0x80 {
                    self.buf.push(char::from(b.to_ascii_lowercase()));
                    i += 1;
                } else {
                    let c = text[i..].chars().next().unwrap_or_default();
                    self.buf.extend(c.to_lowercase());
                    i += c.len_utf8();
                }
                if i >= bytes.len() || !classify(text, i).0 {
                    break;
                }
            }
            let end = self.buf.len();
            self.spans.push((start as u32, end as u32));
            if let Some(sigil) = sigil {
                let pstart = self.buf.len();
                self.buf.push(sigil);
                self.buf.extend_from_within(start..end);
                self.spans.push((pstart as u32, self.buf.len() as u32));
            }
            sigil = None;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The ASCII path cuts every ASCII text exactly as the Unicode path does:
    /// random texts of letters of both cases, digits, `_`, sigils (doubled,
    /// at the start, at the end) and punctuation.
    #[test]
    fn the_ascii_path_cuts_words_as_the_unicode_path_does() {
        let alphabet = b"aZq_09#@#@ .,!-'\t\nXy";
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let (mut fast, mut slow) = (Words::default(), Words::default());
        for round in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let text: String = (0..len)
                .map(|k| char::from(alphabet[((x >> (k % 58)) as usize + k * 7) % alphabet.len()]))
                .collect();
            fast.buf.clear();
            fast.spans.clear();
            fast.cut_ascii(&text);
            slow.buf.clear();
            slow.spans.clear();
            slow.cut_unicode(&text);
            assert_eq!(
                fast.iter().collect::<Vec<_>>(),
                slow.iter().collect::<Vec<_>>(),
                "round {round}: {text:?}"
            );
        }
    }
}
