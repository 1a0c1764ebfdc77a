//! The key layout of the data in Redis, checked by each process before it
//! serves.
//!
//! `fh:{g}:layout` holds the number of the layout the data was written in.
//! The first process to start on an empty store writes [`LAYOUT`] there
//! (SETNX, so concurrent starts agree); every process that finds another
//! number refuses to serve rather than read or change data kept where it
//! does not look. A version that moves anything raises [`LAYOUT`] and
//! brings the move from the number before, made before it serves; the
//! layout of the first release is 1, and nothing has moved since.

use crate::store::plumbing::error::StoreResult;
use crate::store::plumbing::handle::Store;
use redis::AsyncCommands;

/// The key layout this version reads and writes.
pub const LAYOUT: u64 = 1;

impl Store {
    /// Stamps an empty store with [`LAYOUT`]; returns the layout found
    /// instead when the data was written in another (`None`: ours).
    pub async fn foreign_layout(&self) -> StoreResult<Option<String>> {
        let mut conn = self.conn();
        let _: () = conn.set_nx(self.keys.layout(), LAYOUT).await?;
        let found: Option<String> = conn.get(self.keys.layout()).await?;
        Ok(found.filter(|f| *f != LAYOUT.to_string()))
    }
}

/// What to tell an operator whose data is in layout `found`.
pub fn foreign_layout_error(found: &str) -> String {
    format!(
        "the data in Redis is in key layout {found}, this version reads layout {LAYOUT}: \
         run the version that wrote it, or point --redis-url (or --key-prefix) elsewhere"
    )
}
