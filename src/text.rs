//! Hashtags and mentions in a message.

use regex::Regex;
use std::sync::OnceLock;

fn entity_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A sigil counts only at the start or after a character that cannot be
    // part of a word (so "a#b" and "mail@example.com" hold no entity).
    RE.get_or_init(|| {
        Regex::new(r"(?:^|[^\p{L}\p{N}_&/])([#@])([\p{L}\p{N}_]+)").expect("valid regex")
    })
}

/// Hashtags (without `#`, as typed, first spelling kept when repeated in
/// another case). A tag of digits only is not a hashtag.
pub(crate) fn hashtags(message: &str) -> Vec<String> {
    entities(message, '#')
        .into_iter()
        .filter(|t| !t.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

/// Mentioned logins (without `@`), as typed; the caller keeps those that exist.
pub(crate) fn mentions(message: &str) -> Vec<String> {
    entities(message, '@')
        .into_iter()
        .filter(|m| m.len() <= 30 && m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect()
}

/// Every hashtag and mention where it stands in `message`: the byte range
/// of the sigil and word, the sigil, and the word (each occurrence, in
/// order; the caller keeps the mentions of users that exist and the tags
/// [`hashtags`] keeps).
pub(crate) fn spans(message: &str) -> Vec<(std::ops::Range<usize>, char, &str)> {
    entity_re()
        .captures_iter(message)
        .filter_map(|cap| {
            let (sigil, word) = (cap.get(1)?, cap.get(2)?);
            let c = if sigil.as_str() == "#" { '#' } else { '@' };
            Some((sigil.start()..word.end(), c, word.as_str()))
        })
        .collect()
}

fn entities(message: &str, sigil: char) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cap in entity_re().captures_iter(message) {
        if cap[1].starts_with(sigil) {
            let word = cap[2].to_string();
            if !out.iter().any(|w| w.to_lowercase() == word.to_lowercase()) {
                out.push(word);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_found_after_non_word_characters_only() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("#rust and #Go, #rust again", &["rust", "Go"], &[]),
            ("hi @alice and @Bob!", &[], &["alice", "Bob"]),
            ("mail me at a@b.com", &[], &[]),
            ("not a#tag but (#tag)", &["tag"], &[]),
            ("#123 is no tag, #1a is", &["1a"], &[]),
            ("#café au lait", &["café"], &[]),
            (
                "東京 #東京タワー と #ラーメン",
                &["東京タワー", "ラーメン"],
                &[],
            ),
            ("#Rust, #rust. #RUST! (#rust)", &["Rust"], &[]),
            ("end of sentence #done.", &["done"], &[]),
            ("see https://x.example/#frag and a&#39;b", &[], &[]),
            ("@Alice @alice @ALICE", &[], &["Alice"]),
            ("@名前 is not a login; @ok_1 is", &[], &["ok_1"]),
            ("@abcdefghijklmnopqrstuvwxyz12345 is too long", &[], &[]),
            ("email a@b, handle @b", &[], &["b"]),
            (
                "#_under_score_ and #tag_2",
                &["_under_score_", "tag_2"],
                &[],
            ),
            ("##double and @@double", &["double"], &["double"]),
        ];
        for (msg, tags, men) in cases {
            assert_eq!(hashtags(msg), *tags, "{msg}");
            assert_eq!(mentions(msg), *men, "{msg}");
        }
    }
}

/// Format characters that show nothing (zero-width, bidirectional
/// controls, joiners, fillers, tags), as inclusive ranges: with white
/// space, what a text made only of is refused. Also the OpenAPI
/// document's patterns ([`http::shared::openapi::FMT`](crate::http::shared::openapi::FMT)).
pub(crate) const INVISIBLE: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{034F}', '\u{034F}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{206F}'),
    ('\u{2800}', '\u{2800}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF9}', '\u{FFFB}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0000}', '\u{E0FFF}'),
];

/// Whether `c` shows nothing: white space or an [`INVISIBLE`] character.
pub(crate) fn is_invisible(c: char) -> bool {
    c.is_whitespace() || INVISIBLE.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c))
}

/// Why a text a person wrote (a message, a name, a title, a comment) is
/// refused: it holds a control character other than `\n` and `\t` (NUL
/// included), or nothing that shows.
pub(crate) fn unreadable(text: &str) -> Option<&'static str> {
    if text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Some("must not hold control characters other than new lines and tabs");
    }
    if text.chars().all(is_invisible) {
        return Some("must hold a visible character (not only white space or invisible ones)");
    }
    None
}

#[cfg(test)]
mod unreadable_tests {
    use super::unreadable;

    #[test]
    fn texts_of_nothing_visible_or_with_control_characters_are_refused() {
        for (text, refused) in [
            ("hello", false),
            ("line\nbreak\tand tab", false),
            ("\u{200B}\u{200D}", true),
            ("\u{202E}\u{2066} ", true),
            (" \u{FEFF}\u{3000}", true),
            ("nul\u{0}inside", true),
            ("bell\u{7}", true),
            ("\u{200B}x", false),
            ("", true),
        ] {
            assert_eq!(unreadable(text).is_some(), refused, "{text:?}");
        }
    }
}
