//! Likes: like and unlike (idempotent), who likes a status.

use super::{parse_id, Store, StoreError, StoreResult};
use crate::model::now;
use redis::AsyncCommands;
use serde_json::json;

/// A page of user ids and the offset of the next one.
#[derive(Debug, Clone)]
pub struct IdPage {
    /// User ids.
    pub ids: Vec<u64>,
    /// Offset of the next page, if there is one.
    pub next_cursor: Option<u64>,
}

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

    /// A page of a ZSET of user ids, in score order.
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
