//! Follow requests to private accounts: asked, listed, authorized, rejected
//! or cancelled.

use super::chains::request::RequestOp;
use super::outbox::Op;
use super::paging::{Cursor, IdPage};
use super::plumbing::error::StoreResult;
use super::plumbing::handle::Store;
use crate::model::now;
use redis::AsyncCommands;

/// Which follow requests of a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requests {
    /// Asked of the user.
    Incoming,
    /// Asked by the user.
    Outgoing,
}

impl Store {
    /// `source` asks to follow `target`. Returns whether the request is new;
    /// the `follow_request` event (for both users' streams) goes out with it.
    pub async fn request_follow(&self, source: u64, target: u64) -> StoreResult<bool> {
        self.request_step(source, target, true).await
    }

    /// Drops the request of `source` to follow `target`; whether there was one.
    pub async fn drop_request(&self, source: u64, target: u64) -> StoreResult<bool> {
        self.request_step(source, target, false).await
    }

    async fn request_step(&self, source: u64, target: u64, ask: bool) -> StoreResult<bool> {
        let op = RequestOp {
            source,
            target,
            ask,
            at: now(),
        };
        let owed = self.start_op(Op::Request(op.clone())).await?;
        self.run_request(&owed.entry, &op).await
    }

    /// Whether `source` has asked to follow `target`.
    pub async fn has_requested(&self, source: u64, target: u64) -> StoreResult<bool> {
        let mut conn = self.conn();
        let at: Option<f64> = conn.zscore(self.keys.requests(target), source).await?;
        Ok(at.is_some())
    }

    /// Who asked to follow `uid`, or whom `uid` asked, oldest first.
    pub async fn request_page(
        &self,
        uid: u64,
        which: Requests,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<IdPage> {
        let key = match which {
            Requests::Incoming => self.keys.requests(uid),
            Requests::Outgoing => self.keys.requested(uid),
        };
        self.id_page(&key, cursor, count).await
    }

    /// Everyone waiting for `uid`'s answer.
    pub async fn all_requests(&self, uid: u64) -> StoreResult<Vec<u64>> {
        let mut conn = self.conn();
        let ids: Vec<u64> = conn.zrange(self.keys.requests(uid), 0, -1).await?;
        Ok(ids)
    }
}
