//! Bookmarks: a user's private list of statuses, newest bookmark first.
//!
//! One ZSET per user in the user's slot, scored by minus the time of the
//! bookmark, so the cursor walk of every list of ids (`paging`) pages it
//! exactly while bookmarks come and go. What a page shows is judged when it
//! is read ([`http::bookmarks`](crate::http::bookmarks)): a status deleted since is dropped from the
//! page and from the set; one its reader may no longer see is left out of
//! the page but kept (a follow approved again brings it back).

use crate::model::now;
use crate::store::handle::Store;
use crate::store::paging::{id_page, Cursor, IdPage};
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;

/// Bookmarks a user keeps at most.
pub(crate) const MAX_BOOKMARKS: usize = 10_000;

/// A user's bookmarks (`Store::bookmarks`).
#[derive(Clone, Copy)]
pub struct Bookmarks<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Bookmarks<'_> {
    /// Bookmarks status `sid` for `uid` (`on`) or forgets it; idempotent.
    /// Past [`MAX_BOOKMARKS`] a new one is refused (`too_many_bookmarks`)
    /// and nothing changes.
    pub async fn set(self, uid: u64, sid: u64, on: bool) -> StoreResult<bool> {
        let key = self.store.keys.bookmarks(uid);
        let mut conn = self.store.conn();
        if !on {
            let _: i64 = conn.zrem(&key, sid).await?;
            return Ok(false);
        }
        let added: i64 = self
            .store
            .scripts
            .bookmark_add
            .key(&key)
            .arg(sid)
            .arg(-now())
            .arg(MAX_BOOKMARKS)
            .invoke_async(&mut conn)
            .await?;
        if added == 0 {
            return Err(StoreError::Invalid(
                "too_many_bookmarks",
                format!("A user keeps at most {MAX_BOOKMARKS} bookmarks; remove some first."),
            ));
        }
        Ok(true)
    }

    /// A page of `uid`'s bookmarked status ids, newest bookmark first.
    pub async fn page(self, uid: u64, cursor: &Cursor, count: usize) -> StoreResult<IdPage> {
        id_page(self.store, &self.store.keys.bookmarks(uid), cursor, count).await
    }

    /// Whether `uid` has bookmarked each of `sids` (one command).
    pub async fn marked(self, uid: u64, sids: &[u64]) -> StoreResult<Vec<bool>> {
        zmember(self.store, &self.store.keys.bookmarks(uid), sids).await
    }

    /// Drops bookmarks of statuses that are gone.
    pub async fn forget_all(self, uid: u64, sids: &[u64]) -> StoreResult<()> {
        if sids.is_empty() {
            return Ok(());
        }
        let mut conn = self.store.conn();
        let _: i64 = conn.zrem(self.store.keys.bookmarks(uid), sids).await?;
        Ok(())
    }
}

/// Whether each of `members` is in the sorted set `key` (one `ZMSCORE`).
pub(super) async fn zmember(store: &Store, key: &str, members: &[u64]) -> StoreResult<Vec<bool>> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let mut conn = store.conn();
    let scores: Vec<Option<f64>> = redis::cmd("ZMSCORE")
        .arg(key)
        .arg(members)
        .query_async(&mut conn)
        .await?;
    Ok(scores.iter().map(Option::is_some).collect())
}
