//! The hub: one Redis subscription per process, one dispatcher task.
//!
//! The subscriber task holds the process's only SUBSCRIBE connection and
//! forwards each message to the dispatcher; when the connection drops it
//! reconnects with backoff and tells the dispatcher, which then replays the
//! buffer from the last event it dispatched, so every connection is caught up
//! with no gap and no duplicate. The dispatcher owns the compiled index: the
//! cost of one event is the index lookups plus one `try_send` per matching
//! connection, whatever the number of connections.

mod catch_up;
pub(crate) mod conn;
mod deliver;
mod dispatcher;
mod groups;
mod helpers;
mod keepalive;
mod lists;
pub(crate) mod msg;
mod routes;
mod rules;
mod sessions;
mod split;
mod subscriber;
#[cfg(test)]
mod tests;
pub(crate) mod viewers;

use crate::stream::frame::DisconnectCode;
pub use conn::ClientConn;
use msg::Cmd;

use crate::hides::Hides;
use crate::shutdown::Shutdown;
use crate::store::Store;
use crate::stream::translate::Translation;
use crate::stream::want::Want;
use dispatcher::Dispatcher;
use firehose_filters::SubId;
use helpers::{delivery_shares, Helper};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Handle to the hub: cheap to clone.
#[derive(Clone)]
pub struct Hub {
    cmds: mpsc::UnboundedSender<Cmd>,
    next_id: Arc<AtomicU64>,
    subscribed: Arc<AtomicBool>,
    rules_filed: Arc<AtomicUsize>,
    tap: crate::store::events::Tap,
    /// The store, shared: every connection's feed reads through it (a
    /// `Store` inline would cost each one 800 bytes).
    store: Arc<Store>,
    /// Another API's framing of the events ([`stream::translate`](crate::stream::translate)).
    translation: Arc<Translation>,
}

impl Hub {
    /// Starts the subscriber and dispatcher tasks; both end on shutdown.
    /// Every connection gets a keep-alive each `keepalive` it is open.
    pub fn start(
        store: Store,
        shutdown: Shutdown,
        keepalive: Duration,
    ) -> (Hub, Vec<tokio::task::JoinHandle<()>>) {
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (msg_tx, msg_rx) = mpsc::channel(65_536);
        let subscribed = Arc::new(AtomicBool::new(false));
        let tap = crate::store::events::Tap::default();
        let heard = Arc::new(subscriber::HeardMark::new(store.events().clocks()));
        let sub = tokio::spawn(subscriber::subscriber(
            store.clone(),
            msg_tx,
            subscribed.clone(),
            heard.clone(),
            shutdown.clone(),
        ));
        let shared = Arc::new(store.clone());
        let translation = Arc::new(Translation::default());
        let dispatcher = Dispatcher::new(
            store,
            keepalive,
            cmd_tx.clone(),
            tap.clone(),
            heard,
            (0..delivery_shares())
                .map(|_| Helper::start(cmd_tx.clone()))
                .collect(),
            translation.clone(),
        );
        let rules_filed = dispatcher.routes.rules.filed();
        let disp = tokio::spawn(dispatcher.run(cmd_rx, msg_rx, shutdown));
        (
            Hub {
                cmds: cmd_tx,
                next_id: Arc::new(AtomicU64::new(1)),
                subscribed,
                rules_filed,
                tap,
                store: shared,
                translation,
            },
            vec![sub, disp],
        )
    }

    /// Another API's translations of the events ([`stream::translate`](crate::stream::translate)).
    pub fn translation(&self) -> &Arc<Translation> {
        &self.translation
    }

    /// The store the connections' feeds read through.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The events as this hub hands them on, in log order: the work that
    /// follows the log here reads them rather than the buffer while it is
    /// in step (`store::events::tap`).
    pub fn tap(&self) -> crate::store::events::Tap {
        self.tap.clone()
    }

    /// Whether the event subscription is up (pinged within seconds).
    pub fn is_subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Relaxed)
    }

    /// Filter rules filed now, over every subscription (bounded by
    /// `--max-stream-rules` when a stream opens).
    pub fn rules_filed(&self) -> usize {
        self.rules_filed.load(Ordering::Relaxed)
    }

    /// A fresh id for a connection or subscription.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Makes a new connection known, so that ending its session closes it
    /// whatever it is subscribed to (nothing yet, for a fresh WebSocket), and
    /// so that shutting down closes it. Once the hub has stopped, the
    /// connection is closed at once.
    pub fn open(&self, conn: &Arc<ClientConn>) {
        if self.cmds.send(Cmd::Open { conn: conn.clone() }).is_err() {
            conn.kill(DisconnectCode::Shutdown);
        }
    }

    /// Adds a subscription; events published after this returns reach it,
    /// less those its user's relations hide (`hides`, read from Redis just
    /// before; the hub keeps it current from `relation` events). With
    /// filter rules, public statuses matching them, each carrying
    /// `matching_rules` (a search stream's rules are kept current from
    /// `rules_changed` events); for a group, its statuses until the user
    /// leaves it (`group_left`).
    pub async fn register(
        &self,
        conn: &Arc<ClientConn>,
        sub: SubId,
        want: Want,
        stream: &'static str,
        hides: Hides,
    ) {
        let (ack, done) = oneshot::channel();
        let cmd = Cmd::Register {
            conn: conn.clone(),
            sub,
            want,
            stream,
            hides,
            ack,
        };
        if self.cmds.send(cmd).is_ok() {
            let _ = done.await;
        }
    }

    /// Removes one subscription.
    pub fn unregister(&self, sub: SubId) {
        let _ = self.cmds.send(Cmd::Unregister { sub });
    }

    /// Connection `conn` lives on under `session`, its token expiring at
    /// `expires_at`; false if it is gone or that session was revoked.
    pub async fn refresh(
        &self,
        conn: u64,
        session: String,
        expires_at: tokio::time::Instant,
    ) -> bool {
        let (ack, done) = oneshot::channel();
        let cmd = Cmd::Refresh {
            conn,
            session,
            expires_at,
            ack,
        };
        self.cmds.send(cmd).is_ok() && done.await.unwrap_or(false)
    }

    /// Removes every subscription of a connection.
    pub fn close(&self, conn: u64) {
        let _ = self.cmds.send(Cmd::Close { conn });
    }
}
