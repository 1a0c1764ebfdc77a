//! The chain that ends sessions: at their authority, then in the index
//! with their revocation ([`store::sessions`](crate::store::entities::sessions) starts it).

use crate::store::chains::entry::Entry;
use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;
use serde::{Deserialize, Serialize};

/// Sessions ended ([`store::sessions`](crate::store::entities::sessions)): at their authority, then in the
/// index with their revocation.
/// (`Op::EndSessions`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndSessionsOp {
    /// Each session's user and id.
    pub sessions: Vec<(u64, String)>,
    /// For the idle clean-up: end only those not seen since.
    pub cutoff: Option<f64>,
}

impl EndSessionsOp {
    /// Ends the op's sessions, then retires its entry. Returns how many
    /// ended (again, on a rerun).
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<usize> {
        let n = store.sessions().close(&self.sessions, self.cutoff).await?;
        store.outbox().finish_with(entry, Vec::new()).await?;
        Ok(n)
    }
}
