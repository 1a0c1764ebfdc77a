//! Writes that span slots, as chains of single-slot steps driven from the
//! outbox.
//!
//! Every write that touches more than one slot (a sign-up, a post, a delete,
//! a follow, a like, a follow request) runs the same way:
//!
//! 1. `op_begin.lua` records the whole write as an [`Op`] in an outbox
//!    ZSET, scored by a lease deadline, and numbers it. Every write goes
//!    to one of [`OUTBOX_PARTS`] partitions, each in a slot
//!    of its own, chosen by what it changes ([`Op::part`]): every change
//!    between one pair of users (follows, follow requests, blocks, mutes)
//!    lands in the pair's partition, a like in its user's and status's, so
//!    the partition's counter orders every change that is compared with
//!    another (the number is the sequence `follow_source.lua`,
//!    `relate.lua` and `like.lua` compare); a user's own writes (posts,
//!    deletes, messages, account changes, a sign-up under the snowflake id
//!    it took) go to the user's, where their Idempotency-Key lives and is
//!    claimed with the entry. Numbers are `counter * OUTBOX_PARTS +
//!    partition`, unique everywhere.
//! 2. The steps run one slot at a time (`status_put.lua` on the status,
//!    `author_post.lua` on the author, `replies_count.lua` on the parent,
//!    `trend.lua` on `{trends}`, the fan-out on each follower, ...). Each is
//!    idempotent, so running it twice changes nothing more.
//! 3. The entry's events go out first (`emit_once.lua`, in `{g}`: only if
//!    the op's mark in `emitted` is new), then `op_retire.lua` retires it
//!    in its partition, keeps its answer under its idempotency key, queues
//!    its fan-out ranges and notes its number in the partition's `retired`
//!    ZSET.
//!    A rerun (a worker finishing a dead request's chain) finds the mark
//!    and emits nothing, however long after the first run it comes. A run
//!    emits only within [`EMIT_GRACE`] seconds of its lease's end (else it
//!    fails, and a worker claims the entry again), and every run took its
//!    lease before the entry was retired, so no run emits later than the
//!    lease plus the grace after the retirement; the sweeper forgets a
//!    mark [`MARK_MARGIN`] seconds after that ([`Outbox::emitted_kept`](crate::store::outbox::Outbox::emitted_kept)).
//!
//! A request runs the chain itself. If it dies (or its client hangs up and
//! the task is dropped), the entry's lease runs out and a worker's sweeper
//! claims it and runs the same chain ([`Outbox::complete`](crate::store::outbox::Outbox::complete)): a crash
//! between steps is finished later, and a retry repeats nothing. Events go
//! out last, so a client that gets an event can read what it refers to.

use super::plumbing::error::{StoreError, StoreResult};
use super::plumbing::keys::OUTBOX_PARTS;

use crate::model::now;
pub use crate::store::chains::entry::Entry;
pub use crate::store::chains::finish::Outbox;
pub use crate::store::chains::finish::{Finish, EMIT_GRACE, IDEMPOTENCY_TTL};
pub(crate) use crate::store::chains::op::Begun;
pub use crate::store::chains::op::{Op, Owed};
use redis::AsyncCommands;

/// Seconds a mark in `emitted` outlives the latest moment a run of its op
/// may emit (for clocks that differ between processes).
pub const MARK_MARGIN: f64 = 30.0;

/// Marks forgotten per partition per sweep.
const FORGET_BATCH: usize = 500;

impl<'a> Outbox<'a> {
    /// Runs an outbox entry's chain to its end. Safe to run more than once
    /// for the same entry, concurrently too (every step is idempotent and
    /// only the call that retires the entry emits and queues).
    pub async fn complete(self, owed: &Owed) -> StoreResult<()> {
        let result = owed.op.run(self.store, &owed.entry).await;
        match result {
            Err(
                StoreError::NotFound(_)
                | StoreError::Forbidden(_)
                | StoreError::Conflict(..)
                | StoreError::Limit(..),
            ) => Ok(()),
            other => other,
        }
    }

    /// Claims outbox entries whose lease ran out, for a worker to complete:
    /// up to `most` from each partition, each as
    /// its raw member, its partition and, when it parses, the entry. On the
    /// way, forgets the `emitted` marks of ops retired more than
    /// [`Outbox::emitted_kept`](crate::store::outbox::Outbox::emitted_kept) seconds ago, and hints the workers at every
    /// fan-out queue that is not empty ([`store::writes::fanout_hints`](crate::store::plumbing::fanout_hints)).
    pub async fn claim(self, most: usize) -> StoreResult<Vec<Claimed>> {
        let cutoff = now() - self.emitted_kept();
        let deadline = self.lease_deadline();
        let claims = (0..OUTBOX_PARTS).map(|part| async move {
            let mut conn = self.store.conn();
            let outbox = self.store.keys.part_outbox(part);
            let retired = self.store.keys.part_retired(part);
            let (members, old, queued): (Vec<String>, Vec<String>, u64) = self
                .store
                .scripts
                .outbox_claim
                .key(&outbox)
                .key(&retired)
                .key(self.store.keys.part_fanout(part))
                .arg(now())
                .arg(deadline)
                .arg(most)
                .arg(cutoff)
                .arg(FORGET_BATCH)
                .invoke_async(&mut conn)
                .await?;
            if queued > 0 {
                self.store.fanout_hints.hint(part);
            }
            if !old.is_empty() {
                // The marks first: a crash between leaves numbers to
                // forget again, never a mark nobody forgets.
                for (shard, ops) in marks_by_shard(&old, self.store.keys.log_shards()) {
                    let _: i64 = conn.hdel(self.store.keys.log_emitted(shard), ops).await?;
                }
                let _: i64 = conn.zrem(&retired, &old).await?;
            }
            Ok::<_, StoreError>(
                members
                    .into_iter()
                    .map(|raw| Claimed {
                        owed: Owed::decode_in(&raw, part).map(|owed| owed.leased(deadline)),
                        raw,
                        part,
                    })
                    .collect::<Vec<_>>(),
            )
        });
        // One after another (see `outboxes`).
        let mut claimed = Vec::new();
        for claim in claims {
            claimed.extend(claim.await?);
        }
        Ok(claimed)
    }

    /// Seconds a mark in `emitted` is kept after its op retired: the
    /// lease, the grace to emit after it, and the margin for clocks.
    pub fn emitted_kept(self) -> f64 {
        self.store.outbox_lease + EMIT_GRACE + MARK_MARGIN
    }

    /// Drops an outbox entry that cannot be parsed (written by a foreign
    /// version), so it is not claimed for ever.
    pub async fn forget(self, claimed: &Claimed) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: () = conn
            .zrem(self.store.keys.part_outbox(claimed.part), &claimed.raw)
            .await?;
        Ok(())
    }

    /// Seconds since the oldest outbox entry (of every partition) began
    /// (its lease deadline less the lease), 0 when the outboxes are empty.
    pub async fn age(self) -> StoreResult<f64> {
        let mut oldest = 0.0f64;
        for outbox in self.outboxes() {
            let mut conn = self.store.conn();
            let first: Vec<(String, f64)> = conn.zrange_withscores(outbox, 0, 0).await?;
            if let Some((_, deadline)) = first.first() {
                oldest = oldest.max(now() - (deadline - self.store.outbox_lease));
            }
        }
        Ok(oldest)
    }

    /// Entries in the outboxes (work owed by committed writes).
    pub async fn depth(self) -> StoreResult<u64> {
        let mut depth = 0;
        for outbox in self.outboxes() {
            let mut conn = self.store.conn();
            let n: u64 = conn.zcard(outbox).await?;
            depth += n;
        }
        Ok(depth)
    }

    /// Every partition's outbox ZSET. Read one after
    /// another: 33 requests in flight at once to a cluster that has just
    /// restarted were seen to leave the redis crate's cluster connection
    /// timing out for good (`streams_survive_a_redis_restart` on the
    /// cluster).
    fn outboxes(self) -> impl Iterator<Item = String> + 'a {
        (0..OUTBOX_PARTS).map(|part| self.store.keys.part_outbox(part))
    }
}

/// An entry a sweep claimed.
#[derive(Debug)]
pub struct Claimed {
    /// The member as stored.
    pub raw: String,
    /// Its partition.
    pub part: usize,
    /// The entry, when it parses.
    pub owed: Option<Owed>,
}

/// Retired ops' marks by shard of the event log: each member of a
/// partition's `retired` is `<op>:<shard>,<shard>` (`op_retire.lua`); one
/// written before the log had shards is `<op>` and held no shard's mark.
fn marks_by_shard(
    retired: &[String],
    self_shards: usize,
) -> std::collections::BTreeMap<usize, Vec<&str>> {
    let mut by: std::collections::BTreeMap<usize, Vec<&str>> = Default::default();
    for member in retired {
        let Some((op, shards)) = member.split_once(':') else {
            continue;
        };
        for shard in shards.split(',').filter_map(|s| s.parse::<usize>().ok()) {
            if shard < self_shards {
                by.entry(shard).or_default().push(op);
            }
        }
    }
    by
}
