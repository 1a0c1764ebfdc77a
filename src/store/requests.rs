//! Follow requests to private accounts: asked, listed, authorized, rejected
//! or cancelled.

use super::follows::IdPage;
use super::{Store, StoreResult};
use crate::model::now;
use redis::AsyncCommands;
use serde_json::json;

/// Which follow requests of a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requests {
    /// Asked of the user.
    Incoming,
    /// Asked by the user.
    Outgoing,
}

impl Store {
    /// `source` asks to follow `target`. Returns whether the request is new;
    /// the `follow_request` event (for both users' streams) goes out with it.
    pub async fn request_follow(&self, source: u64, target: u64) -> StoreResult<bool> {
        let at = now();
        let body = json!({"type": "follow_request", "at": at, "private": true,
            "source": source.to_string(), "target": target.to_string()});
        let mut conn = self.conn();
        let added: i64 = self
            .scripts
            .follow_request
            .key(self.keys.requests(target))
            .key(self.keys.requested(source))
            .key(self.keys.events())
            .arg(source)
            .arg(target)
            .arg(at)
            .arg(self.replay_maxlen)
            .arg(self.keys.channel())
            .arg(body.to_string())
            .invoke_async(&mut conn)
            .await?;
        Ok(added == 1)
    }

    /// Drops the request of `source` to follow `target`; whether there was one.
    pub async fn drop_request(&self, source: u64, target: u64) -> StoreResult<bool> {
        let mut conn = self.conn();
        let (removed, _): (i64, i64) = redis::pipe()
            .atomic()
            .zrem(self.keys.requests(target), source)
            .zrem(self.keys.requested(source), target)
            .query_async(&mut conn)
            .await?;
        Ok(removed == 1)
    }

    /// Whether `source` has asked to follow `target`.
    pub async fn has_requested(&self, source: u64, target: u64) -> StoreResult<bool> {
        let mut conn = self.conn();
        let at: Option<f64> = conn.zscore(self.keys.requests(target), source).await?;
        Ok(at.is_some())
    }

    /// Who asked to follow `uid`, or whom `uid` asked, oldest first.
    pub async fn request_page(
        &self,
        uid: u64,
        which: Requests,
        cursor: u64,
        count: usize,
    ) -> StoreResult<IdPage> {
        let key = match which {
            Requests::Incoming => self.keys.requests(uid),
            Requests::Outgoing => self.keys.requested(uid),
        };
        self.id_page(&key, cursor, count).await
    }

    /// Everyone waiting for `uid`'s answer.
    pub async fn all_requests(&self, uid: u64) -> StoreResult<Vec<u64>> {
        let mut conn = self.conn();
        let ids: Vec<u64> = conn.zrange(self.keys.requests(uid), 0, -1).await?;
        Ok(ids)
    }
}
