//! Lists: a user's own lists of accounts, each with a timeline and a
//! stream.
//!
//! Every key of a list is its owner's (`{<uid>}`: the lists ZSET, each
//! list's HASH and members ZSET), so each change is one script in one slot
//! and another user's list id names no key at all (404). A list timeline
//! is read, not written: the members' profile timelines merged at read
//! time ([`Lists::page`]), so a post costs nothing more for being
//! listed and a page is exact under concurrent writes (a page by `max_id`
//! holds what the members' profiles hold below it). A change of members is
//! announced to every hub (`list_changed`, with the list's version) so that
//! open streams of the list follow it.

use crate::model::{now, timeline_score, Event, Id, HOME_CAP};
use crate::store::entities::statuses::Shown;
use crate::store::handle::Store;
use crate::store::paging::{id_page, Cursor, IdPage};
use crate::store::plumbing::error::{parse_id, StoreError, StoreResult};
use crate::store::plumbing::ids::posted_of;
use redis::AsyncCommands;

/// Lists a user keeps at most.
pub(crate) const MAX_LISTS: usize = 100;
/// Members a list holds at most.
pub(crate) const MAX_MEMBERS: usize = 5_000;
/// Users one call adds or removes at most.
pub(crate) const MAX_MEMBERS_A_CALL: usize = 100;

/// One list, as its owner reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListInfo {
    /// The list.
    pub id: u64,
    /// Its title.
    pub title: String,
    /// How many members it has.
    pub members: u64,
}

/// A list's members at one version (what a stream of it starts from).
#[derive(Debug, Clone)]
pub struct Members {
    /// The list's version when read.
    pub version: u64,
    /// The members.
    pub ids: Vec<u64>,
}

/// Whether a member change adds or removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChange {
    /// Users become members.
    Add,
    /// Users are members no more.
    Remove,
}

/// A user's lists (`Store::lists`).
#[derive(Clone, Copy)]
pub struct Lists<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Lists<'_> {
    /// Makes a list titled `title` for `uid` (with `idem`, a retry answers
    /// the first call's list). Past [`MAX_LISTS`], `too_many_lists`.
    pub async fn create(self, uid: u64, title: &str, idem: Option<&str>) -> StoreResult<ListInfo> {
        let (lid, _) = self.store.mint().snowflake().await?;
        let lists = self.store.keys.lists(uid);
        let idem_key = idem.map_or_else(|| lists.clone(), |k| self.store.keys.list_idem(uid, k));
        let mut conn = self.store.conn();
        let made: redis::Value = self
            .store
            .scripts
            .list_create
            .key(&lists)
            .key(self.store.keys.list(uid, lid))
            .key(&idem_key)
            .arg(lid)
            .arg(title)
            .arg(now())
            .arg(MAX_LISTS)
            .arg(if idem.is_some() { "1" } else { "0" })
            .invoke_async(&mut conn)
            .await?;
        let made: u64 = redis::from_redis_value::<String>(made.clone())
            .ok()
            .and_then(|s| s.parse().ok())
            .or_else(|| redis::from_redis_value::<u64>(made).ok())
            .unwrap_or(0);
        if made == 0 {
            return Err(StoreError::Invalid(
                "too_many_lists",
                format!("A user keeps at most {MAX_LISTS} lists; delete one first."),
            ));
        }
        self.get(uid, made).await
    }

    /// `uid`'s list `lid` (`NotFound` when they have none by that id).
    pub async fn get(self, uid: u64, lid: u64) -> StoreResult<ListInfo> {
        let mut conn = self.store.conn();
        let (title, members): (Option<String>, u64) = redis::pipe()
            .hget(self.store.keys.list(uid, lid), "title")
            .zcard(self.store.keys.list_members(uid, lid))
            .query_async(&mut conn)
            .await?;
        let title = title.ok_or(StoreError::NotFound("list"))?;
        Ok(ListInfo {
            id: lid,
            title,
            members,
        })
    }

    /// Every list of `uid`'s, oldest first.
    pub async fn of(self, uid: u64) -> StoreResult<Vec<ListInfo>> {
        let mut conn = self.store.conn();
        let ids: Vec<String> = conn.zrange(self.store.keys.lists(uid), 0, -1).await?;
        let ids: Vec<u64> = ids
            .iter()
            .map(|s| parse_id(s))
            .collect::<StoreResult<_>>()?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for &lid in &ids {
            pipe.hget(self.store.keys.list(uid, lid), "title")
                .zcard(self.store.keys.list_members(uid, lid));
        }
        let found: Vec<(Option<String>, u64)> = pipe.query_async(&mut conn).await?;
        Ok(ids
            .into_iter()
            .zip(found)
            .filter_map(|(id, (title, members))| {
                Some(ListInfo {
                    id,
                    title: title?,
                    members,
                })
            })
            .collect())
    }

    /// Renames `uid`'s list `lid`.
    pub async fn rename(self, uid: u64, lid: u64, title: &str) -> StoreResult<ListInfo> {
        let mut conn = self.store.conn();
        let done: i64 = self
            .store
            .scripts
            .list_title
            .key(self.store.keys.list(uid, lid))
            .arg(title)
            .invoke_async(&mut conn)
            .await?;
        if done == 0 {
            return Err(StoreError::NotFound("list"));
        }
        self.get(uid, lid).await
    }

    /// Deletes `uid`'s list `lid`; its open streams end.
    pub async fn delete(self, uid: u64, lid: u64) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let version: i64 = self
            .store
            .scripts
            .list_drop
            .key(self.store.keys.lists(uid))
            .key(self.store.keys.list(uid, lid))
            .key(self.store.keys.list_members(uid, lid))
            .arg(lid)
            .invoke_async(&mut conn)
            .await?;
        if version < 0 {
            return Err(StoreError::NotFound("list"));
        }
        self.announce(uid, lid, version as u64, &[], MemberChange::Remove, true)
            .await
    }

    /// Adds `ids` to `uid`'s list `lid` or takes them out (existence and
    /// blocks are the caller's to check first). Returns the users whose
    /// membership changed. An add past [`MAX_MEMBERS`] changes nothing
    /// (`too_many_members`).
    pub async fn change_members(
        self,
        uid: u64,
        lid: u64,
        change: MemberChange,
        ids: &[u64],
    ) -> StoreResult<Vec<u64>> {
        if ids.is_empty() {
            self.get(uid, lid).await?;
            return Ok(Vec::new());
        }
        let mut conn = self.store.conn();
        let mut call = self.store.scripts.list_members.prepare_invoke();
        call.key(self.store.keys.list(uid, lid))
            .key(self.store.keys.list_members(uid, lid))
            .arg(match change {
                MemberChange::Add => "add",
                MemberChange::Remove => "remove",
            })
            .arg(MAX_MEMBERS)
            .arg(now());
        for id in ids {
            call.arg(id);
        }
        let answer: redis::Value = call.invoke_async(&mut conn).await?;
        let answer: Vec<i64> = match redis::from_redis_value::<i64>(answer.clone()) {
            Ok(-1) => return Err(StoreError::NotFound("list")),
            Ok(_) => {
                return Err(StoreError::Invalid(
                    "too_many_members",
                    format!("A list holds at most {MAX_MEMBERS} members; remove some first."),
                ))
            }
            Err(_) => {
                redis::from_redis_value(answer).map_err(|e| StoreError::Internal(e.to_string()))?
            }
        };
        let version = answer.first().copied().unwrap_or(0).max(0) as u64;
        let changed: Vec<u64> = answer.iter().skip(1).map(|&i| i as u64).collect();
        if !changed.is_empty() {
            self.announce(uid, lid, version, &changed, change, false)
                .await?;
        }
        Ok(changed)
    }

    /// Tells every process's hub of a change to a list.
    async fn announce(
        self,
        owner: u64,
        lid: u64,
        version: u64,
        ids: &[u64],
        change: MemberChange,
        deleted: bool,
    ) -> StoreResult<()> {
        let ids: Vec<Id> = ids.iter().map(|&i| Id(i)).collect();
        let (added, removed) = match change {
            MemberChange::Add => (ids, Vec::new()),
            MemberChange::Remove => (Vec::new(), ids),
        };
        let body = crate::store::events::body(&Event::ListChanged {
            owner: Id(owner),
            list_id: Id(lid),
            version,
            added,
            removed,
            deleted,
        });
        self.store.events().emit(&body).await?;
        Ok(())
    }

    /// Which of `ids` are members of `uid`'s list `lid`.
    pub async fn are_members(self, uid: u64, lid: u64, ids: &[u64]) -> StoreResult<Vec<bool>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.store.conn();
        let scores: Vec<Option<f64>> = redis::cmd("ZMSCORE")
            .arg(self.store.keys.list_members(uid, lid))
            .arg(ids)
            .query_async(&mut conn)
            .await?;
        Ok(scores.into_iter().map(|s| s.is_some()).collect())
    }

    /// Every member of `uid`'s list `lid`, with the list's version
    /// (`NotFound` for no such list).
    pub async fn members(self, uid: u64, lid: u64) -> StoreResult<Members> {
        let mut conn = self.store.conn();
        let (version, ids): (Option<u64>, Vec<String>) = redis::pipe()
            .hget(self.store.keys.list(uid, lid), "version")
            .zrange(self.store.keys.list_members(uid, lid), 0, -1)
            .query_async(&mut conn)
            .await?;
        let version = version.ok_or(StoreError::NotFound("list"))?;
        Ok(Members {
            version,
            ids: ids
                .iter()
                .map(|s| parse_id(s))
                .collect::<StoreResult<_>>()?,
        })
    }

    /// A page of the members of `uid`'s list `lid`, oldest member first.
    pub async fn member_page(
        self,
        uid: u64,
        lid: u64,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<IdPage> {
        self.get(uid, lid).await?;
        id_page(
            self.store,
            &self.store.keys.list_members(uid, lid),
            cursor,
            count,
        )
        .await
    }

    /// Deletes every list of `uid`'s (their account is going).
    pub(crate) async fn drop_all(self, uid: u64) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let ids: Vec<String> = conn.zrange(self.store.keys.lists(uid), 0, -1).await?;
        for id in ids {
            match self.delete(uid, parse_id(&id)?).await {
                Ok(()) | Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A page of the timeline of `uid`'s list `lid`: the members' statuses
    /// (their profile timelines: posts and reposts, not group statuses),
    /// newest first, paged by `page` (the newest [`HOME_CAP`], as a home)
    /// or `max_id` (at most that id). Visibility is the caller's to judge.
    pub async fn page(
        self,
        uid: u64,
        lid: u64,
        page: crate::store::paging::Page,
        count: usize,
    ) -> StoreResult<Vec<Shown>> {
        let members = self.members(uid, lid).await?.ids;
        let (skip, max) = match page {
            crate::store::paging::Page::Number(n) => {
                let skip = (n.saturating_sub(1)).saturating_mul(count as u64);
                if skip >= HOME_CAP as u64 {
                    return Ok(Vec::new());
                }
                (skip as usize, u64::MAX)
            }
            crate::store::paging::Page::MaxId(max) => (0, max),
        };
        let want = (skip + count).min(HOME_CAP + count);
        let ids = self.merged_profiles(&members, max, want).await?;
        let ids: Vec<u64> = ids.into_iter().skip(skip).take(count).collect();
        let found = self.store.statuses().many(&ids).await?;
        self.store
            .statuses()
            .shown(found.into_iter().filter_map(|(_, s)| s).collect())
            .await
    }

    /// The newest `want` status ids at most `max` of the profile timelines
    /// of `members`, merged, newest first. Each member's profile is read
    /// in rounds: first a share of `want` each, then, for those whose
    /// share ran out above the current cut (the `want`-th newest id read),
    /// twice as many below what they gave, until none can hold an id above
    /// the cut: exact, and for a list of many members about `want` ids
    /// read in all rather than `want` a member.
    async fn merged_profiles(
        self,
        members: &[u64],
        max: u64,
        want: usize,
    ) -> StoreResult<Vec<u64>> {
        if members.is_empty() || want == 0 {
            return Ok(Vec::new());
        }
        let mut share = (2 * want / members.len()).clamp(8, want.max(8));
        // Each member still read: (member, the oldest id it gave).
        let mut open: Vec<(u64, u64)> = members.iter().map(|&m| (m, max)).collect();
        let mut all: Vec<u64> = Vec::new();
        let mut first = true;
        while !open.is_empty() {
            let got = self.profiles_below(&open, share, first).await?;
            first = false;
            let mut next = Vec::new();
            for ((member, _), ids) in open.iter().zip(got) {
                let full = ids.len() >= share;
                if let Some(&oldest) = ids.last() {
                    all.extend_from_slice(&ids);
                    if full {
                        next.push((*member, oldest));
                    }
                }
            }
            all.sort_unstable_by(|a, b| b.cmp(a));
            all.dedup();
            all.truncate(want);
            let cut = if all.len() >= want {
                all.last().copied().unwrap_or(0)
            } else {
                0
            };
            // A member whose share ran out at or below the cut holds
            // nothing newer than the cut it did not give.
            next.retain(|&(_, oldest)| oldest > cut);
            open = next;
            share = (share * 2).min(want.max(8));
        }
        Ok(all)
    }

    /// For each `(member, bound)`: up to `n` ids of the member's profile,
    /// newest first, at most `bound` (`inclusive`) or below it. One
    /// pipeline (one sub-pipeline a slot on a cluster).
    async fn profiles_below(
        self,
        open: &[(u64, u64)],
        n: usize,
        inclusive: bool,
    ) -> StoreResult<Vec<Vec<u64>>> {
        // Entries are scored by their whole second, so a bound's second
        // may hold newer ids than the bound: a few more are read, and a
        // member whose second held more than that is read again exactly.
        const SLACK: usize = 16;
        let mut pipe = redis::pipe();
        for &(member, bound) in open {
            let top = match posted_of(bound) {
                Some(p) if bound != u64::MAX => timeline_score(p).to_string(),
                _ => "+inf".to_string(),
            };
            pipe.cmd("ZREVRANGEBYSCORE")
                .arg(self.store.keys.profile(member))
                .arg(top)
                .arg("-inf")
                .arg("LIMIT")
                .arg(0)
                .arg(n + SLACK);
        }
        let mut conn = self.store.conn();
        let raw: Vec<Vec<String>> = pipe.query_async(&mut conn).await?;
        let below = |id: u64, bound: u64| if inclusive { id <= bound } else { id < bound };
        let mut out = Vec::with_capacity(open.len());
        for (&(member, bound), got) in open.iter().zip(raw) {
            let read = got.len();
            let mut ids: Vec<u64> = got
                .iter()
                .filter_map(|s| s.parse().ok())
                .filter(|&id| below(id, bound))
                .collect();
            if read == n + SLACK && ids.len() < n {
                // The bound's second is crowded: read this one by place.
                let exact = self
                    .store
                    .statuses()
                    .ids_up_to(&self.store.keys.profile(member), bound, n + 1)
                    .await?;
                ids = exact
                    .iter()
                    .filter_map(|s| s.parse().ok())
                    .filter(|&id| below(id, bound))
                    .collect();
            }
            ids.sort_unstable_by(|a, b| b.cmp(a));
            ids.truncate(n);
            out.push(ids);
        }
        Ok(out)
    }
}
