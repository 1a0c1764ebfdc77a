//! Blocks and mutes: the lists a user keeps, and the `hide` HASH of each
//! user ([`crate::hides`]) that read paths, fan-out and the streams consult.
//!
//! A block or mute change is an outbox op (`chains/relate.rs`): the
//! source's side (`relate.lua`), for a block the target's side, the homes
//! cleaned, then one `relation` event (internal: the hubs update their
//! copies) and the unfollow events of the follows the block ended.

use crate::hides::Relation;
use crate::hides::{self, Hides};
use crate::model::User;
use crate::store::caches::view_cache::Kind;
use crate::store::chains::relate::RelateOp;
use crate::store::handle::Store;
use crate::store::outbox::Op;
use crate::store::paging::{id_page, Cursor, IdPage};
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::AsyncCommands;
use std::collections::HashMap;

/// Blocks and mutes (`Store::relations`).
#[derive(Clone, Copy)]
pub struct Relations<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Relations<'_> {
    /// Sets (`on`) or lifts `source`'s block or mute of `target`. Returns
    /// whether the relation holds now (a later change of the same pair
    /// that won a race decides).
    pub async fn set(
        self,
        source: u64,
        target: u64,
        kind: Relation,
        on: bool,
        at: f64,
    ) -> StoreResult<bool> {
        if !self.store.users().exists(target).await? {
            return Err(StoreError::NotFound("user"));
        }
        let op = RelateOp {
            source,
            target,
            kind,
            on,
            at,
        };
        let owed = self.store.outbox().start(Op::Relate(op.clone())).await?;
        op.run(self.store, &owed.entry).await
    }

    /// The relation bits `viewer` holds about `other` ([`crate::hides`]).
    pub async fn bits(self, viewer: u64, other: u64) -> StoreResult<u8> {
        let key = self.store.keys.hide(viewer);
        if let Some(hides) = self.store.caches.views.hides(&key).await? {
            return Ok(hides.bits(other));
        }
        let mut conn = self.store.conn();
        let v: Option<String> = conn.hget(key, other).await?;
        Ok(bits_of(v.as_deref()))
    }

    /// User `uid` (as [`Users::get`](crate::store::entities::users::Users::get) reads it) and `viewer`'s relation
    /// bits toward them ([`Relations::bits`]): from the view cache
    /// after one barrier, or in one round trip.
    pub async fn user_with_relation(self, uid: u64, viewer: u64) -> StoreResult<(User, u8)> {
        let (user_key, hide_key) = (self.store.keys.user(uid), self.store.keys.hide(viewer));
        if !self.store.caches.views.many(&hide_key) {
            let keys = [(&*user_key, Kind::User), (&*hide_key, Kind::Hides)];
            if let Some(views) = self.store.caches.views.get(&keys).await? {
                if let Some(hides) = views[1].hides() {
                    let user = views[0].user(false).ok_or(StoreError::NotFound("user"))?;
                    return Ok((user, hides.bits(uid)));
                }
            }
        }
        let mut conn = self.store.conn();
        let (h, rel): (HashMap<String, String>, Option<String>) = redis::pipe()
            .hgetall(user_key)
            .hget(hide_key, uid)
            .query_async(&mut conn)
            .await?;
        let user = User::from_hash(&h).ok_or(StoreError::NotFound("user"))?;
        Ok((user, bits_of(rel.as_deref())))
    }

    /// Every hiding relation of `uid`, with the counter it was read at.
    pub async fn hides(self, uid: u64) -> StoreResult<Hides> {
        let key = self.store.keys.hide(uid);
        if let Some(hides) = self.store.caches.views.hides(&key).await? {
            return Ok(Hides::clone(&hides));
        }
        let mut conn = self.store.conn();
        let fields: Vec<(String, String)> = conn.hgetall(key).await?;
        Ok(Hides::from_hash(&fields))
    }

    /// A page of whom `uid` blocks or mutes, newest first.
    pub async fn page(
        self,
        uid: u64,
        kind: Relation,
        cursor: &Cursor,
        count: usize,
    ) -> StoreResult<IdPage> {
        // Scored by minus the time: score order is newest first.
        let key = match kind {
            Relation::Block => self.store.keys.blocks(uid),
            Relation::Mute => self.store.keys.mutes(uid),
        };
        id_page(self.store, &key, cursor, count).await
    }
}

/// The relation bits in a hide HASH's value (0 for none).
fn bits_of(value: Option<&str>) -> u8 {
    value
        .and_then(hides::parse_pair)
        .map_or(0, |(bits, _)| bits)
}
