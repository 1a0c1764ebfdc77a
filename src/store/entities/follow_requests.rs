//! Follow requests to private accounts: asked, listed, authorized, rejected
//! or cancelled.

use crate::model::now;
use crate::store::chains::request::RequestOp;
use crate::store::entities::follows::Follows;
use crate::store::handle::Store;
use crate::store::outbox::Op;
use crate::store::paging::{id_page, Cursor, IdPage};
use crate::store::plumbing::error::StoreResult;
use redis::AsyncCommands;

/// Which follow requests of a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requests {
    /// Asked of the user.
    Incoming,
    /// Asked by the user.
    Outgoing,
}

/// Follow requests to private accounts (`Follows::requests`).
#[derive(Clone, Copy)]
pub struct FollowRequests<'a> {
    pub(in crate::store) store: &'a Store,
}

impl<'a> Follows<'a> {
    /// Follow requests: those to private accounts, waiting for an answer.
    pub fn requests(self) -> FollowRequests<'a> {
        FollowRequests { store: self.store }
    }
}

impl FollowRequests<'_> {
    /// `source` asks to follow `target`. Returns whether the request is new;
    /// the `follow_request` event (for both users' streams) goes out with it.
    pub async fn ask(self, source: u64, target: u64) -> StoreResult<bool> {
        self.step(source, target, true).await
    }

    /// Drops the request of `source` to follow `target`; whether there was one.
    pub async fn withdraw(self, source: u64, target: u64) -> StoreResult<bool> {
        self.step(source, target, false).await
    }

    async fn step(self, source: u64, target: u64, ask: bool) -> StoreResult<bool> {
        let op = RequestOp {
            source,
            target,
            ask,
            at: now(),
        };
        let owed = self.store.outbox().start(Op::Request(op.clone())).await?;
        op.run(self.store, &owed.entry).await
    }

    /// Whether `source` has asked to follow `target`.
    pub async fn has_requested(self, source: u64, target: u64) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let at: Option<f64> = conn
            .zscore(self.store.keys.requests(target), source)
            .await?;
        Ok(at.is_some())
    }

    /// Who asked to follow `uid`, or whom `uid` asked, oldest first.
    pub async fn page(
        self,
        uid: u64,
        which: Requests,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<IdPage> {
        let key = match which {
            Requests::Incoming => self.store.keys.requests(uid),
            Requests::Outgoing => self.store.keys.requested(uid),
        };
        id_page(self.store, &key, cursor, count).await
    }

    /// Everyone waiting for `uid`'s answer.
    pub async fn all(self, uid: u64) -> StoreResult<Vec<u64>> {
        let mut conn = self.store.conn();
        let ids: Vec<u64> = conn.zrange(self.store.keys.requests(uid), 0, -1).await?;
        Ok(ids)
    }
}
