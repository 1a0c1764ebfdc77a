//! The like chain: the status's likers (the authority), then the user's
//! list of likes, then the event.

use crate::model::Event;
use crate::store::events::body;
use crate::store::outbox::{Finish, Op, Owed};
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::handle::Store;
use redis::AsyncCommands;

impl Store {
    /// A like change's steps: the status's likers (the authority), the
    /// user's list of likes made to agree with it; then the like event.
    /// Returns whether it changed and the likes now.
    pub(crate) async fn run_like(&self, owed: &Owed) -> StoreResult<(bool, u64)> {
        let Op::Like {
            uid,
            sid,
            author,
            private,
            like,
            at,
        } = owed.op
        else {
            return Err(StoreError::Internal("not a like".into()));
        };
        let mut conn = self.conn();
        let reply: redis::Value = self
            .scripts
            .like
            .key(self.keys.status(sid))
            .key(self.keys.likers(sid))
            .key(self.keys.like_seq(sid))
            .arg(uid)
            .arg(owed.n)
            .arg(at)
            .arg(if like { "1" } else { "0" })
            .invoke_async(&mut conn)
            .await?;
        self.counts_cache.forget(sid);
        let Ok((changed, likes)) = redis::from_redis_value::<(i64, u64)>(reply) else {
            self.finish_op(owed, Finish::default()).await?;
            return Err(StoreError::NotFound("status"));
        };
        // The user's list follows the likers set: written, then checked
        // again, so a like and an unlike racing leave it as the set says.
        for _ in 0..2 {
            let since: Option<f64> = conn.zscore(self.keys.likers(sid), uid).await?;
            let _: () = match since {
                Some(t) => conn.zadd(self.keys.likes(uid), sid, t).await?,
                None => conn.zrem(self.keys.likes(uid), sid).await?,
            };
            let again: Option<f64> = conn.zscore(self.keys.likers(sid), uid).await?;
            if again.is_some() == since.is_some() {
                break;
            }
        }
        let mut events = Vec::new();
        if changed == 1 && like {
            events.push(body(&Event::Like {
                at,
                status_id: sid,
                source: uid,
                target: author,
                private,
            }));
        } else if changed == 1 {
            // For the notifier, which takes the like's notification away.
            events.push(body(&Event::Unlike {
                at,
                status_id: sid,
                source: uid,
                target: author,
            }));
        }
        self.finish_with(owed, events).await?;
        Ok((changed == 1, likes))
    }
}
