//! The process's subscription to the log's channels: one RESP3 connection
//! per node (one Redis: one connection; a cluster: the cluster client's
//! connection to each master, with sharded pub/sub), whose messages arrive
//! as pushes, and probes of each node's time on the same connections
//! ([`store::events::merge`](crate::store::log::merge)).

use super::handle::Events;
use crate::store::log::id::EventId;
use crate::store::plumbing::conn::Target;
use crate::store::plumbing::error::{StoreError, StoreResult};
use redis::{PushInfo, PushKind, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What the subscription heard.
#[derive(Debug)]
pub enum Heard {
    /// A message of a shard: its payload.
    Message(usize, String),
    /// A connection was lost: messages may have been missed.
    Lost,
}

/// The process's subscription: its messages, and the probes that raise
/// the floors of quiet shards.
pub struct LogSubscription {
    /// The messages.
    pub pushes: LogPushes,
    /// The probes.
    pub prober: Prober,
}

/// The messages half of a [`LogSubscription`].
pub struct LogPushes {
    rx: mpsc::UnboundedReceiver<PushInfo>,
    channels: Arc<HashMap<String, usize>>,
}

impl LogPushes {
    /// The next thing heard; `None` once the subscription is gone.
    pub async fn next(&mut self) -> Option<Heard> {
        loop {
            let push = self.rx.recv().await?;
            if let Some(heard) = self.read(push) {
                return Some(heard);
            }
        }
    }

    /// What was heard and not yet taken, without waiting.
    pub fn drain(&mut self) -> Vec<Heard> {
        let mut out = Vec::new();
        while let Ok(push) = self.rx.try_recv() {
            out.extend(self.read(push));
        }
        out
    }

    fn read(&self, push: PushInfo) -> Option<Heard> {
        match push.kind {
            // A connection lost, or a shard channel's slot moved to another
            // node (Redis unsubscribes its subscribers): messages may be
            // missed, and the nodes' shards are not what the merge was told.
            PushKind::Disconnection | PushKind::SUnsubscribe => Some(Heard::Lost),
            PushKind::Message | PushKind::SMessage => {
                let mut data = push.data.into_iter();
                let channel: String = redis::from_redis_value(data.next()?).ok()?;
                let payload: String = redis::from_redis_value(data.next()?).ok()?;
                let k = *self.channels.get(&channel)?;
                Some(Heard::Message(k, payload))
            }
            _ => None,
        }
    }
}

#[derive(Clone)]
enum ProbeConn {
    Single(redis::aio::MultiplexedConnection),
    Cluster(redis::cluster_async::ClusterConnection),
}

/// The probes half of a [`LogSubscription`] (a clone probes on the same
/// connections).
#[derive(Clone)]
pub struct Prober {
    conn: ProbeConn,
    /// Each shard's marks HASH, which `log_probe.lua` reads.
    marks: Arc<[String]>,
    /// Each shard's node, numbered from 0 (all 0 on one Redis).
    node_of: Arc<[usize]>,
    /// A shard of each node, whose slot routes a probe of its time there.
    routes: Arc<[String]>,
    scripts: Arc<crate::store::plumbing::scripts::Scripts>,
}

/// What a probe tells of one shard: its node's time as a floor of the
/// log, and the shard's count of entries (`None`: it has none).
pub type Probed = (usize, EventId, Option<String>);

impl Prober {
    /// Each shard's node, numbered from 0, as the subscription found them
    /// (a shard whose slot moves since is unsubscribed: `Heard::Lost`).
    pub fn node_of(&self) -> Vec<usize> {
        self.node_of.to_vec()
    }

    /// Asks `nodes` for their time, each on the connection its messages
    /// come by (once an answer is here, every message that node sent
    /// before it is in [`LogPushes`]): one command a node.
    pub async fn time(&mut self, nodes: &[usize]) -> StoreResult<Vec<(usize, EventId)>> {
        let asks = nodes.iter().map(|&node| {
            let conn = self.conn.clone();
            let route = self.routes.get(node).cloned().unwrap_or_default();
            async move {
                let cmd = redis::cmd("TIME");
                let (secs, us): (u64, u64) = match conn {
                    ProbeConn::Single(mut c) => cmd.query_async(&mut c).await?,
                    ProbeConn::Cluster(mut c) => {
                        use redis::cluster_routing::{
                            Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr,
                        };
                        let to = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
                            Route::with_key(route.as_bytes(), SlotAddr::Master),
                        ));
                        redis::from_redis_value(c.route_command(cmd, to).await?)
                            .map_err(|e| StoreError::Internal(format!("TIME: {e}")))?
                    }
                };
                Ok::<_, StoreError>((
                    node,
                    EventId(secs * 1000 + us / 1000, (us % 1000) * 1024, 0),
                ))
            }
        });
        futures::future::try_join_all(asks).await
    }

    /// How many shards the log has.
    pub fn shards(&self) -> usize {
        self.marks.len()
    }

    /// Asks the nodes of `shards` for their time and each shard's newest
    /// entry, on the connections their messages come by (once the answer
    /// is here, every message its node sent before it is in
    /// [`LogPushes`]): on one Redis one call, on a cluster one a shard.
    pub async fn probe(&mut self, shards: &[usize]) -> StoreResult<Vec<Probed>> {
        let groups: Vec<Vec<usize>> = match self.conn {
            ProbeConn::Single(_) => vec![shards.to_vec()],
            ProbeConn::Cluster(_) => shards.iter().map(|&k| vec![k]).collect(),
        };
        let asks = groups.into_iter().map(|group| {
            let mut inv = self.scripts.log_probe.prepare_invoke();
            for &k in &group {
                inv.key(&self.marks[k]);
            }
            let conn = self.conn.clone();
            async move {
                let reply: Vec<Value> = match conn {
                    ProbeConn::Single(mut c) => inv.invoke_async(&mut c).await?,
                    ProbeConn::Cluster(mut c) => inv.invoke_async(&mut c).await?,
                };
                let parse =
                    |e: redis::ParsingError| StoreError::Internal(format!("log_probe: {e}"));
                let mut reply = reply.into_iter();
                let mut next = || reply.next().unwrap_or(Value::Nil);
                let ms: u64 = redis::from_redis_value(next()).map_err(parse)?;
                let tick: u64 = redis::from_redis_value(next()).map_err(parse)?;
                let floor = EventId(ms, tick, 0);
                let mut out = Vec::with_capacity(group.len());
                for k in group {
                    let last: String = redis::from_redis_value(next()).map_err(parse)?;
                    out.push((k, floor, (!last.is_empty()).then_some(last)));
                }
                Ok::<_, StoreError>(out)
            }
        });
        let groups = futures::future::try_join_all(asks).await?;
        Ok(groups.into_iter().flatten().collect())
    }
}

impl Events<'_> {
    /// A subscription of its own to every shard's channel.
    pub async fn subscribe(self) -> StoreResult<LogSubscription> {
        let keys = &self.store.keys;
        let names: Vec<String> = (0..keys.log_shards())
            .map(|k| keys.log_channel(k))
            .collect();
        let channels: HashMap<String, usize> = names
            .iter()
            .enumerate()
            .map(|(k, c)| (c.clone(), k))
            .collect();
        let marks = (0..keys.log_shards())
            .map(|k| keys.log_emitted(k))
            .collect();
        let (tx, rx) = mpsc::unbounded_channel();
        let conn = match &self.store.target {
            Target::Single(client) => {
                let info = client.get_connection_info().clone();
                let settings = info
                    .redis_settings()
                    .clone()
                    .set_protocol(redis::ProtocolVersion::RESP3);
                let client = redis::Client::open(info.set_redis_settings(settings))?;
                let config = redis::AsyncConnectionConfig::new().set_push_sender(tx);
                let mut conn = client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                conn.subscribe(&names).await?;
                (ProbeConn::Single(conn), Vec::new())
            }
            Target::Cluster(nodes) => {
                let client = redis::cluster::ClusterClient::builder(nodes.clone())
                    .connection_timeout(std::time::Duration::from_secs(2))
                    .response_timeout(std::time::Duration::from_secs(2))
                    .use_protocol(redis::ProtocolVersion::RESP3)
                    .push_sender(tx)
                    .build()?;
                let mut conn = client.get_async_connection().await?;
                // One channel a command: each is in its own slot. The
                // masters are read before and after: a slot that moved
                // meanwhile may have been subscribed on another node.
                let before = masters_of(&mut conn, &names).await?;
                for name in &names {
                    conn.ssubscribe(name).await?;
                }
                let after = masters_of(&mut conn, &names).await?;
                if before != after {
                    return Err(StoreError::Internal(
                        "the cluster's slots moved while the log was subscribed".into(),
                    ));
                }
                (ProbeConn::Cluster(conn), after)
            }
        };
        let (conn, node_of) = match conn {
            (ProbeConn::Single(c), _) => (ProbeConn::Single(c), vec![0; names.len()]),
            (c, node_of) => (c, node_of),
        };
        let mut routes = Vec::new();
        for (k, &node) in node_of.iter().enumerate() {
            if routes.len() <= node {
                routes.resize(node + 1, String::new());
            }
            if routes[node].is_empty() {
                routes[node] = names[k].clone();
            }
        }
        Ok(LogSubscription {
            pushes: LogPushes {
                rx,
                channels: Arc::new(channels),
            },
            prober: Prober {
                conn,
                marks,
                node_of: node_of.into(),
                routes: routes.into(),
                scripts: self.store.scripts.clone(),
            },
        })
    }
}

/// The master of each of `channels`' slots, numbered from 0 in the order
/// first met (`CLUSTER SLOTS`, asked of any master).
async fn masters_of(
    conn: &mut redis::cluster_async::ClusterConnection,
    channels: &[String],
) -> StoreResult<Vec<usize>> {
    use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
    let to = RoutingInfo::SingleNode(SingleNodeRoutingInfo::RandomPrimary);
    let reply = conn
        .route_command(redis::cmd("CLUSTER").arg("SLOTS").clone(), to)
        .await?;
    let bad = |e: redis::ParsingError| StoreError::Internal(format!("CLUSTER SLOTS: {e}"));
    // Each range: start, end, [host, port, id, ...] of its master, replicas.
    let ranges: Vec<Vec<Value>> = redis::from_redis_value(reply).map_err(bad)?;
    let mut spans = Vec::with_capacity(ranges.len());
    for range in ranges {
        let mut parts = range.into_iter();
        let mut next = || parts.next().unwrap_or(Value::Nil);
        let start: u16 = redis::from_redis_value(next()).map_err(bad)?;
        let end: u16 = redis::from_redis_value(next()).map_err(bad)?;
        let master: Vec<Value> = redis::from_redis_value(next()).map_err(bad)?;
        let mut master = master.into_iter();
        let host: String =
            redis::from_redis_value(master.next().unwrap_or(Value::Nil)).map_err(bad)?;
        let port: u16 =
            redis::from_redis_value(master.next().unwrap_or(Value::Nil)).map_err(bad)?;
        spans.push((start, end, format!("{host}:{port}")));
    }
    let mut numbered: Vec<String> = Vec::new();
    channels
        .iter()
        .map(|c| {
            let slot = crate::store::plumbing::conn::slot(c.as_bytes());
            let (_, _, master) = spans
                .iter()
                .find(|(s, e, _)| (*s..=*e).contains(&slot))
                .ok_or_else(|| StoreError::Internal(format!("slot {slot} has no master")))?;
            Ok(match numbered.iter().position(|m| m == master) {
                Some(n) => n,
                None => {
                    numbered.push(master.clone());
                    numbered.len() - 1
                }
            })
        })
        .collect()
}
