//! One connection type for a single Redis and for a Redis Cluster.
//!
//! [`RedisConn`] implements `redis::aio::ConnectionLike`, so every command,
//! pipeline and script call in the store is written once. On a cluster,
//! commands go to the node that owns their key's slot (the redis crate's
//! cluster client follows MOVED and ASK), and a script must name keys of one
//! slot only (ours do: see `lua/`). A pipeline whose commands span slots is
//! cut into one pipeline per slot, sent concurrently, and its replies put
//! back in the caller's order: a cross-slot pipeline therefore has no order
//! between its slots, and code that needs "this, then that" across slots
//! sends two pipelines. `MULTI` pipelines must stay within one slot.

use futures::future::try_join_all;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Arg, Cmd, Pipeline, RedisFuture, RedisResult, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A cluster connection opened at first use (and retried at the next use
/// when the cluster could not be reached), shared by every clone, and
/// replaced when its requests have kept failing for [`HEAL_AFTER`].
///
/// The redis crate's cluster connection recovers from a failover by itself
/// almost always; twice in many runs of the failover fault test it did not
/// (`/readyz` said unavailable for minutes with all six nodes up and in
/// sync).
/// A connection whose requests keep failing that long is dropped and the
/// next request opens a fresh one from the seed nodes, as a restart would.
#[derive(Clone)]
pub struct LazyCluster {
    inner: Arc<Shared>,
}

/// How long a cluster connection may keep failing before it is replaced
/// (longer than a failover takes to settle with our node timeouts).
const HEAL_AFTER: Duration = Duration::from_secs(8);

/// The longest wait for a new cluster connection (every node's connection
/// and the slot map).
const OPEN_WITHIN: Duration = Duration::from_secs(10);

/// A gap with no failure that ends a run of failures, beyond the response
/// timeout (a caller that sends one request after another sees its
/// failures that far apart when each times out).
const QUIET: Duration = Duration::from_secs(2);

struct Shared {
    client: ClusterClient,
    /// The connection in use; `None` until opened, or once dropped.
    conn: Mutex<Option<ClusterConnection>>,
    /// One opening at a time: the others wait for its connection.
    opening: tokio::sync::Mutex<()>,
    /// The current run of failures.
    failing: Mutex<FailureRun>,
    /// The gap that ends a run: [`QUIET`] past the response timeout.
    quiet: Duration,
}

/// A run of failures: each less than a quiet gap after the one before.
#[derive(Default)]
struct FailureRun(Option<(Instant, Instant)>);

impl FailureRun {
    /// Notes a failure at `now`; true when the run (failures less than
    /// `quiet` apart) has lasted [`HEAL_AFTER`] (and a new run begins).
    fn fail(&mut self, now: Instant, quiet: Duration) -> bool {
        let (began, last) = self.0.get_or_insert((now, now));
        if now.duration_since(*last) > quiet {
            *began = now;
        }
        *last = now;
        if now.duration_since(*began) < HEAL_AFTER {
            return false;
        }
        self.0 = None;
        true
    }
}

impl LazyCluster {
    /// A lazy connection to the cluster of these seed nodes, with this
    /// response timeout.
    pub fn new(nodes: &[String], response_timeout: Duration) -> RedisResult<Self> {
        let client = ClusterClient::builder(nodes.to_vec())
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(response_timeout)
            .retries(3)
            .max_retry_wait(500)
            .build()?;
        Ok(LazyCluster {
            inner: Arc::new(Shared {
                client,
                conn: Mutex::new(None),
                opening: tokio::sync::Mutex::new(()),
                failing: Mutex::new(FailureRun::default()),
                quiet: response_timeout + QUIET,
            }),
        })
    }

    fn current(&self) -> Option<ClusterConnection> {
        self.inner
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    async fn get(&self) -> RedisResult<ClusterConnection> {
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let _opening = self.inner.opening.lock().await;
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        // Bounded: the crate's connect was seen to hang now and then
        // (redis-rs issue 1953), and every request waits on this one.
        let conn = tokio::time::timeout(OPEN_WITHIN, self.inner.client.get_async_connection())
            .await
            .map_err(|_| {
                redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "opening the Redis Cluster connection timed out",
                ))
            })??;
        *self.inner.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
        Ok(conn)
    }

    /// Notes how a request went. Failures of the link (not of a command:
    /// a script's error is an answer) less than the quiet gap apart make a
    /// run; a run longer than [`HEAL_AFTER`] drops the connection. Other
    /// requests' successes do not end a run: a connection stuck on one
    /// node still answers for the others.
    fn note<T>(&self, result: &RedisResult<T>) {
        let Err(e) = result else { return };
        if !is_link_failure(e) {
            return;
        }
        let mut run = self.inner.failing.lock().unwrap_or_else(|e| e.into_inner());
        if !run.fail(Instant::now(), self.inner.quiet) {
            return;
        }
        drop(run);
        let dropped = self
            .inner
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if dropped.is_some() {
            tracing::warn!(
                error = %e,
                "Redis Cluster requests kept failing for {} s: opening a new connection",
                HEAL_AFTER.as_secs()
            );
        }
    }
}

/// Whether an error says the link to the cluster is failing (no answer, a
/// dropped connection, a cluster that is down) rather than a command's own.
fn is_link_failure(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_cluster_error()
        || e.is_unrecoverable_error()
}

/// A connection to Redis or to a Redis Cluster: cheap to clone, reconnects
/// by itself.
#[derive(Clone)]
pub enum RedisConn {
    /// One Redis server.
    Single(ConnectionManager),
    /// A Redis Cluster.
    Cluster(LazyCluster),
}

/// CRC16-XMODEM (polynomial 0x1021), the checksum Redis Cluster slots use.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The cluster slot of a key: of its hash tag (the first non-empty `{...}`)
/// when it has one, else of the whole key.
pub fn slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        rest.iter()
            .position(|&b| b == b'}')
            .filter(|&close| close > 0)
            .map(|close| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) % 16384
}

/// The slot of a command's first key (`None`: a keyless command). Covers the
/// commands the store pipelines: the key is the first argument, or for
/// EVAL/EVALSHA the first after the key count.
fn slot_of(cmd: &Cmd) -> Option<u16> {
    let args: Vec<&[u8]> = cmd
        .args_iter()
        .filter_map(|a| match a {
            Arg::Simple(bytes) => Some(bytes),
            _ => None,
        })
        .collect();
    let name = args.first()?.to_ascii_uppercase();
    let key = match name.as_slice() {
        b"EVAL" | b"EVALSHA" => {
            let n: usize = std::str::from_utf8(args.get(2)?).ok()?.parse().ok()?;
            (n > 0).then(|| args.get(3)).flatten()?
        }
        b"PING" | b"MULTI" | b"EXEC" | b"SCRIPT" | b"INFO" | b"CONFIG" | b"TIME" => return None,
        _ => args.get(1)?,
    };
    Some(slot(key))
}

/// Sends a non-transactional pipeline over a cluster: as is when its
/// commands share one slot, else one sub-pipeline per slot, concurrently,
/// with the replies reassembled in the pipeline's order.
async fn cluster_pipeline(
    conn: &mut ClusterConnection,
    pipeline: &Pipeline,
    offset: usize,
    count: usize,
) -> RedisResult<Vec<Value>> {
    let routes: Vec<Option<u16>> = pipeline.cmd_iter().map(slot_of).collect();
    let first = routes.iter().flatten().next().copied();
    if pipeline.is_transaction() || routes.iter().flatten().all(|r| Some(*r) == first) {
        return conn.req_packed_commands(pipeline, offset, count).await;
    }
    // Keyless commands ride with the first group.
    let mut groups: HashMap<Option<u16>, (Pipeline, Vec<usize>)> = HashMap::new();
    for (i, (cmd, route)) in pipeline.cmd_iter().zip(&routes).enumerate() {
        let (sub, at) = groups.entry(route.or(first)).or_default();
        sub.add_command(cmd.clone());
        at.push(i);
    }
    let replies = try_join_all(groups.into_values().map(|(sub, at)| {
        let mut conn = conn.clone();
        async move {
            let values = conn.req_packed_commands(&sub, 0, sub.len()).await?;
            Ok::<_, redis::RedisError>((values, at))
        }
    }))
    .await?;
    let mut out = vec![Value::Nil; pipeline.len()];
    for (values, at) in replies {
        for (v, i) in values.into_iter().zip(at) {
            out[i] = v;
        }
    }
    Ok(out.into_iter().skip(offset).take(count).collect())
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisConn::Single(c) => c.req_packed_command(cmd),
            RedisConn::Cluster(lazy) => Box::pin(async move {
                let result = match lazy.get().await {
                    Ok(mut conn) => conn.req_packed_command(cmd).await,
                    Err(e) => Err(e),
                };
                lazy.note(&result);
                result
            }),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisConn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            RedisConn::Cluster(lazy) => Box::pin(async move {
                let result = match lazy.get().await {
                    Ok(mut conn) => cluster_pipeline(&mut conn, pipeline, offset, count).await,
                    Err(e) => Err(e),
                };
                lazy.note(&result);
                result
            }),
        }
    }

    fn get_db(&self) -> i64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::{slot, FailureRun, HEAL_AFTER, QUIET};
    use std::time::{Duration, Instant};

    #[test]
    fn a_connection_is_replaced_after_a_long_run_of_failures_only() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Requests one after another, each timing out after 5 s: their
        // failures are 5 s apart, and still one run.
        let quiet = Duration::from_secs(5) + QUIET;
        let step = 5_000;
        let heal = HEAL_AFTER.as_millis() as u64;
        let mut run = FailureRun::default();
        // No heal until the run is HEAL_AFTER long.
        let mut ms = 0;
        while ms < heal {
            assert!(!run.fail(at(ms), quiet), "healed at {ms} ms");
            ms += step;
        }
        assert!(run.fail(at(ms), quiet), "a run of {ms} ms heals");
        // ... and the next failure begins a new run.
        assert!(!run.fail(at(ms + step), quiet));
        // A quiet gap ends a run: failures on either side never heal.
        let mut run = FailureRun::default();
        let gap = quiet.as_millis() as u64 + 1;
        assert!(!run.fail(at(0), quiet));
        assert!(!run.fail(at(gap), quiet));
        assert!(!run.fail(at(2 * gap), quiet));
    }

    #[test]
    fn slots_follow_redis_cluster() {
        // Values from CLUSTER KEYSLOT on Redis 7.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"user:{42}:home"), slot(b"42"));
        assert_eq!(slot(b"{}x"), slot(b"{}x"));
        assert_eq!(slot(b"123456789"), 0x31C3);
    }
}

/// Where Redis is: one server, or the seed nodes of a cluster.
#[derive(Clone)]
pub(crate) enum Target {
    Single(redis::Client),
    Cluster(Vec<String>),
}
