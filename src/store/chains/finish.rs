//! The outbox's view ([`Outbox`]) and finishing an entry: its events emitted once, its fan-out
//! queued, its answer kept, the entry retired (see `outbox`'s module
//! doc), and the lease a long chain renews as it goes.

use super::entry::Entry;
use crate::model::now;
use crate::store::events::Body;
use crate::store::handle::Store;
use crate::store::log::emitter;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::settings::Pauses;

/// Seconds after the end of its lease within which a run of an op may
/// still emit its events (later, it fails and a worker claims the
/// entry again).
pub const EMIT_GRACE: f64 = 30.0;

/// How long an `Idempotency-Key` of `POST /api/v1/statuses` is remembered, in seconds.
pub const IDEMPOTENCY_TTL: u64 = 24 * 3600;

/// The outbox: each write that spans slots, recorded before its first
/// step ([`Outbox::begin`]) and retired after its last ([`Outbox::finish`];
/// `Store::outbox`). The workers' half (claiming, completing, measuring)
/// is in [`store::outbox`](crate::store::outbox).
#[derive(Clone, Copy)]
pub struct Outbox<'a> {
    pub(in crate::store) store: &'a Store,
}

/// What finishing a write gives back.
#[derive(Debug, Default)]
pub struct Finish {
    /// Events, emitted in order within each shard of the log.
    pub events: Vec<Body>,
    /// Fan-out tasks to queue.
    pub tasks: Vec<String>,
    /// The answer kept under the idempotency key.
    pub answer: Option<(String, String)>,
}

impl<'a> Outbox<'a> {
    /// The outbox lease deadline for work starting now.
    pub(crate) fn lease_deadline(self) -> f64 {
        now() + self.store.outbox_lease
    }

    /// Finishes an outbox entry: its events (once: `emit_once.lua`, in
    /// `{g}`, in the process's next batch: [`store::writes::emitter`](crate::store::log::emitter)), then the
    /// entry retired in its partition with its answer kept and its fan-out
    /// tasks queued on the partition's queue (`op_retire.lua`; this
    /// process's workers are woken for them). Returns the first event's id
    /// when this call emitted them.
    pub(crate) async fn finish(self, entry: &Entry, f: Finish) -> StoreResult<Option<String>> {
        let mut conn = self.store.conn();
        let mut first = None;
        let mut shards: Vec<usize> = f
            .events
            .iter()
            .map(|b| self.store.keys.log_shard(b.key))
            .collect();
        shards.sort_unstable();
        shards.dedup();
        let emits = !f.events.is_empty();
        if emits {
            if now() > entry.deadline + EMIT_GRACE {
                return Err(StoreError::Unavailable(
                    "the write outlived its lease; a worker finishes it".into(),
                ));
            }
            let sink = |k| emitter::Sink {
                conn: self.store.conn(),
                scripts: self.store.scripts.clone(),
                emitted: self.store.keys.log_emitted(k),
                events: self.store.keys.log_events(k),
                channel: self.store.keys.log_channel(k),
                publish: self.store.log_shape().publish,
                shard: k,
                maxlen: self.store.log_shape().maxlen,
                exact: self.store.log_shape().exact(),
            };
            let events = f
                .events
                .into_iter()
                .map(|b| (self.store.keys.log_shard(b.key), b.json))
                .collect();
            first = self
                .store
                .emitter
                .emit(sink, entry.n, events, &self.store.clocks)
                .await?;
        }
        Pauses::hold(self.store.pauses.retire).await;
        let k = entry.part;
        let outbox = self.store.keys.part_outbox(k);
        let mut inv = self.store.scripts.op_retire.prepare_invoke();
        inv.key(&outbox).key(self.store.keys.part_retired(k));
        match &f.answer {
            Some((key, _)) => inv.key(key),
            None => inv.key(&outbox),
        };
        inv.key(self.store.keys.part_fanout(k))
            .arg(&entry.member)
            .arg(entry.n)
            .arg(now())
            .arg(
                shards
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            )
            .arg(f.answer.as_ref().map_or("", |(_, a)| a.as_str()));
        for t in &f.tasks {
            inv.arg(t);
        }
        let retired: i64 = inv.invoke_async(&mut conn).await?;
        if retired == 1 && !f.tasks.is_empty() {
            self.store.fanout_hints.hint(k);
        }
        Ok(first)
    }

    /// Retires an entry emitting these events (no fan-out, no answer).
    pub(crate) async fn finish_with(self, entry: &Entry, events: Vec<Body>) -> StoreResult<()> {
        self.finish(
            entry,
            Finish {
                events,
                ..Finish::default()
            },
        )
        .await?;
        Ok(())
    }

    /// Pushes an entry's lease out again (a long chain, an account's
    /// deletion, renews it as it goes, so no worker takes it over while
    /// it runs).
    pub(crate) async fn extend(self, entry: &Entry) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: i64 = redis::cmd("ZADD")
            .arg(self.store.keys.part_outbox(entry.part))
            .arg("XX")
            .arg(self.lease_deadline())
            .arg(&entry.member)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }
}
