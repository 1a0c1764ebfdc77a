//! What the transport writes next ([`Out`]): what a feed hands its encoder.

use super::frame::{ControlFrame, EventId, Frame};
use std::sync::Arc;

/// What the transport writes next.
#[derive(Debug)]
pub enum Out {
    /// An event, for the named subscription.
    Event(Arc<Frame>, &'static str),
    /// A control event.
    Control(Arc<ControlFrame>),
    /// Time for a keep-alive (SSE comment, NDJSON blank line, WebSocket
    /// ping), with the stream's position when it has one: every event it
    /// matches up to that id was written before it.
    Keepalive(Option<EventId>),
    /// Bytes already encoded: the rest of a write the hub began
    /// ([`Delivery::Rest`](super::queue::Delivery::Rest)).
    Raw(Vec<u8>),
}
