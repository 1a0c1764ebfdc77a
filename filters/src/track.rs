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
/// matching allocates nothing once warmed up.
#[derive(Debug, Default, Clone)]
pub struct Words {
    buf: String,
    spans: Vec<(u32, u32)>,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Words {
    /// Cuts `text` into words, replacing what the value held before.
    pub fn fill(&mut self, text: &str) {
        self.buf.clear();
        self.spans.clear();
        let mut prev: Option<char> = None;
        let mut chars = text.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            if !is_word_char(c) {
                prev = Some(c);
                continue;
            }
            let start = self.buf.len();
            self.buf.extend(c.to_lowercase());
            while let Some(&(_, c)) = chars.peek() {
                if !is_word_char(c) {
                    break;
                }
                self.buf.extend(c.to_lowercase());
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
            Some(Phrase { terms })
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

    /// Whether every term is among `words`.
    pub fn matches(&self, words: &Words) -> bool {
        self.terms.iter().all(|t| words.contains(t))
    }
}
