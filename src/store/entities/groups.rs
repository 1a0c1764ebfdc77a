//! Groups: public, private (members read it; joining is a request) and
//! announcement (only owners and moderators post). A group's keys share
//! the slot `{gr<id>}`: its HASH, members, roles, join requests and
//! timeline; every change of membership or role is one script there
//! (`group_member.lua`), which keeps the last owner and the counts. Each
//! user's list of groups, in the user's slot, is an index: written before
//! a join (so a member is never missing from it) and after a leave, and
//! checked against each group when read (an entry left by a failed or
//! interrupted change is dropped then).

use crate::model::Id;
use crate::model::{Group, GroupChange, GroupKind, GroupRole};
use crate::store::handle::Store;
use crate::store::paging::{id_page, Cursor, IdPage};
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;
use std::collections::HashMap;

/// A group's HASH, the viewer's role and their request's time.
type GroupRow = (HashMap<String, String>, Option<String>, Option<f64>);

/// A user's standing in a group after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// Their role, or `None` for a non-member.
    pub role: Option<GroupRole>,
    /// Whether their join request is pending.
    pub requested: bool,
}

/// Why a change was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No such group.
    Missing,
    /// The actor's role does not allow it.
    Forbidden,
    /// The target is not a member.
    NotMember,
    /// The target has no pending request.
    NoRequest,
    /// It would leave the group without an owner.
    LastOwner,
    /// The group has as many members as it may.
    Full,
}

/// Why a status may not be posted in a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostingRefused {
    /// No such group.
    Missing,
    /// A reply names a group other than its parent's.
    NotParentsGroup,
    /// The author is not a member.
    NotMember,
    /// In an announcement group only owners and moderators post.
    StaffOnly,
}

/// Groups and their members (`Store::groups`).
#[derive(Clone, Copy)]
pub struct Groups<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Groups<'_> {
    /// Creates a group owned by `uid`.
    pub async fn create(
        self,
        uid: u64,
        name: &str,
        description: &str,
        kind: GroupKind,
    ) -> StoreResult<u64> {
        // Group ids are snowflakes: time-ordered, no shared counter.
        let (gid, created) = self.store.mint().snowflake().await?;
        let mut conn = self.store.conn();
        let _: () = conn
            .zadd(self.store.keys.user_groups(uid), gid, created)
            .await?;
        let _: i64 = self
            .store
            .scripts
            .group_create
            .key(self.store.keys.group(gid))
            .key(self.store.keys.group_members(gid))
            .key(self.store.keys.group_roles(gid))
            .arg(gid)
            .arg(name)
            .arg(description)
            .arg(kind.name())
            .arg(created)
            .arg(uid)
            .invoke_async(&mut conn)
            .await?;
        Ok(gid)
    }

    /// How many groups `uid` is in or asked to join (their list's length:
    /// an upper bound, stale entries included until read).
    pub async fn count(self, uid: u64) -> StoreResult<usize> {
        let mut conn = self.store.conn();
        Ok(conn.zcard(self.store.keys.user_groups(uid)).await?)
    }

    /// Applies `change` by `actor` to `target` in `gid`, keeping `target`'s
    /// list of groups in step: the target's standing after it, or why not.
    pub async fn change(
        self,
        gid: u64,
        actor: u64,
        target: u64,
        change: GroupChange,
        max_members: usize,
    ) -> StoreResult<Result<Standing, Refused>> {
        let mut conn = self.store.conn();
        let now = crate::model::now();
        if change.admits() {
            // Listed first, so a member is never missing from the list.
            let _: () = conn
                .zadd(self.store.keys.user_groups(target), gid, now)
                .await?;
        }
        let role = match change {
            GroupChange::Role(r) => r.name(),
            _ => "",
        };
        let reply: (String, String, String) = self
            .store
            .scripts
            .group_member
            .key(self.store.keys.group(gid))
            .key(self.store.keys.group_members(gid))
            .key(self.store.keys.group_roles(gid))
            .key(self.store.keys.group_requests(gid))
            .arg(change.name())
            .arg(actor)
            .arg(target)
            .arg(now)
            .arg(max_members)
            .arg(role)
            .invoke_async(&mut conn)
            .await?;
        let (outcome, role, requested) = reply;
        let standing = Standing {
            role: GroupRole::parse(&role),
            requested: requested == "1",
        };
        if outcome == "ok" && standing.role.is_none() && !standing.requested {
            // Neither member nor asking: off the list.
            let _: () = conn.zrem(self.store.keys.user_groups(target), gid).await?;
        }
        if outcome == "ok" && standing.requested && matches!(change, GroupChange::Join) {
            // Its owners and moderators are told (by the notifier), once
            // per request: a retry sends the same request's time again.
            let asked: Option<f64> = conn
                .zscore(self.store.keys.group_requests(gid), target)
                .await?;
            if let Some(at) = asked {
                self.store
                    .events()
                    .emit(&crate::store::events::body(
                        &crate::model::Event::GroupRequest {
                            at,
                            group_id: Id(gid),
                            source: Id(target),
                        },
                    ))
                    .await?;
            }
        }
        Ok(match outcome.as_str() {
            "ok" => Ok(standing),
            "missing" => Err(Refused::Missing),
            "forbidden" => Err(Refused::Forbidden),
            "not_member" => Err(Refused::NotMember),
            "no_request" => Err(Refused::NoRequest),
            "last_owner" => Err(Refused::LastOwner),
            "full" => Err(Refused::Full),
            other => return Err(StoreError::Internal(format!("group_member: {other}"))),
        })
    }

    /// `uid`'s standing in `gid` (`None` for no such group).
    pub async fn standing(self, gid: u64, uid: u64) -> StoreResult<Option<Standing>> {
        let mut conn = self.store.conn();
        let (kind, role, requested): (Option<String>, Option<String>, Option<f64>) = redis::pipe()
            .hget(self.store.keys.group(gid), "kind")
            .hget(self.store.keys.group_roles(gid), uid)
            .zscore(self.store.keys.group_requests(gid), uid)
            .query_async(&mut conn)
            .await?;
        Ok(kind.map(|_| Standing {
            role: role.as_deref().and_then(GroupRole::parse),
            requested: requested.is_some(),
        }))
    }

    /// The group a new status of `uid` goes to: the one `named`, or its
    /// parent's (a reply belongs to its parent's group; none for a status
    /// in no group); the author must be a member, and in an announcement
    /// group an owner or moderator.
    pub async fn posting_in(
        self,
        uid: u64,
        named: Option<u64>,
        parent: Option<u64>,
    ) -> StoreResult<Result<Option<Group>, PostingRefused>> {
        let gid = match (named, parent) {
            (Some(n), Some(p)) if n != p => return Ok(Err(PostingRefused::NotParentsGroup)),
            (Some(g), _) | (None, Some(g)) => g,
            (None, None) => return Ok(Ok(None)),
        };
        let group = match self.get(gid, Some(uid)).await {
            Ok(g) => g,
            Err(StoreError::NotFound(_)) => return Ok(Err(PostingRefused::Missing)),
            Err(e) => return Err(e),
        };
        Ok(match group.role {
            None => Err(PostingRefused::NotMember),
            Some(GroupRole::Member) if group.kind == GroupKind::Announcement => {
                Err(PostingRefused::StaffOnly)
            }
            Some(_) => Ok(Some(group)),
        })
    }

    /// Group `gid` as `viewer` sees it.
    pub async fn get(self, gid: u64, viewer: Option<u64>) -> StoreResult<Group> {
        self.many(&[gid], viewer)
            .await?
            .pop()
            .flatten()
            .ok_or(StoreError::NotFound("group"))
    }

    /// Groups as `viewer` sees them, `None` for each that does not exist.
    async fn many(self, gids: &[u64], viewer: Option<u64>) -> StoreResult<Vec<Option<Group>>> {
        if gids.is_empty() {
            return Ok(Vec::new());
        }
        let who = viewer.unwrap_or(0);
        let mut pipe = redis::pipe();
        for &gid in gids {
            pipe.hgetall(self.store.keys.group(gid))
                .hget(self.store.keys.group_roles(gid), who)
                .zscore(self.store.keys.group_requests(gid), who);
        }
        let mut conn = self.store.conn();
        let rows: Vec<GroupRow> = pipe.query_async(&mut conn).await?;
        Ok(rows
            .into_iter()
            .map(|(h, role, requested)| {
                if h.is_empty() {
                    return None;
                }
                let num = |k: &str| h.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
                Some(Group {
                    id: h.get("id").and_then(|v| v.parse().ok()).unwrap_or_default(),
                    name: h.get("name").cloned().unwrap_or_default(),
                    description: h.get("description").cloned().unwrap_or_default(),
                    // A kind this build does not know reads as private:
                    // shown to its members only.
                    kind: h
                        .get("kind")
                        .and_then(|k| GroupKind::parse(k))
                        .unwrap_or(GroupKind::Private),
                    members: num("members") as u64,
                    owner: h.get("owner").and_then(|o| o.parse().ok()),
                    created: num("created"),
                    role: viewer.and(role.as_deref().and_then(GroupRole::parse)),
                    requested: viewer.is_some() && requested.is_some(),
                })
            })
            .collect())
    }

    /// A page of `uid`'s groups (those they are in or asked to join),
    /// oldest first, and the cursor of the next page; entries the groups
    /// no longer bear out are dropped on the way.
    pub async fn page(
        self,
        uid: u64,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<(Vec<Group>, Option<String>)> {
        let IdPage { ids, next_cursor } =
            id_page(self.store, &self.store.keys.user_groups(uid), cursor, count).await?;
        let found = self.many(&ids, Some(uid)).await?;
        let mut shown = Vec::with_capacity(found.len());
        let mut stale = Vec::new();
        for (gid, g) in ids.iter().zip(found) {
            match g {
                Some(g) if g.role.is_some() || g.requested => shown.push(g),
                _ => stale.push(*gid),
            }
        }
        if !stale.is_empty() {
            let mut conn = self.store.conn();
            let _: () = conn.zrem(self.store.keys.user_groups(uid), stale).await?;
        }
        Ok((shown, next_cursor))
    }

    /// A page of a group's members (or, `requests`, its requesters), in
    /// the order they joined (asked), with their roles.
    pub async fn member_page(
        self,
        gid: u64,
        requests: bool,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<(Vec<(u64, Option<GroupRole>)>, Option<String>)> {
        let key = if requests {
            self.store.keys.group_requests(gid)
        } else {
            self.store.keys.group_members(gid)
        };
        let IdPage { ids, next_cursor } = id_page(self.store, &key, cursor, count).await?;
        if ids.is_empty() {
            return Ok((Vec::new(), next_cursor));
        }
        let mut conn = self.store.conn();
        let roles: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(self.store.keys.group_roles(gid))
            .arg(&ids)
            .query_async(&mut conn)
            .await?;
        let roles = roles
            .into_iter()
            .map(|r| r.as_deref().and_then(GroupRole::parse));
        Ok((ids.into_iter().zip(roles).collect(), next_cursor))
    }

    /// Up to `n` of the owners and moderators of `gid`.
    pub async fn staff(self, gid: u64, n: usize) -> StoreResult<Vec<u64>> {
        let mut conn = self.store.conn();
        let roles: Vec<(u64, String)> = conn.hgetall(self.store.keys.group_roles(gid)).await?;
        Ok(roles
            .into_iter()
            .filter(|(_, r)| GroupRole::parse(r).is_some_and(GroupRole::is_staff))
            .map(|(u, _)| u)
            .take(n)
            .collect())
    }

    /// Tells every process's hub that `uid` no longer reads private group
    /// `gid` (their group streams of it end).
    pub async fn announce_left(self, gid: u64, uid: u64) -> StoreResult<()> {
        let body = crate::store::events::body(&crate::model::Event::GroupLeft {
            group_id: Id(gid),
            uid: Id(uid),
        });
        self.store.events().emit(&body).await?;
        Ok(())
    }

    /// Adds a posted status to its group's timeline (newest
    /// [`INDEX_CAP`](crate::store::chains::INDEX_CAP) kept).
    pub(crate) async fn timeline_add(self, gid: u64, sid: u64, score: u64) -> StoreResult<()> {
        let key = self.store.keys.group_timeline(gid);
        let mut conn = self.store.conn();
        let _: () = redis::pipe()
            .zadd(&key, sid, score)
            .ignore()
            .zremrangebyrank(&key, 0, -(crate::store::chains::INDEX_CAP as isize) - 1)
            .ignore()
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Takes a deleted status out of its group's timeline.
    pub(crate) async fn timeline_remove(self, gid: u64, sid: u64) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: () = conn.zrem(self.store.keys.group_timeline(gid), sid).await?;
        Ok(())
    }
}
