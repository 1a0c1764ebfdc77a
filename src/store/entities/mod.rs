//! The entities, one module each, most a view of the store handle:
//! `store.users().get(uid)`, `store.lists().create(..)`, a `Copy` type
//! holding `&Store` whose methods take it by value (so a future borrows the
//! handle, not the view). They start the writes (build the op, record it
//! in the outbox, run its chain) and read what they keep; `lua/` holds
//! their single-slot scripts.

pub(crate) mod bookmarks;
pub(crate) mod conversations;
pub(crate) mod demo;
pub(crate) mod edits;
pub(crate) mod follow_requests;
pub mod follows;
pub(crate) mod groups;
pub(crate) mod leases;
pub(crate) mod likes;
pub(crate) mod lists;
pub(crate) mod messaging;
pub(crate) mod moderation;
pub(crate) mod notifications;
pub(crate) mod profile;
pub(crate) mod ranking;
pub(crate) mod rate;
pub(crate) mod relations;
pub(crate) mod rules;
pub(crate) mod sessions;
pub(crate) mod social;
pub(crate) mod statuses;
pub(crate) mod trends;
pub mod users;
pub(crate) mod zstd_dicts;
