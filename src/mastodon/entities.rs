//! Our JSON turned into Mastodon's entities (the 4.3 documentation's
//! shapes): ids as strings, times as ISO 8601, `acct` and the counts; and a
//! status's text as Mastodon's `content`: HTML with every character of the
//! text escaped, paragraphs and line breaks kept, and the mentions of users
//! that exist and the hashtags linked as Mastodon links them.

use crate::text::spans;
use serde_json::{json, Value};

/// A time in seconds since the epoch as ISO 8601 UTC with milliseconds
/// (`2026-12-06T14:10:08.123Z`), as Mastodon writes its times.
pub(super) fn iso8601(secs: f64) -> String {
    let ms = (secs * 1000.0).round().max(0.0) as i64;
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// A user of our API (`User`) as a Mastodon `Account`, on the server at
/// `base` (its URL: `http://host`).
pub(super) fn account(user: &Value, base: &str) -> Value {
    let login = user["login"].as_str().unwrap_or_default();
    let name = user["name"].as_str().unwrap_or(login);
    let url = format!("{base}/@{login}");
    let avatar = format!("{base}/avatars/original/missing.png");
    let header = format!("{base}/headers/original/missing.png");
    let created = user["signup"].as_f64().unwrap_or(0.0);
    json!({
        "id": user["id"].as_str().unwrap_or_default(),
        "username": login,
        "acct": login,
        "display_name": name,
        "locked": user["private"].as_bool().unwrap_or(false),
        "bot": false,
        "discoverable": true,
        "indexable": false,
        "group": false,
        "noindex": false,
        "created_at": iso8601((created / 86_400.0).floor() * 86_400.0),
        "note": "",
        "url": url,
        "uri": url,
        "avatar": avatar,
        "avatar_static": avatar,
        "header": header,
        "header_static": header,
        "followers_count": user["followers"].as_u64().unwrap_or(0),
        "following_count": user["following"].as_u64().unwrap_or(0),
        "statuses_count": user["posts"].as_u64().unwrap_or(0),
        "last_status_at": Value::Null,
        "hide_collections": false,
        "emojis": [],
        "fields": [],
        "roles": [],
    })
}

/// The caller's marks on a status (all false without a caller).
#[derive(Clone, Copy, Default)]
pub(super) struct Marks {
    pub(super) favourited: bool,
    pub(super) reblogged: bool,
    pub(super) bookmarked: bool,
}

/// What a `Status` entity is made of beyond our status: its author as an
/// `Account`, its mentions as `Mention`s, the caller's marks, the status
/// it reblogs (already an entity), and the server's URL.
pub(super) struct StatusParts<'a> {
    pub(super) account: Value,
    pub(super) mentions: Vec<Value>,
    pub(super) marks: Marks,
    pub(super) reblog: Option<Value>,
    pub(super) base: &'a str,
}

/// A status of our API as a Mastodon `Status`. A private account's status
/// is `private` (followers only), every other `public`; a reblog carries
/// no text of its own and the reblogged status in `reblog`.
pub(super) fn status(ours: &Value, parts: StatusParts<'_>) -> Value {
    let id = ours["id"].as_str().unwrap_or_default();
    let login = ours["login"].as_str().unwrap_or_default();
    let base = parts.base;
    let url = format!("{base}/@{login}/{id}");
    let strings = |field: &str| -> Vec<String> {
        ours[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (mention_logins, tags) = (strings("mentions"), strings("hashtags"));
    let message = ours["message"].as_str().unwrap_or_default();
    let reblog = parts.reblog;
    let content = if reblog.is_some() {
        String::new()
    } else {
        html(
            message,
            &Links {
                base,
                mentions: &mention_logins,
                tags: &tags,
            },
        )
    };
    let locked = parts.account["locked"].as_bool().unwrap_or(false);
    let tag_entities: Vec<Value> = tags
        .iter()
        .map(|t| {
            let name = t.to_lowercase();
            json!({ "name": name, "url": format!("{base}/tags/{name}") })
        })
        .collect();
    let time = |field: &str| ours[field].as_f64().map(iso8601);
    json!({
        "id": id,
        "uri": url,
        "url": url,
        "created_at": time("posted").unwrap_or_default(),
        "edited_at": time("edited_at"),
        "account": parts.account,
        "content": content,
        "visibility": if locked { "private" } else { "public" },
        "sensitive": false,
        "spoiler_text": "",
        "media_attachments": [],
        "application": Value::Null,
        "mentions": parts.mentions,
        "tags": tag_entities,
        "emojis": [],
        "reblogs_count": ours["reposts"].as_u64().unwrap_or(0),
        "favourites_count": ours["likes"].as_u64().unwrap_or(0),
        "replies_count": ours["replies"].as_u64().unwrap_or(0),
        "in_reply_to_id": ours["reply_to"].as_str(),
        "in_reply_to_account_id": ours["reply_to_uid"].as_str(),
        "reblog": reblog,
        "poll": Value::Null,
        "card": Value::Null,
        "language": Value::Null,
        "favourited": parts.marks.favourited,
        "reblogged": parts.marks.reblogged,
        "bookmarked": parts.marks.bookmarked,
        "muted": false,
        "pinned": false,
        "filtered": [],
    })
}

/// A mentioned user as a Mastodon `Mention`.
pub(super) fn mention(id: u64, login: &str, base: &str) -> Value {
    let url = format!("{base}/@{login}");
    json!({ "id": id.to_string(), "username": login, "acct": login, "url": url })
}

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

    #[test]
    fn times_are_iso8601_in_utc() {
        assert_eq!(iso8601(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(iso8601(1_796_566_208.123), "2026-12-06T14:10:08.123Z");
    }

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
