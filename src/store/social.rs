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
    /// seconds, with their counts: the per-minute buckets that overlap the
    /// window (the oldest one partly: counts are kept by the minute) summed
    /// in Redis (ZUNIONSTORE into a key kept 2 s), the top `limit` read back.
    pub async fn trending(&self, window: u64, limit: usize) -> StoreResult<Vec<(String, u64)>> {
        let now = now();
        let minute = (now / 60.0) as u64;
        let oldest = ((now - window as f64).max(0.0) / 60.0) as u64;
        let keys: Vec<String> = (oldest..=minute)
            .map(|m| self.keys.trend_bucket(m))
            .collect();
        let sum = self.keys.trend_sum(window, minute);
        let mut conn = self.conn();
        let last = limit as isize - 1;
        // The kept sum, if it is there; else (or if it expired since, or
        // nothing trends) summed now and read in the same transaction.
        let mut top: Vec<(String, f64)> = conn.zrevrange_withscores(&sum, 0, last).await?;
        if top.is_empty() {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("ZUNIONSTORE")
                .arg(&sum)
                .arg(keys.len())
                .arg(&keys)
                .ignore()
                .expire(&sum, 2)
                .ignore()
                .zrevrange_withscores(&sum, 0, last);
            (top,) = pipe.query_async(&mut conn).await?;
        }
        Ok(top
            .into_iter()
            .filter(|(_, n)| *n >= 1.0)
            .map(|(tag, n)| (tag, n as u64))
            .collect())
    }
}
