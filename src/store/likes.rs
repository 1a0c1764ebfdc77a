//! Likes: like and unlike (idempotent), who likes a status.

use super::events::body;
use super::outbox::Op;
use super::paging::{Cursor, IdPage};
use super::plumbing::error::{StoreError, StoreResult};
use super::plumbing::handle::Store;
use crate::model::{now, Event};

impl Store {
    /// `uid` likes (`like = true`) or stops liking status `sid` by `author`.
    /// Returns whether it changed and the status's likes now. The like event
    /// (for the author's user stream) goes out once, with the change.
    /// On a cluster, a chain driven from the outbox; on one Redis, one
    /// script ([`Store::like_whole`]).
    pub async fn set_like(
        &self,
        uid: u64,
        sid: u64,
        author: u64,
        private: bool,
        like: bool,
    ) -> StoreResult<(bool, u64)> {
        if !self.is_cluster() {
            return self.like_whole(uid, sid, author, private, like).await;
        }
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

    /// [`Store::set_like`] on one Redis: `like_whole.lua`, every step in one
    /// atomic script (one round trip, no outbox entry).
    async fn like_whole(
        &self,
        uid: u64,
        sid: u64,
        author: u64,
        private: bool,
        like: bool,
    ) -> StoreResult<(bool, u64)> {
        let at = now();
        let event = body(&Event::Like {
            at,
            status_id: sid,
            source: uid,
            target: author,
            private,
        });
        let mut conn = self.conn();
        let reply: redis::Value = self
            .scripts
            .like_whole
            .key(self.keys.status(sid))
            .key(self.keys.likers(sid))
            .key(self.keys.likes(uid))
            .key(self.keys.events())
            .arg(uid)
            .arg(sid)
            .arg(at)
            .arg(if like { "1" } else { "0" })
            .arg(self.replay_maxlen)
            .arg(self.keys.channel())
            .arg(event)
            .arg(body(&Event::Unlike {
                at,
                status_id: sid,
                source: uid,
                target: author,
            }))
            .invoke_async(&mut conn)
            .await?;
        self.counts_cache.forget(sid);
        let (changed, likes) = redis::from_redis_value::<(i64, u64)>(reply)
            .map_err(|_| StoreError::NotFound("status"))?;
        Ok((changed == 1, likes))
    }
}
