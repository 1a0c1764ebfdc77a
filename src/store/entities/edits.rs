//! Editing a status: the request's way in. It records the edit in the
//! outbox (an idempotency key answers a repeat) and runs its chain
//! (`chains/edit.rs`, which a worker runs too if the request dies).

use crate::model::Version;
use crate::store::chains::edit::{EditOp, EditRefused, Edited};
use crate::store::entities::statuses::Statuses;
use crate::store::outbox::{Begun, Op, Owed};
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;

impl Statuses<'_> {
    /// A status's versions, oldest first (none if it was never edited).
    pub async fn versions(self, sid: u64) -> StoreResult<Vec<Version>> {
        let mut conn = self.store.conn();
        let raw: Vec<String> = conn
            .lrange(self.store.keys.status_versions(sid), 0, -1)
            .await?;
        Ok(raw
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect())
    }

    /// Edits status `sid` by `uid` (see [`EditOp::run`](crate::store::chains::edit::EditOp::run)). With an
    /// idempotency key this author used for an edit of this status within
    /// [`IDEMPOTENCY_TTL`](crate::store::outbox::IDEMPOTENCY_TTL), edits
    /// nothing (finishing the first edit if it is still under way) and
    /// answers the status as it is.
    #[allow(clippy::too_many_arguments)]
    pub async fn edit(
        self,
        sid: u64,
        uid: u64,
        message: &str,
        hashtags: Vec<String>,
        mentions: Vec<String>,
        mentioned: Vec<u64>,
        private: bool,
        at: f64,
        idempotency: Option<&str>,
    ) -> StoreResult<Edited> {
        let idempotency_key = idempotency.map(|k| format!("edit:{sid}:{k}"));
        let op = Op::Edit(EditOp {
            sid,
            uid,
            message: message.to_string(),
            hashtags,
            mentions,
            mentioned,
            private,
            at,
            idempotency_key: idempotency_key.clone(),
        });
        let store = self.store;
        let key = idempotency_key.map(|k| store.keys.idempotency(uid, &k));
        let owed = match store.outbox().begin(&op, key.as_deref()).await? {
            Begun::Started(owed) => *owed,
            Begun::Duplicate(first) => {
                if let Some(pending) = first.strip_prefix("pending|") {
                    if let Some(owed) =
                        Owed::decode_pending(pending, store.outbox().lease_deadline())
                    {
                        store.outbox().complete(&owed).await?;
                    }
                }
                return match store.statuses().get(sid).await {
                    Ok(status) => Ok(Edited::Done(Box::new(status))),
                    Err(StoreError::NotFound(_)) => Ok(Edited::Refused(EditRefused::Missing)),
                    Err(e) => Err(e),
                };
            }
        };
        let Op::Edit(op) = &owed.op else {
            return Err(StoreError::Internal("not an edit".into()));
        };
        op.run(store, &owed.entry).await
    }
}
