//! Likes: like and unlike (idempotent), who likes a status.

use super::chains::like::LikeOp;
use super::outbox::Op;
use super::paging::{Cursor, IdPage};
use super::plumbing::error::StoreResult;
use super::plumbing::handle::Store;
use crate::model::now;

/// Likes: like and unlike, and a status's likers (`Store::likes`).
#[derive(Clone, Copy)]
pub struct Likes<'a> {
    store: &'a Store,
}

impl Store {
    /// Likes and likers.
    pub fn likes(&self) -> Likes<'_> {
        Likes { store: self }
    }
}

impl Likes<'_> {
    /// `uid` likes (`like = true`) or stops liking status `sid` by `author`.
    /// Returns whether it changed and the status's likes now. The like event
    /// (for the author's user stream) goes out once, with the change.
    /// On a cluster, a chain driven from the outbox; on one Redis, one
    /// script ([`Store::like_whole`]).
    pub async fn set(
        self,
        uid: u64,
        sid: u64,
        author: u64,
        private: bool,
        like: bool,
    ) -> StoreResult<(bool, u64)> {
        if !self.store.is_cluster() {
            return self.store.like_whole(uid, sid, author, private, like).await;
        }
        let op = LikeOp {
            uid,
            sid,
            author,
            private,
            like,
            at: now(),
        };
        let owed = self.store.start_op(Op::Like(op.clone())).await?;
        self.store.run_like(&owed.entry, &op).await
    }

    /// Who likes a status, oldest like first, `count` from `cursor`.
    pub async fn likers(self, sid: u64, cursor: &Cursor, count: usize) -> StoreResult<IdPage> {
        self.store
            .id_page(&self.store.keys.likers(sid), cursor, count)
            .await
    }
}
