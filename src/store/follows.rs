//! Follow and unfollow as three idempotent per-user steps (see the Lua
//! headers): the follower's `following` set decides (step 1), the followee's
//! `followers` set follows it in sequence order (step 2), and the follower's
//! home timeline gains or loses the followee's newest statuses (step 3).
//! Each step touches one user's keys only, and any step may be retried.

use super::outbox::Op;
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

/// One page of a list of user ids (followers, following, likers, follow
/// requests), oldest first.
#[derive(Debug, Clone)]
pub struct IdPage {
    /// User ids.
    pub ids: Vec<u64>,
    /// Offset of the next page, if there is one.
    pub next_cursor: Option<u64>,
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
        cursor: u64,
        count: usize,
    ) -> StoreResult<IdPage> {
        let key = match list {
            FollowList::Followers => self.keys.followers(uid),
            FollowList::Following => self.keys.following(uid),
        };
        self.id_page(&key, cursor, count).await
    }

    /// A page of a ZSET of user ids, in score order: `count` from offset
    /// `cursor`.
    pub(crate) async fn id_page(
        &self,
        key: &str,
        cursor: u64,
        count: usize,
    ) -> StoreResult<IdPage> {
        let mut conn = self.conn();
        let start = cursor.min(isize::MAX as u64 / 2) as isize;
        let ids: Vec<String> = conn.zrange(key, start, start + count as isize).await?;
        let more = ids.len() > count;
        let ids = ids
            .iter()
            .take(count)
            .map(|s| parse_id(s))
            .collect::<StoreResult<Vec<u64>>>()?;
        Ok(IdPage {
            next_cursor: more.then(|| cursor + count as u64),
            ids,
        })
    }
}
