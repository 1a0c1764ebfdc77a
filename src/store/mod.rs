//! The only code that talks to Redis: one module per entity.
//!
//! - [`keys`]: every key name.
//! - [`users`]: registration, lookup, profile updates.
//! - [`sessions`]: login sessions, last-seen, viewed statuses, clean-up.
//! - [`statuses`]: post, delete, read, timelines.
//! - [`follows`]: follow and unfollow as idempotent per-user steps.
//! - [`fanout`]: the durable fan-out queue and its batches.
//! - [`likes`]: likes and who likes a status.
//! - [`events`]: the replay buffer (reading history) and event emission.
//!
//! Each Lua script is a `lua/<name>.lua` file whose header says why it is
//! atomic and which keys it touches.

pub mod cache;
pub mod events;
pub mod fanout;
pub mod follows;
pub mod keys;
pub mod likes;
pub mod requests;
pub mod sessions;
pub mod social;
pub mod statuses;
pub mod users;

use crate::config::Config;
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
    /// Redis could not be reached or failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Data in Redis was not what the code expects.
    #[error("{0}")]
    Internal(String),
}

/// Result of store calls.
pub type StoreResult<T> = Result<T, StoreError>;

/// The Lua scripts, loaded once.
#[derive(Debug)]
pub struct Scripts {
    pub(crate) create_user: Script,
    pub(crate) emit: Script,
    pub(crate) post_status: Script,
    pub(crate) delete_status: Script,
    pub(crate) follow_source: Script,
    pub(crate) follow_target: Script,
    pub(crate) follow_home: Script,
    pub(crate) drop_sessions: Script,
    pub(crate) record_view: Script,
    pub(crate) fanout_page: Script,
    pub(crate) fanout_ack: Script,
    pub(crate) outbox_finish: Script,
    pub(crate) outbox_claim: Script,
    pub(crate) like: Script,
    pub(crate) follow_request: Script,
}

impl Scripts {
    fn load() -> Self {
        Scripts {
            create_user: Script::new(include_str!("lua/create_user.lua")),
            emit: Script::new(include_str!("lua/emit.lua")),
            post_status: Script::new(include_str!("lua/post_status.lua")),
            delete_status: Script::new(include_str!("lua/delete_status.lua")),
            follow_source: Script::new(include_str!("lua/follow_source.lua")),
            follow_target: Script::new(include_str!("lua/follow_target.lua")),
            follow_home: Script::new(include_str!("lua/follow_home.lua")),
            drop_sessions: Script::new(include_str!("lua/drop_sessions.lua")),
            record_view: Script::new(include_str!("lua/record_view.lua")),
            fanout_page: Script::new(include_str!("lua/fanout_page.lua")),
            fanout_ack: Script::new(include_str!("lua/fanout_ack.lua")),
            outbox_finish: Script::new(include_str!("lua/outbox_finish.lua")),
            outbox_claim: Script::new(include_str!("lua/outbox_claim.lua")),
            like: Script::new(include_str!("lua/like.lua")),
            follow_request: Script::new(include_str!("lua/follow_request.lua")),
        }
    }
}

/// Handle to Redis: cheap to clone, reconnects by itself.
#[derive(Clone)]
pub struct Store {
    pub(crate) conn: ConnectionManager,
    pub(crate) client: Client,
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
}

impl Store {
    /// Connects lazily: the first command opens the connection, and a lost
    /// connection is reopened with backoff, so the server starts and recovers
    /// without Redis and answers 503 meanwhile.
    pub fn open(url: &str, cfg: &Config) -> StoreResult<Store> {
        let client = Client::open(url)?;
        let manager_cfg = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), manager_cfg)?;
        Ok(Store {
            conn,
            client,
            keys: Keys::new(&cfg.key_prefix),
            scripts: Arc::new(Scripts::load()),
            replay_maxlen: cfg.replay_maxlen,
            fanout_inline: cfg.fanout_inline.max(1),
            fanout_batch: cfg.fanout_batch.max(1),
            outbox_lease: cfg.outbox_lease.max(0.1),
            cache: Arc::new(cache::StatusCache::new(cfg.status_cache)),
            counts_cache: Arc::new(cache::CountsCache::default()),
        })
    }

    /// The status cache (the hub evicts deleted statuses from it).
    pub fn status_cache(&self) -> &cache::StatusCache {
        &self.cache
    }

    /// Recently read status counts (the hub evicts changed ones).
    pub fn counts_cache(&self) -> &cache::CountsCache {
        &self.counts_cache
    }

    /// The key builder.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// A connection of its own for blocking reads (the fan-out workers'
    /// XREADGROUP ... BLOCK), so they never hold up request traffic: it
    /// waits up to `block` longer than a request would for an answer.
    pub fn blocking_connection(&self, block: Duration) -> StoreResult<ConnectionManager> {
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(block + Duration::from_secs(5)))
            .set_number_of_retries(1);
        Ok(ConnectionManager::new_lazy_with_config(
            self.client.clone(),
            config,
        )?)
    }

    /// A connection handle for one call.
    pub(crate) fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// A pub/sub connection of its own, subscribed to the event channel.
    pub async fn subscribe_events(&self) -> StoreResult<redis::aio::PubSub> {
        let mut pubsub = self.client.get_async_pubsub().await?;
        pubsub.subscribe(self.keys.channel()).await?;
        Ok(pubsub)
    }

    /// PING: whether Redis answers.
    pub async fn ping(&self) -> StoreResult<()> {
        let mut conn = self.conn();
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }

    /// A Redis configuration parameter (CONFIG GET), if the server reports it.
    pub async fn config_get(&self, name: &str) -> StoreResult<Option<String>> {
        let mut conn = self.conn();
        let pair: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query_async(&mut conn)
            .await?;
        Ok(pair.into_iter().nth(1))
    }

    /// The `redis_version` INFO field.
    pub async fn server_version(&self) -> StoreResult<String> {
        let mut conn = self.conn();
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await?;
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
