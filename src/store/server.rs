//! The Redis server's own commands ([`Server`]): whether it answers, its
//! settings and version, and the replicas' confirmation of writes.

use crate::store::handle::Store;
use crate::store::plumbing::conn::Target;
use crate::store::plumbing::error::StoreResult;
use redis::Client;

/// The Redis server behind the store (`Store::server`).
#[derive(Clone, Copy)]
pub struct Server<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Server<'_> {
    /// PING: whether Redis answers.
    pub async fn ping(self) -> StoreResult<()> {
        let mut conn = self.store.conn();
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }

    /// A Redis configuration parameter (CONFIG GET), if the server reports it.
    /// On a cluster, the first seed node's.
    pub async fn config_get(self, name: &str) -> StoreResult<Option<String>> {
        let pair: Vec<String> = self
            .one_node(redis::cmd("CONFIG").arg("GET").arg(name))
            .await?;
        Ok(pair.into_iter().nth(1))
    }

    /// The `redis_version` INFO field (on a cluster, the first seed node's).
    pub async fn version(self) -> StoreResult<String> {
        let info: String = self.one_node(redis::cmd("INFO").arg("server")).await?;
        Ok(info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("unknown")
            .trim()
            .to_string())
    }

    /// Waits until the replicas hold every write finished so far
    /// (`--redis-wait-replicas`; at once when that is 0). `Unavailable`
    /// when a replica did not confirm in time.
    pub async fn confirm_replicated(self) -> StoreResult<()> {
        let store = self.store;
        store.replication.confirm(&store.conn, &store.target).await
    }

    /// Whether writes wait for replicas.
    pub fn waits_for_replicas(self) -> bool {
        self.store.replication.enabled()
    }

    /// A node-level command (INFO, CONFIG) answered by the server, or on a
    /// cluster by the first seed node.
    async fn one_node<T: redis::FromRedisValue>(self, cmd: &redis::Cmd) -> StoreResult<T> {
        match &self.store.target {
            Target::Single(_) => Ok(cmd.query_async(&mut self.store.conn()).await?),
            Target::Cluster(nodes) => {
                let client = Client::open(nodes[0].as_str())?;
                let mut conn = client.get_multiplexed_async_connection().await?;
                Ok(cmd.query_async(&mut conn).await?)
            }
        }
    }
}
