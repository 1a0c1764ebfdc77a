//! Paging: which page of a timeline, and cursors over lists of users.
//!
//! What each promises while writes go on (docs/api.md, *Paging*):
//! - `max_id` on a timeline: entries with ids up to it, in id order, which
//!   is every timeline's order (status ids are built from time: `ids`), so
//!   reading page after page by `max_id` never skips or repeats an entry.
//! - a cursor over a list of users: the position of the last entry shown
//!   (its score and member), so entries added or removed meanwhile move no
//!   one across a page boundary.
//! - `page`: an offset from the newest entry; entries added meanwhile
//!   shift the pages (an entry may repeat, or be skipped when entries are
//!   removed).

use super::handle::Store;
use super::plumbing::error::{parse_id, StoreResult};

/// Which page of a timeline to read.
#[derive(Debug, Clone, Copy)]
pub enum Page {
    /// 1-based page of `count` entries.
    Number(u64),
    /// Entries with ids at most this one.
    MaxId(u64),
}

/// Where a page of a list of users starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Cursor {
    /// At the first entry.
    Start,
    /// After the entry with this score and member (a `next_cursor`).
    After {
        /// The entry's score, as Redis wrote it.
        score: String,
        /// The entry's member (a user id).
        member: u64,
    },
    /// At this offset (cursors of versions before positions).
    Offset(u64),
}

impl Cursor {
    /// Reads a `cursor` parameter: `<score>_<member>` as `next_cursor`
    /// writes it, or a plain offset; `None` when it is neither.
    pub fn parse(raw: &str) -> Option<Cursor> {
        if let Some((score, member)) = raw.rsplit_once('_') {
            let finite = score.parse::<f64>().is_ok_and(f64::is_finite);
            let member = member.parse::<u64>().ok()?;
            return finite.then(|| Cursor::After {
                score: score.to_string(),
                member,
            });
        }
        if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        raw.parse().ok().map(Cursor::Offset)
    }

    fn write(score: &str, member: u64) -> String {
        format!("{score}_{member}")
    }
}

/// One page of a list of user ids (followers, following, likers, follow
/// requests), oldest first.
#[derive(Debug, Clone)]
pub struct IdPage {
    /// User ids.
    pub ids: Vec<u64>,
    /// Where the next page starts, if there is one.
    pub next_cursor: Option<String>,
}

/// A page of a ZSET of user ids, in score order (ties by member), from
/// `cursor`: `count` entries and the cursor of the next page.
pub(crate) async fn id_page(
    store: &Store,
    key: &str,
    cursor: &Cursor,
    count: usize,
) -> StoreResult<IdPage> {
    let mut conn = store.conn();
    let flat: Vec<String> = match cursor {
        Cursor::Offset(offset) => {
            let start = (*offset).min(isize::MAX as u64 / 2) as isize;
            redis::cmd("ZRANGE")
                .arg(key)
                .arg(start)
                .arg(start + count as isize)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await?
        }
        Cursor::Start | Cursor::After { .. } => {
            let (score, member) = match cursor {
                Cursor::After { score, member } => (score.clone(), member.to_string()),
                _ => ("-inf".to_string(), String::new()),
            };
            // The fan-out's exact cursor walk: entries strictly after
            // (score, member), whether or not that entry is still there.
            store
                .scripts
                .fanout_page
                .key(key)
                .arg(score)
                .arg(member)
                .arg(count + 1)
                .invoke_async(&mut conn)
                .await?
        }
    };
    let pairs: Vec<(u64, &str)> = flat
        .chunks_exact(2)
        .map(|p| Ok((parse_id(&p[0])?, p[1].as_str())))
        .collect::<StoreResult<_>>()?;
    let more = pairs.len() > count;
    let shown = &pairs[..pairs.len().min(count)];
    Ok(IdPage {
        next_cursor: more
            .then(|| shown.last().map(|(m, s)| Cursor::write(s, *m)))
            .flatten(),
        ids: shown.iter().map(|(m, _)| *m).collect(),
    })
}

/// A list of a user's, newest entry first (for the account export).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserList {
    /// Whom the user follows.
    Following,
    /// Who follows the user.
    Followers,
    /// Statuses the user likes.
    Likes,
}

#[cfg(test)]
mod tests {
    use super::Cursor;

    #[test]
    fn cursors_read_what_next_cursor_writes_and_old_offsets() {
        for (raw, want) in [
            (
                "1764073335.123_42",
                Some(Cursor::After {
                    score: "1764073335.123".into(),
                    member: 42,
                }),
            ),
            ("20", Some(Cursor::Offset(20))),
            ("", None),
            ("x_1", None),
            ("inf_1", None),
            ("1.5_", None),
            ("-3", None),
            ("1_2_3", None),
        ] {
            assert_eq!(Cursor::parse(raw), want, "{raw:?}");
        }
        assert_eq!(
            Cursor::parse(&Cursor::write("12.5", 7)),
            Some(Cursor::After {
                score: "12.5".into(),
                member: 7
            })
        );
    }
}
