//! The event log's parts below the store handle: event ids and their
//! order ([`id`]), the per-node clocks that stamp them ([`clocks`]), the
//! merge of the shards into one order ([`merge`]), and the emitter that
//! writes events into the shards in batches ([`emitter`]), and how the
//! shards are laid over Redis ([`shape`]). The reads and
//! the live subscription, which take the handle, are in
//! [`store::events`](crate::store::events).

pub(crate) mod clocks;
pub(crate) mod emitter;
pub(crate) mod id;
pub(crate) mod merge;
pub(crate) mod shape;
