//! Control events: the server's messages about a stream itself, with no
//! id of their own, serialized once however many streams they go to.

use bytes::Bytes;
use serde::Serialize;
use std::sync::Arc;

/// A control event: a message from the server about the stream itself
/// (`warning`, `disconnect`, `subscribed`, `unsubscribed`, `error`). It
/// has no id, so resume positions are not moved by it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Control {
    /// Something the client should know; the stream goes on.
    Warning {
        /// What it is about.
        code: WarningCode,
        /// A human sentence.
        message: String,
        /// How full the queue is (`falling_behind`).
        #[serde(skip_serializing_if = "Option::is_none")]
        percent_full: Option<usize>,
        /// When the stream's token expires, unix seconds (`token_expiring`).
        #[serde(skip_serializing_if = "Option::is_none")]
        expires_at: Option<u64>,
        /// The time of the oldest event the server still holds, seconds
        /// since the epoch (`resume_gap`).
        #[serde(skip_serializing_if = "Option::is_none")]
        oldest: Option<f64>,
        /// How far behind live the stream is, seconds (`lagging`).
        #[serde(skip_serializing_if = "Option::is_none")]
        behind: Option<f64>,
    },
    /// The last event of a stream: why it ends.
    Disconnect {
        /// Why.
        code: DisconnectCode,
        /// A human sentence.
        reason: String,
        /// On `shutdown`: milliseconds to wait before reconnecting, drawn
        /// for each stream over `--reconnect-spread`, so the clients of a
        /// stopping server come back spread out rather than all at once.
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// A multiplexed socket's subscription started.
    Subscribed {
        /// The stream subscribed.
        stream: &'static str,
        /// The group, for a group stream.
        #[serde(skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        /// The list, for a list stream.
        #[serde(skip_serializing_if = "Option::is_none")]
        list: Option<String>,
    },
    /// A WebSocket's token was refreshed: the connection lives on under
    /// the new session until it expires.
    Refreshed {
        /// When the new token expires, unix seconds.
        expires_at: u64,
    },
    /// A multiplexed socket's subscription ended.
    Unsubscribed {
        /// The stream unsubscribed.
        stream: &'static str,
        /// The group, for a group stream.
        #[serde(skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        /// The list, for a list stream.
        #[serde(skip_serializing_if = "Option::is_none")]
        list: Option<String>,
    },
    /// A multiplexed socket's control message was refused.
    Error {
        /// The contract's error code.
        code: &'static str,
        /// A human sentence.
        message: String,
        /// The stream the message named, if any.
        stream: Option<String>,
        /// Further fields (an invalid rule's `rule` and `column`).
        #[serde(flatten)]
        detail: serde_json::Map<String, serde_json::Value>,
    },
}

/// A `warning`'s `code`: what the client should know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// A resume asked for events the server no longer holds (`oldest`).
    ResumeGap,
    /// The connection's queue is 80 % full (`percent_full`).
    FallingBehind,
    /// The queue filled: the stream goes on from the log (`behind`).
    Lagging,
    /// A lagging stream is live again.
    CaughtUp,
    /// The stream's token expires soon (`expires_at`).
    TokenExpiring,
}

/// A `disconnect`'s `code`: why the stream ends, with the sentence said
/// unless the one ending it gives its own ([`DisconnectCode::sentence`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DisconnectCode {
    /// The server is shutting down (`retry_after_ms` spreads the returns).
    Shutdown,
    /// The session ended (a logout, a password change, a revocation).
    Revoked,
    /// The account was suspended.
    Suspended,
    /// The token expired.
    Expired,
    /// A refreshed token lacks the scope the stream needs.
    Forbidden,
    /// The process's stream service stopped.
    Unavailable,
    /// A WebSocket answered no ping in time.
    Timeout,
    /// The list the stream follows was deleted.
    ListDeleted,
    /// The reader left (or was removed from) the group the stream follows.
    GroupLeft,
    /// Closed for no reason given.
    Closed,
}

impl DisconnectCode {
    /// The sentence a `disconnect` of this code says.
    pub fn sentence(self) -> &'static str {
        match self {
            DisconnectCode::Shutdown => "The server is shutting down.",
            DisconnectCode::Revoked => "The session has ended.",
            DisconnectCode::Suspended => "The account is suspended.",
            DisconnectCode::Expired => "The token has expired; log in again.",
            DisconnectCode::Forbidden => "The token lacks the scope this stream needs.",
            DisconnectCode::Unavailable => {
                "The stream service stopped; reconnect with Last-Event-ID to resume."
            }
            DisconnectCode::Timeout => "No pong arrived in time.",
            DisconnectCode::ListDeleted => "The list was deleted.",
            DisconnectCode::GroupLeft => "You no longer read this group.",
            DisconnectCode::Closed => "The stream was closed.",
        }
    }
}

impl Control {
    /// A `warning` with this code and message.
    pub fn warning(code: WarningCode, message: impl Into<String>) -> Control {
        Control::Warning {
            code,
            message: message.into(),
            percent_full: None,
            expires_at: None,
            oldest: None,
            behind: None,
        }
    }

    /// The event's `type` (its SSE event name).
    pub fn kind(&self) -> &'static str {
        match self {
            Control::Warning { .. } => "warning",
            Control::Disconnect { .. } => "disconnect",
            Control::Refreshed { .. } => "refreshed",
            Control::Subscribed { .. } => "subscribed",
            Control::Unsubscribed { .. } => "unsubscribed",
            Control::Error { .. } => "error",
        }
    }

    /// Serializes it once, stamped with the time, for every connection it
    /// goes to.
    pub fn encode(&self) -> Arc<ControlFrame> {
        #[derive(Serialize)]
        struct Stamped<'a> {
            #[serde(flatten)]
            control: &'a Control,
            at: f64,
        }
        let json = serde_json::to_string(&Stamped {
            control: self,
            at: crate::model::now(),
        })
        .unwrap_or_default();
        let retry_ms = match self {
            Control::Disconnect { retry_after_ms, .. } => *retry_after_ms,
            _ => None,
        };
        Arc::new(ControlFrame {
            kind: self.kind(),
            json: Bytes::from(json),
            retry_ms,
        })
    }
}

/// A control event serialized.
#[derive(Debug)]
pub struct ControlFrame {
    /// Its `type`.
    pub kind: &'static str,
    /// Its JSON.
    pub json: Bytes,
    /// A reconnection delay to hand the client (SSE `retry:`).
    pub retry_ms: Option<u64>,
}
