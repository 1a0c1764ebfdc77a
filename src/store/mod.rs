//! The only code that talks to Redis, in parts that stand on each other
//! like the rungs of a ladder, bottom to top (`tests/layout.rs` checks
//! that no path names a part above its own):
//!
//! - [`plumbing`]: [`conn`] (one server or a cluster), [`StoreError`],
//!   [`keys`] (every key name), the Lua [`Scripts`], `settings` (limits
//!   and fault-test pauses), `replicas` (`--redis-wait-replicas`), and two
//!   parts the handle holds: [`ids`] (the snowflake generator) and
//!   [`fanout_hints`](plumbing::fanout_hints).
//! - [`caches`], all in one field of the handle (`caches::set`): [`cache`]
//!   (statuses, counts, sessions), [`home_cache`](caches::home_cache),
//!   [`view_cache`](caches::view_cache) and [`tracked`](caches::tracked) under them, kept true by
//!   Redis's invalidation pushes; the per-process `rank_cache`,
//!   `trend_memo` and `suspended`.
//! - [`log`]: the event log's parts below the handle: event ids, the
//!   nodes' clocks, the merge of the shards, the [`emitter`](log::emitter)
//!   (the group commit of events).
//! - [`handle`]: the handle ([`Store`]), which holds all of the above,
//!   and [`log::shape`] (how the log lies over Redis), then [`server`]:
//!   the Redis server's own commands (`store.server()`).
//! - [`paging`] (how lists page), then [`events`]: the event log's reads
//!   and live subscription (`store.events()`).
//! - [`writes`]: fresh ids (`store.mint()`), what a post answers.
//! - [`layout`]: the check made before serving (and the upgrades).
//! - [`fanout`]: the durable fan-out queues (`store.fanout()`).
//! - [`chains`]: each op's payload with its chain of single-slot steps in
//!   one file, the `Op` enum that only delegates, recording an op
//!   (`store.outbox().begin`) and finishing its entry (`finish`), since
//!   chains start and finish ops themselves.
//! - [`outbox`]: the workers' half of the op log: claiming entries whose
//!   lease ran out and completing them (`Op::run`), measuring the outbox.
//! - [`entities`], one module each, most a view of the handle:
//!   `store.users().get(uid)`, `store.lists().create(..)`, a `Copy` type
//!   holding `&Store` whose methods take it by value (so a future borrows
//!   the handle, not the view): [`users`], [`sessions`](entities::sessions),
//!   [`statuses`](entities::statuses), [`edits`](entities::edits), [`follows`],
//!   [`follow_requests`](entities::follow_requests), [`likes`](entities::likes), [`bookmarks`](entities::bookmarks), [`lists`](entities::lists),
//!   [`notifications`](entities::notifications), [`conversations`](entities::conversations) and [`messaging`](entities::messaging) (who may
//!   write to whom), [`social`](entities::social) (their reads), [`profile`](entities::profile) (a user's own
//!   account), [`groups`](entities::groups), [`relations`](entities::relations) (blocks, mutes), [`moderation`](entities::moderation),
//!   [`rules`](entities::rules), [`trends`](entities::trends), [`ranking`](entities::ranking), [`leases`](entities::leases) (stream slots),
//!   [`rate`](entities::rate) (rate limits), [`zstd_dicts`](entities::zstd_dicts), [`demo`](entities::demo).
//!   A file may add methods to another's view (`edits` to `Statuses`,
//!   `messaging` to `Conversations`, `profile` to `Users`).
//! - [`views`]: every accessor of a view (`store.users()`, ...) on one
//!   page. `Store` has methods there and in [`handle`] only (27, kept
//!   under 30 by `tests/layout.rs`).
//!
//! The ladder is of paths: a part names only itself and the parts below.
//! Calls through the handle's views are not paths, and one kind goes up:
//! a chain's step may call an entity's view (`store.users().claim_name`
//! in a rename, `store.sessions().close` in an account's deletion; 30
//! calls on 2026-12-07, all in `chains/` but `fanout`'s one read of
//! statuses), as an entity starts the chain. This file only
//! declares and re-exports, and no file of the store imports through it.
//! Each Lua script is a `lua/<name>.lua` file in its callers' part
//! (`entities/lua/` for the entities'), whose header says why it is atomic
//! and which keys it touches, named once in [`Scripts`].

pub(crate) mod caches;
pub mod chains;
pub(crate) mod entities;
pub mod events;
pub(crate) mod fanout;
pub(crate) mod handle;
pub mod layout;
pub(crate) mod log;
pub use chains::edit::{EditRefused, Edited, EDIT_WINDOW, MAX_EDITS};
pub mod outbox;
pub mod paging;
pub(crate) mod plumbing;
pub(crate) mod server;
pub(crate) mod views;
pub(crate) mod writes;

pub(crate) use caches::cache;
pub use entities::{follows, users};
pub use plumbing::{conn, ids, keys};

pub use handle::{cluster_nodes, Store};
pub use plumbing::error::{StoreError, StoreResult};
pub use plumbing::scripts::Scripts;
