//! Liking, both ways: the op a like records ([`LikeOp`]) and its chain
//! (the status's likers, the authority; the user's list of likes; then the
//! event), and on one Redis the whole like in one atomic script,
//! `like_whole.lua` ([`like_whole`]). [`store::likes`](crate::store::entities::likes) chooses.

use crate::model::Id;
use crate::model::{now, Event};
use crate::store::chains::entry::Entry;
use crate::store::chains::finish::Finish;
use crate::store::events::body;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

/// A like or unlike.
/// (`Op::Like`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LikeOp {
    /// Who likes.
    pub uid: u64,
    /// The status.
    pub sid: u64,
    /// Its author (for the event).
    pub author: u64,
    /// Whether the status is private (for the event).
    pub private: bool,
    /// Like (true) or unlike.
    pub like: bool,
    /// Time of the change.
    pub at: f64,
}

/// [`Likes::set`](crate::store::entities::likes::Likes::set) on one Redis: `like_whole.lua`, every step in one
/// atomic script (one round trip, no outbox entry).
pub(crate) async fn like_whole(
    store: &Store,
    uid: u64,
    sid: u64,
    author: u64,
    private: bool,
    like: bool,
) -> StoreResult<(bool, u64)> {
    let at = now();
    let event = body(&Event::Like {
        at,
        status_id: Id(sid),
        source: Id(uid),
        target: Id(author),
        private,
    });
    let shard = store.keys.log_shard(event.key);
    let mut conn = store.conn();
    let reply: redis::Value = store
        .scripts
        .like_whole
        .key(store.keys.status(sid))
        .key(store.keys.likers(sid))
        .key(store.keys.likes(uid))
        .key(store.keys.log_events(shard))
        .arg(uid)
        .arg(sid)
        .arg(at)
        .arg(if like { "1" } else { "0" })
        .arg(store.log_shape().trim())
        .arg(store.keys.log_channel(shard))
        .arg(&event.json)
        .arg(
            body(&Event::Unlike {
                at,
                status_id: Id(sid),
                source: Id(uid),
                target: Id(author),
            })
            .json,
        )
        .arg(store.log_shape().publish)
        .arg(shard)
        .invoke_async(&mut conn)
        .await?;
    store.caches.counts.forget(sid);
    let (changed, likes) =
        redis::from_redis_value::<(i64, u64)>(reply).map_err(|_| StoreError::NotFound("status"))?;
    Ok((changed == 1, likes))
}

impl LikeOp {
    /// A like change's steps: the status's likers (the authority), the
    /// user's list of likes made to agree with it; then the like event.
    /// Returns whether it changed and the likes now.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<(bool, u64)> {
        let LikeOp {
            uid,
            sid,
            author,
            private,
            like,
            at,
        } = *self;
        let mut conn = store.conn();
        let reply: redis::Value = store
            .scripts
            .like
            .key(store.keys.status(sid))
            .key(store.keys.likers(sid))
            .key(store.keys.like_seq(sid))
            .arg(uid)
            .arg(entry.n)
            .arg(at)
            .arg(if like { "1" } else { "0" })
            .invoke_async(&mut conn)
            .await?;
        store.caches.counts.forget(sid);
        let Ok((changed, likes)) = redis::from_redis_value::<(i64, u64)>(reply) else {
            store.outbox().finish(entry, Finish::default()).await?;
            return Err(StoreError::NotFound("status"));
        };
        // The user's list follows the likers set: written, then checked
        // again, so a like and an unlike racing leave it as the set says.
        for _ in 0..2 {
            let since: Option<f64> = conn.zscore(store.keys.likers(sid), uid).await?;
            let _: () = match since {
                Some(t) => conn.zadd(store.keys.likes(uid), sid, t).await?,
                None => conn.zrem(store.keys.likes(uid), sid).await?,
            };
            let again: Option<f64> = conn.zscore(store.keys.likers(sid), uid).await?;
            if again.is_some() == since.is_some() {
                break;
            }
        }
        let mut events = Vec::new();
        if changed == 1 && like {
            events.push(body(&Event::Like {
                at,
                status_id: Id(sid),
                source: Id(uid),
                target: Id(author),
                private,
            }));
        } else if changed == 1 {
            // For the notifier, which takes the like's notification away.
            events.push(body(&Event::Unlike {
                at,
                status_id: Id(sid),
                source: Id(uid),
                target: Id(author),
            }));
        }
        store.outbox().finish_with(entry, events).await?;
        Ok((changed == 1, likes))
    }
}
