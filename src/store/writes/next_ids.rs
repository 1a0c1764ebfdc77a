//! Fresh ids (snowflakes) from the store's generator ([`IdGen`](crate::store::plumbing::ids::IdGen)): one for
//! every kind of thing that has an id.

use crate::store::handle::Store;
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::ids::{INSTANCES, LEASE_TTL};
use std::time::Instant;

/// Fresh ids from the store's generator (`Store::mint`).
#[derive(Clone, Copy)]
pub struct Mint<'a> {
    pub(in crate::store) store: &'a Store,
}

impl<'a> Mint<'a> {
    /// A fresh user id: a snowflake from the same generator as status ids,
    /// so a sign-up takes no shared counter (users signed up before
    /// 2026-11-27 keep the ids the `{g}` counter gave them, all below
    /// [`FIRST`](crate::store::plumbing::ids::FIRST)).
    pub async fn user_id(self) -> StoreResult<u64> {
        Ok(self.snowflake().await?.0)
    }

    /// A fresh snowflake and its time (see the module header): the id of
    /// every kind of thing that has one here (statuses, users, groups,
    /// lists, conversations and messages, reports, audit entries, rules).
    pub async fn snowflake(self) -> StoreResult<(u64, f64)> {
        let instance = match self.store.ids.usable() {
            Some((lease, false)) => lease.instance,
            _ => self.lease_instance().await?,
        };
        Ok(self.store.ids.issue(instance))
    }

    /// Renews this process's instance lease, or takes a free number.
    async fn lease_instance(self) -> StoreResult<u64> {
        let _one = self.store.ids.leasing.lock().await;
        let held = match self.store.ids.usable() {
            Some((lease, false)) => return Ok(lease.instance),
            Some((lease, true)) => Some(lease.instance),
            None => self.store.ids.held(),
        };
        let ttl_ms = LEASE_TTL.as_millis() as u64;
        let mut conn = self.store.conn();
        if let Some(instance) = held {
            let asked = Instant::now();
            let renewed: redis::RedisResult<i64> = self
                .store
                .scripts
                .lease_renew
                .key(self.store.keys.id_instance(instance))
                .arg(&self.store.ids.token)
                .arg(ttl_ms)
                .invoke_async(&mut conn)
                .await;
            match renewed {
                Ok(1) => return Ok(self.store.ids.keep(instance, asked)),
                Ok(_) => tracing::warn!(instance, "id instance lease lost; taking another"),
                // Redis did not answer: a lease still valid serves on.
                Err(e) => match self.store.ids.usable() {
                    Some((lease, _)) => return Ok(lease.instance),
                    None => return Err(e.into()),
                },
            }
        }
        let start = rand::random::<u64>() % INSTANCES;
        for i in 0..INSTANCES {
            let instance = (start + i) % INSTANCES;
            let asked = Instant::now();
            let taken: Option<String> = redis::cmd("SET")
                .arg(self.store.keys.id_instance(instance))
                .arg(&self.store.ids.token)
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms)
                .query_async(&mut conn)
                .await?;
            if taken.is_some() {
                tracing::info!(instance, "id instance leased");
                return Ok(self.store.ids.keep(instance, asked));
            }
        }
        Err(StoreError::Unavailable(format!(
            "all {INSTANCES} id instances are leased by other processes"
        )))
    }

    /// Gives this process's status-id number back (at shutdown), so a
    /// restart does not wait for the lease to lapse. No id is issued after.
    pub async fn release_lease(self) -> StoreResult<()> {
        let Some(instance) = self.store.ids.give_back() else {
            return Ok(());
        };
        let mut conn = self.store.conn();
        let _: i64 = self
            .store
            .scripts
            .lease_release
            .key(self.store.keys.id_instance(instance))
            .arg(&self.store.ids.token)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }
}
