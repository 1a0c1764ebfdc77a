//! The block and mute chain: the source's side (the authority), for a
//! block the target's side, the homes cleaned (or, after an unmute,
//! refilled), then the `relation` event and the unfollows a block caused.

use crate::hides::Relation;
use crate::hides::{self, Change};
use crate::model::Id;
use crate::model::{Event, HOME_CAP};
use crate::store::chains::entry::Entry;
use crate::store::events::body;
use crate::store::fanout::home_hide;
use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

/// A block or mute set or lifted ([`store::relations`](crate::store::entities::relations)).
/// (`Op::Relate`'s payload, as recorded in the outbox.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelateOp {
    /// Who blocks or mutes.
    pub source: u64,
    /// Whom.
    pub target: u64,
    /// `block` or `mute`.
    pub kind: crate::hides::Relation,
    /// Set (true) or lifted.
    pub on: bool,
    /// Time of the change.
    pub at: f64,
}

/// What `relate.lua` answered for one side.
struct Side {
    /// 1 applied, 2 a later change won, -1 the list is full, -2 no user.
    outcome: i64,
    bits: u8,
    seq: u64,
    /// This side stopped following the other.
    cut_following: bool,
    /// The other stopped following this side.
    cut_follower: bool,
}

/// One side of a relation change (`relate.lua` on `uid`'s keys), with
/// the list the source keeps (key, score, cap) on the source's side.
#[allow(clippy::too_many_arguments)]
async fn relate_side(
    store: &Store,
    uid: u64,
    other: u64,
    bit: u8,
    on: bool,
    n: u64,
    list: Option<(&str, f64, usize)>,
    cuts: bool,
) -> StoreResult<Side> {
    let hide = store.keys.hide(uid);
    let (list_key, score, cap) = match list {
        Some((key, score, cap)) => (key.to_string(), score, cap),
        None => (hide.clone(), 0.0, 0),
    };
    let mut conn = store.conn();
    let mut inv = store.scripts.relate.prepare_invoke();
    inv.key(&hide)
        .key(list_key)
        .key(store.keys.following(uid))
        .key(store.keys.followers(uid))
        .key(store.keys.requests(uid))
        .key(store.keys.requested(uid))
        .key(store.keys.user(uid))
        .key(store.keys.follow_applied(uid))
        .key(store.keys.follower_seq(uid))
        .arg(other)
        .arg(bit)
        .arg(if on { "1" } else { "0" })
        .arg(n)
        .arg(score)
        .arg(if list.is_some() { "1" } else { "0" })
        .arg(cap)
        .arg(if cuts { "1" } else { "0" });
    // On one Redis the other side's index of who hides them changes
    // with the bits (`Keys::hidden_by`, read by `post_whole.lua`).
    if !store.is_cluster() {
        inv.key(store.keys.hidden_by(other)).arg(uid);
    }
    let (outcome, bits, seq, cf, cr): (i64, u8, u64, i64, i64) =
        inv.invoke_async(&mut conn).await?;
    Ok(Side {
        outcome,
        bits,
        seq,
        cut_following: cf == 1,
        cut_follower: cr == 1,
    })
}

/// Takes `other`'s statuses and reposts of them out of `viewer`'s home
/// while a relation hides them (`home_hide.lua` checks it).
async fn hide_in_home(store: &Store, viewer: u64, other: u64) -> StoreResult<()> {
    let mut conn = store.conn();
    let ids: Vec<u64> = conn.zrange(store.keys.home(viewer), 0, -1).await?;
    let found = store.statuses().many(&ids).await?;
    let hit: Vec<u64> = found
        .iter()
        .filter_map(|(id, s)| {
            let s = &s.as_ref()?.status;
            (s.uid == other || s.repost_of_uid == Some(Id(other))).then_some(*id)
        })
        .collect();
    home_hide(store, viewer, other, &hit).await
}

/// After an unmute: `other`'s newest statuses come back into `viewer`'s
/// home, as a follow's backfill brings them, if `viewer` follows them.
async fn unhide_in_home(store: &Store, viewer: u64, other: u64) -> StoreResult<()> {
    let mut conn = store.conn();
    let newest: Vec<(String, f64)> = conn
        .zrevrange_withscores(store.keys.profile(other), 0, HOME_CAP as isize - 1)
        .await?;
    if newest.is_empty() {
        return Ok(());
    }
    let mut inv = store.scripts.home_unhide.prepare_invoke();
    inv.key(store.keys.following(viewer))
        .key(store.keys.home(viewer))
        .key(store.keys.hide(viewer))
        .arg(other)
        .arg(HOME_CAP);
    for (id, score) in &newest {
        inv.arg(id).arg(score);
    }
    let added: i64 = inv.invoke_async(&mut conn).await?;
    if added > 0 {
        let ids: Vec<u64> = newest
            .iter()
            .filter_map(|(id, _)| id.parse().ok())
            .collect();
        let hidden: Vec<u64> = store
            .relations()
            .hides(viewer)
            .await?
            .others(hides::FEED)
            .collect();
        store
            .fanout()
            .settle_backfill(viewer, &ids, &hidden)
            .await?;
    }
    Ok(())
}

impl RelateOp {
    /// A block or mute change's steps; returns whether the relation holds
    /// when it is done.
    pub(crate) async fn run(&self, store: &Store, entry: &Entry) -> StoreResult<bool> {
        let RelateOp {
            source,
            target,
            kind,
            on,
            at,
        } = *self;
        let block = kind == Relation::Block;
        let (list, cap) = match kind {
            Relation::Block => (store.keys.blocks(source), store.limits.max_blocks),
            Relation::Mute => (store.keys.mutes(source), store.limits.max_mutes),
        };
        let src = relate_side(
            store,
            source,
            target,
            kind.bit(),
            on,
            entry.n,
            Some((&list, -at, cap)),
            block,
        )
        .await?;
        match src.outcome {
            1 => {}
            -2 => {
                store.outbox().finish_with(entry, Vec::new()).await?;
                return Err(StoreError::NotFound("user"));
            }
            -1 => {
                store.outbox().finish_with(entry, Vec::new()).await?;
                let (code, what) = match kind {
                    Relation::Block => ("block_limit", "block"),
                    Relation::Mute => ("mute_limit", "mute"),
                };
                return Err(StoreError::Limit(
                    code,
                    format!("You may {what} at most {cap} users; lift one first."),
                ));
            }
            _ => {
                // A later change of this relation won: it says what holds.
                store.outbox().finish_with(entry, Vec::new()).await?;
                return Ok(src.bits & kind.bit() != 0);
            }
        }
        let mut changes = vec![Change {
            uid: Id(source),
            other: Id(target),
            bits: src.bits,
            seq: src.seq,
        }];
        // Follows ended, source -> target and target -> source.
        let (mut s_to_t, mut t_to_s) = (src.cut_following, src.cut_follower);
        if block {
            let tgt = relate_side(
                store,
                target,
                source,
                hides::BLOCKED_BY,
                on,
                entry.n,
                None,
                true,
            )
            .await?;
            if tgt.outcome == 1 {
                changes.push(Change {
                    uid: Id(target),
                    other: Id(source),
                    bits: tgt.bits,
                    seq: tgt.seq,
                });
                t_to_s |= tgt.cut_following;
                s_to_t |= tgt.cut_follower;
            }
        }
        if on {
            hide_in_home(store, source, target).await?;
            if block {
                hide_in_home(store, target, source).await?;
            }
        } else if !block {
            unhide_in_home(store, source, target).await?;
        }
        let mut events = vec![body(&Event::Relation { at, changes })];
        if s_to_t {
            events.push(body(&Event::Unfollow {
                at,
                source: Id(source),
                target: Id(target),
            }));
        }
        if t_to_s {
            events.push(body(&Event::Unfollow {
                at,
                source: Id(target),
                target: Id(source),
            }));
        }
        store.outbox().finish_with(entry, events).await?;
        Ok(src.bits & kind.bit() != 0)
    }
}
