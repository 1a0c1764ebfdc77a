//! The demo world's record (`serve --demo`): whether it was seeded, so a
//! restart goes on with the same world instead of making another, and
//! which account is its read-only viewer.

use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;
use redis::AsyncCommands;

/// The demo world's record (`Store::demo`).
#[derive(Clone, Copy)]
pub struct Demo<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Demo<'_> {
    /// The number of users of the seeded demo world, if one was seeded.
    pub async fn world(self) -> StoreResult<Option<usize>> {
        let mut conn = self.store.conn();
        let n: Option<usize> = conn.hget(self.store.keys.demo(), "users").await?;
        Ok(n)
    }

    /// Records that a demo world of `users` users is seeded.
    pub async fn set_world(self, users: usize) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let () = conn.hset(self.store.keys.demo(), "users", users).await?;
        Ok(())
    }

    /// The demo viewer's user id ([`demo::viewer`](crate::demo::viewer)), once made.
    pub async fn viewer(self) -> StoreResult<Option<u64>> {
        let mut conn = self.store.conn();
        let uid: Option<u64> = conn.hget(self.store.keys.demo(), "viewer").await?;
        Ok(uid)
    }

    /// Records the demo viewer's user id unless one is recorded already
    /// (or in any case with `replace`); returns the one recorded before
    /// when it is kept.
    pub async fn set_viewer(self, uid: u64, replace: bool) -> StoreResult<Option<u64>> {
        let mut conn = self.store.conn();
        if replace {
            let () = conn.hset(self.store.keys.demo(), "viewer", uid).await?;
            return Ok(None);
        }
        let (set, recorded): (bool, Option<u64>) = redis::pipe()
            .hset_nx(self.store.keys.demo(), "viewer", uid)
            .hget(self.store.keys.demo(), "viewer")
            .query_async(&mut conn)
            .await?;
        Ok(if set { None } else { recorded })
    }

    /// How many statuses `uid`'s profile holds, and the oldest of them: the
    /// demo deletes that one past its per-user bound.
    pub async fn oldest(self, uid: u64) -> StoreResult<(u64, Option<u64>)> {
        let mut conn = self.store.conn();
        let key = self.store.keys.profile(uid);
        let (n, oldest): (u64, Vec<u64>) = redis::pipe()
            .zcard(&key)
            .zrange(&key, 0, 0)
            .query_async(&mut conn)
            .await?;
        Ok((n, oldest.first().copied()))
    }
}
