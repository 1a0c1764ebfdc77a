//! Writes that survive a failover: `--redis-wait-replicas`.
//!
//! Redis replicates asynchronously, so a master killed right after a write
//! may take the write with it when its replica is promoted. With
//! `--redis-wait-replicas N`, a write is answered only once every master
//! has `N` replicas (fewer when fewer are attached and in sync: a master
//! with none has nothing to be failed over to) that hold everything it had
//! taken when the write finished; else the answer is a 503, and a retry
//! with the same Idempotency-Key settles it.
//!
//! How: replication is one ordered stream per master, so a replica that
//! acknowledged a later write holds every earlier one. Each master gets a
//! connection of its own that writes a marker key in a slot the master
//! owns and then sends `WAIT` (which waits for that client's last write).
//! The request traffic never waits behind a blocked `WAIT`, and one round
//! in flight per master confirms every write finished before it was sent
//! (a group commit): under load a round covers many writes.

use crate::store::plumbing::conn::Target;
use crate::store::plumbing::conn::{slot, RedisConn};
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::aio::MultiplexedConnection;
use redis::{Client, ConnectionAddr, IntoConnectionInfo, Value};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How long a view of the masters and their replicas is trusted.
const VIEW_TTL: Duration = Duration::from_secs(1);

/// The replication policy and what it knows of the masters.
pub(crate) struct Replication {
    /// Replicas each master must have confirmed a write to (0: off).
    want: u32,
    timeout_ms: u64,
    /// The marker key (under the key prefix; on a cluster, with a hash
    /// tag after it for a slot of each master).
    marker: String,
    view: Mutex<Option<View>>,
}

/// The masters as last seen.
struct View {
    at: Instant,
    masters: Vec<Arc<Master>>,
}

/// One master: its address, replicas in sync, and the confirming rounds.
struct Master {
    addr: String,
    /// The first slot it serves (on one Redis, 0).
    slot: u16,
    /// Its replicas in sync, as last seen.
    replicas: AtomicU32,
    /// A key in a slot this master owns (the marker each round writes).
    marker: String,
    client: Client,
    conn: Mutex<Option<MultiplexedConnection>>,
    /// Tickets: each write to confirm takes the next number; a round
    /// covers every ticket taken before it was sent.
    taken: AtomicU64,
    confirmed: AtomicU64,
    failed: AtomicU64,
    round: Mutex<()>,
}

impl Replication {
    pub(crate) fn new(want: u32, timeout_ms: u64, prefix: &str) -> Replication {
        Replication {
            want,
            timeout_ms: timeout_ms.max(1),
            marker: format!("{prefix}:replication-marker"),
            view: Mutex::new(None),
        }
    }

    /// Whether writes wait for replicas at all.
    pub(crate) fn enabled(&self) -> bool {
        self.want > 0
    }

    /// Waits until every master's replicas hold what the master had when
    /// this was called. `Unavailable` when one did not confirm in time.
    pub(crate) async fn confirm(&self, conn: &RedisConn, target: &Target) -> StoreResult<()> {
        if !self.enabled() {
            return Ok(());
        }
        let masters = self.masters(conn, target).await?;
        let rounds = masters.iter().filter_map(|m| {
            let replicas = m.replicas.load(Ordering::SeqCst);
            (replicas > 0).then(|| m.confirm(self.want.min(replicas), self.timeout_ms))
        });
        let results = futures::future::join_all(rounds).await;
        if results.iter().all(|ok| *ok) {
            return Ok(());
        }
        // A master that did not answer may be gone: look again next time.
        *self.view.lock().await = None;
        Err(StoreError::Unavailable(
            "A replica did not confirm the write in time; it may or may not be kept. Retry with the same Idempotency-Key."
                .into(),
        ))
    }

    async fn masters(&self, conn: &RedisConn, target: &Target) -> StoreResult<Vec<Arc<Master>>> {
        let mut view = self.view.lock().await;
        if let Some(v) = view.as_ref().filter(|v| v.at.elapsed() < VIEW_TTL) {
            return Ok(v.masters.clone());
        }
        let old: Vec<Arc<Master>> = view.take().map(|v| v.masters).unwrap_or_default();
        let masters = look(conn, target, &old, &self.marker).await?;
        *view = Some(View {
            at: Instant::now(),
            masters: masters.clone(),
        });
        Ok(masters)
    }
}

impl Master {
    /// One ticket's confirmation: run a round, or learn the outcome of the
    /// round that covered it.
    async fn confirm(&self, want: u32, timeout_ms: u64) -> bool {
        let ticket = self.taken.fetch_add(1, Ordering::SeqCst) + 1;
        let _round = self.round.lock().await;
        if self.confirmed.load(Ordering::SeqCst) >= ticket {
            return true;
        }
        if self.failed.load(Ordering::SeqCst) >= ticket {
            return false;
        }
        let upto = self.taken.load(Ordering::SeqCst);
        let ok = self.round(want, timeout_ms).await;
        let outcome = if ok { &self.confirmed } else { &self.failed };
        outcome.fetch_max(upto, Ordering::SeqCst);
        ok
    }

    async fn round(&self, want: u32, timeout_ms: u64) -> bool {
        let mut slot = self.conn.lock().await;
        if slot.is_none() {
            let opened = tokio::time::timeout(
                Duration::from_secs(2),
                self.client.get_multiplexed_async_connection(),
            )
            .await;
            match opened {
                Ok(Ok(c)) => *slot = Some(c),
                _ => return false,
            }
        }
        let Some(c) = slot.as_mut() else {
            return false;
        };
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(&self.marker)
            .arg(1)
            .arg("PX")
            .arg(60_000)
            .ignore()
            .cmd("WAIT")
            .arg(want)
            .arg(timeout_ms);
        let reply = tokio::time::timeout(
            Duration::from_millis(timeout_ms + 2_000),
            pipe.query_async::<(u32,)>(c),
        )
        .await;
        match reply {
            Ok(Ok((acked,))) => acked >= want,
            Ok(Err(e)) => {
                tracing::warn!(master = %self.addr, error = %e, "replica confirmation failed");
                *slot = None;
                false
            }
            Err(_) => {
                *slot = None;
                false
            }
        }
    }
}

/// The masters and their replicas in sync, from `INFO replication` (and on
/// a cluster `CLUSTER SLOTS` for a slot each owns). A master seen before
/// keeps its connection and tickets.
async fn look(
    conn: &RedisConn,
    target: &Target,
    old: &[Arc<Master>],
    single_marker: &str,
) -> StoreResult<Vec<Arc<Master>>> {
    let mut c = conn.clone();
    // A master seen before (same address, same first slot) is kept, with
    // its connection, marker and tickets; only its replica count moves.
    // A new one gets its marker (a search over keys) and client once.
    let keep =
        |addr: &str, slot: u16, replicas: u32, make: &dyn Fn() -> StoreResult<(String, Client)>| {
            if let Some(m) = old.iter().find(|m| m.addr == addr && m.slot == slot) {
                m.replicas.store(replicas, Ordering::SeqCst);
                return Ok(Arc::clone(m));
            }
            let (marker, client) = make()?;
            Ok::<_, StoreError>(Arc::new(Master {
                addr: addr.to_string(),
                slot,
                replicas: AtomicU32::new(replicas),
                marker,
                client,
                conn: Mutex::new(None),
                taken: AtomicU64::new(0),
                confirmed: AtomicU64::new(0),
                failed: AtomicU64::new(0),
                round: Mutex::new(()),
            }))
        };
    match target {
        Target::Single(client) => {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut c)
                .await?;
            Ok(vec![keep("single", 0, replicas_in_sync(&info), &|| {
                Ok((single_marker.to_string(), client.clone()))
            })?])
        }
        Target::Cluster(seeds) => {
            let infos: Value = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut c)
                .await?;
            let slots: Vec<Value> = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query_async(&mut c)
                .await?;
            let seed = seeds
                .first()
                .ok_or_else(|| StoreError::Internal("no cluster seed".into()))?;
            let mut masters = Vec::new();
            for (addr, info) in node_texts(infos) {
                let Some(first) = first_slot_of(&slots, &addr) else {
                    continue;
                };
                let Some((host, port)) = addr.rsplit_once(':') else {
                    continue;
                };
                let port: u16 = port
                    .parse()
                    .map_err(|_| StoreError::Internal(format!("a node address {addr}")))?;
                masters.push(keep(&addr, first, replicas_in_sync(&info), &|| {
                    Ok((
                        marker_for(single_marker, first),
                        node_client(seed, host, port)?,
                    ))
                })?);
            }
            Ok(masters)
        }
    }
}

/// The `{addr => text}` map the cluster client makes of a command sent to
/// every master.
fn node_texts(value: Value) -> Vec<(String, String)> {
    let text = |v: Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        Value::VerbatimString { text, .. } => Some(text),
        Value::SimpleString(s) => Some(s),
        _ => None,
    };
    match value {
        Value::Map(pairs) => pairs
            .into_iter()
            .filter_map(|(k, v)| Some((text(k)?, text(v)?)))
            .collect(),
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|p| match p {
                [k, v] => Some((text(k.clone())?, text(v.clone())?)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Replicas a master's `INFO replication` lists as `state=online`.
fn replicas_in_sync(info: &str) -> u32 {
    info.lines()
        .filter(|l| l.starts_with("slave") && l.contains("state=online"))
        .count() as u32
}

/// The first slot of a range `CLUSTER SLOTS` gives the master at `addr`.
fn first_slot_of(slots: &[Value], addr: &str) -> Option<u16> {
    slots.iter().find_map(|range| {
        let Value::Array(parts) = range else {
            return None;
        };
        let start = match parts.first()? {
            Value::Int(n) => u16::try_from(*n).ok()?,
            _ => return None,
        };
        let Value::Array(node) = parts.get(2)? else {
            return None;
        };
        let host = match node.first()? {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            _ => return None,
        };
        let port = match node.get(1)? {
            Value::Int(n) => *n,
            _ => return None,
        };
        (format!("{host}:{port}") == addr).then_some(start)
    })
}

/// A marker key whose slot is `target` (found by counting: a slot's key
/// turns up within a few ten thousand tries).
fn marker_for(base: &str, target: u16) -> String {
    (0u32..)
        .map(|i| format!("{base}:{{{i}}}"))
        .find(|k| slot(k.as_bytes()) == target)
        .unwrap_or_default()
}

/// A client for one node, with the seed's credentials and TLS.
fn node_client(seed: &str, host: &str, port: u16) -> StoreResult<Client> {
    let info = seed.into_connection_info()?;
    let addr = match info.addr().clone() {
        ConnectionAddr::Tcp(_, _) => ConnectionAddr::Tcp(host.to_string(), port),
        other => {
            tracing::warn!(
                "--redis-wait-replicas on a cluster reached over {other:?}: the confirming connection uses plain TCP"
            );
            ConnectionAddr::Tcp(host.to_string(), port)
        }
    };
    Ok(Client::open(info.set_addr(addr))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_lands_in_the_slot_asked_for() {
        for s in [0u16, 7233, 16383] {
            assert_eq!(slot(marker_for("fh:m", s).as_bytes()), s);
        }
    }

    #[test]
    fn only_online_replicas_count() {
        let info = "role:master\r\nconnected_slaves:2\r\nslave0:ip=1,port=2,state=online,offset=5,lag=0\r\nslave1:ip=1,port=3,state=wait_bgsave,offset=0,lag=0\r\n";
        assert_eq!(replicas_in_sync(info), 1);
    }
}
