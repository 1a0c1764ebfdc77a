//! Trending hashtags: the counts are kept per minute in each hashtag's
//! trending partition (`keys::trend_part`; written by `trend.lua` and
//! `post_whole.lua`), and read here.

use crate::model::now;
use crate::store::caches::trend_memo::Top;
use crate::store::entities::statuses::Statuses;
use crate::store::plumbing::error::StoreResult;
use crate::store::plumbing::keys::TREND_PARTS;
use redis::AsyncCommands;
impl Statuses<'_> {
    /// The most used hashtags of public statuses in the last `window`
    /// seconds, with their counts: in each trending partition, the
    /// per-minute buckets that overlap the window (the oldest one partly:
    /// counts are kept by the minute) summed in Redis (ZUNIONSTORE into a
    /// key kept 1 s) and its top `limit` read back; the partitions hold
    /// disjoint hashtags, so the top `limit` of their tops is the top of
    /// all. The answer is kept in the process for a second.
    pub async fn trending(self, window: u64, limit: usize) -> StoreResult<Top> {
        if let Some(top) = self.store.caches.trends.get((window, limit)) {
            return Ok(top);
        }
        let now = now();
        let minute = (now / 60.0) as u64;
        let oldest = ((now - window as f64).max(0.0) / 60.0) as u64;
        let last = limit as isize - 1;
        let sums: Vec<String> = (0..TREND_PARTS)
            .map(|p| self.store.keys.trend_sum(p, window, minute))
            .collect();
        let mut conn = self.store.conn();
        // The kept sums: in one round on one Redis; one partition after
        // another on a cluster (see `outboxes`).
        let mut tops: Vec<Vec<(String, f64)>> = if self.store.is_cluster() {
            let mut tops = Vec::with_capacity(TREND_PARTS);
            for sum in &sums {
                tops.push(conn.zrevrange_withscores(sum, 0, last).await?);
            }
            tops
        } else {
            let mut pipe = redis::pipe();
            for sum in &sums {
                pipe.zrevrange_withscores(sum, 0, last);
            }
            pipe.query_async(&mut conn).await?
        };
        for (p, top) in tops.iter_mut().enumerate() {
            if !top.is_empty() {
                continue;
            }
            // Not kept (or nothing trends there): summed now and read in
            // the same transaction.
            let keys: Vec<String> = (oldest..=minute)
                .map(|m| self.store.keys.trend_bucket(p, m))
                .collect();
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("ZUNIONSTORE")
                .arg(&sums[p])
                .arg(keys.len())
                .arg(&keys)
                .ignore()
                .expire(&sums[p], 1)
                .ignore()
                .zrevrange_withscores(&sums[p], 0, last);
            (*top,) = pipe.query_async(&mut conn).await?;
        }
        let mut all: Vec<(String, f64)> = tops
            .into_iter()
            .flatten()
            .filter(|(_, n)| *n >= 1.0)
            .collect();
        // As ZREVRANGE orders: by count, then ties by tag, both descending.
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        all.truncate(limit);
        let top: Top = all.into_iter().map(|(tag, n)| (tag, n as u64)).collect();
        self.store.caches.trends.put((window, limit), &top);
        Ok(top)
    }
}
