//! Notifications: each user's newest 1,000, in their slot (a ZSET of ids,
//! a HASH of their JSON, a HASH of what each is of, so the same like or
//! follow is notified once and its undoing finds it), and a read marker
//! that only moves forward. They are made by the notifier ([`crate::notifier`])
//! from the events of the log, shard by shard; its leases and positions are
//! in each shard's slot ([`store::events::shard_work`](crate::store::events::shard_work)).

use crate::model::now;
use crate::model::{timeline_score, Id, Notification, Status, User};
use crate::store::handle::Store;
use crate::store::plumbing::error::{parse_id, StoreError, StoreResult};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

/// Notifications a user keeps.
pub(crate) const MAX_NOTIFICATIONS: usize = 1_000;

/// The scripts the notifier runs in pipelines.
const NOTIFY_ADD: &str = include_str!("lua/notify_add.lua");
const NOTIFY_REMOVE: &str = include_str!("lua/notify_remove.lua");

/// A notification as stored: who and what by id, read into a
/// [`Notification`] when it is shown.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stored {
    /// Its id.
    pub id: Id,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// When.
    pub at: f64,
    /// Who did it.
    pub account: Id,
    /// The status it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Id>,
    /// For a repost: the repost (while it stands, the notification does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Id>,
    /// For a `group_request`: the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Id>,
    /// For a `report_resolved`: the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Id>,
    /// What it is of (`like:<who>:<status>`, `follow:<who>`, ...).
    pub key: String,
}

/// A user's notifications (`Store::notifications`).
#[derive(Clone, Copy)]
pub struct Notifications<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Notifications<'_> {
    /// Adds each `(uid, n)` unless `uid` has one of its key already: for
    /// each, the id it was added under when this call added it (its own,
    /// or the next free one when another of `uid`'s holds it). One round trip for all (scripts
    /// sent whole, `EVAL`, so a pipeline never meets a script cache that
    /// lacks them).
    pub async fn add(self, adds: &[(u64, &Stored)]) -> StoreResult<Vec<Option<Id>>> {
        if adds.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for (uid, n) in adds {
            let json = serde_json::to_string(n).map_err(|e| StoreError::Internal(e.to_string()))?;
            let score =
                crate::store::plumbing::ids::posted_of(n.id.get()).map_or(0, timeline_score);
            pipe.cmd("EVAL")
                .arg(NOTIFY_ADD)
                .arg(3)
                .arg(self.store.keys.notifications(*uid))
                .arg(self.store.keys.notification_data(*uid))
                .arg(self.store.keys.notification_keys(*uid))
                .arg(&n.key)
                .arg(n.id)
                .arg(score)
                .arg(json)
                .arg(MAX_NOTIFICATIONS);
        }
        let mut conn = self.store.conn();
        let added: Vec<String> = pipe.query_async(&mut conn).await?;
        Ok(added.into_iter().map(|id| id.parse().ok()).collect())
    }

    /// Takes away each `(uid, key)` notification: for each, its id if there
    /// was one. One round trip for all.
    pub async fn remove(self, removes: &[(u64, &str)]) -> StoreResult<Vec<Option<String>>> {
        if removes.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for (uid, key) in removes {
            pipe.cmd("EVAL")
                .arg(NOTIFY_REMOVE)
                .arg(3)
                .arg(self.store.keys.notifications(*uid))
                .arg(self.store.keys.notification_data(*uid))
                .arg(self.store.keys.notification_keys(*uid))
                .arg(*key);
        }
        let mut conn = self.store.conn();
        Ok(pipe.query_async(&mut conn).await?)
    }

    /// Takes away `uid`'s notification `id` (as [`Notifications::remove`]
    /// takes one away by what it is of); whether there was one.
    pub async fn dismiss(self, uid: u64, id: &str) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let data: Option<String> = conn
            .hget(self.store.keys.notification_data(uid), id)
            .await?;
        let Some(stored) = data.and_then(|j| serde_json::from_str::<Stored>(&j).ok()) else {
            return Ok(false);
        };
        let removed = self.remove(&[(uid, &stored.key)]).await?;
        Ok(removed.first().is_some_and(Option::is_some))
    }

    /// Takes away every notification of `uid` (at most
    /// [`MAX_NOTIFICATIONS`] are kept), each as [`Notifications::remove`]
    /// does.
    pub async fn clear(self, uid: u64) -> StoreResult<()> {
        let all = self.below(uid, None, MAX_NOTIFICATIONS).await?;
        let removes: Vec<(u64, &str)> = all.iter().map(|n| (uid, n.key.as_str())).collect();
        for chunk in removes.chunks(100) {
            self.remove(chunk).await?;
        }
        Ok(())
    }

    /// Up to `n` of `uid`'s notifications with ids below `below` (all:
    /// `None`), newest first.
    pub async fn below(self, uid: u64, below: Option<u64>, n: usize) -> StoreResult<Vec<Stored>> {
        let key = self.store.keys.notifications(uid);
        let ids: Vec<String> = match below {
            None => {
                let mut conn = self.store.conn();
                conn.zrevrange(&key, 0, n as isize - 1).await?
            }
            Some(0 | 1) => return Ok(Vec::new()),
            Some(b) => self.store.statuses().ids_up_to(&key, b - 1, n).await?,
        };
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.store.conn();
        let found: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(self.store.keys.notification_data(uid))
            .arg(&ids)
            .query_async(&mut conn)
            .await?;
        Ok(found
            .into_iter()
            .flatten()
            .filter_map(|j| serde_json::from_str(&j).ok())
            .collect())
    }

    /// `uid`'s read marker (0: nothing read).
    pub async fn marker(self, uid: u64) -> StoreResult<u64> {
        let mut conn = self.store.conn();
        let m: Option<String> = conn.get(self.store.keys.notification_marker(uid)).await?;
        Ok(m.and_then(|m| m.parse().ok()).unwrap_or(0))
    }

    /// Moves `uid`'s read marker to `id` (at most their newest
    /// notification) unless it is past it already.
    pub async fn mark_read(self, uid: u64, id: u64) -> StoreResult<u64> {
        let mut conn = self.store.conn();
        let now: String = self
            .store
            .scripts
            .notify_read
            .key(self.store.keys.notification_marker(uid))
            .key(self.store.keys.notifications(uid))
            .arg(id.to_string())
            .invoke_async(&mut conn)
            .await?;
        parse_id(&now)
    }

    /// `uid`'s home timeline marker: the last read status id, when it was
    /// set and how many times (`None`: never).
    pub async fn home_marker(self, uid: u64) -> StoreResult<Option<(String, f64, u64)>> {
        let mut conn = self.store.conn();
        let (id, at, version): (Option<String>, Option<f64>, Option<u64>) = redis::cmd("HMGET")
            .arg(self.store.keys.markers(uid))
            .arg("home")
            .arg("home_at")
            .arg("home_version")
            .query_async(&mut conn)
            .await?;
        Ok(id.map(|id| (id, at.unwrap_or(0.0), version.unwrap_or(1))))
    }

    /// Sets `uid`'s home timeline marker to `id` (one `MULTI` in the
    /// user's slot): when, and the version it now has.
    pub async fn set_home_marker(self, uid: u64, id: &str) -> StoreResult<(f64, u64)> {
        let key = self.store.keys.markers(uid);
        let at = now();
        let mut conn = self.store.conn();
        let (_, version): ((), u64) = redis::pipe()
            .atomic()
            .hset_multiple(
                &key,
                &[("home", id.to_string()), ("home_at", at.to_string())],
            )
            .hincr(&key, "home_version", 1)
            .query_async(&mut conn)
            .await?;
        Ok((at, version))
    }

    /// The accounts and statuses `stored` name, read in two pipelines;
    /// those of accounts gone or suspended are left out.
    pub async fn hydrate(self, stored: Vec<Stored>) -> StoreResult<Vec<(Stored, Notification)>> {
        let shown = self.hydrate_each(&stored).await?;
        Ok(stored
            .into_iter()
            .zip(shown)
            .filter_map(|(s, n)| Some((s, n?)))
            .collect())
    }

    /// Each of `stored` as its user reads it, `None` for one whose account
    /// is gone or suspended or whose status is gone.
    pub async fn hydrate_each(self, stored: &[Stored]) -> StoreResult<Vec<Option<Notification>>> {
        let mut uids: Vec<u64> = stored.iter().map(|s| s.account.get()).collect();
        uids.sort_unstable();
        uids.dedup();
        let mut users: std::collections::HashMap<Id, User> = std::collections::HashMap::new();
        for u in self.store.users().many(&uids).await? {
            users.insert(u.id, u);
        }
        let mut sids: Vec<u64> = stored
            .iter()
            .filter_map(|s| s.status.map(Id::get))
            .collect();
        sids.sort_unstable();
        sids.dedup();
        let mut statuses: std::collections::HashMap<u64, Status> = std::collections::HashMap::new();
        for (sid, s) in self.store.statuses().many(&sids).await? {
            if let Some(s) = s {
                statuses.insert(sid, s.status.clone());
            }
        }
        Ok(stored
            .iter()
            .map(|s| {
                let account = users.get(&s.account)?.clone();
                let status = match s.status {
                    Some(sid) => Some(statuses.get(&sid.get())?.clone()),
                    None => None,
                };
                Some(Notification {
                    id: s.id,
                    kind: s.kind.clone(),
                    at: s.at,
                    account,
                    status,
                    group_id: s.group,
                    report_id: s.report,
                })
            })
            .collect())
    }

    /// Where the one notifier of the layout before the notifier went by
    /// shards had got to (`None`: none ran): where each shard's
    /// notifications start when no process has made them yet
    /// ([`store::events::shard_work`](crate::store::events::shard_work)).
    pub async fn notifier_position(self) -> StoreResult<Option<String>> {
        let mut conn = self.store.conn();
        Ok(conn.get(self.store.keys.notifier_position()).await?)
    }
}
