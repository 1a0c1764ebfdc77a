//! Our JSON turned into Mastodon's entities (the 4.3 documentation's
//! shapes): ids as strings, times as ISO 8601, `acct` and the counts.

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
        super::content::html(
            message,
            &super::content::Links {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_iso8601_in_utc() {
        assert_eq!(iso8601(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(iso8601(1_796_566_208.123), "2026-12-06T14:10:08.123Z");
    }
}
