//! Reads for conversations and trends.

use super::{Store, StoreResult};
use crate::model::now;
use redis::AsyncCommands;

/// Most statuses a conversation's descendants are gathered from.
pub const MAX_DESCENDANTS: usize = 10_000;

impl Store {
    /// Every reply below `sid` (breadth first, at most [`MAX_DESCENDANTS`]),
    /// in no particular order.
    pub async fn descendants(&self, sid: u64) -> StoreResult<Vec<u64>> {
        let mut conn = self.conn();
        let mut found = Vec::new();
        let mut level = vec![sid];
        while !level.is_empty() && found.len() < MAX_DESCENDANTS {
            let mut pipe = redis::pipe();
            for id in &level {
                pipe.zrange(self.keys.replies(*id), 0, -1);
            }
            let rows: Vec<Vec<u64>> = pipe.query_async(&mut conn).await?;
            level = rows.into_iter().flatten().collect();
            level.truncate(MAX_DESCENDANTS - found.len());
            found.extend_from_slice(&level);
        }
        Ok(found)
    }

    /// The most used hashtags of public statuses in the last `window`
    /// seconds, with their counts: the per-minute buckets summed in Redis
    /// (ZUNIONSTORE into a short-lived key), the top `limit` read back.
    pub async fn trending(&self, window: u64, limit: usize) -> StoreResult<Vec<(String, u64)>> {
        let minute = (now() / 60.0) as u64;
        let minutes = window.div_ceil(60).max(1);
        let keys: Vec<String> = (0..minutes)
            .map(|i| self.keys.trend_bucket(minute.saturating_sub(i)))
            .collect();
        let sum = self.keys.trend_sum(window, minute);
        let mut conn = self.conn();
        let cached: bool = conn.exists(&sum).await?;
        if !cached {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("ZUNIONSTORE")
                .arg(&sum)
                .arg(keys.len())
                .arg(&keys)
                .ignore()
                .expire(&sum, 2)
                .ignore();
            let _: () = pipe.query_async(&mut conn).await?;
        }
        let top: Vec<(String, f64)> = conn
            .zrevrange_withscores(&sum, 0, limit as isize - 1)
            .await?;
        Ok(top
            .into_iter()
            .filter(|(_, n)| *n >= 1.0)
            .map(|(tag, n)| (tag, n as u64))
            .collect())
    }
}
