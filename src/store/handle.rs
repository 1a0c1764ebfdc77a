//! The handle to Redis ([`Store`]): its connection, caches and settings, and
//! how it opens.

use crate::config::Config;
use crate::store::caches::cache;
use crate::store::caches::set::Caches;
use crate::store::log::emitter;
use crate::store::plumbing::conn::Target;
use crate::store::plumbing::conn::{LazyCluster, RedisConn};
use crate::store::plumbing::error::{StoreError, StoreResult};
use crate::store::plumbing::keys::Keys;
use crate::store::plumbing::replicas;
use crate::store::plumbing::scripts::Scripts;
use crate::store::plumbing::settings::{Limits, Pauses};
use crate::store::plumbing::{fanout_hints, ids};
use redis::aio::ConnectionManager;
use redis::Client;
use std::sync::Arc;
use std::time::Duration;

/// Handle to Redis: cheap to clone, reconnects by itself.
#[derive(Clone)]
pub struct Store {
    pub(crate) conn: RedisConn,
    pub(crate) target: Target,
    pub(crate) keys: Keys,
    pub(crate) scripts: Arc<Scripts>,
    pub(crate) replay_maxlen: u64,
    pub(crate) fanout_inline: usize,
    pub(crate) fanout_batch: usize,
    /// Seconds a request owns the outbox entry of its write before a
    /// worker may take the work over.
    pub(crate) outbox_lease: f64,
    /// Every in-process cache (`caches`).
    pub(crate) caches: Caches,
    /// What one user may hold.
    pub(crate) limits: Limits,
    /// Fault tests only: where writes wait.
    pub(crate) pauses: Pauses,
    /// Which fan-out queues may hold work (this process's workers wait on it).
    pub(crate) fanout_hints: Arc<fanout_hints::FanoutHints>,
    /// The group commit of partitioned writes' events.
    pub(crate) emitter: Arc<emitter::Emitter>,
    /// What this process knows of each node's clock (the commit-wait).
    pub(crate) clocks: Arc<crate::store::log::clocks::NodeClocks>,
    /// Status ids (a process's instance lease and sequence).
    pub(crate) ids: Arc<ids::IdGen>,
    /// Replicas a write waits for (`--redis-wait-replicas`).
    pub(crate) replication: Arc<replicas::Replication>,
}

/// The seed node URLs of a `--redis-cluster` list (comma-separated).
pub fn cluster_nodes(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect()
}

/// The least a shard of the log keeps, whatever `--replay-maxlen`: the
/// history's archiver reads every shard behind the writes, and a shard
/// that kept one event would drop it at its shard's next write.
pub(crate) const MIN_SHARD_SHARE: u64 = 4;

impl Store {
    /// Connects lazily: the first command opens the connection, and a lost
    /// connection is reopened with backoff, so the server starts and recovers
    /// without Redis and answers 503 meanwhile.
    ///
    /// With `cfg.redis_cluster` set, `url` is ignored and the store runs on
    /// that Redis Cluster.
    pub fn open(url: &str, cfg: &Config) -> StoreResult<Store> {
        let (conn, target) = match cfg.redis_cluster.as_deref() {
            Some(list) => {
                let nodes = cluster_nodes(list);
                if nodes.is_empty() {
                    return Err(StoreError::Internal("--redis-cluster names no node".into()));
                }
                let conn = RedisConn::Cluster(LazyCluster::new(&nodes, Duration::from_secs(5))?);
                (conn, Target::Cluster(nodes))
            }
            None => {
                let client = Client::open(url)?;
                let manager_cfg = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(2)))
                    .set_response_timeout(Some(Duration::from_secs(5)))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_millis(500));
                let conn = ConnectionManager::new_lazy_with_config(client.clone(), manager_cfg)?;
                (RedisConn::Single(conn), Target::Single(client))
            }
        };
        let caches = match &target {
            Target::Single(client) => Caches::new(cfg, Some(client)),
            Target::Cluster(_) => Caches::new(cfg, None),
        };
        Ok(Store {
            conn,
            target,
            keys: Keys::new(&cfg.key_prefix).with_log_shards(cfg.log_shards as usize),
            scripts: Arc::new(Scripts::load()),
            replay_maxlen: cfg.replay_maxlen,
            fanout_inline: cfg.fanout_inline.max(1),
            fanout_batch: cfg.fanout_batch.max(1),
            outbox_lease: cfg.outbox_lease.max(0.1),
            caches,
            limits: Limits::new(cfg),
            pauses: Pauses::new(cfg),
            fanout_hints: Arc::default(),
            emitter: Arc::default(),
            clocks: Arc::default(),
            ids: Arc::new(ids::IdGen::new(cfg.clock_offset_ms)),
            replication: Arc::new(replicas::Replication::new(
                cfg.redis_wait_replicas,
                cfg.redis_wait_timeout_ms,
                &cfg.key_prefix,
            )),
        })
    }

    /// What this process knows of each Redis node's clock: the live
    /// subscription tells it, writes wait on it.
    pub fn clocks(&self) -> Arc<crate::store::log::clocks::NodeClocks> {
        self.clocks.clone()
    }

    /// Which fan-out queues may hold work (the workers wait on it).
    pub fn fanout_hints(&self) -> Arc<fanout_hints::FanoutHints> {
        self.fanout_hints.clone()
    }

    /// The status cache (the hub evicts deleted statuses from it).
    pub fn status_cache(&self) -> &cache::StatusCache {
        &self.caches.status
    }

    /// Recently read status counts (the hub evicts changed ones).
    pub fn counts_cache(&self) -> &cache::CountsCache {
        &self.caches.counts
    }

    /// Sessions recently found alive (the hub revokes ended ones and
    /// suspends it while its subscription is down).
    pub fn session_cache(&self) -> &cache::SessionCache {
        &self.caches.sessions
    }

    /// The key builder.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// A connection of its own for blocking reads (the fan-out workers'
    /// XREADGROUP ... BLOCK), so they never hold up request traffic: it
    /// waits up to `block` longer than a request would for an answer.
    pub fn blocking_connection(&self, block: Duration) -> StoreResult<RedisConn> {
        let timeout = block + Duration::from_secs(5);
        Ok(match &self.target {
            Target::Single(client) => {
                let config = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(2)))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1);
                RedisConn::Single(ConnectionManager::new_lazy_with_config(
                    client.clone(),
                    config,
                )?)
            }
            Target::Cluster(nodes) => RedisConn::Cluster(LazyCluster::new(nodes, timeout)?),
        })
    }

    /// A connection handle for one call.
    pub(crate) fn conn(&self) -> RedisConn {
        self.conn.clone()
    }

    /// Waits until the replicas hold every write finished so far
    /// (`--redis-wait-replicas`; at once when that is 0). `Unavailable`
    /// when a replica did not confirm in time.
    pub async fn confirm_replicated(&self) -> StoreResult<()> {
        self.replication.confirm(&self.conn, &self.target).await
    }

    /// Whether writes wait for replicas.
    pub fn waits_for_replicas(&self) -> bool {
        self.replication.enabled()
    }

    /// Whether the store runs on a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.target, Target::Cluster(_))
    }

    /// The command that publishes a shard of the event log: sharded
    /// pub/sub on a cluster (no node relays every event), plain PUBLISH on
    /// one Redis (where there is nothing to relay).
    pub(crate) fn publish_command(&self) -> &'static str {
        if self.is_cluster() {
            "SPUBLISH"
        } else {
            "PUBLISH"
        }
    }

    /// A shard's share of the buffer's capacity in events
    /// (`--replay-maxlen` over the shards, at least [`MIN_SHARD_SHARE`]).
    pub(crate) fn shard_maxlen(&self) -> u64 {
        self.replay_maxlen
            .div_ceil(self.keys.log_shards() as u64)
            .max(MIN_SHARD_SHARE)
    }

    /// How a shard's buffer is trimmed to `entries` (`log_append.lua`'s
    /// argument): `~` (whole nodes of entries, cheap) when a share is
    /// large, exactly when it is small (a node holds 100 entries, so a
    /// small buffer would never be trimmed at all).
    pub(crate) fn shard_trim(&self, entries: u64) -> String {
        if self.shard_maxlen() >= 1_000 {
            format!("~{entries}")
        } else {
            format!("={entries}")
        }
    }

    /// PING: whether Redis answers.
    pub async fn ping(&self) -> StoreResult<()> {
        let mut conn = self.conn();
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }

    /// A Redis configuration parameter (CONFIG GET), if the server reports it.
    /// On a cluster, the first seed node's.
    pub async fn config_get(&self, name: &str) -> StoreResult<Option<String>> {
        let pair: Vec<String> = self
            .one_node(redis::cmd("CONFIG").arg("GET").arg(name))
            .await?;
        Ok(pair.into_iter().nth(1))
    }

    /// A node-level command (INFO, CONFIG) answered by the server, or on a
    /// cluster by the first seed node.
    async fn one_node<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> StoreResult<T> {
        match &self.target {
            Target::Single(_) => Ok(cmd.query_async(&mut self.conn()).await?),
            Target::Cluster(nodes) => {
                let client = Client::open(nodes[0].as_str())?;
                let mut conn = client.get_multiplexed_async_connection().await?;
                Ok(cmd.query_async(&mut conn).await?)
            }
        }
    }

    /// The `redis_version` INFO field (on a cluster, the first seed node's).
    pub async fn server_version(&self) -> StoreResult<String> {
        let info: String = self.one_node(redis::cmd("INFO").arg("server")).await?;
        Ok(info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("unknown")
            .trim()
            .to_string())
    }
}
