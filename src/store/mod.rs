//! The only code that talks to Redis, in sections:
//!
//! - `plumbing/`: the handle ([`Store`]: connection, caches, limits and
//!   fault-test pauses (`settings`)),
//!   [`StoreError`], the Lua [`Scripts`], [`conn`] (one server or a
//!   cluster), [`keys`] (every key name), `replicas`
//!   (`--redis-wait-replicas`), [`layout`] (the check made before serving).
//! - [`entities`], one module each, most a view of the handle:
//!   `store.users().get(uid)`, `store.lists().create(..)`, a `Copy` type
//!   holding `&Store` whose methods take it by value (so a future borrows
//!   the handle, not the view), so the handle keeps only its plumbing, the
//!   write path and one accessor per entity: [`users`], [`sessions`](entities::sessions),
//!   [`statuses`](entities::statuses), [`edits`](entities::edits), [`follows`],
//!   [`follow_requests`](entities::follow_requests), [`likes`](entities::likes), [`bookmarks`](entities::bookmarks), [`lists`](entities::lists),
//!   [`notifications`](entities::notifications), [`conversations`](entities::conversations) (and [`social`](entities::social), their reads),
//!   [`groups`](entities::groups), [`relations`](entities::relations) (blocks, mutes), [`moderation`](entities::moderation), [`rules`](entities::rules),
//!   [`trends`](entities::trends), [`ranking`](entities::ranking), [`leases`](entities::leases) (stream slots), [`rate`](entities::rate) (rate
//!   limits), [`events`] (the replay buffer), [`zstd_dicts`](entities::zstd_dicts), [`demo`](entities::demo);
//!   [`paging`] is how they page.
//! - Writes that span slots: [`outbox`] (the op log: its entries, how one
//!   is finished, the `Op` enum that only delegates), [`chains`] (each
//!   op's payload type with its chain of single-slot steps in one file, and
//!   for a post its one-script path too), [`fanout`] (the durable fan-out
//!   queues), and [`writes`]: [`ids`] (snowflakes), [`emitter`](writes::emitter) (the group
//!   commit of events), [`fanout_hints`](writes::fanout_hints), `posting`, `undo` (what an
//!   account's deletion starts).
//! - [`caches`], all in one field of the handle (`caches::set`): [`cache`]
//!   (statuses, counts, sessions), [`home_cache`](caches::home_cache),
//!   [`view_cache`](caches::view_cache) and [`tracked`](caches::tracked) under them, kept true by Redis's
//!   invalidation pushes; the per-process `rank_cache`, `trend_memo` and
//!   `suspended`.
//!
//! Layering inside: `plumbing` and `caches` name no entity; an entity names
//! the plumbing, the caches, the outbox and the chains, never its parent
//! `mod.rs` (this file only declares and re-exports); a chain names its
//! entry (`outbox::entry`) and `outbox::finish`, never the `Op` enum that
//! names it; so no two files import each other (`tests/layout.rs`). Each
//! Lua script is a `lua/<name>.lua` file in its callers' section
//! (`entities/lua/` for the entities'), whose header says why it is atomic and which
//! keys it touches, named once in [`Scripts`].

pub(crate) mod caches;
pub mod chains;
pub(crate) mod entities;
pub mod events;
pub(crate) mod fanout;
pub use chains::edit::{EditRefused, Edited, EDIT_WINDOW, MAX_EDITS};
pub mod outbox;
pub mod paging;
pub(crate) mod plumbing;
pub(crate) mod writes;

pub(crate) use caches::cache;
pub use entities::{follows, users};
pub use plumbing::{conn, keys, layout};
pub use writes::ids;

pub use plumbing::error::{StoreError, StoreResult};
pub use plumbing::handle::{cluster_nodes, Store};
pub use plumbing::scripts::Scripts;
