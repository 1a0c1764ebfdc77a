//! The streaming side: one Redis subscription per process feeding an
//! in-process hub, which routes each event through the compiled
//! [`firehose_filters::Index`] to the bounded queues of the matching
//! connections.
//!
//! - [`frame`]: an event parsed once (into the typed [`model::Event`](crate::model::Event)) and
//!   serialized once ([`Frame`]), shared by every connection that gets it;
//!   the typed control events ([`frame::Control`]).
//! - [`hub`]: the subscriber task (reconnects, catches up from the replay
//!   buffer) and the dispatcher task that owns the index.
//! - [`feed`]: one connection's view: replay, then live events with no gap
//!   and no duplicate, keep-alives, warnings and the final `disconnect`.
//! - [`wire`]: the transports (SSE, NDJSON, WebSocket, multiplexed
//!   WebSocket): how each output is encoded, the plain streams' response
//!   head, and the batch-drain loop every transport writes with.
//! - [`queue`]: a connection's bounded queue of deliveries.
//! - [`direct`]: a live plain stream's socket as its queue's sink, so that
//!   the dispatcher writes its events while the task sleeps.
//! - [`rule_set`]: a subscription's filter rules (search, ad-hoc) and
//!   their `matching_rules` labels.
//! - [`want`]: what one subscription wants, and its check for a replay.
//! - [`replay_sight`]: what a replay may serve now (the reader's present
//!   rights: deletes, privacy, suspension, groups and conversations left).
//! - [`stream_limits`]: the per-user concurrent-stream limit, leased in Redis.
//! - [`translate`]: events in another API's framing (the Mastodon
//!   listener's), made before routing so that the hub writes them too.
//! - [`Out`]: what a feed hands its encoder ([`queue`]); [`coding`]: a plain body's
//!   `Content-Encoding`; [`deflate`], [`zstd`], [`zstd_body`], [`ws_codec`]:
//!   the codecs, each event compressed once for every socket.
//!
//! Layering: `wire` encodes what it is handed (a source of [`Out`]),
//! never a `Feed`; a feed names the hub's connection and the wire, not the
//! other way round.

pub(crate) mod coding;
pub(crate) mod deflate;
pub(crate) mod direct;
pub(crate) mod feed;
pub mod frame;
pub mod hub;
pub mod queue;
pub(crate) mod replay_sight;
pub(crate) mod rule_set;
pub(crate) mod stream_limits;
pub(crate) mod translate;
pub mod want;
pub mod wire;
pub(crate) mod ws_codec;
pub(crate) mod zstd;
pub(crate) mod zstd_body;

pub use feed::Feed;
pub use frame::{EventId, Frame};
pub use hub::Hub;
pub use queue::Out;
