//! The stream compression dictionaries (`compress=zstd`): the newest few
//! in `{g}`, one of them current. [`crate::stream::zstd`] trains and uses
//! them.

use crate::store::events::Events;
use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;
use redis::AsyncCommands;

/// Dictionaries kept: the current one and the three before it.
pub(crate) const KEPT: usize = 4;

/// The zstd dictionaries streams share (`Events::zstd_dicts`).
#[derive(Clone, Copy)]
pub struct ZstdDicts<'a> {
    pub(in crate::store) store: &'a Store,
}

impl<'a> Events<'a> {
    /// The zstd dictionaries trained on the log's frames.
    pub fn zstd_dicts(self) -> ZstdDicts<'a> {
        ZstdDicts { store: self.store }
    }
}

impl ZstdDicts<'_> {
    /// The current dictionary's id and bytes, if there is one.
    pub async fn current(self) -> StoreResult<Option<(String, Vec<u8>)>> {
        let mut conn = self.store.conn();
        let Some(id): Option<String> = conn.get(self.store.keys.zstd_dict_current()).await? else {
            return Ok(None);
        };
        Ok(self.get(&id).await?.map(|bytes| (id, bytes)))
    }

    /// Dictionary `id`'s bytes, while it is kept.
    pub async fn get(self, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let mut conn = self.store.conn();
        Ok(conn.hget(self.store.keys.zstd_dicts(), id).await?)
    }

    /// The current dictionary's id, if there is one.
    pub async fn current_id(self) -> StoreResult<Option<String>> {
        let mut conn = self.store.conn();
        Ok(conn.get(self.store.keys.zstd_dict_current()).await?)
    }

    /// Publishes dictionary `id` as the current one (with `first`: only if
    /// there is none yet); the current id after the call.
    pub async fn put(self, id: &str, bytes: &[u8], first: bool) -> StoreResult<String> {
        let mut conn = self.store.conn();
        Ok(self
            .store
            .scripts
            .zstd_dict_put
            .key(self.store.keys.zstd_dicts())
            .key(self.store.keys.zstd_dict_order())
            .key(self.store.keys.zstd_dict_current())
            .arg(id)
            .arg(bytes)
            .arg(KEPT)
            .arg(if first { "1" } else { "0" })
            .invoke_async(&mut conn)
            .await?)
    }

    /// Takes the trainer's lease for `secs` unless another process holds
    /// it; whether this call took it.
    pub async fn take_trainer(self, holder: &str, secs: u64) -> StoreResult<bool> {
        let mut conn = self.store.conn();
        let taken: Option<String> = redis::cmd("SET")
            .arg(self.store.keys.zstd_trainer())
            .arg(holder)
            .arg("NX")
            .arg("EX")
            .arg(secs.max(1))
            .query_async(&mut conn)
            .await?;
        Ok(taken.is_some())
    }
}
