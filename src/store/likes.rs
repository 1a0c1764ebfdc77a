//! Likes: like and unlike (idempotent), who likes a status.

use super::outbox::Op;
use super::paging::{Cursor, IdPage};
use super::{Store, StoreResult};
use crate::model::now;

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
        let owed = self
            .start_op(Op::Like {
                uid,
                sid,
                author,
                private,
                like,
                at: now(),
            })
            .await?;
        self.run_like(&owed).await
    }

    /// Who likes a status, oldest like first, `count` from `cursor`.
    pub async fn likers(&self, sid: u64, cursor: &Cursor, count: usize) -> StoreResult<IdPage> {
        self.id_page(&self.keys.likers(sid), cursor, count).await
    }
}
