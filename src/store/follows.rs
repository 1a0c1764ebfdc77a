//! Follow and unfollow as three idempotent per-user steps (see the Lua
//! headers): the follower's `following` set decides (step 1), the followee's
//! `followers` set follows it in sequence order (step 2), and the follower's
//! home timeline gains or loses the followee's newest statuses (step 3).
//! Each step touches one user's keys only, and any step may be retried.

use super::events::body;
use super::keys::OUTBOX_PARTS;
use super::outbox::{pair_part, Op};
pub use super::paging::{Cursor, IdPage};
use super::{parse_id, Store, StoreError, StoreResult};
use crate::model::{Event, HOME_CAP};
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
        if !self.is_cluster() {
            return self.follow_whole(source, target, follow, now).await;
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

    /// [`Store::set_follow`] on one Redis: `follow_whole.lua`, every step in
    /// one atomic script (one round trip, no outbox entry). Reposts of users
    /// hidden from the follower that the backfill copied are taken out
    /// after, as a fan-out batch does.
    async fn follow_whole(
        &self,
        source: u64,
        target: u64,
        follow: bool,
        at: f64,
    ) -> StoreResult<bool> {
        let event = body(&if follow {
            Event::Follow { at, source, target }
        } else {
            Event::Unfollow { at, source, target }
        });
        let mut conn = self.conn();
        let reply: redis::Value = self
            .scripts
            .follow_whole
            .key(self.keys.user(target))
            .key(self.keys.user(source))
            .key(self.keys.following(source))
            .key(self.keys.follow_applied(source))
            .key(self.keys.hide(source))
            .key(self.keys.home(source))
            .key(self.keys.followers(target))
            .key(self.keys.follower_seq(target))
            .key(self.keys.hide(target))
            .key(self.keys.profile(target))
            .key(self.keys.deleted(target))
            .key(self.keys.events())
            .key(self.keys.part_next_op(pair_part(source, target)))
            .arg(source)
            .arg(target)
            .arg(if follow { "1" } else { "0" })
            .arg(at)
            .arg(HOME_CAP)
            .arg(self.replay_maxlen)
            .arg(self.keys.channel())
            .arg(event)
            .arg(OUTBOX_PARTS)
            .arg(pair_part(source, target))
            .invoke_async(&mut conn)
            .await?;
        if let Ok((word,)) = redis::from_redis_value::<(String,)>(reply.clone()) {
            return Err(match word.as_str() {
                "blocked" => StoreError::Forbidden(
                    "You cannot follow this user: a block stands between you.".into(),
                ),
                _ => StoreError::NotFound("user"),
            });
        }
        let (changed, hidden, copied): (i64, Vec<u64>, Vec<u64>) =
            redis::from_redis_value(reply)
                .map_err(|e| StoreError::Internal(format!("follow_whole: {e}")))?;
        if !hidden.is_empty() && !copied.is_empty() {
            self.settle_backfill(source, &copied, &hidden).await?;
        }
        Ok(changed == 1)
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
