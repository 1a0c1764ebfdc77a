//! Reads that walk the social graph: a conversation's replies, a user's
//! lists for the account export.

use crate::store::entities::statuses::Statuses;
use crate::store::entities::users::Users;
use crate::store::paging::UserList;
use crate::store::plumbing::error::parse_id;
use crate::store::plumbing::error::StoreResult;

/// Most statuses a conversation's descendants are gathered from.
pub(crate) const MAX_DESCENDANTS: usize = 10_000;

impl Statuses<'_> {
    /// Every reply below `sid` (breadth first, at most [`MAX_DESCENDANTS`]),
    /// in no particular order.
    pub async fn descendants(self, sid: u64) -> StoreResult<Vec<u64>> {
        let mut conn = self.store.conn();
        let mut found = Vec::new();
        let mut level = vec![sid];
        while !level.is_empty() && found.len() < MAX_DESCENDANTS {
            let mut pipe = redis::pipe();
            for id in &level {
                pipe.zrange(self.store.keys.replies(*id), 0, -1);
            }
            let rows: Vec<Vec<u64>> = pipe.query_async(&mut conn).await?;
            level = rows.into_iter().flatten().collect();
            level.truncate(MAX_DESCENDANTS - found.len());
            found.extend_from_slice(&level);
        }
        Ok(found)
    }
}

impl Users<'_> {
    /// Up to `count` ids of one of `uid`'s lists, newest first, from
    /// `offset`.
    pub async fn list_newest(
        self,
        uid: u64,
        list: UserList,
        offset: usize,
        count: usize,
    ) -> StoreResult<Vec<u64>> {
        let key = match list {
            UserList::Following => self.store.keys.following(uid),
            UserList::Followers => self.store.keys.followers(uid),
            UserList::Likes => self.store.keys.likes(uid),
        };
        let mut conn = self.store.conn();
        let ids: Vec<String> = redis::cmd("ZREVRANGE")
            .arg(key)
            .arg(offset)
            .arg(offset + count - 1)
            .query_async(&mut conn)
            .await?;
        ids.iter().map(|s| parse_id(s)).collect()
    }
}
