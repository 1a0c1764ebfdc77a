//! The only code that talks to Redis, in sections:
//!
//! - Entities, one module each (this folder): [`users`], [`sessions`],
//!   [`statuses`], [`follows`], [`follow_requests`], [`likes`],
//!   [`bookmarks`], [`lists`], [`notifications`], [`conversations`] (and
//!   [`social`], their reads), [`groups`], [`relations`] (blocks, mutes),
//!   [`moderation`], [`rules`], `trends`, [`ranking`], [`leases`]
//!   (stream slots), [`rate`] (rate limits), [`events`] (the replay
//!   buffer), [`zstd_dicts`], [`demo`]; [`paging`] is how they page.
//! - Writes that span slots: [`outbox`] (the op log), `chains` (each
//!   write's chain of single-slot steps), [`fanout`] (the durable fan-out
//!   queues), and `writes/`: [`ids`] (snowflakes), [`emitter`] (the group
//!   commit of events), [`fanout_hints`], `post_whole` (a post in one
//!   script on one Redis).
//! - `caches/`: [`cache`] (statuses, counts, sessions), [`home_cache`],
//!   [`view_cache`] and [`tracked`] under them, kept true by Redis's
//!   invalidation pushes.
//! - `plumbing/`: [`conn`] (one server or a cluster), [`keys`] (every key
//!   name), `replicas` (`--redis-wait-replicas`), [`migrate`].
//!
//! Each Lua script is a `lua/<name>.lua` file whose header says why it is
//! atomic and which keys it touches, named once in [`Scripts`].

pub mod bookmarks;
mod caches;
mod chains;
pub mod conversations;
pub mod demo;
pub mod events;
pub mod fanout;
pub mod follow_requests;
pub mod follows;
pub mod groups;
pub mod leases;
pub mod likes;
pub mod lists;
pub mod notifications;
pub use chains::edit::{EditRefused, Edited, EDIT_WINDOW, MAX_EDITS};
pub mod moderation;
pub mod outbox;
pub mod paging;
mod plumbing;
pub mod ranking;
pub mod rate;
pub mod relations;
pub mod rules;
pub mod sessions;
pub mod social;
pub mod statuses;
mod trends;
pub mod users;
mod writes;
pub mod zstd_dicts;

pub use caches::{cache, home_cache, tracked, view_cache};
pub(crate) use plumbing::replicas;
pub use plumbing::{conn, keys, migrate};
use writes::post_whole;
pub use writes::{emitter, fanout_hints, ids};

use crate::config::Config;
use conn::{LazyCluster, RedisConn};
use keys::Keys;
use redis::aio::ConnectionManager;
use redis::{Client, Script};
use std::sync::Arc;
use std::time::Duration;

/// A store failure, mapped to HTTP by `ApiError`.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The named thing does not exist.
    #[error("no such {0}")]
    NotFound(&'static str),
    /// A uniqueness or state conflict: code and message.
    #[error("{1}")]
    Conflict(&'static str, String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The request names something the store cannot serve: code and message.
    #[error("{1}")]
    Invalid(&'static str, String),
    /// The store cannot serve now for a reason of its own (retry later).
    #[error("{0}")]
    Unavailable(String),
    /// Redis could not be reached or failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A bound on what a user may hold is reached: code and message (429).
    #[error("{1}")]
    Limit(&'static str, String),
    /// Data in Redis was not what the code expects.
    #[error("{0}")]
    Internal(String),
}

impl StoreError {
    /// A follow (or follow request) refused: a block stands between the
    /// two users, whichever side made it.
    pub(crate) fn follow_blocked() -> Self {
        Self::Forbidden("You cannot follow this user: a block stands between you.".into())
    }
}

/// Result of store calls.
pub type StoreResult<T> = Result<T, StoreError>;

/// Names each Lua script once: a field of [`Scripts`] loaded from
/// `lua/<name>.lua`.
macro_rules! scripts {
    ($($name:ident),* $(,)?) => {
        /// The Lua scripts, loaded once.
        #[derive(Debug)]
        pub struct Scripts {
            $(pub(crate) $name: Script,)*
        }

        impl Scripts {
            fn load() -> Self {
                Scripts {
                    $($name: Script::new(include_str!(concat!("lua/", stringify!($name), ".lua"))),)*
                }
            }
        }
    };
}

scripts!(
    op_begin,
    op_finish,
    emit_once,
    op_retire,
    name_claim,
    name_release,
    status_put,
    author_post,
    author_delete,
    replies_count,
    trend,
    trend_move,
    repost_claim,
    delete_mark,
    status_bury,
    emit,
    follow_source,
    follow_target,
    follow_home,
    drop_sessions,
    session_end,
    record_view,
    fanout_page,
    fanout_ack,
    outbox_claim,
    like,
    stream_lease,
    home_ids,
    lease_renew,
    page_from,
    ids_up_to,
    lease_release,
    relate,
    home_hide,
    home_unhide,
    request_add,
    conv_send,
    direct_claim,
    conv_leave,
    group_create,
    user_suspend,
    report_add,
    report_resolve,
    audit_add,
    group_member,
    conv_read,
    undo_take,
    status_login,
    rules_add,
    bookmark_add,
    list_create,
    zstd_dict_put,
    emit_many,
    notify_read,
    status_edit,
    list_title,
    list_drop,
    list_members,
    rules_delete,
    rate_take,
    like_whole,
    follow_whole,
    post_whole,
);

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
    pub(crate) cache: Arc<cache::StatusCache>,
    pub(crate) counts_cache: Arc<cache::CountsCache>,
    pub(crate) trend_memo: Arc<trends::TrendMemo>,
    /// Rows of recently ranked timelines (`ranking`).
    pub(crate) rank_cache: Arc<ranking::RankCache>,
    /// Fault tests only: a pause in the middle of a suspension.
    pub(crate) pause_suspend: Duration,
    /// Fault tests only: a pause between a session's end and its revocation.
    pub(crate) pause_session_end: Duration,
    /// Fault tests only: a pause between a sign-up's two name claims.
    pub(crate) pause_signup: Duration,
    /// Fault tests only: a pause between a partitioned op's events and
    /// its retirement.
    pub(crate) pause_retire: Duration,
    /// Until when (unix seconds; 0: never) idempotency keys where the first
    /// layout kept them may answer (`store::migrate` reads it).
    pub(crate) legacy_idem_until: Arc<std::sync::atomic::AtomicU64>,
    /// Which fan-out queues may hold work (this process's workers wait on it).
    pub(crate) fanout_hints: Arc<fanout_hints::FanoutHints>,
    /// The group commit of partitioned writes' events.
    pub(crate) emitter: Arc<emitter::Emitter>,
    pub(crate) session_cache: Arc<cache::SessionCache>,
    /// The suspended users this process knows of (`moderation`).
    pub(crate) suspended: moderation::Suspended,
    pub(crate) home_cache: home_cache::HomeCache,
    pub(crate) view_cache: view_cache::ViewCache,
    /// Status ids (a process's instance lease and sequence).
    pub(crate) ids: Arc<ids::IdGen>,
    /// Most users one user may block, and mute.
    pub(crate) max_blocks: usize,
    pub(crate) max_mutes: usize,
    /// Most messages a conversation keeps, and conversations a user is in.
    pub(crate) max_conversation_messages: usize,
    pub(crate) max_conversations: usize,
    /// Seconds a deleted account's login stays reserved.
    pub(crate) login_reservation: u64,
    /// Replicas a write waits for (`--redis-wait-replicas`).
    pub(crate) replication: Arc<replicas::Replication>,
}

/// Where Redis is: one server, or the seed nodes of a cluster.
#[derive(Clone)]
pub(crate) enum Target {
    Single(Client),
    Cluster(Vec<String>),
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
        let (conn, target, homes, views) = match cfg.redis_cluster.as_deref() {
            Some(list) => {
                let nodes = cluster_nodes(list);
                if nodes.is_empty() {
                    return Err(StoreError::Internal("--redis-cluster names no node".into()));
                }
                let conn = RedisConn::Cluster(LazyCluster::new(&nodes, Duration::from_secs(5))?);
                (
                    conn,
                    Target::Cluster(nodes),
                    home_cache::HomeCache::new(None, 0),
                    view_cache::ViewCache::new(None, 0),
                )
            }
            None => {
                let client = Client::open(url)?;
                let manager_cfg = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(2)))
                    .set_response_timeout(Some(Duration::from_secs(5)))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_millis(500));
                let conn = ConnectionManager::new_lazy_with_config(client.clone(), manager_cfg)?;
                let homes = home_cache::HomeCache::new(Some(&client), cfg.home_cache);
                let views = view_cache::ViewCache::new(Some(&client), cfg.view_cache);
                (
                    RedisConn::Single(conn),
                    Target::Single(client),
                    homes,
                    views,
                )
            }
        };
        Ok(Store {
            conn,
            target,
            keys: Keys::new(&cfg.key_prefix),
            scripts: Arc::new(Scripts::load()),
            replay_maxlen: cfg.replay_maxlen,
            fanout_inline: cfg.fanout_inline.max(1),
            fanout_batch: cfg.fanout_batch.max(1),
            outbox_lease: cfg.outbox_lease.max(0.1),
            cache: Arc::new(cache::StatusCache::new(cfg.status_cache)),
            counts_cache: Arc::new(cache::CountsCache::default()),
            trend_memo: Arc::new(trends::TrendMemo::default()),
            rank_cache: Arc::default(),
            pause_suspend: Duration::from_millis(cfg.test_pause_suspend_ms),
            pause_session_end: Duration::from_millis(cfg.test_pause_session_end_ms),
            pause_signup: Duration::from_millis(cfg.test_pause_signup_ms),
            pause_retire: Duration::from_millis(cfg.test_pause_retire_ms),
            legacy_idem_until: Arc::default(),
            fanout_hints: Arc::default(),
            emitter: Arc::default(),
            suspended: moderation::Suspended::default(),
            session_cache: Arc::new(cache::SessionCache::new(Duration::from_secs_f64(
                cfg.session_cache_ttl.clamp(0.0, 3600.0),
            ))),
            home_cache: homes,
            view_cache: views,
            ids: Arc::new(ids::IdGen::new(cfg.clock_offset_ms)),
            max_blocks: cfg.max_blocks,
            max_mutes: cfg.max_mutes,
            max_conversation_messages: cfg.max_conversation_messages,
            max_conversations: cfg.max_conversations_per_user,
            login_reservation: cfg.login_reservation_days.saturating_mul(86_400),
            replication: Arc::new(replicas::Replication::new(
                cfg.redis_wait_replicas,
                cfg.redis_wait_timeout_ms,
                &cfg.key_prefix,
            )),
        })
    }

    /// Which fan-out queues may hold work (the workers wait on it).
    pub fn fanout_hints(&self) -> Arc<fanout_hints::FanoutHints> {
        self.fanout_hints.clone()
    }

    /// The status cache (the hub evicts deleted statuses from it).
    pub fn status_cache(&self) -> &cache::StatusCache {
        &self.cache
    }

    /// Recently read status counts (the hub evicts changed ones).
    pub fn counts_cache(&self) -> &cache::CountsCache {
        &self.counts_cache
    }

    /// Sessions recently found alive (the hub revokes ended ones and
    /// suspends it while its subscription is down).
    pub fn session_cache(&self) -> &cache::SessionCache {
        &self.session_cache
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

    /// A pub/sub connection of its own, subscribed to the event channel.
    ///
    /// On a cluster, the events are published by scripts on the node that
    /// owns the `{g}` slot, and a PUBLISH there reaches subscribers on every
    /// node (over the cluster bus); the subscription is made on that owner,
    /// found with CLUSTER SLOTS through the seeds in turn, so events arrive
    /// without the extra hop (and in the order they were published). A new
    /// subscription after a failover finds the new owner.
    pub async fn subscribe_events(&self) -> StoreResult<events::EventSubscription> {
        let client = match &self.target {
            Target::Single(client) => client.clone(),
            Target::Cluster(nodes) => self.slot_owner(nodes).await?,
        };
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(self.keys.channel()).await?;
        Ok(events::EventSubscription::new(pubsub))
    }

    /// A client for the master that owns the `{g}` slot, asked of the seeds
    /// in turn (starting from a different one at every call).
    async fn slot_owner(&self, nodes: &[String]) -> StoreResult<Client> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let slot = i64::from(conn::slot(self.keys.events().as_bytes()));
        let start = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut last_err = None;
        for i in 0..nodes.len() {
            let seed = &nodes[(start + i) % nodes.len()];
            let asked = async {
                let client = Client::open(seed.as_str())?;
                let mut c = client.get_multiplexed_async_connection().await?;
                let ranges: Vec<redis::Value> = redis::cmd("CLUSTER")
                    .arg("SLOTS")
                    .query_async(&mut c)
                    .await?;
                Ok::<_, redis::RedisError>((client, ranges))
            };
            let (seed_client, ranges) =
                match tokio::time::timeout(Duration::from_secs(2), asked).await {
                    Ok(Ok(found)) => found,
                    Ok(Err(e)) => {
                        last_err = Some(StoreError::Redis(e));
                        continue;
                    }
                    Err(_) => continue,
                };
            for range in ranges {
                let Ok((lo, hi, master)) =
                    redis::from_redis_value::<(i64, i64, Vec<redis::Value>)>(match range {
                        redis::Value::Array(mut v) if v.len() >= 3 => {
                            v.truncate(3);
                            redis::Value::Array(v)
                        }
                        other => other,
                    })
                else {
                    continue;
                };
                if !(lo..=hi).contains(&slot) {
                    continue;
                }
                let host: Option<String> = master
                    .first()
                    .and_then(|v| redis::from_redis_value(v.clone()).ok());
                let port: Option<u16> = master
                    .get(1)
                    .and_then(|v| redis::from_redis_value(v.clone()).ok());
                if let (Some(host), Some(port)) = (host, port) {
                    return Ok(Client::open(with_host(seed, &host, port))?);
                }
            }
            // The seed answered but named no owner: subscribe there.
            return Ok(seed_client);
        }
        Err(last_err.unwrap_or(StoreError::Internal("no seed node answered".into())))
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

/// Parses a decimal id kept as a Redis string.
pub(crate) fn parse_id(s: &str) -> StoreResult<u64> {
    s.parse()
        .map_err(|_| StoreError::Internal(format!("bad id in redis: {s:?}")))
}

/// `seed` (a `redis://` URL) pointed at `host:port` instead, keeping its
/// scheme, credentials, database and parameters: how the event subscription
/// reaches the `{g}` owner with the seed's AUTH.
fn with_host(seed: &str, host: &str, port: u16) -> String {
    let (scheme, rest) = seed.split_once("://").unwrap_or(("redis", seed));
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let userinfo = authority
        .rsplit_once('@')
        .map_or(String::new(), |(u, _)| format!("{u}@"));
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    format!("{scheme}://{userinfo}{host}:{port}{tail}")
}

#[cfg(test)]
mod url_tests {
    use super::with_host;

    #[test]
    fn the_owner_url_keeps_the_seeds_credentials_and_database() {
        assert_eq!(
            with_host("redis://127.0.0.1:7000", "10.0.0.2", 7001),
            "redis://10.0.0.2:7001"
        );
        assert_eq!(
            with_host("redis://app:s3cret@h1:7000/0?protocol=resp3", "h2", 7002),
            "redis://app:s3cret@h2:7002/0?protocol=resp3"
        );
        assert_eq!(
            with_host("redis://:pw@[::1]:7000", "::2", 7003),
            "redis://:pw@[::2]:7003"
        );
        assert_eq!(with_host("h1:7000", "h2", 1), "redis://h2:1");
    }
}
