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
pub fn hashtags(message: &str) -> Vec<String> {
    entities(message, '#')
        .into_iter()
        .filter(|t| !t.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

/// Mentioned logins (without `@`), as typed; the caller keeps those that exist.
pub fn mentions(message: &str) -> Vec<String> {
    entities(message, '@')
        .into_iter()
        .filter(|m| m.len() <= 30 && m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
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
