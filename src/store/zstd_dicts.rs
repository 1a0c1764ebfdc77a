//! The stream compression dictionaries (`compress=zstd`): the newest few
//! in `{g}`, one of them current. `crate::stream::zstd` trains and uses
//! them.

use super::plumbing::error::StoreResult;
use super::plumbing::handle::Store;
use redis::AsyncCommands;

/// Dictionaries kept: the current one and the three before it.
pub const KEPT: usize = 4;

impl Store {
    /// The current dictionary's id and bytes, if there is one.
    pub async fn zstd_dict_current(&self) -> StoreResult<Option<(String, Vec<u8>)>> {
        let mut conn = self.conn();
        let Some(id): Option<String> = conn.get(self.keys.zstd_dict_current()).await? else {
            return Ok(None);
        };
        Ok(self.zstd_dict(&id).await?.map(|bytes| (id, bytes)))
    }

    /// Dictionary `id`'s bytes, while it is kept.
    pub async fn zstd_dict(&self, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let mut conn = self.conn();
        Ok(conn.hget(self.keys.zstd_dicts(), id).await?)
    }

    /// The current dictionary's id, if there is one.
    pub async fn zstd_dict_current_id(&self) -> StoreResult<Option<String>> {
        let mut conn = self.conn();
        Ok(conn.get(self.keys.zstd_dict_current()).await?)
    }

    /// Publishes dictionary `id` as the current one (with `first`: only if
    /// there is none yet); the current id after the call.
    pub async fn put_zstd_dict(&self, id: &str, bytes: &[u8], first: bool) -> StoreResult<String> {
        let mut conn = self.conn();
        Ok(self
            .scripts
            .zstd_dict_put
            .key(self.keys.zstd_dicts())
            .key(self.keys.zstd_dict_order())
            .key(self.keys.zstd_dict_current())
            .arg(id)
            .arg(bytes)
            .arg(KEPT)
            .arg(if first { "1" } else { "0" })
            .invoke_async(&mut conn)
            .await?)
    }

    /// Takes the trainer's lease for `secs` unless another process holds
    /// it; whether this call took it.
    pub async fn take_zstd_trainer(&self, holder: &str, secs: u64) -> StoreResult<bool> {
        let mut conn = self.conn();
        let taken: Option<String> = redis::cmd("SET")
            .arg(self.keys.zstd_trainer())
            .arg(holder)
            .arg("NX")
            .arg("EX")
            .arg(secs.max(1))
            .query_async(&mut conn)
            .await?;
        Ok(taken.is_some())
    }
}
