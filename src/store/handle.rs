//! The handle to Redis ([`Store`]): its connection, caches and settings, and
//! how it opens.

use crate::config::Config;
use crate::store::caches::set::Caches;
use crate::store::log::emitter;
use crate::store::log::shape::LogShape;
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
    /// How the event log is laid over Redis.
    pub(crate) log_shape: LogShape,
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
        let cluster = matches!(target, Target::Cluster(_));
        let keys = Keys::new(&cfg.key_prefix).with_log_shards(cfg.log_shards as usize);
        let log_shape = LogShape::new(cluster, cfg.replay_maxlen, keys.log_shards());
        let caches = match &target {
            Target::Single(client) => Caches::new(cfg, Some(client)),
            Target::Cluster(_) => Caches::new(cfg, None),
        };
        Ok(Store {
            conn,
            target,
            keys,
            scripts: Arc::new(Scripts::load()),
            log_shape,
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

    /// Every in-process cache: statuses, counts, sessions alive, ... (the
    /// hub evicts what changed).
    pub(crate) fn caches(&self) -> &Caches {
        &self.caches
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

    /// Whether the store runs on a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.target, Target::Cluster(_))
    }

    /// How the event log is laid over Redis: a shard's publish command,
    /// capacity and trim.
    pub fn log_shape(&self) -> LogShape {
        self.log_shape
    }
}
