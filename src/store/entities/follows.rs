//! Follow and unfollow as three idempotent per-user steps (see the Lua
//! headers): the follower's `following` set decides (step 1), the followee's
//! `followers` set follows it in sequence order (step 2), and the follower's
//! home timeline gains or loses the followee's newest statuses (step 3).
//! Each step touches one user's keys only, and any step may be retried.

use crate::store::chains::follow::follow_whole;
use crate::store::chains::follow::FollowOp;
pub use crate::store::chains::follow::FOLLOW_COPY_BUDGET;
use crate::store::handle::Store;
use crate::store::outbox::Op;
use crate::store::paging::id_page;
pub use crate::store::paging::{Cursor, IdPage};
use crate::store::plumbing::error::{parse_id, StoreError, StoreResult};
use futures::StreamExt;
use redis::AsyncCommands;

/// Follows on one Redis: at most this many targets per `follow_whole.lua`
/// call.
pub const FOLLOW_CHUNK: usize = 16;
/// Follows on a cluster: at most this many chains of one batch in flight.
pub const FOLLOW_CONCURRENCY: usize = 16;

/// Which list of users around a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowList {
    /// Who follows the user.
    Followers,
    /// Whom the user follows.
    Following,
}

/// Who follows whom: follow and unfollow, and the pages of both sides
/// (`Store::follows`).
#[derive(Clone, Copy)]
pub struct Follows<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Follows<'_> {
    /// Makes `source` follow (`follow = true`) or unfollow `target`. Returns
    /// whether the relationship changed; the follow or unfollow event is
    /// emitted only then.
    pub async fn set(self, source: u64, target: u64, follow: bool, now: f64) -> StoreResult<bool> {
        if source == target {
            return Err(StoreError::Forbidden("You cannot follow yourself.".into()));
        }
        if !self.store.is_cluster() {
            let mut outcomes = follow_whole(self.store, source, &[target], follow, now).await?;
            return outcomes.pop().unwrap_or(Ok(false));
        }
        if !self.store.users().exists(target).await? {
            return Err(StoreError::NotFound("user"));
        }
        let op = FollowOp {
            source,
            target,
            follow,
            at: now,
        };
        let owed = self.store.outbox().start(Op::Follow(op.clone())).await?;
        op.run(self.store, &owed.entry).await
    }

    /// Makes `source` follow (or unfollow) each of `targets`, distinct ids
    /// none of which is `source`: per target, whether the relationship
    /// changed, or why it could not (no such user, a block). On one Redis a
    /// chunk of [`FOLLOW_CHUNK`] targets is one `follow_whole.lua` call; on a
    /// cluster each target is its own chain, [`FOLLOW_CONCURRENCY`] at a time.
    pub async fn set_many(
        self,
        source: u64,
        targets: &[u64],
        follow: bool,
        now: f64,
    ) -> StoreResult<Vec<StoreResult<bool>>> {
        if !self.store.is_cluster() {
            let mut outcomes = Vec::with_capacity(targets.len());
            while outcomes.len() < targets.len() {
                let rest = &targets[outcomes.len()..];
                let chunk = &rest[..rest.len().min(FOLLOW_CHUNK)];
                outcomes.extend(follow_whole(self.store, source, chunk, follow, now).await?);
            }
            return Ok(outcomes);
        }
        Ok(futures::stream::iter(targets.to_vec())
            .map(|target| self.set(source, target, follow, now))
            .buffered(FOLLOW_CONCURRENCY)
            .collect()
            .await)
    }

    /// Whether `source` follows `target`.
    pub async fn is_following(self, source: u64, target: u64) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let score: Option<f64> = conn
            .zscore(self.store.keys.following(source), target)
            .await?;
        Ok(score.is_some())
    }

    /// Everyone `uid` follows (for user streams).
    pub async fn following_ids(self, uid: u64) -> StoreResult<Vec<u64>> {
        let mut conn = self.store.conn();
        let ids: Vec<String> = conn.zrange(self.store.keys.following(uid), 0, -1).await?;
        ids.iter().map(|s| parse_id(s)).collect()
    }

    /// A page of a user's followers or followed users.
    pub async fn page(
        self,
        uid: u64,
        list: FollowList,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<IdPage> {
        let key = match list {
            FollowList::Followers => self.store.keys.followers(uid),
            FollowList::Following => self.store.keys.following(uid),
        };
        id_page(self.store, &key, cursor, count).await
    }
}
