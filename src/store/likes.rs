//! Likes: like and unlike (idempotent), who likes a status.

use super::follows::IdPage;
use super::{Store, StoreError, StoreResult};
use crate::model::now;
use serde_json::json;

impl Store {
    /// `uid` likes (`like = true`) or stops liking status `sid` by `author`.
    /// Returns whether it changed and the status's likes now. The like event
    /// (for the author's user stream) goes out once, with the change.
    pub async fn set_like(
        &self,
        uid: u64,
        sid: u64,
        author: u64,
        private: bool,
        like: bool,
    ) -> StoreResult<(bool, u64)> {
        let at = now();
        let mut body = json!({"type": "like", "at": at, "status_id": sid.to_string(),
            "source": uid.to_string(), "target": author.to_string()});
        if private {
            body["private"] = json!(true);
        }
        let mut conn = self.conn();
        let reply: redis::Value = self
            .scripts
            .like
            .key(self.keys.status(sid))
            .key(self.keys.likers(sid))
            .key(self.keys.likes(uid))
            .key(self.keys.events())
            .arg(uid)
            .arg(sid)
            .arg(at)
            .arg(if like { "1" } else { "0" })
            .arg(self.replay_maxlen)
            .arg(self.keys.channel())
            .arg(body.to_string())
            .invoke_async(&mut conn)
            .await?;
        self.counts_cache.forget(sid);
        match redis::from_redis_value::<(i64, u64)>(reply) {
            Ok((changed, likes)) => Ok((changed == 1, likes)),
            Err(_) => Err(StoreError::NotFound("status")),
        }
    }

    /// Who likes a status, oldest like first, `count` from offset `cursor`.
    pub async fn likers(&self, sid: u64, cursor: u64, count: usize) -> StoreResult<IdPage> {
        self.id_page(&self.keys.likers(sid), cursor, count).await
    }
}
