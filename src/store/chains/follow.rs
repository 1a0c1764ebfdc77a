//! Following, both ways: the op a follow records ([`FollowOp`]) and its
//! chain (the follower's `following`, the authority; the followee's
//! `followers`; the follower's home; then the event), and on one Redis a
//! chunk of follows in one atomic script, `follow_whole.lua`
//! ([`follow_whole`]). [`store::follows`](crate::store::entities::follows) chooses.

use crate::model::Id;
use crate::model::{Event, HOME_CAP};
use crate::store::chains::entry::Entry;
use crate::store::events::body;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::keys::{pair_part, OUTBOX_PARTS};
use serde::{Deserialize, Serialize};

/// Follows on one Redis: a `follow_whole.lua` call stops after the target
/// whose statuses took the statuses copied into (or taken out of) the home
/// past this many, so a call moves at most this plus [`HOME_CAP`] (twice
/// that for an unfollow), a few milliseconds of Redis.
pub const FOLLOW_COPY_BUDGET: usize = 2000;

/// A follow or unfollow.
/// (`Op::Follow`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FollowOp {
    /// The follower.
    pub source: u64,
    /// The followee.
    pub target: u64,
    /// Follow (true) or unfollow.
    pub follow: bool,
    /// Time of the change.
    pub at: f64,
}

/// [`Follows::set_many`](crate::store::entities::follows::Follows::set_many) on one Redis for one chunk: `follow_whole.lua`,
/// every step of every change in one atomic script (one round trip, no
/// outbox entry). Works the first targets of the chunk, at least one,
/// until [`FOLLOW_COPY_BUDGET`] is spent, and answers for those. Reposts
/// of users hidden from the follower that the backfill copied are taken
/// out after, as a fan-out batch does.
pub(crate) async fn follow_whole(
    store: &Store,
    source: u64,
    targets: &[u64],
    follow: bool,
    at: f64,
) -> StoreResult<Vec<StoreResult<bool>>> {
    let mut conn = store.conn();
    // Every event of a follow is its follower's: one shard.
    let shard = store.keys.log_shard(source);
    let mut call = store.scripts.follow_whole.prepare_invoke();
    call.key(store.keys.user(source))
        .key(store.keys.following(source))
        .key(store.keys.follow_applied(source))
        .key(store.keys.hide(source))
        .key(store.keys.home(source))
        .key(store.keys.log_events(shard));
    for &target in targets {
        call.key(store.keys.user(target))
            .key(store.keys.followers(target))
            .key(store.keys.follower_seq(target))
            .key(store.keys.hide(target))
            .key(store.keys.profile(target))
            .key(store.keys.deleted(target))
            .key(store.keys.part_next_op(pair_part(source, target)));
    }
    call.arg(source)
        .arg(if follow { "1" } else { "0" })
        .arg(at)
        .arg(HOME_CAP)
        .arg(store.log_shape().trim())
        .arg(store.keys.log_channel(shard))
        .arg(OUTBOX_PARTS)
        .arg(targets.len())
        .arg(FOLLOW_COPY_BUDGET)
        .arg(store.log_shape().publish)
        .arg(shard);
    for &target in targets {
        let event = body(&if follow {
            Event::Follow {
                at,
                source: Id(source),
                target: Id(target),
            }
        } else {
            Event::Unfollow {
                at,
                source: Id(source),
                target: Id(target),
            }
        });
        call.arg(target)
            .arg(event.json)
            .arg(pair_part(source, target));
    }
    let (hidden, outcomes, copied): (Vec<u64>, Vec<i64>, Vec<u64>) =
        call.invoke_async(&mut conn).await?;
    if outcomes.is_empty() || outcomes.len() > targets.len() {
        return Err(StoreError::Internal(format!(
            "follow_whole: {} outcomes for {} users",
            outcomes.len(),
            targets.len()
        )));
    }
    if !hidden.is_empty() && !copied.is_empty() {
        store
            .fanout()
            .settle_backfill(source, &copied, &hidden)
            .await?;
    }
    Ok(outcomes
        .into_iter()
        .map(|outcome| match outcome {
            -1 => Err(StoreError::NotFound("user")),
            -2 => Err(StoreError::follow_blocked()),
            changed => Ok(changed == 1),
        })
        .collect())
}

impl FollowOp {
    /// A follow change's steps: the follower's `following` (the authority),
    /// the followee's `followers`, the follower's home; then its event when
    /// it changed anything. Returns whether it did.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<bool> {
        let FollowOp {
            source,
            target,
            follow,
            at,
        } = *self;
        let mut conn = store.conn();
        let (changed, applied, _count): (i64, i64, i64) = store
            .scripts
            .follow_source
            .key(store.keys.following(source))
            .key(store.keys.user(source))
            .key(store.keys.follow_applied(source))
            .key(store.keys.hide(source))
            .arg(target)
            .arg(if follow { "1" } else { "0" })
            .arg(at)
            .arg(entry.n)
            .invoke_async(&mut conn)
            .await?;
        if applied == -1 {
            store.outbox().finish_with(entry, Vec::new()).await?;
            return Err(StoreError::follow_blocked());
        }
        if applied == 1 {
            store
                .fanout()
                .follow_steps(source, target, follow, entry.n as i64, at)
                .await?;
        }
        let events = if changed == 1 {
            let event = if follow {
                Event::Follow {
                    at,
                    source: Id(source),
                    target: Id(target),
                }
            } else {
                Event::Unfollow {
                    at,
                    source: Id(source),
                    target: Id(target),
                }
            };
            vec![body(&event)]
        } else {
            Vec::new()
        };
        store.outbox().finish_with(entry, events).await?;
        Ok(changed == 1)
    }
}
