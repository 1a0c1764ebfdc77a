//! Statuses and accounts of our API made into Mastodon's entities for one
//! caller: a repost's original fetched through our API (so the caller sees
//! it only if our API would show it; a repost of what they may not see is
//! left out), the authors and mentioned users read once per answer, and
//! the caller's marks (`favourited`, `reblogged`, `bookmarked`) read in
//! three commands for the whole answer.

use super::entities::{account, iso8601, mention, status, Marks, StatusParts};
use super::paging::{cursor_page, next_cursor};
use super::reply::{ok, unavailable, Refused, Reply};
use super::shared::id_of;
use super::shared::{Ctx, Mastodon};
use crate::auth::AuthUser;
use axum::http::{Method, StatusCode};
use futures::future::join_all;
use serde_json::json;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Most distinct users one answer reads (authors and mentions).
const MOST_USERS: usize = 400;

/// The caller's user id, if the request carries a live session's token.
pub(super) async fn viewer(m: &Mastodon, cx: &Ctx) -> Option<u64> {
    let token = cx.caller.token.as_deref()?;
    AuthUser::from_token(&m.app, token)
        .await
        .ok()
        .map(|a| a.uid)
}

/// One of our statuses as Mastodon's (`None`: a repost whose original the
/// caller may not see).
pub(super) async fn one(m: &Mastodon, cx: &Ctx, ours: Value) -> Result<Value, Refused> {
    many(m, cx, vec![ours])
        .await?
        .pop()
        .ok_or_else(|| super::reply::error(axum::http::StatusCode::NOT_FOUND, "Record not found"))
}

/// Our status `id` read through our API for the caller, as Mastodon's.
pub(super) async fn fetch(m: &Mastodon, cx: &Ctx, id: &str) -> Result<Value, Refused> {
    let ours = ok(m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/statuses/{id}"),
            &cx.caller,
            None,
        )
        .await)?;
    one(m, cx, ours).await
}

/// Our statuses as Mastodon's, in order; reposts of what the caller may
/// not see are left out (an author gone since is named by the status).
pub(super) async fn many(m: &Mastodon, cx: &Ctx, ours: Vec<Value>) -> Result<Vec<Value>, Refused> {
    if ours.is_empty() {
        return Ok(Vec::new());
    }
    // The originals of reposts, each read as the caller may see it.
    let wanted: Vec<String> = ours
        .iter()
        .filter_map(|s| s["repost_of"].as_str().map(str::to_string))
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let reads = wanted.iter().map(|id| async move {
        m.inner
            .call(
                Method::GET,
                &format!("/api/v1/statuses/{id}"),
                &cx.caller,
                None,
            )
            .await
    });
    let originals: HashMap<String, Value> = wanted
        .iter()
        .cloned()
        .zip(join_all(reads).await)
        .filter(|(_, a)| a.status.is_success())
        .map(|(id, a)| (id, a.body))
        .collect();
    let everything: Vec<&Value> = ours.iter().chain(originals.values()).collect();
    let people = People::read(m, &everything, &cx.base).await?;
    let ids: Vec<u64> = everything.iter().filter_map(|s| id_of(s, "id")).collect();
    let marks = read_marks(m, viewer(m, cx).await, &ids).await?;
    let made = |s: &Value, reblog: Option<Value>| -> Option<Value> {
        // An author this answer could not read (gone a moment ago; our API
        // judged the status readable): the account its status names.
        let author = match people.accounts.get(&id_of(s, "uid")?) {
            Some(a) => a.clone(),
            None => account(
                &serde_json::json!({"id": s["uid"], "login": s["login"], "name": s["login"]}),
                &cx.base,
            ),
        };
        let mentions = s["mentions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|l| l.as_str())
                    .filter_map(|l| {
                        let id = people.logins.get(&l.to_lowercase())?;
                        Some(mention(*id, l, &cx.base))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let marks = id_of(s, "id")
            .and_then(|id| marks.get(&id).copied())
            .unwrap_or_default();
        Some(status(
            s,
            StatusParts {
                account: author,
                mentions,
                marks,
                reblog,
                base: &cx.base,
            },
        ))
    };
    Ok(ours
        .iter()
        .filter_map(|s| match s["repost_of"].as_str() {
            Some(orig) => {
                let original = made(originals.get(orig)?, None)?;
                made(s, Some(original))
            }
            None => made(s, None),
        })
        .collect())
}

/// The users an answer names: the authors as `Account`s by id, and the
/// mentioned logins' ids.
struct People {
    accounts: HashMap<u64, Value>,
    logins: HashMap<String, u64>,
}

impl People {
    async fn read(m: &Mastodon, statuses: &[&Value], base: &str) -> Result<People, Refused> {
        let mut uids: Vec<u64> = statuses.iter().filter_map(|s| id_of(s, "uid")).collect();
        uids.sort_unstable();
        uids.dedup();
        uids.truncate(MOST_USERS);
        let mut logins: Vec<String> = statuses
            .iter()
            .filter_map(|s| s["mentions"].as_array())
            .flatten()
            .filter_map(|l| l.as_str().map(str::to_lowercase))
            .collect();
        logins.sort_unstable();
        logins.dedup();
        logins.truncate(MOST_USERS);
        let users = m.app.store.users();
        let found = users.many(&uids).await.map_err(|e| unavailable(&e))?;
        let ids = join_all(logins.iter().map(|l| users.lookup(l))).await;
        Ok(People {
            accounts: found
                .iter()
                .filter_map(|u| {
                    let json = serde_json::to_value(u).ok()?;
                    Some((u.id.get(), account(&json, base)))
                })
                .collect(),
            logins: logins
                .into_iter()
                .zip(ids)
                .filter_map(|(l, id)| Some((l, id.ok()??)))
                .collect(),
        })
    }
}

/// The caller's marks on each status of `ids` (none without a caller).
async fn read_marks(
    m: &Mastodon,
    viewer: Option<u64>,
    ids: &[u64],
) -> Result<HashMap<u64, Marks>, Refused> {
    let Some(uid) = viewer else {
        return Ok(HashMap::new());
    };
    let store = &m.app.store;
    let (liked, reposted, bookmarked) = futures::join!(
        store.likes().liked(uid, ids),
        store.reposts().reposted_by(uid, ids),
        store.bookmarks().marked(uid, ids),
    );
    let (liked, reposted, bookmarked) = (
        liked.map_err(|e| unavailable(&e))?,
        reposted.map_err(|e| unavailable(&e))?,
        bookmarked.map_err(|e| unavailable(&e))?,
    );
    Ok(ids
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            (
                id,
                Marks {
                    favourited: liked.get(i).copied().unwrap_or(false),
                    reblogged: reposted.get(i).copied().unwrap_or(false),
                    bookmarked: bookmarked.get(i).copied().unwrap_or(false),
                },
            )
        })
        .collect())
}

/// Our types, each with the Mastodon type it is shown as.
pub(super) const TYPES: [(&str, &str); 6] = [
    ("follow", "follow"),
    ("follow_request", "follow_request"),
    ("like", "favourite"),
    ("repost", "reblog"),
    ("mention", "mention"),
    ("reply", "mention"),
];

/// Our type as Mastodon's (`None`: no Mastodon type).
pub(super) fn theirs(ours: &str) -> Option<&'static str> {
    TYPES.iter().find(|(o, _)| *o == ours).map(|(_, t)| *t)
}

/// Our notifications as Mastodon's, their statuses made once for all.
pub(super) async fn made(
    m: &Mastodon,
    cx: &Ctx,
    ours: Vec<Value>,
) -> Result<Vec<Value>, super::reply::Refused> {
    let statuses: Vec<Value> = ours
        .iter()
        .filter(|n| n["status"].is_object())
        .map(|n| n["status"].clone())
        .collect();
    let rendered = many(m, cx, statuses).await?;
    let by_id: std::collections::HashMap<&str, &Value> = rendered
        .iter()
        .filter_map(|s| Some((s["id"].as_str()?, s)))
        .collect();
    Ok(ours
        .iter()
        .filter_map(|n| {
            let kind = theirs(n["type"].as_str()?)?;
            let status = match n["status"]["id"].as_str() {
                Some(id) => Some((*by_id.get(id)?).clone()),
                None => None,
            };
            let id = n["id"].as_str()?;
            Some(json!({
                "id": id,
                "type": kind,
                "created_at": iso8601(n["at"].as_f64().unwrap_or(0.0)),
                "account": account(&n["account"], &cx.base),
                "status": status,
                "group_key": format!("ungrouped-{id}"),
            }))
        })
        .collect())
}

/// Users of our API (`User` JSON) as Mastodon's `Account`s.
pub(super) fn accounts(users: &Value, cx: &Ctx) -> Vec<Value> {
    users
        .as_array()
        .map(|a| a.iter().map(|u| account(u, &cx.base)).collect())
        .unwrap_or_default()
}

/// The account `q` names by its login, as an `Account`, if there is one
/// the caller may see.
pub(super) async fn find(
    m: &Mastodon,
    cx: &Ctx,
    q: &str,
) -> Result<Option<Value>, super::reply::Refused> {
    let host = cx.base.split("://").nth(1).unwrap_or_default().to_string();
    let acct = q.trim().trim_start_matches('@');
    let login = match acct.split_once('@') {
        Some((login, domain)) if domain.eq_ignore_ascii_case(&host) => login,
        Some(_) => return Ok(None),
        None => acct,
    };
    if login.is_empty()
        || login.len() > 64
        || !login
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Ok(None);
    }
    let answer = m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/users/lookup?login={login}"),
            &cx.caller,
            None,
        )
        .await;
    if answer.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    Ok(Some(account(&ok(answer)?, &cx.base)))
}

/// The accounts of the caller's follows and followers read for a search
/// by prefix, at most this many of each.
const KNOWN_PEOPLE: usize = 200;

/// Accounts for a search `q`, at most `limit`: the account whose login is
/// `q` first (as [`find`]), then the caller's follows and then followers
/// whose login or display name starts with `q` (any case), as a client's
/// mention box asks while a name is typed; `following`: only accounts the
/// caller follows. There is no directory of every login to search by
/// prefix beyond these.
pub(super) async fn search_accounts(
    m: &Mastodon,
    cx: &Ctx,
    q: &str,
    limit: usize,
    following: bool,
) -> Result<Vec<Value>, super::reply::Refused> {
    let mut found: Vec<Value> = find(m, cx, q).await?.into_iter().collect();
    let prefix = q.trim().trim_start_matches('@').to_lowercase();
    if prefix.is_empty() || prefix.contains('@') || cx.caller.token.is_none() {
        return Ok(if following { Vec::new() } else { found });
    }
    let me = m
        .inner
        .call(Method::GET, "/api/v1/me", &cx.caller, None)
        .await;
    let Some(me) = me.body["id"].as_str().filter(|_| me.status.is_success()) else {
        return Ok(found);
    };
    let lists: &[&str] = if following {
        &["following"]
    } else {
        &["following", "followers"]
    };
    let mut known: Vec<Value> = Vec::new();
    for list in lists {
        let path = format!("/api/v1/users/{me}/{list}?count={KNOWN_PEOPLE}");
        let answer = m.inner.call(Method::GET, &path, &cx.caller, None).await;
        if let Some(users) = answer.body["users"].as_array() {
            known.extend(users.iter().cloned());
        }
    }
    if following {
        // The exact match only if followed.
        found.retain(|a| known.iter().any(|u| u["id"] == a["id"]));
    }
    let starts = |v: &Value| {
        v.as_str()
            .is_some_and(|t| t.to_lowercase().starts_with(&prefix))
    };
    for user in known {
        if found.len() >= limit {
            break;
        }
        let fits = starts(&user["login"]) || starts(&user["name"]);
        if fits && !found.iter().any(|a| a["id"] == user["id"]) {
            found.push(account(&user, &cx.base));
        }
    }
    found.truncate(limit);
    Ok(found)
}

/// Our `{users, next_cursor}` list at `path` as accounts paged by `Link`.
pub(super) async fn users_page(m: &Mastodon, cx: &Ctx, path: &str) -> Reply {
    let limit = cx
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(40)
        .clamp(1, 80);
    let mut url = format!("{path}?count={limit}");
    if let Some(cursor) = cx.param("max_id").filter(|c| !c.is_empty()) {
        url.push('&');
        url.push_str(&serde_urlencoded::to_string([("cursor", cursor)]).unwrap_or_default());
    }
    let answer = m.inner.call(Method::GET, &url, &cx.caller, None).await;
    if answer.status == StatusCode::BAD_REQUEST && cx.param("max_id").is_some() {
        // A cursor that is not one of ours names no place: nothing there.
        return Ok(cursor_page(cx, Vec::new(), None));
    }
    let next = next_cursor(&answer);
    let page = ok(answer)?;
    Ok(cursor_page(
        cx,
        accounts(&page["users"], cx),
        next.as_deref(),
    ))
}

/// Our message (of a conversation whose participants are `people`, our
/// users) as a Mastodon `direct` status.
pub(super) fn message_status(msg: &Value, people: &[Value], base: &str) -> Value {
    let sender = msg["uid"].as_str().unwrap_or_default();
    let author = people
        .iter()
        .find(|u| u["id"].as_str() == Some(sender))
        .cloned()
        .unwrap_or_else(|| json!({"id": sender, "login": msg["login"], "name": msg["login"]}));
    let others: Vec<&Value> = people
        .iter()
        .filter(|u| u["id"].as_str() != Some(sender))
        .collect();
    let ours = json!({
        "id": msg["id"],
        "login": msg["login"],
        "message": msg["text"],
        "posted": msg["sent"],
        "hashtags": [],
        "mentions": others.iter().map(|u| u["login"].clone()).collect::<Vec<_>>(),
    });
    let mentions = others
        .iter()
        .filter_map(|u| {
            let id: u64 = u["id"].as_str()?.parse().ok()?;
            Some(mention(id, u["login"].as_str()?, base))
        })
        .collect();
    let mut s = status(
        &ours,
        StatusParts {
            account: account(&author, base),
            mentions,
            marks: Marks::default(),
            reblog: None,
            base,
        },
    );
    s["visibility"] = json!("direct");
    s
}

/// Our conversation, as `me` sees it, as Mastodon's `Conversation`.
pub(super) fn conversation(ours: &Value, me: u64, base: &str) -> Value {
    let people: Vec<Value> = ours["participants"].as_array().cloned().unwrap_or_default();
    let me = me.to_string();
    let accounts: Vec<Value> = people
        .iter()
        .filter(|u| u["id"].as_str() != Some(me.as_str()))
        .map(|u| account(u, base))
        .collect();
    let last = match &ours["last_message"] {
        Value::Null => Value::Null,
        msg => message_status(msg, &people, base),
    };
    json!({
        "id": ours["id"],
        "unread": ours["unread"].as_u64().unwrap_or(0) > 0,
        "accounts": accounts,
        "last_status": last,
    })
}

/// A `direct_message` event of ours, for the reader of `cx`, as the
/// `conversation` it is now (`None`: they are no longer in it).
pub(super) async fn of_message(m: &Mastodon, cx: &Ctx, event: &Value) -> Option<String> {
    let uid = viewer(m, cx).await?;
    let cid = event["message"]["conversation_id"].as_str()?;
    let answer = m
        .inner
        .call(
            Method::GET,
            &format!("/api/v1/conversations/{cid}"),
            &cx.caller,
            None,
        )
        .await;
    answer
        .status
        .is_success()
        .then(|| conversation(&answer.body, uid, &cx.base).to_string())
}

/// The caller's conversations searched for a message named by id (a
/// direct status read, or answered, by a Mastodon client).
pub(super) const RECENT_CONVERSATIONS: usize = 200;

/// Messages of a conversation read on each side of one read as a status.
const THREAD_SIDE: usize = 40;

/// A message read as Mastodon reads a direct status: it, and its
/// conversation's messages before and after it (each oldest first).
pub(super) struct Thread {
    pub(super) status: Value,
    pub(super) before: Vec<Value>,
    pub(super) after: Vec<Value>,
}

/// Which of `uid`'s [`RECENT_CONVERSATIONS`] most recent conversations
/// holds the message `id` (`None`: none of them, or no message id).
pub(super) async fn conversation_of(
    m: &Mastodon,
    uid: u64,
    id: &str,
) -> Result<Option<u64>, Refused> {
    let Ok(mid) = id.parse::<u64>() else {
        return Ok(None);
    };
    m.app
        .store
        .conversations()
        .holding(uid, mid, RECENT_CONVERSATIONS)
        .await
        .map_err(|e| unavailable(&e))
}

/// The members of conversation `cid` as our API shows them to the caller
/// (`None`: no conversation of theirs).
pub(super) async fn participants(
    m: &Mastodon,
    cx: &Ctx,
    cid: u64,
) -> Result<Option<Vec<Value>>, Refused> {
    let path = format!("/api/v1/conversations/{cid}");
    let found = m.inner.call(Method::GET, &path, &cx.caller, None).await;
    if found.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    Ok(Some(
        ok(found)?["participants"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    ))
}

/// The message `id` as a direct status with its thread, for a caller in
/// its conversation (one of their [`RECENT_CONVERSATIONS`] most recent;
/// our API judges that they are in it); `None`: no message of theirs.
pub(super) async fn message_thread(
    m: &Mastodon,
    cx: &Ctx,
    id: &str,
) -> Result<Option<Thread>, Refused> {
    let Some(uid) = viewer(m, cx).await else {
        return Ok(None);
    };
    let Some(cid) = conversation_of(m, uid, id).await? else {
        return Ok(None);
    };
    let Some(people) = participants(m, cx, cid).await? else {
        return Ok(None);
    };
    let mid: u64 = id.parse().unwrap_or_default();
    let get =
        |path: String| async move { m.inner.call(Method::GET, &path, &cx.caller, None).await };
    let messages = format!("/api/v1/conversations/{cid}/messages");
    let older = ok(get(format!("{messages}?max_id={mid}&count={}", THREAD_SIDE + 1)).await)?;
    let newest = ok(get(format!("{messages}?count={THREAD_SIDE}")).await)?;
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let older = list(&older);
    let Some(this) = older.first().filter(|msg| id_of(msg, "id") == Some(mid)) else {
        return Ok(None);
    };
    let said = |msg: &Value| message_status(msg, &people, &cx.base);
    Ok(Some(Thread {
        status: said(this),
        before: older.iter().skip(1).rev().map(said).collect(),
        after: list(&newest)
            .iter()
            .rev()
            .filter(|msg| id_of(msg, "id").is_some_and(|id| id > mid))
            .map(said)
            .collect(),
    }))
}
