//! Follow and unfollow as three idempotent per-user steps (see the Lua
//! headers): the follower's `following` set decides (step 1), the followee's
//! `followers` set follows it in sequence order (step 2), and the follower's
//! home timeline gains or loses the followee's newest statuses (step 3).
//! Each step touches one user's keys only, and any step may be retried.

use super::outbox::Op;
pub use super::paging::{Cursor, IdPage};
use super::{parse_id, Store, StoreError, StoreResult};
use redis::AsyncCommands;

/// Which list of users around a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowList {
    /// Who follows the user.
    Followers,
    /// Whom the user follows.
    Following,
}

impl Store {
    /// Makes `source` follow (`follow = true`) or unfollow `target`. Returns
    /// whether the relationship changed; the follow or unfollow event is
    /// emitted only then.
    pub async fn set_follow(
        &self,
        source: u64,
        target: u64,
        follow: bool,
        now: f64,
    ) -> StoreResult<bool> {
        if source == target {
            return Err(StoreError::Forbidden("You cannot follow yourself.".into()));
        }
        if !self.user_exists(target).await? {
            return Err(StoreError::NotFound("user"));
        }
        let owed = self
            .start_op(Op::Follow {
                source,
                target,
                follow,
                at: now,
            })
            .await?;
        self.run_follow(&owed).await
    }

    /// Whether `source` follows `target`.
    pub async fn is_following(&self, source: u64, target: u64) -> StoreResult<bool> {
        let mut conn = self.conn();
        let score: Option<f64> = conn.zscore(self.keys.following(source), target).await?;
        Ok(score.is_some())
    }

    /// Everyone `uid` follows (for user streams).
    pub async fn following_ids(&self, uid: u64) -> StoreResult<Vec<u64>> {
        let mut conn = self.conn();
        let ids: Vec<String> = conn.zrange(self.keys.following(uid), 0, -1).await?;
        ids.iter().map(|s| parse_id(s)).collect()
    }

    /// A page of a user's followers or followed users.
    pub async fn follow_page(
        &self,
        uid: u64,
        list: FollowList,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<IdPage> {
        let key = match list {
            FollowList::Followers => self.keys.followers(uid),
            FollowList::Following => self.keys.following(uid),
        };
        self.id_page(&key, cursor, count).await
    }
}
