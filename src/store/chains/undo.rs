//! The writes an account's deletion starts on the user's behalf
//! (`chains/account.rs`): its unfollows, its statuses' deletes, its blocks
//! and mutes lifted, each as the write it would be, an op of its own run
//! to its end.

use crate::hides::{self, Relation};
use crate::store::chains::delete::run_delete_reaching;
use crate::store::chains::delete::{DeleteOp, Homes};
use crate::store::chains::follow::FollowOp;
use crate::store::chains::op::{Op, Owed};
use crate::store::chains::relate::RelateOp;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;

/// A chain whose target is already gone (or refused) is done as far as
/// the deletion is concerned.
pub(crate) fn settled(result: StoreResult<()>) -> StoreResult<()> {
    match result {
        Err(StoreError::NotFound(_) | StoreError::Forbidden(_) | StoreError::Conflict(..)) => {
            Ok(())
        }
        other => other,
    }
}

/// Unfollows on behalf of a deletion (no check that the users exist:
/// the deleted one is marked, not gone yet).
pub(crate) async fn undo_follow(
    store: &Store,
    source: u64,
    target: u64,
    at: f64,
) -> StoreResult<()> {
    let op = FollowOp {
        source,
        target,
        follow: false,
        at,
    };
    let o = store.outbox().start(Op::Follow(op.clone())).await?;
    op.run(store, &o.entry).await.map(|_| ())
}

/// Deletes one of the account's statuses as its author would, but for
/// the followers' homes (the caller clears those a round at a time,
/// [`Fanout::unhome_everywhere`](crate::store::fanout::Fanout::unhome_everywhere)). A status
/// already marked by another delete (a run a process died during) has
/// that delete finished here, before the follows go: found by its
/// number in the author's outbox partition and run to its end (a worker
/// that takes it over meanwhile does no harm: the chain is idempotent
/// and only the run that retires it emits). One no longer in the outbox
/// was retired, its steps all done.
pub(crate) async fn delete_for_account(
    store: &Store,
    sid: u64,
    uid: u64,
    private: bool,
    at: f64,
) -> StoreResult<()> {
    let delete = DeleteOp {
        sid,
        uid,
        private,
        at,
    };
    let op = Op::Delete(delete.clone());
    let part = op.part();
    let o = store.outbox().start(op).await?;
    match run_delete_reaching(store, &o.entry, &delete, Homes::Skip).await {
        Err(StoreError::NotFound(_)) => {}
        other => return other,
    }
    let mut conn = store.conn();
    let mark: Option<u64> = conn.hget(store.keys.status(sid), "deleted").await?;
    let Some(m) = mark.filter(|m| *m != o.entry.n) else {
        return Ok(());
    };
    let outbox = store.keys.part_outbox(part);
    let pattern = format!("{m}|*");
    let mut cursor = "0".to_string();
    loop {
        let (next, found): (String, Vec<String>) = redis::cmd("ZSCAN")
            .arg(&outbox)
            .arg(&cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(500)
            .query_async(&mut conn)
            .await?;
        // Members and scores alternate.
        let earlier = found
            .iter()
            .step_by(2)
            .filter_map(|member| Owed::decode_in(member, part))
            .find(|e| matches!(&e.op, Op::Delete(d) if d.sid == sid));
        if let Some(earlier) = earlier {
            let earlier = earlier.leased(store.outbox().lease_deadline());
            let Op::Delete(op) = &earlier.op else {
                return Ok(());
            };
            return settled(run_delete_reaching(store, &earlier.entry, op, Homes::Skip).await);
        }
        if next == "0" {
            return Ok(());
        }
        cursor = next;
    }
}

/// Lifts every block and mute the user set, and every block set on them.
pub(crate) async fn undo_relations(store: &Store, uid: u64, at: f64) -> StoreResult<()> {
    let relations = store.relations().hides(uid).await?;
    let mut lifts = Vec::new();
    for other in relations.others(hides::FEED) {
        let bits = relations.bits(other);
        if bits & hides::BLOCKS != 0 {
            lifts.push((uid, other, Relation::Block));
        }
        if bits & hides::MUTES != 0 {
            lifts.push((uid, other, Relation::Mute));
        }
        if bits & hides::BLOCKED_BY != 0 {
            lifts.push((other, uid, Relation::Block));
        }
    }
    for (source, target, kind) in lifts {
        let op = RelateOp {
            source,
            target,
            kind,
            on: false,
            at,
        };
        let o = store.outbox().start(Op::Relate(op.clone())).await?;
        settled(op.run(store, &o.entry).await.map(|_| ()))?;
    }
    Ok(())
}
