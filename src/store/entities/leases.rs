//! Concurrent-stream slots as leases in Redis, so a per-user limit holds
//! across every server process and a crashed process cannot leak slots.
//!
//! A user's open streams are members of one ZSET scored by when their lease
//! lapses. Taking a slot drops the lapsed members first (`stream_lease.lua`);
//! each server renews the leases it holds well before they lapse and
//! removes a lease when its stream ends. Scores use the servers' clocks, so
//! clock skew between servers shifts when a dead server's slots lapse by
//! that skew, nothing more.

use crate::store::entities::sessions::Sessions;
use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;
use std::time::Duration;

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Stream slots, held as leases (`Sessions::stream_leases`).
#[derive(Clone, Copy)]
pub struct StreamLeases<'a> {
    pub(in crate::store) store: &'a Store,
}

impl<'a> Sessions<'a> {
    /// The stream slots sessions hold (a user's concurrent streams).
    pub fn stream_leases(self) -> StreamLeases<'a> {
        StreamLeases { store: self.store }
    }
}

impl StreamLeases<'_> {
    /// Takes one of `uid`'s `max` stream slots as `member` for `ttl`; false
    /// when all are held.
    pub async fn take(
        self,
        uid: u64,
        member: &str,
        max: usize,
        ttl: Duration,
    ) -> StoreResult<bool> {
        let taken: i64 = self
            .store
            .scripts
            .stream_lease
            .key(self.store.keys.stream_leases(uid))
            .arg(member)
            .arg(now_ms())
            .arg(ttl.as_millis() as u64)
            .arg(max)
            .invoke_async(&mut self.store.conn())
            .await?;
        Ok(taken == 1)
    }

    /// Pushes the leases `held` (user, member) forward by `ttl`. A lease
    /// that is gone stays gone (`XX`): its stream ended meanwhile, or Redis
    /// lost its data, which ends every session and so every stream too.
    pub async fn renew(self, held: &[(u64, String)], ttl: Duration) -> StoreResult<()> {
        if held.is_empty() {
            return Ok(());
        }
        let until = now_ms() + ttl.as_millis() as u64;
        let mut pipe = redis::pipe();
        for (uid, member) in held {
            let key = self.store.keys.stream_leases(*uid);
            pipe.cmd("ZADD")
                .arg(&key)
                .arg("XX")
                .arg(until)
                .arg(member)
                .ignore()
                .pexpire(&key, ttl.as_millis() as i64)
                .ignore();
        }
        let _: () = pipe.query_async(&mut self.store.conn()).await?;
        Ok(())
    }

    /// Gives a stream slot back.
    pub async fn release(self, uid: u64, member: &str) -> StoreResult<()> {
        let _: () = redis::cmd("ZREM")
            .arg(self.store.keys.stream_leases(uid))
            .arg(member)
            .query_async(&mut self.store.conn())
            .await?;
        Ok(())
    }
}
