//! Likes: like and unlike (idempotent), who likes a status; and the
//! reposts read as marks ([`Reposts`]): who reposted a status, which of
//! some statuses a user reposted.

use crate::model::now;
use crate::store::chains::like::like_whole;
use crate::store::chains::like::LikeOp;
use crate::store::handle::Store;
use crate::store::outbox::Op;
use crate::store::paging::{id_page, Cursor, IdPage};
use crate::store::plumbing::error::StoreResult;

/// Likes: like and unlike, and a status's likers (`Store::likes`).
#[derive(Clone, Copy)]
pub struct Likes<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Likes<'_> {
    /// `uid` likes (`like = true`) or stops liking status `sid` by `author`.
    /// Returns whether it changed and the status's likes now. The like event
    /// (for the author's user stream) goes out once, with the change.
    /// On a cluster, a chain driven from the outbox; on one Redis, one
    /// script ([`like_whole`]).
    pub async fn set(
        self,
        uid: u64,
        sid: u64,
        author: u64,
        private: bool,
        like: bool,
    ) -> StoreResult<(bool, u64)> {
        if !self.store.is_cluster() {
            return like_whole(self.store, uid, sid, author, private, like).await;
        }
        let op = LikeOp {
            uid,
            sid,
            author,
            private,
            like,
            at: now(),
        };
        let owed = self.store.outbox().start(Op::Like(op.clone())).await?;
        op.run(self.store, &owed.entry).await
    }

    /// Whether `uid` likes each of `sids` (one command, in the user's slot).
    pub async fn liked(self, uid: u64, sids: &[u64]) -> StoreResult<Vec<bool>> {
        crate::store::entities::bookmarks::zmember(self.store, &self.store.keys.likes(uid), sids)
            .await
    }

    /// Who likes a status, oldest like first, `count` from `cursor`.
    pub async fn likers(self, sid: u64, cursor: &Cursor, count: usize) -> StoreResult<IdPage> {
        id_page(self.store, &self.store.keys.likers(sid), cursor, count).await
    }
}

/// Reposts read as marks (`Store::reposts`); reposting itself is a post
/// (`Statuses`).
#[derive(Clone, Copy)]
pub struct Reposts<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Reposts<'_> {
    /// Whether `uid` has reposted each of `sids` (one pipeline: each
    /// status's reposters in its own slot).
    pub async fn reposted_by(self, uid: u64, sids: &[u64]) -> StoreResult<Vec<bool>> {
        if sids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for &sid in sids {
            pipe.hexists(self.store.keys.reposters(sid), uid);
        }
        let mut conn = self.store.conn();
        Ok(pipe.query_async(&mut conn).await?)
    }

    /// Up to `most` of those who reposted `sid`, each with their repost's
    /// id (read by `HSCAN`, so a status reposted by many costs a bounded
    /// read), newest repost first: exact for a status with at most `most`
    /// reposts, else drawn from the `most` read.
    pub async fn reposters(self, sid: u64, most: usize) -> StoreResult<Vec<(u64, u64)>> {
        let key = self.store.keys.reposters(sid);
        let mut conn = self.store.conn();
        let mut out = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, pairs): (u64, Vec<(String, String)>) = redis::cmd("HSCAN")
                .arg(&key)
                .arg(cursor)
                .arg("COUNT")
                .arg(most.min(1_000))
                .query_async(&mut conn)
                .await?;
            out.extend(
                pairs
                    .iter()
                    .filter_map(|(uid, repost)| Some((uid.parse().ok()?, repost.parse().ok()?))),
            );
            if next == 0 || out.len() >= most {
                break;
            }
            cursor = next;
        }
        out.truncate(most);
        out.sort_unstable_by_key(|&(_, repost)| std::cmp::Reverse(repost));
        Ok(out)
    }
}
