//! The messages the dispatcher reads: [`Cmd`] from the hub's handles, [`Msg`]
//! from the Redis subscriber.

use super::conn::ClientConn;
use crate::hides::Hides;
use crate::stream::rule_set::RuleSet;
use crate::stream::want::Want;
use firehose_filters::SubId;
use std::sync::Arc;
use tokio::sync::oneshot;

/// What the hub's handles ask of the dispatcher.
pub(super) enum Cmd {
    Open {
        conn: Arc<ClientConn>,
    },
    Register {
        conn: Arc<ClientConn>,
        sub: SubId,
        want: Want,
        stream: &'static str,
        /// The user's hiding relations, read before registering.
        hides: Hides,
        ack: oneshot::Sender<()>,
    },
    /// A user's search rules, reloaded after a change.
    Rules {
        uid: u64,
        set: Arc<RuleSet>,
    },
    Unregister {
        sub: SubId,
    },
    Close {
        conn: u64,
    },
    /// A connection's token refreshed: its new session and expiry.
    Refresh {
        conn: u64,
        session: String,
        expires_at: tokio::time::Instant,
        ack: oneshot::Sender<bool>,
    },
}

/// What the Redis subscriber hands the dispatcher.
pub(super) enum Msg {
    Raw(String),
    Resubscribed,
}
