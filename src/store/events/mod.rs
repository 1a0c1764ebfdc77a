//! The event log: emitting events and reading them back, spread over
//! `--log-shards` shards of the cluster (64 unless told).
//!
//! An event goes to the shard of its partition key (`Keys::log_shard`: (a status's own events
//! a status's own events by the status, every other event by the user
//! who caused it: [`body()`]),
//! each shard its own buffer (a STREAM), emitted marks and channel, in a
//! hash tag of its own, so that no key, slot or channel is written by
//! every event. An event is stored as its JSON body without the `id` field
//! (the id comes from the entry); [`with_id`] splices the id in, giving the
//! exact JSON that was published. An entry holds the events of a batch of
//! writes of one shard (`e` once per event, in order: the group commit of
//! [`store::writes::emitter`](crate::store::log::emitter)). The first event of entry `<ms>-<seq>` has that id;
//! the n-th after it `<ms>-<seq>.<n>` ([`EventId`]).
//!
//! An entry's id is a position in the whole log: its node's time when it
//! was written, to the microsecond, and its shard (`<ms>-<µs * 1024 +
//! shard>`, `log_append.lua`), so the shards' ids never meet and order by
//! when their events were written. Reads merge the shards in id order and
//! stop where some shard is not yet known ([`read`]); the live
//! subscription merges the shards' channels the same way ([`merge`](crate::store::log::merge),
//! [`live`]), so every process hands the events on in the buffer's order
//! and an id names the same point on every process.

mod body;
mod handle;
mod info;
mod live;
mod read;
pub(crate) mod shard_work;
mod tap;
pub(crate) mod windows;

pub use crate::store::log::clocks::{NodeClocks, MOST_WAIT};
pub use crate::store::log::id::{entry, with_id, EventId, EventPage};
pub use crate::store::log::merge::{Merge, Missed, MOST_PENDING};
pub use body::{body, Body};
pub use handle::Events;
pub use info::BufferInfo;
pub use live::{Heard, LogPushes, LogSubscription, Probed, Prober};
pub use read::shard_of;
pub use shard_work::ShardWork;
pub use tap::{Tap, TapReader, Tapped, Untapped, TAP_CAPACITY};
pub use windows::Window;
