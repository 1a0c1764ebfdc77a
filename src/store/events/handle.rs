//! The event log's handle (`Store::events`): emitting outside the outbox
//! (the notifier's events, a moderator's, announcements), and the name of
//! the log that processes' histories copy.

use super::body::Body;
use crate::store::handle::Store;
use crate::store::plumbing::error::StoreResult;

/// The event log: its shards' buffers and channels (`Store::events`).
#[derive(Clone, Copy)]
pub struct Events<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Events<'_> {
    /// What this process knows of each Redis node's clock: the live
    /// subscription tells it, writes wait on it.
    pub fn clocks(self) -> std::sync::Arc<crate::store::log::clocks::NodeClocks> {
        self.store.clocks.clone()
    }

    /// Appends an event to its shard's buffer and publishes it in one
    /// atomic step: its id, once every master's clock has passed it.
    pub async fn emit(self, body: &Body) -> StoreResult<String> {
        self.append(
            self.store.keys.log_shard(body.key),
            std::slice::from_ref(&body.json),
        )
        .await
    }

    /// Emits `bodies`, each shard's as one buffer entry and one published
    /// message (at most [`MOST_EVENTS`](crate::store::log::emitter::MOST_EVENTS)
    /// at a time: larger batches go out in several).
    pub async fn emit_many(self, bodies: &[Body]) -> StoreResult<()> {
        let mut shards: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
        for b in bodies {
            let k = self.store.keys.log_shard(b.key);
            shards.entry(k).or_default().push(b.json.clone());
        }
        for (k, jsons) in shards {
            for chunk in jsons.chunks(crate::store::log::emitter::MOST_EVENTS) {
                self.append(k, chunk).await?;
            }
        }
        Ok(())
    }

    /// Appends `jsons` to shard `k` as one entry of no op (`emit_once.lua`,
    /// unmarked): the entry's id.
    async fn append(self, k: usize, jsons: &[String]) -> StoreResult<String> {
        let (store, keys) = (self.store, &self.store.keys);
        let mut conn = store.conn();
        let mut inv = store.scripts.emit_once.prepare_invoke();
        inv.key(keys.log_emitted(k))
            .key(keys.log_events(k))
            .arg(store.log_shape().trim())
            .arg(keys.log_channel(k))
            .arg(store.log_shape().publish)
            .arg(k)
            .arg("")
            .arg("-")
            .arg(jsons.len());
        for j in jsons {
            inv.arg(j);
        }
        let firsts: Vec<String> = inv.invoke_async(&mut conn).await?;
        let first = firsts.into_iter().next().unwrap_or_default();
        // Acknowledged once every master's clock is past it (the
        // commit-wait, `clocks`): what is written next comes after it.
        if let Some(id) = crate::store::log::id::EventId::parse(&first) {
            store.clocks.wait_past(id).await;
        }
        Ok(first)
    }

    /// The name of this store's event stream, made at first use: a
    /// process's history on disk copies one store's events, and one that
    /// finds another name in its directory starts afresh.
    pub async fn stream_name(self) -> StoreResult<String> {
        let mut conn = self.store.conn();
        let fresh = format!("{:032x}", rand::random::<u128>());
        let key = self.store.keys.event_stream_name();
        let _: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(&fresh)
            .arg("NX")
            .query_async(&mut conn)
            .await?;
        let name: Option<String> = redis::cmd("GET").arg(&key).query_async(&mut conn).await?;
        Ok(name.unwrap_or(fresh))
    }
}
