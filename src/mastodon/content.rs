//! A status's text as Mastodon's `content`: HTML with every character of
//! the text escaped, paragraphs and line breaks kept, and the mentions of
//! users that exist and the hashtags linked as Mastodon links them.

use crate::text::spans;

/// `text` with `&`, `<`, `>`, `"` and `'` escaped for HTML.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// What a status's links name: the server's URL, the mentioned users that
/// exist (login, any case, and their profile URL) and its hashtags.
pub(super) struct Links<'a> {
    pub(super) base: &'a str,
    pub(super) mentions: &'a [String],
    pub(super) tags: &'a [String],
}

/// `message` as Mastodon's HTML `content`: a `<p>` per paragraph (a blank
/// line between), `<br />` per line break, mentions and hashtags linked.
pub(super) fn html(message: &str, links: &Links<'_>) -> String {
    if message.is_empty() {
        return String::new();
    }
    let mut linked = String::with_capacity(message.len() * 2);
    let mut at = 0;
    for (range, sigil, word) in spans(message) {
        let known = |list: &[String]| list.iter().any(|w| w.eq_ignore_ascii_case(word));
        let anchor = match sigil {
            '@' if known(links.mentions) => format!(
                "<span class=\"h-card\" translate=\"no\"><a href=\"{}/@{}\" class=\"u-url mention\">@<span>{}</span></a></span>",
                links.base,
                escape(word),
                escape(word)
            ),
            '#' if known(links.tags) => format!(
                "<a href=\"{}/tags/{}\" class=\"mention hashtag\" rel=\"tag\">#<span>{}</span></a>",
                links.base,
                escape(&word.to_lowercase()),
                escape(word)
            ),
            _ => continue,
        };
        linked.push_str(&breaks(&message[at..range.start]));
        linked.push_str(&anchor);
        at = range.end;
    }
    linked.push_str(&breaks(&message[at..]));
    let paragraphs: Vec<&str> = linked
        .split(PARAGRAPH)
        .map(|p| p.trim_matches(LINE))
        .filter(|p| !p.is_empty())
        .collect();
    paragraphs
        .iter()
        .map(|p| format!("<p>{}</p>", p.replace(LINE, "<br />")))
        .collect()
}

/// A paragraph break and a line break, as [`breaks`] marks them (control
/// characters, which a message cannot hold and escaping never makes).
const PARAGRAPH: &str = "\u{1}";
const LINE: char = '\u{2}';

/// Plain text escaped, a run of two or more line breaks marked as a
/// paragraph break and a single one as a line break.
fn breaks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = 0;
    let flush = |out: &mut String, run: &mut usize| {
        match *run {
            0 => {}
            1 => out.push(LINE),
            _ => out.push_str(PARAGRAPH),
        }
        *run = 0;
    };
    let mut buf = [0u8; 4];
    for c in text.chars() {
        match c {
            '\n' => run += 1,
            '\r' => {}
            c => {
                flush(&mut out, &mut run);
                out.push_str(&escape(c.encode_utf8(&mut buf)));
            }
        }
    }
    flush(&mut out, &mut run);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links<'a>(mentions: &'a [String], tags: &'a [String]) -> Links<'a> {
        Links {
            base: "http://h",
            mentions,
            tags,
        }
    }

    #[test]
    fn text_is_escaped_and_mentions_and_tags_linked() {
        let (m, t) = (vec!["bob".to_string()], vec!["Rust".to_string()]);
        let out = html("hi @Bob & @nobody <b>'x'</b> #Rust", &links(&m, &t));
        assert_eq!(
            out,
            "<p>hi <span class=\"h-card\" translate=\"no\"><a href=\"http://h/@Bob\" class=\"u-url mention\">@<span>Bob</span></a></span> &amp; @nobody &lt;b&gt;&#39;x&#39;&lt;/b&gt; <a href=\"http://h/tags/rust\" class=\"mention hashtag\" rel=\"tag\">#<span>Rust</span></a></p>"
        );
    }

    #[test]
    fn lines_and_paragraphs_are_kept() {
        let out = html("one\ntwo\n\nthree\n\n\n#x", &links(&[], &["x".to_string()]));
        assert_eq!(
            out,
            "<p>one<br />two</p><p>three</p><p><a href=\"http://h/tags/x\" class=\"mention hashtag\" rel=\"tag\">#<span>x</span></a></p>"
        );
        assert_eq!(html("", &links(&[], &[])), "");
        assert_eq!(html("a\"b", &links(&[], &[])), "<p>a&quot;b</p>");
    }
}
