//! Reads for conversations.

use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;

/// Most statuses a conversation's descendants are gathered from.
pub(crate) const MAX_DESCENDANTS: usize = 10_000;

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
}
